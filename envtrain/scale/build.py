"""From the access structure (registry + leaf rows) to what the agent meets: the generated ``res``
app (view tables, state tables, fetch and preparation tools), its W0 rows, and the access docs.

Pure functions: the same registry and rows give the same app, rows and docs, byte for byte,
which is what makes a plan replayable.
"""

from __future__ import annotations

from typing import Any

from envtrain.core.io import content_hash
from envtrain.scale.model import APP, Binding, Leaf, Registry, Resource

PAGE, NEXT, STAGE, ROW = "res_page", "res_next_page", "res_stage", "res_row"
GATE_ARGS = {"paginate": "cursor", "export": "job_id", "keygate": "access_key", "archive": "archive_session"}
FIRST_CURSOR = "start"
MAX_ROWS = 10_000  # a fetch without pages returns every row of its view in one call
_JSON_TYPES = {"integer": "integer", "number": "number", "boolean": "boolean"}


def q(text: str) -> str:
    """A string literal in the condition language."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fetch_tool(leaf: Leaf) -> str:
    return ("read_" if leaf.mode == "list" else "get_") + leaf.name


def prep_tool(leaf: Leaf, kind: str) -> str:
    return {
        "export": "prepare_{}_export",
        "stage": "advance_{}_stage",
        "index": "rebuild_{}_index",
        "archive": "open_{}_archive",
    }[kind].format(leaf.name)


def key_arg(leaf: Leaf) -> str:
    """The fetch argument naming a record of a key-mode leaf (its key column, unless that is taken)."""
    assert leaf.key is not None
    return "key" if leaf.key in GATE_ARGS.values() or leaf.key.startswith("token_") else leaf.key


def physical_rows(leaf: Leaf, payload: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Payload rows plus what the leaf's layers need in the table: row ids, stages, page cursors."""
    rows = [{ROW: i + 1, **row} for i, row in enumerate(payload)]
    stage, pages = leaf.layer("stage"), leaf.layer("paginate")
    groups = [rows]
    if stage is not None and rows:
        for i, row in enumerate(rows):
            row[STAGE] = 1 + i * stage.stages // len(rows)
        groups = [[r for r in rows if r[STAGE] == s] for s in range(1, stage.stages + 1)]
    if pages is not None:
        for g, group in enumerate(groups):
            chunks = [group[i : i + pages.page_size] for i in range(0, len(group), pages.page_size)]
            cursors = [FIRST_CURSOR] + [f"pg-{content_hash([leaf.id, g, j], length=8)}" for j in range(1, len(chunks))]
            for j, chunk in enumerate(chunks):
                for row in chunk:
                    row[PAGE] = cursors[j]
                    row[NEXT] = cursors[j + 1] if j + 1 < len(chunks) else None
    return rows


