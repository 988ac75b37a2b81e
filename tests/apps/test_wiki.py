"""The wiki app: creating, editing (version bumps), publishing, archiving and commenting; refusals; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row

ME, TOM, HANA = "me@acme.test", "tom@acme.test", "hana@acme.test"
NOW = "2026-03-09T08:00:00Z"


def page(id, space, title, *, status="draft", version=1, body=None, updated_at="2026-02-01T10:00:00Z"):
    return {"id": id, "space": space, "title": title, "body": body or f"Text of {title}.", "version": version, "status": status,
            "labels": [], "author": TOM, "updated_by": TOM, "created_at": "2026-01-01T10:00:00Z", "updated_at": updated_at,
            "published_at": "2026-01-02T10:00:00Z" if status != "draft" else None}


ROWS = {
    "wiki.spaces": [
        {"key": "OPS", "name": "Operations", "description": "Runbooks"},
        {"key": "HR", "name": "People", "description": "Policies"},
    ],
    "wiki.editors": [{"id": 1, "space": "OPS", "email": ME}, {"id": 2, "space": "OPS", "email": TOM}, {"id": 3, "space": "HR", "email": HANA}],
    "wiki.pages": [
        page(1, "OPS", "On-call runbook", version=3, body="Call Tom.", updated_at="2026-02-03T10:00:00Z"),
        page(2, "OPS", "Old runbook", status="archived", version=9, updated_at="2024-05-01T10:00:00Z"),
        page(3, "OPS", "Postmortem template", status="published", version=2, updated_at="2026-01-15T10:00:00Z"),
        page(4, "HR", "Leave policy", status="published", version=5, updated_at="2026-01-20T10:00:00Z"),
    ],
    "wiki.comments": [{"id": 1, "page_id": 3, "author": TOM, "body": "Looks good.", "created_at": "2026-01-16T10:00:00Z"}],
}


runtime, session = app_fixtures("wiki", ROWS, persona=ME, base_time=NOW)


def get(s, id):
    return row(s, "wiki.pages", id)


def test_update_page_body_bumps_the_version_and_records_history(session):
    r = call(session, "update_page_body", page_id=1, body="Call Priya.")
    assert r.ok, r.message
    assert r.output["updated"] == 1
    p = get(session, 1)
    assert (p["body"], p["version"], p["status"], p["updated_by"], p["updated_at"]) == ("Call Priya.", 4, "draft", ME, NOW)
    assert call(session, "update_page_body", page_id=1, body="Call Priya Nair.").ok
    assert get(session, 1)["version"] == 5
    history = call(session, "list_page_revisions", page_id=1).output["items"]
    assert [(h["version"], h["body"], h["edited_by"]) for h in history] == [(5, "Call Priya Nair.", ME), (4, "Call Priya.", ME)]


def test_create_publish_archive_restore_comment(session):
    r = call(session, "create_page", space="OPS", title="Deploy guide", body="Step 1.")
    assert r.ok, r.message
    assert r.output == {"created": {
        "id": 5, "space": "OPS", "title": "Deploy guide", "body": "Step 1.", "version": 1, "status": "draft", "labels": None,
        "author": ME, "updated_by": ME, "created_at": NOW, "updated_at": NOW, "published_at": None}}
    assert [(h["page_id"], h["version"]) for h in session.world.rows("wiki.revisions")] == [(5, 1)]
    assert call(session, "publish_page", page_id=5).ok
    assert (get(session, 5)["status"], get(session, 5)["published_at"]) == ("published", "2026-03-09T08:00:01Z")
    assert call(session, "archive_page", page_id=5).ok and get(session, 5)["status"] == "archived"
    assert call(session, "restore_page", page_id=5).ok and get(session, 5)["status"] == "draft"
    assert call(session, "comment_on_page", page_id=4, body="Thanks!").ok  # anyone may comment, even outside their spaces
    assert session.world.rows("wiki.comments")[-1] == {"id": 2, "page_id": 4, "author": ME, "body": "Thanks!",
                                                       "created_at": "2026-03-09T08:00:04Z"}  # fifth step


@pytest.mark.parametrize(("tool", "args", "kind", "detail"), [
    ("create_page", {"space": "XX", "title": "t", "body": "b"}, ErrorKind.NOT_FOUND, "No space XX."),
    ("create_page", {"space": "HR", "title": "t", "body": "b"}, ErrorKind.PERMISSION_DENIED, "You are not an editor of space HR."),
    ("create_page", {"space": "OPS", "title": "On-call runbook", "body": "b"}, ErrorKind.CONSTRAINT_VIOLATION,
     "Space OPS already has a page titled On-call runbook."),
    ("update_page_body", {"page_id": 99, "body": "b"}, ErrorKind.NOT_FOUND, "No page 99."),
    ("update_page_body", {"page_id": 4, "body": "b"}, ErrorKind.PERMISSION_DENIED, "not an editor of the space of page 4"),
    ("update_page_body", {"page_id": 2, "body": "b"}, ErrorKind.INVALID_TRANSITION, "Page 2 is archived and read-only"),
    ("publish_page", {"page_id": 99}, ErrorKind.NOT_FOUND, "No page 99."),
    ("publish_page", {"page_id": 4}, ErrorKind.PERMISSION_DENIED, "not an editor of the space of page 4"),
    ("publish_page", {"page_id": 2}, ErrorKind.INVALID_TRANSITION, "Page 2 is archived; restore it before publishing."),
    ("publish_page", {"page_id": 3}, ErrorKind.INVALID_TRANSITION, "Page 3 is already published."),
    ("archive_page", {"page_id": 99}, ErrorKind.NOT_FOUND, "No page 99."),
    ("archive_page", {"page_id": 4}, ErrorKind.PERMISSION_DENIED, "not an editor of the space of page 4"),
    ("archive_page", {"page_id": 2}, ErrorKind.INVALID_TRANSITION, "Page 2 is already archived."),
    ("restore_page", {"page_id": 99}, ErrorKind.NOT_FOUND, "No page 99."),
    ("restore_page", {"page_id": 4}, ErrorKind.PERMISSION_DENIED, "not an editor of the space of page 4"),
    ("restore_page", {"page_id": 1}, ErrorKind.INVALID_TRANSITION, "Page 1 is not archived."),
    ("comment_on_page", {"page_id": 99, "body": "b"}, ErrorKind.NOT_FOUND, "No page 99."),
    ("comment_on_page", {"page_id": 2, "body": "b"}, ErrorKind.INVALID_TRANSITION, "Page 2 is archived and takes no comments."),
    ("list_page_comments", {"page_id": 99}, ErrorKind.NOT_FOUND, "No page 99."),
    ("list_page_revisions", {"page_id": 99}, ErrorKind.NOT_FOUND, "No page 99."),
    ("list_space_editors", {"space": "XX"}, ErrorKind.NOT_FOUND, "No space XX."),
])
def test_refusals(session, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)


def test_reads(session):
    assert [p["id"] for p in call(session, "list_pages", space="OPS").output["items"]] == [1, 3, 2]  # newest update first
    assert [p["id"] for p in call(session, "list_pages", status="published").output["items"]] == [4, 3]
    assert [p["id"] for p in call(session, "search_pages", query="RUNBOOK").output["items"]] == [1, 2]
    assert [p["id"] for p in call(session, "search_pages", query="policy", space="OPS").output["items"]] == []
    full = call(session, "read_page", page_id=1).output
    assert (full["title"], full["body"], full["version"], full["status"]) == ("On-call runbook", "Call Tom.", 3, "draft")
    assert call(session, "list_page_comments", page_id=3).output["items"] == [
        {"id": 1, "page_id": 3, "author": TOM, "body": "Looks good.", "created_at": "2026-01-16T10:00:00Z"}]
    assert [s["key"] for s in call(session, "list_wiki_spaces").output["items"]] == ["HR", "OPS"]
    assert call(session, "list_space_editors", space="OPS").output["items"] == [{"email": ME}, {"email": TOM}]
