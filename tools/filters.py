"""The filter language of vector search: a small boolean language over the fields of a
search entry, compiled to a parameterised SQLite WHERE fragment.

Example: ``(table_name == "chunks" or table_name == 'pages') and not doc_id in ['d1']``.

Safety comes from the shape of the compiler, not from escaping: literals only ever become ``?``
parameters and column names only ever come from ``FIELDS``, so no input text reaches the SQL.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from docsym.tools.errors import ToolError

FIELDS: dict[str, str] = {
    "table_name": "text",
    "column_name": "text",
    "primary_key": "text",
    "doc_id": "text",
    "page_number": "integer",
}

MAX_FILTER_CHARS = 4000
MAX_LIST_LITERALS = 200
MAX_TOTAL_LITERALS = 500
MAX_NESTING = 50

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _field_list() -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in FIELDS.items())


OPERATORS_HELP = (
    f"Filter fields: {_field_list()}. "
    "Comparisons: field == value (or =), !=, <, <=, >, >=; "
    "field in [v1, v2] and field not in [...] (parentheses also work for lists); "
    "text_field like 'pattern' / not like ('%' = any run of characters, '_' = one character, "
    "ASCII case-insensitive; write \\% or \\_ for a literal percent or underscore); "
    "field == null / field != null (also: is null, is not null). "
    "Combine with and / or / not (also &&, ||, !) and parentheses; not binds tightest, then and, "
    "then or. Strings use single or double quotes; escape a quote by doubling it or "
    "with a backslash (\\\\ is a backslash, \\n a newline). Numbers: 3, -2, 2.5. Text fields take "
    "strings, integer fields take numbers. "
    "Examples: doc_id == 'paper1' and page_number >= 3; primary_key in ['a', 'b']; "
    "table_name == 'sections'; column_name like 'sum%'. "
    f"Limits: {MAX_FILTER_CHARS} characters, {MAX_LIST_LITERALS} values per list, "
    f"{MAX_TOTAL_LITERALS} values in all, nesting depth {MAX_NESTING}."
)


class FilterError(ToolError):
    """The filter text is not a valid filter; the message gives the position and what was
    expected there."""

    def __init__(self, text: str, position: int, problem: str) -> None:
        self.position = position
        self.problem = problem
        super().__init__(
            f"filter error at position {position}: {problem}\n{_caret(text, position)}"
        )


def _caret(text: str, position: int, width: int = 40) -> str:
    """An excerpt of the filter around ``position`` with a caret under it. Control characters
    become spaces so the caret stays aligned."""
    start = max(0, position - width)
    end = min(len(text), position + width)
    excerpt = "".join(c if c.isprintable() else " " for c in text[start:end])
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(text) else ""
    return f"  {prefix}{excerpt}{suffix}\n  {' ' * (len(prefix) + position - start)}^"


# ---------------------------------------------------------------- syntax tree


@dataclass(frozen=True, slots=True)
class Everything:
    pass


@dataclass(frozen=True, slots=True)
class Comparison:
    field: str
    op: str  # one of =, !=, <, <=, >, >=
    value: str | int | float


@dataclass(frozen=True, slots=True)
class NullCheck:
    field: str
    is_null: bool


@dataclass(frozen=True, slots=True)
class Membership:
    field: str
    values: tuple[str | int | float, ...]
    negated: bool


@dataclass(frozen=True, slots=True)
class Like:
    field: str
    pattern: str  # backslash is the escape character
    negated: bool


@dataclass(frozen=True, slots=True)
class Conjunction:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Disjunction:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Negation:
    part: Node


Node = (
    Everything | Comparison | NullCheck | Membership | Like | Conjunction | Disjunction | Negation
)


@dataclass(frozen=True)
class Filter:
    """A parsed filter. ``compile()`` gives the SQL and its parameters with bare column names;
    ``compile(alias)`` prefixes them when the entries table is aliased in the caller's query."""

    text: str
    node: Node

    def compile(self, alias: str | None = None) -> tuple[str, list]:
        if alias is not None and not _IDENT.fullmatch(alias):
            raise ValueError(f"table alias must be a plain identifier, got {alias!r}")
        params: list = []
        prefix = f"{alias}." if alias else ""
        return _to_sql(self.node, prefix, params), params


