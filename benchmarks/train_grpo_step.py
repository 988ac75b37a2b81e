"""GRPO seconds per step: `envtrain grpo` (rollout_func driving envtrain sessions) against TRL's GRPOTrainer with
`tools=` (its own tool loop), same tiny task, model and settings, in one process.

    .venv/bin/python benchmarks/train_grpo_step.py [--quick] [--steps 4] [--rounds 2] [--threads 1]

Task: the hand-built ledger environment of the test suite (3 tools, a ~450-token prompt). Model: the
tiny local Qwen3, first SFT-warmed on the oracle trajectory, rendered with each arm's tool listing,
so that it calls tools in both (a random model never does, and both loops would degenerate to
single turns). TRL's arm gets the
same environment's tools as Python functions (signature and docstring generated from the JSON
schemas, each call stepping an envtrain session) and a zero reward: its tool loop has no per-episode
session, so the verifier cannot score it; reward computation is negligible next to generation and the
update. Both: group 4, one prompt per step, at most 3 assistant turns, 256 completion tokens.
Columns: median seconds per update step (the first step of each run is left out as warm-up), mean
tool calls and model tokens per episode as each trainer logs them, milliseconds per sampled token
(the two models do not behave identically on the two prompts, so this normalises for episode
length), and the ratio of seconds per step envtrain / TRL.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GROUP, TURNS, TOKENS = 4, 3, 256
_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def python_tools(openai_tools: list[dict[str, Any]], call: Callable[[str, dict[str, Any]], str]) -> list[Callable[..., str]]:
    """The environment's tools as functions TRL can render (get_json_schema) and call with keyword arguments."""
    out = []
    for spec in openai_tools:
        fn = spec["function"]
        params = fn.get("parameters", {})
        props, required = params.get("properties", {}), set(params.get("required", []))
        signature, hints, doc = [], {}, [fn.get("description") or fn["name"], "", "Args:"]
        for name, prop in props.items():
            kind = _TYPES.get(prop.get("type", "string"), str)
            hints[name] = kind if name in required else kind | None
            default = inspect.Parameter.empty if name in required else None
            signature.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[name]))
            doc.append(f"    {name}: {prop.get('description') or name}")
        doc += ["", "Returns:", "    The tool's JSON result."]

        tool = _bound(fn["name"], call)
        tool.__name__ = fn["name"]
        tool.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
        tool.__annotations__ = {**hints, "return": str}
        tool.__doc__ = "\n".join(doc) if props else f"{doc[0]}\n\nReturns:\n    The tool's JSON result."
        out.append(tool)
    return out


def _bound(name: str, call: Callable[[str, dict[str, Any]], str]) -> Callable[..., str]:
    def tool(**kwargs: Any) -> str:
        return call(name, {k: v for k, v in kwargs.items() if v is not None})

    return tool


