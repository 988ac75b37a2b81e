"""The text syntax of the condition form (LegoEnv App. A): clauses and value expressions.

A clause is ``column op value``; the canonical text of every clause is ``unparse(parse(text))``,
so an environment hashes the same however its author spaced it.

    status = 'approved'                      literal
    invoice = $arg.id                        namespace reference ($arg, $actor, $session, $now, $was)
    paid_amount < amount                     another column of the same row
    amount > (limit * 2) + 10                arithmetic over columns and literals
    due < $now - 3d                          duration arithmetic on dates and times
    owner in all(crm.accounts.id where tier = 'gold')     sub-query (count, sum, min, max, one, all)
    id not in all(ledger.links.invoice where invoice = ^id)  ^col: the enclosing row's column
    note is null
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from envtrain.core.errors import SpecError

# The 14 comparison operators, canonical spelling first; unicode aliases are accepted on input.
OPERATORS = (
    "=", "!=", "<", "<=", ">", ">=", "in", "not in",
    "contains", "not contains", "starts with", "ends with", "is null", "is not null",
)
NULLARY_OPERATORS = ("is null", "is not null")
NAMESPACES = ("arg", "actor", "session", "now", "was")
AGGREGATES = ("count", "sum", "min", "max", "one", "all")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
KEYWORDS = {"and", "where", "in", "not", "contains", "starts", "ends", "with", "is", "null", "true", "false"}
MAX_SUBQUERY_DEPTH = 2


@dataclass(frozen=True)
class Lit:
    value: str | int | float | bool | None | tuple  # a tuple is a list constant (for in / not in)


@dataclass(frozen=True)
class Ref:
    namespace: str  # one of NAMESPACES
    name: str | None  # None only for $now


@dataclass(frozen=True)
class Col:
    name: str
    outer: bool = False  # ^name: the row of the enclosing query


@dataclass(frozen=True)
class Duration:
    seconds: int
    text: str  # as written (3d), kept so unparse is exact


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * /
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Neg:
    operand: "Expr"


@dataclass(frozen=True)
class SubQuery:
    func: str  # one of AGGREGATES
    entity: str
    column: str | None  # None only for count
    where: tuple["Clause", ...]


Expr = Union[Lit, Ref, Col, Duration, BinOp, Neg, SubQuery]


@dataclass(frozen=True)
class Clause:
    column: str
    op: str
    value: Expr | None  # None for the null tests

    def __str__(self) -> str:
        return unparse_clause(self)


# --- tokenizer -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^'\\]|\\.)*')
  | (?P<duration>\d+[smhdw](?![A-Za-z0-9_]))
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<ref>\$[A-Za-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)?)
  | (?P<name>\^?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><=|>=|!=|<>|≠|≤|≥|[=<>+\-*/(),\[\]])
    """,
    re.VERBOSE,
)
_UNICODE_OPS = {"≠": "!=", "<>": "!=", "≤": "<=", "≥": ">="}


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise SpecError(f"unexpected character {text[pos]!r} at position {pos}")
        kind = match.lastgroup or ""
        if kind != "ws":
            word = match.group()
            tokens.append(_Tok(kind, _UNICODE_OPS.get(word, word), pos))
        pos = match.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


def _unescape(quoted: str) -> str:
    return re.sub(r"\\(.)", r"\1", quoted[1:-1])


