"""Perturbed gold call sequences, for checking that the environment form of a BFCL task agrees
with BFCL's own checker beyond the gold itself (tests and benchmarks use it)."""

from __future__ import annotations

import random
from typing import Any, Iterator

from envtrain.bench.bfcl.data import BFCLEntry, GoldCall, parse_gold

Turns = list[list[GoldCall]]  # the calls of each user turn


def gold_turns(entry: BFCLEntry, parameters: dict[str, list[str]]) -> Turns:
    return [[parse_gold(text, parameters) for text in turn] for turn in entry.ground_truth]


def _positions(turns: Turns) -> list[tuple[int, int]]:
    return [(t, i) for t, turn in enumerate(turns) for i in range(len(turn))]


def _copy(turns: Turns) -> Turns:
    return [list(turn) for turn in turns]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 7.5
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return value


def perturbations(turns: Turns, seed: int = 0) -> Iterator[tuple[str, Turns]]:
    """(name, perturbed turns): the last call dropped, a random call dropped, a call repeated,
    one argument changed, two calls of a turn swapped, a call moved to the previous turn."""
    rng = random.Random(seed)
    spots = _positions(turns)
    if not spots:
        return
    last_t, last_i = spots[-1]
    out = _copy(turns)
    del out[last_t][last_i]
    yield "drop the last call", out
    t, i = rng.choice(spots)
    out = _copy(turns)
    del out[t][i]
    yield "drop a call", out
    t, i = rng.choice(spots)
    out = _copy(turns)
    out[t].insert(i, out[t][i])
    yield "repeat a call", out
    with_args = [(t, i) for t, i in spots if turns[t][i].arguments]
    if with_args:
        t, i = rng.choice(with_args)
        call = turns[t][i]
        name = rng.choice(sorted(call.arguments))
        args = {**call.arguments, name: _changed(call.arguments[name])}
        out = _copy(turns)
        out[t][i] = GoldCall(text="", name=call.name, arguments=args)
        yield "change an argument", out
    pairs = [(t, i) for t, i in spots if i + 1 < len(turns[t])]
    if pairs:
        t, i = rng.choice(pairs)
        out = _copy(turns)
        out[t][i], out[t][i + 1] = out[t][i + 1], out[t][i]
        yield "swap two calls of a turn", out
    movable = [(t, i) for t, i in spots if t > 0 and i == 0]
    if movable:
        t, _ = rng.choice(movable)
        out = _copy(turns)
        out[t - 1].append(out[t].pop(0))
        yield "do a call one turn early", out
