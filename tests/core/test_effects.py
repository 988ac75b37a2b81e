"""Effect and guard details: links, optional effects, guards on optional arguments, W0 defaults and constraints."""

from __future__ import annotations

import copy

import pytest

from envtrain.core import Environment, ErrorKind, Runtime, SpecError

APP = {
    "name": "team",
    "description": "people and their project memberships",
    "entities": {
        "people": {"primary_key": "email", "columns": {
            "email": {"type": "text"}, "name": {"type": "text", "required": True},
            "active": {"type": "boolean", "default": True}, "level": {"type": "integer", "default": 1},
            "joined": {"type": "datetime", "default": "$now"}, "lead": {"type": "text"},
        }, "constraints": [{"name": "leads are senior", "forbid": ["lead = 'yes'", "level < 3"], "message": "a lead has level 3 or more"}]},
        "memberships": {"columns": {
            "id": {"type": "integer"}, "person": {"type": "text", "required": True, "ref": "people.email"},
            "project": {"type": "text", "required": True}, "added_at": {"type": "datetime", "default": "$now"},
        }},
    },
    "tools": [
        {"name": "join", "description": "add a person to a project", "family": "link",
         "parameters": {"type": "object", "properties": {"person": {"type": "string"}, "project": {"type": "string"}}, "required": ["person", "project"]},
         "effects": [{"kind": "link", "entity": "memberships", "values": {"person": "$arg.person", "project": "$arg.project", "added_at": "$now"}}]},
        {"name": "retire", "description": "deactivate a person and drop their memberships, if any", "family": "update",
         "parameters": {"type": "object", "properties": {"person": {"type": "string"}, "successor": {"type": "string"}}, "required": ["person"]},
         "preconditions": [
             {"entity": "people", "where": ["email = $arg.person"], "error": "not_found", "message": "No person {person}."},
             {"entity": "people", "where": ["email = $arg.successor", "active = true"], "error": "not_found", "message": "No active successor {successor}."},
         ],
         "effects": [
             {"kind": "update", "entity": "people", "where": ["email = $arg.person"], "values": {"active": "false"}},
             {"kind": "delete", "entity": "memberships", "where": ["person = $arg.person"], "optional": True},
         ]},
        {"name": "promote", "description": "set a person's level", "family": "update",
         "parameters": {"type": "object", "properties": {"person": {"type": "string"}, "level": {"type": "integer"}, "approver": {"type": "string"}},
                        "required": ["person", "level"]},
         "preconditions": [{"entity": "people", "where": ["email = $arg.approver", "level >= 3"], "error": "permission_denied",
                            "message": "{approver} may not approve promotions."}],
         "effects": [{"kind": "update", "entity": "people", "where": ["email = $arg.person"], "values": {"level": "$arg.level"}}]},
    ],
}
ROWS = {
    "team.people": [{"email": "ana@x", "name": "Ana", "level": 4, "lead": "yes"}, {"email": "bo@x", "name": "Bo"}],
    "team.memberships": [{"id": 1, "person": "ana@x", "project": "atlas"}],
}


def runtime(rows=ROWS) -> Runtime:
    return Runtime(Environment.parse({
        "apps": [APP], "request": "r", "world": {"base_time": "2026-05-01T08:00:00Z", "tables": rows},
        "verifier": {"positive": [{"entity": "team.memberships", "count": ">= 2"}]},
        "reference_solution": [{"tool": "join", "arguments": {"person": "bo@x", "project": "atlas"}}],
    }))


def test_w0_rows_take_column_defaults() -> None:
    with runtime().session() as s:
        s.reset()
        bo = s.world.rows("team.people")[1]
        assert (bo["active"], bo["level"], bo["joined"], bo["lead"]) == (True, 1, "2026-05-01T08:00:00Z", None)


def test_w0_breaking_an_entity_constraint_is_refused() -> None:
    rows = copy.deepcopy(ROWS)
    rows["team.people"][1]["lead"] = "yes"
    with pytest.raises(SpecError, match="the row with email 'bo@x' breaks a constraint: a lead has level 3 or more"):
        runtime(rows)


def test_a_duplicate_link_is_refused_whatever_the_time() -> None:
    with runtime().session() as s:
        s.reset()
        assert s.step({"tool": "join", "arguments": {"person": "bo@x", "project": "atlas"}}).ok
        again = s.step({"tool": "join", "arguments": {"person": "bo@x", "project": "atlas"}})
        assert again.error is ErrorKind.INVALID_TRANSITION and "already exists" in again.message
        ghost = s.step({"tool": "join", "arguments": {"person": "zed@x", "project": "atlas"}})
        assert ghost.error is ErrorKind.CONSTRAINT_VIOLATION and ghost.message == "team.memberships.person must name an existing team.people.email"


def test_optional_effect_may_match_nothing_and_guards_skip_absent_optional_arguments() -> None:
    with runtime().session() as s:
        s.reset()
        r = s.step({"tool": "retire", "arguments": {"person": "bo@x"}})  # no successor given, no memberships
        assert r.ok and r.output["updated"] == 1
        r = s.step({"tool": "retire", "arguments": {"person": "ana@x", "successor": "bo@x"}})  # bo is inactive now
        assert r.error is ErrorKind.NOT_FOUND and r.message == "No active successor bo@x."
        s.reset()
        r = s.step({"tool": "retire", "arguments": {"person": "ana@x", "successor": "bo@x"}})
        assert r.ok and s.world.rows("team.memberships") == []


def test_forbid_constraint_rolls_a_write_back() -> None:
    with runtime().session() as s:
        s.reset()
        r = s.step({"tool": "promote", "arguments": {"person": "ana@x", "level": 2}})
        assert r.error is ErrorKind.CONSTRAINT_VIOLATION and r.message == "a lead has level 3 or more"
        assert s.world.rows("team.people")[0]["level"] == 4
        assert s.step({"tool": "promote", "arguments": {"person": "bo@x", "level": 2}}).ok


def test_guards_folded_into_a_single_write() -> None:
    """A one-statement tool writes and checks its guards in one round trip; refusals read the same."""
    rt = runtime()
    assert rt.tools["promote"].fused is not None and rt.tools["retire"].fused is None
    with rt.session() as s:
        s.reset()
        assert s.step({"tool": "promote", "arguments": {"person": "bo@x", "level": 2}}).ok  # no approver: guard off
        refused = s.step({"tool": "promote", "arguments": {"person": "bo@x", "level": 3, "approver": "bo@x"}})
        assert refused.error is ErrorKind.PERMISSION_DENIED and refused.message == "bo@x may not approve promotions."
        assert s.world.rows("team.people")[1]["level"] == 2
        done = s.step({"tool": "promote", "arguments": {"person": "bo@x", "level": 3, "approver": "ana@x"}})
        assert done.ok and done.output["items"][0]["level"] == 3
        missing = s.step({"tool": "promote", "arguments": {"person": "cy@x", "level": 3, "approver": "ana@x"}})
        assert missing.error is ErrorKind.NOT_FOUND
