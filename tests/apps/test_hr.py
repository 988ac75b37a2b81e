"""The hr app: leave requests decided by the employee's manager, HR-only record changes, reviews; refusals; reads."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from envtrain.core import ErrorKind

from .kit import app_runtime, call, open_session, refused, row

NOW = "2026-03-04T09:00:00Z"
VP, INES, MARK, HANNA = "grace@corvid.test", "ines@corvid.test", "mark@corvid.test", "hanna@corvid.test"


def employee(id, name, email, title, manager_id, *, department="engineering", band="L4", status="active", hire="2022-01-10"):
    return {"id": id, "name": name, "email": email, "department": department, "title": title, "manager_id": manager_id,
            "salary_band": band, "status": status, "hire_date": hire}


ROWS = {
    "hr.employees": [
        employee(1, "Grace Kim", VP, "VP Engineering", None, band="L7", hire="2019-04-01"),
        employee(2, "Ines Moreau", INES, "Engineering Manager", 1, band="L6"),
        employee(3, "Mark Olsen", MARK, "Engineering Manager", 1, band="L6"),
        employee(10, "Tomás Rivera", "tomas@corvid.test", "Software Engineer", 2),
        employee(11, "Aisha Bello", "aisha@corvid.test", "Software Engineer", 2),
        employee(20, "Lena Fischer", "lena@corvid.test", "Software Engineer", 3),
        employee(30, "Hanna Berg", HANNA, "HR Business Partner", None, department="hr", band="L5"),
        {**employee(40, "Sam Former", "sam@corvid.test", "Support Agent", 3, department="support", status="terminated", hire="2020-05-01"),
         "termination_date": "2025-12-31", "termination_reason": "resigned"},
    ],
    "hr.leave_requests": [
        {"id": 100, "employee_id": 10, "leave_type": "vacation", "start_date": "2026-03-09", "end_date": "2026-03-11", "status": "pending"},
        {"id": 101, "employee_id": 20, "leave_type": "vacation", "start_date": "2026-03-09", "end_date": "2026-03-10", "status": "pending"},
        {"id": 102, "employee_id": 11, "leave_type": "sick", "start_date": "2026-03-02", "end_date": "2026-03-03", "status": "approved",
         "decided_by": INES, "decided_at": "2026-02-27T10:00:00Z"},
    ],
    "hr.reviews": [{"id": 1, "employee_id": 11, "reviewer": INES, "period": "2025-H2", "rating": 4, "summary": "Solid half."}],
}


RUNTIMES = {actor: app_runtime("hr", ROWS, persona=actor, base_time=NOW) for actor in (INES, HANNA, "outsider@else.test")}


@pytest.fixture
def as_actor():
    """``as_actor(email)``: a fresh session acting as that person; all are closed after the test."""
    with ExitStack() as opened:
        yield lambda actor: opened.enter_context(open_session(RUNTIMES[actor]))


def leave(s, id):
    return row(s, "hr.leave_requests", id)


def emp(s, id):
    return row(s, "hr.employees", id)


def test_manager_approves_and_denies_their_reports_leave(as_actor):
    s = as_actor(INES)
    r = call(s, "approve_leave_request", leave_request_id=100, note="enjoy")
    assert r.ok, r.message
    assert leave(s, 100) == {**ROWS["hr.leave_requests"][0], "status": "approved", "reason": None, "submitted_by": None,
                             "submitted_at": NOW, "decided_by": INES, "decided_at": NOW, "decision_note": "enjoy"}  # W0 left out submitted_at: its $now default
    r = call(s, "submit_leave_request", employee_id=11, leave_type="vacation", start_date="2026-03-18", end_date="2026-03-19")
    assert r.ok, r.message
    assert (r.output["created"]["id"], r.output["created"]["status"], r.output["created"]["submitted_by"]) == (103, "pending", INES)
    assert call(s, "deny_leave_request", leave_request_id=103, reason="release freeze").ok
    assert (leave(s, 103)["status"], leave(s, 103)["decision_note"]) == ("denied", "release freeze")


def test_manager_records_a_review(as_actor):
    s = as_actor(INES)
    r = call(s, "record_performance_review", employee_id=10, period="2025-H2", rating=5, summary="Shipped the billing rewrite.")
    assert r.ok, r.message
    assert r.output["created"] == {"id": 2, "employee_id": 10, "reviewer": INES, "period": "2025-H2", "rating": 5,
                                   "summary": "Shipped the billing rewrite.", "created_at": NOW}


def test_hr_changes_titles_transfers_and_terminates(as_actor):
    s = as_actor(HANNA)
    assert call(s, "update_employee_title", employee_id=10, title="Senior Software Engineer").ok
    assert call(s, "transfer_employee", employee_id=11, department="support", manager_id=3).ok
    r = call(s, "terminate_employee", employee_id=20, effective_date="2026-03-31", reason="resigned")
    assert r.ok, r.message
    assert emp(s, 10)["title"] == "Senior Software Engineer"
    assert (emp(s, 11)["department"], emp(s, 11)["manager_id"]) == ("support", 3)
    assert (emp(s, 20)["status"], emp(s, 20)["termination_date"], emp(s, 20)["termination_reason"]) == ("terminated", "2026-03-31", "resigned")


REFUSALS = [
    (INES, "submit_leave_request", {"employee_id": 99, "leave_type": "sick", "start_date": "2026-03-05", "end_date": "2026-03-05"},
     ErrorKind.NOT_FOUND, "No employee 99."),
    (INES, "submit_leave_request", {"employee_id": 40, "leave_type": "sick", "start_date": "2026-03-05", "end_date": "2026-03-05"},
     ErrorKind.INVALID_TRANSITION, "Employee 40 is terminated and cannot request leave."),
    (INES, "submit_leave_request", {"employee_id": 10, "leave_type": "vacation", "start_date": "2026-03-11", "end_date": "2026-03-13"},
     ErrorKind.CONSTRAINT_VIOLATION, "Employee 10 already has pending or approved leave overlapping 2026-03-11 to 2026-03-13."),
    (INES, "submit_leave_request", {"employee_id": 10, "leave_type": "vacation", "start_date": "2026-04-10", "end_date": "2026-04-01"},
     ErrorKind.CONSTRAINT_VIOLATION, "A leave request cannot end before it starts."),
    (INES, "approve_leave_request", {"leave_request_id": 999}, ErrorKind.NOT_FOUND, "No leave request 999."),
    (INES, "approve_leave_request", {"leave_request_id": 101}, ErrorKind.PERMISSION_DENIED, "Only the employee's manager may decide leave request 101."),
    ("outsider@else.test", "approve_leave_request", {"leave_request_id": 100}, ErrorKind.PERMISSION_DENIED, "Only the employee's manager"),
    (INES, "approve_leave_request", {"leave_request_id": 102}, ErrorKind.INVALID_TRANSITION, "Leave request 102 is not pending"),
    (INES, "deny_leave_request", {"leave_request_id": 999, "reason": "x"}, ErrorKind.NOT_FOUND, "No leave request 999."),
    (INES, "deny_leave_request", {"leave_request_id": 101, "reason": "x"}, ErrorKind.PERMISSION_DENIED, "Only the employee's manager may decide leave request 101."),
    (INES, "deny_leave_request", {"leave_request_id": 102, "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Leave request 102 is not pending"),
    (HANNA, "update_employee_title", {"employee_id": 99, "title": "x"}, ErrorKind.NOT_FOUND, "No employee 99."),
    (INES, "update_employee_title", {"employee_id": 10, "title": "x"}, ErrorKind.PERMISSION_DENIED, "Only active HR staff may change employee 10's title."),
    (HANNA, "update_employee_title", {"employee_id": 40, "title": "x"}, ErrorKind.INVALID_TRANSITION, "Employee 40 is terminated"),
    (HANNA, "transfer_employee", {"employee_id": 99, "department": "sales", "manager_id": 3}, ErrorKind.NOT_FOUND, "No employee 99."),
    (HANNA, "transfer_employee", {"employee_id": 10, "department": "sales", "manager_id": 40}, ErrorKind.NOT_FOUND, "No active employee 40 to report to."),
    (INES, "transfer_employee", {"employee_id": 10, "department": "sales", "manager_id": 3}, ErrorKind.PERMISSION_DENIED, "Only active HR staff may transfer employee 10."),
    (HANNA, "transfer_employee", {"employee_id": 40, "department": "sales", "manager_id": 3}, ErrorKind.INVALID_TRANSITION, "Employee 40 is terminated"),
    (HANNA, "transfer_employee", {"employee_id": 3, "department": "sales", "manager_id": 3}, ErrorKind.CONSTRAINT_VIOLATION, "An employee cannot be their own manager."),
    (HANNA, "terminate_employee", {"employee_id": 99, "effective_date": "2026-03-31", "reason": "x"}, ErrorKind.NOT_FOUND, "No employee 99."),
    (INES, "terminate_employee", {"employee_id": 10, "effective_date": "2026-03-31", "reason": "x"}, ErrorKind.PERMISSION_DENIED, "Only active HR staff may terminate employee 10."),
    (HANNA, "terminate_employee", {"employee_id": 40, "effective_date": "2026-03-31", "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Employee 40 is already terminated."),
    (HANNA, "terminate_employee", {"employee_id": 2, "effective_date": "2026-03-31", "reason": "x"}, ErrorKind.INVALID_TRANSITION,
     "Employee 2 still manages employees; transfer their reports first."),
    (HANNA, "terminate_employee", {"employee_id": 10, "effective_date": "2020-01-01", "reason": "x"}, ErrorKind.CONSTRAINT_VIOLATION,
     "A termination date cannot be before the hire date."),
    (INES, "record_performance_review", {"employee_id": 99, "period": "2025-H2", "rating": 3, "summary": "x"}, ErrorKind.NOT_FOUND, "No employee 99."),
    (INES, "record_performance_review", {"employee_id": 20, "period": "2025-H2", "rating": 3, "summary": "x"}, ErrorKind.PERMISSION_DENIED,
     "Only employee 20's manager may review them."),
    (HANNA, "record_performance_review", {"employee_id": 40, "period": "2025-H2", "rating": 3, "summary": "x"}, ErrorKind.PERMISSION_DENIED,
     "Only employee 40's manager may review them."),
    (INES, "record_performance_review", {"employee_id": 11, "period": "2025-H2", "rating": 3, "summary": "x"}, ErrorKind.INVALID_TRANSITION,
     "Employee 11 already has a review for 2025-H2."),
    (INES, "record_performance_review", {"employee_id": 11, "period": "2026-H1", "rating": 6, "summary": "x"}, ErrorKind.MALFORMED_ARGUMENTS,
     "'rating' must be at most 5"),
]


@pytest.mark.parametrize("actor,tool,args,kind,text", REFUSALS, ids=[f"{t}-{m[:30]}" for _, t, _, _, m in REFUSALS])
def test_refusals_name_the_problem_and_leave_the_world_unchanged(as_actor, actor, tool, args, kind, text):
    s = as_actor(actor)
    refused(s, tool, kind, text, **args)
    assert s.world.content_hash() == RUNTIMES[actor].w0_hash


def test_reviewing_a_terminated_report_is_refused():
    rows = {**ROWS, "hr.employees": [*ROWS["hr.employees"][:-1], {**ROWS["hr.employees"][-1], "manager_id": 2}]}
    with open_session(app_runtime("hr", rows, persona=INES, base_time=NOW)) as s:
        r = call(s, "record_performance_review", employee_id=40, period="2025-H2", rating=3, summary="x")
        assert (r.error, r.message) == (ErrorKind.INVALID_TRANSITION, "Employee 40 is terminated and cannot be reviewed.")


def test_reads(as_actor):
    s = as_actor(INES)
    assert [e["id"] for e in call(s, "list_employees", manager_id=2).output["items"]] == [10, 11]
    assert [e["id"] for e in call(s, "list_employees", status="terminated").output["items"]] == [40]
    assert [e["name"] for e in call(s, "search_employees", query="manager").output["items"]] == ["Ines Moreau", "Mark Olsen"]
    assert call(s, "get_employee", employee_id=30).output["department"] == "hr"
    assert [(l["id"], l["start_date"]) for l in call(s, "list_leave_requests", status="pending").output["items"]] == [
        (100, "2026-03-09"), (101, "2026-03-09")]
    assert call(s, "get_leave_request", leave_request_id=102).output["leave_type"] == "sick"
    assert [(r["period"], r["rating"]) for r in call(s, "list_performance_reviews", employee_id=11).output["items"]] == [("2025-H2", 4)]
