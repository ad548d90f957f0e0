"""Which client SQL may run: one read-only SELECT that reads the index and nothing about the host.

The connection already refuses writes, files, extensions and settings (``storage/reader.py``);
this check runs first so the client is told *why* in words it can act on, and it closes what the
connection leaves open: functions that show the host's paths and settings (``duckdb_settings()``,
``current_setting()``, ``duckdb_databases()``). DuckDB's own parser decides: the statement is
split with ``extract_statements`` and its syntax tree read from ``json_serialize_sql``, so a
write hidden in a ``WITH`` is named as the write it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from storage.values import scrub

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
    "pragma_table_info",
    "pragma_show",
}
_HOST_FACTS = {"current_setting", "pg_settings", "which_secret", "getvariable", "getenv"}
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
        write = _WRITES.get(node.get("type"))
        if write:
            raise SqlRefused(_read_only(f"{write} (inside WITH)"))
        name = (node.get("function_name") or node.get("table_name") or "").lower()
        if name and _shows_host(name):
            raise SqlRefused(
                f"{name} is not available: it describes the server, not the index. "
                "The schema resource docsym://schema lists every table and column"
            )


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
