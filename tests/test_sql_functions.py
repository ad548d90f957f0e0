"""Client SQL reaches neither SQL given as text, nor files, nor host facts through any function
DuckDB has: every function is listed from ``duckdb_functions()`` on a connection opened as the
server opens the index, and each one that takes SQL or a path is classified here, so a DuckDB
release that adds one makes these tests fail until someone decides what it is."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from docsym.storage.directory.reader import IndexReader
from docsym.storage.sql_check import TABLE_FUNCTIONS, SqlRefused, check_statement

# A parameter that takes SQL or names a file, by the words of its name.
SQL_OR_PATH_PARAMETER = re.compile(
    r"(^|_)(sql|query|queries|statement|path|paths|file|files|filename|glob|url|uri|location"
    r"|dir|directory)(_|$)"
)
# A function named like one that reads files or runs SQL.
SQL_OR_PATH_NAME = re.compile(
    r"^(read_|parquet_|sniff_|query|glob|import_|export_|copy_)|_scan$"
    r"|(^|_)(sql|file|files|path|url|glob)(_|$)"
)
# Takes SQL or a path in DuckDB 2.0: the rule above must find each of these.
KNOWN = {
    "query",
    "query_table",
    "json_execute_serialized_sql",
    "json_serialize_plan",
    "json_serialize_sql",
    "read_csv",
    "read_csv_auto",
    "read_json",
    "read_ndjson",
    "read_parquet",
    "parquet_scan",
    "parquet_metadata",
    "read_text",
    "read_blob",
    "read_duckdb",
    "glob",
    "sniff_csv",
    "which_secret",
    "enable_logging",
    "enable_profiling",
    "import_database",
}
# Found by the rule, yet they read no file and run no SQL.
TEXT_ONLY = {
    **dict.fromkeys(
        [
            "->>",
            "json_array_length",
            "json_each",
            "json_exists",
            "json_extract",
            "json_extract_path",
            "json_extract_path_text",
            "json_extract_string",
            "json_insert",
            "json_keys",
            "json_remove",
            "json_replace",
            "json_set",
            "json_tree",
            "json_type",
            "json_value",
        ],
        "a path inside a JSON value",
    ),
    **dict.fromkeys(
        [
            "variant_array_length",
            "variant_exists",
            "variant_extract_string",
            "variant_keys",
            "variant_type",
        ],
        "a path inside a VARIANT value",
    ),
    **dict.fromkeys(
        ["parse_path", "parse_dirname", "parse_dirpath", "path_join", "url_encode", "url_decode"],
        "a path or URL handled as a string",
    ),
    "index_key": "a table of the catalogue named by a struct",
    "in_search_path": "the catalogue's search path",
    "json_serialize_sql": "parses SQL into its syntax tree, without binding or running it",
    "json_deserialize_sql": "prints a syntax tree back as SQL text",
}
CALLABLE = {"scalar", "aggregate", "window", "macro"}


@pytest.fixture(scope="module")
def index_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("functions-index")
    with duckdb.connect(str(root / "index.duckdb")) as con:
        con.execute("CREATE TABLE documents (doc_id VARCHAR)")
    return root / "index.duckdb"


@pytest.fixture(scope="module")
def con(index_file: Path):
    """A connection opened as the server's reader opens the index."""
    reader = IndexReader(index_file.parent)
    yield reader.connection()
    reader.close()


@pytest.fixture(scope="module")
def functions(con) -> dict[str, tuple[set[str], set[str]]]:
    """Every function DuckDB exposes: name -> (its types, the names of its parameters)."""
    rows = con.execute(
        "SELECT function_name, list(DISTINCT function_type), flatten(list(parameters)) "
        "FROM duckdb_functions() GROUP BY function_name"
    ).fetchall()
    return {name: (set(kinds), set(params)) for name, kinds, params in rows}


def _takes_sql_or_path(name: str, parameters: set[str]) -> bool:
    return bool(SQL_OR_PATH_NAME.search(name)) or any(
        SQL_OR_PATH_PARAMETER.search(p) for p in parameters
    )


def _found(functions: dict[str, tuple[set[str], set[str]]]) -> dict[str, set[str]]:
    """The functions that take SQL or a path: name -> its types."""
    return {n: kinds for n, (kinds, params) in functions.items() if _takes_sql_or_path(n, params)}


def _refusal(con, sql: str) -> str | None:
    try:
        check_statement(con, sql)
    except SqlRefused as exc:
        return str(exc)
    return None


def test_the_rule_finds_every_known_function(functions) -> None:
    missed = KNOWN - set(_found(functions))
    assert not missed, f"the rule no longer finds {missed}: widen SQL_OR_PATH_*"


