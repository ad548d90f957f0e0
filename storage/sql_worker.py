"""The process that runs client SQL: started by ``storage/sql_pool.py``, one statement at a time.

A thread cannot stop DuckDB inside a long function call (``levenshtein`` of two 160k strings runs
for minutes whatever ``interrupt()`` says), and ``memory_limit`` caps only DuckDB's buffer
manager, not the strings a function builds. A process can be bounded by the kernel: this one caps
its own address space (``RLIMIT_AS``) and is killed by the pool when a statement passes its time
budget (``runtime/process_pool.py``'s ``serve`` runs its loop).

Request: ``{"sql": ..., "limit": ...}``; reply: ``{"columns", "rows", "more"}`` or
``{"error", "limit"}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from docsym.runtime.bounds import jsonable, scrub
from docsym.runtime.process_limits import cap_address_space
from docsym.runtime.process_pool import Note, serve
from docsym.storage.directory.reader import IndexReader
from docsym.storage.paths import IndexNotFoundError
from docsym.storage.sql_check import SqlRefused, check_statement

# What one reply may carry before rows are cut; the tool renders at most ~20k characters.
MAX_REPLY_CHARS = 100_000
MAX_COLUMNS = 200
# Address space DuckDB reserves when it opens a database (measured ~610 MB), for a worker
# started before the index exists.
DUCKDB_RESERVE_MB = 1024


def main() -> None:
    serve(_start)


def _start() -> Callable[[dict[str, Any], Note], dict[str, Any]]:
    root, memory_mb = Path(sys.argv[1]), int(sys.argv[2])
    reader = IndexReader(root, threads=1, memory_mb=memory_mb)
    try:
        reader.connection()  # map DuckDB and the index before the cap is measured
        reserve = 0
    except IndexNotFoundError:
        reserve = DUCKDB_RESERVE_MB
    cap_address_space(memory_mb + reserve)
    return lambda request, _note: _answer(reader, request)


def _answer(reader: IndexReader, request: dict[str, Any]) -> dict[str, Any]:
    try:
        con = reader.connection()
        check_statement(con, request["sql"])
        cursor = con.execute(request["sql"])
        columns = [d[0] for d in cursor.description or []]
        if len(columns) > MAX_COLUMNS:
            raise SqlRefused(
                f"{len(columns)} columns selected, at most {MAX_COLUMNS}: name the columns you need"
            )
        rows, more = bounded_rows(cursor, int(request["limit"]))
        return {"columns": columns, "rows": rows, "more": more}
    except SqlRefused as exc:
        return {"error": str(exc), "limit": None}
    except (duckdb.OutOfMemoryException, MemoryError):
        return {"error": "it needed more memory than that", "limit": "memory"}
    except duckdb.Error as exc:
        return {"error": f"{type(exc).__name__}: {scrub(str(exc))}", "limit": None}
    except FileNotFoundError as exc:
        return {"error": str(exc), "limit": None}


def bounded_rows(cursor: duckdb.DuckDBPyConnection, limit: int) -> tuple[list[list], bool]:
    """Up to ``limit`` rows, fetched in small batches and cut when the reply grows too big."""
    rows: list[list] = []
    size = 0
    while len(rows) <= limit:
        batch = cursor.fetchmany(min(64, limit + 1 - len(rows)))
        if not batch:
            return rows, False
        for row in batch:
            values = [jsonable(v) for v in row]
            size += len(json.dumps(values))
            if size > MAX_REPLY_CHARS or len(rows) == limit:
                return rows, True
            rows.append(values)
    return rows, True


if __name__ == "__main__":
    main()
