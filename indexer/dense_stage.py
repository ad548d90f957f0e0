"""The second stage of indexing: documents already searchable by keyword get their vectors.

Encoding is most of an index run (77% of the 10-K's), while parsing, summaries, the tree, the
graph and the keyword entries take the rest; so a document is written and published without its
vectors first (``Sink.write``), and this stage adds them one document at a time. Its encoder
runs on a thread of the indexing process (ONNX Runtime releases the GIL) while the worker
processes parse the next files, so both cores stay busy; the main thread reads each document's
entries from the sink and writes its vectors, since a sink belongs to one thread.

Everything a document's vectors need is read back from the store (its entries, and which chunks
each page and section holds for pooling), so the documents a stopped run left without vectors
are finished by the next run without being parsed again.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from docsym.indexer.embedding import embed_entries
from docsym.indexer.errors import WorkerSetupError
from docsym.indexer.progress import Beat, ReportingEncoder
from docsym.models.encoder import get_encoder
from docsym.runtime.extras import MissingExtra
from docsym.storage.entries import Entry
from docsym.storage.schema import PoolMembers, dense_columns
from docsym.storage.sink import Sink, SinkBroken

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0  # how often a waiting pipeline hears of the encoder's progress


class DenseProgress:
    """What the dense stage tells the pipeline, on its main thread."""

    def encoding(self, doc_id: str, done: int, total: int) -> None:
        """Part of a document's texts encoded (characters ``done`` of ``total``)."""

    def written(self, doc_id: str, done: int, total: int) -> None:
        """A document's vectors are written: ``done`` documents of the ``total`` added."""


@dataclass
class _Job:
    doc_id: str
    ids: list[int]
    encoded: Future  # -> (matrix, seconds)


class DenseStage:
    """Documents waiting for vectors, encoded in order on one background thread."""

    def __init__(
        self,
        sink: Sink,
        model_name: str,
        threads: int,
        progress: DenseProgress | None = None,
    ) -> None:
        self.sink = sink
        self.seconds = 0.0  # encoding time, summed over documents
        self.failures: list[tuple[str, str]] = []  # (doc_id, why): they wait for the next run
        self._progress = progress or DenseProgress()
        self._encoded = (0, 0)  # the running job's characters encoded, set by the thread
        self._waiting: deque[str] = deque()
        self._job: _Job | None = None
        self._done = 0
        self._seen = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="docsym-encode")
        self._load = (model_name, threads)
        self._encoder: Future | None = None

    def load(self) -> None:
        """Load the encoder on the thread (once), while the main thread goes on: the pipeline
        asks at the start of a run, when the first worker starts and the second core is free."""
        if self._encoder is None:
            self._encoder = self._thread.submit(lambda: get_encoder(*self._load).load())

    def ready(self) -> None:
        """Wait for the encoder (loading since the run began, so this rarely waits). A model it
        cannot load would fail every document's vectors: the run stops before writing any."""
        if self._encoder is None:
            return
        try:
            self._encoder.result()
        except MissingExtra:
            raise
        except Exception as exc:
            raise WorkerSetupError(f"the embedding model cannot be loaded: {exc}") from exc

    def add(self, doc_id: str) -> None:
        self.load()
        self._waiting.append(doc_id)
        self._seen += 1

    @property
    def pending(self) -> int:
        """Documents added whose vectors are not written yet."""
        return len(self._waiting) + (self._job is not None)

    def step(self) -> None:
        """Write the vectors of a document the thread finished and start the next; returns at
        once (the pipeline calls it between files and about once a second while it waits)."""
        if self._job is not None and self._encoded[1]:
            self._progress.encoding(self._job.doc_id, *self._encoded)
        if self._job is not None and self._job.encoded.done():
            self._write(self._job)
            self._job = None
        if self._job is None and self._waiting:
            self._job = self._start(self._waiting.popleft())

    def finish(self) -> None:
        """Encode and write every document added (blocks until done)."""
        self.step()
        while self._job is not None:
            wait([self._job.encoded], timeout=TICK_SECONDS)
            self.step()

    def close(self) -> None:
        self._thread.shutdown(wait=True, cancel_futures=True)

    def _start(self, doc_id: str) -> _Job:
        self._encoded = (0, 0)
        dense = dense_columns()  # the other views are searched by keyword only
        listed = [
            (i, e)
            for i, e in self.sink.entries_of(doc_id)
            if (e.table_name, e.column_name) in dense
        ]
        entries = [entry for _, entry in listed]
        members = self.sink.pool_members(doc_id) if entries else {}
        encoded = self._thread.submit(self._encode, entries, members)
        return _Job(doc_id, [i for i, _ in listed], encoded)

    def _encode(self, entries: list[Entry], members: PoolMembers) -> tuple[np.ndarray, float]:
        assert self._encoder is not None  # submitted with the first document
        encoder = ReportingEncoder(self._encoder.result(), Beat(self._heard))
        started = time.perf_counter()
        matrix = embed_entries(entries, members, encoder)
        return matrix, time.perf_counter() - started

    def _heard(self, what: str, done: int, total: int) -> None:
        """On the thread: the encoder's steps, read by ``step`` on the main thread."""
        if what == "encode" and total:
            self._encoded = (done, total)

    def _write(self, job: _Job) -> None:
        try:
            matrix, seconds = job.encoded.result()
            self.sink.write_vectors(job.doc_id, job.ids, matrix)
        except SinkBroken:
            raise
        except Exception as exc:  # the document stays searchable by keyword; a rerun retries
            log.debug("encoding %s failed", job.doc_id, exc_info=True)
            self.failures.append((job.doc_id, f"{type(exc).__name__}: {exc}"))
            return
        self.seconds += seconds
        self._done += 1
        self._progress.written(job.doc_id, self._done, self._seen)
