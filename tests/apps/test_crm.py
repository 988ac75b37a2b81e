"""The crm app: accounts, contacts, a forward-only deal pipeline and activities; every refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row

ME = "nora@sales.test"
NOW = "2026-03-02T09:00:00Z"  # the first step runs at this second, each later step one second on

ROWS = {
    "crm.reps": [
        {"email": ME, "name": "Nora Lind", "team": "mid_market", "role": "rep", "active": True},
        {"email": "omar@sales.test", "name": "Omar Haddad", "team": "enterprise", "role": "rep", "active": True},
        {"email": "gone@sales.test", "name": "Former Rep", "team": "smb", "role": "rep", "active": False},
    ],
    "crm.accounts": [
        {"id": 1, "name": "Brightline Logistics", "industry": "manufacturing", "tier": "mid_market", "owner": ME,
         "annual_revenue": 48000000, "country": "US", "status": "customer"},
        {"id": 2, "name": "Cedar Health", "industry": "healthcare", "tier": "enterprise", "owner": "omar@sales.test",
         "annual_revenue": 210000000, "country": "CA", "status": "prospect"},
        {"id": 3, "name": "Old Mill Bakery", "industry": "retail", "tier": "smb", "owner": ME, "status": "churned"},
    ],
    "crm.contacts": [
        {"id": 1, "account_id": 1, "name": "Gail Turner", "email": "gail@brightline.test", "title": "VP Ops", "is_primary": True},
        {"id": 2, "account_id": 2, "name": "Raj Patel", "email": "raj@cedar.test", "title": "CIO", "is_primary": True},
    ],
    "crm.deals": [
        {"id": 10, "account_id": 1, "name": "Telematics add-on", "stage": "prospecting", "amount": 18000, "close_date": "2026-03-20", "owner": ME},
        {"id": 11, "account_id": 1, "name": "Warehouse sensors", "stage": "negotiation", "amount": 22000, "close_date": "2026-04-10", "owner": ME},
        {"id": 12, "account_id": 2, "name": "Patient portal", "stage": "closed_lost", "amount": 96000, "close_date": "2026-01-31",
         "owner": "omar@sales.test", "loss_reason": "went with a competitor"},
    ],
}


runtime, session = app_fixtures("crm", ROWS, persona=ME, base_time=NOW)


def deal(s, id):
    return row(s, "crm.deals", id)


def test_create_deal_starts_in_prospecting_owned_by_the_account_owner(session):
    r = call(session, "create_deal", account_id=2, name="Scheduling module", amount=40000, close_date="2026-06-30")
    assert r.ok, r.message
    assert r.output["created"] == {
        "id": 13, "account_id": 2, "name": "Scheduling module", "stage": "prospecting", "previous_stage": None,
        "amount": 40000, "close_date": "2026-06-30", "owner": "omar@sales.test", "loss_reason": None,
        "created_at": NOW, "updated_at": NOW,
    }
    assert len(session.world.rows("crm.deals")) == 4


def test_update_deal_stage_moves_forward_and_remembers_the_previous_stage(session):
    r = call(session, "update_deal_stage", deal_id=10, stage="proposal")  # skipping qualification is allowed
    assert r.ok, r.message
    assert deal(session, 10) == {**ROWS["crm.deals"][0], "stage": "proposal", "previous_stage": "prospecting",
                                 "loss_reason": None, "created_at": NOW, "updated_at": NOW}  # W0 rows left out created_at: its $now default, the base time
    r = call(session, "update_deal_stage", deal_id=10, stage="closed_lost", loss_reason="no budget")
    assert r.ok, r.message
    assert (deal(session, 10)["stage"], deal(session, 10)["previous_stage"], deal(session, 10)["loss_reason"]) == ("closed_lost", "proposal", "no budget")


def test_log_deal_activity_files_it_on_the_deals_account(session):
    r = call(session, "log_deal_activity", deal_id=11, kind="call", subject="Pricing follow-up", contact_id=1)
    assert r.ok, r.message
    assert session.world.rows("crm.activities") == [{
        "id": 1, "account_id": 1, "deal_id": 11, "contact_id": 1, "kind": "call", "subject": "Pricing follow-up",
        "body": None, "author": ME, "occurred_at": NOW,
    }]


def test_create_account_and_reassign_it(session):
    r = call(session, "create_account", name="Kestrel Financial", industry="finance", tier="mid_market", owner=ME, annual_revenue=75000000)
    assert r.ok, r.message
    assert r.output["created"]["id"] == 4 and r.output["created"]["status"] == "prospect"
    assert call(session, "assign_account_owner", account_id=4, owner="omar@sales.test").ok
    assert call(session, "update_account_tier", account_id=4, tier="enterprise").ok
    account = row(session, "crm.accounts", 4)
    assert (account["owner"], account["tier"], account["country"]) == ("omar@sales.test", "enterprise", None)


REFUSALS = [
    ("create_account", {"name": "Cedar Health", "industry": "healthcare", "tier": "smb", "owner": ME},
     ErrorKind.CONSTRAINT_VIOLATION, "An account named Cedar Health already exists."),
    ("create_account", {"name": "New Co", "industry": "other", "tier": "smb", "owner": "gone@sales.test"},
     ErrorKind.NOT_FOUND, "No active sales rep gone@sales.test."),
    ("create_account", {"name": "New Co", "industry": "other", "tier": "smb", "owner": ME, "annual_revenue": -5},
     ErrorKind.MALFORMED_ARGUMENTS, "'annual_revenue' must be at least 0"),
    ("add_account_contact", {"account_id": 99, "name": "X"}, ErrorKind.NOT_FOUND, "No account 99."),
    ("create_deal", {"account_id": 99, "name": "X", "amount": 10, "close_date": "2026-05-01"}, ErrorKind.NOT_FOUND, "No account 99."),
    ("create_deal", {"account_id": 3, "name": "X", "amount": 10, "close_date": "2026-05-01"},
     ErrorKind.INVALID_TRANSITION, "Account 3 has churned"),
    ("create_deal", {"account_id": 1, "name": "X", "amount": 0, "close_date": "2026-05-01"},
     ErrorKind.CONSTRAINT_VIOLATION, "A deal's amount must be greater than zero."),
    ("create_deal", {"account_id": 1, "name": "X", "amount": 10, "close_date": "May 1st"},
     ErrorKind.CONSTRAINT_VIOLATION, "crm.deals.close_date must be a date (YYYY-MM-DD)"),
    ("update_deal_stage", {"deal_id": 99, "stage": "proposal"}, ErrorKind.NOT_FOUND, "No deal 99."),
    ("update_deal_stage", {"deal_id": 12, "stage": "negotiation"}, ErrorKind.INVALID_TRANSITION, "Deal 12 is already closed"),
    ("update_deal_stage", {"deal_id": 11, "stage": "negotiation"}, ErrorKind.INVALID_TRANSITION, "Deal 11 is already at stage negotiation."),
    ("update_deal_stage", {"deal_id": 11, "stage": "proposal"}, ErrorKind.INVALID_TRANSITION, "Deal 11 cannot move back to proposal"),
    ("update_deal_stage", {"deal_id": 11, "stage": "qualification"}, ErrorKind.INVALID_TRANSITION, "Deal 11 cannot move back to qualification"),
    ("update_deal_stage", {"deal_id": 11, "stage": "closed_lost"}, ErrorKind.CONSTRAINT_VIOLATION, "A deal closed as lost needs a loss_reason."),
    ("log_account_activity", {"account_id": 99, "kind": "note", "subject": "x"}, ErrorKind.NOT_FOUND, "No account 99."),
    ("log_account_activity", {"account_id": 1, "kind": "note", "subject": "x", "contact_id": 2},
     ErrorKind.CONSTRAINT_VIOLATION, "Contact 2 does not belong to account 1."),
    ("log_deal_activity", {"deal_id": 99, "kind": "note", "subject": "x"}, ErrorKind.NOT_FOUND, "No deal 99."),
    ("log_deal_activity", {"deal_id": 10, "kind": "note", "subject": "x", "contact_id": 2},
     ErrorKind.CONSTRAINT_VIOLATION, "Contact 2 does not belong to the account of deal 10."),
    ("assign_account_owner", {"account_id": 99, "owner": ME}, ErrorKind.NOT_FOUND, "No account 99."),
    ("assign_account_owner", {"account_id": 1, "owner": "gone@sales.test"}, ErrorKind.NOT_FOUND, "No active sales rep gone@sales.test."),
    ("assign_deal_owner", {"deal_id": 99, "owner": ME}, ErrorKind.NOT_FOUND, "No deal 99."),
    ("assign_deal_owner", {"deal_id": 10, "owner": "gone@sales.test"}, ErrorKind.NOT_FOUND, "No active sales rep gone@sales.test."),
    ("assign_deal_owner", {"deal_id": 12, "owner": ME}, ErrorKind.INVALID_TRANSITION, "Deal 12 is closed; closed deals keep their owner."),
    ("update_account_tier", {"account_id": 99, "tier": "smb"}, ErrorKind.NOT_FOUND, "No account 99."),
    ("update_account_tier", {"account_id": 1, "tier": "mid_market"}, ErrorKind.INVALID_TRANSITION, "Account 1 is already in tier mid_market."),
]


@pytest.mark.parametrize("tool,args,kind,text", REFUSALS, ids=[f"{t}-{m[:30]}" for t, _, _, m in REFUSALS])
def test_refusals_name_the_problem_and_leave_the_world_unchanged(runtime, session, tool, args, kind, text):
    refused(session, tool, kind, text, **args)
    assert session.world.content_hash() == runtime.w0_hash


def test_reads(session):
    r = call(session, "list_deals", owner=ME)
    assert [(d["id"], d["stage"]) for d in r.output["items"]] == [(10, "prospecting"), (11, "negotiation")]  # by close date
    assert r.output["next_offset"] is None
    assert [a["name"] for a in call(session, "search_accounts", query="health").output["items"]] == ["Cedar Health"]
    assert [a["id"] for a in call(session, "list_accounts", status="customer").output["items"]] == [1]
    assert call(session, "get_account", account_id=2).output["owner"] == "omar@sales.test"
    assert call(session, "get_deal", deal_id=12).output["loss_reason"] == "went with a competitor"
    assert call(session, "get_deal", deal_id=99).error == ErrorKind.NOT_FOUND
    assert [c["name"] for c in call(session, "list_account_contacts", account_id=1).output["items"]] == ["Gail Turner"]
    assert [r["email"] for r in call(session, "list_sales_reps").output["items"]] == [ME, "omar@sales.test"]
    assert call(session, "list_account_activities", account_id=1).output["items"] == []
