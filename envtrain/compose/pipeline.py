"""A compose run: skeletons → build → unstated-value guard → admission → DIR/envs/<id>.json.

Each index i of a run has its own seed (a hash of the run seed and i) and its own archetype
(i mod 8, so every run of eight or more covers all eight); the skeleton for i is drawn from the
pool of seeds and recombinations of that archetype. An index therefore always builds the same
environment, which makes a run resumable: indices already in the manifest (and, when admitted,
whose file is still there) are skipped, and an index rebuilt after a crash overwrites its own file.

Outputs: envs/<id>.json (environment documents, apps by built-in name, which the loader expands),
manifest.jsonl (one line per index), report.json (counts, rejection reasons, skeleton statistics).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.admission import check_admission
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text, canonical_json, content_hash
from envtrain.compose.atoms import AtomPool
from envtrain.compose.builder import build
from envtrain.compose.context import Unbuildable
from envtrain.compose.datacards import DataPool, load_cards
from envtrain.compose.guard import unstated_values
from envtrain.compose.skeleton import CONSTRAINTS, Skeleton, constraint_rates, load_seeds, recombine, violations
from envtrain.compose.vocabulary import ARCHETYPES


class ComposeConfig(BaseModel):
    """One compose run. Every field is a CLI flag of ``envtrain compose``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(ge=1, description="indices to build (each admitted or rejected with a reason)")
    seed: int = Field(0, description="run seed; with n it fixes every environment")
    out: Path = Field(description="output folder: envs/, manifest.jsonl, report.json")
    apps: tuple[str, ...] | None = Field(None, description="use only skeletons whose apps are all in this list")
    datasets: tuple[str, ...] | None = Field(None, description="use only these tables (package/item); default: every usable one")
    workers: int = Field(1, ge=1, description="worker processes")
    cache_dir: Path | None = Field(None, description="data-card cache folder (default: OUT/cache)")
    atoms: Path | None = Field(None, description="a custom atom file (rules, intents, kinds, seeds)")
    search_budget: int = Field(400, ge=1, description="tool calls admission condition (4) may try per environment")
    recombined: int = Field(240, ge=0, description="skeletons recombined from the seeds")

    @property
    def cache(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.out / "cache"


class Composer:
    """Everything one process needs to turn an index into a manifest entry."""

    def __init__(self, config: ComposeConfig, cards: list[Any] | None = None) -> None:
        self.config = config
        self.pool = AtomPool.builtin()
        if config.atoms is not None:
            self.pool = self.pool.with_custom(config.atoms)
        if config.apps is not None:
            unknown = [a for a in config.apps if a not in self.pool.servers]
            if unknown:
                raise SpecError(f"unknown app {unknown[0]!r} (apps: {', '.join(sorted(self.pool.servers))})")
        self.data = DataPool(cards if cards is not None else load_cards(config.cache, only=config.datasets))
        self.seeds = load_seeds(self.pool)  # structural constraints; schema compatibility depends on the tables
        self.recombination: dict[str, Any] = {}
        extra = recombine(self.seeds, self.pool, random.Random(config.seed), config.recombined, self.data.cards, self.recombination)
        skeletons = [s for s in self.seeds if not violations(s, self.pool, self.data.cards)] + extra
        if config.apps is not None:
            skeletons = [s for s in skeletons if set(s.apps) <= set(config.apps)]
        if not skeletons:
            raise SpecError("no skeleton fits the chosen apps and tables; allow more apps or tables")
        self.skeletons = skeletons
        self.by_archetype = {a: [s for s in skeletons if s.rule.archetype == a] for a in ARCHETYPES}

    def plan(self, index: int) -> tuple[Skeleton, int]:
        seed = int(content_hash([self.config.seed, index]), 16)
        options = self.by_archetype[ARCHETYPES[index % len(ARCHETYPES)]] or self.skeletons
        return options[seed % len(options)], seed

    def make(self, index: int) -> dict[str, Any]:
        """Build, guard, admit and (when admitted) write one environment; never raises."""
        sk, seed = self.plan(index)
        entry: dict[str, Any] = {"index": index, "skeleton": sk.hash, "domain": sk.domain, "archetype": sk.rule.archetype,
                                 "carrier": sk.rule.carrier, "exception": sk.rule.exception, "seed": seed}
        start = time.perf_counter()
        try:
            built = build(sk, self.pool, self.data, seed)
        except Unbuildable as exc:
            return {**entry, "status": "rejected", "stage": "build", "reason": exc.reason, "seconds": _since(start)}
        except Exception as exc:  # a builder bug: counted, reported, and the run goes on
            return {**entry, "status": "rejected", "stage": "build", "reason": f"builder error: {type(exc).__name__}: {exc}",
                    "seconds": _since(start)}
        env = built.env
        entry.update(id=env.id, dataset=built.dataset, host=built.host_app, carrier_app=built.carrier_app,
                     apps=[a.name for a in env.apps], action=built.action_kind, reports=list(built.report_kinds),
                     check_kinds=env.provenance.settings.get("check_kinds", {}),
                     positive=len(env.verifier.positive), negative=len(env.verifier.negative),
                     steps=len(env.reference_solution))
        faults = unstated_values(env, built.stated)
        if faults:
            return {**entry, "status": "rejected", "stage": "guard", "reason": f"unstated value: {faults[0]}",
                    "seconds": _since(start)}
        built_at = time.perf_counter()
        report = check_admission(env, search_budget=self.config.search_budget)
        entry["admission_seconds"] = round(time.perf_counter() - built_at, 6)
        if not report.admitted:
            first = report.failures[0]
            return {**entry, "status": "rejected", "stage": "admission",
                    "reason": f"admission ({first.condition}): {first.reason}", "seconds": _since(start)}
        write_env(self.config.out, env)
        return {**entry, "status": "admitted", "seconds": _since(start)}


def write_env(out: Path, env: Any) -> Path:
    """The document with built-in apps by name (the loader expands them; the id is unchanged)."""
    from envtrain.apps import builtin_app_names, load_app

    doc = env.model_dump(mode="json")
    names = set(builtin_app_names())
    doc["apps"] = [a.name if a.name in names and load_app(a.name) == a else d for a, d in zip(env.apps, doc["apps"])]
    path = out / "envs" / f"{env.id}.json"
    atomic_write_text(path, canonical_json(doc) + "\n")
    return path


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 6)


