"""``envtrain synth`` without a model: workspace scenarios from templates and tool chains of the
built-in apps, every environment admitted (five conditions) and inspected before it is written."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text

Kind = Literal["workspace", "chain"]
MAX_DRAWS = 8  # draws per index before the index is reported as rejected


@dataclass(frozen=True)
class SynthConfig:
    n: int
    out: Path
    sandbox: str = "bwrap"  # backend of run_command during admission (and recorded in provenance)
    seed: int = 0
    workspace_share: float = 0.5  # share of indices that are workspace scenarios; the rest are app chains
    search_budget: int = 120  # admission condition (4) tool calls per environment


@dataclass
class SynthReport:
    built: int = 0
    admitted: int = 0
    kept: int = 0
    draws: int = 0
    rejections: Counter = None  # type: ignore[assignment]
    seconds: float = 0.0
    by_kind: Counter = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.rejections = Counter() if self.rejections is None else self.rejections
        self.by_kind = Counter() if self.by_kind is None else self.by_kind

    def to_dict(self) -> dict:
        return {"built": self.built, "admitted": self.admitted, "kept": self.kept, "draws": self.draws,
                "rejections": dict(self.rejections.most_common()), "by_kind": dict(self.by_kind), "seconds": round(self.seconds, 3)}


def run(config: SynthConfig, *, progress: Callable[[int, int], None] | None = None) -> SynthReport:
    from envtrain.apps.handlers import builtin_handlers
    from envtrain.sandbox import unavailable
    from envtrain.sandbox.shell import shell_handlers
    from envtrain.synth.admit import admit
    from envtrain.synth.chains import chains, sample_task, seed_worlds
    from envtrain.synth.inspect import inspect
    from envtrain.synth.workspace import TEMPLATES, build

    why = unavailable(config.sandbox)
    if why is not None:
        raise SpecError(f"sandbox {config.sandbox!r} is unavailable: {why}")
    handlers = {**builtin_handlers(), **shell_handlers(config.sandbox)}
    seeds = seed_worlds()
    app_chains = {name: chains(env.apps[0]) for name, env in seeds.items()}
    app_names = sorted(n for n, c in app_chains.items() if c)
    templates = sorted(TEMPLATES)
    envs_dir = config.out / "envs"
    envs_dir.mkdir(parents=True, exist_ok=True)
    report = SynthReport()
    start = time.perf_counter()
    manifest = []
    for index in range(config.n):
        rng = random.Random(config.seed * 1_000_003 + index)
        kind: Kind = "workspace" if rng.random() < config.workspace_share else "chain"
        for _ in range(MAX_DRAWS):
            report.draws += 1
            if kind == "workspace":
                env: Environment | str = build(TEMPLATES[templates[index % len(templates)]](rng))
            else:
                name = app_names[(index // 2) % len(app_names)]
                env = sample_task(seeds[name], rng.choice(app_chains[name]), rng)
            if isinstance(env, str):
                report.rejections[f"draw: {env.split(':')[0]}"] += 1
                continue
            report.built += 1
            env, admission = admit(env, handlers=handlers, search_budget=config.search_budget)
            if not admission.admitted:
                for f in admission.failures:
                    report.rejections[f"admission ({f.condition})"] += 1
                continue
            report.admitted += 1
            result = inspect(env, admission)
            if not result.kept:
                for reason in result.reasons:
                    report.rejections[f"inspector: {reason[:60]}"] += 1
                continue
            data = env.model_dump(mode="json", exclude={"id"})
            data["provenance"]["settings"] = {**data["provenance"]["settings"], "sandbox": config.sandbox, "seed": config.seed, "index": index}
            env = Environment.parse(data)
            env.save(envs_dir / f"{env.id}.json")
            report.kept += 1
            report.by_kind[kind] += 1
            manifest.append({"index": index, "id": env.id, "kind": kind, **env.provenance.settings})
            break
        else:
            report.rejections["index gave up after max draws"] += 1
        if progress is not None:
            progress(index + 1, config.n)
    report.seconds = time.perf_counter() - start
    import json

    atomic_write_text(config.out / "manifest.jsonl", "".join(json.dumps(m, sort_keys=True) + "\n" for m in manifest))
    atomic_write_text(config.out / "report.json", json.dumps(report.to_dict(), indent=1, sort_keys=True) + "\n")
    return report
