"""The one interface tools use to reach an index: the views (by SQL) and the vector collections.

Tools never open files or connections themselves; they ask a ``Store`` for a cursor over the
views, for BM25 or dense candidates, and for entry metadata. Two backends implement it:

- ``DirectoryStore`` (``storage/directory/store.py``): an index directory, DuckDB and
  ``vectors.sqlite``; the default, for one person's folder.
- ``PostgresStore`` (``storage/postgres/store.py``): a shared PostgreSQL database with pgvector,
  for teams; any number of servers answer from it.

The SQL tools issue is written once for both: ``?`` placeholders (or ``$name`` with a dict),
``x = ANY(?)`` for membership in a list, and functions both engines have. ``dialect`` names the
engine a client's own SQL (``run_sql``) is written for.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from docsym.models.encoder import Encoder, query_encoder
from docsym.storage import failed_files, schema
from docsym.storage.derived import DocumentCache, Library, read_document_versions
from docsym.storage.entries import Entry
from docsym.storage.failed_files import FailedFile
from docsym.storage.run_state import Indexing
from docsym.storage.sql_pool import SqlRows

T = TypeVar("T")
P = TypeVar("P")
# How each backend's keyword collection is listed: SQLite FTS5, PostgreSQL full-text search.
KEYWORD_KINDS = {"fts5": "SQLite FTS5", "tsvector": "PostgreSQL full-text search"}
Dialect = Literal["duckdb", "postgresql"]


@dataclass(frozen=True)
class EntryRow(Entry):
    """An entry as stored, with its id (shared by every collection)."""

    id: int


class Store(ABC):
    dialect: Dialect

    def __init__(self, model_name: str | None = None) -> None:
        self._model_name = model_name  # overrides the model a collection was written with
        self._derived: dict[str, tuple[object, Any]] = {}
        self._derived_lock = threading.Lock()
        self._documents = DocumentCache()
        self._libraries: dict[str, Library] = {}
        self._lasting: dict[str, object] = {}

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the index is, for status and messages (no password)."""

    # -- the views ---------------------------------------------------------------------------
    @abstractmethod
    def sql(self) -> Any:
        """A cursor for the tools' own queries: ``execute(sql, params)``, ``fetchone``,
        ``fetchall``, ``description``."""

    @abstractmethod
    def client_sql(self, sql: str, limit: int) -> SqlRows:
        """Run a client's statement, read-only and bounded in time, memory and size."""

    # -- the vector collections --------------------------------------------------------------
    @abstractmethod
    def visible(self, alias: str = "e") -> str:
        """SQL condition on ``entries``: the entries readers may see now."""

    @abstractmethod
    def collections(self) -> dict[str, tuple[str, str | None, int | None]]:
        """name -> (kind, model, dimension)."""

    def is_keyword(self, collection: str) -> bool:
        """Whether ``collection`` is the keyword (BM25) one rather than a dense one."""
        return self.collections()[collection][0] in KEYWORD_KINDS

    def encoder_for(self, collection: str) -> Encoder:
        kind, model, _ = self.collections()[collection]
        return query_encoder(self._model_name or model)

    @abstractmethod
    def fts(
        self,
        query: str,
        where: str = "TRUE",
        params: list | None = None,
        limit: int = 50,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 candidates: [(entry id, score)] best first, higher is better. ``per_text``: one
        entry per text (``Store.copies`` lists the others); else every row, as a caller scoring
        all the rows of one document wants. ``views``: the (table, column) pairs ``where``
        admits, when the caller knows them, so a keyword index reads only their texts."""

    @abstractmethod
    def absent_words(self, words: list[str]) -> list[str]:
        """The ``words`` (as ``search_words`` reads them) that no keyword row holds, in order."""

    @abstractmethod
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
        """Nearest entries by cosine similarity: [(entry id, similarity)] best first; with a
        filter, still its ``limit`` hits when that many match. ``per_text`` and ``views`` as for
        ``fts``."""

    @abstractmethod
    def similarities(self, collection: str, vector: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``vector`` to each entry of ``ids`` (in order; 0 if none)."""

    @abstractmethod
    def entries(self, ids: list[int]) -> dict[int, EntryRow]: ...

    @abstractmethod
    def copies(
        self, entry_id: int, where: str, params: list, limit: int
    ) -> tuple[list[EntryRow], int]:
        """The other entries readers see that match ``where`` and hold the same text as
        ``entry_id`` (its text key): the first ``limit`` by id, and how many there are. Searches
        return one entry per text; these are the places it also stands."""

    @abstractmethod
    def entry_keys(self, where: str, params: list) -> dict[int, tuple[str, str, str]]:
        """id -> (table_name, column_name, primary_key) of the entries matching ``where``."""

    @abstractmethod
    def collection_ids(self, collection: str) -> set[int]:
        """The entry ids a collection holds (keyword index or vectors), for ``docsym check``."""

    @abstractmethod
    def awaiting_vectors(self) -> frozenset[str]:
        """Documents readers see whose vectors are not written yet: searchable by keyword only
        until the indexer's dense stage reaches them (``indexer/dense_stage.py``)."""

    def indexing(self) -> Indexing:
        """Whether an index run is alive, and the files it has not yet made searchable
        (``storage/run_state.py``)."""
        return Indexing()

    def failed_files(self) -> tuple[FailedFile, ...]:
        """The files index runs could not read, newest first (``storage/failed_files.py``)."""
        return self.derived("failed-files", lambda store: failed_files.read(store.sql()))

    def sign_gaps(self) -> dict[str, int]:
        """Dense collection -> vectors lacking from its sign file
        (``storage/directory/sign_file.py``), for collections that have one; backends without
        sign files have none."""
        return {}

    def keyword_index(self) -> str | None:
        """The state of a keyword index kept beside the keyword collection for speed
        (``storage/directory/keyword_index.py``); None for backends without one."""
        return None

    def hidden_entries(self) -> int:
        """Entries written but not yet visible to readers (none where writes are atomic)."""
        return 0

    def row_counts(self) -> dict[str, int]:
        """Rows of each view readers see."""
        con = self.sql()
        return {
            t.name: con.execute(f"SELECT count(*) FROM {t.name}").fetchone()[0]
            for t in schema.TABLES
        }

    def reading(self) -> AbstractContextManager[None]:
        """Hold what readers see for the block: one tool call reads one generation, whatever
        is published meanwhile (an index directory; a store's writes are per statement)."""
        return nullcontext()

    # -- structures built from the index -----------------------------------------------------
    @abstractmethod
    def version(self) -> object:
        """Changes whenever what readers see changes."""

    def derived(self, name: str, build: Callable[[Store], T]) -> T:
        """A structure built from the index (e.g. the entity graph), kept until the index
        changes. Only a cache: any server rebuilds it from the store."""
        version = self.version()
        with self._derived_lock:
            cached = self._derived.get(name)
            if cached is not None and cached[0] == version:
                return cached[1]
        value = build(self)
        with self._derived_lock:
            self._derived[name] = (version, value)
        return value

    def document_versions(self) -> dict[str, object]:
        """doc_id -> indexed_at of every document readers see: a document's rows stay the same
        while both do, so structures built from them are keyed by the pair."""
        return self.derived("document-versions", read_document_versions)

    def per_document(self, name: str, doc_id: str, build: Callable[[Store, str], T]) -> T:
        """A structure built from one document's rows (``build(store, doc_id)``), kept across
        publishes while that document is unchanged, for the recently used documents only
        (``storage/derived.py``'s ``DocumentCache``)."""
        return self._documents.get(self, name, doc_id, build)

    def library(
        self, name: str, read: Callable[[Store, list[str] | None], dict[str, P]], empty: P
    ) -> dict[str, P]:
        """doc_id -> a part per document over the whole index, where a new index version reads
        only the parts of the documents added or changed (``storage/derived.py``'s
        ``Library``)."""
        with self._derived_lock:
            library = self._libraries.setdefault(name, Library(read, empty))
        return self.derived(name, library.parts)

    def lasting(self, name: str, make: Callable[[], T]) -> T:
        """An object kept for the store's life, whatever is published: a cache whose entries
        carry the ``document_versions`` they were read at."""
        with self._derived_lock:
            if name not in self._lasting:
                self._lasting[name] = make()
            return self._lasting[name]  # type: ignore[return-value]

    def derived_documents(self, name: str) -> dict[str, object]:
        """doc_id -> the ``per_document`` structure ``name`` kept for it now."""
        return self._documents.held(name)

    # -- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_copies(
    cursor: Any, entry_id: int, where: str, params: list, limit: int
) -> tuple[list[EntryRow], int]:
    """``Store.copies`` over a table ``entries`` with a ``text_key`` column, aliased ``e`` for
    ``where``; ``cursor.execute`` takes ``?`` parameters. The copies are counted and chosen by
    their keys and filter columns alone (an index holds them), and only the rows listed read
    whole: a text may stand in thousands of papers."""
    copies = f"e.text_key = (SELECT text_key FROM entries WHERE id = ?) AND e.id != ? AND ({where})"
    args = [entry_id, entry_id, *params]
    (count,) = cursor.execute(f"SELECT count(*) FROM entries e WHERE {copies}", args).fetchone()
    if not count:
        return [], 0
    rows = cursor.execute(
        "SELECT c.table_name, c.column_name, c.primary_key, c.doc_id, c.page_number, c.text, "
        "c.id FROM entries c WHERE c.id IN "
        f"(SELECT e.id FROM entries e WHERE {copies} ORDER BY e.id LIMIT ?) ORDER BY c.id",
        [*args, limit],
    ).fetchall()
    return [EntryRow(*r) for r in rows], count
