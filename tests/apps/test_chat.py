"""The chat app: posting, threads, pins and memberships; every precondition's refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row, rows

ME, KIM = "me@acme.test", "kim@acme.test"
NOW = "2026-02-02T09:00:00Z"


def channel(name, *, private=False, default=False, archived=False):
    return {"name": name, "topic": f"About {name}", "is_private": private, "is_default": default, "archived": archived,
            "created_by": KIM, "created_at": "2025-01-01T00:00:00Z"}


def msg(id, channel, author, body, *, thread_id=None, pinned=False, posted_at="2026-02-01T10:00:00Z"):
    return {"id": id, "channel": channel, "author": author, "body": body, "thread_id": thread_id, "reply_count": 0,
            "pinned": pinned, "pinned_by": KIM if pinned else None, "posted_at": posted_at}


ROWS = {
    "chat.users": [{"email": e, "display_name": n, "active": True} for e, n in ((ME, "Me"), (KIM, "Kim"))],
    "chat.channels": [channel("general", default=True), channel("eng"), channel("ops"), channel("secret", private=True),
                      channel("old", archived=True)],
    "chat.memberships": [
        {"id": 1, "channel": "general", "user": ME, "role": "member", "joined_at": "2025-01-02T00:00:00Z"},
        {"id": 2, "channel": "ops", "user": ME, "role": "member", "joined_at": "2025-01-02T00:00:00Z"},
        {"id": 3, "channel": "secret", "user": KIM, "role": "owner", "joined_at": "2025-01-02T00:00:00Z"},
        {"id": 4, "channel": "old", "user": ME, "role": "member", "joined_at": "2025-01-02T00:00:00Z"},
    ],
    "chat.messages": [
        msg(1, "ops", KIM, "Deploy at 5pm", pinned=True, posted_at="2026-02-01T10:00:00Z"),
        msg(2, "ops", ME, "Ack", thread_id=1, posted_at="2026-02-01T10:05:00Z"),
        msg(3, "eng", KIM, "Deploy checklist updated", posted_at="2026-02-01T11:00:00Z"),
        msg(4, "secret", KIM, "Deploy secrets rotated", posted_at="2026-02-01T12:00:00Z"),
        msg(5, "old", KIM, "Old news", posted_at="2025-06-01T12:00:00Z"),
    ],
}


runtime, session = app_fixtures("chat", ROWS, persona=ME, base_time=NOW)


def message(s, id):
    return row(s, "chat.messages", id)


def test_post_message_in_a_member_channel(session):
    r = call(session, "post_message", channel="ops", body="Deploy done")
    assert r.ok, r.message
    assert r.output == {"sent": {"id": 6, "channel": "ops", "author": ME, "body": "Deploy done", "thread_id": None,
                                 "reply_count": 0, "pinned": False, "pinned_by": None, "posted_at": NOW}}


def test_join_then_post_then_leave(session):
    assert call(session, "join_channel", channel="eng").ok
    assert call(session, "post_message", channel="eng", body="hello eng").ok
    assert message(session, 6)["channel"] == "eng"
    assert call(session, "leave_channel", channel="eng").output == {"deleted": 1}
    assert [m["channel"] for m in rows(session, "chat.memberships", user=ME)] == ["general", "ops", "old"]


def test_reply_in_thread_counts_replies(session):
    r = call(session, "reply_in_thread", message_id=1, body="On it")
    assert r.ok, r.message
    assert (message(session, 6)["thread_id"], message(session, 6)["channel"], message(session, 1)["reply_count"]) == (1, "ops", 1)
    assert [m["id"] for m in call(session, "list_thread_replies", message_id=1).output["items"]] == [2, 6]


def test_pin_unpin_and_create_channel(session):
    assert call(session, "unpin_message", message_id=1).ok
    assert (message(session, 1)["pinned"], message(session, 1)["pinned_by"]) == (False, None)
    assert call(session, "pin_message", message_id=2).ok
    assert (message(session, 2)["pinned"], message(session, 2)["pinned_by"]) == (True, ME)
    assert call(session, "create_channel", name="launch-q3", topic="Q3 launch", is_private=True).ok
    assert {"name": "launch-q3", "topic": "Q3 launch", "is_private": True, "is_default": False, "archived": False,
            "created_by": ME, "created_at": "2026-02-02T09:00:02Z"} in session.world.rows("chat.channels")  # third step
    assert [(m["user"], m["role"]) for m in rows(session, "chat.memberships", channel="launch-q3")] == [(ME, "owner")]
    assert call(session, "create_channel", name="water-cooler").ok  # topic and privacy fall back to their defaults
    assert [(c["topic"], c["is_private"]) for c in rows(session, "chat.channels", name="water-cooler")] == [("", False)]


@pytest.mark.parametrize(("tool", "args", "kind", "detail"), [
    ("post_message", {"channel": "nope", "body": "x"}, ErrorKind.NOT_FOUND, "No channel #nope."),
    ("post_message", {"channel": "eng", "body": "x"}, ErrorKind.PERMISSION_DENIED, "You are not a member of #eng"),
    ("post_message", {"channel": "old", "body": "x"}, ErrorKind.INVALID_TRANSITION, "#old is archived"),
    ("reply_in_thread", {"message_id": 99, "body": "x"}, ErrorKind.NOT_FOUND, "No message 99."),
    ("reply_in_thread", {"message_id": 2, "body": "x"}, ErrorKind.INVALID_TRANSITION, "Message 2 is itself a thread reply"),
    ("reply_in_thread", {"message_id": 3, "body": "x"}, ErrorKind.PERMISSION_DENIED, "not a member of the channel of message 3"),
    ("reply_in_thread", {"message_id": 5, "body": "x"}, ErrorKind.INVALID_TRANSITION, "channel of message 5 is archived"),
    ("pin_message", {"message_id": 99}, ErrorKind.NOT_FOUND, "No message 99."),
    ("pin_message", {"message_id": 3}, ErrorKind.PERMISSION_DENIED, "not a member of the channel of message 3"),
    ("pin_message", {"message_id": 1}, ErrorKind.INVALID_TRANSITION, "Message 1 is already pinned."),
    ("unpin_message", {"message_id": 99}, ErrorKind.NOT_FOUND, "No message 99."),
    ("unpin_message", {"message_id": 3}, ErrorKind.PERMISSION_DENIED, "not a member of the channel of message 3"),
    ("unpin_message", {"message_id": 2}, ErrorKind.INVALID_TRANSITION, "Message 2 is not pinned."),
    ("join_channel", {"channel": "nope"}, ErrorKind.NOT_FOUND, "No channel #nope."),
    ("join_channel", {"channel": "secret"}, ErrorKind.PERMISSION_DENIED, "#secret is private"),
    ("join_channel", {"channel": "old"}, ErrorKind.INVALID_TRANSITION, "#old is archived"),
    ("join_channel", {"channel": "ops"}, ErrorKind.INVALID_TRANSITION, "already a member of #ops"),
    ("leave_channel", {"channel": "nope"}, ErrorKind.NOT_FOUND, "No channel #nope."),
    ("leave_channel", {"channel": "eng"}, ErrorKind.INVALID_TRANSITION, "You are not a member of #eng."),
    ("leave_channel", {"channel": "general"}, ErrorKind.INVALID_TRANSITION, "#general is a default channel"),
    ("create_channel", {"name": "eng", "is_private": False}, ErrorKind.CONSTRAINT_VIOLATION, "A channel named #eng already exists."),
    ("create_channel", {"name": "my team", "is_private": False}, ErrorKind.CONSTRAINT_VIOLATION, "no spaces"),
    ("read_channel_history", {"channel": "nope"}, ErrorKind.NOT_FOUND, "No channel #nope."),
    ("read_channel_history", {"channel": "secret"}, ErrorKind.PERMISSION_DENIED, "#secret is private and you are not a member"),
    ("list_pinned_messages", {"channel": "secret"}, ErrorKind.PERMISSION_DENIED, "#secret is private"),
    ("list_channel_members", {"channel": "secret"}, ErrorKind.PERMISSION_DENIED, "#secret is private"),
    ("list_thread_replies", {"message_id": 4}, ErrorKind.PERMISSION_DENIED, "Message 4 is in a private channel"),
    ("list_thread_replies", {"message_id": 99}, ErrorKind.NOT_FOUND, "No message 99."),
])
def test_refusals(session, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)


def test_reads(session):
    assert [c["name"] for c in call(session, "list_channels").output["items"]] == ["eng", "general", "old", "ops"]
    assert [c["name"] for c in call(session, "list_channels", archived=False).output["items"]] == ["eng", "general", "ops"]
    assert [c["name"] for c in call(session, "list_my_channels").output["items"]] == ["general", "old", "ops"]
    history = call(session, "read_channel_history", channel="ops").output["items"]
    assert [(m["id"], m["author"], m["body"]) for m in history] == [(1, KIM, "Deploy at 5pm"), (2, ME, "Ack")]
    # search covers only channels I belong to: not #eng (not joined) nor #secret (private)
    assert [m["id"] for m in call(session, "search_chat_messages", query="DEPLOY").output["items"]] == [1]
    assert [m["id"] for m in call(session, "list_pinned_messages", channel="ops").output["items"]] == [1]
    assert call(session, "list_channel_members", channel="ops").output["items"] == [
        {"user": ME, "role": "member", "joined_at": "2025-01-02T00:00:00Z"}]
