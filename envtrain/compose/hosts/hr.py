"""hr: items are pending vacation requests of the persona's reports (attributes in the reason)."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, clause, details
from envtrain.compose.hosts.base import Action, Host, stamp, term


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("hr")
    if state is None:
        me = ctx.add("hr.employees", {"name": "Operations manager", "email": ctx.persona["email"], "department": "operations",
                                      "title": "Operations manager", "salary_band": "L5", "status": "active", "hire_date": "2015-01-05"})
        state = ctx.scaffold["hr"] = {"manager": me["id"]}
    return state


class Approve(Action):
    kind = "approve leave request"

    def values(self, ctx, n):
        return ["approve"]

    def phrase(self, value):
        return "approve it"

    def done(self, value):
        return "approved"

    def apply(self, ctx, item, value):
        ctx.call("approve_leave_request", leave_request_id=item.rid)
        ctx.expect("status transition", f"leave request {item.key} approved ({item.why})", "hr.leave_requests",
                   [clause("id", "=", item.rid), clause("status", "=", "approved"), clause("decided_by", "=", ctx.persona["email"])])

    def untouched(self, ctx, item):
        _pending(ctx, item)


class Deny(Action):
    kind = "deny leave request"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"deny it with the reason '{value}'"

    def done(self, value):
        return "denied"

    def apply(self, ctx, item, value):
        ctx.call("deny_leave_request", leave_request_id=item.rid, reason=value)
        ctx.expect("status transition", f"leave request {item.key} denied ({item.why})", "hr.leave_requests",
                   [clause("id", "=", item.rid), clause("status", "=", "denied"), clause("decision_note", "contains", value)])

    def untouched(self, ctx, item):
        _pending(ctx, item)


def _pending(ctx, item) -> None:
    # out-of-scope requests are pending too (unpaid leave), so approve or deny can still break this
    ctx.forbid("record untouched", f"leave request {item.key} still pending ({item.why})", "hr.leave_requests",
               [clause("id", "=", item.rid), clause("status", "=", "pending")])


class LeaveRequests(Host):
    app = "hr"
    noun = "leave request"
    plural = "leave requests"
    scoped = "pending vacation request"
    scoped_plural = "pending vacation requests"
    actions = {a.kind: a for a in (Approve, Deny)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        manager = _setup(ctx)["manager"]
        for item in items:
            email = ctx.email(item.key.lower())
            name = item.label if item.label != item.key else f"Employee {item.key}"
            employee = ctx.add("hr.employees", {"name": name, "email": email, "department": "operations", "title": "Analyst",
                                                "manager_id": manager, "salary_band": "L3", "status": "active", "hire_date": "2019-04-01"})
            row = ctx.add("hr.leave_requests", {
                "employee_id": employee["id"], "leave_type": "vacation" if item.in_scope else "unpaid",
                "start_date": ctx.date(days=14), "end_date": ctx.date(days=18), "status": "pending",
                "reason": f"{item.key}\n{details(item, attrs)}", "submitted_by": email, "submitted_at": stamp(ctx),
            })
            item.rid = row["id"]

    def where(self, ctx):
        return "the pending vacation requests of your team"

    def reads(self, ctx, items):
        ctx.call("list_leave_requests", status="pending")
        for item in items:
            if item.in_scope:
                ctx.call("get_leave_request", leave_request_id=item.rid)
