"""The query compiler's language (QCompiler's G[q]): complex questions as expressions of atomic
questions, parsed into a typed syntax tree and checked before anything runs.

    Complex   ::= List
    List      ::= Dependent | List '+' Dependent     independent parts, run in parallel
    Dependent ::= Atomic | Dependent '*' Atomic      the right side needs the left side's answer
    Atomic    ::= question | '(' List ')'

``*`` binds tighter than ``+``; ``×`` and a lone `` x `` between parts are ``*`` too. The right
side of a ``*`` names what it takes from the left side's answer with a placeholder in braces:
``Which company reported 29,300 employees * What were {company}'s Gross Bookings in 2021``.
A question may hold any character but ``+ * × ( ) { }``: braces always mark a placeholder, and
an operator or parenthesis is written literally with a backslash (``\\+``, ``\\(``, ``\\x`` for a
lone letter x, which would read as ``×``, ``\\\\`` for a backslash).

The checks (QCompiler's DFS validation, plus bounds): every ``*`` must have a placeholder in its
right side (else a missing dependency), every placeholder must sit in the right side of a ``*``
(else it has nothing to depend on), one placeholder name per ``*`` (a name bound by two is
ambiguous), names are identifiers, no part is empty, and size, depth and length are bounded.
Every refusal is a ``QueryError`` naming the position (0-based character offset) and what to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from docsym.tools.errors import ToolError

MAX_EXPRESSION_CHARS = 4000
MAX_QUESTION_CHARS = 500
MAX_LEAVES = 16
MAX_DEPTH = 8
MAX_NAME_CHARS = 40
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_OPERATORS = {"+": "plus", "*": "times", "×": "times", "(": "open", ")": "close"}
_ESCAPABLE = set("+*×()x\\")


class QueryError(ToolError):
    """An expression that does not parse or does not validate; says where and how to fix it."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"at position {position}: {message}")
        self.position = position


# -- the syntax tree -------------------------------------------------------------------------
class Atomic(BaseModel):
    kind: Literal["atomic"] = "atomic"
    question: str = Field(description="the question text, placeholders kept in braces")
    placeholders: list[str] = Field(default_factory=list, description="names in braces, in order")
    leaf: int = Field(default=0, description="1-based position among the leaves")
    start: int
    end: int


class Dependent(BaseModel):
    kind: Literal["dependent"] = "dependent"
    left: Node
    right: Node
    start: int
    end: int
    operator: int = Field(description="position of the '*'")


class Parallel(BaseModel):
    kind: Literal["list"] = "list"
    parts: list[Node]
    start: int
    end: int


Node = Annotated[Atomic | Dependent | Parallel, Field(discriminator="kind")]
Dependent.model_rebuild()
Parallel.model_rebuild()


def leaves(node: Node) -> list[Atomic]:
    """The atomic questions under ``node``, left to right."""
    if isinstance(node, Atomic):
        return [node]
    if isinstance(node, Dependent):
        return leaves(node.left) + leaves(node.right)
    return [leaf for part in node.parts for leaf in leaves(part)]


def render(node: Node) -> str:
    """The expression, with the fewest parentheses that keep its shape."""
    if isinstance(node, Atomic):
        return _escape(node.question)
    if isinstance(node, Parallel):
        return " + ".join(_wrap(p, p.kind == "list") for p in node.parts)
    left = _wrap(node.left, node.left.kind == "list")
    right = _wrap(node.right, node.right.kind != "atomic")
    return f"{left} * {right}"


def _wrap(node: Node, needed: bool) -> str:
    return f"({render(node)})" if needed else render(node)


def _escape(question: str) -> str:
    out = []
    for n, ch in enumerate(question):
        if ch in "+*×()\\" or _lone_x(question, n):
            out.append("\\")
        out.append(ch)
    return "".join(out)


def _lone_x(text: str, n: int) -> bool:
    """An 'x' standing alone between spaces (or at an edge) reads as the operator ×."""
    return (
        text[n] == "x"
        and (n == 0 or text[n - 1].isspace())
        and (n + 1 == len(text) or text[n + 1].isspace())
    )


# -- lexer -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Token:
    kind: str  # question, plus, times, open, close, end
    text: str
    start: int
    end: int


def tokenize(expression: str) -> list[_Token]:
    """Questions and operators with their positions; backslash escapes kept as literal text."""
    if not isinstance(expression, str) or not expression.strip():
        raise QueryError("the expression is empty: write at least one question", 0)
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise QueryError(
            f"the expression is {len(expression)} characters; keep it under "
            f"{MAX_EXPRESSION_CHARS} (split it into several calls)",
            MAX_EXPRESSION_CHARS,
        )
    tokens: list[_Token] = []
    text: list[str] = []
    text_start = 0
    n = 0

    def flush(at: int) -> None:
        if "".join(text).strip():
            tokens.append(_Token("question", "".join(text), text_start, at))
        text.clear()

    while n < len(expression):
        ch = expression[n]
        if ch == "\\":
            if n + 1 >= len(expression) or expression[n + 1] not in _ESCAPABLE:
                raise QueryError(
                    "a backslash escapes one of + * × ( ) x \\; write \\\\ for a backslash "
                    "(braces always mark a placeholder)",
                    n,
                )
            if not text:
                text_start = n
            text.append(expression[n + 1])
            n += 2
            continue
        operator = _OPERATORS.get(ch) or ("times" if _lone_x(expression, n) else None)
        if operator:
            flush(n)
            tokens.append(_Token(operator, ch, n, n + 1))
            n += 1
            text_start = n
            continue
        if ch == "{":
            close = expression.find("}", n)
            if close < 0:
                raise QueryError("'{' opens a placeholder that is never closed with '}'", n)
            if not text:
                text_start = n
            text.append(expression[n : close + 1])
            n = close + 1
            continue
        if ch == "}":
            raise QueryError("'}' closes no placeholder (braces mark placeholders only)", n)
        if not text:
            text_start = n
        text.append(ch)
        n += 1
    flush(n)
    tokens.append(_Token("end", "", len(expression), len(expression)))
    return tokens


