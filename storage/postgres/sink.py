"""The PostgreSQL store's writer as an index run sees it (``storage/sink.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from docsym.models.encoder import collection_name
from docsym.storage.entries import Entry
from docsym.storage.schema import PoolMembers
from docsym.storage.sink import Claim, Sink


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
