"""The evolution round of a compose run (LegoEnv §3.5), after the builds of ``pipeline.run``.

1. Failed builds that the programmatic diagnosis pins on something (a server atom lacking a tool π
   needs, a verifier demanding an unstated value) become issues (OUT/issues.json).
2. With a teacher (teacher.py), every admitted environment is attempted N times through the rollout
   engine; each gets its band, and every unsolved one is diagnosed from its failed attempts: the
   programmatic checks first, then, where ``diagnose_llm`` is set, the LLM diagnosis agent on those the
   checks call hard (llm_diagnosis.py). Each diagnosis, and issue, says which of the two made it.
3. For each "repair atom" issue, the programmatic repair agent proposes a patch (repairs.py); the
   repair is stored once per atom version and the issue marked repaired.
4. Every index whose diagnosis names an atom version that now has a repair is rebuilt, with the repair
   (a replaced environment's file is removed); with a teacher, the rebuilt environments are attempted
   too, and the report gives the yield before and after the repairs.
Everything here reads and writes the run folder, so a rerun resumes it and gets the same answers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from envtrain.core.env import Environment
from envtrain.compose.evolve import Diagnosis, IssueLog
from envtrain.compose.llm_diagnosis import Case, DiagnosisAgent, diagnose_first, summarize_exchanges
from envtrain.compose.repairs import RepairStore, propose_repair

MAX_PASSES = 3  # a rebuilt index may meet a second fault of the repaired atom; the chain is short


def evolve_run(config: Any, composer: Any, entries: dict[int, dict[str, Any]], record: Callable[[dict[str, Any]], None], *,
               log: Callable[[str], None] | None = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """The round; returns the report sections it adds (``evolution`` and, with a teacher, ``teacher``)."""
    say = log or (lambda _: None)
    issues = IssueLog(config.out / "issues.json")
    store = RepairStore(config.repair_store)
    state: dict[str, Any] = {"repairs_made": [], "rebuilt": 0, "rebuilt_admitted": 0}
    out: dict[str, Any] = {}
    if config.evolve:
        for _ in range(MAX_PASSES):
            diagnosed = [(i, Diagnosis.model_validate(e["diagnosis"])) for i, e in sorted(entries.items())
                         if i < config.n and e["status"] == "rejected" and "diagnosis" in e]
            if not _repair_and_rebuild(composer, entries, record, diagnosed, issues, store, state, say):
                break
    if config.teacher:
        out["teacher"] = _teacher(config, composer, entries, record, issues, store, state, say, progress)
    if config.evolve:
        filed = issues.read()
        out["evolution"] = {
            "issues": dict(Counter(i["status"] for i in filed)),
            "issues_by_pathway": dict(Counter(i["pathway"] for i in filed)),
            "issues_by_source": dict(Counter(i.get("source", "programmatic") for i in filed)),
            "repairs_in_store": len(store.read()),
            **state,
        }
    return out


def _repair_and_rebuild(composer: Any, entries: dict[int, dict[str, Any]], record: Callable[[dict[str, Any]], None],
                        diagnosed: list[tuple[int, Diagnosis]], issues: IssueLog, store: RepairStore, state: dict[str, Any],
                        say: Callable[[str], None]) -> list[int]:
    """File the diagnoses, repair what can be repaired, rebuild the indices a repair reaches; the rebuilt indices."""
    if not diagnosed:
        return []
    issues.record(d for _, d in diagnosed)
    versions = composer.versions()
    for target in dict.fromkeys(d.target for _, d in diagnosed if d.pathway == "repair atom"):
        first = next(d for _, d in diagnosed if d.target == target)
        faulty = versions.get(target.rsplit("@", 1)[-1])
        repair = propose_repair(first, faulty) if faulty is not None else None
        if repair is None:
            continue
        stored, new = store.add(repair.model_copy(update={"envs": tuple(sorted({d.env_id for _, d in diagnosed if d.target == target}))}))
        issues.resolve(target, stored.id, stored.fix)
        if new:
            state["repairs_made"].append({"id": stored.id, "atom": stored.atom, "fix": stored.fix})
            say(f"repair {stored.id}: {stored.atom}: {stored.fix}")
    composer.reload_repairs()
    repaired = {r.atom for r in composer.repairs}
    rebuilt = []
    for index, d in diagnosed:
        if d.target not in repaired:
            continue
        old = entries.get(index, {})
        entry = composer.make(index)
        if old.get("status") == "admitted" and old.get("id") != entry.get("id"):
            (composer.config.out / "envs" / f"{old['id']}.json").unlink(missing_ok=True)
        record(entry)
        rebuilt.append(index)
        state["rebuilt"] += 1
        state["rebuilt_admitted"] += entry["status"] == "admitted"
    if rebuilt:
        say(f"rebuilt {len(rebuilt)} environments with the repaired atoms")
    return rebuilt


def _teacher(config: Any, composer: Any, entries: dict[int, dict[str, Any]], record: Callable[[dict[str, Any]], None],
             issues: IssueLog, store: RepairStore, state: dict[str, Any], say: Callable[[str], None],
             progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    from envtrain.compose.teacher import attempts_of, run_teacher, summarize

    settings = config.teacher_settings
    folder = config.out / "teacher"
    say(f"teacher {config.teacher}: {settings.attempts} attempts per admitted environment")
    results = _attach(entries, config, run_teacher(config.out / "envs", folder, config.teacher, settings, progress=progress))
    section = summarize(results, config.teacher, settings)
    if not config.evolve:
        return section
    unsolved = [(i, e) for i, e in sorted(entries.items())
                if i < config.n and e["status"] == "admitted" and e.get("teacher", {}).get("band") == "unsolved"]
    evidence = attempts_of(folder, [e["id"] for _, e in unsolved])
    agent = None
    if config.diagnose_llm:
        agent = DiagnosisAgent(config.diagnose_llm, config.diagnosis_model, budget=config.diagnose_budget)
        say(f"diagnosis agent {config.diagnose_llm}: reads the unsolved environments the checks call hard")
    diagnosed, exchanges = [], []
    try:
        for done, (index, entry) in enumerate(unsolved, 1):
            env = Environment.load(config.out / "envs" / f"{entry['id']}.json")
            attempts = evidence.get(entry["id"], [])
            case = _case(composer, index, entry, env, attempts) if agent else Case.of(env, attempts)
            found, exchange = diagnose_first(case, agent, recorded=entry["teacher"].pop("diagnosis_llm", None))
            entry["teacher"]["diagnosis"] = found.model_dump(mode="json")
            if exchange is not None:
                entry["teacher"]["diagnosis_llm"] = exchange
                exchanges.append(exchange)
                if found.source == "llm" and found.pathway != "keep hard":
                    say(f"diagnosis (llm) of {env.id}: {found.category}, {found.pathway}: {found.reason[:120]}")
                if progress:  # a model takes seconds per environment: the bar shows it
                    progress(done, len(unsolved))
            diagnosed.append((index, found))
    finally:
        if agent is not None:
            agent.close()
    section["pathways"] = dict(Counter(d.pathway for _, d in diagnosed))
    section["diagnosis"] = {"by_verdict": dict(Counter(d.category for _, d in diagnosed)),
                            "by_pathway": dict(Counter(d.pathway for _, d in diagnosed)),
                            "by_source": dict(Counter(d.source for _, d in diagnosed)),
                            **({"llm": summarize_exchanges(exchanges)} if agent else {})}
    rebuilt = _repair_and_rebuild(composer, entries, record, [(i, d) for i, d in diagnosed if d.pathway != "keep hard"],
                                  issues, store, state, say)
    if rebuilt:
        results = _attach(entries, config, run_teacher(config.out / "envs", folder, config.teacher, settings, progress=progress))
        section["after_repairs"] = summarize(results, config.teacher, settings)
    return section


def _case(composer: Any, index: int, entry: dict[str, Any], env: Environment, attempts: list[Any]) -> Case:
    """What the diagnosis agent reads: the environment, the attempts, and the builder's record (the rule text)."""
    try:
        built = composer.rebuild(index, entry)
    except Exception:  # noqa: BLE001 (the rule text is a help, not a need: the agent still reads W0)
        built = None
    if built is not None and built.env.verifier != env.verifier:  # not the build that made env (the data changed since)
        built = None
    return Case.of(env, attempts, built=built, pool=composer.pool, data=composer.data)


def _attach(entries: dict[int, dict[str, Any]], config: Any, results: dict[str, Any]) -> dict[str, Any]:
    """Put each admitted entry's teacher result on it; the results of this run's environments only. An entry
    still unsolved by the same teacher keeps its diagnosis (a rerun replays the agent's verdict from it)."""
    mine = {}
    for index, entry in entries.items():
        if index < config.n and entry["status"] == "admitted" and entry.get("id") in results:
            result, before = results[entry["id"]], entry.get("teacher") or {}
            entry["teacher"] = result.to_entry(config.teacher)
            if result.band == "unsolved" and before.get("policy") == config.teacher:
                entry["teacher"].update({k: before[k] for k in ("diagnosis", "diagnosis_llm") if k in before})
            mine[entry["id"]] = result
    return mine


__all__ = ["evolve_run"]
