"""crm: items are customer accounts (their attributes in a profile note); the carrier is a note."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, Carrier, Host, left_alone, pick, stamp, term

TIERS = ("strategic", "enterprise", "mid_market")  # accounts start in smb


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("crm")
    if state is None:
        ctx.add("crm.reps", {"email": ctx.persona["email"], "name": "Operations manager", "team": "enterprise", "role": "manager"}, key=None)
        desks = []
        for team in ("enterprise", "mid_market", "smb"):
            desks.append(ctx.add("crm.reps", {"email": ctx.email(f"{team.replace('_', '-')}-desk"), "name": f"{team} desk",
                                              "team": team, "role": "rep"}, key=None)["email"])
        owner = ctx.add("crm.reps", {"email": ctx.email("accounts"), "name": "Accounts desk", "team": "smb", "role": "rep"}, key=None)
        state = ctx.scaffold["crm"] = {"desks": desks, "owner": owner["email"], "names": set()}
    return state


def _account(ctx: BuildContext, name: str, status: str) -> dict:
    state = _setup(ctx)
    state["names"].add(name)
    return ctx.add("crm.accounts", {"name": name, "industry": "other", "tier": "smb", "owner": state["owner"], "status": status,
                                    "created_at": stamp(ctx), "updated_at": stamp(ctx)})


def _untouched(ctx: BuildContext, item: Item) -> None:
    left_alone(ctx, item, "account", "crm.accounts")


class Tier(Action):
    kind = "update record field"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(TIERS), n)

    def phrase(self, value):
        return f"set its tier to {value}"

    def done(self, value):
        return f"moved to the {value} tier"

    def apply(self, ctx, item, value):
        ctx.call("update_account_tier", account_id=item.rid, tier=value)
        ctx.expect("record field equals", f"account {item.key} tier {value} ({item.why})", "crm.accounts",
                   [clause("id", "=", item.rid), clause("tier", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Owner(Action):
    kind = "assign record"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(_setup(ctx)["desks"]), n)

    def phrase(self, value):
        return f"make {value} its owner"

    def done(self, value):
        return f"assigned to {value}"

    def apply(self, ctx, item, value):
        ctx.call("assign_account_owner", account_id=item.rid, owner=value)
        ctx.expect("record field equals", f"account {item.key} owned by {value} ({item.why})", "crm.accounts",
                   [clause("id", "=", item.rid), clause("owner", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Note(Action):
    kind = "add note"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"log a note on it with the subject '{value}'"

    def done(self, value):
        return f"given the note '{value}'"

    def apply(self, ctx, item, value):
        ctx.call("log_account_activity", account_id=item.rid, kind="note", subject=value)
        ctx.expect("comment with terms", f"account {item.key} has the note ({item.why})", "crm.activities",
                   [clause("account_id", "=", item.rid), clause("kind", "=", "note"), clause("subject", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"nothing logged on account {item.key} ({item.why})", "crm.activities",
                   [clause("account_id", "=", item.rid), clause("author", "=", ctx.persona["email"])], "= 0")


class Accounts(Host):
    app = "crm"
    noun = "account"
    plural = "accounts"
    scoped = "customer account"
    scoped_plural = "customer accounts"
    actions = {a.kind: a for a in (Tier, Owner, Note)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        for item in items:
            name = f"{item.key} {item.label}" if item.label != item.key else item.key
            row = _account(ctx, name, "customer" if item.in_scope else "churned")
            ctx.add("crm.activities", {"account_id": row["id"], "kind": "note", "subject": "Profile", "body": details(item, attrs),
                                       "author": ctx.email("records"), "occurred_at": stamp(ctx)})
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)

    def where(self, ctx):
        return "the customer accounts in the CRM (each account's profile is in its Profile note)"

    def reads(self, ctx, items):
        ctx.call("list_accounts", status="customer")
        for item in items:
            if item.in_scope:
                ctx.call("list_account_activities", account_id=item.rid)


class NoteField(Carrier):
    app = "crm"
    carrier = "note field"

    def _holder(self, ctx: BuildContext) -> dict:
        state = _setup(ctx)
        if "holder" not in state:
            state["holder"] = _account(ctx, f"{ctx.short(40)} operations", "prospect")
        return state["holder"]

    def place(self, ctx, title, text):
        holder = self._holder(ctx)
        ctx.add("crm.activities", {"account_id": holder["id"], "kind": "note", "subject": title, "body": text,
                                   "author": ctx.email("policy"), "occurred_at": ctx.time(days=-20)})
        ctx.stated.append(text)
        ctx.call("search_accounts", query=holder["name"][:20])
        ctx.call("list_account_activities", account_id=holder["id"])
        return f'the "{title}" note on the "{holder["name"]}" account in the CRM'

    def place_reference(self, ctx, title, lines):
        holder = self._holder(ctx)
        ctx.add("crm.activities", {"account_id": holder["id"], "kind": "note", "subject": title, "body": "\n".join(lines),
                                   "author": ctx.email("policy"), "occurred_at": ctx.time(days=-19)})
        ctx.stated.append("\n".join(lines))
        return f'the "{title}" note on the "{holder["name"]}" account'
