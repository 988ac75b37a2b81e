"""Run episodes: a Runtime compiles an environment once; each Session owns one world.

    runtime = Runtime(Environment.load("examples/helpdesk_escalation.json"))
    with runtime.session() as s:
        obs = s.reset()                      # request, tools (OpenAI format), persona, docs
        r = s.step({"tool": "list_tickets", "arguments": {"status": "open"}})
        result = s.verify()                  # per-assertion results, score, passed

Sessions share nothing mutable: any number run side by side, in threads or processes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from envtrain.core.compile import Bindings, Compiler, batch
from envtrain.core.condition import Site
from envtrain.core.env import Environment
from envtrain.core.errors import ErrorKind, SpecError, ToolError
from envtrain.core.runtime import CompiledTool, Handler, compile_tool
from envtrain.core.schema import Schema
from envtrain.core.verifier import AssertionResult, CompiledVerifier, VerifyResult
from envtrain.core.world import World, image_hash


@dataclass(frozen=True)
class ResetResult:
    request: str
    tools: list[dict[str, Any]]  # OpenAI tools format
    persona: dict[str, Any]
    docs: list[dict[str, str]]


@dataclass(slots=True)
class StepResult:
    tool: str
    ok: bool
    output: Any = None
    error: ErrorKind | None = None
    message: str = ""

    @property
    def status(self) -> int:
        return 200 if self.error is None else self.error.status

    def content(self) -> str:
        """The observation text the agent sees."""
        if self.ok:
            return json.dumps(self.output, ensure_ascii=False, sort_keys=True)
        return json.dumps({"error": {"kind": self.error.value if self.error else "", "message": self.message}}, ensure_ascii=False)


class Runtime:
    """An environment compiled once: tool statements, the verifier, and W0 as a snapshot."""

    def __init__(self, env: Environment, *, handlers: Mapping[str, Handler] | None = None) -> None:
        if handlers is None:
            from envtrain.apps.handlers import handlers_for

            handlers = handlers_for([*(t.handler for a in env.apps for t in a.tools if t.handler),
                                     *(c.handler for c in env.verifier.checks)])
        self.env = env
        self.schema = Schema(env.apps)
        tools: dict[str, CompiledTool] = {}
        for app in env.apps:
            for tool in app.tools:
                if tool.name in tools:
                    raise SpecError(f"tool {tool.name!r} is offered by apps {tools[tool.name].app!r} and {app.name!r}")
                tools[tool.name] = compile_tool(self.schema, app, tool, handlers)
        self.tools: Mapping[str, CompiledTool] = tools
        self.verifier = CompiledVerifier.build(self.schema, env.verifier, handlers)
        for i, call in enumerate(env.reference_solution):
            if call.tool not in tools:
                raise SpecError(f"reference_solution.{i}: unknown tool {call.tool!r}")
        world = World.create(self.schema, base_time=env.world.base_time, tables=env.world.tables, files=env.world.files)
        _check_w0_constraints(world, self.schema)
        _explain_all(world.conn, self)
        self.w0: bytes = world.serialize()
        world.close()
        self.openai_tools = [t.tool.openai_schema() for t in tools.values()]

    @cached_property
    def w0_hash(self) -> str:
        """W0's content hash; computed on first use (admission's reset check mostly matches W0's image instead)."""
        return image_hash(self.schema, self.w0)

    def session(self) -> "Session":
        return Session(self)

    def condition_count(self, world: World, entity: str, where: tuple = ()) -> int:
        """Count rows of a world matching clauses (a verifier-site condition; for tools and tests)."""
        from envtrain.core.condition import Condition

        frag = Compiler(self.schema, Site.VERIFIER).count(Condition(entity=entity, where=where))
        return world.conn.execute(frag.sql, [p.key for p in frag.params]).fetchone()[0]


def _check_w0_constraints(world: World, schema: Schema) -> None:
    """W0 must satisfy its entities' own constraints, as every later write will have to."""
    from envtrain.core.compile import bind
    from envtrain.core.runtime import compile_constraints

    ns = Bindings({}, {}, {}, world.now)
    for name, info in schema.entities.items():
        for flag, message in compile_constraints(schema, info):
            sql = f'SELECT "{info.spec.primary_key}" FROM "{info.table}" WHERE NOT ({flag.sql}) LIMIT 1'
            row = world.conn.execute(sql, bind(flag.params, ns)).fetchone()
            if row is not None:
                raise SpecError(f"world.tables[{name!r}]: the row with {info.spec.primary_key} {row[0]!r} breaks a constraint: {message}")