# ---------------------------------------------------------------- tokens

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_SYMBOLS = ("==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "!", "(", ")", "[", "]", ",")
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_KEYWORDS = {"and", "or", "not", "in", "like", "null", "is"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # word, string, number, symbol, end
    text: str  # source text (lower-cased for keywords)
    position: int
    value: str | int | float | None = None
    like_pattern: str | None = None  # strings only: the value with \% and \_ kept escaped

    def describe(self) -> str:
        if self.kind == "end":
            return "end of input"
        if self.kind == "string":
            shown = self.value if len(self.value) <= 20 else self.value[:20] + "..."
            return f"string {shown!r}"
        if self.kind == "number":
            return f"number {self.text}"
        return repr(self.text)


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c in "'\"":
            token, i = _read_string(text, i)
            tokens.append(token)
        elif _NUMBER.match(text, i):
            token, i = _read_number(text, i)
            tokens.append(token)
        elif match := _IDENT.match(text, i):
            word = match.group()
            lowered = word.lower()
            tokens.append(_Token("word", lowered if lowered in _KEYWORDS else word, i))
            i = match.end()
        else:
            symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
            if symbol is None:
                raise FilterError(text, i, f"unexpected character {c!r}")
            tokens.append(_Token("symbol", symbol, i))
            i += len(symbol)
    tokens.append(_Token("end", "", len(text)))
    return tokens


def _read_string(text: str, start: int) -> tuple[_Token, int]:
    """A quoted string from ``start``. Builds two readings: the plain value, and the LIKE
    pattern in which \\% and \\_ stay escaped and a literal backslash is escaped, so that
    backslash can serve as the LIKE escape character."""
    quote = text[start]
    value: list[str] = []
    pattern: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if text.startswith(quote, i + 1):  # doubled quote
                value.append(quote)
                pattern.append(quote)
                i += 2
                continue
            token = _Token("string", text[start : i + 1], start, "".join(value), "".join(pattern))
            return token, i + 1
        if c != "\\":
            value.append(c)
            pattern.append(c)
            i += 1
            continue
        escaped = text[i + 1 : i + 2]
        if escaped in ("%", "_"):
            value.append(escaped)
            pattern.append("\\" + escaped)
        elif escaped in _SIMPLE_ESCAPES:
            value.append(_SIMPLE_ESCAPES[escaped])
            pattern.append("\\\\" if escaped == "\\" else _SIMPLE_ESCAPES[escaped])
        elif escaped == "":
            break
        else:
            raise FilterError(
                text,
                i,
                f"unknown escape '\\{escaped}' in string; use \\\\, \\', \\\", \\n, \\t, \\r, "
                "\\% or \\_",
            )
        i += 2
    raise FilterError(text, start, f"string starting here is never closed (missing {quote})")


def _read_number(text: str, start: int) -> tuple[_Token, int]:
    match = _NUMBER.match(text, start)
    assert match is not None  # the caller saw a digit
    end = match.end()
    if end < len(text) and (text[end].isalnum() or text[end] in "._"):
        raise FilterError(text, start, f"invalid number {text[start : end + 1]!r}")
    source = match.group()
    if match.group(1) or match.group(2):
        number: int | float = float(source)
        if not math.isfinite(number):
            raise FilterError(text, start, f"number {source} is too large")
    else:
        digits = source.lstrip("-")
        number = int(source) if len(digits) <= 20 else _INT64_MAX + 1
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise FilterError(
                text, start, f"integer {source[:30]} is out of range (64-bit integers only)"
            )
    return _Token("number", source, start, number), end


# ---------------------------------------------------------------- parser

_COMPARISONS = {
    "==": "=",
    "=": "=",
    "!=": "!=",
    "<>": "!=",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
}


class _Parser:
    """Recursive descent with an explicit nesting budget, so deep input gives a FilterError
    long before Python's recursion limit."""

    def __init__(self, text: str, tokens: list[_Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.depth = 0
        self.literal_count = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def at(self, *texts: str) -> bool:
        return self.current.kind in ("word", "symbol") and self.current.text in texts

    def fail(self, token: _Token, expected: str) -> FilterError:
        return FilterError(
            self.text, token.position, f"expected {expected}, got {token.describe()}"
        )

    def parse(self) -> Node:
        node = self.parse_or()
        if self.current.kind != "end":
            if self.at(")"):
                raise FilterError(self.text, self.current.position, "unmatched ')'")
            raise self.fail(self.current, "'and', 'or' or end of input")
        return node

    def parse_or(self) -> Node:
        parts = [self.parse_and()]
        while self.at("or", "||"):
            operator = self.advance()
            parts.append(self.parse_and(after=operator.text))
        return parts[0] if len(parts) == 1 else Disjunction(tuple(parts))

    def parse_and(self, after: str | None = None) -> Node:
        parts = [self.parse_unary(after)]
        while self.at("and", "&&"):
            operator = self.advance()
            parts.append(self.parse_unary(after=operator.text))
        return parts[0] if len(parts) == 1 else Conjunction(tuple(parts))

    def parse_unary(self, after: str | None = None) -> Node:
        if self.at("not", "!"):
            operator = self.advance()
            self.enter(operator)
            node = Negation(self.parse_unary(after=operator.text))
            self.depth -= 1
            return node
        if self.at("("):
            opening = self.advance()
            self.enter(opening)
            node = self.parse_or()
            if not self.at(")"):
                raise self.fail(
                    self.current, f"')' to close the '(' at position {opening.position}"
                )
            self.advance()
            self.depth -= 1
            return node
        return self.parse_predicate(after)

    def enter(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise FilterError(
                self.text, token.position, f"filter is nested more than {MAX_NESTING} levels deep"
            )

    def parse_predicate(self, after: str | None) -> Node:
        token = self.current
        where = f" after {after!r}" if after else ""
        if token.kind != "word" or token.text in _KEYWORDS:
            raise self.fail(token, f"a condition such as doc_id == 'x'{where}")
        if token.text not in FIELDS:
            raise FilterError(
                self.text,
                token.position,
                f"unknown field {token.text!r}; valid fields are {', '.join(FIELDS)}",
            )
        field = self.advance().text
        if self.at(*_COMPARISONS):
            return self.parse_comparison(field, self.advance())
        if self.at("is"):
            self.advance()
            negated = self.at("not")
            if negated:
                self.advance()
            if not self.at("null"):
                raise self.fail(self.current, "'null' after 'is'" if not negated else "'null'")
            self.advance()
            return NullCheck(field, is_null=not negated)
        negated = self.at("not")
        if negated:
            self.advance()
        if self.at("in"):
            self.advance()
            return Membership(field, self.parse_list(field), negated)
        if self.at("like"):
            return Like(field, self.parse_pattern(field, self.advance()), negated)
        if negated:
            raise self.fail(self.current, "'in' or 'like' after 'not'")
        raise self.fail(
            self.current,
            f"an operator (==, !=, <, <=, >, >=, in, not in, like, not like, is null) after "
            f"field {field!r}",
        )

    def parse_comparison(self, field: str, operator: _Token) -> Node:
        op = _COMPARISONS[operator.text]
        if self.at("null"):
            null = self.advance()
            if op not in ("=", "!="):
                raise FilterError(
                    self.text, null.position, f"null can only be compared with == or !=, not {op}"
                )
            return NullCheck(field, is_null=op == "=")
        return Comparison(field, op, self.parse_value(field, operator.text))

    def parse_value(self, field: str, after: str) -> str | int | float:
        token = self.current
        if token.kind not in ("string", "number"):
            raise self.fail(token, f"a value (string or number) after {after!r}")
        kind = FIELDS[field]
        wanted = "string" if kind == "text" else "number"
        if token.kind != wanted:
            raise FilterError(
                self.text,
                token.position,
                f"{field} is {'an' if kind == 'integer' else 'a'} {kind} field, so it needs a "
                f"{wanted}, got {token.describe()}",
            )
        self.literal_count += 1
        if self.literal_count > MAX_TOTAL_LITERALS:
            raise FilterError(
                self.text, token.position, f"filter has more than {MAX_TOTAL_LITERALS} values"
            )
        self.advance()
        assert token.value is not None
        return token.value

    def parse_list(self, field: str) -> tuple[str | int | float, ...]:
        if not self.at("[", "("):
            raise self.fail(self.current, "a list such as ['a', 'b'] after 'in'")
        opening = self.advance()
        closing = "]" if opening.text == "[" else ")"
        values: list[str | int | float] = []
        while True:
            if self.at(closing) and values:  # allows a trailing comma
                break
            if len(values) == MAX_LIST_LITERALS:
                raise FilterError(
                    self.text,
                    self.current.position,
                    f"list has more than {MAX_LIST_LITERALS} values",
                )
            values.append(self.parse_value(field, "," if values else opening.text))
            if self.at(","):
                self.advance()
            elif not self.at(closing):
                raise self.fail(self.current, f"',' or '{closing}' in the list")
        self.advance()
        return tuple(values)

    def parse_pattern(self, field: str, keyword: _Token) -> str:
        if FIELDS[field] != "text":
            raise FilterError(
                self.text, keyword.position, f"like works only on text fields; {field} is not one"
            )
        token = self.current
        if token.kind != "string":
            raise self.fail(token, "a quoted pattern such as 'sum%' after 'like'")
        self.parse_value(field, "like")
        assert token.like_pattern is not None
        return token.like_pattern


def parse_filter(text: str) -> Filter:
    """Parse filter text; empty or blank text gives a filter that matches every entry."""
    if not isinstance(text, str):
        raise ToolError(f"filter must be a string, got {type(text).__name__}")
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(
            text[: MAX_FILTER_CHARS + 20],
            MAX_FILTER_CHARS,
            f"filter is too long ({len(text)} characters; the limit is {MAX_FILTER_CHARS})",
        )
    _check_characters(text)
    tokens = _tokenize(text)
    if tokens[0].kind == "end":
        return Filter(text, Everything())
    return Filter(text, _Parser(text, tokens).parse())


def _check_characters(text: str) -> None:
    """NUL and lone surrogates cannot be bound as SQLite text faithfully (LIKE stops at NUL;
    surrogates are not UTF-8), so they are refused up front rather than misbehaving later."""
    for position, c in enumerate(text):
        if c == "\0" or "\ud800" <= c <= "\udfff":
            raise FilterError(text, position, f"character {c!r} is not allowed in a filter")


# ---------------------------------------------------------------- SQL

_SQL_OPERATORS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _to_sql(node: Node, prefix: str, params: list) -> str:
    match node:
        case Everything():
            return "TRUE"
        case Comparison(field, op, value):
            params.append(value)
            return f"{prefix}{_column(field)} {_SQL_OPERATORS[op]} ?"
        case NullCheck(field, is_null):
            return f"{prefix}{_column(field)} IS {'' if is_null else 'NOT '}NULL"
        case Membership(field, values, negated):
            params.extend(values)
            marks = ", ".join("?" * len(values))
            return f"{prefix}{_column(field)} {'NOT ' if negated else ''}IN ({marks})"
        case Like(field, pattern, negated):
            params.append(pattern)
            return f"{prefix}{_column(field)} {'NOT ' if negated else ''}LIKE ? ESCAPE '\\'"
        case Conjunction(parts):
            return "(" + " AND ".join(_to_sql(p, prefix, params) for p in parts) + ")"
        case Disjunction(parts):
            return "(" + " OR ".join(_to_sql(p, prefix, params) for p in parts) + ")"
        case Negation(part):
            return f"NOT ({_to_sql(part, prefix, params)})"
    raise TypeError(f"not a filter node: {node!r}")


def _column(field: str) -> str:
    # Re-checked here so that a hand-built node can never put arbitrary text into SQL.
    if field not in FIELDS:
        raise ValueError(f"unknown filter field {field!r}")
    return field
