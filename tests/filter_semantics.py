"""The filter language's meaning, written again in plain Python: what a filter should select,
evaluated entry by entry with SQL's three-valued logic (NULL ``page_number`` included). The
tests check that SQLite, running the SQL ``tools/filters.py`` compiles, selects the same rows."""

from __future__ import annotations

from collections.abc import Mapping

from docsym.tools.filters import (
    Comparison,
    Conjunction,
    Disjunction,
    Everything,
    Filter,
    Like,
    Membership,
    Negation,
    Node,
    NullCheck,
    parse_filter,
)


def matches(filter: Filter | str, entry: Mapping[str, object]) -> bool:
    """Evaluate the filter on one entry exactly as SQLite would evaluate ``filter.compile()``
    on the same row: comparisons with NULL are unknown, and unknown rows are not matched."""
    if isinstance(filter, str):
        filter = parse_filter(filter)
    return _evaluate(filter.node, entry) is True


def _evaluate(node: Node, entry: Mapping[str, object]) -> bool | None:
    match node:
        case Everything():
            return True
        case Comparison(field, op, value):
            actual = entry.get(field)
            if actual is None:
                return None
            return _ORDER_TESTS[op](_sqlite_order(actual, value))
        case NullCheck(field, is_null):
            return (entry.get(field) is None) == is_null
        case Membership(field, values, negated):
            actual = entry.get(field)
            if actual is None:
                return None
            found = any(_sqlite_order(actual, v) == 0 for v in values)
            return found != negated
        case Like(field, pattern, negated):
            actual = entry.get(field)
            if actual is None:
                return None
            return _like(pattern, actual if isinstance(actual, str) else str(actual)) != negated
        case Conjunction(parts):
            results = [_evaluate(p, entry) for p in parts]
            if False in results:
                return False
            return None if None in results else True
        case Disjunction(parts):
            results = [_evaluate(p, entry) for p in parts]
            if True in results:
                return True
            return None if None in results else False
        case Negation(part):
            result = _evaluate(part, entry)
            return None if result is None else not result
    raise TypeError(f"not a filter node: {node!r}")


_ORDER_TESTS = {
    "=": lambda order: order == 0,
    "!=": lambda order: order != 0,
    "<": lambda order: order < 0,
    "<=": lambda order: order <= 0,
    ">": lambda order: order > 0,
    ">=": lambda order: order >= 0,
}


def _sqlite_order(a: object, b: object) -> int:
    """SQLite's ordering of two non-NULL values: numbers before text before blobs, then by
    value (text by code point, which equals SQLite's UTF-8 byte order)."""
    rank_a, rank_b = _storage_rank(a), _storage_rank(b)
    if rank_a != rank_b:
        return -1 if rank_a < rank_b else 1
    return (a > b) - (a < b)  # type: ignore[operator]


def _storage_rank(value: object) -> int:
    if isinstance(value, int | float):
        return 0
    if isinstance(value, str):
        return 1
    return 2


def _fold(c: str) -> str:
    # SQLite's LIKE folds ASCII letters only.
    return c.lower() if "A" <= c <= "Z" else c


def _like(pattern: str, value: str) -> bool:
    """SQLite ``value LIKE pattern ESCAPE '\\'``. Classic wildcard matching that backtracks
    only to the last '%', so it is O(len(pattern) * len(value)) with no regex blow-up."""
    items = _pattern_items(pattern)
    text = [_fold(c) for c in value]
    p = t = 0
    star_p = star_t = -1
    while t < len(text):
        if p < len(items) and items[p] is _RUN:
            star_p, star_t = p, t
            p += 1
        elif p < len(items) and (items[p] is _ONE or items[p] == text[t]):
            p += 1
            t += 1
        elif star_p >= 0:
            star_t += 1
            p, t = star_p + 1, star_t
        else:
            return False
    return all(item is _RUN for item in items[p:])


_RUN = object()  # '%'
_ONE = object()  # '_'


def _pattern_items(pattern: str) -> list[object]:
    """_RUN, _ONE, or a folded literal character per pattern element."""
    items: list[object] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            items.append(_fold(pattern[i + 1]))
            i += 2
            continue
        items.append(_RUN if c == "%" else _ONE if c == "_" else _fold(c))
        i += 1
    return items
