"""The vector-search filter language: parsing, SQL compilation, errors and bounds. Generated
tests check that junk input only ever gives FilterError, and that SQLite running the compiled SQL
agrees with ``tests/filter_semantics.py``'s reading of every valid filter."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docsym.tools.errors import ToolError
from docsym.tools.filters import (
    FIELDS,
    MAX_FILTER_CHARS,
    MAX_LIST_LITERALS,
    MAX_NESTING,
    MAX_TOTAL_LITERALS,
    OPERATORS_HELP,
    Everything,
    Filter,
    FilterError,
    parse_filter,
)
from tests.filter_semantics import matches

TEXT_FIELDS = [name for name, kind in FIELDS.items() if kind == "text"]

# Everything the compiler may emit; any other text in the SQL came from the input.
_SQL_VOCABULARY = re.compile(
    r"ESCAPE '\\'|\b(?:AND|OR|NOT|IN|LIKE|IS|NULL|TRUE|"
    + "|".join(FIELDS)
    + r")\b|<>|<=|>=|[=<>?(),\s]"
)


def _sql_is_pure_vocabulary(sql: str) -> bool:
    return _SQL_VOCABULARY.sub("", sql) == ""


def _sql(text: str) -> str:
    return parse_filter(text).compile()[0]


def _params(text: str) -> list:
    return parse_filter(text).compile()[1]


def _database(entries: list[dict]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute(
        "CREATE TABLE entries (table_name TEXT, column_name TEXT, primary_key TEXT, "
        "doc_id TEXT, page_number INTEGER)"
    )
    con.executemany(
        "INSERT INTO entries VALUES (?, ?, ?, ?, ?)",
        [tuple(entry.get(field) for field in FIELDS) for entry in entries],
    )
    return con


def _sqlite_rows(con: sqlite3.Connection, flt: Filter, alias: str | None = None) -> list[int]:
    sql, params = flt.compile(alias)
    source = "entries AS e" if alias else "entries"
    query = f"SELECT rowid FROM {source} WHERE {sql} ORDER BY rowid"
    return [row[0] for row in con.execute(query, params)]


def _python_rows(flt: Filter, entries: list[dict]) -> list[int]:
    return [rowid for rowid, entry in enumerate(entries, start=1) if matches(flt, entry)]


ENTRIES = [
    {"table_name": "chunks", "column_name": "text", "primary_key": "a", "doc_id": "x",
     "page_number": 3},
    {"table_name": "pages", "column_name": "summary", "primary_key": "b", "doc_id": "x",
     "page_number": 1},
    {"table_name": "sections", "column_name": "Summary_2", "primary_key": "c", "doc_id": "d1",
     "page_number": None},
    {"table_name": "tables", "column_name": "50% off", "primary_key": "it's", "doc_id": "d2",
     "page_number": 7},
]  # fmt: skip


def _rows(text: str) -> list[int]:
    """Matching rowids from Python, after checking that SQLite returns the same."""
    flt = parse_filter(text)
    expected = _python_rows(flt, ENTRIES)
    assert _sqlite_rows(_database(ENTRIES), flt) == expected
    return expected


# ---------------------------------------------------------------- the brief's examples


def test_examples_compile_to_parameterised_sql() -> None:
    flt = parse_filter("doc_id == 'x' and page_number >= 3")
    assert flt.compile() == ("(doc_id = ? AND page_number >= ?)", ["x", 3])
    flt = parse_filter("primary_key in ['a', 'b']")
    assert flt.compile() == ("primary_key IN (?, ?)", ["a", "b"])
    assert _params("table_name == 'sections'") == ["sections"]
    flt = parse_filter(
        "(table_name == \"chunks\" or table_name == 'pages') and not doc_id in ['d1']"
    )
    assert flt.compile() == (
        "((table_name = ? OR table_name = ?) AND NOT (doc_id IN (?)))",
        ["chunks", "pages", "d1"],
    )
    assert _params("column_name like 'sum%'") == ["sum%"]


def test_example_results() -> None:
    assert _rows("doc_id == 'x' and page_number >= 3") == [1]
    assert _rows("primary_key in ['a', 'b']") == [1, 2]
    assert _rows("table_name == 'sections'") == [3]
    assert _rows(
        "(table_name == \"chunks\" or table_name == 'pages') and not doc_id in ['d1']"
    ) == [
        1,
        2,
    ]
    assert _rows("column_name like 'sum%'") == [2, 3]  # LIKE folds ASCII case


def test_compile_with_alias_prefixes_every_column() -> None:
    flt = parse_filter("doc_id == 'x' or page_number is null")
    sql, params = flt.compile("e")
    assert sql == "(e.doc_id = ? OR e.page_number IS NULL)"
    assert params == ["x"]
    assert _sqlite_rows(_database(ENTRIES), flt, alias="e") == [1, 2, 3]
    with pytest.raises(ValueError):
        flt.compile("e; DROP TABLE entries")


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_blank_filter_matches_everything(text: str) -> None:
    flt = parse_filter(text)
    assert flt.node == Everything()
    assert flt.compile() == ("TRUE", [])
    assert _rows(text) == [1, 2, 3, 4]


# ---------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("page_number == 3", [1]),
        ("page_number = 3", [1]),
        ("page_number != 3", [2, 4]),  # NULL is neither equal nor unequal
        ("page_number <> 3", [2, 4]),
        ("page_number < 3", [2]),
        ("page_number <= 3", [1, 2]),
        ("page_number > 3", [4]),
        ("page_number >= 3", [1, 4]),
        ("page_number > 2.5", [1, 4]),
        ("page_number == 3.0", [1]),
        ("page_number > -1", [1, 2, 4]),
        ("doc_id < 'd2'", [3]),
        ("doc_id >= 'x'", [1, 2]),
        ("doc_id in ['x', 'd2']", [1, 2, 4]),
        ("doc_id in ('x', 'd2',)", [1, 2, 4]),
        ("doc_id not in ['x']", [3, 4]),
        ("page_number in [1, 7]", [2, 4]),
        ("page_number not in [1, 7]", [1]),  # NULL NOT IN (...) is unknown
        ("column_name like 'SUM%'", [2, 3]),
        ("column_name like '_ummary'", [2]),
        ("column_name not like '%a%'", [1, 4]),
        ("column_name like '%\\%%'", [4]),
        ("column_name like 'Summary\\_2'", [3]),
        ("column_name like 'Summary\\_%'", [3]),
        ("page_number == null", [3]),
        ("page_number != null", [1, 2, 4]),
        ("page_number is null", [3]),
        ("page_number IS NOT NULL", [1, 2, 4]),
        ("not page_number > 3", [1, 2]),
        ("! (page_number > 3)", [1, 2]),
        ("doc_id == 'x' && page_number > 1", [1]),
        ("doc_id == 'd1' || page_number > 5", [3, 4]),
        ("doc_id == 'd1' OR page_number > 5", [3, 4]),
        ("NOT doc_id == 'x' AnD page_number > 5", [4]),
    ],
)
def test_operators(text: str, rows: list[int]) -> None:
    assert _rows(text) == rows


def test_like_escapes_only_reach_like() -> None:
    """``\\%`` is a literal percent: in LIKE it stays escaped, in == it is just '%'."""
    assert _params("column_name like '50\\%%'") == ["50\\%%"]
    assert _params("column_name == '50\\% off'") == ["50% off"]
    assert _rows("column_name == '50\\% off'") == [4]
    # A backslash in a LIKE pattern is itself escaped, so it matches a literal backslash.
    assert _params("doc_id like 'a\\\\b'") == ["a\\\\b"]
    assert matches(parse_filter("doc_id like 'a\\\\b'"), {"doc_id": "a\\b"})


# ---------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("text", "sql"),
    [
        (
            "doc_id == 'a' or doc_id == 'b' and page_number == 1",
            "(doc_id = ? OR (doc_id = ? AND page_number = ?))",
        ),
        (
            "doc_id == 'a' and doc_id == 'b' or page_number == 1",
            "((doc_id = ? AND doc_id = ?) OR page_number = ?)",
        ),
        ("not doc_id == 'a' and page_number == 1", "(NOT (doc_id = ?) AND page_number = ?)"),
        ("not (doc_id == 'a' and page_number == 1)", "NOT ((doc_id = ? AND page_number = ?))"),
        ("not not doc_id == 'a'", "NOT (NOT (doc_id = ?))"),
        (
            "(doc_id == 'a' or doc_id == 'b') and page_number == 1",
            "((doc_id = ? OR doc_id = ?) AND page_number = ?)",
        ),
        ("((((doc_id == 'a'))))", "doc_id = ?"),
    ],
)
def test_precedence(text: str, sql: str) -> None:
    assert _sql(text) == sql


def test_precedence_changes_results() -> None:
    assert _rows("doc_id == 'd1' or doc_id == 'x' and page_number == 1") == [2, 3]
    assert _rows("(doc_id == 'd1' or doc_id == 'x') and page_number == 1") == [2]


# ---------------------------------------------------------------- quoting


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'it''s'", "it's"),
        ("'it\\'s'", "it's"),
        ('"say ""hi"""', 'say "hi"'),
        ('"say \\"hi\\""', 'say "hi"'),
        ('"it\'s"', "it's"),
        ("'say \"hi\"'", 'say "hi"'),
        ("'back\\\\slash'", "back\\slash"),
        ("'a\\nb\\tc\\rd'", "a\nb\tc\rd"),
        ("''", ""),
        ("'  spaced  '", "  spaced  "),
        ("'ünïcødé 文字'", "ünïcødé 文字"),
        ("'and or not ) ( ] ['", "and or not ) ( ] ["),
    ],
)
def test_string_literals(literal: str, value: str) -> None:
    flt = parse_filter(f"primary_key == {literal}")
    assert flt.compile() == ("primary_key = ?", [value])
    assert matches(flt, {"primary_key": value})