# -- parser ----------------------------------------------------------------------------------
class _Parser:
    def __init__(self, expression: str) -> None:
        self.tokens = tokenize(expression)
        self.at = 0
        self.depth = 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def parse(self) -> Node:
        node = self.parse_list()
        token = self.peek()
        if token.kind != "end":
            what = "')' closes no '('" if token.kind == "close" else f"unexpected {token.text!r}"
            raise QueryError(f"{what}; expected '+', '*' or the end of the expression", token.start)
        return node

    def parse_list(self) -> Node:
        parts = [self.parse_dependent()]
        while self.peek().kind == "plus":
            self.take()
            parts.append(self.parse_dependent())
        if len(parts) == 1:
            return parts[0]
        return Parallel(parts=parts, start=parts[0].start, end=parts[-1].end)

    def parse_dependent(self) -> Node:
        node = self.parse_atomic()
        while self.peek().kind == "times":
            operator = self.take().start
            right = self.parse_atomic()
            node = Dependent(
                left=node, right=right, start=node.start, end=right.end, operator=operator
            )
        return node

    def parse_atomic(self) -> Node:
        token = self.take()
        if token.kind == "question":
            return _atomic(token)
        if token.kind == "open":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError(f"parentheses nest deeper than {MAX_DEPTH}", token.start)
            node = self.parse_list()
            closing = self.take()
            if closing.kind != "close":
                raise QueryError(
                    f"'(' at position {token.start} is never closed; expected ')'",
                    closing.start,
                )
            self.depth -= 1
            return node
        expected = "a question or '('"
        if token.kind == "end":
            raise QueryError(f"the expression ends where {expected} was expected", token.start)
        raise QueryError(
            f"{token.text!r} where {expected} was expected (an empty part?)", token.start
        )


def _atomic(token: _Token) -> Atomic:
    question = token.text.strip()
    start = token.start + (len(token.text) - len(token.text.lstrip()))
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryError(
            f"a question of {len(question)} characters; keep each under {MAX_QUESTION_CHARS}", start
        )
    names = []
    for match in _PLACEHOLDER.finditer(question):
        name = match.group(1).strip()
        where = start + match.start()
        if not _NAME.fullmatch(name) or len(name) > MAX_NAME_CHARS:
            raise QueryError(
                f"placeholder {{{match.group(1)[:MAX_NAME_CHARS]}}} must be a short name of "
                "letters, digits and _ (e.g. {company})",
                where,
            )
        names.append(name)
    if not _PLACEHOLDER.sub("", question).strip():
        raise QueryError("a part holds only a placeholder: write the question around it", start)
    return Atomic(question=question, placeholders=names, start=start, end=start + len(question))


def parse(expression: str) -> Node:
    """The syntax tree of ``expression`` with its leaves numbered, or a ``QueryError``."""
    tree = _Parser(expression).parse()
    found = leaves(tree)
    if len(found) > MAX_LEAVES:
        raise QueryError(
            f"{len(found)} questions; at most {MAX_LEAVES} per expression", found[MAX_LEAVES].start
        )
    for number, leaf in enumerate(found, 1):
        leaf.leaf = number
    return tree


# -- validation ------------------------------------------------------------------------------
def validate(tree: Node) -> dict[str, Dependent]:
    """QCompiler's DFS check. Returns each placeholder name with the '*' that fills it (the
    innermost one whose right side holds it); refuses a '*' whose right side has no placeholder
    (missing dependency), a placeholder outside every right side (erroneous dependency), and a
    name filled by two '*'."""
    bound: dict[str, Dependent] = {}
    free = _free(tree, bound)
    if free:
        name, position = free[0]
        raise QueryError(
            f"{{{name}}} has nothing to depend on: a placeholder stands in the part after a '*' "
            "and is filled with the answer of the part before it. Put a question before it with "
            "'*', or write the value instead of the placeholder",
            position,
        )
    return bound


def _free(node: Node, bound: dict[str, Dependent]) -> list[tuple[str, int]]:
    """Placeholders used under ``node`` that no '*' under it fills, with their positions."""
    if isinstance(node, Atomic):
        found = []
        for match in _PLACEHOLDER.finditer(node.question):
            found.append((match.group(1).strip(), node.start + match.start()))
        return found
    if isinstance(node, Parallel):
        return [used for part in node.parts for used in _free(part, bound)]
    left = _free(node.left, bound)
    needed = _free(node.right, bound)
    if not needed:
        raise QueryError(
            "the part after this '*' uses no placeholder: name what it takes from the answer "
            "of the part before, e.g. 'Which company ... * What was {company}'s revenue', or "
            "use '+' if the parts are independent",
            node.operator,
        )
    for name, position in needed:
        other = bound.get(name)
        if other is not None and other is not node:
            raise QueryError(
                f"{{{name}}} is filled by two '*' (at positions {other.operator} and "
                f"{node.operator}); give each dependency its own name",
                position,
            )
        bound[name] = node
    return left
