"""``run_sql``: one read-only statement against the index, bounded in time, memory and size.

Three layers keep it safe: the statement must be a single SELECT that reads only the index
(``storage/sql_check.py`` refuses writes, COPY, ATTACH, PRAGMA, SET, the functions that describe
the host or run SQL given as text, and table functions outside an allowlist, with a reason); the
connection is read-only with external access disabled and its configuration locked; and it runs
in a worker process (``storage/sql_pool.py``) that is killed at the time limit and cannot map
more memory than its budget. On a PostgreSQL store the read-only role and the server's limits do
this work (``storage/postgres/``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from docsym.storage.sql_check import MAX_SQL_CHARS
from docsym.storage.sql_pool import SqlFailed, SqlStopped
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.results import TableResult, fit_rows
from docsym.tools.spec import Arguments, ToolSpec

MAX_ROWS = 500
DEFAULT_ROWS = 50


class SqlError(ToolError):
    """The statement was refused, failed or hit a limit; the message says why and what to do."""


def run_sql(store: Store, sql: str, limit: int = DEFAULT_ROWS) -> TableResult:
    if not 1 <= limit <= MAX_ROWS:
        raise SqlError(f"limit must be between 1 and {MAX_ROWS}, got {limit}")
    try:
        answer = store.client_sql(sql, limit)
    except (SqlStopped, SqlFailed) as exc:
        raise SqlError(str(exc)) from None
    rows, cut_for_size = fit_rows(answer.rows)
    note = None
    if answer.more or cut_for_size:
        why = "the size cap" if cut_for_size or len(rows) < limit else f"limit={limit}"
        note = (
            f"Showing the first {len(rows)} rows ({why}); more rows exist. Select fewer or "
            "shorter columns, add WHERE conditions, or page with LIMIT/OFFSET in the SQL."
        )
    return TableResult(columns=answer.columns, rows=rows, truncated=note is not None, note=note)


class RunSqlArgs(Arguments):
    sql: Annotated[str, Field(description="One SELECT statement.", max_length=MAX_SQL_CHARS)]
    limit: Annotated[int, Field(ge=1, le=MAX_ROWS, description="Maximum rows to return.")] = (
        DEFAULT_ROWS
    )


RUN_SQL = ToolSpec(
    name="run_sql",
    summary="one read-only SELECT over the schema below: facts, counts, cells by header path "
    "('X' = ANY(col_path)).",
    description=(
        "Run ONE read-only SELECT against the index and get rows back as a table: DuckDB SQL "
        "on an index directory, PostgreSQL on a PostgreSQL store (docsym://schema says which). "
        "The schema resource describes every table and column. Files, "
        "extensions, settings and writes are refused. Results are capped (rows and ~5k "
        "tokens); the note says when rows were cut. Tip: table cells are in table_cells "
        "with row_path/col_path lists, e.g. WHERE 'TREC' = ANY(col_path)."
    ),
    arguments=RunSqlArgs,
    function=run_sql,
)
