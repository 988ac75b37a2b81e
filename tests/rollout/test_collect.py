"""The rollout engine and collection: stop reasons, masks, datasets, resume, shards, faults."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datasets import load_from_disk

from envtrain.agent.baselines import NoopPolicy, OraclePolicy
from envtrain.agent.types import Generation, ParsedTurn, SamplingParams, ToolCall
from envtrain.core import Environment, Runtime
from envtrain.rollout.collect import CollectConfig, collect
from envtrain.rollout.episode import RolloutLimits, run_episode
from envtrain.rollout.store import StoreError, TrajectoryStore, merge

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HELPDESK = EXAMPLES / "helpdesk_escalation.yaml"
N_EXAMPLES = len(list(EXAMPLES.glob("*.yaml")))


def run(cfg: CollectConfig, policy):
    return asyncio.run(collect(cfg, policy))


class Scripted:
    """Plays a fixed list of turns (each a ParsedTurn or a Generation), then stops talking."""

    def __init__(self, turns, *, name="scripted", delay=0.0, finish="tool_calls"):
        self.turns, self.name, self.delay, self.finish = turns, name, delay, finish

    async def generate(self, messages, tools, params, ctx):
        if self.delay:
            await asyncio.sleep(self.delay)
        if ctx.turn >= len(self.turns):
            return [Generation(turn=ParsedTurn(content="Done."), text="Done.", finish_reason="stop")]
        item = self.turns[ctx.turn]
        if isinstance(item, Generation):
            return [item]
        return [Generation(turn=item, text=str(item), finish_reason=self.finish)]

    async def aclose(self):
        return None


def call(i, tool, **args):
    return ParsedTurn(tool_calls=(ToolCall(id=f"call_{i}", name=tool, arguments=args),))


@pytest.fixture(scope="module")
def helpdesk() -> Runtime:
    return Runtime(Environment.load(HELPDESK))


def episode(runtime, policy, **limits):
    return asyncio.run(run_episode(runtime, policy, SamplingParams(), RolloutLimits(**limits)))


def test_oracle_passes_every_example_and_writes_a_dataset(tmp_path) -> None:
    summary = run(CollectConfig(envs=EXAMPLES, out=tmp_path, attempts=2, keep_per_env=1), OraclePolicy())
    assert (summary.environments, summary.attempts, summary.kept) == (N_EXAMPLES, 2 * N_EXAMPLES, N_EXAMPLES)
    assert summary.pass_at_1 == 1.0 and summary.pass_at_n == 1.0 and summary.mean_score == 1.0
    assert summary.stop_reasons == {"done": 2 * N_EXAMPLES}
    data = load_from_disk(str(tmp_path))
    assert len(data) == N_EXAMPLES and set(data["attempt"]) == {0}
    row = data[0]
    assert row["messages"][0]["role"] == "system" and row["messages"][1]["role"] == "user"
    assert {m["role"] for m in row["messages"]} == {"system", "user", "assistant", "tool"}
    assert isinstance(json.loads(row["tools"]), list)
    assert row["turn_mask"] == [1] * row["num_turns"]
    assert json.loads((tmp_path / "summary.json").read_text())["pass_at_1"] == 1.0


def test_noop_passes_nothing_and_still_writes_a_loadable_dataset(tmp_path) -> None:
    summary = run(CollectConfig(envs=EXAMPLES, out=tmp_path), NoopPolicy())
    assert summary.pass_at_1 == 0.0 and summary.kept == 0 and summary.attempts == N_EXAMPLES
    assert len(load_from_disk(str(tmp_path))) == 0


def test_min_score_keeps_partial_episodes(tmp_path, helpdesk) -> None:
    half = Scripted([call(0, "escalate_ticket", ticket_id=1, team="billing")])  # 1 of 4 positives + 3 negatives hold
    summary = run(CollectConfig(envs=HELPDESK, out=tmp_path, min_score=0.5), half)
    assert summary.pass_at_1 == 0.0 and summary.kept == 1
    assert load_from_disk(str(tmp_path))[0]["score"] == pytest.approx(4 / 7)


def test_stop_reasons(helpdesk) -> None:
    reader = Scripted([call(i, "list_tickets") for i in range(10)])
    assert episode(helpdesk, reader, max_turns=3).stop_reason == "turn_limit"
    slow = Scripted([call(0, "list_tickets")], delay=0.5)
    traj = episode(helpdesk, slow, max_seconds=0.2)
    assert traj.stop_reason == "timeout" and "exceeded" in traj.error and not traj.passed
    cut = Generation(turn=ParsedTurn(content="I was going to"), text="I was going to", finish_reason="length", completion_tokens=9)
    assert episode(helpdesk, Scripted([cut])).stop_reason == "token_limit"
    long = Generation(turn=call(0, "list_tickets"), text="x", finish_reason="tool_calls", prompt_tokens=900, completion_tokens=200)
    assert episode(helpdesk, Scripted([long]), max_episode_tokens=1000).stop_reason == "token_limit"

    class Broken:
        name = "broken"

        async def generate(self, *a):
            raise ConnectionError("endpoint http://127.0.0.1:9/v1 unreachable")

        async def aclose(self):
            return None

    traj = episode(helpdesk, Broken())
    assert traj.stop_reason == "error" and "unreachable" in traj.error and traj.num_turns == 0
    assert len(traj.assertions) == 7  # the verifier still ran, on W0


def test_refused_calls_are_masked_and_unparsed_calls_become_observations(helpdesk) -> None:
    bad_json = ParsedTurn(content="", errors=("expected ',' after an object member at position 12",))
    turns = [
        call(0, "escalate_ticket", ticket_id=3),                    # 400 missing team: masked
        bad_json,                                                   # did not parse: masked, model told why
        call(2, "escalate_ticket", ticket_id=1, team="billing"),   # fine
    ]
    traj = episode(helpdesk, Scripted(turns))
    assert traj.train_mask() == [0, 0, 1, 1]  # the final "Done." turn trains too
    assert [t.tool_statuses for t in traj.turns[:3]] == [[400], [400], [200]]
    error_note = traj.messages[traj.turns[1].message_index + 1]
    assert error_note["role"] == "user" and "could not be parsed" in error_note["content"]
    assert traj.num_tool_errors == 2 and traj.stop_reason == "done"


def test_a_broken_environment_is_reported_and_the_rest_collected(tmp_path) -> None:
    envs = tmp_path / "envs"
    shutil.copytree(EXAMPLES, envs)
    (envs / "zz_broken.json").write_text('{"apps": ["helpdesk"], "request": "x", "verifier": {"positive": [{"entity": "helpdesk.nope"}]}, "reference_solution": []}')
    summary = run(CollectConfig(envs=envs, out=tmp_path / "out"), OraclePolicy())
    assert summary.environments == N_EXAMPLES and summary.pass_at_1 == 1.0
    [(path, why)] = summary.failed_environments.items()
    assert path.endswith("zz_broken.json") and "unknown entity 'helpdesk.nope'" in why


def test_a_full_disk_keeps_what_was_written_and_a_rerun_resumes(tmp_path, monkeypatch) -> None:
    real = TrajectoryStore.write
    calls = {"n": 0}

    def flaky(self, trajectories):
        calls["n"] += 1
        if calls["n"] == 3:
            raise StoreError("could not write shard part-00002: No space left on device")
        return real(self, trajectories)

    monkeypatch.setattr(TrajectoryStore, "write", flaky)
    cfg = CollectConfig(envs=EXAMPLES, out=tmp_path, attempts=2, shard_size=4, concurrency=1)
    with pytest.raises(StoreError, match="No space left"):
        run(cfg, OraclePolicy())
    assert len(TrajectoryStore(tmp_path).done()) >= 8  # the first two shards (and the flush on failure) survive
    monkeypatch.setattr(TrajectoryStore, "write", real)
    summary = run(cfg, OraclePolicy())
    assert summary.attempts == 2 * N_EXAMPLES and summary.pass_at_1 == 1.0


def test_shards_split_by_environment_and_merge_without_duplicates(tmp_path) -> None:
    for i in range(2):
        run(CollectConfig(envs=EXAMPLES, out=tmp_path / f"s{i}", shard=(i, 2)), OraclePolicy())
    parts = [load_from_disk(str(tmp_path / f"s{i}")) for i in range(2)]
    assert len(parts[0]) > 0 and len(parts[1]) > 0 and not set(parts[0]["env_id"]) & set(parts[1]["env_id"])
    merged = merge([tmp_path / "s0", tmp_path / "s1"], tmp_path / "all")
    assert len(merged) == N_EXAMPLES and len(load_from_disk(str(tmp_path / "all"))) == N_EXAMPLES
    with pytest.raises(StoreError, match="overlap"):
        merge([tmp_path / "s0", tmp_path / "s0"], tmp_path / "twice")
    other = merge([tmp_path / "s1", tmp_path / "s0"], tmp_path / "other")
    assert other["id"] == merged["id"]  # one order, whichever shard comes first


def test_the_dataset_order_does_not_depend_on_which_episode_finished_first(tmp_path) -> None:
    """Episodes finish in any order when many run at once; the dataset (and so SFT's data order,
    shuffled by seed from it) is in (environment, attempt) order all the same."""

    class Jittered(OraclePolicy):  # the oracle, slower on some environments than others: a scrambled finish order
        async def generate(self, messages, tools, params, ctx):
            await asyncio.sleep(0.02 * (int(ctx.env.id[:2], 16) % 4))
            return await super().generate(messages, tools, params, ctx)

    run(CollectConfig(envs=EXAMPLES, out=tmp_path / "one", attempts=2, concurrency=1), OraclePolicy())
    run(CollectConfig(envs=EXAMPLES, out=tmp_path / "many", attempts=2, concurrency=16), Jittered())
    one, many = (load_from_disk(str(tmp_path / name)) for name in ("one", "many"))
    keys = list(zip(one["env_id"], one["attempt"]))
    assert keys == sorted(keys) and len(keys) == 2 * N_EXAMPLES
    assert list(zip(many["env_id"], many["attempt"])) == keys


CRASHING_RUN = """
import asyncio, sys
from pathlib import Path
from envtrain.agent.baselines import OraclePolicy
from envtrain.rollout.collect import CollectConfig, collect

class Slow(OraclePolicy):
    async def generate(self, *args):
        await asyncio.sleep(0.02)
        return await super().generate(*args)

asyncio.run(collect(CollectConfig(envs=Path(sys.argv[1]), out=Path(sys.argv[2]), attempts=3, shard_size=3, concurrency=2), Slow()))
"""


def test_a_crash_mid_run_then_a_rerun_loses_and_duplicates_nothing(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_RUN, str(EXAMPLES), str(tmp_path)], cwd=ROOT)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((tmp_path / "shards").glob("part-*"))) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = TrajectoryStore(tmp_path).done()
    assert 9 <= len(written) < 3 * N_EXAMPLES, "the kill should land mid-run"
    summary = run(CollectConfig(envs=EXAMPLES, out=tmp_path, attempts=3, shard_size=3), OraclePolicy())
    data = TrajectoryStore(tmp_path).all()
    keys = list(zip(data["env_id"], data["attempt"]))
    assert len(keys) == len(set(keys)) == 3 * N_EXAMPLES
    assert summary.attempts == 3 * N_EXAMPLES and summary.kept == 3 * N_EXAMPLES
