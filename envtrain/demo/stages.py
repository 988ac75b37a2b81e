"""The demo's stages, each a function of the config, the output folder and a progress bar that
returns a JSON-able summary. ``pipeline`` runs them in order and records which have finished.

Folders under OUT: compose/ (LegoEnv run), scale/ (RES lineages), split/{train,heldout}/,
collect/ (teacher trajectories, a datasets folder), model/ (the base checkpoint), sft/, grpo/,
eval/<checkpoint>/<benchmark>/, configs/ (the SFT and GRPO configs the demo ran, rerunnable).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from envtrain.core.io import atomic_write_text
from envtrain.demo.config import DemoConfig, grpo_config, sft_config
from envtrain.demo.display import Bar
from envtrain.demo.split import Member, heldout_families, pick_roots, split

ORACLE_LABEL = "oracle (fixture: replays each reference solution; not a model)"
_STEP = re.compile(r"\b(?:sft|grpo) step (\d+)/(\d+)")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def admitted(out: Path) -> dict[str, dict[str, Any]]:
    """env id -> manifest entry of every admitted compose environment."""
    return {e["id"]: e for e in _read_jsonl(out / "compose" / "manifest.jsonl") if e.get("status") == "admitted"}


def _held(cfg: DemoConfig, out: Path) -> tuple[dict[str, str], frozenset[str]]:
    families = {env_id: e["family"] for env_id, e in admitted(out).items()}
    return families, heldout_families(families.values(), cfg.split.heldout_share, cfg.seed)


# -- 1 compose ------------------------------------------------------------------------------------


def compose(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.compose.pipeline import ComposeConfig, default_workers, run

    config = ComposeConfig(n=cfg.compose.n, seed=cfg.seed, out=out / "compose", workers=cfg.compose.workers or default_workers())
    report = run(config, progress=lambda done, total: bar.set(done, total))
    counts = report["counts"]
    return {"indices": report["indices"], "admitted": report["admitted"], "admission_rate": report["admission_rate"],
            "apps": len(counts["apps"]), "archetypes": len(counts["archetypes"]), "skeleton_pool": report["skeletons"]["pool"]}


# -- 2 scale --------------------------------------------------------------------------------------


def scale(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.compose.pipeline import default_workers
    from envtrain.scale.lineage import ScaleConfig, scale_all

    families, held = _held(cfg, out)
    roots = pick_roots(families, held, cfg.scale.roots_train, cfg.scale.roots_heldout, cfg.seed)
    folder = out / "scale" / "roots"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for env_id in roots:
        path = folder / f"{env_id}.json"
        shutil.copyfile(out / "compose" / "envs" / f"{env_id}.json", path)
        paths.append(path)
    workers = cfg.scale.workers or default_workers()
    bar.total(len(paths))
    report = scale_all(paths, out / "scale", ScaleConfig(depth=cfg.scale.depth, seed=cfg.seed), workers=workers,
                       on_lineage=lambda status: bar.advance(note=f"depth {status.get('depth', '?')}"))
    return {"lineages": report["lineages"], "children": report["children"], "at_cap": report["at_cap"],
            "depth_cap": report["depth_cap"], "reached": report["reached"],
            "reference_length_by_depth": report["reference_length_current"],
            "children_per_second": report.get("children_per_second"), "checks_failed": report["checks_failed"]}


# -- 3 split --------------------------------------------------------------------------------------


def _lineage_nodes(out: Path) -> list[tuple[str, int, Path]]:
    nodes = []
    for folder in sorted((out / "scale" / "lineages").iterdir()):
        for path in folder.glob("*.json"):
            if path.stem.isdigit():
                nodes.append((folder.name, int(path.stem), path))
    return nodes


def split_stage(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.core.env import Environment

    families, held = _held(cfg, out)
    nodes = _lineage_nodes(out)
    members = [Member(env_id, family, env_id) for env_id, family in families.items()]
    scaled: dict[str, Path] = {}
    for root, depth, path in nodes:
        if depth == 0:
            continue
        env_id = Environment.load(path).id  # the id is checked against the content on load
        members.append(Member(env_id, families[root], root, depth))
        scaled[env_id] = path
    result = split(members, held)
    bar.total(len(members))
    target = out / "split"
    if target.exists():
        shutil.rmtree(target)  # a rerun after a crash rebuilds the folders from scratch
    scaled_roots = {root for root, _, _ in nodes}
    for side, group in (("train", result.train), ("heldout", result.heldout)):
        for m in group:
            if m.depth > 0:
                dest = target / side / "lineages" / m.root / f"{m.depth}.json"
                source = scaled[m.env_id]
            elif side == "heldout" and m.env_id in scaled_roots:
                dest = target / side / "lineages" / m.env_id / "0.json"  # the original of an eval lineage
                source = out / "compose" / "envs" / f"{m.env_id}.json"
            else:
                dest = target / side / "original" / f"{m.env_id}.json"
                source = out / "compose" / "envs" / f"{m.env_id}.json"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            bar.advance()
    record = {"heldout_family_ids": sorted(result.heldout_families),
              "train": sorted(m.env_id for m in result.train), "heldout": sorted(m.env_id for m in result.heldout),
              "leakage_check": "passed: no seed-skeleton family and no lineage root on both sides", **result.summary()}
    atomic_write_text(target / "split.json", json.dumps(record, indent=1) + "\n")
    return {k: v for k, v in record.items() if k not in ("train", "heldout", "heldout_family_ids")}


# -- 4 collect ------------------------------------------------------------------------------------


def collect(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.agent.registry import make_policy
    from envtrain.agent.types import SamplingParams
    from envtrain.rollout.collect import CollectConfig, collect as run_collect
    from envtrain.rollout.episode import RolloutLimits

    c = cfg.collect
    config = CollectConfig(envs=out / "split" / "train", out=out / "collect", attempts=c.attempts, keep_per_env=c.keep_per_env,
                           concurrency=c.concurrency, sampling=SamplingParams(temperature=c.temperature, max_tokens=c.max_tokens),
                           limits=RolloutLimits(max_turns=c.max_turns))
    policy = make_policy(c.teacher)
    passed = [0, 0]

    def episode(t: Any) -> None:
        passed[0] += bool(t.passed)
        passed[1] += 1
        bar.advance(note=f"pass {passed[0] / passed[1]:.2f}")

    async def go() -> Any:
        try:
            return await run_collect(config, policy, on_start=bar.total, on_episode=episode)
        finally:
            await policy.aclose()

    summary = asyncio.run(go())
    return {"teacher": ORACLE_LABEL if cfg.teacher_is_oracle else c.teacher, "fixture": cfg.teacher_is_oracle,
            "environments": summary.environments, "attempts": summary.attempts, "kept": summary.kept,
            "pass_at_1": summary.pass_at_1, "mean_turns": summary.mean_turns, "mean_tool_calls": summary.mean_tool_calls}


# -- 5 model, SFT, GRPO ---------------------------------------------------------------------------


def _corpus(out: Path) -> list[str]:
    """Train-split text only: requests, docs and tool schemas of every train environment, and the kept
    trajectories' messages. Held-out text never reaches the tokenizer."""
    from datasets import load_from_disk

    from envtrain.core.env import Environment
    from envtrain.core.session import Runtime

    texts: list[str] = []
    for path in sorted((out / "split" / "train").rglob("*.json")):
        env = Environment.load(path)
        texts.append(env.request)
        texts.extend(d.body for d in env.docs)
        texts.append(json.dumps(Runtime(env).openai_tools, ensure_ascii=False))
    for row in load_from_disk(str(out / "collect")):
        texts.extend(json.dumps(m, ensure_ascii=False) for m in row["messages"])
    return texts


