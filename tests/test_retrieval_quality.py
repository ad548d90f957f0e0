"""Retrieval quality over the corpus index (docsym eval's numbers): the dev QA set, and the
69 held-out questions of bench/qa/docsym_qa.jsonl that guard against tuning to the dev set."""

from __future__ import annotations

import pytest

from docsym.storage.backends import open_store
from docsym.tools.evaluate import evaluate, load_qa
from tests.conftest import DEV_QA
from tests.test_qa_set import QA_SET


@pytest.fixture(scope="module")
def scores(corpus_index):
    if not DEV_QA.is_file():
        pytest.skip(f"dev QA set not found at {DEV_QA}")
    store = open_store(corpus_index[0])
    try:
        return {s.mode: s for s in evaluate(store, load_qa(DEV_QA))}
    finally:
        store.close()


def test_hybrid_beats_every_single_collection_and_the_classic_baseline(scores) -> None:
    hybrid = scores["hybrid"]
    for mode in ("bm25", "minilm", "classic"):
        assert hybrid.recall[1] > scores[mode].recall[1], mode
        assert hybrid.mrr > scores[mode].mrr, mode


def test_hybrid_finds_most_gold_pages_in_the_top_five(scores) -> None:
    # Measured on this index, int8 and fp32 alike: recall@5 12/12 (ranks 4, 4 and 5 the
    # lowest, each ahead of the sixth hit by 0.02-0.03 of fused score), recall@1 9/12. The
    # issue's goal is recall@1 >= 0.8 (10/12). Of the three misses, two rank first a page that
    # also holds the answer (Uber's revenue on the statement of operations, CiteSee's "Six
    # participants") but is not the dev set's gold page; the held-out set below is at 0.8.
    # One of the nine firsts, mupdf-try, leads the next page by 0.004 (int8) and 0.001 (fp32)
    # of fused score, a cosine of 0.01-0.03 at the dense weight 0.15: another CPU's int8
    # arithmetic can turn it, so recall@1 keeps one question of slack (8/12).
    assert scores["hybrid"].recall[5] >= 0.9
    assert scores["hybrid"].recall[1] >= 8 / 12, scores["hybrid"].ranks


def test_hybrid_finds_every_gold_page_in_the_top_ten(scores) -> None:
    assert scores["hybrid"].recall[10] == 1.0, scores["hybrid"].ranks


@pytest.fixture(scope="module")
def held_out(corpus_index):
    store = open_store(corpus_index[0])
    try:
        return {s.mode: s for s in evaluate(store, load_qa(QA_SET), ["hybrid", "bm25"])}
    finally:
        store.close()


def test_hybrid_on_held_out_questions(held_out) -> None:
    # Measured on this index: recall@1 56/69 (0.81), recall@5 68/69, recall@10 69/69, MRR
    # 0.885 (int8) and 0.883 (fp32); BM25 alone 0.74 / 0.94 / 0.97, MRR 0.831. One first
    # (mmwr-age45-restriction) leads by less than 0.0075 of fused score (a cosine of 0.05);
    # the thresholds leave two questions of slack at recall@1 and one at recall@5, where the
    # lowest (ranks 4 and 5) lead the sixth hit by 0.03 and 0.17.
    hybrid, bm25 = held_out["hybrid"], held_out["bm25"]
    assert hybrid.recall[1] >= 0.78, hybrid.ranks
    assert hybrid.recall[5] >= 0.97, hybrid.ranks
    assert hybrid.recall[1] > bm25.recall[1] and hybrid.mrr > bm25.mrr
