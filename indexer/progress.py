"""Progress a file's preparation reports while it runs: its stages, pages read, OCR pages,
encoded vectors; and ``PageMeter``, which turns those reports into a run's pages done and to do.

The worker pool (``indexer/workers.py``) stops a file that reports nothing for too long, and the
command line draws a progress bar in pages, so every step that can take seconds says so:
``prepare`` names its stages, the PDF reader counts pages, OCR counts pages, and the wrappers
below count encoder batches and LLM calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from docsym.models.encoder import BATCH, Encoder

# Texts encoded between two reports: 4 batches, at most ~3 s of encoding (64 texts of 256 word
# pieces at 5,850 pieces/s), so the progress bar moves while a long document is encoded (16
# batches held it still for 20 s on a busy machine); the batches are those of one call.
TEXTS_PER_STEP = 4 * BATCH

Report = Callable[[str, int, int], None]


class Beat:
    """One call per step: ``beat("encode", 256, 2000)``; silent without a ``report``."""

    def __init__(self, report: Report | None = None) -> None:
        self._report = report

    def __call__(self, what: str, done: int = 0, total: int = 0) -> None:
        if self._report is not None:
            self._report(what, done, total)


class PagesRead:
    """``on_page(done, total)`` for a reader, reported as ``beat("read", done, total)`` at most
    every ``seconds`` (and on the first and last page): a 5,000-page PDF would otherwise send
    5,000 messages, and a worker whose pipe is full waits while the parent writes."""

    def __init__(self, beat: Beat, seconds: float = 0.25) -> None:
        self._beat = beat
        self._seconds = seconds
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done in (0, total) or now - self._last >= self._seconds:
            self._last = now
            self._beat("read", done, total)


class ReportingEncoder:
    """An encoder that reports after every ``TEXTS_PER_STEP`` texts it encodes, as characters
    encoded of all: encoding time follows text length, and the longest texts go first, so a
    count of texts would show a slow start and a fast end."""

    def __init__(self, encoder: Encoder, beat: Beat) -> None:
        self._encoder = encoder
        self._beat = beat
        self.model_name = encoder.model_name

    @property
    def dim(self) -> int:
        return self._encoder.dim

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        if len(texts) <= TEXTS_PER_STEP:
            return self._encoder.encode(texts, batch_size)
        # Longest first, as the encoder orders each call's batches: steps of similar lengths
        # pad as little as one call would (steps in document order made the 10-K 5% slower).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        total = sum(len(text) for text in texts)
        done = 0
        for start in range(0, len(order), TEXTS_PER_STEP):
            rows = order[start : start + TEXTS_PER_STEP]
            step = [texts[i] for i in rows]
            out[rows] = self._encoder.encode(step, batch_size)
            done += sum(len(text) for text in step)
            self._beat("encode", done, max(total, 1))
        return out


class ReportingSummariser:
    """An LLM summariser that reports each summary it writes (each is a network call)."""

    def __init__(self, llm, beat: Beat) -> None:
        self._llm = llm
        self._beat = beat
        self._written = 0

    def summarise(self, *args, **kwargs) -> str:
        try:
            return self._llm.summarise(*args, **kwargs)
        finally:
            self._written += 1
            self._beat("summaries", self._written, 0)


# What a page usually costs in each part of its preparation, in seconds on this project's
# 2-core machines (docs/ARCHITECTURE.md, "Where indexing time goes"): the 307-page 10-K spends
# 61 s encoding and 11 s on the rest, Multi-LexSum 8.7 s and 1.6 s for 37 pages; OCR reads
# 0.1-0.2 dense pages/s per core. Only their ratios matter: they share a file's pages of the
# progress bar among its stages, so the bar moves at an even pace through every stage.
READ_SECONDS = 0.04  # layout pass, extractors, summaries and graph
ENCODE_SECONDS = 0.2
OCR_SECONDS = 6.0


@dataclass
class _FilePages:
    """How far one file has come, from the steps its worker reports."""

    size: int  # bytes: estimates its pages until its parser has counted them
    pages: int | None = None  # page count, once its parser opened it (or it finished)
    ocr_done: int = 0
    ocr_total: int = 0
    read: int = 0  # pages through the layout pass
    encoded: float = 0.0  # share of its texts encoded, 0 to 1
    stage: str = ""
    finished: bool = False
    done: float = 0.0  # pages' worth of work done; never goes back

    def step(self, what: str, done: int, total: int) -> None:
        if what == "read" and total:
            self.pages = total
            self.read = max(self.read, done)
        elif what == "ocr" and total:
            self.ocr_total, self.ocr_done = total, max(self.ocr_done, done)
        elif what == "encode" and total and self.stage == "encode":
            self.encoded = max(self.encoded, done / total)
        elif not total:  # a stage begins; the graph stage encodes entity names, not counted
            self.stage = what
            if what in ("summaries", "graph", "encode") and self.pages is not None:
                self.read = self.pages
        self.done = max(self.done, self._work_done())

    def _work_done(self) -> float:
        pages = self.pages or 0
        total = self.ocr_total * OCR_SECONDS + pages * (READ_SECONDS + ENCODE_SECONDS)
        if not total:
            return 0.0
        spent = (
            self.ocr_done * OCR_SECONDS
            + self.read * READ_SECONDS
            + self.encoded * pages * ENCODE_SECONDS
        )
        return pages * min(spent / total, 1.0)

    def finish(self, pages: int) -> None:
        """The file is done: its vectors written (or it failed, or was unchanged: pages 0). A
        failure keeps the work it showed, so the bar does not step back."""
        self.pages = max(pages, round(self.done))
        self.done = float(self.pages)
        self.finished = True


@dataclass(frozen=True)
class PageCount:
    done: float  # pages' worth of work done over the run
    total: float | None  # pages the run holds; None until one file's pages are known
    exact: bool  # every file's pages counted (else ``total`` is partly estimated)


class PageMeter:
    """Pages done and pages to do over a run, for a progress bar with an ETA.

    A file's pages are counted when its parser opens it (PDFs) or when it is written (the
    others); until then they are estimated from its size, at the pages per byte of the files
    counted so far. Within a file, its pages are shared among OCR, reading and encoding by what
    each usually costs, so a long PDF moves the bar all through its preparation and through its
    vectors, written after it (``indexer/dense_stage.py``)."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self._files = {path: _FilePages(size) for path, size in sizes.items()}

    def step(self, path: str, what: str, done: int, total: int) -> None:
        file = self._files.get(path)
        if file is not None:
            file.step(what, done, total)

    def written(self, path: str, pages: int) -> None:
        """The file's first stage is written: what is left of it is encoding its texts."""
        file = self._files.get(path)
        if file is not None:
            file.pages = max(pages, file.pages or 0)
            file.step("encode", 0, 0)

    def finish(self, path: str, pages: int) -> None:
        file = self._files.get(path)
        if file is not None:
            file.finish(pages)

    def count(self) -> PageCount:
        files = self._files.values()
        done = sum(f.done for f in files)
        known = [f for f in files if f.pages is not None]
        unknown_bytes = sum(f.size for f in files if f.pages is None)
        if not unknown_bytes:
            return PageCount(done, float(sum(f.pages or 0 for f in known)), exact=True)
        known_bytes = sum(f.size for f in known)
        if not known_bytes:
            return PageCount(done, None, exact=False)
        pages = sum(f.pages or 0 for f in known)
        return PageCount(done, pages + unknown_bytes * pages / known_bytes, exact=False)
