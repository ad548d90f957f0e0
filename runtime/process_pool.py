"""Worker processes that answer one request at a time under a wall-time and memory budget.

A thread cannot be stopped inside a C call (DuckDB running a statement, MuPDF decoding an
image), and memory a library maps itself raises no ``MemoryError`` in time; a process is bounded
by the kernel. So client SQL (``storage/sql_pool.py``) and page rendering
(``tools/page_render.py``) send each request to a ``ProcessPool``:

- a worker caps its own address space (``runtime/process_limits.py``) once its libraries are
  mapped, lowers its CPU priority so the server's other tools come first, and dies with its
  parent;
- a worker that does not answer within ``PoolLimits.seconds`` is killed, and a fresh one starts
  at once, while the pool waits for the next request; the time counts from when the worker is
  ready (its libraries loaded: PyMuPDF takes over a second), so it bounds the request alone;
- at most ``PoolLimits.workers`` requests run at once; one that finds them all busy waits
  ``PoolLimits.wait`` seconds at most, then is told so, so a few hostile calls cannot queue up
  behind each other and starve the rest;
- a worker that holds more than ``recycle_mb`` after a request is replaced, so idle workers stay
  small whatever a library keeps;
- workers are started by one thread the pool keeps: a worker dies with the thread that started
  it (``PR_SET_PDEATHSIG`` follows the thread), and the server's tool threads end when idle, so
  a worker started by one would die with it and the next call would wait for a new one.

Protocol (``serve`` on the worker's side): the worker writes ``{"ready": true}`` once it has
loaded what it needs; then one JSON request per line on stdin, to which the worker may
write ``{"note": ...}`` lines (what it learned so far, kept if it is then stopped) and then one
JSON reply per line on its original stdout, carrying ``rss_mb``; a reply whose ``payload`` is
bytes is sent as ``"payload": <length>`` and those bytes after the line. Anything else the
worker's libraries print goes to stderr.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

from docsym.runtime.process_limits import die_with_parent, resident_mb

READ_CHUNK = 1 << 16
# A worker not ready this long after it started (its interpreter and libraries loaded) is
# taken for broken; loading takes 0.1-1.5 s.
STARTUP_SECONDS = 60.0
WORKER_NICENESS = 10  # interactive tools of the server go first on a loaded machine

Request = dict[str, Any]
Reply = dict[str, Any]
Note = Callable[[dict[str, Any]], None]
Stop = Literal["time", "crash", "busy"]


@dataclass(frozen=True)
class PoolLimits:
    seconds: float  # wall time of one request
    memory_mb: int  # address space a worker may add to what it maps at start
    workers: int  # requests running at once
    wait: float  # how long a request waits for a busy pool


class WorkerStopped(RuntimeError):
    """A request got no reply: its worker passed the time limit (``time``, killed), ended
    without answering (``crash``, most often its memory cap), or none was free (``busy``)."""

    def __init__(self, limit: Stop, elapsed: float, notes: list[dict[str, Any]]) -> None:
        super().__init__(f"{limit} after {elapsed:.1f} s")
        self.limit = limit
        self.elapsed = elapsed
        self.notes = notes  # what the worker said before it stopped


class _Worker:
    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._pending = bytearray()
        self._ready = False
        self.notes: list[dict[str, Any]] = []

    def ready(self, deadline: float) -> bool:
        """Whether the worker has loaded what it needs; waits for it until ``deadline``."""
        if not self._ready:
            if not self._fill(deadline):
                return False
            del self._pending[: self._pending.index(b"\n") + 1]  # {"ready": true}
            self._ready = True
        return True

    def ask(self, request: Request, deadline: float) -> Reply | None:
        """Send one request; the reply, or None if the deadline passed or the worker died."""
        assert self.process.stdin is not None
        self.notes = []
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return None
        while True:
            if not self._fill(deadline):
                return None
            end = self._pending.index(b"\n")
            reply = json.loads(self._pending[:end])
            del self._pending[: end + 1]
            if "note" in reply:
                self.notes.append(reply["note"])
                continue
            if "payload" in reply:
                size = int(reply["payload"])
                if not self._fill(deadline, size):
                    return None
                reply["payload"] = bytes(self._pending[:size])
                del self._pending[:size]
            return reply

    def _fill(self, deadline: float, size: int | None = None) -> bool:
        """Read until a whole line is pending (or ``size`` bytes); False if the deadline passed
        or the worker died first."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending if size is None else len(self._pending) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return False
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return False
            self._pending += chunk
        return True

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class ProcessPool:
    """Workers running ``python -m module *args``, one request each at a time."""

    def __init__(
        self, module: str, args: list[str], limits: PoolLimits, *, recycle_mb: int
    ) -> None:
        # -P: a checkout in the working directory must not shadow the install
        self.command = [sys.executable, "-P", "-m", module, *args]
        self.limits = limits
        self.recycle_mb = recycle_mb
        self._slots = threading.BoundedSemaphore(limits.workers)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="docsym-worker-starter")

    def ask(self, request: Request) -> Reply:
        """The worker's reply to ``request``; ``WorkerStopped`` if none came."""
        if not self._slots.acquire(timeout=self.limits.wait):
            raise WorkerStopped("busy", self.limits.wait, [])
        try:
            return self._ask(request)
        finally:
            self._slots.release()

    def _ask(self, request: Request) -> Reply:
        worker = self._take()
        ready = worker.ready(time.monotonic() + STARTUP_SECONDS)
        started = time.monotonic()
        reply = worker.ask(request, started + self.limits.seconds) if ready else None
        if reply is None:
            crashed = not ready or worker.process.poll() is not None
            worker.stop()
            self._give_back(self._start())  # loads while the pool is idle
            limit: Stop = "crash" if crashed else "time"
            raise WorkerStopped(limit, time.monotonic() - started, worker.notes)
        if reply.get("rss_mb", 0) > self.recycle_mb:  # a library keeps what a big call used
            worker.stop()
            worker = self._start()
        self._give_back(worker)
        return reply

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                worker.stop()
        return self._start()

    def _start(self) -> _Worker:
        try:
            return self._starter.submit(_Worker, self.command).result()
        except RuntimeError:  # the pool was closed during a call: that call still gets one
            return _Worker(self.command)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                worker.stop()
            else:
                self._idle.append(worker)

    def worker_pids(self) -> list[int]:
        """The idle workers' process ids (for tests and benchmarks)."""
        with self._lock:
            return [w.process.pid for w in self._idle]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()
        self._starter.shutdown(wait=False)


def serve(start: Callable[[], Callable[[Request, Note], Reply]]) -> None:
    """A worker's main loop. ``start`` loads what the worker needs and caps its memory, then
    returns the function answering one request (it may call ``note`` first)."""
    replies = _private_stdout()
    die_with_parent()
    os.nice(WORKER_NICENESS)
    answer = start()
    replies.write(b'{"ready": true}\n')
    replies.flush()

    def note(fact: dict[str, Any]) -> None:
        replies.write(json.dumps({"note": fact}).encode() + b"\n")
        replies.flush()

    for line in sys.stdin.buffer:
        reply = {**answer(json.loads(line), note), "rss_mb": resident_mb()}
        payload = reply.pop("payload", None)
        if payload is not None:
            reply["payload"] = len(payload)
        replies.write(json.dumps(reply).encode() + b"\n" + (payload or b""))
        replies.flush()


def _private_stdout() -> BinaryIO:
    """Replies get their own copy of stdout; anything else printing goes to stderr."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return replies
