"""``envtrain synth``: environments built, admitted (five conditions) and inspected before they are written.

Two sources, one output format (envs/<id>.json, manifest.jsonl, report.json):

- without a model: workspace scenarios from built-in templates and tool chains of the built-in apps;
- with an endpoint (``llm``): apps synthesized from scenario cards (the catalogue of EnvCraft
  Tables 5-14, or a FILE) by ``envtrain.synth.engine``, each attempt logged in attempts.jsonl;
  every kept environment is also scored by the Table 18 rubric.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from envtrain.core.admission import AdmissionReport
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text
from envtrain.core.runtime import Handler

Kind = Literal["workspace", "chain", "llm"]
MAX_DRAWS = 8  # draws per index before the index is reported as rejected


@dataclass(frozen=True)
class SynthConfig:
    n: int
    out: Path
    sandbox: str = "bwrap"  # backend of every sandboxed call during admission (and recorded in provenance)
    seed: int = 0
    workspace_share: float = 0.5  # programmatic: share of indices that are workspace scenarios; the rest are app chains
    search_budget: int = 120  # admission condition (4) tool calls per environment
    scenarios: str = "builtin"  # builtin | templates | a scenario FILE (see envtrain.synth.cli)
    select: str | None = None  # catalogue terms (keys, domains, words of names); None: every card
    llm: str | None = None  # an OpenAI-compatible endpoint: synthesis from scenario cards and the rubric
    llm_model: str = "default"
    revisions: int = 3  # revisions the engine may ask for after a rejected answer


@dataclass
class SynthReport:
    built: int = 0
    admitted: int = 0
    kept: int = 0
    draws: int = 0
    rejections: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    by_kind: Counter = field(default_factory=Counter)
    rubric: list[dict[str, Any]] = field(default_factory=list)  # the judge's scores, per scored environment
    llm_cost: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"built": self.built, "admitted": self.admitted, "kept": self.kept, "draws": self.draws,
                "rejections": dict(self.rejections.most_common()), "by_kind": dict(self.by_kind), "seconds": round(self.seconds, 3),
                "rubric": self.rubric, "llm_cost": self.llm_cost}


def run(config: SynthConfig, *, progress: Callable[[int, int], None] | None = None) -> SynthReport:
    from envtrain.apps.handlers import builtin_handlers
    from envtrain.sandbox import unavailable
    from envtrain.sandbox.shell import shell_handlers
    from envtrain.synth.inspect import inspect

    why = unavailable(config.sandbox)
    if why is not None:
        raise SpecError(f"sandbox {config.sandbox!r} is unavailable: {why}")
    handlers = {**builtin_handlers(), **shell_handlers(config.sandbox)}
    client = None
    if config.llm:
        from envtrain.synth.llm import ChatClient

        client = ChatClient(config.llm, config.llm_model)
    envs_dir = config.out / "envs"
    envs_dir.mkdir(parents=True, exist_ok=True)
    report = SynthReport()
    start = time.perf_counter()
    manifest, attempts = [], []
    use_llm = client is not None and config.scenarios != "templates"
    draws = _llm_draws(config, client, handlers, attempts) if use_llm else _programmatic_draws(config, handlers)
    try:
        for index in range(config.n):
            for kind, outcome in draws(index):
                report.draws += 1
                if isinstance(outcome, str):
                    report.rejections[outcome] += 1
                    continue
                report.built += 1
                env, admission = outcome
                if not admission.admitted:
                    for f in admission.failures:
                        report.rejections[f"admission ({f.condition})"] += 1
                    continue
                report.admitted += 1
                rubric = None
                if client is not None:
                    from envtrain.synth.rubric import score

                    rubric = score(env, client)
                    report.rubric.append({"index": index, "id": env.id, **rubric.to_dict(), "kept": rubric.kept, "reasons": rubric.reasons})
                result = inspect(env, admission, rubric)
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
                manifest.append({"index": index, "id": env.id, **env.provenance.settings, "rubric": result.rubric if rubric else None})
                break
            else:
                report.rejections["index gave up after max draws" if not use_llm else "index gave up after its revisions"] += 1
            if progress is not None:
                progress(index + 1, config.n)
    finally:
        if client is not None:
            report.llm_cost = dict(client.cost)
            client.close()
    report.seconds = time.perf_counter() - start
    atomic_write_text(config.out / "manifest.jsonl", "".join(json.dumps(m, sort_keys=True) + "\n" for m in manifest))
    atomic_write_text(config.out / "report.json", json.dumps(report.to_dict(), indent=1, sort_keys=True) + "\n")
    if use_llm:
        atomic_write_text(config.out / "attempts.jsonl", "".join(line + "\n" for line in attempts))
    return report


Draw = tuple[str, "str | tuple[Environment, AdmissionReport]"]  # (kind, why the draw failed | the admitted or rejected env)


def _programmatic_draws(config: SynthConfig, handlers: Mapping[str, Handler]) -> Callable[[int], Iterator[Draw]]:
    from envtrain.synth.admit import admit
    from envtrain.synth.chains import chains, sample_task, seed_worlds
    from envtrain.synth.workspace import TEMPLATES, build

    seeds = seed_worlds()
    app_chains = {name: chains(env.apps[0]) for name, env in seeds.items()}
    app_names = sorted(n for n, c in app_chains.items() if c)
    templates = sorted(TEMPLATES)

    def draws(index: int) -> Iterator[Draw]:
        rng = random.Random(config.seed * 1_000_003 + index)
        kind = "workspace" if rng.random() < config.workspace_share else "chain"
        for _ in range(MAX_DRAWS):
            if kind == "workspace":
                env: Environment | str = build(TEMPLATES[templates[index % len(templates)]](rng))
            else:
                name = app_names[(index // 2) % len(app_names)]
                env = sample_task(seeds[name], rng.choice(app_chains[name]), rng)
            if isinstance(env, str):
                yield kind, f"draw: {env.split(':')[0]}"
            else:
                yield kind, admit(env, handlers=handlers, search_budget=config.search_budget)
    return draws


def _llm_draws(config: SynthConfig, client: Any, handlers: Mapping[str, Handler], log: list[str]) -> Callable[[int], Iterator[Draw]]:
    from envtrain.synth.catalogue import load_catalogue, select
    from envtrain.synth.engine import attempts_log, synthesize

    cards = select(load_catalogue() if config.scenarios == "builtin" else load_catalogue(config.scenarios), config.select)

    def draws(index: int) -> Iterator[Draw]:
        card = cards[index % len(cards)]
        result = synthesize(card, client, backend=config.sandbox, handlers=handlers, revisions=config.revisions,
                            search_budget=config.search_budget)
        log.append(attempts_log(result))
        if result.env is None:
            yield "llm", f"engine: rejected at the {result.stage} stage"
            return
        assert result.admission is not None
        yield "llm", (result.env, result.admission)
    return draws
