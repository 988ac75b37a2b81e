"""Python handlers: only for what a declarative effect cannot say (the file workspace's operations).

Files live in the world's ``files`` table, so snapshot, reset and hashing cover them like rows.
"""

from __future__ import annotations

import posixpath
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from envtrain.core.errors import ErrorKind, ToolError
from envtrain.core.runtime import Handler, ToolContext

MAX_FILE_CHARS = 200_000


def _path(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, "a path is a non-empty string such as 'reports/q3.md'")
    path = posixpath.normpath(raw.strip().lstrip("/"))
    if path.startswith("..") or path == ".":
        raise ToolError(ErrorKind.PERMISSION_DENIED, f"path {raw!r} is outside the workspace")
    return path


def _content(ctx: ToolContext, path: str) -> str:
    row = ctx.world.conn.execute('SELECT content FROM "files" WHERE path = ?', (path,)).fetchone()
    if row is None:
        raise ToolError(ErrorKind.NOT_FOUND, f"no file {path!r} (list_files shows what exists)")
    return row[0]


def _store(ctx: ToolContext, path: str, content: Any) -> None:
    if not isinstance(content, str):
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, "content is a string")
    if len(content) > MAX_FILE_CHARS:
        raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, f"a file holds at most {MAX_FILE_CHARS} characters")
    ctx.world.conn.execute('INSERT OR REPLACE INTO "files" (path, content) VALUES (?, ?)', (path, content))


def read_file(ctx: ToolContext, args: dict[str, Any]) -> Any:
    path = _path(args.get("path"))
    return {"path": path, "content": _content(ctx, path)}


def write_file(ctx: ToolContext, args: dict[str, Any]) -> Any:
    path = _path(args.get("path"))
    existed = ctx.world.conn.execute('SELECT 1 FROM "files" WHERE path = ?', (path,)).fetchone() is not None
    if existed and not args.get("overwrite", False):
        raise ToolError(ErrorKind.INVALID_TRANSITION, f"file {path!r} exists; pass overwrite=true to replace it")
    _store(ctx, path, args.get("content"))
    return {"path": path, "written": len(args.get("content", "")), "replaced": existed}


def append_file(ctx: ToolContext, args: dict[str, Any]) -> Any:
    path = _path(args.get("path"))
    row = ctx.world.conn.execute('SELECT content FROM "files" WHERE path = ?', (path,)).fetchone()
    _store(ctx, path, (row[0] if row else "") + str(args.get("content", "")))
    return {"path": path, "appended": len(str(args.get("content", "")))}


def list_files(ctx: ToolContext, args: dict[str, Any]) -> Any:
    prefix = (args.get("prefix") or "").lstrip("/")
    rows = ctx.world.conn.execute(
        'SELECT path, length(content) FROM "files" WHERE substr(path, 1, length(?)) = ? ORDER BY path', (prefix, prefix)
    ).fetchall()
    return {"items": [{"path": p, "size": n} for p, n in rows], "next_offset": None}


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> Any:
    path = _path(args.get("path"))
    _content(ctx, path)
    ctx.world.conn.execute('DELETE FROM "files" WHERE path = ?', (path,))
    return {"deleted": path}


def move_file(ctx: ToolContext, args: dict[str, Any]) -> Any:
    source, target = _path(args.get("source")), _path(args.get("target"))
    content = _content(ctx, source)
    if ctx.world.conn.execute('SELECT 1 FROM "files" WHERE path = ?', (target,)).fetchone():
        raise ToolError(ErrorKind.INVALID_TRANSITION, f"file {target!r} already exists")
    ctx.world.conn.execute('DELETE FROM "files" WHERE path = ?', (source,))
    _store(ctx, target, content)
    return {"moved": source, "to": target}


def search_files(ctx: ToolContext, args: dict[str, Any]) -> Any:
    query = args.get("query")
    if not isinstance(query, str) or not query:
        raise ToolError(ErrorKind.MISSING_FIELD, "missing required field 'query'")
    rows = ctx.world.conn.execute(
        'SELECT path, content FROM "files" WHERE instr(lower(content), lower(?)) > 0 ORDER BY path', (query,)
    ).fetchall()
    hits = []
    for path, content in rows:
        lines = [f"{i}: {line}" for i, line in enumerate(content.splitlines(), 1) if query.lower() in line.lower()]
        hits.append({"path": path, "lines": lines[:20]})
    return {"items": hits, "next_offset": None}


# Handler families by name prefix: "files.read" comes from builtin_handlers, "bfcl.GorillaFileSystem.ls" from
# BFCL's adapter. Read-only; a family's module is imported only when an environment names one of its handlers.
HANDLER_PROVIDERS: Mapping[str, str] = MappingProxyType({
    "files": "envtrain.apps.handlers:builtin_handlers",
    "bfcl": "envtrain.bench.bfcl.env:bfcl_handlers",
    "shell": "envtrain.sandbox.shell:shell_handlers",  # commands in a sandbox over the world's files
})


def handlers_for(names: Iterable[str]) -> Mapping[str, Handler]:
    """Every handler the named tools need, loading only the families they come from."""
    import importlib

    out: dict[str, Handler] = dict(builtin_handlers())
    for family in sorted({name.split(".", 1)[0] for name in names} - {"files"}):
        provider = HANDLER_PROVIDERS.get(family)
        if provider is None:
            continue  # the runtime reports the unregistered handler by name
        module, _, function = provider.partition(":")
        out.update(getattr(importlib.import_module(module), function)())
    return MappingProxyType(out)


def builtin_handlers() -> Mapping[str, Handler]:
    return MappingProxyType({
        "files.read": read_file,
        "files.write": write_file,
        "files.append": append_file,
        "files.list": list_files,
        "files.delete": delete_file,
        "files.move": move_file,
        "files.search": search_files,
    })
