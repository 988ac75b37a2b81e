"""A generated app as a model would write it (for the engine's tests): expense reports under a
meal limit, for the catalogue's "Automated Reimbursement Reconciliation" (claw-12). ``GOOD_CODE``
keeps every Table 15 rule; ``planted(rule)`` breaks exactly one, ``hidden(rule)`` breaks one in a
way only running the code shows."""

from __future__ import annotations

import json
from typing import Any

GOOD_CODE = '''"""Expense reports: list, read receipts, approve or reject (state in state/session.json)."""
import fcntl
import json
import os
import tempfile
import time

LOCK_WAIT = 1.0


def _error(kind, message):
    return {"error": {"kind": kind, "message": message}}


def _load(ctx):
    with open(ctx["state_path"]) as fh:
        return json.load(fh)


def _save(ctx, state):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(ctx["state_path"]), prefix=".session.")
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
        fh.write("\\n")
    os.replace(tmp, ctx["state_path"])


def _lock(ctx):
    fh = open(ctx["lock_path"], "a")
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fh
        except OSError:
            if time.monotonic() >= deadline:
                fh.close()
                return None
            time.sleep(0.05)


def list_reports(ctx, args):
    state = _load(ctx)
    status = args.get("status")
    items = [dict(r, id=k) for k, r in sorted(state["reports"].items()) if status is None or r["status"] == status]
    return {"items": items}


def get_receipt(ctx, args):
    receipt_id = args.get("receipt_id")
    if not receipt_id:
        return _error("missing_field", "missing required field 'receipt_id': a receipt id such as 'r1'")
    with open(os.path.join(ctx["data_dir"], "receipts.json")) as fh:
        receipts = json.load(fh)
    for receipt in receipts:
        if receipt["id"] == receipt_id:
            return {"receipt": receipt}
    return _error("not_found", "no receipt %r" % receipt_id)


def _decide(ctx, args, status, field):
    report_id = args.get("report_id")
    if not report_id:
        return _error("missing_field", "missing required field 'report_id': a report id such as 'R1'")
    if field and not args.get(field):
        return _error("missing_field", "missing required field %r" % field)
    lock = _lock(ctx)
    if lock is None:
        return _error("lock_timeout", "another worker is updating this session; retry the call")
    try:
        state = _load(ctx)
        report = state["reports"].get(report_id)
        if report is None:
            return _error("not_found", "no report %r" % report_id)
        if report["status"] != "submitted":
            return _error("invalid_transition", "report %s is already %s; only submitted reports can be decided" % (report_id, report["status"]))
        report["status"] = status
        report["decided_at"] = ctx["now"]
        if field:
            report[field] = args[field]
        _save(ctx, state)
        return {"report": dict(report, id=report_id)}
    finally:
        lock.close()


def approve_report(ctx, args):
    return _decide(ctx, args, "approved", None)


def reject_report(ctx, args):
    return _decide(ctx, args, "rejected", "reason")
'''

CHECK = '''import json
reports = json.load(open("state/session.json"))["reports"]
checks = [reports["R1"]["status"] == "rejected", "r2" in reports["R1"].get("reason", ""),
          reports["R2"]["status"] == "approved", reports["R3"]["status"] == "approved"]
print(json.dumps({"pass": all(checks), "score": sum(checks) / len(checks), "detail": "%d of %d hold" % (sum(checks), len(checks))}))
'''

