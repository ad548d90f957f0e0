"""Documents are prepared (parsed, summarised, linked) in worker processes, each under a budget.

A file can be made to hold a parser for ever or to take every byte of memory (a one-line 50 MB
Markdown file, an HTML page nested 100,000 deep, a million-row sheet), and a thread cannot be
stopped inside a C call. So no file is parsed in the indexing process, which plans, writes,
publishes and encodes what was written; a worker process prepares one file at a time under two
bounds:

- **time**: a file whose worker reports no progress (a stage begun, a page read, an OCR page
  read, a batch of vectors encoded, an LLM summary written) for ``stall_seconds`` is stopped:
  the worker and its OCR processes are killed, the file is reported with the limit and the
  setting that raises it, and a fresh worker takes the next file. Progress, not total time, is
  bounded, so a long but healthy document (a 5,000-page manual, a scanned book) is never cut
  off;
- **memory**: before each file, a worker loads the parser the file needs (docling for office
  files), then caps its address space at what it maps then plus ``memory_mb``: the budget is
  the file's own, whatever libraries its format needed. A file that needs more fails inside its
  worker, which is replaced.

Workers start in their own process group (so a kill takes their OCR processes too) and die with
the indexing process. A worker whose resident memory has grown after a file is replaced, so the
next file finds its whole budget.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.indexer.errors import WorkerSetupError
from docsym.indexer.plans import FilePlan, Prepared, WorkerSetup
from docsym.indexer.progress import Beat
from docsym.indexer.worker_output import WorkerOutput, crash_cause, outputs_folder
from docsym.runtime.formats import reads

if TYPE_CHECKING:
    from docsym.indexer.prepare import WorkerState
from docsym.runtime.process_limits import (
    cap_address_space,
    die_with_parent,
    give_back_free_memory,
    lift_address_cap,
    resident_mb,
)

log = logging.getLogger(__name__)

# A worker holding this much more after a file (and after giving freed memory back) than once
# its parser was loaded is replaced: a fragmented heap keeps what a large document used, which
# would sit beside the next file's OCR processes. A parser's libraries are not counted (they
# serve the next file of the format), so a folder of small office files keeps its worker; a
# new worker costs ~1 s, paid after large documents only.
RECYCLE_MB = 256
# How long a worker may take to start (imports; a loaded machine's cold disk takes longest).
START_SECONDS = 600.0
# How often the waiting loop wakes to check deadlines and let the writer publish.
TICK_SECONDS = 1.0


@dataclass(frozen=True)
class Budget:
    stall_seconds: float  # a file showing no progress this long is stopped
    memory_mb: int  # address space a worker may map above what it maps when ready


@dataclass(frozen=True)
class Step:
    """Progress a worker reports: ``what`` (a stage, "read", "ocr", "encode"), ``done`` of
    ``total``."""

    what: str
    done: int = 0
    total: int = 0


# -- in the worker process -------------------------------------------------------------------


def _serve(conn: Connection, setup: WorkerSetup, memory_mb: int, output: str) -> None:
    """A worker's life: start, then prepare each plan it is sent, until told to stop."""
    os.setsid()  # its own process group: killing it kills the OCR processes it starts
    die_with_parent()
    _write_output_to(output, setup.verbose)
    _keep_torch_out()
    from docsym.indexer.prepare import start_worker_state  # the parsers: in workers only

    try:
        state = start_worker_state(setup)
    except Exception as exc:  # no file can be prepared: the run is told why
        conn.send(("broken", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready",))
    try:
        _serve_plans(conn, state, memory_mb)
    finally:
        state.close()


def _write_output_to(path: str, verbose: bool) -> None:
    """Send this process's stderr (C libraries' messages, logs, a fatal signal's Python stack
    from faulthandler) to ``path``, which the indexing process relays and reads a crash's cause
    from: a worker that dies without an answer is then reported with its own last words."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)
    faulthandler.enable()
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def _keep_torch_out() -> None:
    """Workers load no model, but where torch is installed (the torch extra) docling's speech
    presets import it, and transformers, only to ask whether an Apple GPU is there: 190 MB and
    4 s of every worker start that reads an office file. An import of torch here fails as if it
    were not installed, which those presets expect."""
    sys.modules.setdefault("torch", None)  # type: ignore[assignment]
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its note that torch is missing


def _serve_plans(conn: Connection, state: WorkerState, memory_mb: int) -> None:
    while True:
        try:
            plan = conn.recv()
        except EOFError:
            return
        if plan is None:
            return
        if not _prepare_one(conn, plan, state, memory_mb):
            return


def _prepare_one(conn: Connection, plan: FilePlan, state: WorkerState, memory_mb: int) -> bool:
    """Prepare one file under the memory cap and send the result; False if this worker should
    end now (it ran out of memory, and may be left broken)."""
    from docsym.indexer.prepare import refusal

    lift_address_cap()
    failure = refusal(plan, state.limits)  # refused at once: no parser loaded for it
    loaded_mb = resident_mb()
    prepared: Prepared | None = None
    if failure is not None:
        prepared = Prepared(plan, failure=failure)
    else:
        prepared = _load_reader(plan, state)  # its libraries are the worker's, not the file's
        loaded_mb = resident_mb()
    if prepared is None:
        cap_address_space(memory_mb, final=False)
        beat = Beat(lambda what, done, total: conn.send(("step", Step(what, done, total))))
        prepared = _prepare_bounded(plan, state, beat, memory_mb)
    keep = prepared.failure != _memory_failure(memory_mb)
    give_back_free_memory()  # what parsing freed, so the growth sent is what the worker keeps
    try:
        conn.send(("done", prepared, resident_mb() - loaded_mb, keep))
    except MemoryError:  # the result itself did not fit: report the file, not the worker
        conn.send(("done", Prepared(plan, failure=_memory_failure(memory_mb)), 0, False))
        return False
    del prepared
    give_back_free_memory()
    return keep


def _load_reader(plan: FilePlan, state: WorkerState) -> Prepared | None:
    """Load the file's parser; None when loaded, else the file's failure saying why not."""
    from docsym.indexer.prepare import load_reader

    try:
        load_reader(plan.path, state)
    except ImportError as exc:
        return Prepared(plan, failure=missing_library(exc, reads(plan.path).title))
    except Exception as exc:  # a broken install: the file is reported, the next may load
        return Prepared(
            plan,
            failure=f"cannot load the {reads(plan.path).title} reader: "
            f"{type(exc).__name__}: {exc}",
        )
    return None


def missing_library(exc: ImportError, title: str) -> str:
    """Why a reader could not load, with the fix: the missing module named, and how to add it."""
    missing = exc.name or "a module"
    return (
        f"cannot load the {title} reader: {type(exc).__name__}: {exc}; the installed packages "
        f"lack {missing}: reinstall docsym (pip install --force-reinstall docsym) or install it "
        f"(pip install {missing.split('.')[0]})"
    )


def _prepare_bounded(plan: FilePlan, state: WorkerState, beat: Beat, memory_mb: int) -> Prepared:
    from docsym.indexer.prepare import out_of_memory, prepare

    try:
        return prepare(plan, state, beat)
    except Exception as exc:  # a bug on one file must not stop the run
        if out_of_memory(exc):
            return Prepared(plan, failure=_memory_failure(memory_mb))
        log.debug("unexpected error preparing %s", plan.path, exc_info=True)
        return Prepared(plan, failure=f"internal error: {type(exc).__name__}: {exc}")


def _memory_failure(memory_mb: int) -> str:
    return (
        f"stopped by the memory limit ({memory_mb:,} MB for one file): "
        "DOCSYM_INDEX_MEMORY_MB raises it"
    )


# -- in the indexing process -----------------------------------------------------------------


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    output: WorkerOutput
    ready: bool = False  # started: its imports done
    plan: FilePlan | None = None  # the file it is preparing
    deadline: float = 0.0
    steps: list[Step] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.plan is not None


class WorkerPool:
    """Up to ``size`` workers; ``prepare_all`` hands them plans and yields what they return."""

    def __init__(
        self,
        size: int,
        setup: WorkerSetup,
        budget: Budget,
        on_step: Callable[[FilePlan, Step], None] | None = None,
    ) -> None:
        self.size = max(1, size)
        self.setup = setup
        self.budget = budget
        self.on_step = on_step
        self._workers: list[_Worker] = []
        self._context = multiprocessing.get_context("spawn")  # no forked ONNX Runtime threads
        self._outputs = outputs_folder()
        self._started = 0

    def start_one(self) -> None:
        """Start a worker now, before there is a plan for it: its imports (~0.5 s) then overlap
        the caller's opening of the store and planning."""
        if len(self._workers) < self.size:
            self._start()

    def prepare_all(
        self, plans: Iterable[FilePlan], while_waiting: Callable[[], None] = lambda: None
    ) -> Iterator[Prepared]:
        """Each plan's Prepared, as workers finish them. A plan is taken from ``plans`` only
        when a worker is free for it, and free workers get their next plan before the caller
        writes what finished; ``while_waiting`` runs about once a second meanwhile."""
        queue = iter(plans)
        while True:
            self._hand_out(queue)
            busy = [w for w in self._workers if w.busy]
            if not busy:
                return
            finished = list(self._collect(busy))
            self._hand_out(queue)
            yield from finished
            while_waiting()

    def _hand_out(self, queue: Iterator[FilePlan]) -> None:
        """Give each free worker a plan, starting workers up to ``size`` while plans last."""
        while any(not w.busy for w in self._workers) or len(self._workers) < self.size:
            plan = next(queue, None)
            if plan is None:
                return
            self._hand(self._free_worker(), plan)

    def _free_worker(self) -> _Worker:
        for worker in self._workers:
            if not worker.busy:
                return worker
        return self._start()

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        self._started += 1
        output = WorkerOutput(Path(self._outputs.name), f"worker-{self._started}")
        # Not a daemon: a worker starts OCR processes. It dies with this process all the same
        # (die_with_parent), and close() ends it.
        process = self._context.Process(
            target=_serve, args=(child, self.setup, self.budget.memory_mb, str(output.path))
        )
        process.start()
        child.close()
        worker = _Worker(process, parent, output)
        self._workers.append(worker)
        return worker

    def _hand(self, worker: _Worker, plan: FilePlan) -> None:
        worker.plan = plan
        worker.conn.send(plan)
        worker.deadline = time.monotonic() + (
            self.budget.stall_seconds if worker.ready else START_SECONDS
        )

    def _collect(self, busy: list[_Worker]) -> Iterator[Prepared]:
        timeout = max(0.0, min(min(w.deadline for w in busy) - time.monotonic(), TICK_SECONDS))
        ready = set(wait([w.conn for w in busy], timeout))
        for worker in busy:
            if worker.conn in ready:
                done = self._receive(worker)
                if done is not None:
                    yield done
            elif time.monotonic() > worker.deadline:
                yield self._stopped(worker)

    def _receive(self, worker: _Worker) -> Prepared | None:
        """Read one message of ``worker``: a finished file, or None (progress, or ready)."""
        plan = worker.plan
        assert plan is not None
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            return self._crashed(worker)
        worker.output.relay()
        kind = message[0]
        if kind == "broken":
            self._retire(worker)
            raise WorkerSetupError(f"an index worker could not start: {message[1]}")
        worker.deadline = time.monotonic() + self.budget.stall_seconds
        if kind == "ready":
            worker.ready = True
            return None
        if kind == "step":
            worker.steps.append(message[1])
            if self.on_step is not None:
                self.on_step(plan, message[1])
            return None
        prepared, grown_mb, keep = message[1], message[2], message[3]
        worker.plan, worker.steps = None, []
        if not keep or grown_mb > RECYCLE_MB:
            self._retire(worker)
        return prepared

    def _stopped(self, worker: _Worker) -> Prepared:
        plan = worker.plan
        assert plan is not None
        last = worker.steps[-1].what if worker.steps else "starting"
        self._retire(worker)
        return Prepared(
            plan,
            failure=f"stopped by the time limit: no progress for {self.budget.stall_seconds:g} s "
            f"(while {_DOING.get(last, last)}); DOCSYM_INDEX_STALL_SECONDS raises it",
        )

    def _crashed(self, worker: _Worker) -> Prepared:
        plan = worker.plan
        assert plan is not None
        worker.process.join(timeout=5)  # how it ended, before it is cleared away
        how, out_of_memory = crash_cause(worker.process.exitcode, worker.output.tail())
        worker.output.relay()
        self._retire(worker)
        failure = f"its worker process ended without an answer ({how})"
        if out_of_memory:
            failure = f"{_memory_failure(self.budget.memory_mb)}; {failure}"
        return Prepared(plan, failure=failure)

    def _retire(self, worker: _Worker) -> None:
        """Stop ``worker`` and the processes it started, now."""
        self._workers.remove(worker)
        _kill_group(worker.process)
        worker.conn.close()
        worker.output.remove()

    def close(self) -> None:
        for worker in list(self._workers):
            if not worker.busy:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
        for worker in list(self._workers):
            worker.process.join(timeout=5 if not worker.busy else 0)
            worker.output.relay()
            self._retire(worker)
        self._outputs.cleanup()


_DOING = {
    "starting": "starting its worker",
    "parse": "parsing",
    "read": "parsing",  # the parse stage reading its pages
    "ocr": "reading scanned pages by OCR",
    "summaries": "summarising",
    "graph": "building the entity graph",
    "encode": "encoding vectors",
}


def _kill_group(process: multiprocessing.process.BaseProcess) -> None:
    """Kill a worker's process group (it and its OCR processes), or the worker alone if it has
    not made its group yet."""
    if process.pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.join(timeout=10)


def budget_from_settings() -> Budget:
    from docsym.runtime.settings import get_settings

    s = get_settings()
    return Budget(s.index_stall_seconds, s.index_memory_mb)