def test_doubled_quote_literal_matches_row() -> None:
    assert _rows("primary_key == 'it''s'") == [4]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        (
            "doc_id == 'x' and",
            17,
            "expected a condition such as doc_id == 'x' after 'and', got end",
        ),
        ("and", 0, "expected a condition"),
        ("doc_id ==", 9, "expected a value (string or number) after '==', got end of input"),
        ("doc_id == and", 10, "expected a value (string or number) after '==', got 'and'"),
        ("doc_id == 'x", 10, "never closed (missing ')"),
        ('doc_id == "x\\"', 10, 'never closed (missing ")'),
        ("doc_id == 'a\\q'", 12, "unknown escape '\\q'"),
        ("doc_id == 'x' @", 14, "unexpected character '@'"),
        ("doc_id == 'x' -- comment", 14, "unexpected character '-'"),
        ("page_number == 12abc", 15, "invalid number '12a'"),
        ("page_number == 99999999999999999999", 15, "out of range"),
        ("page_number == 1e999", 15, "too large"),
        ("title == 'x'", 0, "unknown field 'title'; valid fields are " + ", ".join(FIELDS)),
        ("doc_id 'x'", 7, "expected an operator"),
        ("page_number == 'abc'", 15, "page_number is an integer field, so it needs a number"),
        ("doc_id == 3", 10, "doc_id is a text field, so it needs a string, got number 3"),
        ("page_number in [1, 'a']", 19, "needs a number"),
        ("page_number like '3%'", 12, "like works only on text fields"),
        ("doc_id like 3", 12, "a quoted pattern"),
        ("doc_id in 'a'", 10, "a list such as ['a', 'b']"),
        ("doc_id in []", 11, "expected a value"),
        ("doc_id in ['a' 'b']", 15, "expected ',' or ']'"),
        ("doc_id in ('a']", 14, "expected ',' or ')'"),
        ("(doc_id == 'a'", 14, "')' to close the '(' at position 0"),
        ("doc_id == 'a')", 13, "unmatched ')'"),
        ("doc_id == 'a' doc_id == 'b'", 14, "expected 'and', 'or' or end of input"),
        ("page_number < null", 14, "null can only be compared with == or !="),
        ("doc_id is 'x'", 10, "'null' after 'is'"),
        ("doc_id not == 'x'", 11, "'in' or 'like' after 'not'"),
        ("doc_id == 'a\x00'", 12, "not allowed"),
        ("doc_id == '\ud800'", 11, "not allowed"),
    ],
)
def test_error_positions(text: str, position: int, fragment: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter(text)
    error = caught.value
    assert error.position == position
    assert fragment in str(error)
    first, excerpt, caret = str(error).split("\n")
    assert first.startswith(f"filter error at position {position}: ")
    assert caret == "  " + " " * position + "^"
    assert excerpt.startswith("  ")


def test_filter_error_is_a_tool_error() -> None:
    assert issubclass(FilterError, ToolError)


def test_caret_points_into_long_filters() -> None:
    text = " or ".join(f"doc_id == 'd{i}'" for i in range(30)) + " or doc_id =="
    with pytest.raises(FilterError) as caught:
        parse_filter(text)
    _, excerpt, caret = str(caught.value).split("\n")
    assert excerpt.startswith("  ...")
    assert len(excerpt) < 100
    # The caret sits under the end of the text, right after the dangling '=='.
    assert excerpt[len(caret) - 3 : len(caret) - 1] == "=="


# ---------------------------------------------------------------- bounds


def test_text_length_limit() -> None:
    text = "doc_id == '" + "x" * MAX_FILTER_CHARS + "'"
    with pytest.raises(FilterError, match=f"too long .*limit is {MAX_FILTER_CHARS}") as caught:
        parse_filter(text)
    assert caught.value.position == MAX_FILTER_CHARS


def test_list_literal_limit() -> None:
    def members(n: int) -> str:
        return "page_number in [" + ", ".join(str(i) for i in range(n)) + "]"

    assert len(_params(members(MAX_LIST_LITERALS))) == MAX_LIST_LITERALS
    with pytest.raises(FilterError, match=f"more than {MAX_LIST_LITERALS} values") as caught:
        parse_filter(members(MAX_LIST_LITERALS + 1))
    # The caret points at the first value over the limit.
    assert caught.value.position == members(MAX_LIST_LITERALS + 1).rindex(str(MAX_LIST_LITERALS))


def test_total_literal_limit() -> None:
    def clauses(n: int) -> str:
        lists = [range(start, min(n, start + 200)) for start in range(0, n, 200)]
        return " or ".join(f"page_number in [{','.join(map(str, r))}]" for r in lists)

    flt = parse_filter(clauses(MAX_TOTAL_LITERALS))
    assert len(flt.compile()[1]) == MAX_TOTAL_LITERALS
    # SQLite copes with the largest filter allowed.
    assert _sqlite_rows(_database(ENTRIES), flt) == _python_rows(flt, ENTRIES) == [1, 2, 4]
    with pytest.raises(FilterError, match=f"more than {MAX_TOTAL_LITERALS} values"):
        parse_filter(clauses(MAX_TOTAL_LITERALS + 1))


@pytest.mark.parametrize("opener", ["(", "not ", "!", "( not "])
def test_nesting_limit(opener: str) -> None:
    closer = ")" * opener.count("(")

    def nested(depth: int) -> str:
        return opener * depth + "doc_id == 'x'" + closer * depth

    levels = MAX_NESTING // (opener.count("(") + opener.count("not") + opener.count("!"))
    assert _params(nested(levels)) == ["x"]
    with pytest.raises(FilterError, match=f"nested more than {MAX_NESTING} levels") as caught:
        parse_filter(nested(levels + 1))
    # The caret points at the first opener past the limit.
    assert caught.value.position == len(opener) * levels


@pytest.mark.parametrize("text", ["(" * MAX_FILTER_CHARS, "!" * MAX_FILTER_CHARS, "not " * 1000])
def test_deep_input_never_recurses_out(text: str) -> None:
    with pytest.raises(FilterError, match="nested more than"):
        parse_filter(text)


# ---------------------------------------------------------------- injection


@pytest.mark.parametrize(
    "text",
    [
        "doc_id == 'x' or 1=1 --",
        "doc_id == 'x' or 1=1",
        "doc_id == 'x'; DROP TABLE entries",
        "doc_id) or (1",
        "doc_id == x",
        "doc_id == 'x' or doc_id",
        "1 == 1",
        "rowid > 0",
        "doc_id == 'x' union select * from sqlite_master",
        "doc_id = 'x' /* */",
    ],
)
def test_injection_attempts_are_errors(text: str) -> None:
    with pytest.raises(FilterError):
        parse_filter(text)


@pytest.mark.parametrize(
    "literal",
    [
        "'x'' or 1=1 --'",
        "'x\\' or 1=1 --'",
        '"\'); DROP TABLE entries; --"',
        '\'x" or "1"="1\'',
    ],
)
def test_injection_inside_literals_is_harmless(literal: str) -> None:
    flt = parse_filter(f"doc_id == {literal}")
    assert flt.compile()[0] == "doc_id = ?"
    con = _database(ENTRIES)
    assert _sqlite_rows(con, flt) == []
    assert con.execute("SELECT count(*) FROM entries").fetchone() == (len(ENTRIES),)


def test_help_is_built_from_fields() -> None:
    for name, kind in FIELDS.items():
        assert f"{name} ({kind})" in OPERATORS_HELP
    for operator in ("==", "!=", "<=", ">=", "in", "not in", "like", "and", "or", "not"):
        assert operator in OPERATORS_HELP
    # Every example in the help parses.
    examples = OPERATORS_HELP.split("Examples: ")[1].split(". Limits")[0]
    for example in examples.split("; "):
        assert isinstance(parse_filter(example), Filter)


# ---------------------------------------------------------------- generated junk

_FILTER_WORDS = [
    *FIELDS, "and", "or", "not", "AND", "Or", "in", "like", "is", "null", "&&", "||", "!", "(",
    ")", "[", "]", ",", "==", "=", "!=", "<>", "<", "<=", ">", ">=", "'x'", '"y"', "'a''b'",
    "'%'", "3", "-2", "2.5", "1e3", "'", '"', "\\", ";", "--", "drop", "1=1", "'z\\''",
]  # fmt: skip

_junk = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="doc_id page_number=!<>()[],'\"\\%_&|andortinlike 0123-.;", max_size=80),
    st.lists(st.sampled_from(_FILTER_WORDS), max_size=14).map(" ".join),
)