# --- parser ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, offset: int = 0) -> _Tok:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self) -> _Tok:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def fail(self, message: str) -> SpecError:
        return SpecError(f"{message} at position {self.peek().pos}")

    def expect(self, text: str) -> None:
        if self.peek().text != text:
            raise self.fail(f"expected {text!r}, found {self.peek().text or 'end of text'!r}")
        self.take()

    def word(self, text: str) -> bool:
        tok = self.peek()
        return tok.kind == "name" and tok.text == text

    def done(self) -> None:
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {self.peek().text!r}")

    # clause := column op [value]
    def clause(self, depth: int) -> Clause:
        tok = self.take()
        if tok.kind != "name" or tok.text in KEYWORDS or "." in tok.text or tok.text.startswith("^"):
            raise SpecError(f"a clause starts with a column name, found {tok.text or 'end of text'!r} at position {tok.pos}")
        op = self.operator()
        value = None if op in NULLARY_OPERATORS else self.expr(depth)
        return Clause(tok.text, op, value)

    def operator(self) -> str:
        tok = self.peek()
        if tok.kind == "op" and tok.text in OPERATORS:
            self.take()
            return tok.text
        for length in (3, 2, 1):  # longest first: "is not null" before "is null"
            words = [self.peek(k).text for k in range(length) if self.peek(k).kind == "name"]
            if len(words) == length and " ".join(words) in OPERATORS:
                self.i += length
                return " ".join(words)
        raise SpecError(
            f"unknown operator {tok.text or 'end of text'!r} at position {tok.pos} (operators: {', '.join(OPERATORS)})"
        )

    def expr(self, depth: int) -> Expr:
        node = self.term(depth)
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.take().text
            node = BinOp(op, node, self.term(depth))
        return node

    def term(self, depth: int) -> Expr:
        node = self.factor(depth)
        while self.peek().kind == "op" and self.peek().text in ("*", "/"):
            op = self.take().text
            node = BinOp(op, node, self.factor(depth))
        return node

    def factor(self, depth: int) -> Expr:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "-":
            self.take()
            operand = self.factor(depth)
            if isinstance(operand, Lit) and type(operand.value) in (int, float):
                return Lit(-operand.value)
            return Neg(operand)
        if tok.kind == "op" and tok.text == "(":
            self.take()
            node = self.expr(depth)
            self.expect(")")
            return node
        if tok.kind == "op" and tok.text == "[":
            return self.list_literal()
        if tok.kind == "duration":
            self.take()
            return Duration(int(tok.text[:-1]) * DURATION_UNITS[tok.text[-1]], tok.text)
        if tok.kind in ("string", "number") or tok.text in ("true", "false", "null"):
            return self.scalar()
        if tok.kind == "ref":
            self.take()
            namespace, _, name = tok.text[1:].partition(".")
            if namespace not in NAMESPACES:
                raise SpecError(f"unknown namespace ${namespace} at position {tok.pos} (namespaces: {', '.join('$' + n for n in NAMESPACES)})")
            if namespace == "now":
                if name:
                    raise SpecError(f"$now takes no field, found {tok.text!r} at position {tok.pos}")
                return Ref("now", None)
            if not name:
                raise SpecError(f"${namespace} needs a field, e.g. ${namespace}.id, at position {tok.pos}")
            return Ref(namespace, name)
        if tok.kind == "name" and tok.text in AGGREGATES and self.peek(1).text == "(":
            return self.subquery(depth)
        if tok.kind == "name" and tok.text not in KEYWORDS and "." not in tok.text:
            self.take()
            if tok.text.startswith("^"):
                return Col(tok.text[1:], outer=True)
            return Col(tok.text)
        raise SpecError(f"expected a value, found {tok.text or 'end of text'!r} at position {tok.pos}")

    def scalar(self) -> Lit:
        tok = self.take()
        if tok.kind == "string":
            return Lit(_unescape(tok.text))
        if tok.kind == "number":
            return Lit(float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text))
        if tok.text in ("true", "false"):
            return Lit(tok.text == "true")
        if tok.text == "null":
            return Lit(None)
        raise SpecError(f"expected a literal, found {tok.text or 'end of text'!r} at position {tok.pos}")

    def list_literal(self) -> Lit:
        self.expect("[")
        items: list = []
        while self.peek().text != "]":
            negative = self.peek().text == "-"
            if negative:
                self.take()
            item = self.scalar().value
            if negative:
                if type(item) not in (int, float):
                    raise self.fail("'-' before a non-number")
                item = -item
            items.append(item)
            if self.peek().text == ",":
                self.take()
            elif self.peek().text != "]":
                raise self.fail("expected ',' or ']' in a list")
        self.expect("]")
        return Lit(tuple(items))

    # subquery := func '(' entity[.column] [where clause (and clause)*] ')'
    def subquery(self, depth: int) -> SubQuery:
        func = self.take().text
        if depth >= MAX_SUBQUERY_DEPTH:
            raise self.fail(f"sub-queries nest at most {MAX_SUBQUERY_DEPTH} deep")
        self.expect("(")
        target = self.take()
        if target.kind != "name" or target.text.startswith("^"):
            raise SpecError(f"{func}( needs an entity name, found {target.text!r} at position {target.pos}")
        parts = target.text.split(".")
        if func == "count":
            if len(parts) > 2:
                raise SpecError(f"count( takes an entity, not a column: {target.text!r}")
            entity, column = target.text, None
        else:
            if len(parts) < 2:
                raise SpecError(f"{func}( needs entity.column, found {target.text!r} at position {target.pos}")
            entity, column = ".".join(parts[:-1]), parts[-1]
        where: list[Clause] = []
        if self.word("where"):
            self.take()
            where.append(self.clause(depth + 1))
            while self.word("and"):
                self.take()
                where.append(self.clause(depth + 1))
        self.expect(")")
        return SubQuery(func, entity, column, tuple(where))


