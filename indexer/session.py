"""An indexing session: one store, its workers and its encoder, started once, taking pass after
pass of files (``docsym index`` runs one pass; ``docsym index --watch`` one per change).

A pass discovers the files under the paths it is given, skips unchanged ones, writes moved ones
under their new path without reading them again, prepares the rest in worker processes under a
budget (``indexer/workers.py``) and writes them one at a time, in the order they are ready.
Each document is written in two stages: its rows and keyword entries as soon as a worker has
prepared it (published at once for a pass's first document, then every DOCSYM_PUBLISH_SECONDS
and when the pass's last file is written), then its vectors, encoded on a thread of this
process while the workers parse the next files (``indexer/dense_stage.py``), and between passes
while the session waits (``idle``). A file that hangs or exhausts its parser costs that file,
never the session. With ``dask``, a Dask cluster's workers prepare the files instead.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from docsym.indexer.dense_stage import DenseStage
from docsym.indexer.discover import discover, doc_id_for
from docsym.indexer.file_hashes import FileHashes
from docsym.indexer.limits import FileLimits
from docsym.indexer.ocr import PROCESS_MB as OCR_PROCESS_MB
from docsym.indexer.plans import FilePlan, Prepared, WorkerSetup
from docsym.indexer.progress import PageMeter
from docsym.indexer.report import IndexReport, Progress
from docsym.indexer.workers import Step, WorkerPool, budget_from_settings
from docsym.runtime.extras import require
from docsym.runtime.formats import FORMATS, reads
from docsym.runtime.process_limits import give_back_free_memory
from docsym.runtime.settings import OcrMode, get_settings
from docsym.storage import failed_files
from docsym.storage.backends import open_sink
from docsym.storage.failed_files import Outcome
from docsym.storage.file_names import readable
from docsym.storage.paths import IndexPaths, is_store_url
from docsym.storage.sink import Sink, SinkBroken, ocr_cache_path

log = logging.getLogger(__name__)


class IndexSession:
    """Passes of files into one store (an index directory or a ``postgresql://`` URL), with
    the worker pool, the sink and the encoder kept from one pass to the next. ``ocr``
    overrides DOCSYM_OCR; ``workers`` processes prepare files at once, or with ``dask`` (a
    scheduler address, or "local" for a LocalCluster of ``workers`` processes) a Dask
    cluster's workers do. Without ``vectors`` documents get their first stage only: searchable
    by keyword, their vectors added by a later run."""

    def __init__(
        self,
        target: Path | str,
        *,
        model_name: str | None = None,
        ocr: OcrMode | None = None,
        workers: int = 1,
        dask: str | None = None,
        vectors: bool = True,
        start_workers: bool = False,
    ) -> None:
        """``start_workers`` starts one now: its imports (~0.5 s) overlap the store's opening."""
        self.workers = workers
        self.dask = dask
        self.vectors = vectors
        self.setup = _setup(ocr, target, workers)
        self.model_name = model_name or get_settings().model
        self._pool: WorkerPool | None = None
        self._done = False  # finished: what it wrote is published whole
        if start_workers:
            self.start_workers()
        try:
            self.sink = open_sink(target, self.model_name)
        except BaseException:
            self._close_workers()
            raise
        try:
            self.stale = self.sink.stale()  # documents whose entries must be written again
            if self.sink.needs_reindex:
                self.stale |= self.sink.reindex_doc_ids()
            self.records = _FailureRecords(self.sink)
            self._hashes = _file_hashes(target)  # a rescan reads only files whose stat changed
            self._told = _DenseProgress(Progress(), PageMeter({}))
            threads = get_settings().encoder_threads
            self.dense = DenseStage(self.sink, self.model_name, threads, self._told)
            self._left: list[str] = (  # vectors a stopped run left to write
                sorted(self.sink.awaiting_vectors() - self.stale) if vectors else []
            )
        except BaseException:
            self.sink.close(True)
            raise

    def __enter__(self) -> IndexSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start_workers(self) -> None:
        """Start a worker now, before there is a file for it: its imports then overlap the
        caller's other work (opening the store, planning)."""
        if self.dask is None:
            if self._pool is None:
                self._pool = WorkerPool(self.workers, self.setup, budget_from_settings())
            self._pool.start_one()

    def index(
        self,
        paths: list[Path],
        *,
        prune: bool = False,
        roots: list[Path] | None = None,
        follow_links: bool = False,
        progress: Progress | None = None,
        trust_unchanged: bool = False,
    ) -> IndexReport:
        """One pass over the files under ``paths``: every new, changed or moved file written
        (its keyword stage; its vectors follow), failures recorded. With ``prune``, documents
        whose files are gone are removed: all of them, or those under ``roots`` still present.
        Links leading outside ``paths`` are followed only with ``follow_links``. With
        ``trust_unchanged`` (a watcher's passes), a file whose size and times are those it had
        when it was last read is not read again (``indexer/file_hashes.py``); without it
        (``docsym index``) every file is read, and what it read is kept for a watcher."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = IndexReport()
        found = discover(paths, follow_links=follow_links)
        report.skipped.extend(found.skipped)
        if found.files:
            self.start_workers()
        known = self.sink.documents_by_path()
        plans, moves = _plan(
            found.files, known, self.stale, report, self._hashes, trust_unchanged
        )
        for doc_id, path in moves:
            self.sink.move(doc_id, path)
            self.records.outcome(path, None)
        self.records.failed(report.failed, "failed")
        self.records.failed(report.skipped, "skipped")
        progress.start(len(plans))
        meter = PageMeter({str(plan.path): _size(plan.path) for plan in plans})
        self._told.progress, self._told.meter = progress, meter
        if self.vectors and (plans or self._left):
            self.dense.load()
        for doc_id in self._left:
            self.dense.add(doc_id)
        if self._left:
            self._left = []
            self.dense.ready()  # a model that cannot load stops here, not once per document
        self._write_all(plans, report, progress, meter)
        if prune:
            _prune(self.sink, report, roots)
        self.records.forget_gone()
        self._hashes.save()
        self.sink.publish_if_due(now=True)  # every file searchable; the vectors follow
        report.elapsed = time.perf_counter() - started
        return report

    def forget_hashes(self, paths: Iterable[Path]) -> None:
        """The next pass reads these files again, whatever their ``stat`` says (a watched
        path's event: a file system may keep a file's times through a change)."""
        self._hashes.forget(paths)

    def idle(self) -> None:
        """Between passes: publish on time, write the vectors the encoder finished and give it
        the next document."""
        self.sink.publish_if_due()
        self.dense.step()

    def finish(self, report: IndexReport) -> None:
        """Write every vector still to come (the workers' memory given back first), then
        record what the session did; ``report`` gets the encoder's time and failures."""
        self._close_workers()  # idle from here: their memory goes back before the encoding
        self.dense.finish()
        _dense_report(self.dense, self.sink, report)
        if self.sink.needs_reindex:
            self.sink.reindex_done()
        self._done = True

    def close(self) -> None:
        try:
            self._close_workers()
            self.dense.close()
            self._hashes.close()
        finally:
            self.sink.close(not self._done)

    def _close_workers(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _write_all(
        self, plans: list[FilePlan], report: IndexReport, progress: Progress, meter: PageMeter
    ) -> None:
        """Prepare ``plans`` and write each as it is ready, publishing on time meanwhile."""
        sink, dense = self.sink, self.dense
        to_write = len(plans)
        sink.waiting(to_write)
        with ExitStack() as stack:
            claims = _Claims(sink, stack)
            taken = _announced(claims.take(_in_order(plans, self.workers)), progress)
            if self._pool is None:
                ready = (
                    _on_dask(taken, stack, self.setup, self.workers, self.dask)
                    if self.dask
                    else iter(())
                )
            else:
                self._pool.on_step = _Steps(progress, meter)
                ready = self._pool.prepare_all(taken, while_waiting=self.idle)
            for prepared in ready:
                dense.ready()
                failure = _write(prepared, sink, report)
                self.records.outcome(prepared.plan.path, failure)
                if failure is None:
                    self.stale.discard(prepared.plan.doc_id)
                if failure is None and self.vectors:
                    path = str(prepared.plan.path)
                    self._told.files[prepared.plan.doc_id] = (path, prepared.pages)
                    meter.written(path, prepared.pages)
                    dense.add(prepared.plan.doc_id)
                    sink.publish_if_due(now=len(report.added) + len(report.updated) == 1)
                claims.release(prepared.plan)
                to_write -= 1
                sink.waiting(to_write)
                progress.file_done(prepared.plan.path, prepared.pages)
                if prepared.plan.doc_id not in self._told.files:  # failed, or no vectors
                    meter.finish(str(prepared.plan.path), prepared.pages)
                progress.pages(meter.count())
                dense.step()
                del prepared
                give_back_free_memory()  # a large document's rows, freed, go back at once
            for plan in claims.done:
                report.unchanged.append(readable(plan.path))
                _finished(progress, meter, plan.path, 0)
        sink.waiting(0)


def _setup(ocr: OcrMode | None, target: Path | str, workers: int) -> WorkerSetup:
    """What each worker is given: the cores are shared among the workers, and a worker starts
    as many OCR processes as its file's memory budget holds (each takes ~750 MB)."""
    settings = get_settings()
    workers = max(1, workers)
    cores = max(1, (os.cpu_count() or 1) // workers)
    return WorkerSetup(
        ocr=ocr or settings.ocr,
        ocr_cache=ocr_cache_path(target),
        ocr_processes=settings.ocr_workers
        or max(1, min(cores, settings.index_memory_mb // OCR_PROCESS_MB)),
        limits=FileLimits.from_settings(),
        verbose=logging.getLogger().isEnabledFor(logging.DEBUG),
    )


def _file_hashes(target: Path | str) -> FileHashes:
    """Hashes kept beside a directory index; a store's are kept for the session only."""
    return FileHashes(None if is_store_url(target) else IndexPaths(Path(target)).file_hashes)


def _in_order(plans: list[FilePlan], workers: int) -> list[FilePlan]:
    """With several workers, largest first: one started last would leave the others idle. With
    one, in the order of ``FORMATS``: PDFs and their scans first, docling's formats last, so
    its import (~100 MB resident) never sits beside OCR processes."""
    if workers > 1:
        return sorted(plans, key=lambda plan: plan.path.stat().st_size, reverse=True)
    return sorted(plans, key=lambda plan: (FORMATS.index(reads(plan.path)), plan.path))


def _announced(plans: Iterable[FilePlan], progress: Progress) -> Iterator[FilePlan]:
    for plan in plans:
        progress.file_started(plan.path)
        yield plan


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was hashed: its worker will say so
        return 0


def _finished(progress: Progress, meter: PageMeter, path: Path, pages: int) -> None:
    meter.finish(str(path), pages)
    progress.file_done(path, pages)
    progress.pages(meter.count())


@dataclass
class _DenseProgress:
    """Moves the bar through each file's encoding, and says as each one's vectors are in."""

    progress: Progress
    meter: PageMeter
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # doc_id -> (path, pages)

    def encoding(self, doc_id: str, done: int, total: int) -> None:
        if doc_id in self.files:
            self.meter.step(self.files[doc_id][0], "encode", done, total)
            self.progress.pages(self.meter.count())

    def written(self, doc_id: str, done: int, total: int) -> None:
        if doc_id in self.files:
            self.meter.finish(*self.files[doc_id])
            self.progress.pages(self.meter.count())
        self.progress.vectors(done, total)


@dataclass
class _Steps:
    """Hears the steps workers report and tells ``progress`` of OCR pages and the run's pages."""

    progress: Progress
    meter: PageMeter

    def __call__(self, plan: FilePlan, step: Step) -> None:
        if step.what == "ocr":
            self.progress.ocr_page(plan.path, step.done, step.total)
        self.meter.step(str(plan.path), step.what, step.done, step.total)
        self.progress.pages(self.meter.count())


def _dense_report(dense: DenseStage, sink: Sink, report: IndexReport) -> None:
    if dense.seconds:
        report.seconds["encode"] = dense.seconds
    if dense.failures:
        paths = {doc_id: path for path, (doc_id, _) in sink.documents_by_path().items()}
        for doc_id, why in dense.failures:
            shown = readable(Path(paths[doc_id])) if doc_id in paths else doc_id
            report.warnings.append(
                (
                    shown,
                    f"searchable by keyword only: its vectors failed ({why}); "
                    "the next docsym index run encodes them again",
                )
            )


def _on_dask(
    plans: Iterable[FilePlan], stack: ExitStack, setup: WorkerSetup, workers: int, dask: str
) -> Iterator[Prepared]:
    """Prepared documents as a Dask cluster's workers finish them; at most one per worker
    thread claimed ahead."""
    from docsym.indexer.prepare import prepare_in_worker

    executor, slots = _dask_executor(stack, workers, dask)
    running: set[Future] = set()
    for plan in plans:
        running.add(executor.submit(prepare_in_worker, plan, setup))
        if len(running) >= slots:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            yield from (future.result() for future in done)
    for future in running:
        yield future.result()


def _dask_executor(stack: ExitStack, workers: int, dask: str) -> tuple[Executor, int]:
    """A Dask cluster's executor, and how many documents to keep going."""
    require("docsym index --dask", ("distributed",), "dask")
    from distributed import Client, LocalCluster

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
                    self.held[str(plan.path)] = held.pop_all()
                yield plan

    def release(self, plan: FilePlan) -> None:
        """Release the claim on ``plan``'s file (taken for the doc_id it had when planned)."""
        held = self.held.pop(str(plan.path), None)
        if held is not None:
            held.close()

    def _release_all(self) -> None:
        for held in self.held.values():
            held.close()
        self.held.clear()


class _FailureRecords:
    """Keeps the index's record of the files it could not read (``storage/failed_files.py``):
    each failure and skip as the run reports it, cleared when a file is read or gone."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.recorded = {text for text, _ in sink.recorded_failures()}

    def failed(self, reported: list[tuple[str, str]], outcome: Outcome) -> None:
        for text, reason in reported:
            self.sink.record_failure(text, outcome, reason)
            self.recorded.add(text)

    def outcome(self, path: Path, failure: str | None) -> None:
        """After a file is written (``failure`` None) or has failed."""
        text = readable(path)
        if failure is not None:
            self.sink.record_failure(path, "failed", failure)
            self.recorded.add(text)
        elif text in self.recorded:
            self.sink.clear_failures([text])
            self.recorded.discard(text)

    def forget_gone(self) -> None:
        self.sink.clear_failures(failed_files.gone(self.sink.recorded_failures()))


def _write(prepared: Prepared, sink: Sink, report: IndexReport) -> str | None:
    """Write a prepared file's first stage; None if it was written, else why not."""
    path = readable(prepared.plan.path)
    if prepared.failure is not None:
        report.failed.append((path, prepared.failure))
        return prepared.failure
    plan = prepared.plan
    assert prepared.rows is not None
    started = time.perf_counter()
    try:
        sink.write(prepared.rows, plan.doc_id, plan.replaces, prepared.entries)
    except SinkBroken:
        raise
    except Exception as exc:  # nothing of it was written; the next file may well be
        log.debug("writing %s failed", path, exc_info=True)
        report.failed.append((path, f"could not be written: {type(exc).__name__}: {exc}"))
        return report.failed[-1][1]
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
    return None


def _plan(
    files: list[Path],
    known: dict[str, tuple[str, str]],
    stale: set[str],
    report: IndexReport,
    hashes: FileHashes,
    trust_unchanged: bool,
) -> tuple[list[FilePlan], list[tuple[str, Path]]]:
    """The files to prepare, and the documents whose file moved: (doc_id, new path), written
    under their new path without being read again. With ``trust_unchanged``, files whose
    ``stat`` is as when ``hashes`` read them are not read again."""
    plans: list[FilePlan] = []
    moves: list[tuple[str, Path]] = []
    known_ids = {doc_id: path for path, (doc_id, _) in known.items()}
    planned_ids: set[str] = set()
    for path in files:
        shown = readable(path)
        if not path.is_file():  # a pipe or device would hold the run waiting for data
            report.failed.append((shown, "not a regular file (a pipe, socket or device)"))
            continue
        try:
            sha = hashes.sha256(path, trust_unchanged=trust_unchanged)
        except OSError as exc:
            report.failed.append((shown, f"cannot read file: {exc.strerror or exc}"))
            continue
        doc_id = doc_id_for(sha)
        previous = known.get(str(path))
        if previous and previous[1] == sha and doc_id not in stale:
            report.unchanged.append(shown)
            continue
        twin = known_ids.get(doc_id)
        if doc_id in planned_ids or (twin and twin != str(path) and Path(twin).exists()):
            report.unchanged.append(shown)
            same = readable(twin) if twin else "another file"
            report.warnings.append((shown, f"same content as {same}; skipped"))
            continue
        planned_ids.add(doc_id)
        if twin and previous is None and doc_id not in stale:  # moved or renamed: same content
            moves.append((doc_id, path))
            report.moved.append(shown)
            continue
        replaces = [previous[0]] if previous else []
        if twin and twin != str(path):  # moved over another file, or stale: read it again
            replaces.append(doc_id)
        plans.append(FilePlan(path, sha, doc_id, replaces, is_update=previous is not None))
    return plans, moves


def _prune(sink: Sink, report: IndexReport, roots: list[Path] | None) -> None:
    """Remove the documents whose files are gone: all of them, or (``roots``) those under a
    root that is still there, so a folder that went away (an unmounted drive) removes
    nothing."""
    known = sink.documents_by_path().items()
    gone = [
        (p, doc_id)
        for p, (doc_id, _) in known
        if not Path(p).exists() and (roots is None or _under_present_root(Path(p), roots))
    ]
    sink.remove([doc_id for _, doc_id in gone])
    report.removed.extend(readable(p) for p, _ in gone)


def _under_present_root(path: Path, roots: list[Path]) -> bool:
    return any(root.is_dir() and path.is_relative_to(root) for root in roots)