@settings(max_examples=800, deadline=None, database=None)
@given(text=_junk)
def test_junk_gives_only_filter_errors_and_pure_sql(text: str) -> None:
    try:
        flt = parse_filter(text)
    except FilterError as error:
        assert 0 <= error.position <= len(text)
        return
    sql, params = flt.compile()
    assert _sql_is_pure_vocabulary(sql), sql
    assert sql.count("?") == len(params)
    # Whatever parsed is valid SQLite, and SQLite agrees with matches().
    assert _sqlite_rows(_database(ENTRIES), flt) == _python_rows(flt, ENTRIES)


# ---------------------------------------------------------------- generated valid filters

_TEXT_POOL = ["a", "A", "b", "ab", "aB", "a%b", "a_b", "é", "É", "", "it's", 'say "hi"', "x\\y"]
_safe_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=4,
)
_text_values = st.one_of(st.sampled_from(_TEXT_POOL), _safe_text)
_numbers = st.one_of(
    st.integers(-3, 12), st.sampled_from([2.5, -1.5, 3.0, 1e-05, 1e3, 9.5]), st.integers()
).filter(lambda n: isinstance(n, float) or -(2**63) <= n < 2**63)


def _quote(value: str, quote: str, doubled: bool) -> str:
    body = value.replace("\\", "\\\\")
    body = body.replace(quote, quote * 2 if doubled else "\\" + quote)
    return quote + body + quote


