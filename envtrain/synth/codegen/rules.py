"""EnvCraft Table 15, read statically: the code-level constraints generated tool code must keep.

    violations = check_tools(source, tools=("approve_report", ...))
    # [Violation(rule=4, where="save (line 12)", message="writes a file in place: ...")]

Each violation names its rule. The reading is conservative and syntactic (an AST walk, nothing is
imported or run); ``envtrain.synth.codegen.probe`` runs the code in a sandbox and catches what a
reading cannot (a list returned through a variable, a path built at run time, a lock ignored).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RULES = {
    0: "the tool contract",  # not in Table 15: the code parses and defines every declared tool as name(ctx, args)
    1: "public functions return dictionaries and map failures to structured errors",
    2: "no mutable module-level state",
    3: "the data/ directory is read-only",
    4: "session updates are atomic (a temporary file, then os.replace)",
    5: "file locks are bounded (non-blocking attempts until a deadline)",
    6: "timestamps come from base_time and action_index, never the wall clock",
}
# Table 16's categories, spelt as generated code returns them, plus the runtime's own kinds.
ERROR_KINDS = frozenset({
    "missing_binding", "session_not_found", "lock_timeout", "permission_denied", "invalid_transition", "missing_field",
    "not_found", "malformed_arguments", "constraint_violation",
})
_MUTABLE_CALLS = frozenset({"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque", "ChainMap"})
_CACHES = frozenset({"lru_cache", "cache", "cached_property"})
_WALL_CLOCK = {"time": {"time", "time_ns", "localtime", "gmtime", "ctime", "asctime"}, "datetime": {"now", "utcnow", "today"},
               "date": {"today"}}
_WRITE_CALLS = frozenset({"remove", "unlink", "rename", "replace", "rmdir", "mkdir", "makedirs", "rmtree", "move", "copy",
                          "copyfile", "copy2", "copytree", "write_text", "write_bytes", "touch", "chmod", "truncate"})


@dataclass(frozen=True)
class Violation:
    rule: int
    where: str
    message: str

    def __str__(self) -> str:
        return f"Table 15 rule {self.rule} ({RULES[self.rule]}): {self.where}: {self.message}"


def check_tools(source: str, tools: Sequence[str]) -> list[Violation]:
    """Every violation of rules 1-6 the source shows, plus contract errors (rule 0)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Violation(0, f"line {exc.lineno}", f"the code does not parse: {exc.msg}")]
    out: list[Violation] = []
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for name in tools:
        fn = functions.get(name)
        if fn is None:
            out.append(Violation(0, name, "declared as a tool but not defined as a module-level function"))
        elif [a.arg for a in fn.args.args] != ["ctx", "args"]:
            out.append(Violation(0, _at(fn), "a tool takes exactly (ctx, args)"))
    for fn in functions.values():
        if not fn.name.startswith("_"):
            out += _returns_dicts(fn)
    out += _module_state(tree)
    clock = _clock_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += _data_writes(node) + _atomic_writes(node)
        if isinstance(node, ast.Call):
            out += _locks(node) + _wall_clock(node, clock)
        if isinstance(node, ast.Dict):
            out += _error_kinds(node)
    return sorted(set(out), key=lambda v: (v.rule, v.where, v.message))


def check_checker(source: str) -> list[Violation]:
    """A checker script reads the final workspace; it must parse and may not read the wall clock."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Violation(0, f"line {exc.lineno}", f"the checker does not parse: {exc.msg}")]
    clock = _clock_names(tree)
    return [v for node in ast.walk(tree) if isinstance(node, ast.Call) for v in _wall_clock(node, clock)]


def _at(node: ast.AST, fn: ast.FunctionDef | None = None) -> str:
    line = getattr(node, "lineno", "?")
    return f"{fn.name} (line {line})" if fn is not None else f"{getattr(node, 'name', 'module')} (line {line})"


def _own_nodes(fn: ast.AST) -> Iterable[tuple[ast.AST, bool]]:
    """(node, inside a try body) for the function's own statements, not those of nested functions."""
    stack: list[tuple[ast.AST, bool]] = [(child, False) for child in ast.iter_child_nodes(fn)]
    while stack:
        node, guarded = stack.pop()
        yield node, guarded
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Try):
            stack += [(child, guarded or bool(node.handlers)) for child in node.body]
            stack += [(child, guarded) for part in (node.handlers, node.orelse, node.finalbody) for child in part]
        else:
            stack += [(child, guarded) for child in ast.iter_child_nodes(node)]


