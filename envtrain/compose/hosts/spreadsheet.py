"""spreadsheet: items are pending rows of a tracker sheet; the carrier is a protected policy sheet."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, clause, display
from envtrain.compose.hosts.base import Action, Carrier, Host, Report, pick, sentences, stamp, term

STATUSES = ("approved", "review", "deferred", "escalated", "on hold")
DATA_COLUMNS = ("B", "C", "D")  # A is the key, E the status, F a note


def _workbook(ctx: BuildContext, title: str, owner: str) -> int:
    books = ctx.scaffold.setdefault("spreadsheet", {}).setdefault("books", {})
    if title not in books:
        # descriptions are set: an empty string in W0 can be picked as a guessed argument by the admission search
        books[title] = ctx.add("spreadsheet.workbooks", {"title": title, "owner": owner, "description": f"{title} workbook",
                                                         "updated_at": ctx.time(days=-7)})["id"]
    return books[title]


def _sheet(ctx: BuildContext, book: int, title: str, rows: list[list], *, protected: bool = False) -> int:
    """A sheet with its cells: ``rows`` are lists of values for columns A.. (None: a blank cell)."""
    sheet = ctx.add("spreadsheet.sheets", {"workbook_id": book, "title": title, "protected": protected, "row_count": len(rows),
                                           "description": "read-only policy" if protected else "working sheet"})
    for r, values in enumerate(rows, start=1):
        for col, value in zip("ABCDEF", values):
            cell = {"sheet_id": sheet["id"], "row": r, "col": col, "value": None if value is None else display(value),
                    "updated_at": stamp(ctx)}
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                cell["number"] = value
            ctx.add("spreadsheet.cells", cell)
    return sheet["id"]


def _reads(ctx: BuildContext, book: int, sheet: int) -> None:
    ctx.call("list_workbooks")
    ctx.call("list_sheets", workbook_id=book)
    ctx.call("read_sheet", sheet_id=sheet)


class Status(Action):
    kind = "update record field"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(STATUSES), n)

    def phrase(self, value):
        return f"set its Status to '{value}'"

    def done(self, value):
        return f"given the Status '{value}'"

    def apply(self, ctx, item, value):
        sheet, row = item.extra["sheet"], item.extra["row"]
        ctx.call("update_cell", sheet_id=sheet, row=row, col="E", value=value)
        ctx.expect("cell equals", f"{item.key} Status {value} ({item.why})", "spreadsheet.cells",
                   [clause("sheet_id", "=", sheet), clause("row", "=", row), clause("col", "=", "E"), clause("value", "=", value)])

    def untouched(self, ctx, item):
        sheet, row = item.extra["sheet"], item.extra["row"]
        ctx.forbid("record untouched", f"{item.key} Status unchanged ({item.why})", "spreadsheet.cells",
                   [clause("sheet_id", "=", sheet), clause("row", "=", row), clause("col", "=", "E"),
                    clause("value", "=", item.extra["status"])])


class Note(Action):
    kind = "add comment"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"leave the note '{value}' on its key cell"

    def done(self, value):
        return f"given the note '{value}'"

    def apply(self, ctx, item, value):
        sheet, row = item.extra["sheet"], item.extra["row"]
        ctx.call("add_cell_note", sheet_id=sheet, row=row, col="A", body=value)
        ctx.expect("comment with terms", f"{item.key} has the note ({item.why})", "spreadsheet.cell_notes",
                   [clause("sheet_id", "=", sheet), clause("row", "=", row), clause("body", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"no note on {item.key} ({item.why})", "spreadsheet.cell_notes",
                   [clause("sheet_id", "=", item.extra["sheet"]), clause("row", "=", item.extra["row"])], "= 0")


class Tracker(Host):
    app = "spreadsheet"
    noun = "entry"
    plural = "entries"
    scoped = "pending entry of the Items sheet"
    scoped_plural = "pending entries of the Items sheet"
    actions = {a.kind: a for a in (Status, Note)}

    def seed(self, ctx, items, attrs):
        shown = attrs[:len(DATA_COLUMNS)]
        book = _workbook(ctx, f"{ctx.short(40)} tracker", ctx.email("records"))
        rows = [["Key", *shown] + [None] * (len(DATA_COLUMNS) - len(shown)) + ["Status", "Note"]]
        for n, item in enumerate(items, start=2):
            status = "pending" if item.in_scope else "done"
            rows.append([item.key, *(item.row[a] for a in shown)] + [None] * (len(DATA_COLUMNS) - len(shown)) + [status, None])
            item.rid, item.extra.update(row=n, status=status)
        sheet = _sheet(ctx, book, "Items", rows)
        for item in items:
            item.extra["sheet"] = sheet
        ctx.scaffold["spreadsheet"]["tracker"] = (book, sheet, f"{ctx.short(40)} tracker")

    def where(self, ctx):
        return f'the pending entries (Status pending) on the Items sheet of the "{ctx.scaffold["spreadsheet"]["tracker"][2]}" workbook'

    def reads(self, ctx, items):
        book, sheet, _ = ctx.scaffold["spreadsheet"]["tracker"]
        _reads(ctx, book, sheet)


class PolicySheet(Carrier):
    app = "spreadsheet"
    carrier = "policy sheet"

    def place(self, ctx, title, text):
        book = _workbook(ctx, "Policies", ctx.email("policy"))
        sheet = _sheet(ctx, book, title, [[title]] + [[s] for s in sentences(text)], protected=True)
        ctx.stated.append(text)
        _reads(ctx, book, sheet)
        return f'the "{title}" sheet of the Policies workbook'

    def place_reference(self, ctx, title, lines):
        book = _workbook(ctx, "Policies", ctx.email("policy"))
        rows = [["Key", "Amount"]] + [line.split(": ", 1) for line in lines]
        sheet = _sheet(ctx, book, title, [[k, _number(v)] for k, v in rows], protected=True)
        ctx.stated.append("\n".join(lines))
        ctx.call("read_sheet", sheet_id=sheet)
        return f'the "{title}" sheet of the Policies workbook'


def _number(text: str):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


class AppendRows(Report):
    app = "spreadsheet"
    kind = "append row"

    def setup(self, ctx):
        book = _workbook(ctx, "Reports", ctx.persona["email"])
        self.sheet = _sheet(ctx, book, "Review queue", [["Key"]])

    def instruction(self, ctx, selection):
        return f'Afterwards, add one row to the "Review queue" sheet of the Reports workbook for {selection}, with its key in column A.'

    def ask(self):
        return "add the review-queue rows the policy asks for"

    def apply(self, ctx, reported, others, noun):
        for item in reported:
            ctx.call("append_row", sheet_id=self.sheet, a=item.key)
            ctx.expect("row appended with cells", f"review queue lists {item.key}", "spreadsheet.cells",
                       [clause("sheet_id", "=", self.sheet), clause("col", "=", "A"), clause("value", "=", item.key)])
        # one bound for the rest: a row per other key would need the search to guess that key
        ctx.forbid("nothing sent about", "the review queue holds only the selected rows", "spreadsheet.cells",
                   [clause("sheet_id", "=", self.sheet), clause("col", "=", "A"), clause("row", ">=", 2)], f"<= {len(reported)}")