def _explain_all(conn: sqlite3.Connection, runtime: Runtime) -> None:
    """Prepare every compiled statement once at load, so a spec SQLite cannot run fails now, not mid-episode."""
    for name, tool in runtime.tools.items():
        statements = [s for s in (tool.guards, tool.postconditions) if s is not None]
        sqls = [(g.sql, len(g.params)) for g in statements]
        if tool.read is not None:
            sqls.append((tool.read.sql, len(tool.read.params)))
        for effect in tool.effects + ((tool.fused,) if tool.fused else ()):
            sqls.append((effect.sql, len(effect.params)))
        for sql, n in sqls:
            try:
                conn.execute("EXPLAIN " + sql, [None] * n)
            except sqlite3.Error as exc:
                raise SpecError(f"tool {name}: the compiled statement does not run ({exc})") from None


class Session:
    """One episode over one world. ``step`` never raises into the caller's loop."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.world = World.deserialize(runtime.schema, runtime.w0)
        env = runtime.env
        self._actor = dict(env.persona)
        self._session = dict(env.world.session)
        self.steps = 0

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.world.close()

    def reset(self) -> ResetResult:
        self.world.restore(self.runtime.w0)
        self.steps = 0
        env = self.runtime.env
        return ResetResult(
            request=env.request,
            tools=self.runtime.openai_tools,
            persona=dict(env.persona),
            docs=[{"title": d.title, "body": d.body} for d in env.docs],
        )

    def step(self, call: Any, *, observe: bool = True) -> StepResult:
        """``observe=False``: the step acts on the world as ever, but a plain read's rows are not
        returned (``output`` is None); for replays that only need the world they reach."""
        name = "?"
        try:
            name, args = parse_call(call)
            tool = self.runtime.tools.get(name)
            if tool is None:
                known = ", ".join(sorted(self.runtime.tools))
                raise ToolError(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r} (tools: {known})")
            tool.validate(args)
            ns = Bindings(args, self._actor, self._session, self.world.now)
            output = self._run(tool, ns, observe)
            return StepResult(name, True, output)
        except ToolError as exc:
            return StepResult(name, False, error=exc.kind, message=exc.message)
        except Exception as exc:  # a fault of the environment, reported, never raised into the agent loop
            return StepResult(name, False, error=ErrorKind.INTERNAL, message=f"{type(exc).__name__}: {exc}")
        finally:
            self.steps += 1
            self.world.tick()

    def _run(self, tool: CompiledTool, ns: Bindings, observe: bool = True) -> Any:
        if not tool.tool.writes or tool.atomic:
            return tool.run(self.world, ns, observe=observe)
        conn = self.world.conn
        conn.execute("SAVEPOINT step")
        try:
            output = tool.run(self.world, ns, observe=observe)
        except BaseException as exc:
            conn.execute("ROLLBACK TO step")
            conn.execute("RELEASE step")
            if isinstance(exc, sqlite3.IntegrityError):  # from a handler's own SQL
                raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, self.world.schema.integrity_message(str(exc))) from None
            raise
        conn.execute("RELEASE step")
        return output

    def verify(self) -> VerifyResult:
        return self.runtime.verifier.run(self.world)


def parse_call(call: Any) -> tuple[str, dict[str, Any]]:
    """Accept {"tool", "arguments"}, {"name", "arguments"} or OpenAI's {"function": {...}}; arguments may be a JSON string."""
    if hasattr(call, "model_dump"):
        call = call.model_dump()
    if not isinstance(call, dict):
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"a tool call is an object with a tool name and arguments, got {type(call).__name__}")
    if isinstance(call.get("function"), dict):
        call = call["function"]
    name = call.get("tool", call.get("name"))
    if not isinstance(name, str) or not name:
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, "the tool call names no tool")
    args = call.get("arguments", {})
    if args is None or args == "":
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(args, dict):
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"arguments must be a JSON object, got {type(args).__name__}")
    return name, args


__all__ = ["AssertionResult", "ResetResult", "Runtime", "Session", "StepResult", "VerifyResult", "parse_call"]
