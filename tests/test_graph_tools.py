"""find_entities and rank_nodes (BookRAG's Select_by_Entity, Graph/Text reasoning, Skyline) on
the whole-corpus index; the graphs' life cycle on an index that changes is
tests/test_derived_structures.py's."""

from __future__ import annotations

import json

import pytest

from docsym.tools.entities import find_entities
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.rank_nodes import _pareto_front, rank_nodes
from docsym.tools.subtree import select_subtree
from tests.conftest import DEV_QA, doc_id_of

DPR = "2004.04906v3_dpr.pdf"


def test_find_entities_by_alias_fuzzy_and_with_linked_sections(corpus_store, corpus_db) -> None:
    doc_id = doc_id_of(corpus_db, DPR)
    by_alias = find_entities(corpus_store, "DPR", doc_id).hits[0]
    assert by_alias.name == "Dense Passage Retriever" and by_alias.matched == "alias"
    titles = {s.title for s in by_alias.sections}
    assert any("Dense Passage Retriever" in (t or "") for t in titles)
    assert "BM25" in by_alias.neighbours
    misspelt = find_entities(corpus_store, "Dense Pasage Retriever", doc_id).hits
    assert misspelt and misspelt[0].entity_id == by_alias.entity_id
    assert misspelt[0].matched == "fuzzy"
    everywhere = find_entities(corpus_store, "BM25", limit=50).hits
    assert len({h.doc_id for h in everywhere}) >= 3  # BM25 appears in several papers


def test_enough_exact_names_are_the_hits_without_spellings_or_vectors(
    corpus_store, monkeypatch
) -> None:
    """A common name's exact matches fill the hits: the search for spellings and vectors is
    skipped, and the hits are those of the whole search."""
    import docsym.tools.entities as entities

    (name, count), *_ = corpus_store.sql().execute(
        "SELECT name, count(*) AS n FROM entities GROUP BY name ORDER BY n DESC, name LIMIT 1"
    ).fetchall()
    assert count >= 3
    calls = []
    whole_search = entities._semantic
    monkeypatch.setattr(entities, "_semantic", lambda *a: calls.append(a) or whole_search(*a))
    short = find_entities(corpus_store, name, limit=3)
    assert not calls and [h.matched for h in short.hits] == ["exact"] * 3
    monkeypatch.setattr(entities, "_exact_enough", lambda *a, **k: False)
    whole = find_entities(corpus_store, name, limit=3)
    assert calls  # the whole search looked for vectors too
    assert [h.model_dump() for h in whole.hits] == [h.model_dump() for h in short.hits]


def test_find_entities_refuses_bad_calls(corpus_store) -> None:
    with pytest.raises(ToolError, match="empty"):
        find_entities(corpus_store, "  ")
    with pytest.raises(NotFoundError, match="list_documents"):
        find_entities(corpus_store, "BM25", doc_id="nope")
    with pytest.raises(ToolError, match="limit"):
        find_entities(corpus_store, "BM25", limit=0)


def _dev_questions() -> list[dict]:
    if not DEV_QA.is_file():
        pytest.skip(f"dev QA set not found at {DEV_QA}")
    return [json.loads(line) for line in DEV_QA.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("question_id", ["s2orc-filters", "redp-secadm", "specter-scidocs-tasks"])
def test_rank_nodes_puts_the_gold_page_on_the_frontier(
    corpus_store, corpus_db, question_id
) -> None:
    item = next(q for q in _dev_questions() if q["id"] == question_id)
    doc_id = corpus_db.execute(
        "SELECT doc_id FROM documents WHERE path LIKE ?", [f"%{item['file']}"]
    ).fetchone()[0]
    result = rank_nodes(corpus_store, item["question"], doc_id)
    assert result.seeds, "the question names entities of the document"
    frontier = [n for n in result.nodes if n.layer == 1]
    assert any(n.page_start in item["pages"] for n in frontier), [n.page_start for n in frontier]
    for node in frontier:
        assert set(node.scores) == {"graph", "text"} and node.why.startswith("on the Pareto")


def test_frontier_nodes_are_not_dominated_and_layers_add_more(corpus_store, corpus_db) -> None:
    doc_id = doc_id_of(corpus_db, DPR)
    question = "Which pretrained model initialises the DPR question and passage encoders?"
    one = rank_nodes(
        corpus_store, question, doc_id, criteria=["graph", "text", "lexical"], limit=50
    )
    two = rank_nodes(
        corpus_store, question, doc_id, criteria=["graph", "text", "lexical"], layers=2, limit=50
    )
    assert len(two.nodes) > len(one.nodes) and {n.layer for n in two.nodes} == {1, 2}
    points = [[n.scores[c] for c in one.criteria] for n in one.nodes]
    for p in points:
        assert not any(all(a >= b for a, b in zip(q, p, strict=True)) and q != p for q in points)


def test_pareto_front_of_known_points() -> None:
    import numpy as np

    points = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.4, 0.4], [1.0, 1.0], [0.9, 0.9]])
    assert list(_pareto_front(points)) == [4]
    assert list(_pareto_front(points[:4])) == [0, 1, 2]


def test_rank_nodes_within_a_section_stays_inside_it(corpus_store, corpus_db) -> None:
    doc_id = doc_id_of(corpus_db, DPR)
    inside = {n.node_id for n in select_subtree(corpus_store, doc_id, section="5", limit=200).nodes}
    result = rank_nodes(
        corpus_store, "BM25 negatives in-batch training", doc_id, section="5", layers=3, limit=50
    )
    assert result.nodes and len(result.nodes) < result.scope_nodes
    assert {n.node_id for n in result.nodes} <= inside


def test_rank_nodes_refuses_bad_arguments(corpus_store, corpus_db) -> None:
    doc_id = doc_id_of(corpus_db, DPR)
    with pytest.raises(ToolError, match="criteria"):
        rank_nodes(corpus_store, "x", doc_id, criteria=["pagerank"])
    with pytest.raises(ToolError, match="layers"):
        rank_nodes(corpus_store, "x", doc_id, layers=9)
    with pytest.raises(NotFoundError, match="section"):
        rank_nodes(corpus_store, "x", doc_id, section="no such section at all")
