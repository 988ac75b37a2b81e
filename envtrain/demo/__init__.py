"""The main job end to end: ``envtrain demo`` (compose → scale → split → collect → SFT → GRPO → eval → report)."""