def parse_clause(text: str) -> Clause:
    """Parse one clause; a SpecError names the position and what was expected."""
    if not isinstance(text, str):
        raise SpecError(f"a clause is a string like \"status = 'open'\", got {type(text).__name__}")
    parser = _Parser(text)
    clause = parser.clause(0)
    parser.done()
    return clause


def parse_expr(text: str) -> Expr:
    """Parse a value expression (used by effects: ``set: {status: "'paid'"}``)."""
    if not isinstance(text, str):
        raise SpecError(f"an expression is a string like \"$arg.id\" or \"'paid'\", got {type(text).__name__}")
    parser = _Parser(text)
    node = parser.expr(0)
    parser.done()
    return node


# --- unparser --------------------------------------------------------------------------------


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _scalar_text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _quote(value)
    raise SpecError(f"not a scalar literal: {value!r}")


def unparse_expr(node: Expr) -> str:
    if isinstance(node, Lit):
        if isinstance(node.value, tuple):
            return "[" + ", ".join(_scalar_text(v) for v in node.value) + "]"
        return _scalar_text(node.value)
    if isinstance(node, Ref):
        return "$now" if node.namespace == "now" else f"${node.namespace}.{node.name}"
    if isinstance(node, Col):
        return ("^" if node.outer else "") + node.name
    if isinstance(node, Duration):
        return node.text
    if isinstance(node, Neg):
        inner = unparse_expr(node.operand)
        return f"-({inner})" if isinstance(node.operand, (BinOp, Neg)) else f"-{inner}"
    if isinstance(node, BinOp):
        def side(child: Expr) -> str:
            text = unparse_expr(child)
            return f"({text})" if isinstance(child, BinOp) else text
        return f"{side(node.left)} {node.op} {side(node.right)}"
    if isinstance(node, SubQuery):
        target = node.entity if node.column is None else f"{node.entity}.{node.column}"
        where = " where " + " and ".join(unparse_clause(c) for c in node.where) if node.where else ""
        return f"{node.func}({target}{where})"
    raise TypeError(node)


def unparse_clause(clause: Clause) -> str:
    if clause.value is None:
        return f"{clause.column} {clause.op}"
    return f"{clause.column} {clause.op} {unparse_expr(clause.value)}"


def walk(node: Expr | Clause | None):
    """Every expression node below ``node``, sub-query clauses included, depth first."""
    if node is None:
        return
    if isinstance(node, Clause):
        yield from walk(node.value)
        return
    yield node
    if isinstance(node, BinOp):
        yield from walk(node.left)
        yield from walk(node.right)
    elif isinstance(node, Neg):
        yield from walk(node.operand)
    elif isinstance(node, SubQuery):
        for clause in node.where:
            yield from walk(clause)
