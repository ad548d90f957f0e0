"""``docsym index``: discover files, skip unchanged ones, parse, write one document at a time.

With ``workers`` > 1, documents are parsed and embedded in that many worker processes
(``indexer/prepare.py``) while this process writes them, one at a time, in the order they are
ready."""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from indexer.discover import discover, doc_id_for, sha256_of
from indexer.ocr.need import OcrMode
from indexer.ocr.pages import OcrRun
from indexer.ocr.pool import OcrCache, OcrPool
from indexer.prepare import FilePlan, Prepared, prepare, prepare_in_worker
from indexer.sinks import Sink, ocr_cache_path, open_sink
from indexer.summaries import summariser_from_settings
from storage.encoder import get_encoder
from storage.settings import get_settings

log = logging.getLogger(__name__)


@dataclass
class IndexReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    no_text: list[str] = field(default_factory=list)  # scans: recorded, but nothing to search
    ocr_pages: int = 0  # pages whose text was read by OCR
    warnings: list[tuple[str, str]] = field(default_factory=list)
    pages: int = 0
    tables: int = 0
    figures: int = 0
    equations: int = 0
    elapsed: float = 0.0
    # Time spent per stage, summed over documents (parse, summaries, graph, encode, write).
    # With workers the stages overlap, so they add up to more than ``elapsed``.
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class Progress:
    """What the pipeline tells its caller as it goes (the CLI draws a progress bar from it)."""

    def start(self, files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def file_done(self, path: Path, pages: int) -> None: ...
    def ocr_page(self, path: Path, done: int, total: int) -> None: ...


def index_paths(
    paths: list[Path],
    target: Path | str,
    *,
    prune: bool = False,
    progress: Progress | None = None,
    model_name: str | None = None,
    ocr: OcrMode | None = None,
    workers: int = 1,
    dask: str | None = None,
) -> IndexReport:
    """Index the files under ``paths`` into ``target``, an index directory or a
    ``postgresql://`` store URL; ``ocr`` overrides DOCSYM_OCR. ``workers`` processes parse and
    embed at once; with ``dask`` (a scheduler address, or "local" for a LocalCluster of
    ``workers`` processes) a Dask cluster's workers do."""
    started = time.perf_counter()
    progress = progress or Progress()
    report = IndexReport()
    files = discover(paths)
    settings = get_settings()
    mode = ocr or settings.ocr
    sink = open_sink(target, get_encoder(model_name))
    failed = True
    try:
        stale = sink.stale()
        if sink.needs_reindex:
            stale |= {doc_id for doc_id, _ in sink.documents_by_path().values()}
        plans = _plan(files, sink.documents_by_path(), stale, report)
        progress.start(len(plans))
        with ExitStack() as stack:
            claims = _Claims(sink, stack)
            if dask or (workers > 1 and len(plans) > 1):
                executor, slots = _executor(stack, workers, dask)
                ready = _in_workers(plans, claims, executor, slots, model_name, mode, target)
            else:
                ready = _in_process(plans, claims, sink, stack, model_name, mode, target, progress)
            for prepared in ready:
                _write(prepared, sink, report)
                claims.release(prepared.plan)
                progress.file_done(prepared.plan.path, prepared.pages)
            for plan in claims.done:
                report.unchanged.append(str(plan.path))
                progress.file_done(plan.path, 0)
        if prune:
            _prune(sink, report)
        if sink.needs_reindex:
            sink.reindex_done()
        failed = False
    finally:
        sink.close(failed)
    report.elapsed = time.perf_counter() - started
    return report


def _in_process(
    plans: list[FilePlan],
    claims: _Claims,
    sink: Sink,
    stack: ExitStack,
    model_name: str | None,
    mode: OcrMode,
    target: Path | str,
    progress: Progress,
) -> Iterator[Prepared]:
    settings = get_settings()
    pool = OcrPool(settings.ocr_workers or os.cpu_count() or 1, OcrCache(ocr_cache_path(target)))
    stack.callback(pool.close)
    reading = OcrRun(pool, mode)
    llm = summariser_from_settings(settings)
    for plan in claims.take(plans):
        progress.file_started(plan.path)
        reading.on_page = partial(progress.ocr_page, plan.path)
        yield prepare(plan, reading, sink.encoder, llm)


def _executor(stack: ExitStack, workers: int, dask: str | None) -> tuple[Executor, int]:
    """Local worker processes, or a Dask cluster's; and how many documents to keep going."""
    if dask is None:
        executor = ProcessPoolExecutor(
            workers,
            # spawn: a forked copy of a process holding ONNX Runtime's threads can hang.
            mp_context=multiprocessing.get_context("spawn"),
        )
        stack.callback(executor.shutdown, cancel_futures=True)
        return executor, workers
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError(
            "docsym index --dask needs Dask distributed: pip install 'docsym[dask]'"
        ) from None

    # Distributed sets its loggers to INFO when imported; a run's report says what matters.
    if not log.isEnabledFor(logging.DEBUG):
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if dask == "local":
        cluster = LocalCluster(
            n_workers=max(workers, 1), threads_per_worker=1, dashboard_address=None
        )
        stack.callback(cluster.close)
        client = Client(cluster)
    else:
        client = Client(dask)
    stack.callback(client.close)
    slots = sum(client.nthreads().values()) or 1
    return client.get_executor(pure=False), slots


def _in_workers(
    plans: list[FilePlan],
    claims: _Claims,
    executor: Executor,
    slots: int,
    model_name: str | None,
    mode: OcrMode,
    target: Path | str,
) -> Iterator[Prepared]:
    """Prepared documents as workers finish them; at most ``slots`` claimed ahead."""
    cache = ocr_cache_path(target)
    running: set[Future] = set()
    # Largest first: a long document started last would leave the other workers idle at the end.
    plans = sorted(plans, key=lambda plan: plan.path.stat().st_size, reverse=True)
    for plan in claims.take(plans):
        running.add(executor.submit(prepare_in_worker, plan, model_name, mode, cache))
        if len(running) >= slots:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            yield from (future.result() for future in done)
    for future in running:
        yield future.result()


class _Claims:
    """The documents this run may write, each claimed until it is written (another run on the
    same store skips it meanwhile)."""

    def __init__(self, sink: Sink, stack: ExitStack) -> None:
        self.sink = sink
        self.held: dict[str, ExitStack] = {}
        self.done: list[FilePlan] = []  # written by another run meanwhile
        stack.callback(self._release_all)

    def take(self, plans: list[FilePlan]) -> Iterator[FilePlan]:
        """The plans to index, claimed. Documents another run holds come last, after waiting
        for it; those it wrote meanwhile are skipped."""
        busy: list[FilePlan] = []
        for wait_for_it, queue in ((False, plans), (True, busy)):
            for plan in queue:
                with ExitStack() as held:
                    claim = held.enter_context(
                        self.sink.claim(plan.doc_id, plan.sha256, wait=wait_for_it)
                    )
                    if claim == "busy":
                        busy.append(plan)
                        continue
                    if claim == "done":
                        self.done.append(plan)
                        continue
                    self.held[plan.doc_id] = held.pop_all()
                yield plan

    def release(self, plan: FilePlan) -> None:
        held = self.held.pop(plan.doc_id, None)
        if held is not None:
            held.close()

    def _release_all(self) -> None:
        for held in self.held.values():
            held.close()
        self.held.clear()


def _write(prepared: Prepared, sink: Sink, report: IndexReport) -> None:
    path = str(prepared.plan.path)
    if prepared.failure is not None:
        report.failed.append((path, prepared.failure))
        return
    plan = prepared.plan
    assert prepared.rows is not None and prepared.vectors is not None
    started = time.perf_counter()
    sink.write(prepared.rows, plan.doc_id, plan.replaces, prepared.entries, prepared.vectors)
    for stage, seconds in [*prepared.seconds.items(), ("write", time.perf_counter() - started)]:
        report.seconds[stage] = report.seconds.get(stage, 0.0) + seconds
    (report.updated if plan.is_update else report.added).append(path)
    if prepared.no_text:
        report.no_text.append(path)
    report.warnings.extend((path, w) for w in prepared.warnings)
    report.pages += prepared.pages
    report.ocr_pages += prepared.ocr_pages
    report.tables += prepared.tables
    report.figures += prepared.figures
    report.equations += prepared.equations


def _plan(
    files: list[Path], known: dict[str, tuple[str, str]], stale: set[str], report: IndexReport
) -> list[FilePlan]:
    plans: list[FilePlan] = []
    known_ids = {doc_id: path for path, (doc_id, _) in known.items()}
    planned_ids: set[str] = set()
    for path in files:
        try:
            sha = sha256_of(path)
        except OSError as exc:
            report.failed.append((str(path), f"cannot read file: {exc.strerror or exc}"))
            continue
        doc_id = doc_id_for(sha)
        previous = known.get(str(path))
        if previous and previous[1] == sha and doc_id not in stale:
            report.unchanged.append(str(path))
            continue
        twin = known_ids.get(doc_id)
        if doc_id in planned_ids or (twin and twin != str(path) and Path(twin).exists()):
            report.unchanged.append(str(path))
            report.warnings.append(
                (str(path), f"same content as {twin or 'another file'}; skipped")
            )
            continue
        planned_ids.add(doc_id)
        replaces = [previous[0]] if previous else []
        if twin and twin != str(path):  # the file moved: re-index it under its new path
            replaces.append(doc_id)
        plans.append(FilePlan(path, sha, doc_id, replaces, is_update=previous is not None))
    return plans


def _prune(sink: Sink, report: IndexReport) -> None:
    known = sink.documents_by_path().items()
    gone = [(p, doc_id) for p, (doc_id, _) in known if not Path(p).exists()]
    sink.remove([doc_id for _, doc_id in gone])
    report.removed.extend(p for p, _ in gone)
