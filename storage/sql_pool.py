"""Client SQL runs in worker processes that cannot outlive their time or memory budget.

Each statement goes to an idle worker (``storage/sql_worker.py``); the worker checks, parses and
runs it under its address-space cap, so the budget holds for every step, parse included. A
worker that does not answer within the time budget is killed, and the next statement gets a
fresh one. At most ``workers`` statements run at once; a statement that finds them all busy
waits ``wait`` seconds at most, then is told the server is busy, so a few hostile calls cannot
queue up behind each other and starve the rest.

This sandbox (with ``sql_check.py`` and ``sql_worker.py``) stays in ``storage/``: it is the read
side of the store, how an index directory answers ``Store.client_sql``, and it opens the
index with ``storage/reader.py``; the PostgreSQL store reuses its refusals and row bounds. The
process budget itself is not storage and lives in ``runtime/process_limits.py``, which the
indexer's workers share.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsym.storage.sql_check import SqlRefused, check_length

READ_CHUNK = 1 << 16
# A worker holding more than this after a statement is replaced, so idle workers stay small
# (one that has just opened the index holds ~85 MB).
RECYCLE_MB = 256


@dataclass(frozen=True)
class SqlLimits:
    seconds: float = 10.0  # wall time of one statement, parse included
    memory_mb: int = 1024  # address space a worker may add to what it maps at start
    workers: int = 2  # statements running at once
    wait: float = 2.0  # how long a statement waits for a busy pool


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


class _Worker:
    def __init__(self, root: Path, memory_mb: int) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-P",  # a checkout in the working directory must not shadow the install
                "-m",
                "docsym.storage.sql_worker",
                str(root.resolve()),
                str(memory_mb),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._pending = b""

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any] | None:
        """Send one request; the reply, or None if the deadline passed or the worker died."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return None
        line = self._read_line(deadline)
        return None if line is None else json.loads(line)

    def _read_line(self, deadline: float) -> bytes | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class SqlPool:
    def __init__(self, root: Path, limits: SqlLimits | None = None) -> None:
        self.root = root
        self.limits = limits or SqlLimits()
        self._slots = threading.BoundedSemaphore(self.limits.workers)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, sql: str, limit: int) -> SqlRows:
        """Run one statement in a worker; raise ``SqlStopped`` or ``SqlFailed`` if it cannot."""
        try:
            check_length(sql)  # before the text travels to a worker
        except SqlRefused as exc:
            raise SqlFailed(str(exc)) from None
        if not self._slots.acquire(timeout=self.limits.wait):
            raise SqlStopped(
                f"busy: {self.limits.workers} queries are already running and none finished "
                f"within {self.limits.wait:g} s; retry in a few seconds",
                "busy",
            )
        try:
            return self._run(sql, limit)
        finally:
            self._slots.release()

    def _run(self, sql: str, limit: int) -> SqlRows:
        worker = self._take()
        started = time.monotonic()
        reply = worker.ask({"sql": sql, "limit": limit}, started + self.limits.seconds)
        if reply is None:
            return self._stopped(worker, time.monotonic() - started)
        if reply.get("rss_mb", 0) > RECYCLE_MB:  # DuckDB keeps what a big statement used
            worker.stop()
            worker = _Worker(self.root, self.limits.memory_mb)
        self._give_back(worker)
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

    def _stopped(self, worker: _Worker, elapsed: float) -> SqlRows:
        crashed = worker.process.poll() is not None
        worker.stop()
        self._give_back(_Worker(self.root, self.limits.memory_mb))  # starts while idle
        if crashed:
            raise SqlStopped(
                "query stopped: its worker process ended without an answer (most often the "
                f"memory limit, {self.limits.memory_mb} MB); select less and retry",
                "crash",
            )
        raise SqlStopped(
            f"query stopped by the time limit ({self.limits.seconds:g} s, after "
            f"{elapsed:.1f} s); narrow it (WHERE doc_id = ..., LIMIT) and retry",
            "time",
        )

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                worker.stop()
        return _Worker(self.root, self.limits.memory_mb)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                worker.stop()
            else:
                self._idle.append(worker)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()
