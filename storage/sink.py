"""Where an index run's documents go: the interface each backend's writer gives the indexer
(``storage/backends.py``'s ``open_sink`` opens one).

Each takes a document in two stages: its rows and entries (searchable by keyword once
published), then its entries' vectors (``indexer/dense_stage.py``); it keeps the two sides of
the index in step, and the indexer does not know which backend it writes to.

- ``storage/directory/sink.py``: the DuckDB writer (a private head, published atomically) and
  ``vectors.sqlite`` (entries stamped with the generation that published them).
- ``storage/postgres/sink.py``: one transaction per stage of a document; there is nothing to
  publish and nothing to reconcile after a killed run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from docsym.runtime.settings import get_settings
from docsym.storage import failed_files
from docsym.storage.entries import Entry
from docsym.storage.failed_files import Outcome
from docsym.storage.paths import IndexPaths, is_store_url
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import PoolMembers
from docsym.storage.unwritable import OutOfSpace

Claim = Literal["mine", "busy", "done"]


class SinkBroken(RuntimeError):
    """The index can take no more documents this run (a commit failed half-way); nothing of
    this run is published."""


class IndexFull(SinkBroken, OutOfSpace):
    """The index directory ran out of room (a full disk, a quota, a file size limit): the run
    stops, publishes nothing more and removes its private copies; ``docsym index`` says so in
    one line (``storage/unwritable.py``)."""


def ocr_cache_path(target: Path | str) -> Path:
    """OCR results are kept beside a directory index, and in the user's cache for a store."""
    if is_store_url(target):
        return get_settings().cache.expanduser() / "ocr-cache.sqlite"
    return IndexPaths(Path(target)).ocr_cache


class FailureRecords(Protocol):
    """How a backend's writer keeps the files a run could not read (``failed_files``) and
    follows a file that moved."""

    def move_document(self, doc_id: str, path: Path) -> None: ...

    def record_failures(self, rows: list[tuple]) -> None: ...
    def clear_failures(self, paths: list[str]) -> None: ...
    def failure_paths(self) -> list[tuple[str, bytes | None]]: ...


class Sink(ABC):
    """Takes documents one at a time: rows and entries, then the entries' vectors."""

    model_name: str
    collection: str  # where the model's vectors go
    needs_reindex: bool  # the schema changed: documents must be indexed again
    writer: FailureRecords
    _collection_ready = False

    def move(self, doc_id: str, path: Path) -> None:
        """The document's file moved to ``path``: its rows say so, nothing is read again."""
        with self._writing():
            self.writer.move_document(doc_id, path)

    def record_failure(self, path: Path | str, outcome: Outcome, reason: str) -> None:
        """Remember that ``path`` (a Path, or readable text) was not indexed, and why."""
        with self._writing():
            self.writer.record_failures([failed_files.record_row(path, outcome, reason)])

    def clear_failures(self, paths: list[str]) -> None:
        """Forget the records of ``paths`` (readable text): read since, or gone."""
        with self._writing():
            self.writer.clear_failures(paths)

    def _writing(self) -> AbstractContextManager[None]:
        """What every write of the sink runs inside (an index directory's check for room)."""
        return nullcontext()

    def recorded_failures(self) -> list[tuple[str, bytes | None]]:
        """(readable path, exact bytes) of every file recorded as not indexed."""
        return self.writer.failure_paths()

    def write(
        self, rows: DocumentRows, doc_id: str, replaces: list[str], entries: list[Entry]
    ) -> None:
        """The first stage of a document: replace ``replaces`` (and the document's own earlier
        rows) with ``rows`` and ``entries``, all or nothing. Once published it is searchable by
        keyword; its vectors follow (``write_vectors``)."""
        self._put(rows, doc_id, replaces, entries)

    def write_vectors(self, doc_id: str, ids: list[int], matrix: np.ndarray) -> None:
        """The second stage: the vectors of the document's entries ``ids`` (as ``entries_of``
        listed them), ``matrix[i]`` for ``ids[i]``."""
        if not self._collection_ready:
            self._ensure_collection(self.collection, self.model_name, int(matrix.shape[1]))
            self._collection_ready = True
        self._add_vectors(doc_id, ids, matrix)

    @abstractmethod
    def waiting(self, files: int) -> None:
        """How many of this run's files are not written yet, for readers to say the index is
        still growing (``storage/run_state.py``); 0 when the run has written them all."""

    @abstractmethod
    def awaiting_vectors(self) -> set[str]:
        """Documents written (first stage) whose vectors are not written yet."""

    @abstractmethod
    def entries_of(self, doc_id: str) -> list[tuple[int, Entry]]:
        """The document's entries with their ids, in the order they were written."""

    @abstractmethod
    def pool_members(self, doc_id: str) -> PoolMembers:
        """The chunks each of the document's pages and sections holds."""

    @abstractmethod
    def publish_if_due(self, now: bool = False) -> None:
        """Let readers see what was written, if it is time to (or ``now``)."""

    @contextmanager
    def claim(self, doc_id: str, sha256: str, *, wait: bool) -> Iterator[Claim]:
        """Hold the right to write ``doc_id`` while indexing it: "mine", "busy" (another run
        holds it; only without ``wait``) or "done" (another run wrote this version of it).
        One writer per index directory needs no claims."""
        yield "mine"

    @abstractmethod
    def documents_by_path(self) -> dict[str, tuple[str, str]]:
        """path -> (doc_id, sha256) of every indexed document."""

    @abstractmethod
    def reindex_doc_ids(self) -> set[str]:
        """The documents the schema upgrade asks to index again (all, or those of some
        formats)."""

    @abstractmethod
    def stale(self) -> set[str]:
        """Documents that must be indexed again (their entries are missing)."""

    @abstractmethod
    def remove(self, doc_ids: list[str]) -> None: ...

    @abstractmethod
    def reindex_done(self) -> None: ...

    @abstractmethod
    def close(self, failed: bool) -> None: ...

    @abstractmethod
    def _ensure_collection(self, name: str, model: str, dim: int) -> None: ...

    @abstractmethod
    def _put(
        self, rows: DocumentRows, doc_id: str, replaces: list[str], entries: list[Entry]
    ) -> None: ...

    @abstractmethod
    def _add_vectors(self, doc_id: str, ids: list[int], matrix: np.ndarray) -> None: ...
