"""The projects app: card moves within a board, assignment, WIP limits, checklists; every refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row

NF, DENIED, BAD = ErrorKind.NOT_FOUND, ErrorKind.PERMISSION_DENIED, ErrorKind.CONSTRAINT_VIOLATION
STUCK = ErrorKind.INVALID_TRANSITION

ME = "lee@apps.test"
NOW = "2026-03-02T09:00:00Z"  # the first step runs at this second, each later step one second on
T0 = "2026-02-20T10:00:00Z"


def card(id, list_id, title, board_id=1, **extra):
    row = {"id": id, "board_id": board_id, "list_id": list_id, "title": title, "description": "", "assignee": None,
           "due_date": None, "labels": [], "position": 1, "archived": False, "created_by": None,
           "created_at": T0, "updated_at": T0}
    return {**row, **extra}


ROWS = {
    "projects.boards": [
        {"id": 1, "name": "Mobile", "description": "", "owner": "maya@apps.test"},
        {"id": 2, "name": "Web", "description": "", "owner": "maya@apps.test"},
        {"id": 3, "name": "Finance", "description": "", "owner": "cfo@apps.test"},
    ],
    "projects.lists": [
        {"id": 1, "board_id": 1, "name": "Backlog", "position": 1, "is_done": False},
        {"id": 2, "board_id": 1, "name": "In progress", "position": 2, "wip_limit": 1, "is_done": False},
        {"id": 3, "board_id": 1, "name": "Done", "position": 3, "is_done": True},
        {"id": 4, "board_id": 2, "name": "Backlog", "position": 1, "is_done": False},
        {"id": 5, "board_id": 3, "name": "Todo", "position": 1, "is_done": False},
    ],
    "projects.board_members": [
        {"id": 1, "board_id": 1, "email": ME, "name": "Lee", "role": "member"},
        {"id": 2, "board_id": 1, "email": "kofi@apps.test", "name": "Kofi", "role": "member"},
        {"id": 3, "board_id": 1, "email": "sven@partner.test", "name": "Sven", "role": "observer"},
        {"id": 4, "board_id": 2, "email": ME, "name": "Lee", "role": "member"},
        {"id": 5, "board_id": 3, "email": ME, "name": "Lee", "role": "observer"},
    ],
    "projects.cards": [
        card(1, 1, "Fix login crash", description="Crash on Android 14.", labels=["bug", "crash"]),
        card(2, 2, "Refactor auth", assignee="kofi@apps.test", due_date="2026-03-06"),
        card(3, 1, "Old spike", archived=True, position=2),
        card(4, 1, "Dark mode", position=3, labels=["idea"]),
        card(5, 5, "Close the books", board_id=3),
    ],
    "projects.checklist_items": [
        {"id": 1, "card_id": 4, "text": "Design tokens", "done": False},
    ],
}


runtime, session = app_fixtures("projects", ROWS, persona=ME, base_time=NOW)


def get(s, id):
    return row(s, "projects.cards", id)


def test_move_card_goes_to_the_bottom_of_the_target_list(session):
    r = call(session, "move_card", card_id=1, list_id=3)
    assert r.ok, r.message
    assert get(session, 1) == {**card(1, 3, "Fix login crash", description="Crash on Android 14.", labels=["bug", "crash"]),
                               "position": 1, "updated_at": NOW}
    assert call(session, "move_card", card_id=4, list_id=1).output["items"][0]["position"] == 2  # 3 (archived) counts


def test_card_writes_change_exactly_their_field(session):
    assert call(session, "assign_card", card_id=1, assignee="kofi@apps.test").ok
    assert call(session, "set_card_due_date", card_id=1, due_date="2026-03-04").ok
    assert call(session, "set_card_labels", card_id=1, labels=["bug", "crash", "p1"]).ok
    assert call(session, "archive_card", card_id=4).ok
    c1 = get(session, 1)
    assert (c1["assignee"], c1["due_date"], c1["labels"]) == ("kofi@apps.test", "2026-03-04", ["bug", "crash", "p1"])
    assert c1["updated_at"] == "2026-03-02T09:00:02Z"
    assert get(session, 4)["archived"] is True


def test_create_card_comment_and_checklist(session):
    r = call(session, "create_card", list_id=1, title="Crash on logout", due_date="2026-03-10")
    assert r.ok, r.message
    assert r.output["created"] == {
        "id": 6, "board_id": 1, "list_id": 1, "title": "Crash on logout", "description": "", "assignee": None,
        "due_date": "2026-03-10", "labels": [], "position": 4, "archived": False, "created_by": ME,
        "created_at": NOW, "updated_at": NOW}
    assert call(session, "comment_on_card", card_id=3, body="Still relevant?").ok  # archived cards take comments
    assert session.world.rows("projects.card_comments") == [
        {"id": 1, "card_id": 3, "author": ME, "body": "Still relevant?", "created_at": "2026-03-02T09:00:01Z"}]
    assert call(session, "add_checklist_item", card_id=1, text="Write a regression test").output["created"]["done"] is False
    r = call(session, "complete_checklist_item", checklist_item_id=1)
    assert r.ok and r.output["items"][0] == {
        "id": 1, "card_id": 4, "text": "Design tokens", "done": True, "done_by": ME, "done_at": "2026-03-02T09:00:03Z"}
    assert call(session, "move_card", card_id=4, list_id=3).ok  # its checklist is complete now


REFUSALS = [
    ("move_card", dict(card_id=99, list_id=1), NF, "No card 99"),
    ("move_card", dict(card_id=1, list_id=99), NF, "No list 99"),
    ("move_card", dict(card_id=5, list_id=5), DENIED, "card 5's board"),
    ("move_card", dict(card_id=3, list_id=2), STUCK, "Card 3 is archived"),
    ("move_card", dict(card_id=1, list_id=4), STUCK, "List 4 is on another board than card 1"),
    ("move_card", dict(card_id=1, list_id=2), BAD, "List 2 is at its WIP limit"),
    ("move_card", dict(card_id=4, list_id=3), STUCK, "Card 4 has open checklist items"),
    ("create_card", dict(list_id=99, title="x"), NF, "No list 99"),
    ("create_card", dict(list_id=5, title="x"), DENIED, "list 5's board"),
    ("create_card", dict(list_id=2, title="x"), BAD, "List 2 is at its WIP limit"),
    ("create_card", dict(list_id=1, title="x", due_date="next week"), BAD, "due_date must be a date"),
    ("assign_card", dict(card_id=99, assignee=ME), NF, "No card 99"),
    ("assign_card", dict(card_id=5, assignee=ME), DENIED, "card 5's board"),
    ("assign_card", dict(card_id=3, assignee=ME), STUCK, "Card 3 is archived"),
    ("assign_card", dict(card_id=1, assignee="nobody@apps.test"), NF, "nobody@apps.test is not a member of card 1's board"),
    ("assign_card", dict(card_id=1, assignee="sven@partner.test"), BAD, "sven@partner.test is only an observer"),
    ("set_card_due_date", dict(card_id=99, due_date="2026-03-04"), NF, "No card 99"),
    ("set_card_due_date", dict(card_id=5, due_date="2026-03-04"), DENIED, "card 5's board"),
    ("set_card_due_date", dict(card_id=3, due_date="2026-03-04"), STUCK, "Card 3 is archived"),
    ("set_card_labels", dict(card_id=99, labels=["x"]), NF, "No card 99"),
    ("set_card_labels", dict(card_id=5, labels=["x"]), DENIED, "card 5's board"),
    ("set_card_labels", dict(card_id=3, labels=["x"]), STUCK, "Card 3 is archived"),
    ("archive_card", dict(card_id=99), NF, "No card 99"),
    ("archive_card", dict(card_id=5), DENIED, "card 5's board"),
    ("archive_card", dict(card_id=3), STUCK, "Card 3 is already archived"),
    ("comment_on_card", dict(card_id=99, body="x"), NF, "No card 99"),
    ("add_checklist_item", dict(card_id=99, text="x"), NF, "No card 99"),
    ("add_checklist_item", dict(card_id=5, text="x"), DENIED, "card 5's board"),
    ("add_checklist_item", dict(card_id=3, text="x"), STUCK, "Card 3 is archived"),
    ("complete_checklist_item", dict(checklist_item_id=99), NF, "No checklist item 99"),
    ("list_board_lists", dict(board_id=99), NF, "No board 99"),
    ("list_board_members", dict(board_id=99), NF, "No board 99"),
    ("list_card_comments", dict(card_id=99), NF, "No card 99"),
    ("list_checklist_items", dict(card_id=99), NF, "No card 99"),
]


@pytest.mark.parametrize("tool, args, kind, detail", REFUSALS, ids=[f"{r[0]}-{r[2].value}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_name_the_problem_and_change_nothing(session, runtime, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)
    assert session.world.content_hash() == runtime.w0_hash


def test_refusals_that_need_a_changed_world(session):
    # Observers may comment but not tick off checklists; a ticked item cannot be ticked twice.
    session.world.conn.execute('UPDATE "projects__board_members" SET role = \'observer\' WHERE id = 1')
    assert call(session, "comment_on_card", card_id=1, body="Seen.").ok
    r = call(session, "complete_checklist_item", checklist_item_id=1)
    assert r.error is ErrorKind.PERMISSION_DENIED and "checklist item 1" in r.message
    session.world.conn.execute('DELETE FROM "projects__board_members" WHERE id = 1')
    r = call(session, "comment_on_card", card_id=1, body="x")
    assert r.error is ErrorKind.PERMISSION_DENIED and "comment on it" in r.message
    session.world.restore(session.runtime.w0)
    assert call(session, "complete_checklist_item", checklist_item_id=1).ok
    r = call(session, "complete_checklist_item", checklist_item_id=1)
    assert r.error is ErrorKind.INVALID_TRANSITION and "Checklist item 1 is already done" in r.message


def test_reads(session):
    lists = call(session, "list_board_lists", board_id=1).output["items"]
    assert [(x["name"], x["wip_limit"], x["is_done"]) for x in lists] == [
        ("Backlog", None, False), ("In progress", 1, False), ("Done", None, True)]
    members = call(session, "list_board_members", board_id=1, role="member").output["items"]
    assert members == [{"email": ME, "name": "Lee", "role": "member"},
                       {"email": "kofi@apps.test", "name": "Kofi", "role": "member"}]
    backlog = call(session, "list_cards", list_id=1, archived=False).output["items"]
    assert [(c["id"], c["title"], c["labels"]) for c in backlog] == [
        (1, "Fix login crash", ["bug", "crash"]), (4, "Dark mode", ["idea"])]
    assert [c["id"] for c in call(session, "search_cards", query="android").output["items"]] == [1]
    assert call(session, "get_card", card_id=1).output["description"] == "Crash on Android 14."
    assert call(session, "list_checklist_items", card_id=4).output["items"] == [
        {"id": 1, "card_id": 4, "text": "Design tokens", "done": False, "done_by": None, "done_at": None}]
    assert [b["name"] for b in call(session, "list_boards").output["items"]] == ["Mobile", "Web", "Finance"]
