"""A compose run: skeletons → build → unstated-value guard → admission → DIR/envs/<id>.json.

Each index i of a run has its own seed (a hash of the run seed and i) and its own archetype
(i mod 8, so every run of eight or more covers all eight); the skeleton for i is drawn from the
pool of seeds and recombinations of that archetype. An index therefore always builds the same
environment, which makes a run resumable: indices already in the manifest (and, when admitted,
whose file is still there) are skipped, and an index rebuilt after a crash overwrites its own file.

Repairs (repairs.py) made in earlier rounds are applied to every fresh build from the atoms they fix;
an index rebuilt from its manifest entry (an admitted environment whose file went missing) uses exactly
the repairs, and the LLM-written request, that entry records, so it comes back with the same id.
After building, the evolution round (rounds.py) diagnoses failures, runs the teacher when one is set,
files issues, repairs atoms and rebuilds the indices a repair reaches.

Outputs: envs/<id>.json (environment documents, apps by built-in name, which the loader expands),
manifest.jsonl (one line per index), report.json (counts, rejection reasons, skeleton statistics),
and, when evolution has something to say, issues.json, repairs.json and teacher/ (the teacher's
trajectories, verifier-accepted ones as a dataset).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envtrain.core.admission import check_admission
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text, canonical_json, content_hash
from envtrain.compose.atoms import AtomPool
from envtrain.compose.builder import build
from envtrain.compose.context import Unbuildable
from envtrain.compose.datacards import DataPool, load_cards
from envtrain.compose.guard import unstated_values
from envtrain.compose.repairs import RepairStore, repaired_pool
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
    # evolution (LegoEnv §3.5)
    evolve: bool = Field(True, description="diagnose failures, file issues, repair atoms, rebuild what a repair reaches")
    repairs: Path | None = Field(None, description="the repair store (default: OUT/repairs.json); share one across runs")
    teacher: str | None = Field(None, description="teacher policy spec (oracle, noop, hf:PATH, openai:URL, vllm:MODEL); none: no teacher step")
    attempts: int = Field(8, ge=1, description="teacher episodes per admitted environment")
    teacher_turns: int = Field(50, ge=1, description="assistant turns per teacher episode")
    teacher_max_tokens: int = Field(1024, ge=1, description="tokens per teacher turn")
    teacher_concurrency: int = Field(8, ge=1, description="teacher episodes in flight at once")
    # the builder (LegoEnv §3.4)
    builder: Literal["programmatic", "llm"] = Field("programmatic", description="llm: an endpoint writes each request (llm_builder.py)")
    llm: str | None = Field(None, description="OpenAI-compatible base URL for the llm builder, e.g. http://host:8000/v1")
    llm_model: str | None = Field(None, description="model name at the endpoint (default: its first model)")
    llm_budget: int = Field(3, ge=1, description="answers the llm builder may give per environment before it is rejected")
    # the diagnosis agent (LegoEnv §3.5): programmatic checks first, a model on what they leave undecided
    diagnose_llm: str | None = Field(None, description="OpenAI-compatible base URL of the LLM diagnosis agent (llm_diagnosis.py),"
                                     " which reads the zero-yield environments the programmatic checks call hard; none: checks only")
    diagnose_model: str | None = Field(None, description="model name at diagnose_llm (default: llm_model where the URLs agree,"
                                       " else the endpoint's first model)")
    diagnose_budget: int = Field(3, ge=1, description="answers the diagnosis agent may give per environment before the checks' verdict stands")

    @model_validator(mode="after")
    def _consistent(self) -> "ComposeConfig":
        if self.builder == "llm" and not self.llm:
            raise ValueError("the llm builder needs an endpoint: give --llm URL (an OpenAI-compatible base URL)")
        if self.diagnose_llm and not self.teacher:
            raise ValueError("the diagnosis agent reads the teacher's failed attempts: give --teacher as well")
        if self.diagnose_llm and not self.evolve:
            raise ValueError("the diagnosis agent is part of evolution: drop --no-evolve")
        if self.teacher is not None:
            from envtrain.compose.teacher import check_spec

            check_spec(self.teacher)
        return self

    @property
    def cache(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.out / "cache"

    @property
    def repair_store(self) -> Path:
        return self.repairs if self.repairs is not None else self.out / "repairs.json"

    @property
    def diagnosis_model(self) -> str | None:
        if self.diagnose_model is not None or self.diagnose_llm is None:
            return self.diagnose_model
        return self.llm_model if self.llm and self.llm.rstrip("/") == self.diagnose_llm.rstrip("/") else None

    @property
    def teacher_settings(self) -> Any:
        from envtrain.compose.teacher import TeacherSettings

        return TeacherSettings(attempts=self.attempts, max_turns=self.teacher_turns, max_tokens=self.teacher_max_tokens,
                               concurrency=self.teacher_concurrency)


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
        self._writer: Any = None
        self.reload_repairs()

    def reload_repairs(self) -> None:
        """Read the repair store again (after the evolution round added to it)."""
        self.repairs = RepairStore(self.config.repair_store).read()
        self._pools: dict[tuple[str, ...] | None, AtomPool] = {}

    def build_pool(self, only: tuple[str, ...] | None = None) -> AtomPool:
        """The pool a build uses: every repair in the store (None), or exactly the repairs ``only`` names."""
        if only not in self._pools:
            self._pools[only] = repaired_pool(self.pool, self.repairs, only) if self.repairs else self.pool
        return self._pools[only]

    def versions(self) -> dict[str, Any]:
        """Every version of every server atom this run can build from, by spec hash (issues name these)."""
        from envtrain.compose.repairs import atom_versions

        return atom_versions(self.pool, self.repairs)

    def writer(self) -> Any:
        if self._writer is None:
            from envtrain.compose.llm_builder import RequestWriter

            self._writer = RequestWriter(self.config.llm or "", self.config.llm_model, budget=self.config.llm_budget)
        return self._writer

    def rebuild(self, index: int, recorded: dict[str, Any]) -> Any:
        """The builder's record (builder.Built) of an index as its manifest entry made it, with no admission and
        nothing written: what the diagnosis agent reads besides the environment (the rule text in its carrier)."""
        sk, seed = self.plan(index)
        return build(sk, self.build_pool(tuple(sorted(recorded.get("repairs", ())))), self.data, seed)

    def plan(self, index: int) -> tuple[Skeleton, int]:
        seed = int(content_hash([self.config.seed, index]), 16)
        options = self.by_archetype[ARCHETYPES[index % len(ARCHETYPES)]] or self.skeletons
        return options[seed % len(options)], seed

    def make(self, index: int, recorded: dict[str, Any] | None = None) -> dict[str, Any]:
        """Build, guard, admit and (when admitted) write one environment; never raises.

        ``recorded``: the index's manifest entry, to rebuild it exactly (its repairs, its LLM request)."""
        sk, seed = self.plan(index)
        entry: dict[str, Any] = {"index": index, "skeleton": sk.hash, "family": sk.family, "domain": sk.domain, "archetype": sk.rule.archetype,
                                 "carrier": sk.rule.carrier, "exception": sk.rule.exception, "seed": seed}
        start = time.perf_counter()
        only = tuple(sorted(recorded.get("repairs", ()))) if recorded is not None else None
        try:
            built = build(sk, self.build_pool(only), self.data, seed)
            if self.config.builder == "llm":
                built, exchange = self.writer().write(built, ((recorded or {}).get("llm") or {}).get("request"))
                entry["llm"] = exchange
        except Unbuildable as exc:
            stage = "llm builder" if exc.reason.startswith("llm builder") else "build"
            return {**entry, "status": "rejected", "stage": stage, "reason": exc.reason, "seconds": _since(start)}
        except Exception as exc:  # a builder bug: counted, reported, and the run goes on
            return {**entry, "status": "rejected", "stage": "build", "reason": f"builder error: {type(exc).__name__}: {exc}",
                    "seconds": _since(start)}
        env = built.env
        if env.provenance.settings.get("repairs"):
            entry["repairs"] = list(env.provenance.settings["repairs"])
        entry.update(id=env.id, dataset=built.dataset, host=built.host_app, carrier_app=built.carrier_app,
                     apps=[a.name for a in env.apps], action=built.action_kind, reports=list(built.report_kinds),
                     check_kinds=env.provenance.settings.get("check_kinds", {}),
                     positive=len(env.verifier.positive), negative=len(env.verifier.negative),
                     steps=len(env.reference_solution))
        faults = unstated_values(env, built.stated)
        if faults:
            return {**entry, "status": "rejected", "stage": "guard", "reason": f"unstated value: {faults[0]}",
                    **self._diagnosis(built), "seconds": _since(start)}
        built_at = time.perf_counter()
        try:
            report = check_admission(env, search_budget=self.config.search_budget)
        except SpecError as exc:  # the environment cannot even start (a broken server atom)
            return {**entry, "status": "rejected", "stage": "admission", "reason": f"admission: {exc}",
                    **self._diagnosis(built), "seconds": _since(start)}
        entry["admission_seconds"] = round(time.perf_counter() - built_at, 6)
        if not report.admitted:
            first = report.failures[0]
            return {**entry, "status": "rejected", "stage": "admission",
                    "reason": f"admission ({first.condition}): {first.reason}", **self._diagnosis(built), "seconds": _since(start)}
        write_env(self.config.out, env)
        return {**entry, "status": "admitted", "seconds": _since(start)}

    def _diagnosis(self, built: Any) -> dict[str, Any]:
        """For a failed build: the programmatic diagnosis, where it points at something to change (evolve.py)."""
        if not self.config.evolve:
            return {}
        from envtrain.compose.evolve import diagnose

        found = diagnose(built.env, [], built.stated)
        return {"diagnosis": found.model_dump(mode="json")} if found.pathway != "keep hard" else {}


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


