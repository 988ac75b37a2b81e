"""BFCL multi-turn through the adapter, graded by BFCL's own checker: the faithfulness checks.

The full 800 gold replays and 800 no-op runs take a few seconds here, so they run in full.
"""

from __future__ import annotations

import asyncio

import pytest

from envtrain.agent.baselines import NoopPolicy
from envtrain.agent.types import SamplingParams
from envtrain.bench.bfcl.adapter import BFCLAdapter
from envtrain.bench.bfcl.data import CATEGORIES, call_text, load_entries, parse_gold, to_openai_tools
from envtrain.bench.bfcl.env import method_parameters
from envtrain.bench.bfcl.executor import native_check
from envtrain.bench.types import EpisodeLimits
from envtrain.eval.run import EvalConfig, evaluate
from tests.bench.bfcl_kit import Script, calls, play, text


def _cached_keys() -> list[str]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    return [k for k in vars(multi_turn_utils) if k.startswith("envtrain_")]


@pytest.fixture(scope="module")
def adapter() -> BFCLAdapter:
    return BFCLAdapter()


def test_the_four_categories_hold_800_entries(adapter) -> None:
    tasks = adapter.tasks()
    assert len(tasks) == 800
    assert {c: sum(t.group == c for t in tasks) for c in CATEGORIES} == dict.fromkeys(CATEGORIES, 200)
    assert len({t.id for t in tasks}) == 800


def test_gold_replay_passes_all_800_entries_and_leaves_no_cached_instance(adapter, tmp_path) -> None:
    cfg = EvalConfig(benchmark="bfcl-multi-turn", policy="oracle", out=tmp_path, concurrency=8)
    rows, trajectories = asyncio.run(evaluate(adapter, adapter.fixture_policy(), cfg, fixture=True))
    assert len(trajectories) == 800
    assert len(rows) == 800 and sum(r.passed for r in rows) == 800, [r.detail for r in rows if not r.passed][:3]
    assert all(r.fixture and r.stop_reason == "done" for r in rows)
    assert sum(r.tool_calls for r in rows) == 4625  # every gold call of the four categories ran
    assert _cached_keys() == []  # BFCL's module-global instance cache holds nothing of ours


def test_noop_fails_all_800_entries(adapter, tmp_path) -> None:
    cfg = EvalConfig(benchmark="bfcl-multi-turn", policy="noop", out=tmp_path)
    rows, _ = asyncio.run(evaluate(adapter, NoopPolicy(), cfg))
    assert sum(r.passed for r in rows) == 0
    assert {r.detail["error_type"] for r in rows} == {"multi_turn:empty_turn_model_response"}


def test_dropping_the_last_gold_call_fails_every_entry() -> None:
    for category in CATEGORIES:
        for entry in load_entries(category):
            turns = [list(t) for t in entry.ground_truth]
            last = max(i for i, t in enumerate(turns) if t)
            turns[last].pop()
            decoded = [[t] if t else [] for t in turns]
            assert not native_check(entry, decoded).valid, entry.id
            gold = [[t] if t else [] for t in entry.ground_truth]
            assert native_check(entry, gold).valid, entry.id


def test_every_episode_starts_from_fresh_state(adapter) -> None:
    """A write in one episode is invisible to the next episode of the same entry (BFCL's cache is keyed per episode)."""
    task = next(t for t in adapter.tasks() if "GorillaFileSystem" in t.entry.involved_classes)
    first = Script([calls(("mkdir", {"dir_name": "envtrain_probe"})), text(), calls(("ls", {}))])
    play(adapter, task, first)
    second = Script([calls(("ls", {}))])
    episode, _ = play(adapter, task, second)
    listing = next(m["content"] for m in episode.trajectory.messages if m["role"] == "tool")
    assert "envtrain_probe" not in listing
    assert _cached_keys() == []


def test_parallel_episodes_of_one_entry_do_not_share_state(adapter) -> None:
    task = next(t for t in adapter.tasks() if t.id == "multi_turn_base_0")
    gold = adapter.fixture_policy()

    async def many():
        return await asyncio.gather(*[adapter.episode(task, gold, SamplingParams(), EpisodeLimits(), a) for a in range(6)])

    episodes = asyncio.run(many())
    assert all(adapter.grade(e).passed for e in episodes)
    outputs = {tuple(m["content"] for m in e.trajectory.messages if m["role"] == "tool") for e in episodes}
    assert len(outputs) == 1