class StepTimer:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.logs: list[dict[str, Any]] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        timer = self

        class _Cb(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                timer.t0 = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                timer.times.append(time.perf_counter() - timer.t0)

            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
                timer.logs.append(dict(logs or {}))

        return _Cb()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 steps, 1 round: a smoke run, not a measurement")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared 2-core box)")
    args = parser.parse_args(argv)
    steps, rounds = (2, 1) if args.quick else (args.steps, args.rounds)

    import torch
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar

    torch.set_num_threads(args.threads)
    disable_progress_bar()
    from envtrain.agent.baselines import OraclePolicy
    from envtrain.agent.tiny import build_tiny_model
    from envtrain.core import Runtime
    from envtrain.rollout.collect import CollectConfig, collect
    from envtrain.rollout.episode import first_messages
    from envtrain.train.config import load_config
    from envtrain.train.grpo import GRPORunConfig, build_trainer, trl_config
    from envtrain.train.hfargs import load_model, load_tokenizer
    from envtrain.train.logs import quiet
    from envtrain.train.sft import SFTRunConfig, run_sft
    from tests.conftest import ledger_env

    work = Path(tempfile.mkdtemp(prefix="envtrain-bench-grpo-"))
    env = ledger_env()
    (work / "envs").mkdir()
    (work / "envs" / "ledger.json").write_text(env.model_dump_json())
    asyncio.run(collect(CollectConfig(envs=work / "envs", out=work / "oracle"), OraclePolicy()))
    runtime = Runtime(env)
    session = runtime.session()
    session.reset()
    tools = python_tools(runtime.openai_tools, lambda name, a: session.step({"tool": name, "arguments": a}).content())
    # Warm on the trajectory rendered with both tool listings (envtrain's JSON schemas, and TRL's schemas derived
    # from the Python functions, which add descriptions, "nullable" and a return), so that both arms call tools.
    from datasets import concatenate_datasets, load_from_disk
    from transformers.utils.chat_template_utils import get_json_schema

    oracle = load_from_disk(str(work / "oracle"))
    trl_listing = json.dumps([get_json_schema(t) for t in tools])
    both = concatenate_datasets([oracle, oracle.map(lambda row: {"tools": trl_listing})])
    both.save_to_disk(str(work / "warm-data"))
    tiny = build_tiny_model(work / "tiny")
    warm = work / "warm"
    run_sft(load_config(SFTRunConfig, ROOT / "configs" / "tiny" / "res_sft.yaml", [
        f"model={tiny}", f"dataset={work / 'warm-data'}", f"output_dir={warm}", "max_steps=60", "global_batch_size=2",
        "optim.lr=5e-3", "optim.scheduler=constant", "optim.warmup_ratio=0", "gradient_checkpointing=false",
        "checkpoint.save_steps=100000", "logging_steps=100"]), printer=lambda line: None)

    overrides = [f"model={warm}", f"prompts.envs={work / 'envs'}", "reward=pass", f"group_size={GROUP}",
                 f"per_device_batch_size={GROUP}", f"global_batch_size={GROUP}", f"max_turns={TURNS}",
                 f"max_turn_tokens={TOKENS}", f"max_completion_tokens={TOKENS}", f"max_steps={steps}", "logging_steps=1",
                 "optim.lr=1e-5", "checkpoint.save_steps=100000", "seed=0"]
    cfg = load_config(GRPORunConfig, ROOT / "configs" / "tiny" / "legoenv_grpo.yaml", [*overrides, f"output_dir={work / 'envtrain'}"])

    def envtrain_arm() -> StepTimer:
        timer = StepTimer()
        trainer, _ = build_trainer(cfg, printer=lambda line: None)
        trainer.add_callback(timer.callback())
        trainer.train()
        return timer

    def trl_arm() -> StepTimer:
        from trl import GRPOTrainer

        timer = StepTimer()
        tok = load_tokenizer(str(warm))
        tok.padding_side = "left"
        args = trl_config(load_config(GRPORunConfig, ROOT / "configs" / "tiny" / "legoenv_grpo.yaml",
                                      [*overrides, f"output_dir={work / 'trl'}"]))
        args.max_tool_calling_iterations = TURNS - 1  # turns after the first
        prompts = Dataset.from_list([{"prompt": first_messages(runtime)}])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = GRPOTrainer(model=load_model(str(warm), cfg), reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                                  args=args, train_dataset=prompts, processing_class=tok, tools=tools, callbacks=[timer.callback()])
        quiet(trainer)
        trainer.train()
        return timer

    results: dict[str, list[StepTimer]] = {"envtrain grpo": [], "TRL tools=": []}
    for r in range(rounds):
        order = [("envtrain grpo", envtrain_arm), ("TRL tools=", trl_arm)]
        for name, arm in (order if r % 2 == 0 else order[::-1]):
            results[name].append(arm())

    def metric(timers: list[StepTimer], *keys: str) -> float:
        values = [log[k] for t in timers for log in t.logs for k in keys if k in log]
        return statistics.fmean(values) if values else float("nan")

    per_step = {name: statistics.median(x for t in timers for x in t.times[1:] or t.times) for name, timers in results.items()}
    print(f"{'arm':<14} {'s/step':>7} {'tool calls/episode':>18} {'model tokens/episode':>20} {'ms/model token':>14} {'ratio':>6}")
    for name, timers in results.items():
        calls = metric(timers, "env/tool_calls", "tools/call_frequency")
        tokens = metric(timers, "env/model_tokens", "completions/mean_length")
        ms = 1000 * per_step[name] / (GROUP * tokens)
        print(f"{name:<14} {per_step[name]:>7.2f} {calls:>18.2f} {tokens:>20.1f} {ms:>14.2f} {per_step[name] / per_step['TRL tools=']:>6.2f}")
    print(f"group {GROUP}, <= {TURNS} turns, <= {TOKENS} completion tokens, {steps} steps x {rounds} rounds per arm, "
          f"{args.threads} torch thread(s)")


if __name__ == "__main__":
    main()
