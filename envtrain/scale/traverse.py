"""The public restoration procedure: a model-free traversal that recovers original records
through the environment's public tools only.

It follows the access tree of each transformed resource (the same tree the access docs state)
in one session: prepares exports, rebuilds indexes, opens archives, advances stages, looks up
access keys, follows page cursors, resolves references and bridged ids, joins halves, keeps
authoritative versions; and it opens the tool gates (enable, load a manifest, run every setup
step). Every piece of data it uses comes from a tool call's output; the tree only says which
calls to make (what the docs say). The successful calls, in order, are the restoration prefix of
the extended reference solution.

A failure names the validation check it breaks: ``termination`` (a preparation that is refused,
never advances, loops, or exceeds the call bound), ``references`` (a reference, mapping, route,
key or detail that resolves to nothing), ``records`` (a view that cannot be read whole).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envtrain.core.env import Call
from envtrain.core.session import Runtime, Session
from envtrain.scale.build import FIRST_CURSOR, NEXT, fetch_tool, key_arg, prep_tool
from envtrain.scale.gates import gates_in_use_order
from envtrain.scale.model import APP, Binding, Gate, Leaf, Registry


class TraversalError(Exception):
    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check
        self.message = message


class Traversal:
    """One session's restoration state: what is prepared, which tokens are known, rows read."""

    def __init__(self, session: Session, registry: Registry, *, bound: int) -> None:
        self.session = session
        self.registry = registry
        self.bound = bound
        self.leaves = {leaf.id: leaf for leaf in registry.leaves}
        self.gates = {gate.id: gate for gate in registry.gates}
        self.calls: list[Call] = []
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._prepared: dict[tuple[str, str], tuple[Any, str]] = {}
        self._active: set[str] = set()
        self._resolving: set[tuple[str, str]] = set()

    # -- calls ----------------------------------------------------------------------------------

    def call(self, tool: str, args: dict[str, Any], check: str) -> Any:
        if len(self.calls) >= self.bound:
            raise TraversalError("termination", f"the restoration did not finish within {self.bound} tool calls")
        result = self.session.step({"tool": tool, "arguments": args})
        if not result.ok:
            kind = result.error.value if result.error else "error"
            raise TraversalError(check, f"{tool}({_show(args)}) was refused: {kind}: {result.message}")
        self.calls.append(Call(tool=tool, arguments=dict(args)))
        return result.output

    # -- records of a subtree -------------------------------------------------------------------

    def records(self, resource_key: str) -> list[dict[str, Any]]:
        resource = self.registry.resource(resource_key)
        assert resource is not None
        return self.rows(resource.tree)

    def rows(self, node: Any) -> list[dict[str, Any]]:
        kind = node.kind
        if kind == "leaf":
            leaf = self.leaves.get(node.leaf)
            if leaf is None:
                raise TraversalError("references", f"the tree names view {node.leaf}, which does not exist")
            if leaf.mode != "list":
                raise TraversalError("references", f"view {leaf.name} is read by key, not listed")
            return [dict(r) for r in self.fetch(leaf)]
        if kind == "parts":
            return [row for part in node.parts for row in self.rows(part)]
        if kind == "routed":
            return self._routed(node)
        if kind == "join":
            return self._join(node)
        if kind == "detail":
            out = []
            for summary in self.rows(node.summary):
                out.append({**summary, **self.lookup(node.detail, summary[node.key])})
            return out
        if kind == "intersect":
            candidates = self.rows(node.candidates)
            valid = [r[node.key] for r in self.rows(node.valid)]
            known = {_k(r[node.key]) for r in candidates}
            missing = [v for v in valid if _k(v) not in known]
            if missing:
                raise TraversalError("references", f"the validity list names {node.key} {missing[:3]} that no candidate has")
            keep = {_k(v) for v in valid}
            return [r for r in candidates if _k(r[node.key]) in keep]
        return self.decode(node.step, self.rows(node.child))

    def lookup(self, node: Any, value: Any) -> dict[str, Any]:
        """One row of a key-mode subtree (a leaf read by key under decode steps)."""
        if node.kind == "leaf":
            leaf = self.leaves.get(node.leaf)
            if leaf is None or leaf.mode != "key":
                raise TraversalError("references", f"view {node.leaf} cannot be read by key")
            return self.get(leaf, value)
        if node.kind == "decode":
            return self.decode(node.step, [self.lookup(node.child, value)])[0]
        raise TraversalError("references", f"a {node.kind} node cannot be read by key")

    def _routed(self, node: Any) -> list[dict[str, Any]]:
        backends = dict(node.backends)
        routes = self.rows(node.routes)
        named = [r.get("backend") for r in routes]
        if sorted(map(str, named)) != sorted(backends) or len(set(named)) != len(named):
            raise TraversalError("references", f"the routing table names backends {named}, the views are {sorted(backends)}")
        out = []
        for route in routes:
            rows = self.rows(backends[route["backend"]])
            for row in rows:
                value = row.get(node.key)
                if value is None or not (route["first_key"] <= value <= route["last_key"]):
                    raise TraversalError(
                        "references",
                        f"backend {route['backend']} holds {node.key} {value!r} outside its route "
                        f"[{route['first_key']!r}, {route['last_key']!r}]",
                    )
            out.extend(rows)
        return out

    def _join(self, node: Any) -> list[dict[str, Any]]:
        left, right = self.rows(node.left), self.rows(node.right)
        index: dict[Any, dict[str, Any]] = {}
        for row in right:
            if _k(row[node.key]) in index:
                raise TraversalError("references", f"{node.key} {row[node.key]!r} appears twice in the second half")
            index[_k(row[node.key])] = row
        out = []
        for row in left:
            other = index.pop(_k(row[node.key]), None)
            if other is None:
                raise TraversalError("references", f"{node.key} {row[node.key]!r} of the first half has no second half")
            merged = {**row, **other}
            for field, a, b in node.concat:
                head, tail = merged.pop(a), merged.pop(b)
                merged[field] = None if head is None and tail is None else (head or "") + (tail or "")
            out.append(merged)
        if index:
            raise TraversalError("references", f"second-half rows {list(index)[:3]} match no first-half row")
        return out

    # -- decode steps ---------------------------------------------------------------------------

    def decode(self, step: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kind = step.kind
        if kind == "numeric":
            for row in rows:
                row[step.field] = _decode_number(step, row.pop(step.column))
            return rows
        if kind == "refs":
            cache: dict[Any, Any] = {}
            for row in rows:
                ref = row.pop(step.column)
                if ref is not None and _k(ref) not in cache:
                    cache[_k(ref)] = self.lookup(step.lookup, ref).get("value")
                row[step.field] = None if ref is None else cache[_k(ref)]
            return rows
        if kind == "bridge":
            mapping: dict[Any, Any] = {}
            for m in self.rows(step.mapping):
                mapping[_k(m[step.column])] = m[step.field]
            for row in rows:
                ext = row.pop(step.column)
                if _k(ext) not in mapping:
                    raise TraversalError("references", f"external id {ext!r} has no entry in the mapping")
                row[step.field] = mapping[_k(ext)]
            return rows
        if kind == "rename":
            names = {m["column"]: m["field"] for m in self.rows(step.catalog)}
            out = []
            for row in rows:
                unknown = [c for c in row if c not in names]
                if unknown:
                    raise TraversalError("references", f"columns {unknown} are not in the external schema")
                out.append({names[c]: v for c, v in row.items()})
            return out
        best: dict[Any, dict[str, Any]] = {}
        tie: set[Any] = set()
        for row in rows:
            key = _k(row[step.key])
            seen = best.get(key)
            if seen is None or row[step.revision] > seen[step.revision]:
                best[key] = row
                tie.discard(key)
            elif row[step.revision] == seen[step.revision]:
                tie.add(key)
        if tie:
            raise TraversalError("references", f"{step.key} {sorted(tie, key=str)[:3]} has two rows at its highest revision")
        out = []
        for row in best.values():
            row = dict(row)
            row.pop(step.revision)
            out.append(row)
        return out

    # -- leaves ---------------------------------------------------------------------------------

    def fetch(self, leaf: Leaf) -> list[dict[str, Any]]:
        """Every row of a list-mode view, memoised: later nodes and tokens reuse the same reads."""
        if leaf.id in self._rows:
            return self._rows[leaf.id]
        if leaf.id in self._active:
            raise TraversalError("termination", f"reading {leaf.name} needs itself (a prerequisite cycle)")
        self._active.add(leaf.id)
        try:
            args = self._gates(leaf, None)
            stage = leaf.layer("stage")
            if stage is None:
                rows = self._pages(leaf, args)
            else:
                rows = []
                for number in range(1, stage.stages + 1):
                    self._advance(leaf, stage, number)
                    rows.extend(self._pages(leaf, args))
        finally:
            self._active.discard(leaf.id)
        self._rows[leaf.id] = rows
        return rows

    def get(self, leaf: Leaf, value: Any) -> dict[str, Any]:
        args = self._gates(leaf, value)
        args[key_arg(leaf)] = value
        row = self.call(fetch_tool(leaf), args, "references")
        return {n: row.get(n) for n, _ in leaf.columns}

    def _pages(self, leaf: Leaf, args: dict[str, Any]) -> list[dict[str, Any]]:
        names = [n for n, _ in leaf.columns]
        tool = fetch_tool(leaf)
        if leaf.layer("paginate") is None:
            out = self.call(tool, args, "records")
            if out.get("next_offset") is not None:
                raise TraversalError("records", f"{tool} returns only part of its rows in one call and has no pages")
            return [{n: item.get(n) for n in names} for item in out["items"]]
        rows: list[dict[str, Any]] = []
        cursor: str | None = FIRST_CURSOR
        seen = set()
        while cursor is not None:
            if cursor in seen:
                raise TraversalError("termination", f"the pages of {tool} loop back to cursor {cursor!r}")
            seen.add(cursor)
            items = self.call(tool, {**args, "cursor": cursor}, "records")["items"]
            rows.extend({n: item.get(n) for n in names} for item in items)
            cursor = items[-1].get(NEXT) if items else None
        return rows

    def _advance(self, leaf: Leaf, stage: Any, number: int) -> None:
        tokens = {b.arg: self.token(b) for b in stage.requires}
        out = self.call(prep_tool(leaf, "stage"), tokens, "termination")
        item = out["items"][0]
        if item.get("current") != number:
            raise TraversalError(
                "termination", f"{prep_tool(leaf, 'stage')} did not release stage {number} (now {item.get('current')})"
            )
        self._prepared.setdefault((leaf.id, "stage"), (number, item.get("token")))

    def _gates(self, leaf: Leaf, item: Any) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for layer in leaf.layers:
            kind = layer.kind
            if kind in ("export", "archive", "index"):
                value, _ = self.prepare(leaf, kind)
                if kind == "export":
                    args["job_id"] = value
                elif kind == "archive":
                    args["archive_session"] = value
            elif kind == "keygate":
                args["access_key"] = self._access_key(layer, item)
        return args

    def prepare(self, leaf: Leaf, kind: str) -> tuple[Any, str]:
        """Run a preparation once per session; returns (job or session id, published token)."""
        key = (leaf.id, kind)
        if key in self._prepared:
            return self._prepared[key]
        if key in self._resolving:
            raise TraversalError("termination", f"{prep_tool(leaf, kind)} needs its own token (a prerequisite cycle)")
        self._resolving.add(key)
        try:
            layer = leaf.layer(kind)
            args = {b.arg: self.token(b) for b in layer.requires}
            if kind == "index":
                args["manifest"] = layer.manifest
            out = self.call(prep_tool(leaf, kind), args, "termination")
        finally:
            self._resolving.discard(key)
        if kind == "index":
            item = out["items"][0]
            result = (True, item.get("token"))
        else:
            row = out["created"]
            result = (row.get("job_id", row.get("session_id")), row.get("token"))
        self._prepared[key] = result
        return result

    def open_gate(self, gate: Gate) -> str:
        """Open a tool gate once per session (its bound tokens first); returns the token it publishes."""
        key = (gate.id, "gate")
        if key in self._prepared:
            return self._prepared[key][1]
        if key in self._resolving:
            raise TraversalError("termination", f"{gate.prep} needs its own token (a prerequisite cycle)")
        self._resolving.add(key)
        try:
            tokens = {b.arg: self.token(b) for b in gate.requires}
            if gate.kind == "manifest":
                tokens = {"manifest": gate.manifest, **tokens}
            for number in range(1, (gate.stages if gate.kind == "stage" else 1) + 1):
                item = self.call(gate.prep, tokens, "termination")["items"][0]
                if gate.kind == "stage" and item.get("current") != number:
                    raise TraversalError("termination", f"{gate.prep} did not run setup step {number} (now {item.get('current')})")
            if item.get("current") != item.get("last"):
                raise TraversalError("termination", f"{gate.prep} left {gate.tool} closed (step {item.get('current')} of {item.get('last')})")
        finally:
            self._resolving.discard(key)
        self._prepared[key] = (True, item.get("token"))
        return item.get("token")

    def token(self, binding: Binding) -> str:
        if binding.layer == "gate":
            gate = self.gates.get(binding.source)
            if gate is None:
                raise TraversalError("references", f"{binding.arg} names gate {binding.source}, which does not exist")
            return self.open_gate(gate)
        source = self.leaves.get(binding.source)
        if source is None or source.layer(binding.layer) is None:
            raise TraversalError("references", f"{binding.arg} names a {binding.layer} of view {binding.source}, which has none")
        if binding.layer == "stage":
            if (source.id, "stage") not in self._prepared:
                self.fetch(source)  # advancing a stage releases rows: read them as it goes
            return self._prepared[(source.id, "stage")][1]
        return self.prepare(source, binding.layer)[1]

    def _access_key(self, layer: Any, item: Any) -> str:
        if layer.directory is None:
            for key_item, value in layer.keys:
                if key_item is None or key_item == str(item):
                    return value
            raise TraversalError("references", f"no access key is stated for {item!r}")
        if layer.per_record:
            return self.lookup(layer.directory, item).get("access_key")
        for row in self.rows(layer.directory):
            if row.get("entry") == layer.entry:
                return row.get("access_key")
        raise TraversalError("references", f"the key directory has no entry {layer.entry!r}")


def _decode_number(step: Any, value: Any) -> Any:
    if value is None:
        return None
    if step.encoding == "hex":
        return int(value, 16)
    raw = value - step.offset
    if step.integer:
        if raw % step.factor:
            raise TraversalError("references", f"{step.column} value {value} does not decode to a whole {step.field}")
        return raw // step.factor
    return raw / step.factor


def _k(value: Any) -> Any:
    """A dict key for any value (json values are lists or dicts)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _show(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


@dataclass
class Restored:
    """One fresh session's restoration of the transformed resources, the task's own first."""

    records: dict[str, list[dict[str, Any]]]  # resource key -> the rows the traversal recovered
    errors: dict[str, TraversalError]  # resource key (or gate:<id>) -> why its traversal stopped
    prefix: list[Call]  # the calls restoring the resources the task needs: the reference solution's head
    calls: int  # every call made, all resources
    bound: int


def restore_all(runtime: Runtime, registry: Registry, *, needed_only: bool = False) -> Restored:
    """Restore every resource and open every gate (or only the needed ones) in one fresh session
    of ``runtime``.

    Needed resources go first, then the gates of the tools the original solution calls (in the
    order it first calls them), so that their calls form the restoration prefix; it stops at the
    first needed one that fails (the candidate keeps the calls that worked, and validation says
    why). Apply and the records check share this one traversal. Gate errors are keyed ``gate:<id>``."""
    needed = [("resource", r.key) for r in registry.resources if r.needed]
    used, unused = gates_in_use_order(registry, registry.original_solution)
    needed += [("gate", g.id) for g in used]
    jobs = needed if needed_only else needed + [("resource", r.key) for r in registry.resources if not r.needed]
    if not needed_only:
        jobs += [("gate", g.id) for g in unused]
    rows = sum(len(v) for k, v in runtime.env.world.tables.items() if k.startswith(APP + "."))
    bound = call_bound(registry, rows)
    records: dict[str, list[dict[str, Any]]] = {}
    errors: dict[str, TraversalError] = {}
    prefix: list[Call] | None = None
    with runtime.session() as session:
        session.reset()
        traversal = Traversal(session, registry, bound=bound)
        for n, (kind, key) in enumerate(jobs):
            if prefix is None and n == len(needed):
                prefix = list(traversal.calls)
            try:
                if kind == "resource":
                    records[key] = traversal.records(key)
                else:
                    traversal.open_gate(traversal.gates[key])
            except TraversalError as exc:
                errors[key if kind == "resource" else f"gate:{key}"] = exc
                if prefix is None:  # a needed one failed: the prefix ends with the calls that worked
                    prefix = list(traversal.calls)
        if prefix is None:
            prefix = list(traversal.calls)
    return Restored(records, errors, prefix, len(traversal.calls), bound)


def call_bound(registry: Registry, rows: int) -> int:
    """How many calls a restoration may take: generous for pages of one row and a lookup per
    record, small enough that a preparation that never ends is caught at once."""
    return 64 + 6 * rows + 8 * len(registry.leaves) + sum(4 + g.stages for g in registry.gates)
