"""The index directory's writer as an index run sees it (``storage/sink.py``): the DuckDB rows
(``writer.py``) and the vector file (``vectors.py``), kept in step."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import numpy as np

from docsym.models.encoder import collection_name
from docsym.runtime.settings import get_settings
from docsym.storage import ids
from docsym.storage.directory.vectors import VectorStore
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.entries import Entry
from docsym.storage.paths import IndexPaths
from docsym.storage.schema import POOL_MEMBERS_SQL, PoolMembers, pool_members
from docsym.storage.sink import IndexFull, Sink, SinkBroken
from docsym.storage.unwritable import check_writable, out_of_space


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
            self.vectors.rekey_once(
                "entity_ids_v7", self.writer.published, "entities", "*-e[0-9]*",
                lambda key: ids.current(key, "entity"),
            )
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
