"""The one interface tools use to reach an index: the DuckDB views and the vector collections.

Tools never open files or connections themselves; they ask a ``Store`` for a DuckDB cursor, for
BM25 or dense candidates from ``vectors.sqlite``, and for entry metadata. A server-grade backend
(Postgres/pgvector, Qdrant) would be another implementation of these few methods.

Dense search runs on an in-memory ``VectorIndex`` built from the sqlite-vec table (the store of
record) and rebuilt when an indexer commits new vectors (SQLite's ``data_version`` changes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import apsw
import numpy as np

from language.terms import search_words
from storage.encoder import Encoder, get_encoder
from storage.paths import IndexPaths
from storage.reader import IndexNotFoundError, IndexReader
from storage.vector_index import VectorIndex, load_from_sqlite
from storage.vectors import BM25, Entry, connect, vec_table

T = TypeVar("T")


@dataclass(frozen=True)
class EntryRow(Entry):
    """An entry as stored, with its id (shared by every collection)."""

    id: int


class Store:
    def __init__(self, root: Path, model_name: str | None = None) -> None:
        self.paths = IndexPaths(root)
        self.reader = IndexReader(root)
        self._model_name = model_name
        self._lock = threading.RLock()
        self._con: apsw.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._dense: dict[str, tuple[int, VectorIndex]] = {}
        self._derived: dict[str, tuple[tuple, object]] = {}

    # -- DuckDB ------------------------------------------------------------------------------
    def sql(self):
        return self.reader.connection()

    # -- vectors.sqlite ----------------------------------------------------------------------
    def _vectors(self) -> apsw.Connection:
        try:
            st = self.paths.vectors.stat()
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"no vector store at {self.paths.vectors}: run `docsym index PATH --index "
                f"{self.paths.root}`"
            ) from None
        identity = (st.st_ino, st.st_dev)
        if self._con is None or identity != self._identity:
            if self._con is not None:
                self._con.close()
            self._con = connect(self.paths.vectors, readonly=True)
            self._identity = identity
            self._dense.clear()
        return self._con

    def collections(self) -> dict[str, tuple[str, str | None, int | None]]:
        with self._lock:
            rows = self._vectors().execute("SELECT name, kind, model, dim FROM collections")
            return {name: (kind, model, dim) for name, kind, model, dim in rows}

    def encoder_for(self, collection: str) -> Encoder:
        kind, model, _ = self.collections()[collection]
        return get_encoder(self._model_name or model)

    def fts(self, query: str, where: str = "1", params: list | None = None, limit: int = 50):
        """BM25 candidates: [(entry id, score)] best first (score = -bm25, higher is better)."""
        terms = search_words(query)  # quoted below: no query syntax reaches MATCH
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        sql = (
            f"SELECT {BM25}.rowid, -bm25({BM25}) FROM {BM25} JOIN entries e ON e.id = {BM25}.rowid "
            f"WHERE {BM25} MATCH ? AND ({where}) ORDER BY bm25({BM25}) LIMIT ?"
        )
        with self._lock:
            return list(self._vectors().execute(sql, [match, *(params or []), limit]))

    def dense(
        self,
        collection: str,
        vector: np.ndarray,
        where: str = "1",
        params: list | None = None,
        limit: int = 50,
    ) -> list[tuple[int, float]]:
        """Nearest entries by cosine similarity: [(entry id, similarity)] best first."""
        with self._lock:
            index = self._dense_index(collection)
            subset = None
            if where != "1":
                rows = self._vectors().execute(
                    f"SELECT id FROM entries e WHERE {where}", params or []
                )
                subset = np.fromiter((r[0] for r in rows), dtype=np.int64)
                if subset.size == 0:
                    return []
            ids, scores = index.search(vector, limit, subset=subset)
            return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def similarities(self, collection: str, vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``vector`` to each entry of ``ids`` (in order; 0 if it has none)."""
        with self._lock:
            return self._dense_index(collection).similarities(vector, ids)

    def _dense_index(self, collection: str) -> VectorIndex:
        con = self._vectors()
        version = con.execute("PRAGMA data_version").fetchone()[0]
        cached = self._dense.get(collection)
        if cached is None or cached[0] != version:
            self._dense[collection] = (version, load_from_sqlite(con, vec_table(collection)))
        return self._dense[collection][1]

    def entries(self, ids: list[int]) -> dict[int, EntryRow]:
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        with self._lock:
            rows = self._vectors().execute(
                "SELECT table_name, column_name, primary_key, doc_id, page_number, text, id "
                f"FROM entries WHERE id IN ({marks})",
                ids,
            )
            return {r[-1]: EntryRow(*r) for r in rows}

    def entry_keys(self, where: str, params: list) -> dict[int, tuple[str, str, str]]:
        """id -> (table_name, column_name, primary_key) of the entries matching ``where``."""
        with self._lock:
            rows = self._vectors().execute(
                f"SELECT id, table_name, column_name, primary_key FROM entries e WHERE {where}",
                params,
            )
            return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def derived(self, name: str, build: Callable[[Store], T]) -> T:
        """A structure built from the index (e.g. the entity graph), kept until the index
        changes: rebuilt when a new DuckDB generation or new vectors are published."""
        generation = (self.reader.generation(), self._vector_generation())
        with self._lock:
            cached = self._derived.get(name)
            if cached is not None and cached[0] == generation:
                return cached[1]
        value = build(self)
        with self._lock:
            self._derived[name] = (generation, value)
        return value

    def _vector_generation(self) -> tuple:
        with self._lock:
            con = self._vectors()
            return (self._identity, con.execute("PRAGMA data_version").fetchone()[0])

    def entry_ids(self, where: str, params: list) -> list[int]:
        with self._lock:
            rows = self._vectors().execute(f"SELECT id FROM entries e WHERE {where}", params)
            return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            self.reader.close()
