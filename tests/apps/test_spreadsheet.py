"""The spreadsheet app: cell writes, appended rows, every refusal, and the reads of sheets and ranges."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, rows

NF, DENIED, BAD = ErrorKind.NOT_FOUND, ErrorKind.PERMISSION_DENIED, ErrorKind.CONSTRAINT_VIOLATION

ME = "clerk@acme.test"
NOW = "2026-03-02T09:00:00Z"  # the first step runs at this second, each later step one second on


def cell(sheet, row, col, value, number=None):
    return {"sheet_id": sheet, "row": row, "col": col, "value": value, "number": number}


ROWS = {
    "spreadsheet.workbooks": [
        {"id": 1, "title": "Policies", "owner": "cfo@acme.test", "description": "", "updated_at": "2026-01-01T00:00:00Z"},
        {"id": 2, "title": "Expenses", "owner": ME, "description": "", "updated_at": "2026-01-01T00:00:00Z"},
    ],
    "spreadsheet.sheets": [
        {"id": 1, "workbook_id": 1, "title": "Limits", "protected": True, "row_count": 3, "description": ""},
        {"id": 2, "workbook_id": 2, "title": "Log", "protected": False, "row_count": 2, "description": ""},
    ],
    "spreadsheet.cells": [
        cell(1, 1, "A", "Category"), cell(1, 1, "B", "Limit"),
        cell(1, 2, "A", "Travel"), cell(1, 2, "B", "500", 500),
        cell(1, 3, "A", "Meals"), cell(1, 3, "B", "75", 75),
        cell(2, 1, "A", "Claim"), cell(2, 1, "B", "Amount"), cell(2, 1, "C", None),
        cell(2, 2, "A", "EXP-1"), cell(2, 2, "B", "40.00", 40), cell(2, 2, "C", None),
    ],
    "spreadsheet.named_ranges": [
        {"id": 1, "workbook_id": 1, "sheet_id": 1, "name": "limits", "first_row": 2, "last_row": 3,
         "first_col": "A", "last_col": "B"},
    ],
}


runtime, session = app_fixtures("spreadsheet", ROWS, persona=ME, base_time=NOW)


def grid(s, sheet):
    """(row, col) -> (value, number) of every cell of a sheet, blanks included."""
    return {(c["row"], c["col"]): (c["value"], c["number"]) for c in rows(s, "spreadsheet.cells", sheet_id=sheet)}


def test_update_cell_rewrites_value_and_number_and_stamps_the_editor(session):
    r = call(session, "update_cell", sheet_id=2, row=2, col="B", value="45.50", number=45.5)
    assert r.ok, r.message
    assert r.output["updated"] == 1
    changed, = rows(session, "spreadsheet.cells", sheet_id=2, row=2, col="B")
    assert changed == {"id": 11, "sheet_id": 2, "row": 2, "col": "B", "value": "45.50", "number": 45.5,
                       "updated_by": ME, "updated_at": NOW}
    assert session.world.rows("spreadsheet.workbooks")[1]["updated_at"] == NOW
    # A text value clears the number; a blank cell can be filled.
    assert call(session, "update_cell", sheet_id=2, row=2, col="B", value="n/a").ok
    assert call(session, "update_cell", sheet_id=2, row=2, col="C", value="ok").ok
    assert grid(session, 2)[(2, "B")] == ("n/a", None) and grid(session, 2)[(2, "C")] == ("ok", None)


def test_append_row_writes_the_next_row_and_counts_it(session):
    r = call(session, "append_row", sheet_id=2, a="EXP-2", b="12.00")
    assert r.ok, r.message
    assert r.output["created"]["row"] == 3 and r.output["created"]["value"] == "EXP-2"
    rows = {k: v for k, v in grid(session, 2).items() if k[0] == 3}
    assert rows == {(3, "A"): ("EXP-2", None), (3, "B"): ("12.00", None), (3, "C"): (None, None),
                    (3, "D"): (None, None), (3, "E"): (None, None), (3, "F"): (None, None)}
    assert session.world.rows("spreadsheet.sheets")[1]["row_count"] == 3
    assert call(session, "append_row", sheet_id=2, a="EXP-3").output["created"]["row"] == 4


def test_append_row_refuses_to_overwrite_cells_when_the_row_count_is_stale(session):
    session.world.conn.execute('UPDATE "spreadsheet__sheets" SET row_count = 1 WHERE id = 2')
    r = call(session, "append_row", sheet_id=2, a="EXP-9")
    assert r.error is ErrorKind.CONSTRAINT_VIOLATION and "already has a cell" in r.message
    assert (2, "A") in grid(session, 2) and grid(session, 2)[(2, "A")] == ("EXP-1", None)


def test_add_sheet_note_and_named_range(session):
    r = call(session, "add_sheet", workbook_id=2, title="Review queue")
    assert r.ok and r.output["created"]["protected"] is False and r.output["created"]["row_count"] == 0
    r = call(session, "add_cell_note", sheet_id=1, row=2, col="B", body="Raised from 400 in January.")
    assert r.ok, r.message  # notes are allowed on protected sheets
    assert session.world.rows("spreadsheet.cell_notes") == [
        {"id": 1, "sheet_id": 1, "row": 2, "col": "B", "author": ME, "body": "Raised from 400 in January.",
         "created_at": "2026-03-02T09:00:01Z"}]
    r = call(session, "define_named_range", sheet_id=2, name="claims", first_row=2, last_row=9, first_col="A", last_col="B")
    assert r.ok and r.output["created"]["workbook_id"] == 2


REFUSALS = [
    ("update_cell", dict(sheet_id=9, row=1, col="A", value="x"), NF, "No sheet 9"),
    ("update_cell", dict(sheet_id=1, row=2, col="B", value="900"), DENIED, "Sheet 1 is protected"),
    ("update_cell", dict(sheet_id=2, row=7, col="C", value="x"), NF, "no cell C7"),
    ("append_row", dict(sheet_id=9, a="x"), NF, "No sheet 9"),
    ("append_row", dict(sheet_id=1, a="Lodging", b="200"), DENIED, "Sheet 1 is protected"),
    ("add_sheet", dict(workbook_id=9, title="New"), NF, "No workbook 9"),
    ("add_sheet", dict(workbook_id=2, title="Log"), BAD, "already has a sheet titled Log"),
    ("add_cell_note", dict(sheet_id=9, row=1, col="A", body="x"), NF, "No sheet 9"),
    ("add_cell_note", dict(sheet_id=1, row=5, col="E", body="x"), NF, "no cell E5"),
    ("define_named_range", dict(sheet_id=9, name="n", first_row=1, last_row=2, first_col="A", last_col="B"),
     NF, "No sheet 9"),
    ("define_named_range", dict(sheet_id=2, name="limits", first_row=1, last_row=2, first_col="A", last_col="B"),
     BAD, "name limits is already used"),
    ("define_named_range", dict(sheet_id=2, name="upside_down", first_row=5, last_row=2, first_col="A", last_col="B"),
     BAD, "last row that is not above it"),
    ("define_named_range", dict(sheet_id=2, name="backwards", first_row=1, last_row=2, first_col="C", last_col="A"),
     BAD, "last column cannot come before"),
    ("read_sheet", dict(sheet_id=9), NF, "No sheet 9"),
    ("read_range", dict(sheet_id=9, from_row=1), NF, "No sheet 9"),
    ("read_named_range", dict(name="rates"), NF, "No named range rates"),
]


@pytest.mark.parametrize("tool, args, kind, detail", REFUSALS, ids=[f"{r[0]}-{r[2].value}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_name_the_problem_and_change_nothing(session, runtime, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)
    assert session.world.content_hash() == runtime.w0_hash


def test_reads_return_the_non_blank_cells(session):
    def cells(r):
        assert r.ok, r.message
        return [(c["row"], c["col"], c["value"]) for c in r.output["items"]]

    assert cells(call(session, "read_sheet", sheet_id=2)) == [
        (1, "A", "Claim"), (1, "B", "Amount"), (2, "A", "EXP-1"), (2, "B", "40.00")]
    assert cells(call(session, "read_range", sheet_id=1, from_row=2, from_col="B")) == [(2, "B", "500"), (3, "B", "75")]
    assert cells(call(session, "read_named_range", name="limits")) == [
        (2, "A", "Travel"), (2, "B", "500"), (3, "A", "Meals"), (3, "B", "75")]
    assert call(session, "read_named_range", name="limits").output["items"][1]["number"] == 500
    found = call(session, "find_value", query="meal", workbook_id=1).output["items"]
    assert [(c["sheet_id"], c["row"], c["col"], c["value"]) for c in found] == [(1, 3, "A", "Meals")]
    assert call(session, "find_value", query="meal", workbook_id=2).output["items"] == []
    sheets = call(session, "list_sheets", workbook_id=1).output["items"]
    assert sheets == [{"id": 1, "workbook_id": 1, "title": "Limits", "protected": True, "row_count": 3, "description": ""}]
    assert [w["title"] for w in call(session, "list_workbooks").output["items"]] == ["Policies", "Expenses"]
