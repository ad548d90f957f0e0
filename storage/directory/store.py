"""The index directory as a ``Store``: the DuckDB views and the vector collections of
``vectors.sqlite``.

Dense search scans the collection's sign file memory-mapped and re-scores its candidates from
the sqlite-vec table, the store of record (``sign_file.py``, ``sign_search.py``):
memory and the cost of a publish do not grow with the library. An index written before sign
files (the next index run builds them) is searched as before, on an in-memory ``VectorIndex``
rebuilt when an indexer commits new vectors (SQLite's ``data_version`` changes).

Every read of ``vectors.sqlite`` keeps to the entries of the DuckDB generation being read
(``generations.py``): an indexer killed between writing a document's vectors and
publishing its rows leaves entries no tool shows.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import apsw
import duckdb
import numpy as np

from docsym.language.terms import search_words
from docsym.storage import run_state, schema
from docsym.storage.directory import generations, keyword_index, sign_file, sign_search
from docsym.storage.directory.bm25_search import Bm25Search
from docsym.storage.directory.reader import IndexReader
from docsym.storage.directory.vector_index import VectorIndex, load_from_sqlite
from docsym.storage.directory.vectors import (
    awaiting_vectors,
    connect,
    lookup_hint,
    opened_immutable,
    text_key_column,
)
from docsym.storage.entries import BM25, vec_table, views_sql
from docsym.storage.paths import IndexNotFoundError, IndexPaths
from docsym.storage.sql_pool import SqlPool, SqlRows
from docsym.storage.store import EntryRow, Store, read_copies

SUBSETS = 16  # filters whose matching entry ids dense search keeps


class DirectoryStore(Store):
    dialect = "duckdb"

    def __init__(self, root: Path, model_name: str | None = None) -> None:
        super().__init__(model_name)
        self.paths = IndexPaths(root)
        self.reader = IndexReader(root)
        self._lock = threading.RLock()
        self._con: apsw.Connection | None = None
        self._identity: tuple | None = None
        self._immutable = False  # see vectors.py's connect
        # BM25 has a connection of its own, so hybrid_search runs it beside the dense search.
        self._fts_lock = threading.Lock()
        self._fts: Bm25Search | None = None
        self._fts_identity: tuple | None = None
        self._keywords = keyword_index.KeywordIndex(keyword_index.folder(self.paths.vectors))
        self._stamped = False  # the vector file has generation stamps (schema 2)
        self._key = "id"  # the column of an entry's text key: text_key from schema 3
        self._lookup = ""  # how SQL looks entries up by id (vectors.py's lookup_hint)
        self._dense: dict[str, tuple[tuple[int, int], VectorIndex]] = {}
        self._signs: dict[str, sign_file.SignScan] = {}
        # Entry ids matching a filter, for the vector index version they were read under:
        # hybrid_search filters every call on the same default views.
        self._subsets: dict[tuple, np.ndarray] = {}
        self._sql_pool: SqlPool | None = None

    @property
    def location(self) -> str:
        return str(self.paths.root)

    # -- DuckDB ------------------------------------------------------------------------------
    def sql(self):
        """A cursor for the tools' own queries (fixed SQL with parameters)."""
        return self.reader.connection()

    def reading(self) -> AbstractContextManager[None]:
        return self.reader.pinned()

    def client_sql(self, sql: str, limit: int) -> SqlRows:
        """Run a client's statement in a worker process bounded in time and memory."""
        with self._lock:
            if self._sql_pool is None:
                self._sql_pool = SqlPool(self.paths.root)  # the settings' sql_* limits
            pool = self._sql_pool
        return pool.run(sql, limit)

    # -- the vector file (vectors.sqlite) ----------------------------------------------------
    def _vectors(self) -> apsw.Connection:
        try:
            st = self.paths.vectors.stat()
        except FileNotFoundError:
            raise IndexNotFoundError(
                f"no vector file at {self.paths.vectors}: run `docsym index PATH --index "
                f"{self.paths.root}`"
            ) from None
        identity = self._vector_identity(st)
        if self._con is None or identity != self._identity:
            if self._con is not None:
                self._con.close()
            self._con = connect(self.paths.vectors, readonly=True)
            self._immutable = opened_immutable(self._con)
            self._identity = self._vector_identity(st)
            self._dense.clear()
            self._subsets.clear()
            columns = {r[1] for r in self._con.execute("PRAGMA table_info(entries)")}
            self._stamped = "born" in columns
            self._key = text_key_column(columns)
            self._lookup = lookup_hint(self._con)
        return self._con

    def _vector_identity(self, st: os.stat_result) -> tuple:
        """What changes when the vector file must be opened again: a new file, or for a file
        opened as immutable (a read-only copy in WAL mode), any write to it or its log."""
        if not self._immutable:
            return (st.st_ino, st.st_dev)
        wal = Path(f"{self.paths.vectors}-wal")
        return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, wal.exists())

    def visible(self, alias: str = "e") -> str:
        """SQL condition on ``entries``: those of the published DuckDB generation."""
        self._vectors()
        if not self._stamped:  # written before stamps: every entry is live
            return "TRUE"
        return generations.visible(self.reader.published(), alias)

    def collections(self) -> dict[str, tuple[str, str | None, int | None]]:
        with self._lock:
            rows = self._vectors().execute("SELECT name, kind, model, dim FROM collections")
            return {name: (kind, model, dim) for name, kind, model, dim in rows}

    def fts(
        self,
        query: str,
        where: str = "TRUE",
        params: list | None = None,
        limit: int = 50,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 candidates: [(entry id, score)] best first (score = -bm25, higher is better)."""
        words = search_words(query)  # quoted by Bm25Search: no query syntax reaches MATCH
        if not words:
            return []
        with self._lock:
            visible, identity = self.visible(), self._identity
            # The keyword index holds the rows of one generation (stamped), checked here
            # against the one this call reads; an index of before stamps has none.
            generation = self.reader.published() if self._stamped else None
        with self._fts_lock:
            bm25 = self._bm25(identity)
            keywords = None if generation is None else self._keywords.searcher(generation)
            where = f"({where}) AND {visible}"
            return bm25.search(words, where, params or [], limit, keywords, per_text, views)

    def absent_words(self, words: list[str]) -> list[str]:
        with self._lock:
            identity = self._identity
        with self._fts_lock:
            bm25 = self._bm25(identity)
            return [word for word in words if not bm25.holds(word)]

    def _bm25(self, identity: tuple | None) -> Bm25Search:
        """BM25 on its own connection to the vector file of ``identity`` (the one
        ``_vectors`` has open); called under ``_fts_lock``."""
        if self._fts is None or self._fts_identity != identity:
            if self._fts is not None:
                self._fts.con.close()
            self._fts = Bm25Search(connect(self.paths.vectors, readonly=True))
            self._fts_identity = identity
        return self._fts

    def dense(
        self,
        collection: str,
        vector: np.ndarray,
        where: str = "TRUE",
        params: list | None = None,
        limit: int = 50,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,
    ) -> list[tuple[int, float]]:
        """Nearest entries by cosine similarity: [(entry id, similarity)] best first."""
        signs = self._sign_scan(collection)
        if signs is not None:
            search = (signs, collection, vector, where, params, limit, per_text, views)
            ids, scores = self._dense_from_signs(*search)
            return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]
        with self._lock:  # the connection's part; the search itself reads immutable arrays
            index = self._dense_index(collection)
            subset = None
            if where != "TRUE":  # "TRUE" is what an empty filter compiles to
                subset = self._subset(collection, where, params or [])
                if subset.size == 0:
                    return []
        ids, scores = index.search(vector, limit, subset=subset)
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def _subset(self, collection: str, where: str, params: list) -> np.ndarray:
        """Ids of the visible entries matching ``where``, kept while the vectors do not change
        (the last SUBSETS filters)."""
        key = (self._identity, self._dense[collection][0], where, repr(params))
        found = self._subsets.get(key)
        if found is None:
            rows = self._vectors().execute(
                f"SELECT id FROM entries e WHERE ({where}) AND {self.visible()}", params
            )
            # Sorted once here, so each search maps them to positions without sorting again.
            found = np.unique(np.fromiter((r[0] for r in rows), dtype=np.int64))
            while len(self._subsets) >= SUBSETS:
                del self._subsets[next(iter(self._subsets))]
            self._subsets[key] = found
        return found

    def _sign_scan(self, collection: str) -> sign_file.SignScan | None:
        """The collection's sign file, or None for an index written before them."""
        scan = self._signs.get(collection)
        if scan is None:
            scan = sign_file.SignScan.open(sign_file.signs_path(self.paths.vectors, collection))
            if scan is None:
                return None
            self._signs[collection] = scan
        return scan

    def _dense_from_signs(
        self,
        signs: sign_file.SignScan,
        collection: str,
        vector: np.ndarray,
        where: str,
        params: list | None,
        limit: int,
        per_text: bool,
        views: Sequence[tuple[str, str]] | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Dense top-k from the sign file; with ``per_text``, the nearest entry of each text key
        (copies of a text have the same vector). ``views``: those ``where`` admits, if known."""
        params = params or []
        query = sign_search.normalised(vector)
        with self._lock:
            self._vectors()
            key = self._key if per_text else "id"
        if where != "TRUE":  # a small filter is scored whole: exact, and cheaper than a scan
            few, keys = self._matching(where, params, None, sign_search.MIN_CANDIDATES + 1, key)
            if len(few) <= sign_search.MIN_CANDIDATES:
                ids, vectors = self._floats(collection, few)  # those with a vector
                _, keys = sign_search.keys_of(ids, (few, keys))
                return sign_search.exact_top_k(query, limit, ids, vectors, keys)

        def accept(ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
            return self._matching(where, params, ids, None, key)

        def floats(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self._floats(collection, ids)

        outside = None
        if views is not None:

            def outside(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                return self._outside(ids, views, key)

        # Keyed by id (a caller asking for every row, or a file without text keys), each entry
        # is its own text: the search must not collapse copies by the sign file's keys.
        return sign_search.search(signs, query, limit, accept, floats, key != "id", outside)

    def _outside(
        self, ids: np.ndarray, views: Sequence[tuple[str, str]], key: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, ``key``) of the entries among ``ids`` of views other than ``views``: a filter
        admitting only those rejects every copy of their texts."""
        admitted, params = views_sql(views)
        sql = (
            f"SELECT e.id, e.{key} FROM json_each(?) AS j CROSS JOIN entries e {self._lookup} "
            f"ON e.id = j.value WHERE NOT {admitted}"
        )
        with self._lock:
            rows = self._vectors().execute(sql, [json.dumps(ids.tolist()), *params]).fetchall()
        found = np.array(rows, np.int64).reshape(-1, 2)
        return found[:, 0].copy(), found[:, 1].copy()

    def _matching(
        self, where: str, params: list, ids: np.ndarray | None, limit: int | None, key: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ids of visible entries matching ``where``, with their ``key`` (the text key, or the
        id): among ``ids`` (all when None), at most ``limit`` of them (all when None)."""
        with self._lock:
            visible = self.visible()
            found = f"SELECT e.id, e.{key} FROM"
            sql = f"{found} entries e WHERE ({where}) AND {visible}"
            args = list(params)
            if ids is not None:
                # CROSS JOIN fixes the order: look each id up, rather than let the planner scan
                # entries by the filter's or the generation's index and test the list (2 s at
                # 1M).
                sql = (
                    f"{found} json_each(?) AS j CROSS JOIN entries e {self._lookup} "
                    f"ON e.id = j.value WHERE ({where}) AND {visible}"
                )
                args = [json.dumps(ids.tolist()), *params]
            if limit is not None:
                sql += f" LIMIT {int(limit)}"
            rows = np.array(self._vectors().execute(sql, args).fetchall(), np.int64)
        rows = rows.reshape(-1, 2)
        return rows[:, 0].copy(), rows[:, 1].copy()

    def _floats(self, collection: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            return sign_file.float_vectors(self._vectors(), vec_table(collection), ids)

    def similarities(self, collection: str, vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``vector`` to each entry of ``ids`` (in order; 0 if it has none)."""
        if self._sign_scan(collection) is None:
            with self._lock:
                return self._dense_index(collection).similarities(vector, ids)
        wanted = np.asarray(ids, np.int64).reshape(-1)
        found, vectors = self._floats(collection, np.unique(wanted))
        scores = np.zeros(len(wanted), np.float32)
        if len(found):
            slots = np.minimum(np.searchsorted(found, wanted), len(found) - 1)
            hit = found[slots] == wanted
            scores[hit] = (vectors @ sign_search.normalised(vector))[slots[hit]]
        return scores

    def _dense_index(self, collection: str) -> VectorIndex:
        """The collection's vectors of the published generation, loaded once per change."""
        con = self._vectors()
        version = (con.execute("PRAGMA data_version").fetchone()[0], self.reader.published())
        cached = self._dense.get(collection)
        if cached is None or cached[0] != version:
            index = load_from_sqlite(con, vec_table(collection))
            if self._stamped:
                hidden = con.execute(f"SELECT id FROM entries e WHERE NOT {self.visible()}")
                index = index.without(np.fromiter((r[0] for r in hidden), dtype=np.int64))
            self._dense[collection] = (version, index)
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

    def copies(
        self, entry_id: int, where: str, params: list, limit: int
    ) -> tuple[list[EntryRow], int]:
        with self._lock:
            visible = self.visible()
            if self._key == "id":  # a file without text keys: every entry holds its own text
                return [], 0
            return read_copies(self._vectors(), entry_id, f"({where}) AND {visible}", params, limit)

    def entry_keys(self, where: str, params: list) -> dict[int, tuple[str, str, str]]:
        """id -> (table_name, column_name, primary_key) of the entries matching ``where``."""
        with self._lock:
            rows = self._vectors().execute(
                "SELECT id, table_name, column_name, primary_key FROM entries e "
                f"WHERE ({where}) AND {self.visible()}",
                params,
            )
            return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def version(self) -> tuple:
        """Changes when a new DuckDB generation or new vectors are published."""
        return (self.reader.generation(), self._vector_generation())

    def _vector_generation(self) -> tuple:
        with self._lock:
            con = self._vectors()
            return (self._identity, con.execute("PRAGMA data_version").fetchone()[0])

    def collection_ids(self, collection: str) -> set[int]:
        kind = self.collections()[collection][0]
        source = BM25 if kind == "fts5" else vec_table(collection)
        with self._lock:
            return {r[0] for r in self._vectors().execute(f"SELECT rowid FROM {source}")}

    def awaiting_vectors(self) -> frozenset[str]:
        return self.derived("awaiting_vectors", DirectoryStore._read_awaiting)

    def _read_awaiting(self) -> frozenset[str]:
        dense = [name for name, (kind, _, _) in self.collections().items() if kind == "vec0"]
        with self._lock:
            return frozenset(awaiting_vectors(self._vectors(), dense, self.visible()))

    def indexing(self) -> run_state.Indexing:
        try:
            recorded = (
                self.sql()
                .execute(f"SELECT value FROM {schema.META_TABLE} WHERE key = ?", [run_state.KEY])
                .fetchone()
            )
        except duckdb.CatalogException:  # an index older than its bookkeeping table
            return run_state.Indexing()
        return run_state.of_record(recorded[0] if recorded else None)

    def sign_gaps(self) -> dict[str, int]:
        gaps = {}
        for name, (kind, _, _) in self.collections().items():
            scan = self._sign_scan(name) if kind == "vec0" else None
            if scan is None:
                continue  # none yet (an older index): searched in memory until the next run
            with self._lock:
                live = sign_file.vec0_rowids(self._vectors(), vec_table(name))
            gaps[name] = len(sign_file.lacking(live, scan.rowids()))
        return gaps

    def keyword_index(self) -> str | None:
        """'current'; 'absent' or 'stale' (FTS5 answers until the next index run rebuilds
        it); or 'differs: ...' when it holds another number of texts than FTS5's rows hold at
        the generation it is stamped with (checked while no unpublished rows are about)."""
        with self._lock:
            generation = self.reader.published() if self._stamped else None
            con = self._vectors()  # first: it reads which column keys texts
            distinct = (
                f"SELECT count(DISTINCT e.{self._key}) FROM {BM25}_docsize AS d "
                "CROSS JOIN entries e ON e.id = d.id"
            )
            (texts,) = con.execute(distinct).fetchone()
        if generation is None or keyword_index.stamp(self._keywords.path) is None:
            return "absent"
        searcher = self._keywords.searcher(generation)
        if searcher is None:
            return "stale"
        if searcher.num_docs != texts and not self.hidden_entries():
            return f"differs: {searcher.num_docs} texts, FTS5 {texts}"
        return "current"

    def row_counts(self) -> dict[str, int]:
        return self.reader.row_counts()  # segments counted without a scan of their views

    def hidden_entries(self) -> int:
        with self._lock:
            (hidden,) = (
                self._vectors()
                .execute(f"SELECT count(*) FROM entries e WHERE NOT {self.visible()}")
                .fetchone()
            )
        return int(hidden)

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            if self._sql_pool is not None:
                self._sql_pool.close()
                self._sql_pool = None
            self.reader.close()
        with self._fts_lock:
            if self._fts is not None:
                self._fts.con.close()
                self._fts = None
