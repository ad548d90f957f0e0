"""``run_sql``: one read-only statement against the DuckDB index, bounded in time and size.

Three layers keep it safe: the statement must parse as a single SELECT (this refuses COPY,
ATTACH, INSTALL/LOAD, PRAGMA, SET, EXPORT and multiple statements with a clear reason); the
connection itself is read-only with external access disabled and its configuration locked (so a
SELECT cannot reach files or the network through table functions); and a watchdog interrupts
queries that run past the time limit.
"""

from __future__ import annotations

import threading
from typing import Annotated

import duckdb
from pydantic import Field

from storage.store import Store
from tools.errors import ToolError
from tools.results import TableResult, fit_rows, jsonable
from tools.spec import Arguments, ToolSpec

MAX_ROWS = 500
DEFAULT_ROWS = 50
TIMEOUT_SECONDS = 10.0


class SqlError(ToolError):
    """The statement was refused or failed; the message says why and what to do."""


def run_sql(
    store: Store,
    sql: str,
    limit: int = DEFAULT_ROWS,
    timeout: float = TIMEOUT_SECONDS,
) -> TableResult:
    if not 1 <= limit <= MAX_ROWS:
        raise SqlError(f"limit must be between 1 and {MAX_ROWS}, got {limit}")
    con = store.sql()
    _check_statement(con, sql)
    timer = threading.Timer(timeout, con.interrupt)
    timer.start()
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        fetched = cursor.fetchmany(limit + 1)
    except duckdb.InterruptException:
        raise SqlError(
            f"query stopped after {timeout:g} s; narrow it (WHERE doc_id = ..., LIMIT) and retry"
        ) from None
    except duckdb.Error as exc:
        raise SqlError(f"{type(exc).__name__}: {exc}") from None
    finally:
        timer.cancel()
    more_rows = len(fetched) > limit
    rows = [[jsonable(v) for v in row] for row in fetched[:limit]]
    rows, cut_for_size = fit_rows(rows)
    note = None
    if more_rows or cut_for_size:
        why = "the size cap" if cut_for_size else f"limit={limit}"
        note = (
            f"Showing the first {len(rows)} rows ({why}); more rows exist. Select fewer or "
            "shorter columns, add WHERE conditions, or page with LIMIT/OFFSET in the SQL."
        )
    return TableResult(columns=columns, rows=rows, truncated=note is not None, note=note)


def _check_statement(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    if not sql or not sql.strip():
        raise SqlError("empty SQL: give one SELECT statement")
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlError(f"SQL does not parse: {exc}") from None
    if len(statements) != 1:
        raise SqlError(
            f"one statement per call, got {len(statements)}: send them as separate run_sql calls"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise SqlError(
            f"only read-only SELECT queries are allowed (got {kind.name}); the index cannot be "
            "modified, and files, extensions and settings are not reachable from SQL"
        )


class RunSqlArgs(Arguments):
    sql: Annotated[str, Field(description="One DuckDB SELECT statement.")]
    limit: Annotated[int, Field(ge=1, le=MAX_ROWS, description="Maximum rows to return.")] = (
        DEFAULT_ROWS
    )


RUN_SQL = ToolSpec(
    name="run_sql",
    summary="one DuckDB SELECT over the schema below: facts, counts, cells by header path "
    "(list_contains(col_path, 'X')).",
    description=(
        "Run ONE read-only DuckDB SELECT against the index and get rows back as a table. "
        "The schema resource docsym://schema describes every table and column. Files, "
        "extensions, settings and writes are refused. Results are capped (rows and ~5k "
        "tokens); the note says when rows were cut. Tip: table cells are in table_cells "
        "with row_path/col_path lists, e.g. WHERE list_contains(col_path, 'TREC')."
    ),
    arguments=RunSqlArgs,
    function=run_sql,
)
