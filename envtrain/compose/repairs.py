"""Atom repairs (LegoEnv §3.5, App. L): a fix recorded against one version of a server atom, applied to
every later environment built from that atom.

A repair names the atom version it fixes (``server:<app>@<spec hash>``) and a patch: tools added or
replaced (or removed), capability-card entries set (or removed). ``RepairStore`` keeps the repairs of a
run as one JSON file (OUT/repairs.json), append-only and in order; ``repaired_pool`` applies them to a
pool. Application is a pure function of the store's contents: a spec whose hash a repair names is
patched, and the patched spec (a new hash) may be patched again by a later repair, so a chain of fixes
replays identically on every machine. Each atom version is repaired at most once.

``propose_repair`` is the programmatic repair agent: from a diagnosis' evidence (a tool π or V+ needs is
missing, or a tool differs from its reference) it restores the tool from the app's reference
specification (the built-in spec of the same name, the paper's "original specification"). Where no
reference has the fix it proposes nothing, and the issue stays open for a person to write a repair into
the store by hand. The LLM diagnosis agent (llm_diagnosis.py) only supplies evidence in this form, and
its answer is refused unless ``derive_repair`` can turn it into a patch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text, content_hash
from envtrain.compose.atoms import AtomPool, spec_hash


class AtomRepair(BaseModel):
    """One patch to one version of a server atom."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    atom: str = Field(pattern=r"^server:[a-z][a-z0-9_]*@[0-9a-f]+$")  # the version it fixes: server:<app>@<spec hash>
    tools: dict[str, dict[str, Any] | None] = Field(default_factory=dict)  # tool name -> its spec (added or replaced); None removes it
    capabilities: dict[str, list[str] | None] = Field(default_factory=dict)  # operation kind -> tools; None removes the entry
    reason: str  # what was wrong: the diagnosis
    fix: str  # what the patch does, in words
    source: Literal["programmatic", "manual", "llm"] = "programmatic"  # who diagnosed it; the patch comes from the reference spec
    envs: tuple[str, ...] = ()  # the environments whose failure was the evidence

    @property
    def app(self) -> str:
        return self.atom.split(":", 1)[1].split("@", 1)[0]

    @property
    def spec_hash(self) -> str:
        return self.atom.rsplit("@", 1)[1]

    @property
    def id(self) -> str:
        """What the repair changes (not the evidence that led to it)."""
        return content_hash({"atom": self.atom, "tools": self.tools, "capabilities": self.capabilities})[:16]

    def apply(self, app: Any) -> Any:
        """The patched spec; a patch that breaks the spec is a SpecError naming the repair."""
        from envtrain.apps import parse_app

        doc = app.model_dump(mode="json")
        tools = [self.tools.get(t["name"], t) for t in doc["tools"]]
        present = {t["name"] for t in doc["tools"]}
        tools += [self.tools[name] for name in sorted(self.tools) if name not in present]
        doc["tools"] = [t for t in tools if t is not None]
        for kind, names in self.capabilities.items():
            if names is None:
                doc["capabilities"].pop(kind, None)
            else:
                doc["capabilities"][kind] = list(names)
        return parse_app(doc, source=f"repair {self.id} of {self.atom}")


def apply_repairs(app: Any, repairs: Iterable[AtomRepair]) -> tuple[Any, tuple[str, ...]]:
    """``app`` with every repair that reaches it applied in turn, and the ids of those repairs."""
    by_version = {}
    for r in repairs:
        if r.app == app.name:
            by_version.setdefault(r.spec_hash, r)  # the first repair of a version is the one in force
    applied: list[str] = []
    for _ in range(len(by_version)):  # each version at most once: a chain cannot loop
        repair = by_version.pop(spec_hash(app), None)
        if repair is None:
            break
        app = repair.apply(app)
        applied.append(repair.id)
    return app, tuple(applied)


def repaired_pool(pool: AtomPool, repairs: Iterable[AtomRepair], only: Iterable[str] | None = None) -> AtomPool:
    """The pool with its server atoms repaired (``only``: just these repair ids, to rebuild an environment
    exactly as it was first built)."""
    chosen = [r for r in repairs if only is None or r.id in set(only)]
    specs, applied = {}, {}
    for name in sorted({r.app for r in chosen} & set(pool.servers)):
        app, ids = apply_repairs(pool.spec(name), chosen)
        if ids:
            specs[name], applied[name] = app, tuple(pool.applied.get(name, ())) + ids
    return pool.with_revised(specs, applied) if specs else pool


def atom_versions(pool: AtomPool, repairs: Iterable[AtomRepair]) -> dict[str, Any]:
    """Every version of every server atom of the pool, by spec hash: the pool's own and each step of
    each repair chain (a diagnosis names one of these)."""
    repairs = list(repairs)
    out = {}
    for name in sorted(pool.servers):
        app = pool.spec(name)
        out[spec_hash(app)] = app
        by_version = {r.spec_hash: r for r in reversed(repairs) if r.app == name}  # the first repair of a version wins
        while spec_hash(app) in by_version:
            app = by_version.pop(spec_hash(app)).apply(app)
            out[spec_hash(app)] = app
    return out


