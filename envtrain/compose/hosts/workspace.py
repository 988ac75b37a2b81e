"""workspace: items are files in inbox/; the carrier is a policy file; reports are files too."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, clause, details, slug
from envtrain.compose.hosts.base import Action, Carrier, Host, Report, pick

ROUTES = ("priority", "standard", "hold")


class Move(Action):
    kind = "move file"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(ROUTES), n)

    def phrase(self, value):
        return f"move it into the {value}/ folder (same file name)"

    def done(self, value):
        return f"moved to {value}/"

    def apply(self, ctx, item, value):
        target = f"{value}/{item.key}.md"
        ctx.call("move_file", source=item.extra["path"], target=target)
        ctx.expect("file moved", f"{item.key} moved to {value}/ ({item.why})", "files",
                   [clause("path", "=", target), clause("content", "contains", item.key)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Delete(Action):
    kind = "delete file"

    def values(self, ctx, n):
        return ["delete"]

    def phrase(self, value):
        return "delete it"

    def done(self, value):
        return "deleted"

    def apply(self, ctx, item, value):
        ctx.call("delete_file", path=item.extra["path"])
        ctx.expect("file absent", f"{item.key} deleted ({item.why})", "files", [clause("path", "=", item.extra["path"])], "= 0")

    def untouched(self, ctx, item):
        _untouched(ctx, item)


def _untouched(ctx: BuildContext, item) -> None:
    ctx.forbid("record untouched", f"{item.key} stays where it is ({item.why})", "files",
               [clause("path", "=", item.extra["path"]), clause("content", "contains", item.key)])


class Files(Host):
    app = "workspace"
    noun = "file"
    plural = "files"
    scoped = "file in the inbox/ folder"
    scoped_plural = "files in the inbox/ folder"
    actions = {a.kind: a for a in (Move, Delete)}

    def seed(self, ctx, items, attrs):
        for item in items:
            path = f"{'inbox' if item.in_scope else 'done'}/{item.key}.md"
            head = f"{item.key}: {item.label}" if item.label != item.key else item.key
            ctx.files[path] = f"# {head}\n{details(item, attrs)}\n"
            item.rid, item.extra["path"] = path, path

    def where(self, ctx):
        return "the files in the inbox/ folder of the workspace"

    def reads(self, ctx, items):
        ctx.call("list_files", prefix="inbox/")
        for item in items:
            if item.in_scope:
                ctx.call("read_file", path=item.extra["path"])


class PolicyFile(Carrier):
    app = "workspace"
    carrier = "policy document"

    def place(self, ctx, title, text):
        path = f"policies/{slug(title, 40)}.md"
        ctx.files[path] = f"# {title}\n\n{text}\n"
        ctx.stated.append(text)
        ctx.call("read_file", path=path)
        return f"the policy file {path} in the workspace"

    def place_reference(self, ctx, title, lines):
        path = f"policies/{slug(title, 40)}.txt"
        ctx.files[path] = "\n".join(lines) + "\n"
        ctx.stated.append("\n".join(lines))
        ctx.call("read_file", path=path)
        return f"the reference file {path}"


class WriteReport(Report):
    app = "workspace"
    kind = "write file"

    def setup(self, ctx):
        self.path = f"reports/{slug(ctx.title, 24)}-summary.md"

    def instruction(self, ctx, selection):
        return f"Afterwards, write the file {self.path} listing the key of {selection}, one per line."

    def ask(self):
        return "write the report file the policy asks for"

    def apply(self, ctx, reported, others, noun):
        ctx.call("write_file", path=self.path, content="\n".join(i.key for i in reported) + "\n")
        _listed(ctx, self.path, reported, others)


class AppendLog(Report):
    app = "workspace"
    kind = "append to file"

    def setup(self, ctx):
        self.path = f"logs/{slug(ctx.title, 24)}-log.md"
        ctx.files[self.path] = "# Handled records\n"

    def instruction(self, ctx, selection):
        return f"Afterwards, append the key of {selection} to the log file {self.path}, one per line."

    def ask(self):
        return "update the log file the policy names"

    def apply(self, ctx, reported, others, noun):
        ctx.call("append_file", path=self.path, content="\n".join(i.key for i in reported) + "\n")
        _listed(ctx, self.path, reported, others)


def _listed(ctx: BuildContext, path: str, reported, others) -> None:
    for item in reported:
        ctx.expect("file written with terms", f"{path} lists {item.key}", "files",
                   [clause("path", "=", path), clause("content", "contains", item.key)])
    for item in others:
        ctx.forbid("nothing sent about", f"{path} does not list {item.key} ({item.why})", "files",
                   [clause("path", "=", path), clause("content", "contains", item.key)], "= 0")