def payload_rows(leaf: Leaf, physical: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inverse of ``physical_rows``: the leaf's own columns, in row order."""
    names = [n for n, _ in leaf.columns]
    ordered = sorted(physical, key=lambda r: r[ROW])
    return [{n: r.get(n) for n in names} for r in ordered]


# --- the generated app -----------------------------------------------------------------------


def _state_entities(used: set[str]) -> dict[str, Any]:
    text, integer = {"type": "text"}, {"type": "integer"}
    entities = {
        "export_jobs": {
            "description": "export jobs (hidden state)",
            "primary_key": "job_id",
            "columns": {"job_id": integer, "leaf": text, "token": text},
        },
        "archive_sessions": {
            "description": "open archive sessions (hidden state)",
            "primary_key": "session_id",
            "columns": {"session_id": integer, "leaf": text, "token": text},
        },
        "stages": {
            "description": "release stages (hidden state)",
            "primary_key": "leaf",
            "columns": {"leaf": text, "current": integer, "last": integer, "token": text},
        },
        "indexes": {
            "description": "view indexes (hidden state)",
            "primary_key": "leaf",
            "columns": {"leaf": text, "manifest": text, "built": {"type": "boolean"}, "token": text},
        },
        "secrets": {
            "description": "access keys (hidden state)",
            "primary_key": "secret_id",
            "columns": {"secret_id": integer, "scope": text, "item": text, "value": text},
        },
    }
    table_of = {
        "export": "export_jobs",
        "archive": "archive_sessions",
        "stage": "stages",
        "index": "indexes",
        "keygate": "secrets",
    }
    return {name: spec for kind, name in table_of.items() if kind in used for spec in [entities[name]]}


def token_tool(registry: Registry, binding: Binding) -> str:
    """The preparation tool that publishes the token ``binding`` asks for (a view's or a gate's)."""
    if binding.layer == "gate":
        return registry.gate(binding.source).prep
    return prep_tool(registry.leaf(binding.source), binding.layer)


def _source_guard(binding: Binding, registry: Registry) -> dict[str, Any]:
    arg = f"$arg.{binding.arg}"
    source = q(binding.source)
    entity, where = {
        "export": ("export_jobs", [f"leaf = {source}", f"token = {arg}"]),
        "stage": ("stages", [f"leaf = {source}", "current >= 1", f"token = {arg}"]),
        "index": ("indexes", [f"leaf = {source}", "built = true", f"token = {arg}"]),
        "archive": ("archive_sessions", [f"leaf = {source}", f"token = {arg}"]),
        "gate": ("gates", [f"gate = {source}", "current >= last", f"token = {arg}"]),
    }[binding.layer]
    return {
        "entity": entity,
        "where": where,
        "error": "permission_denied",
        "message": f"{binding.arg} must be the token returned by {token_tool(registry, binding)}.",
    }


def token_requirements(layer: Any, registry: Registry) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The token parameters and guards of a preparation that ``requires`` other tokens (a layer's or a gate's)."""
    props = {
        b.arg: {"type": "string", "description": f"the token returned by {token_tool(registry, b)}"}
        for b in getattr(layer, "requires", ())
    }
    return props, [_source_guard(b, registry) for b in getattr(layer, "requires", ())]


def _tools_for(leaf: Leaf, registry: Registry, label: str) -> list[dict[str, Any]]:
    lid = q(leaf.id)
    props: dict[str, Any] = {}
    where: list[str] = []
    guards: list[dict[str, Any]] = []
    notes: list[str] = []
    tools: list[dict[str, Any]] = []
    fields = [n for n, _ in leaf.columns]
    for layer in sorted(leaf.layers, key=lambda layer: layer.kind):
        kind = layer.kind
        if kind == "paginate":
            props["cursor"] = {
                "type": "string",
                "description": f"'{FIRST_CURSOR}' for the first page, then the res_next_page of the last page read",
            }
            where.append(f"{PAGE} = $arg.cursor")
            fields.append(NEXT)
            notes.append(
                f"Returns pages of {layer.page_size} rows: pass cursor '{FIRST_CURSOR}', "
                "then each page's res_next_page until it is null."
            )
        elif kind == "export":
            props["job_id"] = {"type": "integer", "description": f"an export job from {prep_tool(leaf, 'export')}"}
            guards.append(
                {
                    "entity": "export_jobs",
                    "where": ["job_id = $arg.job_id", f"leaf = {lid}"],
                    "error": "not_found",
                    "message": f"No export job {{job_id}} for this view: call {prep_tool(leaf, 'export')} first.",
                }
            )
            notes.append(f"Needs job_id from {prep_tool(leaf, 'export')}.")
        elif kind == "stage":
            where.append(f"{STAGE} = one(stages.current where leaf = {lid})")
            guards.append(
                {
                    "entity": "stages",
                    "where": [f"leaf = {lid}", "current >= 1"],
                    "error": "invalid_transition",
                    "message": f"Nothing of this view is released yet: call {prep_tool(leaf, 'stage')}.",
                }
            )
            notes.append(
                f"Shows only the stage released last ({layer.stages} stages): {prep_tool(leaf, 'stage')} releases the next."
            )
        elif kind == "index":
            guards.append(
                {
                    "entity": "indexes",
                    "where": [f"leaf = {lid}", "built = true"],
                    "error": "invalid_transition",
                    "message": f"The index of this view is not built: call {prep_tool(leaf, 'index')} with its manifest.",
                }
            )
            notes.append(f"Needs its index rebuilt first ({prep_tool(leaf, 'index')}).")
        elif kind == "keygate":
            props["access_key"] = {"type": "string", "description": "the access key from the key directory (see the access doc)"}
            where_key = [f"scope = {q(layer.scope)}", "value = $arg.access_key"]
            if layer.per_record:
                where_key.insert(1, f"item = $arg.{key_arg(leaf)}")
            guards.append(
                {
                    "entity": "secrets",
                    "where": where_key,
                    "error": "permission_denied",
                    "message": "That access key does not open this record."
                    if layer.per_record
                    else "That access key does not open this view.",
                }
            )
            notes.append("Needs an access_key" + (" per record." if layer.per_record else "."))
        elif kind == "archive":
            props["archive_session"] = {"type": "integer", "description": f"a session from {prep_tool(leaf, 'archive')}"}
            guards.append(
                {
                    "entity": "archive_sessions",
                    "where": ["session_id = $arg.archive_session", f"leaf = {lid}"],
                    "error": "permission_denied",
                    "message": "Archive session {archive_session} is not open for this archive: "
                    f"call {prep_tool(leaf, 'archive')}.",
                }
            )
            notes.append(f"Needs an archive_session from {prep_tool(leaf, 'archive')}.")
        if kind in ("export", "stage", "index", "archive"):
            tools.append(_prep_tool(leaf, layer, registry, label))
    what = f"{label}: {leaf.role}"
    if leaf.mode == "list":
        tool = {
            "name": fetch_tool(leaf),
            "description": " ".join([f"List the rows of {what}."] + notes),
            "family": "list",
            "entity": leaf.name,
            "returns": {
                "fields": fields,
                "limit": MAX_ROWS if leaf.layer("paginate") is None else leaf.layer("paginate").page_size,
            },
        }
    else:
        arg = key_arg(leaf)
        kind = leaf.column_type(leaf.key or "")
        props = {arg: {"type": _JSON_TYPES.get(kind, "string"), "description": f"the {leaf.key} of the row"}, **props}
        where.insert(0, f"{leaf.key} = $arg.{arg}")
        tool = {
            "name": fetch_tool(leaf),
            "description": " ".join([f"Read one row of {what} by {leaf.key}."] + notes),
            "family": "read",
            "entity": leaf.name,
            "returns": {"fields": fields},
        }
    tool["parameters"] = {"type": "object", "properties": props, "required": list(props)}
    tool["where"] = where
    if guards:
        tool["preconditions"] = guards
    return [tool] + tools


def _prep_tool(leaf: Leaf, layer: Any, registry: Registry, label: str) -> dict[str, Any]:
    kind, lid = layer.kind, q(leaf.id)
    props, guards = token_requirements(layer, registry)
    what = f"{label}: {leaf.role}"
    if kind == "export":
        tool = {
            "description": f"Prepare an export of {what}; returns the job_id that {fetch_tool(leaf)} needs.",
            "family": "create",
            "effects": [{"kind": "insert", "entity": "export_jobs", "values": {"leaf": lid, "token": q(layer.token)}}],
            "returns": {"fields": ["job_id", "token"]},
        }
    elif kind == "stage":
        guards.append(
            {
                "entity": "stages",
                "where": [f"leaf = {lid}", "current < last"],
                "error": "invalid_transition",
                "message": "Every stage of this view is released already.",
            }
        )
        tool = {
            "description": f"Release the next stage of {what} (stages replace each other in {fetch_tool(leaf)}).",
            "family": "update",
            "effects": [{"kind": "update", "entity": "stages", "where": [f"leaf = {lid}"], "values": {"current": "current + 1"}}],
            "returns": {"fields": ["current", "last", "token"]},
        }
    elif kind == "index":
        props = {"manifest": {"type": "string", "description": "the manifest id named in the access doc"}, **props}
        guards.append(
            {
                "entity": "indexes",
                "where": [f"leaf = {lid}", "manifest = $arg.manifest"],
                "error": "not_found",
                "message": "No manifest {manifest} for this index.",
            }
        )
        tool = {
            "description": f"Rebuild the index of {what} from its manifest, so that {fetch_tool(leaf)} answers.",
            "family": "update",
            "effects": [{"kind": "update", "entity": "indexes", "where": [f"leaf = {lid}"], "values": {"built": "true"}}],
            "returns": {"fields": ["built", "token"]},
        }
    else:
        tool = {
            "description": f"Open the archive of {what}; returns the session_id that {fetch_tool(leaf)} takes "
            "as archive_session.",
            "family": "create",
            "effects": [{"kind": "insert", "entity": "archive_sessions", "values": {"leaf": lid, "token": q(layer.token)}}],
            "returns": {"fields": ["session_id", "token"]},
        }
    tool["name"] = prep_tool(leaf, kind)
    tool["parameters"] = {"type": "object", "properties": props, "required": list(props)}
    if guards:
        tool["preconditions"] = guards
    return tool


def res_app(registry: Registry) -> dict[str, Any] | None:
    """The generated app spec, or None before any resource is transformed."""
    if not registry.leaves:
        return None
    labels = {r.key: r.label for r in registry.resources}
    used = {layer.kind for leaf in registry.leaves for layer in leaf.layers}
    entities = _state_entities(used)
    tools: list[dict[str, Any]] = []
    for leaf in registry.leaves:
        columns = {ROW: {"type": "integer"}}
        columns.update({n: {"type": t} for n, t in leaf.columns})
        if leaf.layer("stage") is not None:
            columns[STAGE] = {"type": "integer"}
        if leaf.layer("paginate") is not None:
            columns[PAGE] = {"type": "text"}
            columns[NEXT] = {"type": "text"}
        entities[leaf.name] = {"description": f"{labels[leaf.resource]}: {leaf.role}", "primary_key": ROW, "columns": columns}
        tools.extend(_tools_for(leaf, registry, labels[leaf.resource]))
    return {
        "name": APP,
        "description": "Access views added by environment scaling: the records of transformed resources "
        "and the tools that prepare and read them (see the access docs).",
        "entities": entities,
        "tools": tools,
    }


def state_rows(registry: Registry) -> dict[str, list[dict[str, Any]]]:
    """W0 rows of the hidden state tables: one stage row per staged view, one index row per
    indexed view, and the access keys of every gate."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen_scopes: set[str] = set()
    for leaf in registry.leaves:
        for layer in leaf.layers:
            if layer.kind == "stage":
                out.setdefault(f"{APP}.stages", []).append(
                    {"leaf": leaf.id, "current": 0, "last": layer.stages, "token": layer.token}
                )
            elif layer.kind == "index":
                out.setdefault(f"{APP}.indexes", []).append(
                    {"leaf": leaf.id, "manifest": layer.manifest, "built": False, "token": layer.token}
                )
            elif layer.kind == "keygate" and layer.scope not in seen_scopes:
                seen_scopes.add(layer.scope)
                rows = out.setdefault(f"{APP}.secrets", [])
                rows.extend({"scope": layer.scope, "item": item, "value": value} for item, value in layer.keys)
    return out


def world_tables(registry: Registry, payloads: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    tables = {f"{APP}.{leaf.name}": physical_rows(leaf, payloads[leaf.id]) for leaf in registry.leaves}
    tables.update(state_rows(registry))
    return tables


def leaf_payloads(registry: Registry, tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {leaf.id: payload_rows(leaf, tables.get(f"{APP}.{leaf.name}", [])) for leaf in registry.leaves}


def resource_of(registry: Registry, key: str) -> Resource:
    found = registry.resource(key)
    if found is None:
        raise KeyError(key)
    return found
