"""wiki: items are draft pages of a records space; the carrier is a published policy page."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, AddComment, Carrier, Host, Report, left_alone, stamp


def _space(ctx: BuildContext, key: str, name: str, *, editor: bool) -> str:
    spaces = ctx.scaffold.setdefault("wiki", {"spaces": set()})["spaces"]
    if key not in spaces:
        ctx.add("wiki.spaces", {"key": key, "name": name}, key=None)
        if editor:
            ctx.add("wiki.editors", {"space": key, "email": ctx.persona["email"]})
        spaces.add(key)
    return key


def _page(ctx: BuildContext, space: str, title: str, body: str, status: str, author: str) -> dict:
    return ctx.add("wiki.pages", {"space": space, "title": title, "body": body, "version": 1, "status": status, "author": author,
                                  "created_at": stamp(ctx), "updated_at": stamp(ctx),
                                  "published_at": stamp(ctx) if status == "published" else None})


def _untouched(ctx: BuildContext, item: Item) -> None:
    left_alone(ctx, item, "page", "wiki.pages")


class Archive(Action):
    kind = "archive record"

    def values(self, ctx, n):
        return ["archive"]

    def phrase(self, value):
        return "archive it"

    def done(self, value):
        return "archived"

    def apply(self, ctx, item, value):
        ctx.call("archive_page", page_id=item.rid)
        ctx.expect("status transition", f"page {item.key} archived ({item.why})", "wiki.pages",
                   [clause("id", "=", item.rid), clause("status", "=", "archived")])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Publish(Action):
    kind = "publish document"

    def values(self, ctx, n):
        return ["publish"]

    def phrase(self, value):
        return "publish it"

    def done(self, value):
        return "published"

    def apply(self, ctx, item, value):
        ctx.call("publish_page", page_id=item.rid)
        ctx.expect("status transition", f"page {item.key} published ({item.why})", "wiki.pages",
                   [clause("id", "=", item.rid), clause("status", "=", "published")])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Comment(AddComment):
    call, table, column = "comment_on_page", "wiki.comments", "page_id"


class Pages(Host):
    app = "wiki"
    noun = "page"
    plural = "pages"
    scoped = "draft page in the REC space"
    scoped_plural = "draft pages in the REC space"
    actions = {a.kind: a for a in (Archive, Publish, Comment)}

    def setup(self, ctx):
        _space(ctx, "REC", f"{ctx.short(40)} records", editor=True)

    def seed(self, ctx, items, attrs):
        for item in items:
            title = f"{item.key} {item.label}" if item.label != item.key else item.key
            row = _page(ctx, "REC", title, details(item, attrs), "draft" if item.in_scope else "published", ctx.email("records"))
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)

    def where(self, ctx):
        return "the draft pages in the REC space of the wiki"

    def reads(self, ctx, items):
        ctx.call("list_pages", space="REC", status="draft")
        for item in items:
            if item.in_scope:
                ctx.call("read_page", page_id=item.rid)


class PolicyPage(Carrier):
    app = "wiki"
    carrier = "policy document"

    def place(self, ctx, title, text):
        space = _space(ctx, "POL", "Policies", editor=False)
        row = _page(ctx, space, title, text, "published", ctx.email("policy"))
        ctx.stated.append(text)
        ctx.call("list_pages", space=space)
        ctx.call("read_page", page_id=row["id"])
        return f'the "{title}" page in the POL space of the wiki'

    def place_reference(self, ctx, title, lines):
        space = _space(ctx, "POL", "Policies", editor=False)
        row = _page(ctx, space, title, "\n".join(lines), "published", ctx.email("policy"))
        ctx.stated.append("\n".join(lines))
        ctx.call("read_page", page_id=row["id"])
        return f'the "{title}" page in the POL space'


class SummaryPage(Report):
    app = "wiki"
    kind = "create document"

    def setup(self, ctx):
        _space(ctx, "RPT", "Reports", editor=True)
        self.title = f"{ctx.short(30)} summary"

    def instruction(self, ctx, selection):
        return f'Afterwards, create a page titled "{self.title}" in the RPT space whose body lists the key of {selection}.'

    def ask(self):
        return "create the summary page the policy asks for"

    def apply(self, ctx, reported, others, noun):
        ctx.call("create_page", space="RPT", title=self.title, body="\n".join(i.key for i in reported))
        for item in reported:
            ctx.expect("page created with terms", f"summary page lists {item.key}", "wiki.pages",
                       [clause("space", "=", "RPT"), clause("title", "=", self.title), clause("body", "contains", item.key)])
        for item in others:
            ctx.forbid("nothing sent about", f"summary page does not list {item.key} ({item.why})", "wiki.pages",
                       [clause("space", "=", "RPT"), clause("title", "=", self.title), clause("body", "contains", item.key)], "= 0")