class RepairStore:
    """The repairs of a run, in the order they were made, as one JSON file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self) -> list[AtomRepair]:
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [AtomRepair.model_validate(r) for r in raw]
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else _first_error(exc)
            raise SpecError(f"{self.path}: not a list of repairs ({first})") from None

    def add(self, repair: AtomRepair) -> tuple[AtomRepair, bool]:
        """Record a repair unless its atom version already has one; returns the one in force and whether it is new."""
        repairs = self.read()
        for existing in repairs:
            if existing.atom == repair.atom:
                return existing, False
        repairs.append(repair)
        atomic_write_text(self.path, json.dumps([r.model_dump(mode="json") for r in repairs], indent=1) + "\n")
        return repair, True


def _first_error(exc: ValidationError) -> str:
    from envtrain.core.env import format_validation_error

    return format_validation_error(exc)


# -- the programmatic repair agent -----------------------------------------------------------


EVIDENCE = ("missing_tool", "unwritten", "faulty_tool")  # what a repair can be derived from


def propose_repair(diagnosis: Any, faulty: Any) -> AtomRepair | None:
    """A repair for a "repair atom" diagnosis, from the app's reference spec; None where none can be derived."""
    try:
        return derive_repair(diagnosis, faulty)
    except ValueError:
        return None


def derive_repair(diagnosis: Any, faulty: Any) -> AtomRepair:
    """The repair a "repair atom" diagnosis calls for, restored from the app's reference spec; ValueError
    saying why none can be derived. Nothing here is free-form: every patch is a reference tool.

    ``faulty`` is the spec the diagnosis names (its hash is the diagnosis target's). The evidence says
    what is wrong: ``missing_tool`` (π calls a tool the server lacks), ``unwritten`` (no tool writes an
    entity V+ asserts on) or ``faulty_tool`` (a tool is there but differs from its reference spec: a
    misleading description or parameter, a wrong effect; only a reviewer, human or model, finds these)."""
    from envtrain.apps import builtin_app_names, load_app

    if diagnosis.pathway != "repair atom":
        raise ValueError(f"a {diagnosis.pathway!r} diagnosis has no atom repair")
    name = faulty.name
    if name not in builtin_app_names():
        raise ValueError(f"{name} is not a built-in app: there is no reference spec to restore a tool from")
    reference = load_app(name)
    if spec_hash(reference) == spec_hash(faulty):
        raise ValueError(f"this version of {name} is its reference spec: there is nothing to restore")
    have = {t.name for t in faulty.tools}
    known = {t.name for t in reference.tools}
    evidence = dict(getattr(diagnosis, "evidence", {}) or {})
    changed: list[str] = []
    if evidence.get("missing_tool"):
        tool = str(evidence["missing_tool"])
        if tool in have:
            raise ValueError(f"{name} has the tool {tool!r}; a tool that is there but wrong is a faulty_tool")
        if tool not in known:
            raise ValueError(f"the {name} reference spec has no tool {tool!r} (its tools: {', '.join(sorted(known))})")
        restore = [tool]
    elif evidence.get("unwritten"):
        entity = str(evidence["unwritten"]).split(".", 1)[-1]
        writers = [t.name for t in reference.tools if any(e.entity == entity for e in t.effects)]
        if not writers:
            raise ValueError(f"no tool of the {name} reference spec writes {entity!r}")
        restore = [t for t in writers if t not in have]
        if not restore:
            raise ValueError(f"{name} already has every reference tool that writes {entity!r} ({', '.join(writers)})")
    elif evidence.get("faulty_tool"):
        tool = str(evidence["faulty_tool"])
        if tool not in have:
            raise ValueError(f"{name} has no tool {tool!r}; a tool that is absent is a missing_tool")
        if tool not in known:
            raise ValueError(f"the {name} reference spec has no tool {tool!r}: there is nothing to restore it from")
        mine, ref = faulty.tool(tool).model_dump(mode="json"), reference.tool(tool).model_dump(mode="json")
        changed = [k for k in ref if ref[k] != mine.get(k)]
        if not changed:
            raise ValueError(f"the tool {tool!r} of {name} is exactly its reference spec: there is nothing to restore")
        restore = [tool]
    else:
        raise ValueError("the diagnosis names no missing_tool, unwritten entity or faulty_tool to repair")
    names = have | set(restore)
    capabilities = {}
    for kind, tools in reference.capabilities.items():
        if any(t in restore for t in tools) and all(t in names for t in tools) and faulty.capabilities.get(kind) != tools:
            capabilities[kind] = list(tools)
    tools = {t: reference.tool(t).model_dump(mode="json") for t in restore}
    if changed:
        fix = f"restore the {', '.join(changed)} of {restore[0]} from the {name} reference spec"
    else:
        fix = f"restore {', '.join(restore)} from the {name} reference spec"
    if capabilities:
        fix += "; capability card: " + "; ".join(f"{k} -> {', '.join(v)}" for k, v in sorted(capabilities.items()))
    return AtomRepair(atom=f"server:{name}@{spec_hash(faulty)}", tools=tools, capabilities=capabilities,
                      reason=diagnosis.reason, fix=fix, source=getattr(diagnosis, "source", "programmatic"),
                      envs=(diagnosis.env_id,))


__all__ = ["EVIDENCE", "AtomRepair", "RepairStore", "apply_repairs", "atom_versions", "derive_repair", "propose_repair",
           "repaired_pool"]