# -- manifest -------------------------------------------------------------------------------


def read_manifest(out: Path) -> dict[int, dict[str, Any]]:
    """Entries by index (the last line for an index wins; a torn last line from a crash is ignored)."""
    path = out / "manifest.jsonl"
    entries: dict[int, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                entries[int(entry["index"])] = entry
            except (ValueError, KeyError, TypeError):
                continue
    return entries


def finished(out: Path, entries: dict[int, dict[str, Any]]) -> set[int]:
    """Indices that need no work: rejected ones, and admitted ones whose file is still there."""
    return {i for i, e in entries.items()
            if e.get("status") == "rejected" or (e.get("status") == "admitted" and (out / "envs" / f"{e['id']}.json").exists())}


# -- running --------------------------------------------------------------------------------


def _worker(config_json: str, indices: list[int], queue: Any) -> None:
    composer = Composer(ComposeConfig.model_validate_json(config_json))
    for index in indices:
        queue.put(composer.make(index))
    queue.put(None)


def run(config: ComposeConfig, *, progress: Callable[[int, int], None] | None = None,
        log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) a compose run; returns the report (also written to OUT/report.json)."""
    start = time.perf_counter()
    config.out.mkdir(parents=True, exist_ok=True)
    if log:
        log(f"data cards: {config.cache}")
    cards = load_cards(config.cache, only=config.datasets)  # scan once here, so workers only read the cache
    composer = Composer(config, cards)
    entries = read_manifest(config.out)
    done = finished(config.out, entries)
    todo = [i for i in range(config.n) if i not in done]
    if log:
        log(f"{len(composer.skeletons)} skeletons ({len(composer.seeds)} seeds), {len(cards)} data cards;"
            f" {len(todo)} of {config.n} indices to build" + (f" ({config.n - len(todo)} already done)" if done else ""))
    manifest = config.out / "manifest.jsonl"
    fresh: list[dict[str, Any]] = []
    with open(manifest, "a", encoding="utf-8") as handle:
        def record(entry: dict[str, Any]) -> None:
            entries[entry["index"]] = entry
            fresh.append(entry)
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
            handle.flush()
            if progress:
                progress(len(fresh), len(todo))

        workers = min(config.workers, max(1, len(todo)))
        if workers <= 1:
            for index in todo:
                record(composer.make(index))
        else:
            _parallel(config, todo, workers, record)
    kept = {i: e for i, e in entries.items() if i < config.n}
    atomic_write_text(manifest, "".join(json.dumps(kept[i], sort_keys=True) + "\n" for i in sorted(kept)))
    report = summarize(config, list(kept.values()), fresh, composer, cards, time.perf_counter() - start)
    atomic_write_text(config.out / "report.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report


def _parallel(config: ComposeConfig, todo: list[int], workers: int, record: Callable[[dict[str, Any]], None]) -> None:
    ctx = mp.get_context("spawn")  # no fork of a parent holding pandas and SQLite state
    queue = ctx.Queue()
    shares = [todo[k::workers] for k in range(workers)]
    procs = [ctx.Process(target=_worker, args=(config.model_dump_json(), share, queue), daemon=True) for share in shares]
    for p in procs:
        p.start()
    try:
        running = len(procs)
        while running:
            try:
                entry = queue.get(timeout=5)
            except Exception:  # queue.Empty: check that the workers are still alive
                if not any(p.is_alive() for p in procs):
                    raise RuntimeError("compose workers stopped without finishing (see their error above)") from None
                continue
            if entry is None:
                running -= 1
            else:
                record(entry)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join(timeout=5)


# -- the report -----------------------------------------------------------------------------


def _reason_key(entry: dict[str, Any]) -> str:
    reason = entry.get("reason", "")
    if entry.get("stage") == "admission":
        return reason.split(":")[0] + ": " + reason.split(":", 1)[1].strip()[:60]
    return reason.split(":")[0] + (": " + reason.split(":", 1)[1].strip()[:50] if ":" in reason else "")


def summarize(config: ComposeConfig, entries: list[dict[str, Any]], fresh: list[dict[str, Any]], composer: Composer,
              cards: list[Any], seconds: float) -> dict[str, Any]:
    admitted = [e for e in entries if e["status"] == "admitted"]
    built = [e for e in entries if e.get("id")]
    count = lambda key, rows: dict(Counter(k for e in rows for k in ([e[key]] if not isinstance(e.get(key), list) else e[key]) if k).most_common())  # noqa: E731
    kinds = Counter()
    for e in admitted:
        kinds.update({e["action"]: 1})
        kinds.update({k: 1 for k in e.get("reports", [])})
    checks = Counter()
    for e in admitted:
        checks.update(e.get("check_kinds", {}))
    fresh_admitted = sum(e["status"] == "admitted" for e in fresh)
    return {
        "config": json.loads(config.model_dump_json()),
        "seconds": round(seconds, 3),
        "this_run": {"processed": len(fresh), "admitted": fresh_admitted,
                     "environments_per_second": round(len(fresh) / seconds, 3) if seconds else None,
                     "admitted_per_second": round(fresh_admitted / seconds, 3) if seconds else None},
        "indices": len(entries),
        "built": len(built),
        "admitted": len(admitted),
        "admission_rate": round(len(admitted) / len(entries), 4) if entries else None,
        "rejections": {"by_stage": dict(Counter(e.get("stage") for e in entries if e["status"] == "rejected")),
                       "by_reason": dict(Counter(_reason_key(e) for e in entries if e["status"] == "rejected").most_common(20))},
        "skeletons": {
            "seeds": len(composer.seeds), "pool": len(composer.skeletons),
            "recombination": composer.recombination,
            "constraints": list(CONSTRAINTS),
            "random": constraint_rates(composer.pool, cards, n=2000, seed=config.seed),
        },
        "counts": {
            "apps": count("apps", admitted), "hosts": count("host", admitted), "archetypes": count("archetype", admitted),
            "carriers": count("carrier", admitted), "carrier_apps": count("carrier_app", admitted),
            "operation_kinds": dict(kinds.most_common()), "verifier_kinds": dict(checks.most_common()),
            "datasets": len({e["dataset"] for e in admitted}),
            "exception": sum(bool(e.get("exception")) for e in admitted),
        },
        "verifier": {
            "mean_positive": round(sum(e["positive"] for e in admitted) / len(admitted), 2) if admitted else None,
            "mean_negative": round(sum(e["negative"] for e in admitted) / len(admitted), 2) if admitted else None,
            "mean_steps": round(sum(e["steps"] for e in admitted) / len(admitted), 2) if admitted else None,
        },
        "timing": {
            "mean_seconds": round(sum(e["seconds"] for e in fresh) / len(fresh), 5) if fresh else None,
            "mean_admission_seconds": round(sum(e.get("admission_seconds", 0) for e in fresh if "admission_seconds" in e)
                                            / max(1, sum("admission_seconds" in e for e in fresh)), 5),
        },
    }


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)