def test_every_table_function_is_allowed_by_name_or_refused(con, functions) -> None:
    """Allowed ones take no SQL and no file; every other one, present or future, is refused."""
    tables = {n for n, (kinds, _) in functions.items() if kinds & {"table", "table_macro"}}
    assert not TABLE_FUNCTIONS - tables  # each allowed one still exists
    for name in sorted(tables):
        refusal = _refusal(con, f'SELECT * FROM "{name}"()')
        if name in TABLE_FUNCTIONS:
            assert refusal is None, (name, refusal)
            assert not _takes_sql_or_path(name, functions[name][1]) or name in TEXT_ONLY, name
        else:
            assert refusal and name in refusal, name


def test_functions_that_take_sql_or_a_path_are_refused_or_read_text_only(con, functions) -> None:
    unclassified = []
    for name, kinds in sorted(_found(functions).items()):
        if not kinds & CALLABLE or name in TEXT_ONLY:
            continue
        if not _refusal(con, f'SELECT "{name}"(NULL)'):
            unclassified.append(name)
    assert not unclassified, (
        "these DuckDB functions take SQL or a path and run for client SQL: refuse them in "
        f"storage/sql_check.py or list them in TEXT_ONLY with the reason: {unclassified}"
    )


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * FROM query('SELECT path FROM duckdb_databases()')", "runs SQL given as text"),
        ("SELECT * FROM query_table('pragma_database_list')", "reads tables named by text"),
        (
            "SELECT * FROM json_execute_serialized_sql("
            "json_serialize_sql('SELECT current_setting(''threads'')'))",
            "runs SQL given as a serialized syntax tree",
        ),
        (
            "SELECT json_serialize_plan('SELECT current_setting(''secret_directory'')', "
            "optimize := true)",
            "binds SQL given as text",
        ),
        ("SELECT * FROM read_csv('data.csv')", "reads files"),
        ("SELECT * FROM histogram(documents, doc_id)", "not a table function client SQL may"),
    ],
)
def test_sql_given_as_text_is_refused_and_told_how_to_write_it(con, sql: str, reason: str) -> None:
    refusal = _refusal(con, sql)
    assert refusal and reason in refusal
    assert "write the query directly" in refusal or "docsym://schema" in refusal


def test_file_readers_fail_on_the_reader_connection_as_well(con, functions, index_file) -> None:
    """Second line: called past the check, every table function that takes a path fails on the
    connection itself (external access is disabled). DuckDB still lets them read the index's
    own file, which is why the check refuses them by name first."""
    other = index_file.parent / "other.csv"
    other.write_text("a,b\n1,2\n")
    readers = [
        name
        for name, kinds in _found(functions).items()
        if "table" in kinds
        and name not in TEXT_ONLY
        and functions[name][1] & {"path", "paths", "file", "pattern"}
    ]
    assert {"read_csv", "read_text", "read_blob", "glob", "parquet_metadata"} <= set(readers)
    for name in sorted(readers):
        error = _call_with_path(con, name, other)
        assert error is not None and "disabled" in str(error), (name, error)
    # The index's own file stays readable to the engine: the check is what keeps it out.
    assert con.execute(f"SELECT count(*) FROM read_blob('{index_file}')").fetchone() == (1,)


def _call_with_path(con, name: str, path: Path) -> duckdb.Error | None:
    """Call a table function on ``path``, adding arguments until one of its forms binds; the
    error it ends with, or None if it ran."""
    for extra in range(4):
        arguments = ", ".join([f"'{path}'", *["'x'"] * extra])
        try:
            con.execute(f"SELECT * FROM {name}({arguments})").fetchall()
            return None
        except duckdb.BinderException as exc:
            if "No function matches" not in str(exc):
                return exc
        except duckdb.Error as exc:
            return exc
    return None


def test_macros_and_system_views_over_refused_functions_are_refused(con, functions) -> None:
    """A macro's body and a system view's query are expanded after the check reads the tree:
    one that reads a refused function must be refused by its own name."""
    macros = con.execute(
        "SELECT function_name, any_value(macro_definition), any_value(parameters) "
        "FROM duckdb_functions() WHERE function_type = 'macro' GROUP BY function_name"
    ).fetchall()
    for name, body, parameters in macros:
        if _refusal(con, f"SELECT {body}"):
            arguments = ", ".join(["NULL"] * len(parameters))
            assert _refusal(con, f'SELECT "{name}"({arguments})'), name
    views = con.execute(
        "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE internal"
    ).fetchall()
    for schema, view, sql in views:
        body = sql.split(" AS ", 1)[1]
        if _refusal(con, body):
            assert _refusal(con, f'SELECT * FROM {schema}."{view}"'), f"{schema}.{view}"


def test_pragmas_are_refused_as_statements(con, functions) -> None:
    for name, (kinds, _) in functions.items():
        if "pragma" in kinds:
            assert _refusal(con, f"PRAGMA {name}") and _refusal(con, f"CALL {name}()"), name
