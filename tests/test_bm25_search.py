"""BM25 that scores only the rows holding a rarer word gives exactly the full FTS5 query's top k."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from docsym.language.terms import search_words
from docsym.storage.directory.bm25_search import Bm25Search
from docsym.storage.directory.vectors import VectorStore, connect
from docsym.storage.entries import BM25, Entry, text_key
from docsym.storage.store import Store
from docsym.tools.evaluate import load_qa
from docsym.tools.search import DEFAULT_VIEWS, _where
from tests.conftest import doc_id_of

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _full(search: Bm25Search, words: list[str], where: str, params: list, limit: int) -> list:
    """The plain query: every matching row scored, the best row of each text kept."""
    match = " OR ".join(f'"{w}"' for w in words)
    sql = (
        f"SELECT {BM25}.rowid, -bm25({BM25}), e.table_name, e.column_name, e.text FROM {BM25} "
        f"JOIN entries e ON e.id = {BM25}.rowid "
        f"WHERE {BM25} MATCH ? AND ({where}) ORDER BY bm25({BM25}), {BM25}.rowid"
    )
    best: dict[int, tuple[int, float]] = {}
    for i, score, table, column, text in search.con.execute(sql, [match, *params]):
        best.setdefault(text_key(table, column, text), (int(i), float(score)))
    return list(best.values())[:limit]


@pytest.fixture
def synthetic(tmp_path: Path) -> Bm25Search:
    """600 rows: every one holds 'the' and 'report', a few hold rarer words, many are twins."""
    rng = random.Random(7)
    entries = []
    for n in range(600):
        extra = [w for w in _WORDS if rng.random() < 0.03]
        text = " ".join(["the", "report", "the", *extra, *(["filler"] * rng.randint(0, 6))])
        entries.append(Entry("chunks", "text", f"c{n}", f"d{n % 3}", 1, text))
    store = VectorStore(tmp_path / "vectors.sqlite")
    with store.replacing_documents([], entries, {}):
        pass
    store.close()
    return Bm25Search(connect(tmp_path / "vectors.sqlite", readonly=True))


def test_rare_word_rows_give_the_full_top_k(synthetic: Bm25Search) -> None:
    words = ["the", "report", "alpha", "gamma"]
    rare, bound = synthetic._split(words)
    assert rare == ["alpha", "gamma"] and bound > 0
    for limit in (1, 5, 10):
        found = synthetic.search(words, "TRUE", [], limit)
        assert found == _full(synthetic, words, "TRUE", [], limit)
        assert found[-1][1] > bound  # answered from the rarer words' rows alone


def test_too_few_rare_rows_merge_in_the_common_ones(synthetic: Bm25Search) -> None:
    """With more hits wanted than rows holding a rarer word (or a filter leaving fewer), the
    rows holding only common words are scored too; twins are one hit, the first by rowid."""
    words = ["the", "report", "zeta"]
    texts = dict(synthetic.con.execute("SELECT id, text FROM entries"))
    for where, params, limit in (("TRUE", [], 100), ("e.doc_id = ?", ["d1"], 40)):
        found = synthetic.search(words, where, params, limit)
        assert found == _full(synthetic, words, where, params, limit)
        shown = [texts[i] for i, _ in found]
        assert len(shown) == len(set(shown)) > 5
        assert any("zeta" not in text for text in shown)


def test_word_counts_follow_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    writer = VectorStore(path)
    first = [Entry("chunks", "text", "c0", "d0", 1, "the kestrel")]
    with writer.replacing_documents([], first, {}):
        pass
    search = Bm25Search(connect(path, readonly=True))
    assert search._rows_holding("kestrel") == 1
    more = [Entry("chunks", "text", f"c{n}", "d1", 1, "a kestrel") for n in range(1, 4)]
    with writer.replacing_documents([], more, {}):
        pass
    writer.close()
    search._split(["kestrel"])  # another connection's commit: the counts are read again
    assert search._rows_holding("kestrel") == 4


def test_corpus_questions_get_the_full_querys_hits(corpus_store: Store, corpus_db) -> None:
    """Held-out questions, over the default views and within one document."""
    search = Bm25Search(connect(corpus_store.paths.vectors, readonly=True))
    where, params = _where(list(DEFAULT_VIEWS), "")
    where = f"({where}) AND {corpus_store.visible()}"
    qa = Path(__file__).resolve().parent.parent / "bench" / "qa" / "docsym_qa.jsonl"
    dpr = doc_id_of(corpus_db, "2004.04906v3_dpr.pdf")
    for item in load_qa(qa)[:30]:
        words = search_words(item.question)
        assert search.search(words, where, params, 100) == _full(search, words, where, params, 100)
        within = f"{where} AND e.doc_id = ?"
        assert search.search(words, within, [*params, dpr], 20) == _full(
            search, words, within, [*params, dpr], 20
        )