def _worker(config_json: str, jobs: list[tuple[int, dict[str, Any] | None]], queue: Any) -> None:
    composer = Composer(ComposeConfig.model_validate_json(config_json))
    for index, recorded in jobs:
        queue.put(composer.make(index, recorded))
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
    jobs = [(i, entries[i] if entries.get(i, {}).get("status") == "admitted" else None) for i in todo]
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
            if progress and len(fresh) <= len(todo):  # rebuilds by the evolution round are not on this bar
                progress(len(fresh), len(todo))

        workers = min(config.workers, max(1, len(todo)))
        if workers <= 1:
            for index, recorded in jobs:
                record(composer.make(index, recorded))
        else:
            _parallel(config, jobs, workers, record)
        rounds: dict[str, Any] = {}
        if config.evolve or config.teacher:
            from envtrain.compose.rounds import evolve_run

            rounds = evolve_run(config, composer, entries, record, log=log, progress=progress)
    kept = {i: e for i, e in entries.items() if i < config.n}
    atomic_write_text(manifest, "".join(json.dumps(kept[i], sort_keys=True) + "\n" for i in sorted(kept)))
    report = summarize(config, list(kept.values()), fresh, composer, cards, time.perf_counter() - start)
    report.update(rounds)
    atomic_write_text(config.out / "report.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report


def _parallel(config: ComposeConfig, jobs: list[tuple[int, dict[str, Any] | None]], workers: int,
              record: Callable[[dict[str, Any]], None]) -> None:
    ctx = mp.get_context("spawn")  # no fork of a parent holding pandas and SQLite state
    queue = ctx.Queue()
    shares = [jobs[k::workers] for k in range(workers)]
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
        **({"llm_builder": _llm_summary(entries, composer)} if config.builder == "llm" else {}),
        "timing": {
            "mean_seconds": round(sum(e["seconds"] for e in fresh) / len(fresh), 5) if fresh else None,
            "mean_admission_seconds": round(sum(e.get("admission_seconds", 0) for e in fresh if "admission_seconds" in e)
                                            / max(1, sum("admission_seconds" in e for e in fresh)), 5),
        },
    }


def _llm_summary(entries: list[dict[str, Any]], composer: Composer) -> dict[str, Any]:
    """How the llm builder did: answers per environment, first-answer acceptance, why answers were refused."""
    asked = [e["llm"] for e in entries if e.get("llm") and not e["llm"].get("replayed")]
    refused = Counter(r.split(":")[0][:80] for x in asked for r in x["rejected"])
    models = sorted({x["model"] for x in asked})
    return {"model": composer.config.llm_model or (", ".join(models) if models else None), "environments": len(asked),
            "answers": sum(x["answers"] for x in asked), "accepted_first": sum(x["answers"] == 1 for x in asked),
            "refused_answers": dict(refused.most_common(10)),
            "llm_rejections": sum(e.get("stage") == "llm builder" for e in entries)}


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)
