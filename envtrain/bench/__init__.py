"""Adapters for external benchmarks and environment collections (``types.Adapter``): BFCL v4
multi-turn, reasoning-gym, envtrain environment folders; ``registry.make_adapter`` by name.
Benchmark packages load only where an adapter for them is made."""
