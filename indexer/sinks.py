"""Where indexed documents go: the index directory or the shared PostgreSQL store.

Both take a document in two stages: its rows and entries (searchable by keyword once
published), then its entries' vectors (``indexer/dense_stage.py``); they keep the two sides of
the index in step, and the pipeline does not know which it writes to.

- ``DirectorySink``: the DuckDB writer (a private copy, published atomically) and
  ``vectors.sqlite`` (entries stamped with the generation that published them).
- ``PostgresSink``: one transaction per stage of a document; there is nothing to publish and
  nothing to reconcile after a killed run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from docsym.models.encoder import collection_name
from docsym.runtime.settings import get_settings
from docsym.storage import failed_files, ids
from docsym.storage.failed_files import Outcome
from docsym.storage.paths import IndexPaths, is_store_url
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import POOL_MEMBERS_SQL, PoolMembers, pool_members
from docsym.storage.unwritable import OutOfSpace, check_writable, out_of_space
from docsym.storage.vectors import Entry, VectorStore
from docsym.storage.writer import IndexWriter

Claim = Literal["mine", "busy", "done"]


class SinkBroken(RuntimeError):
    """The index can take no more documents this run (a commit failed half-way); nothing of
    this run is published."""


class IndexFull(SinkBroken, OutOfSpace):
    """The index directory ran out of room (a full disk, a quota, a file size limit): the run
    stops, publishes nothing more and removes its private copies; ``docsym index`` says so in
    one line (``storage/unwritable.py``)."""


def open_sink(target: Path | str, model_name: str) -> Sink:
    """The sink for an index directory or a ``postgresql://`` store URL; vectors of
    ``model_name`` go to its collection."""
    if is_store_url(target):
        return PostgresSink(str(target), model_name)
    return DirectorySink(Path(target), model_name)


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


class DirectorySink(Sink):
    def __init__(self, root: Path, model_name: str) -> None:
        check_writable(root)  # a read-only index is refused before anything is opened
        self.root = root
        self.model_name = model_name
        self.collection = collection_name(model_name)
        self._broken: str | None = None
        # The vector file is told each publish, so readers see that generation's entries.
        with self._room():
            self.vectors = VectorStore(IndexPaths(root).vectors)
        try:
            with self._room():
                self.writer = IndexWriter(
                    root, get_settings().publish_seconds, self.vectors.published
                )
                self.writer.__enter__()
        except BaseException:
            self.vectors.close()
            raise
        self.needs_reindex = self.writer.needs_reindex

    def _writing(self) -> AbstractContextManager[None]:
        return self._room()

    @contextmanager
    def _room(self) -> Iterator[None]:
        """Every write of the run goes through here: one that fails for lack of room stops
        the run (``IndexFull``), which then publishes nothing more."""
        try:
            yield
        except IndexFull:
            raise
        except Exception as exc:
            vectors = getattr(self, "vectors", None)
            number = out_of_space(exc, vectors.con if vectors is not None else None)
            if number is None:
                raise
            full = IndexFull(self.root, number)
            self._broken = str(full)
            raise full from exc

    def documents_by_path(self) -> dict[str, tuple[str, str]]:
        return self.writer.documents_by_path()

    def reindex_doc_ids(self) -> set[str]:
        return self.writer.reindex_doc_ids()

    def stale(self) -> set[str]:
        """Undo what a killed run wrote to the vector file after the last publish, drop
        entries of documents the database lacks; return the documents whose entries are
        missing, so they get indexed again (those with entries but no vectors only await
        their dense stage)."""
        with self._room():
            self.vectors.discard_unpublished(self.writer.published)
            self.vectors.generation = self.writer.generation
            # Entity keys of before schema version 7 (storage/ids.py), as its migration
            # rewrote the rows: published with them, so readers never see rows and keys
            # disagree.
            self.vectors.rekey("entities", "*-e[0-9]*", lambda key: ids.current(key, "entity"))
            in_db = {doc_id for doc_id, _ in self.writer.documents_by_path().values()}
            self.vectors.remove_documents(self.vectors.doc_ids() - in_db)
        return in_db - self.vectors.embedded_doc_ids(self.collection) - self.awaiting_vectors()

    def waiting(self, files: int) -> None:
        self.writer.waiting_files = files  # recorded with the next publish

    def awaiting_vectors(self) -> set[str]:
        return self.vectors.awaiting_vectors(self.collection)

    def entries_of(self, doc_id: str) -> list[tuple[int, Entry]]:
        return self.vectors.entries_of(doc_id)

    def pool_members(self, doc_id: str) -> PoolMembers:
        found = self.writer.con.execute(POOL_MEMBERS_SQL, [doc_id, doc_id]).fetchall()
        return pool_members(found)

    def _add_vectors(self, doc_id: str, ids: list[int], matrix: np.ndarray) -> None:
        if self._broken:
            raise SinkBroken(self._broken)
        with self._room():
            self.vectors.add_vectors(doc_id, self.collection, ids, matrix)

    def _ensure_collection(self, name: str, model: str, dim: int) -> None:
        with self._room():
            self.vectors.ensure_collection(name, model, dim)

    def _put(self, rows, doc_id, replaces, entries) -> None:
        """The vector transaction holds the DuckDB one: a failure in either rolls both back.
        Only if the vector commit fails after the rows committed do the two disagree; then the
        run stops and publishes nothing more, so readers never see it."""
        if self._broken:
            raise SinkBroken(self._broken)
        rows_committed = False
        with self._room():
            try:
                with self.vectors.replacing_documents([doc_id, *replaces], entries, {}):
                    with self.writer.writing_document(rows, replaces):
                        pass
                    rows_committed = True
            except BaseException as exc:
                if rows_committed:
                    self._broken = f"the vector file failed to commit a document: {exc}"
                    raise SinkBroken(self._broken) from exc
                raise
            self.writer.publish_if_due()

    def publish_if_due(self, now: bool = False) -> None:
        if not self._broken:
            with self._room():
                self.writer.publish_if_due(now)

    def remove(self, doc_ids: list[str]) -> None:
        with self._room():
            self.writer.remove_documents(doc_ids)
            self.vectors.remove_documents(doc_ids)

    def reindex_done(self) -> None:
        with self._room():
            self.writer.reindex_done()

    def close(self, failed: bool) -> None:
        try:
            if self._broken:  # rows without their vectors, or no room: drop unpublished work
                self.writer.abandon()
            elif failed:  # what was committed is still published; the run's error is raised
                with self._room():
                    self.writer.__exit__(RuntimeError, RuntimeError("index run failed"), None)
            else:
                with self._room():
                    self.writer.__exit__(None, None, None)
                    self.vectors.settle()
        finally:
            self.vectors.close()


class PostgresSink(Sink):
    def __init__(self, url: str, model_name: str) -> None:
        from docsym.storage.postgres.writer import PostgresWriter

        self.model_name = model_name
        self.collection = collection_name(model_name)
        self.writer = PostgresWriter(url).__enter__()
        self.needs_reindex = self.writer.needs_reindex

    def documents_by_path(self) -> dict[str, tuple[str, str]]:
        return self.writer.documents_by_path()

    def reindex_doc_ids(self) -> set[str]:
        return self.writer.reindex_doc_ids()

    def stale(self) -> set[str]:
        return set()  # a document's rows and entries are committed together

    def waiting(self, files: int) -> None:
        self.writer.record_waiting(files)

    def awaiting_vectors(self) -> set[str]:
        return self.writer.awaiting_vectors(self.collection)

    def entries_of(self, doc_id: str) -> list[tuple[int, Entry]]:
        return self.writer.entries_of(doc_id)

    def pool_members(self, doc_id: str) -> PoolMembers:
        return self.writer.pool_members(doc_id)

    def _add_vectors(self, doc_id: str, ids: list[int], matrix: np.ndarray) -> None:
        self.writer.add_vectors(doc_id, self.collection, ids, matrix)

    def _ensure_collection(self, name: str, model: str, dim: int) -> None:
        self.writer.ensure_collection(name, model, dim)

    def _put(self, rows, doc_id, replaces, entries) -> None:
        self.writer.write_document(rows, entries, {}, replaces)

    @contextmanager
    def claim(self, doc_id: str, sha256: str, *, wait: bool) -> Iterator[Claim]:
        with self.writer.claim(doc_id, wait=wait) as held:
            if not held:
                yield "busy"
            elif self.writer.has_document(doc_id, sha256):
                yield "done"
            else:
                yield "mine"

    def publish_if_due(self, now: bool = False) -> None:
        pass  # each document is seen by readers as its transaction commits

    def remove(self, doc_ids: list[str]) -> None:
        self.writer.remove_documents(doc_ids)

    def reindex_done(self) -> None:
        self.writer.reindex_done()

    def close(self, failed: bool) -> None:
        self.writer.__exit__(None, None, None)