def _returns_dicts(fn: ast.FunctionDef) -> list[Violation]:
    out = []
    returns = [n for n, _ in _own_nodes(fn) if isinstance(n, ast.Return)]
    if not returns:
        out.append(Violation(1, _at(fn), "never returns a dict"))
    for node in returns:
        value = node.value
        if value is None or isinstance(value, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.JoinedStr, ast.ListComp,
                                               ast.SetComp, ast.GeneratorExp, ast.Compare)):
            kind = "nothing" if value is None or (isinstance(value, ast.Constant) and value.value is None) else type(value).__name__.lower()
            out.append(Violation(1, _at(node, fn), f"returns {kind}, not a dict"))
    for node, guarded in _own_nodes(fn):
        if isinstance(node, ast.Raise) and not guarded:
            out.append(Violation(1, _at(node, fn), "raises instead of returning a structured error {'error': {'kind', 'message'}}"))
    return out


def _error_kinds(node: ast.Dict) -> list[Violation]:
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value == "error" and isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == "kind" and isinstance(v, ast.Constant) and v.value not in ERROR_KINDS:
                    return [Violation(1, f"line {node.lineno}", f"error kind {v.value!r} is not one of {sorted(ERROR_KINDS)}")]
    return []


def _is_mutable(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _name(value.func) in _MUTABLE_CALLS


def _module_state(tree: ast.Module) -> list[Violation]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_mutable(node.value):
            out.append(Violation(2, f"line {node.lineno}", "a module-level mutable value (use a tuple, a frozenset or a MappingProxyType)"))
        if isinstance(node, ast.AugAssign):
            out.append(Violation(2, f"line {node.lineno}", "a module-level value changed in place"))
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _is_mutable(stmt.value):
                    out.append(Violation(2, f"{node.name} (line {stmt.lineno})", "a mutable class attribute, shared by every instance"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.append(Violation(2, f"line {node.lineno}", f"'{type(node).__name__.lower()} {', '.join(node.names)}' keeps state outside the session"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_is_mutable(d) for d in node.args.defaults + node.args.kw_defaults):
                out.append(Violation(2, _at(node), "a mutable default argument is shared between calls"))
            if any(_name(d.func if isinstance(d, ast.Call) else d) in _CACHES for d in node.decorator_list):
                out.append(Violation(2, _at(node), "a memoizing decorator keeps a module-level cache"))
    return out


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _write_mode(call: ast.Call) -> bool:
    """open(path, mode) / path.open(mode) / os.open(path, flags) with a mode that writes."""
    if _name(call.func) != "open":
        return False
    if _dotted(call.func) == "os.open":
        return len(call.args) > 1 and bool({_name(n) for n in ast.walk(call.args[1])} & {"O_WRONLY", "O_RDWR", "O_APPEND", "O_TRUNC"})
    args = call.args[1:] if isinstance(call.func, ast.Name) or _dotted(call.func) in ("io.open", "builtins.open") else call.args[:1]
    mode = next((k.value for k in call.keywords if k.arg == "mode"), args[0] if args else None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def _target(call: ast.Call) -> ast.AST | None:
    """The path a writing call writes: open's first argument, the receiver of path.write_text()."""
    receiver_call = isinstance(call.func, ast.Attribute) and call.func.attr in ("write_text", "write_bytes", "touch", "open", "mkdir", "unlink", "rmdir")
    if receiver_call and _dotted(call.func.value) not in ("os", "io", "builtins", "shutil"):  # type: ignore[union-attr]
        return call.func.value  # type: ignore[union-attr]
    if _name(call.func) in ("copy", "copyfile", "copy2", "copytree", "move", "rename", "replace") and len(call.args) > 1:
        return call.args[1]
    return call.args[0] if call.args else None


def _writes(call: ast.Call) -> bool:
    return _write_mode(call) or _name(call.func) in _WRITE_CALLS


def _data_path(node: ast.AST | None, tainted: set[str]) -> bool:
    """Whether an expression may name something under data/."""
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and (sub.value == "data" or sub.value.startswith(("data/", "./data"))):
            return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) and sub.slice.value == "data_dir":
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


def _data_writes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Violation]:
    tainted: set[str] = set()
    nodes = [n for n, _ in _own_nodes(fn)]
    for _ in range(2):  # names assigned from data paths, then names assigned from those
        for node in nodes:
            if isinstance(node, ast.Assign) and _data_path(node.value, tainted):
                tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    out = []
    for node in nodes:
        if isinstance(node, ast.Call) and _writes(node) and _data_path(_target(node), tainted):
            out.append(Violation(3, _at(node, fn), f"writes under data/ with {_dotted(node.func) or 'a call'}"))
    return out


def _is_lock(node: ast.AST | None) -> bool:
    return any("lock" in (s.value if isinstance(s, ast.Constant) and isinstance(s.value, str) else getattr(s, "id", "")).lower()
               for s in (ast.walk(node) if node is not None else ()))


def _atomic_writes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Violation]:
    nodes = [n for n, _ in _own_nodes(fn)]
    replaces = any(isinstance(n, ast.Call) and _dotted(n.func) in ("os.replace", "os.rename") for n in nodes)
    out = []
    for node in nodes:
        if not isinstance(node, ast.Call) or replaces:
            continue
        in_place = _write_mode(node) or (isinstance(node.func, ast.Attribute) and node.func.attr in ("write_text", "write_bytes"))
        if in_place and not _is_lock(_target(node)):
            out.append(Violation(4, _at(node, fn), "writes a file in place; write a temporary file and os.replace it over the target"))
    return out


def _locks(call: ast.Call) -> list[Violation]:
    if _dotted(call.func) not in ("fcntl.flock", "fcntl.lockf", "flock", "lockf") or len(call.args) < 2:
        return []
    op = call.args[1]
    flags = {_name(n) for n in ast.walk(op)}
    if "LOCK_NB" in flags or "LOCK_UN" in flags:
        return []
    return [Violation(5, f"line {call.lineno}", "a blocking lock has no bound; add LOCK_NB and retry until a deadline, then return lock_timeout")]


def _clock_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> module ('time' / 'datetime' / 'date') for wall-clock sources, imports followed."""
    names = {"time": "time", "datetime": "datetime", "date": "date"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "datetime"):
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module == "time" and alias.name in _WALL_CLOCK["time"]:
                    names[local] = "time." + alias.name
                elif node.module == "datetime" and alias.name in ("datetime", "date"):
                    names[local] = alias.name
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("time", "datetime") and alias.asname:
                    names[alias.asname] = alias.name
    return names


def _wall_clock(call: ast.Call, names: dict[str, str]) -> list[Violation]:
    func = call.func
    hit = ""
    if isinstance(func, ast.Name) and names.get(func.id, "").startswith("time."):
        hit = names[func.id]
    elif isinstance(func, ast.Attribute):
        owner = _name(func.value)
        module = names.get(owner, "")
        if module in _WALL_CLOCK and func.attr in _WALL_CLOCK[module]:
            hit = f"{owner}.{func.attr}"
        elif module == "time" and func.attr == "strftime" and len(call.args) < 2:
            hit = "time.strftime without a time tuple"
    if not hit:
        return []
    return [Violation(6, f"line {call.lineno}", f"{hit}() reads the wall clock; use ctx['now'] (base_time + action_index seconds)")]