def model(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    m = cfg.model
    if m.base != "tiny":
        return {"base": m.base, "built": False}
    from envtrain.agent.tiny import build_tiny_model

    texts = _corpus(out)
    bar.total(1)
    path = build_tiny_model(out / "model" / "base", layers=m.tiny_layers, hidden=m.tiny_hidden, seed=cfg.seed,
                            vocab_size=m.tiny_vocab, corpus=texts)
    bar.advance()
    return {"base": str(path), "built": True, "layers": m.tiny_layers, "hidden": m.tiny_hidden, "vocab": m.tiny_vocab,
            "tokenizer_corpus_texts": len(texts)}


def base_model(cfg: DemoConfig, out: Path) -> str:
    return str(out / "model" / "base") if cfg.model.base == "tiny" else cfg.model.base


def _write_config(out: Path, name: str, run_config: Any) -> Path:
    import yaml

    command = f"# envtrain {name} --config {out / 'configs' / f'{name}.yaml'}   (written by envtrain demo)\n"
    path = out / "configs" / f"{name}.yaml"
    atomic_write_text(path, command + yaml.safe_dump(run_config.model_dump(mode="json"), sort_keys=False))
    return path


def _train(cfg: DemoConfig, kind: str, run_config: Any, config_path: Path, bar: Bar, runner: Any) -> Any:
    def printer(line: str) -> None:
        found = _STEP.search(line)  # the trainers' progress line: "sft step N/M  loss ..."
        if found:
            bar.set(int(found.group(1)), int(found.group(2)), note=_short(line))

    if cfg.train.launcher == "torchrun":
        command = ["torchrun", f"--nproc_per_node={cfg.train.nproc_per_node}", "--no-python", "envtrain", kind, "--config", str(config_path)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            for line in proc.stdout or ():
                printer(line)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(command)} exited with {proc.returncode}")
        return None
    return runner(run_config, printer)


def _short(line: str) -> str:
    keep = re.findall(r"\b(loss|reward|env/pass_rate) (\S+)", line)
    return "  ".join(f"{k} {v}" for k, v in keep)


def sft(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.train.logs import read_metrics
    from envtrain.train.sft import run_sft

    run_config = sft_config(cfg, out / "sft", base_model(cfg, out), out / "collect")
    path = _write_config(out, "sft", run_config)
    result = _train(cfg, "sft", run_config, path, bar, run_sft)
    logged = [r for r in read_metrics(out / "sft") if r.get("loss") is not None]
    accuracy = [r["mean_token_accuracy"] for r in logged if r.get("mean_token_accuracy") is not None]
    summary: dict[str, Any] = {"config": str(path), "steps": len(logged), "first_loss": logged[0]["loss"] if logged else None,
                               "last_loss": logged[-1]["loss"] if logged else None,
                               "first_token_accuracy": accuracy[0] if accuracy else None,
                               "last_token_accuracy": accuracy[-1] if accuracy else None}
    if result is not None:
        summary.update(steps=result.steps, seconds=round(result.seconds, 1), tokens_per_second=round(result.tokens_per_second, 1),
                       records=result.data.records, records_kept=result.data.kept, records_overlength=result.data.overlength)
    return summary


def grpo(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.train.grpo import run_grpo
    from envtrain.train.logs import read_metrics

    run_config = grpo_config(cfg, out / "grpo", str(out / "sft"), out / "split" / "train", out / "collect")
    path = _write_config(out, "grpo", run_config)
    result = _train(cfg, "grpo", run_config, path, bar, run_grpo)
    logged = [r for r in read_metrics(out / "grpo") if r.get("reward") is not None]
    rewards = [r["reward"] for r in logged]
    # A group whose episodes all score alike has zero advantage: no gradient. Say how many steps had any signal.
    signal = sum(1 for r in logged if r.get("frac_reward_zero_std", 0.0) < 1.0)
    summary: dict[str, Any] = {"config": str(path), "reward": run_config.reward, "steps": len(rewards),
                               "reward_first": rewards[0] if rewards else None, "reward_last": rewards[-1] if rewards else None,
                               "steps_with_reward_signal": signal}
    if result is not None:
        summary.update(steps=result.steps, seconds=round(result.seconds, 1), seconds_per_step=round(result.seconds_per_step, 2),
                       reward_mean=result.reward_mean, pass_rate_mean=result.pass_rate_mean,
                       prompts=result.prompts.environments)
    return summary


# -- 6 eval ---------------------------------------------------------------------------------------


def checkpoints(cfg: DemoConfig, out: Path) -> dict[str, str]:
    return {"base": base_model(cfg, out), "sft": str(out / "sft"), "grpo": str(out / "grpo")}


def benchmarks(cfg: DemoConfig, out: Path) -> dict[str, tuple[str, int | None]]:
    """name -> (adapter spec, per-category limit)."""
    found = {"heldout": (f"envs:{out / 'split' / 'heldout' / 'lineages'}", None)}
    if cfg.eval.bfcl_per_category:
        found["bfcl"] = ("bfcl-multi-turn:" + ",".join(cfg.eval.bfcl_categories), cfg.eval.bfcl_per_category)
    return found


def evaluate(cfg: DemoConfig, out: Path, bar: Bar) -> dict[str, Any]:
    from envtrain.agent.registry import make_policy
    from envtrain.agent.types import SamplingParams
    from envtrain.bench.registry import make_adapter
    from envtrain.bench.types import EpisodeLimits
    from envtrain.eval.report import write_run
    from envtrain.eval.run import EvalConfig, evaluate as run_eval

    e = cfg.eval
    jobs = []
    skipped: dict[str, str] = {}
    for bench, (spec, limit) in benchmarks(cfg, out).items():
        try:
            adapter = make_adapter(spec, limit=limit, seed=cfg.seed)
            n_tasks = len(adapter.tasks())
        except ImportError as exc:  # bfcl-eval is installed by `make` set-up; say so rather than fake a number
            skipped[bench] = f"needs a package that is not installed: {exc}"
            continue
        for name, path in checkpoints(cfg, out).items():
            jobs.append((name, path, bench, spec, adapter, n_tasks))
    bar.total(sum(job[-1] for job in jobs) * e.attempts)
    results: dict[str, dict[str, Any]] = {}
    for name, path, bench, spec, adapter, n_tasks in jobs:
        run_dir = out / "eval" / name / bench
        if (run_dir / "metrics.json").is_file():  # finished before an interruption
            bar.advance(n_tasks * e.attempts)
        else:
            policy = make_policy(f"{e.backend}:{path}")
            config = EvalConfig(benchmark=spec, policy=f"{name} ({path})", out=run_dir, concurrency=e.concurrency,
                                attempts=e.attempts, seed=cfg.seed,
                                sampling=SamplingParams(temperature=e.temperature, max_tokens=e.max_tokens, seed=cfg.seed),
                                limits=EpisodeLimits(max_turns=e.max_turns, max_seconds=e.max_seconds))

            async def go(policy: Any = policy, adapter: Any = adapter, config: Any = config) -> Any:
                try:
                    return await run_eval(adapter, policy, config, journal=True,
                                          on_episode=lambda row: bar.advance(note=f"{name} on {bench}"))
                finally:
                    await policy.aclose()

            rows, trajectories = asyncio.run(go())
            write_run(run_dir, rows, trajectories, benchmark=adapter.name, policy=f"{name} checkpoint", fixture=False,
                      not_loaded=dict(getattr(adapter, "failed", {}) or {}))
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        results.setdefault(name, {})[bench] = {"n_tasks": metrics["n_tasks"], "pass_at_1": metrics["pass_at_1"],
                                               "mean_score": metrics["mean_score"], "mean_tool_calls": metrics["mean_tool_calls"]}
    return {"checkpoints": results, "skipped": skipped}


__all__ = ["ORACLE_LABEL", "admitted", "base_model", "benchmarks", "checkpoints", "collect", "compose", "evaluate", "grpo",
           "model", "scale", "sft", "split_stage"]
