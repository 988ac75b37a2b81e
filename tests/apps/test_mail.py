"""The mail app: sending, replying, forwarding and filing mail; every precondition's refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row

ME = "me@acme.test"
NOW = "2026-02-02T09:00:00Z"  # base_time: the first step runs at this second, the next one second later
FOLDERS = ["inbox", "sent", "drafts", "archive", "spam", "trash"]


def message(id, folder, sender, subject, *, to=(ME,), read=False, sensitivity="normal", sent_at="2026-02-01T10:00:00Z", **extra):
    return {"id": id, "thread_id": extra.pop("thread_id", id), "folder": folder, "sender": sender, "recipients": list(to),
            "subject": subject, "body": f"Body of {subject}.", "is_read": read, "sensitivity": sensitivity, "sent_at": sent_at, **extra}


ROWS = {
    "mail.folders": [{"name": n, "kind": "system"} for n in FOLDERS],
    "mail.contacts": [
        {"email": "ana@client.test", "name": "Ana Lima", "organization": "Client Co", "vip": True},
    ],
    "mail.messages": [
        message(1, "inbox", "ana@client.test", "Contract renewal", sent_at="2026-02-01T10:00:00Z"),
        message(2, "inbox", "cfo@acme.test", "Salary bands 2026", sensitivity="confidential", sent_at="2026-02-01T11:00:00Z"),
        message(3, "drafts", ME, "Unfinished note", to=["ana@client.test"], read=True, sent_at="2026-02-01T12:00:00Z"),
        message(4, "archive", "ana@client.test", "Old contract", read=True, sent_at="2026-01-10T09:00:00Z"),
        message(5, "spam", "win@prize.test", "You won", sent_at="2026-01-31T09:00:00Z"),
    ],
}


runtime, session = app_fixtures("mail", ROWS, persona=ME, base_time=NOW)


def email(s, id):
    return row(s, "mail.messages", id)


def test_send_email_starts_a_thread_in_sent(session):
    r = call(session, "send_email", to=["ana@client.test"], cc=["boss@acme.test"], subject="Hello", body="Hi Ana")
    assert r.ok, r.message
    assert r.output == {"sent": {
        "id": 6, "thread_id": 6, "folder": "sent", "sender": ME, "recipients": ["ana@client.test"], "cc": ["boss@acme.test"],
        "subject": "Hello", "body": "Hi Ana", "note": None, "is_read": True, "sensitivity": "normal",
        "in_reply_to": None, "forwarded_from": None, "sent_at": NOW}}
    assert email(session, 6)["thread_id"] == 6


def test_reply_joins_the_thread_and_keeps_the_subject(session):
    r = call(session, "reply_to_email", message_id=1, to=["ana@client.test"], body="Renewal is fine.")
    assert r.ok, r.message
    new = email(session, 6)
    assert (new["thread_id"], new["in_reply_to"], new["subject"], new["folder"], new["sender"], new["recipients"]) == (
        1, 1, "Contract renewal", "sent", ME, ["ana@client.test"])
    thread = call(session, "get_email_thread", thread_id=1).output
    assert [m["id"] for m in thread["items"]] == [1, 6]


def test_forward_copies_subject_and_body_with_a_note(session):
    r = call(session, "forward_email", message_id=1, to=["legal@acme.test"], note="Please review")
    assert r.ok, r.message
    new = email(session, 6)
    assert (new["forwarded_from"], new["thread_id"], new["subject"], new["body"], new["note"], new["recipients"]) == (
        1, 6, "Contract renewal", "Body of Contract renewal.", "Please review", ["legal@acme.test"])


def test_move_mark_read_and_create_folder(session):
    assert call(session, "create_mail_folder", name="clients").ok
    assert call(session, "move_email", message_id=1, folder="clients").ok
    assert call(session, "mark_email_read", message_id=1, read=True).ok
    assert (email(session, 1)["folder"], email(session, 1)["is_read"]) == ("clients", True)
    assert {"name": "clients", "kind": "custom", "description": None} in session.world.rows("mail.folders")


@pytest.mark.parametrize(("tool", "args", "kind", "detail"), [
    ("reply_to_email", {"message_id": 99, "to": ["x@y.test"], "body": "b"}, ErrorKind.NOT_FOUND, "No message 99."),
    ("reply_to_email", {"message_id": 3, "to": ["x@y.test"], "body": "b"}, ErrorKind.INVALID_TRANSITION, "Message 3 is an unsent draft"),
    ("send_email", {"to": [], "subject": "s", "body": "b"}, ErrorKind.CONSTRAINT_VIOLATION, "at least one recipient"),
    ("forward_email", {"message_id": 99, "to": ["x@y.test"]}, ErrorKind.NOT_FOUND, "No message 99."),
    ("forward_email", {"message_id": 3, "to": ["x@y.test"]}, ErrorKind.INVALID_TRANSITION, "Message 3 is an unsent draft"),
    ("forward_email", {"message_id": 2, "to": ["x@y.test"]}, ErrorKind.PERMISSION_DENIED, "Message 2 is marked confidential"),
    ("forward_email", {"message_id": 5, "to": ["x@y.test"]}, ErrorKind.INVALID_TRANSITION, "Message 5 is in spam"),
    ("reply_to_email", {"message_id": 5, "to": ["win@prize.test"], "body": "b"}, ErrorKind.INVALID_TRANSITION, "Message 5 is in spam"),
    ("move_email", {"message_id": 99, "folder": "archive"}, ErrorKind.NOT_FOUND, "No message 99."),
    ("move_email", {"message_id": 1, "folder": "receipts"}, ErrorKind.NOT_FOUND, "No folder named receipts"),
    ("move_email", {"message_id": 1, "folder": "sent"}, ErrorKind.INVALID_TRANSITION, "cannot be moved into sent"),
    ("move_email", {"message_id": 1, "folder": "drafts"}, ErrorKind.INVALID_TRANSITION, "cannot be moved into drafts"),
    ("mark_email_read", {"message_id": 99, "read": True}, ErrorKind.NOT_FOUND, "No message 99."),
    ("create_mail_folder", {"name": "archive"}, ErrorKind.CONSTRAINT_VIOLATION, "A folder named archive already exists."),
    ("get_email_thread", {"thread_id": 99}, ErrorKind.NOT_FOUND, "No conversation thread 99."),
])
def test_refusals(session, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)


def test_reads(session):
    unread = call(session, "list_emails", folder="inbox", is_read=False).output
    assert [m["id"] for m in unread["items"]] == [2, 1]  # newest first
    by_sender = call(session, "list_emails", sender="CLIENT.test").output
    assert [m["id"] for m in by_sender["items"]] == [1, 4]
    assert [m["id"] for m in call(session, "search_emails", query="contract").output["items"]] == [1, 4]
    assert [m["id"] for m in call(session, "search_emails", query="contract", folder="archive").output["items"]] == [4]
    full = call(session, "read_email", message_id=2).output
    assert (full["subject"], full["sensitivity"], full["recipients"]) == ("Salary bands 2026", "confidential", [ME])
    assert call(session, "read_email", message_id=99).error is ErrorKind.NOT_FOUND
    vips = call(session, "list_address_book", vip=True).output
    assert vips["items"] == [{"email": "ana@client.test", "name": "Ana Lima", "organization": "Client Co", "phone": None,
                              "vip": True}]
    assert [f["name"] for f in call(session, "list_mail_folders").output["items"]] == sorted(FOLDERS)
