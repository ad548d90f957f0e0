"""Which client SQL may run: one read-only SELECT that reads the index and nothing about the host.

The connection already refuses writes, files, extensions and settings
(``storage/directory/reader.py``); this check runs first so the client is told *why* in words it
can act on, and it closes what the connection leaves open:
- functions that show the host's paths and settings (``duckdb_settings()``, ``current_setting()``,
  ``duckdb_databases()``);
- functions that run SQL given as text (``query()``, ``json_execute_serialized_sql()``): the text
  may be built from columns or other functions and is known only when the statement runs, after
  this check, so these are refused rather than checked; the client writes the query directly;
- every table function not named here: the generators, JSON and the schema catalogue are allowed,
  and one a new DuckDB release adds stays refused until someone classifies it
  (``tests/test_sql_functions.py`` lists every DuckDB function that takes SQL or a path).

DuckDB's own parser decides: the statement is split with ``extract_statements`` and its syntax
tree read from ``json_serialize_sql``, so a write hidden in a ``WITH`` is named as the write it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from docsym.runtime.bounds import scrub

# Bounded before DuckDB parses anything: parse time and memory grow with the text.
MAX_SQL_CHARS = 20_000

# Catalogue functions a client may use to learn the schema; other duckdb_*/pragma_* ones show
# paths, settings, secrets or memory of the host.
_ALLOWED_CATALOGUE = {
    "duckdb_tables",
    "duckdb_columns",
    "duckdb_views",
    "duckdb_indexes",
    "duckdb_constraints",
    "duckdb_types",
    "duckdb_functions",
    "duckdb_keywords",
    "duckdb_schemas",
    "duckdb_sequences",
    "duckdb_dependencies",
    "pragma_table_info",
    "pragma_show",
}
# The table functions client SQL may call: row generators, JSON and the catalogue. The others read
# files, run SQL, describe the server or change its state.
TABLE_FUNCTIONS = frozenset(
    {"range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree"}
    | _ALLOWED_CATALOGUE
)
# Functions whose argument is SQL (or a table's name) as text, and what they do with it.
_RUNS_TEXT = {
    "query": "runs SQL given as text",
    "query_table": "reads tables named by text",
    "json_execute_serialized_sql": "runs SQL given as a serialized syntax tree",
    "json_serialize_plan": "binds SQL given as text and folds the settings it reads into its plan",
}
# Host facts by name, with the macros and system views that read refused functions (their bodies
# are expanded after this check): get_block_size reads pragma_database_size(), pg_database
# duckdb_databases(), pg_prepared_statements duckdb_prepared_statements().
_HOST_FACTS = {
    "current_setting",
    "pg_settings",
    "which_secret",
    "getvariable",
    "getenv",
    "get_block_size",
    "pg_database",
    "pg_prepared_statements",
}
_WRITES = {
    "DELETE_QUERY_NODE": "DELETE",
    "INSERT_QUERY_NODE": "INSERT",
    "UPDATE_QUERY_NODE": "UPDATE",
    "MERGE_INTO_QUERY_NODE": "MERGE",
}


class SqlRefused(ValueError):
    """The statement may not run; the message says why and how to write one that may."""


def check_statement(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise ``SqlRefused`` unless ``sql`` is one SELECT that reads only the index."""
    check_length(sql)
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRefused(f"SQL does not parse: {scrub(str(exc))}") from None
    if len(statements) != 1:
        raise SqlRefused(
            f"one statement per call, got {len(statements)}: send them as separate run_sql calls"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise SqlRefused(_read_only(kind.name))
    _check_tree(con, sql)


def check_length(sql: str) -> None:
    """Refuse an empty statement or one too long to parse within the budget."""
    if not sql or not sql.strip():
        raise SqlRefused("empty SQL: give one SELECT statement")
    if len(sql) > MAX_SQL_CHARS:
        raise SqlRefused(
            f"statement of {len(sql):,} characters is over the limit of {MAX_SQL_CHARS:,}: "
            "filter with WHERE or a join instead of a long literal list"
        )


def _check_tree(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if tree.get("error"):
        raise SqlRefused(f"SQL does not parse: {scrub(str(tree.get('error_message')))}")
    for node in _nodes(tree):
        reason = _refusal(node)
        if reason:
            raise SqlRefused(reason)


def _refusal(node: dict) -> str | None:
    """Why one node of the syntax tree may not run; None if it may."""
    write = _WRITES.get(node.get("type"))
    if write:
        return _read_only(f"{write} (inside WITH)")
    if node.get("type") == "TABLE_FUNCTION":
        function = node.get("function") or {}
        return _table_function_refusal(str(function.get("function_name", "")).lower())
    return _name_refusal((node.get("function_name") or node.get("table_name") or "").lower())


def _name_refusal(name: str) -> str | None:
    """Why a function, table or view of this name may not be read; None if it may."""
    if name in _RUNS_TEXT:
        return (
            f"{name} {_RUNS_TEXT[name]}, which cannot be checked before it runs: write the "
            "query directly (name the table in FROM, or use a subquery or a WITH clause)"
        )
    if name and _shows_host(name):
        return (
            f"{name} is not available: it describes the server, not the index. "
            "The schema resource docsym://schema lists every table and column"
        )
    return None


def _table_function_refusal(name: str) -> str | None:
    if name in TABLE_FUNCTIONS:
        return None
    reason = _name_refusal(name)
    if reason:
        return reason
    if _reads_files(name):
        return (
            f"{name} reads files, and file access is disabled for client SQL: the documents "
            "are in the index's tables (docsym://schema lists them)"
        )
    return (
        f"{name} is not a table function client SQL may call; these are: "
        f"{', '.join(sorted(TABLE_FUNCTIONS))}. docsym://schema lists the index's tables"
    )


def _reads_files(name: str) -> bool:
    """The naming DuckDB gives its file readers (only the message depends on it)."""
    return name.startswith(("read_", "parquet_", "sniff_")) or name == "glob"


def _shows_host(name: str) -> bool:
    if name in _HOST_FACTS:
        return True
    return name.startswith(("duckdb_", "pragma_")) and name not in _ALLOWED_CATALOGUE


def _read_only(kind: str) -> str:
    return (
        f"only read-only SELECT queries are allowed, and this statement is a {kind}: the index "
        "cannot be modified, and files, extensions and settings are not reachable from SQL"
    )


def _nodes(value: Any) -> Iterator[dict]:
    """Every dict in a JSON tree, depth first (iteratively: trees of deep nesting are fine)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
