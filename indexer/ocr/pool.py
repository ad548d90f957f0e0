"""OCR in worker processes, cached by page image.

Each worker runs one single-threaded engine, so N workers keep N cores busy. Results are kept in
``ocr-cache.sqlite`` in the index directory under the hash of the page image (and the engine's
version), so indexing a document again, or a copy of it, does not OCR its pages again. A page
whose OCR fails (even by killing its worker) is reported and skipped; the pool is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

from docsym.indexer.ocr.engine import OcrLine, PageOcr, engine_version, read_image, rec_model
from docsym.runtime.process_limits import die_with_parent, lift_address_cap

log = logging.getLogger(__name__)
BUSY_MS = 10_000  # how long a worker waits for another's lock on the cache


@dataclass(frozen=True, slots=True)
class PageImage:
    page: int  # 1-based page number, for messages
    gray: np.ndarray  # 8-bit grayscale, rows x columns
    points_per_pixel: float

    def key(self) -> str:
        digest = hashlib.sha256()
        digest.update(f"{engine_version()}|{self.gray.shape}|{self.points_per_pixel:.6f}|".encode())
        digest.update(np.ascontiguousarray(self.gray).data)
        return digest.hexdigest()


class OcrCache:
    """Page image hash -> OCR result, in a small SQLite file beside the index."""

    def __init__(self, path: Path) -> None:
        self.db = apsw.Connection(str(path))
        self.db.set_busy_timeout(BUSY_MS)  # index workers share the file
        _use_wal(self.db)
        self.db.execute("CREATE TABLE IF NOT EXISTS ocr_pages (key TEXT PRIMARY KEY, result TEXT)")

    def get(self, key: str) -> PageOcr | None:
        row = self.db.execute("SELECT result FROM ocr_pages WHERE key = ?", (key,)).fetchone()
        return _from_json(row[0]) if row else None

    def put(self, key: str, result: PageOcr) -> None:
        """Keep a page's result; on a full disk (or a file size limit) the page is simply not
        kept: the run stops at its own next write, saying why in one line."""
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO ocr_pages VALUES (?, ?)", (key, _to_json(result))
            )
        except (apsw.FullError, apsw.IOError) as exc:
            log.debug("OCR result of %s not cached: %s", key, exc)

    def close(self) -> None:
        self.db.close()


def _use_wal(db: apsw.Connection) -> None:
    """Switch the file to WAL. Index workers open a new cache at the same moment, and SQLite
    answers all but one of their switches "busy" at once, without waiting (it cannot upgrade a
    read lock another process also holds), so the switch is retried until the busy timeout."""
    deadline = time.monotonic() + BUSY_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@dataclass
class _Page:
    """A page on its way through the pool: found in the cache, or read by a process."""

    image: PageImage
    key: str
    cached: PageOcr | None
    future: Future | None


class OcrPool:
    """Reads page images in ``workers`` processes; started on the first page that needs it."""

    def __init__(
        self,
        workers: int,
        cache: OcrCache | None = None,
        reader: Callable[[np.ndarray, float], PageOcr] = read_image,
    ) -> None:
        self.workers = max(1, workers)
        self.cache = cache
        self.reader = reader  # a module-level function: it travels to the workers by name
        self._executor: ProcessPoolExecutor | None = None

    def read(
        self,
        images: Iterable[PageImage],
        total: int,
        on_page: Callable[[int, int], None] | None = None,
    ) -> list[PageOcr | str]:
        """Each image's OCR, or the reason it failed, in the order given. Images are taken from
        ``images`` as the processes need them (one waiting per process), so a scanned book's
        page images are never all in memory at once; ``on_page(done, total)`` after each."""
        queued, pending = iter(images), deque[_Page]()
        results: list[PageOcr | str] = []
        while True:
            self._fill(pending, queued)
            if not pending:
                return results
            results.append(self._finish(pending.popleft(), pending))
            if on_page:
                on_page(len(results), total)

    def _fill(self, pending: deque[_Page], queued: Iterator[PageImage]) -> None:
        """Queue pages until every process has one running and one waiting (pages found in the
        cache cost nothing and do not count)."""
        while sum(1 for page in pending if page.future) < 2 * self.workers:
            image = next(queued, None)
            if image is None:
                return
            key = image.key()
            cached = self.cache.get(key) if self.cache else None
            future = None if cached is not None else self._submit(image)
            pending.append(_Page(image, key, cached, future))

    def _finish(self, page: _Page, pending: deque[_Page]) -> PageOcr | str:
        if page.future is None:
            assert page.cached is not None
            return page.cached
        try:
            result = self._result(page.image, page.future)
        except BrokenProcessPool:
            # The pool is gone with every page in it: this page is blamed (the one awaited
            # first), the others go to a fresh pool.
            self._restart()
            for other in pending:
                if other.future is not None:
                    other.future = self._submit(other.image)
            return f"page {page.image.page}: OCR worker died; page left without text"
        if self.cache and isinstance(result, PageOcr):
            self.cache.put(page.key, result)
        return result

    def _submit(self, image: PageImage) -> Future:
        try:
            return self._running().submit(self.reader, image.gray, image.points_per_pixel)
        except BrokenProcessPool:
            # A process kept from an earlier document died while idle (killed, out of memory):
            # no page of this one is to blame, so a fresh pool takes it.
            self._restart()
            return self._running().submit(self.reader, image.gray, image.points_per_pixel)

    def _running(self) -> ProcessPoolExecutor:
        if self._executor is None:
            rec_model()  # written here once, not by every process as it starts
            # spawn: a forked copy of a process holding ONNX Runtime's threads can hang.
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_process,
            )
        return self._executor

    def _result(self, image: PageImage, future: Future) -> PageOcr | str:
        try:
            return future.result()
        except BrokenProcessPool:
            raise  # the caller rebuilds the pool
        except Exception as exc:  # one page's failure must not lose the document
            log.debug("OCR of page %s failed", image.page, exc_info=True)
            return f"page {image.page}: OCR failed ({type(exc).__name__}: {exc})"

    def _restart(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def release(self) -> None:
        """End the OCR processes (each holds ~600 MB once it has read a page); the next page
        starts them again (~1.4 s of CPU each, loading the models). Called when a document
        needs no OCR and at the run's end, not after each document: a folder of scans would
        pay the starts once a document."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def close(self) -> None:
        self.release()
        if self.cache:
            self.cache.close()


def _start_process() -> None:
    """An OCR process dies with the index worker that started it, and drops the memory cap it
    inherited (the worker's, sized for one file): its own memory is bounded by the detector's
    input size (DOCSYM_OCR_MEGAPIXELS)."""
    die_with_parent()
    lift_address_cap()


def _to_json(result: PageOcr) -> str:
    lines = [[line.text, *line.bbox, line.confidence] for line in result.lines]
    return json.dumps(
        {
            "rotation": result.rotation,
            "skew": result.skew,
            "lines": lines,
            "rules": [list(rule) for rule in result.rules],
        }
    )


def _from_json(text: str) -> PageOcr:
    data = json.loads(text)
    lines = tuple(OcrLine(t, (x0, y0, x1, y1), c) for t, x0, y0, x1, y1, c in data["lines"])
    rules = tuple(tuple(rule) for rule in data.get("rules", []))
    return PageOcr(lines, data["rotation"], data["skew"], rules)