def test_user_turns_arrive_in_order_and_miss_func_adds_the_held_out_doc_at_its_turn(adapter) -> None:
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    task = next(t for t in adapter.tasks() if t.id == "multi_turn_miss_func_0")
    held_turn, held = next(iter(task.entry.missed_function.items()))
    name = held[0]["name"]
    policy = Script([])
    play(adapter, task, policy)
    assert len(policy.seen) == len(task.entry.question)  # one "Done." per user turn
    for turn, seen in enumerate(policy.seen):
        assert seen["extra"]["user_turn"] == turn
        assert (name in seen["tools"]) == (turn >= int(held_turn))
        users = [m["content"] for m in seen["messages"] if m["role"] == "user"]
        assert len(users) == turn + 1
    held_message = [m for m in policy.seen[int(held_turn)]["messages"] if m["role"] == "user"][-1]
    assert held_message["content"] == DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


def test_more_than_twenty_steps_in_a_turn_force_quits_the_entry(adapter) -> None:
    task = next(t for t in adapter.tasks() if t.id == "multi_turn_base_0")
    policy = Script([calls(("pwd", {}))] * 30)
    episode, grade = play(adapter, task, policy)
    assert episode.trajectory.stop_reason == "turn_limit"
    assert len(episode.native["decoded"][0]) == 21  # BFCL quits when its step count passes 20
    assert not grade.passed and grade.detail["error_type"] == "multi_turn:force_terminated"


def test_an_episode_cap_and_unparsable_arguments_are_handled_as_bfcl_does(adapter) -> None:
    from envtrain.agent.types import Generation, ParsedTurn, ToolCall

    task = next(t for t in adapter.tasks() if t.id == "multi_turn_base_0")
    episode, grade = play(adapter, task, Script([calls(("pwd", {}))] * 5), EpisodeLimits(max_turns=3))
    assert episode.trajectory.stop_reason == "turn_limit" and episode.trajectory.num_turns == 3 and not grade.passed
    raw = Generation(turn=ParsedTurn(tool_calls=(ToolCall(id="x", name="pwd", arguments="{not json"),)), text="", finish_reason="tool_calls")
    episode, _ = play(adapter, task, Script([raw]))
    assert episode.native["decoded"][0] == []  # BFCL cannot decode it: the turn ends without a step
    assert episode.trajectory.stop_reason == "done"


def test_tools_are_bfcl_docs_in_openai_form() -> None:
    entry = load_entries("base")[0]
    tools = to_openai_tools(entry.functions)
    assert [t["function"]["name"] for t in tools] == [d["name"] for d in entry.functions]
    for tool in tools:
        params = tool["function"]["parameters"]
        assert tool["type"] == "function" and params["type"] == "object"
        for prop in params["properties"].values():
            assert prop["type"] in ("string", "integer", "number", "boolean", "array", "object")
    docs = {d["name"]: d for d in entry.functions}
    floats = [(t, p) for t in tools for p, s in t["function"]["parameters"]["properties"].items()
              if docs[t["function"]["name"]]["parameters"]["properties"][p]["type"] == "float"]
    for tool, prop in floats:
        schema = tool["function"]["parameters"]["properties"][prop]
        assert schema["type"] == "number" and schema["format"] == "float" and schema["description"].endswith("This is a float type value.")
    assert entry.functions[0]["parameters"]["type"] == "dict"  # the entry's own docs are left as BFCL wrote them


def test_gold_calls_parse_with_positional_arguments_named() -> None:
    params = method_parameters(["GorillaFileSystem"])
    call = parse_gold("sort('final_report.pdf')", params)
    assert (call.name, call.arguments) == ("sort", {"file_name": "final_report.pdf"})
    assert call_text(call.name, call.arguments) == "sort(file_name='final_report.pdf')"
    call = parse_gold("mv(source='a.txt',destination='temp')", params)
    assert call.arguments == {"source": "a.txt", "destination": "temp"}
    with pytest.raises(ValueError):
        parse_gold("os.system('x')", params)
