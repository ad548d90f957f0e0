"""Vector, BM25 and hybrid search on real corpus documents; filters; index/vector consistency."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.storage.consistency import check
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.filters import FilterError
from docsym.tools.search import hybrid_search, vector_search
from tests import pdf_factory
from tests.conftest import REPO, doc_id_of

DPR = "2004.04906v3_dpr.pdf"


def test_bm25_finds_the_dpr_encoder_passage(corpus_store: Store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    result = vector_search(
        corpus_store,
        "BERT base uncased question encoder passage encoder",
        "bm25",
        "chunks",
        "text",
        filter=f"doc_id == '{dpr}'",
        limit=5,
    )
    assert result.hits and all(h.doc_id == dpr for h in result.hits)
    assert all(h.table_name == "chunks" and h.column_name == "text" for h in result.hits)
    assert any("BERT" in h.text for h in result.hits)


def test_dense_search_with_page_filter_and_bboxes(corpus_store: Store, corpus_db) -> None:
    dpr = doc_id_of(corpus_db, DPR)
    result = vector_search(
        corpus_store,
        "retrieval accuracy on open-domain QA datasets",
        "minilm",
        "tables",
        "caption",
        filter=f"doc_id == '{dpr}' and page_number >= 5",
    )
    assert result.hits
    for hit in result.hits:
        assert hit.doc_id == dpr and hit.page_number >= 5
        assert hit.bbox is not None and len(hit.bbox) == 4  # tables have a box to cite
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_primary_key_filter_narrows_to_rows_found_by_sql(corpus_store: Store, corpus_db) -> None:
    keys = [
        r[0]
        for r in corpus_db.execute(
            "SELECT section_id FROM sections s JOIN documents d USING (doc_id) "
            "WHERE d.file_name = ? ORDER BY ordinal LIMIT 3",
            [DPR],
        ).fetchall()
    ]
    quoted = ", ".join(f"'{k}'" for k in keys)
    result = vector_search(
        corpus_store,
        "introduction",
        "minilm",
        "sections",
        "title",
        filter=f"primary_key in [{quoted}]",
        limit=10,
    )
    assert {h.primary_key for h in result.hits} == set(keys)


def test_hybrid_hits_are_unique_rows_with_provenance(corpus_store: Store) -> None:
    result = hybrid_search(
        corpus_store, "Which pretrained model initialises the DPR encoders?", limit=10
    )
    rows = [(h.table_name, h.primary_key) for h in result.hits]
    assert len(rows) == len(set(rows)) == 10
    for hit in result.hits:
        assert hit.doc_id and hit.sources and len(hit.text) <= 702


def test_bad_arguments_get_actionable_errors(corpus_store: Store) -> None:
    with pytest.raises(FilterError, match="position"):
        vector_search(corpus_store, "x", "bm25", filter="doc_id == ")
    with pytest.raises(ToolError, match="unknown collection"):
        vector_search(corpus_store, "x", "nope")
    with pytest.raises(ToolError, match="no encodable view"):
        vector_search(corpus_store, "x", "bm25", "tables", "html")
    with pytest.raises(ToolError, match="limit"):
        hybrid_search(corpus_store, "x", limit=0)


def test_vectors_stay_in_step_with_the_database(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.text_pdf(folder / "a.pdf", marker="alpha")
    pdf_factory.text_pdf(folder / "b.pdf", marker="beta")
    index = tmp_path / "index"
    index_paths([folder], index)
    pdf_factory.text_pdf(folder / "a.pdf", marker="gamma")  # changed
    (folder / "b.pdf").unlink()  # gone
    index_paths([folder], index, prune=True)
    store = open_store(index)
    try:
        result = check(store)
        assert result.ok, result
        assert result.entries == result.expected > 0
        hits = vector_search(store, "gamma", "bm25", limit=50).hits
        assert hits and all("beta" not in h.text for h in hits)
        assert not vector_search(store, "beta", "bm25", limit=50).hits
    finally:
        store.close()


def test_importing_and_starting_commands_does_not_import_torch() -> None:
    code = (
        "import sys, docsym.cli, tools.search, storage.store, mcp_server.server, indexer.pipeline;"
        "from docsym.cli import main; main(['schema']);"
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules;"
        # PyMuPDF is imported, its layout add-on (a quarter second of start-up) is not
        "import pymupdf; assert sys.modules.get('pymupdf.layout') is None"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)


def test_a_question_asked_again_is_not_encoded_again(sample_store: Store, monkeypatch) -> None:
    from docsym.models import encoder as encoder_module

    question = "How many candidates does each retriever give the hybrids, asked twice?"
    encoder = sample_store.encoder_for("minilm")
    calls: list[list[str]] = []
    real = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda texts, **kw: calls.append(texts) or real(texts))
    first = hybrid_search(sample_store, question)
    narrowed = hybrid_search(sample_store, question, filter=f"doc_id == '{first.hits[0].doc_id}'")
    assert calls == [[question]]
    assert narrowed.hits and {h.doc_id for h in narrowed.hits} == {first.hits[0].doc_id}
    vector = encoder.encode_question(question)
    assert not vector.flags.writeable  # one array serves every caller of the question
    assert np.allclose(vector, real([question])[0])
    # Only the last QUESTIONS_KEPT questions are kept (an encoder sizes its cache when made).
    monkeypatch.setattr(encoder_module, "QUESTIONS_KEPT", 2)
    small = encoder_module.Encoder(encoder.model_name, encoder.backend, encoder.threads)
    monkeypatch.setattr(small, "encode", lambda texts, **kw: calls.append(texts) or real(texts))
    for text in (question, "first other question", "second other question"):
        small.encode_question(text)
    calls.clear()
    small.encode_question(question)
    assert calls == [[question]]


def test_searches_encode_questions_with_the_encoder_the_server_warms(sample_store: Store) -> None:
    from docsym.models.encoder import QUESTION_THREADS, get_encoder, query_encoder
    from docsym.runtime.settings import get_settings

    collection = next(n for n in sample_store.collections() if not sample_store.is_keyword(n))
    used = sample_store.encoder_for(collection)
    # build_server warms query_encoder(): it must be the very object searches use
    assert used is query_encoder()
    assert used.threads == QUESTION_THREADS == 1
    # indexing encodes in batches on the configured threads, with an encoder of its own
    assert get_encoder() is not used
    assert get_encoder().threads == get_settings().encoder_threads
    vector = used.encode(["which encoder answers questions"])[0]
    assert abs(float((vector**2).sum()) - 1.0) < 1e-5
