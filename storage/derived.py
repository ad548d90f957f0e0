"""Structures built from an index that follow one document's change instead of the whole store's.

A document's rows never change while its ``doc_id`` (from its content) and ``indexed_at`` (a
re-index rewrites it) stay the same, so a structure built from them is keyed by that pair and
outlives every publish that leaves the document alone:

- ``DocumentCache`` keeps structures of one document each (its entity graph, its search entries)
  for the documents calls touch, least recently used first out: none is held for a document no
  call asks about, so a library's size does not set a server's memory.
- ``Library`` keeps a structure over every document (the words naming each, page labels) as
  one part per document: a new index version reads the parts of the documents added or changed
  since the last and drops those of the documents removed, instead of reading them all again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
P = TypeVar("P")
# How many one-document structures a store keeps: a call touches one document (rank_nodes) or
# a page of hits (hybrid_search, find_entities: at most 50), so the next calls find theirs.
DOCUMENTS_KEPT = 256
# Past this share of documents changed, reading every part in one statement beats naming them.
READ_ALL_SHARE = 0.5


class IndexSource(Protocol):
    """What these caches ask of ``storage/store.py``'s ``Store`` (which holds them)."""

    def sql(self) -> Any: ...

    def document_versions(self) -> Mapping[str, object]: ...


S = TypeVar("S", bound=IndexSource)
_UNREAD = object()  # a document no part was read for yet (its indexed_at may be None)


def of_documents(doc_ids: list[str] | None, column: str = "doc_id") -> tuple[str, list]:
    """SQL condition and parameters for the rows of those documents (``None``: of every one)."""
    return ("TRUE", []) if doc_ids is None else (f"{column} = ANY(?)", [doc_ids])


def read_document_versions(store: IndexSource) -> dict[str, datetime | None]:
    """doc_id -> indexed_at of every document readers see now."""
    rows = store.sql().execute("SELECT doc_id, indexed_at FROM documents").fetchall()
    return dict(rows)


class DocumentCache:
    """One-document structures keyed by (name, doc_id, indexed_at), least recently used out."""

    def __init__(self, kept: int = DOCUMENTS_KEPT) -> None:
        self._kept = kept
        self._items: OrderedDict[tuple, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: S, name: str, doc_id: str, build: Callable[[S, str], T]) -> T:
        versions = store.document_versions()
        if doc_id not in versions:  # not (or no longer) in the index: built, never kept
            return build(store, doc_id)
        key = (name, doc_id, versions[doc_id])
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[return-value]
        value = build(store, doc_id)
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._kept:
                self._items.popitem(last=False)
        return value

    def held(self, name: str) -> dict[str, object]:
        """doc_id -> the structure ``name`` kept for it (what tests and benches look at)."""
        with self._lock:
            return {doc: value for (n, doc, _), value in self._items.items() if n == name}


class Library(Generic[P]):
    """A structure over every document, one part each, read again only for changed documents.

    ``read(store, doc_ids)`` returns the parts of those documents (``None``: of every one); a
    document it returns nothing for has an empty part. ``parts()`` is a fresh mapping per call
    (``Store.library`` keeps one per index version), so a call reading an older generation keeps
    the mapping it was given.
    """

    def __init__(self, read: Callable[[Any, list[str] | None], Mapping[str, P]], empty: P) -> None:
        self._read = read
        self._empty = empty
        self._parts: dict[str, tuple[object, P]] = {}  # doc_id -> (indexed_at, part)
        self._lock = threading.Lock()

    def parts(self, store: IndexSource) -> dict[str, P]:
        versions = store.document_versions()
        with self._lock:
            changed = [d for d, at in versions.items() if self._parts.get(d, (_UNREAD,))[0] != at]
            if changed:
                whole = len(changed) > READ_ALL_SHARE * len(versions)
                found = self._read(store, None if whole else changed)
                for doc_id in changed:
                    self._parts[doc_id] = (versions[doc_id], found.get(doc_id, self._empty))
            for doc_id in [d for d in self._parts if d not in versions]:
                del self._parts[doc_id]  # removed from the index
            return {doc_id: part for doc_id, (_, part) in self._parts.items()}