# One edit per rule: (text in GOOD_CODE, replacement). Each breaks that rule and no other.
PLANTED = {
    1: ('    return {"items": items}', '    return [items]'),
    2: ('LOCK_WAIT = 1.0', 'LOCK_WAIT = 1.0\nSEEN = {}'),
    3: ('    os.replace(tmp, ctx["state_path"])', ('    os.replace(tmp, ctx["state_path"])\n'
                                              '    shutil.copy(ctx["state_path"], os.path.join(ctx["data_dir"], "backup.json"))')),
    4: ('''    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(ctx["state_path"]), prefix=".session.")
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
        fh.write("\\n")
    os.replace(tmp, ctx["state_path"])''', '''    with open(ctx["state_path"], "w") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)'''),
    5: ('fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)', 'fcntl.flock(fh, fcntl.LOCK_EX)'),
    6: ('report["decided_at"] = ctx["now"]', 'report["decided_at"] = datetime.now().isoformat()'),
}
# Breaks a reading cannot see, only a run: rules 1, 3, 5 and 6.
HIDDEN = {
    1: ('    return {"items": items}', '    out = [items]\n    return out'),
    3: ('    os.replace(tmp, ctx["state_path"])', (
        '    os.replace(tmp, ctx["state_path"])\n'
        '    with open(os.path.join("".join(["da", "ta"]), "copy.json"), "w") as fh:\n        fh.write("{}")\n'
        '    os.replace(os.path.join("".join(["da", "ta"]), "copy.json"), os.path.join("".join(["da", "ta"]), "copy2.json"))')),
    5: ('            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)\n            return fh',
        '            return fh'),
    6: ('report["decided_at"] = ctx["now"]', 'report["decided_at"] = repr(__import__("time").time())'),
}


def planted(rule: int, table: dict[int, tuple[str, str]] = PLANTED) -> str:
    old, new = table[rule]
    assert old in GOOD_CODE, rule
    code = GOOD_CODE.replace(old, new)
    extra = {3: "import shutil\n", 6: "from datetime import datetime\n"}.get(rule, "") if table is PLANTED else ""
    return code.replace("import fcntl\n", "import fcntl\n" + extra, 1)


def hidden(rule: int) -> str:
    return planted(rule, HIDDEN)


def answer(code: str = GOOD_CODE, check: str = CHECK, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "expenses",
        "description": "Expense reports with receipts, reviewed against a meal limit.",
        "state_schema": {"type": "object", "properties": {"reports": {"type": "object"}}, "required": ["reports"]},
        "initial_state": {"reports": {
            "R1": {"employee": "ana", "receipts": ["r1", "r2"], "status": "submitted"},
            "R2": {"employee": "bo", "receipts": ["r3"], "status": "submitted"},
            "R3": {"employee": "chen", "receipts": ["r4"], "status": "approved"},
        }},
        "data": {"data/receipts.json": json.dumps([
            {"id": "r1", "category": "meal", "amount": 30}, {"id": "r2", "category": "meal", "amount": 80},
            {"id": "r3", "category": "taxi", "amount": 25}, {"id": "r4", "category": "meal", "amount": 12}], indent=1)},
        "tools": [
            {"name": "list_reports", "description": "List expense reports, optionally by status.", "family": "list",
             "parameters": {"type": "object", "properties": {"status": {"type": "string", "enum": ["submitted", "approved", "rejected"]}}}},
            {"name": "get_receipt", "description": "Read one receipt.", "family": "read",
             "parameters": {"type": "object", "properties": {"receipt_id": {"type": "string"}}, "required": ["receipt_id"]}},
            {"name": "approve_report", "description": "Approve a submitted report.", "family": "update",
             "parameters": {"type": "object", "properties": {"report_id": {"type": "string"}}, "required": ["report_id"]}},
            {"name": "reject_report", "description": "Reject a submitted report, with a reason.", "family": "update",
             "parameters": {"type": "object", "properties": {"report_id": {"type": "string"}, "reason": {"type": "string"}},
                            "required": ["report_id", "reason"]}},
        ],
        "code": code,
        "docs": [{"title": "Reimbursement policy", "body": "Meals above 50 are not reimbursed. Reject a report holding one, "
                                                          "with a reason naming the receipt; approve the others."}],
        "persona": {"name": "Mara Lind", "role": "finance reviewer"},
        "task": {
            "request": "Decide every submitted expense report under the reimbursement policy.",
            "solution": [
                {"tool": "list_reports", "arguments": {"status": "submitted"}},
                {"tool": "get_receipt", "arguments": {"receipt_id": "r2"}},
                {"tool": "reject_report", "arguments": {"report_id": "R1", "reason": "receipt r2: a meal of 80 is above the limit of 50"}},
                {"tool": "approve_report", "arguments": {"report_id": "R2"}},
            ],
            "check": check,
        },
    }
    base.update(changes)
    return base


def answer_text(**kw: Any) -> str:
    return "Here is the environment:\n```json\n" + json.dumps(answer(**kw), indent=1) + "\n```"
