"""Collection throughput and environment-side overhead, against baselines run in the same process.

    python benchmarks/rollout_throughput.py            # 1,000 oracle episodes over 1,000 environments
    python benchmarks/rollout_throughput.py --n 100    # smaller

Rows:
  collect    wall seconds for N oracle episodes over N environments (target: N=1,000 in < 60 s),
             vs the same episodes stepped directly in a plain loop (no engine, no dataset):
             the ratio is what the engine, the records and the shards cost
  env/turn   p50 environment-side milliseconds per turn (target: < 1 ms), reported next to the
             generation milliseconds per turn of the tiny HF model (--hf) when asked for
The environments are the shipped examples, each copied with a numbered request so ids differ.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envtrain.agent.baselines import OraclePolicy  # noqa: E402
from envtrain.core import Environment, Runtime  # noqa: E402
from envtrain.rollout.collect import CollectConfig, collect  # noqa: E402


def make_envs(n: int, out: Path) -> list[Environment]:
    examples = [Environment.load(p) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    envs = []
    for i in range(n):
        base = examples[i % len(examples)]
        data = base.model_dump(mode="json", exclude={"id"})
        data["request"] = f"{base.request} (case {i})"
        env = Environment.parse(data)
        env.save(out / f"{i:05d}.json")
        envs.append(env)
    return envs


def plain_loop(envs: list[Environment]) -> float:
    start = time.perf_counter()
    for env in envs:
        with Runtime(env).session() as s:
            s.reset()
            for call in env.reference_solution:
                s.step({"tool": call.tool, "arguments": call.arguments})
            s.verify()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--hf", action="store_true", help="also time generation per turn with the tiny HF model")
    args = parser.parse_args()
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    with tempfile.TemporaryDirectory() as tmp:
        envs_dir = Path(tmp) / "envs"
        envs_dir.mkdir()
        envs = make_envs(args.n, envs_dir)
        baseline = plain_loop(envs)
        start = time.perf_counter()
        summary = asyncio.run(collect(CollectConfig(envs=envs_dir, out=Path(tmp) / "out", shard_size=256), OraclePolicy()))
        seconds = time.perf_counter() - start
        assert summary.pass_at_1 == 1.0, "the oracle must pass every environment"
        rows = [
            (f"collect {args.n} oracle episodes (s)", seconds, "plain step loop", baseline, f"< 60 s for 1,000", seconds < 60 * args.n / 1000),
            ("env ms per turn (p50)", summary.env_ms_per_turn_p50, "-", float("nan"), "< 1 ms", summary.env_ms_per_turn_p50 < 1.0),
        ]
        if args.hf:
            rows.append(hf_row(envs_dir, Path(tmp)))
    print(f"{'metric':36} {'envtrain':>10} {'baseline':>18} {'baseline':>10} {'ratio':>7}  target            met")
    for name, ours, base_name, base, target, met in rows:
        ratio = ours / base if base == base and base else float("nan")
        print(f"{name:36} {ours:10.3f} {base_name:>18} {base:10.3f} {ratio:7.2f}  {target:16}  {'yes' if met else 'NO'}")
    print("(oracle policy: a fixture that replays reference solutions; these are engine costs, not model results)")


def hf_row(envs_dir: Path, tmp: Path) -> tuple:
    from envtrain.agent.hf import HFPolicy
    from envtrain.agent.tiny import build_tiny_model
    from envtrain.agent.types import SamplingParams
    from envtrain.rollout.episode import RolloutLimits

    model = build_tiny_model(tmp / "tiny")
    one = sorted(envs_dir.glob("*.json"))[:5]
    sub = tmp / "hf-envs"
    sub.mkdir()
    for p in one:
        (sub / p.name).write_text(p.read_text())
    cfg = CollectConfig(envs=sub, out=tmp / "hf-out", sampling=SamplingParams(max_tokens=32), limits=RolloutLimits(max_turns=3))
    summary = asyncio.run(collect(cfg, HFPolicy(str(model))))
    return ("env ms per turn, tiny HF (p50)", summary.env_ms_per_turn_p50, "generation ms/turn", summary.generate_ms_per_turn_p50,
            "env << generation", summary.env_ms_per_turn_p50 < summary.generate_ms_per_turn_p50)


if __name__ == "__main__":
    main()
