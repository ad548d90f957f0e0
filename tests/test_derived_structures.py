"""Structures built from the index follow one document's change: a server with the index open
keeps what it built for the documents a run leaves alone, reads only the added or changed ones,
and forgets the removed ones (``storage/derived.py``)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.storage.derived import DocumentCache
from docsym.storage.store import Store
from docsym.tools.entities import find_entities
from docsym.tools.graph import GRAPHS, build_document_graph, document_graph
from docsym.tools.question import document_names
from docsym.tools.rank_nodes import rank_nodes
from docsym.tools.search import hybrid_search
from tests.conftest import doc_id_of

FIRST = "Our Dense Passage Retriever (DPR) beats BM25 on TriviaQA and Natural Questions."
SECOND = "The ColBERT model is compared with BM25 on MS MARCO passage ranking."


@pytest.fixture(params=["one file", "segments"])
def library(request, tmp_path: Path, settings) -> tuple[Path, Path]:
    """A folder of one paper and its index: one file, or segments
    (``storage/directory/segments.py``), where every view is a union of files and every publish
    adds one."""
    if request.param == "segments":
        settings(segment_mb=0.0001, consolidate_mb=0, publish_seconds=0)
    folder = tmp_path / "docs"
    folder.mkdir()
    _entity_pdf(folder / "a.pdf", FIRST)
    index = tmp_path / "index"
    index_paths([folder], index)
    return folder, index


def test_one_more_document_keeps_what_was_built_for_the_others(library) -> None:
    folder, index = library
    with open_store(index) as store:
        first = doc_id_of(store.sql(), "a.pdf")
        rank_nodes(store, "Which retriever beats BM25?", first)
        graph, names = document_graph(store, first), document_names(store)
        _entity_pdf(folder / "b.pdf", SECOND)
        index_paths([folder], index)
        second = doc_id_of(store.sql(), "b.pdf")
        # the untouched document's graph and name words are the objects built before
        assert document_graph(store, first) is graph
        after = document_names(store)
        assert after[first] is names[first] and after[second] == {"b"}  # its file name
        # the new document's entities are found, and linked to the first's by name
        colbert = find_entities(store, "ColBERT").hits
        assert [hit.doc_id for hit in colbert] == [second]
        bm25 = find_entities(store, "BM25", limit=50).hits
        assert {hit.doc_id for hit in bm25 if hit.name == "BM25"} == {first, second}
        assert all("BM25" in hit.neighbours for hit in bm25 if hit.name == "BM25")
        assert rank_nodes(store, "How is ColBERT compared?", second).seeds
        assert set(store.derived_documents(GRAPHS)) == {first, second}


def test_a_removed_document_is_gone_from_every_structure(library) -> None:
    folder, index = library
    _entity_pdf(folder / "b.pdf", SECOND)
    index_paths([folder], index)
    with open_store(index) as store:
        first = doc_id_of(store.sql(), "a.pdf")
        second = doc_id_of(store.sql(), "b.pdf")
        hybrid_search(store, "BM25 passage retrieval")  # names, page labels, page images, tables
        graph = document_graph(store, second)
        (folder / "a.pdf").unlink()
        index_paths([folder], index, prune=True)
        assert first not in document_names(store) and second in document_names(store)
        assert {hit.doc_id for hit in find_entities(store, "BM25").hits} == {second}
        assert document_graph(store, second) is graph
        assert not document_graph(store, first).entities  # built for the call, never kept
        assert set(store.derived_documents(GRAPHS)) == {second}


def test_a_changed_document_is_read_again(library) -> None:
    folder, index = library
    with open_store(index) as store:
        before = doc_id_of(store.sql(), "a.pdf")
        graph = document_graph(store, before)
        _entity_pdf(folder / "a.pdf", SECOND)  # new content: a new doc_id
        index_paths([folder], index)
        after = doc_id_of(store.sql(), "a.pdf")
        assert after != before
        assert after in document_names(store) and before not in document_names(store)
        assert {info.name for info in document_graph(store, after).entities.values()} >= {"ColBERT"}
        assert document_graph(store, after) is not graph


def test_the_document_cache_keeps_only_the_recently_used(library) -> None:
    folder, index = library
    _entity_pdf(folder / "b.pdf", SECOND)
    index_paths([folder], index)
    with open_store(index) as store:
        first, second = (doc_id_of(store.sql(), name) for name in ("a.pdf", "b.pdf"))
        cache = DocumentCache(kept=1)
        graph = _graph(cache, store, first)
        assert _graph(cache, store, first) is graph
        _graph(cache, store, second)  # pushes the first out
        assert set(cache.held(GRAPHS)) == {second}
        assert _graph(cache, store, first) is not graph


def _graph(cache: DocumentCache, store: Store, doc_id: str):
    return cache.get(store, GRAPHS, doc_id, build_document_graph)


def _entity_pdf(path: Path, sentence: str) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), (sentence + " ") * 3)
    doc.save(path)
    doc.close()