@st.composite
def _string_literals(draw: st.DrawFn, values: st.SearchStrategy[str] = _text_values) -> str:
    return _quote(draw(values), draw(st.sampled_from("'\"")), draw(st.booleans()))


@st.composite
def _like_patterns(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from("'\""))
    pieces = ["a", "A", "b", "%", "_", "\\%", "\\_", "\\\\", "é", " ", "\\'", quote * 2]
    return quote + "".join(draw(st.lists(st.sampled_from(pieces), max_size=6))) + quote


@st.composite
def _predicates(draw: st.DrawFn) -> str:
    field = draw(st.sampled_from(list(FIELDS)))
    is_text = FIELDS[field] == "text"
    literal = _string_literals() if is_text else _numbers.map(repr)
    kinds = ["compare", "member", "null"] + (["like"] if is_text else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "compare":
        op = draw(st.sampled_from(["==", "=", "!=", "<>", "<", "<=", ">", ">="]))
        return f"{field} {op} {draw(literal)}"
    if kind == "member":
        keyword = draw(st.sampled_from(["in", "IN", "not in", "NOT IN"]))
        opening, closing = draw(st.sampled_from(["[]", "()"]))
        items = draw(st.lists(literal, min_size=1, max_size=5))
        return f"{field} {keyword} {opening}{', '.join(items)}{closing}"
    if kind == "like":
        keyword = draw(st.sampled_from(["like", "LIKE", "not like"]))
        return f"{field} {keyword} {draw(_like_patterns())}"
    check = draw(st.sampled_from(["== null", "!= null", "is null", "is not null", "IS NULL"]))
    return f"{field} {check}"


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(
        children, st.sampled_from(["and", "or", "AND", "Or", "&&", "||"]), children
    ).map(" ".join)
    negated = st.tuples(st.sampled_from(["not ", "NOT ", "!", "! "]), children).map("".join)
    grouped = children.map(lambda c: f"({c})")
    return st.one_of(binary, negated, grouped)


_valid_filters = st.recursive(_predicates(), _combine, max_leaves=12)

_entries = st.fixed_dictionaries(
    {
        **{field: st.one_of(st.none(), _text_values) for field in TEXT_FIELDS},
        "page_number": st.one_of(st.none(), st.integers(-3, 12)),
    }
)


@settings(
    max_examples=600, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=_valid_filters, entries=st.lists(_entries, min_size=1, max_size=6))
def test_valid_filters_agree_with_sqlite(text: str, entries: list[dict]) -> None:
    flt = parse_filter(text)
    sql, params = flt.compile()
    assert _sql_is_pure_vocabulary(sql), sql
    con = _database(entries)
    assert _sqlite_rows(con, flt) == _python_rows(flt, entries)
    assert _sqlite_rows(con, flt, alias="e") == _python_rows(flt, entries)


@settings(max_examples=300, deadline=None, database=None)
@given(value=_text_values, quote=st.sampled_from("'\""), doubled=st.booleans())
def test_any_quoted_string_round_trips(value: str, quote: str, doubled: bool) -> None:
    flt = parse_filter(f"doc_id == {_quote(value, quote, doubled)}")
    assert flt.compile()[1] == [value]
    assert matches(flt, {"doc_id": value})
