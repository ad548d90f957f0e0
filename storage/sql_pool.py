"""Client SQL runs in worker processes that cannot outlive their time or memory budget.

Each statement goes to an idle worker of a ``runtime/process_pool.py`` pool
(``storage/sql_worker.py``); the worker checks, parses and runs it under its address-space cap,
so the budget holds for every step, parse included. A worker that does not answer within the
time budget is killed, and the next statement gets a fresh one. At most
``DOCSYM_SQL_WORKERS`` statements run at once; a statement that finds them all busy waits
``DOCSYM_SQL_WAIT_SECONDS`` at most, then is told the server is busy, so a few hostile calls
cannot queue up behind each other and starve the rest.

This sandbox (with ``sql_check.py`` and ``sql_worker.py``) stays in ``storage/``: it is the read
side of the store, how an index directory answers ``Store.client_sql``, and it opens the
index with ``storage/directory/reader.py``; the PostgreSQL store reuses its refusals and row
bounds. The
pool and the process budget are not storage and live in ``runtime/``, which page rendering and
the indexer's workers share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from docsym.runtime.process_pool import PoolLimits, ProcessPool, WorkerStopped
from docsym.runtime.settings import get_settings
from docsym.storage.sql_check import SqlRefused, check_length

# A worker holding more than this after a statement is replaced, so idle workers stay small
# (one that has just opened the index holds ~85 MB).
RECYCLE_MB = 256


def sql_limits(**overrides: Any) -> PoolLimits:
    """The limits for client SQL, from the settings' ``sql_*`` fields, any of them replaced."""
    s = get_settings()
    limits = PoolLimits(s.sql_seconds, s.sql_memory_mb, s.sql_workers, s.sql_wait_seconds)
    return replace(limits, **overrides)


@dataclass(frozen=True)
class SqlRows:
    columns: list[str]
    rows: list[list[Any]]
    more: bool  # rows were cut (by the row limit or the reply size)


class SqlStopped(RuntimeError):
    """A statement hit a hard limit, or no worker was free; the message names which."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit  # "time", "memory", "busy" or "crash"


class SqlFailed(ValueError):
    """The worker refused the statement or DuckDB raised; the message says why."""


class SqlPool:
    def __init__(self, root: Path, limits: PoolLimits | None = None) -> None:
        self.root = root
        self.limits = limits or sql_limits()
        self.workers = ProcessPool(
            "docsym.storage.sql_worker",
            [str(root.resolve()), str(self.limits.memory_mb)],
            self.limits,
            recycle_mb=RECYCLE_MB,  # DuckDB keeps what a big statement used
        )

    def run(self, sql: str, limit: int) -> SqlRows:
        """Run one statement in a worker; raise ``SqlStopped`` or ``SqlFailed`` if it cannot."""
        try:
            check_length(sql)  # before the text travels to a worker
        except SqlRefused as exc:
            raise SqlFailed(str(exc)) from None
        try:
            reply = self.workers.ask({"sql": sql, "limit": limit})
        except WorkerStopped as stop:
            raise SqlStopped(self._stopped_message(stop), stop.limit) from None
        if "error" in reply:
            if reply["limit"] == "memory":
                raise SqlStopped(
                    f"query stopped by the memory limit ({self.limits.memory_mb} MB): "
                    f"{reply['error']}; select less (fewer rows or columns, shorter strings) "
                    "and retry",
                    "memory",
                )
            raise SqlFailed(reply["error"])
        return SqlRows(reply["columns"], reply["rows"], reply["more"])

    def _stopped_message(self, stop: WorkerStopped) -> str:
        if stop.limit == "busy":
            return (
                f"busy: {self.limits.workers} queries are already running and none finished "
                f"within {self.limits.wait:g} s; retry in a few seconds"
            )
        if stop.limit == "crash":
            return (
                "query stopped: its worker process ended without an answer (most often the "
                f"memory limit, {self.limits.memory_mb} MB); select less and retry"
            )
        return (
            f"query stopped by the time limit ({self.limits.seconds:g} s, after "
            f"{stop.elapsed:.1f} s); narrow it (WHERE doc_id = ..., LIMIT) and retry"
        )

    def close(self) -> None:
        self.workers.close()
