"""The keyword index (tantivy beside FTS5) proposes rows; the scores and the top k stay FTS5's.

Real files throughout: a ``VectorStore`` writes FTS5 and the tantivy index, publishes
generations, and ``Bm25Search`` answers from the index's candidates against the plain FTS5
query over every matching row.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from docsym.cli import main
from docsym.language.terms import search_words
from docsym.storage.directory import bm25_search, keyword_index
from docsym.storage.directory.bm25_search import Bm25Search
from docsym.storage.directory.vectors import VectorStore, connect
from docsym.storage.entries import Entry
from docsym.storage.store import Store
from docsym.tools.evaluate import load_qa
from docsym.tools.search import DEFAULT_VIEWS, _where
from tests.test_bm25_search import _full  # the plain FTS5 query: every matching row scored

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "v1.1", "state-of-the-art"]
_COMMON = ["the", "report", "model", "of", "results"]


def _same_ranking(found: list, expected: list) -> None:
    """The same scores in the same order, and the same rows above the last score (rows tied
    at the cut are equally right)."""
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-12)
    cut = expected[-1][1] if expected else None
    above = [i for i, s in expected if s > cut * (1 + 1e-9)] if expected else []
    assert [i for i, _ in found[: len(above)]] == above


def _texts(rng: random.Random, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        words = rng.choices(_COMMON, k=rng.randint(3, 30))
        words += [w for w in _WORDS if rng.random() < 0.05]
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts


def _write(path: Path, texts: list[str], generation: int = 1) -> VectorStore:
    store = VectorStore(path, generation=generation)
    entries = [
        Entry("chunks", "text", f"c{generation}-{n}", f"d{n % 4}", 1, text)
        for n, text in enumerate(texts)
    ]
    with store.replacing_documents([], entries, {}):
        pass
    return store


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """1,500 rows of varied lengths, published as generation 1."""
    path = tmp_path / "vectors.sqlite"
    store = _write(path, _texts(random.Random(11), 1500))
    store.published(1)
    store.close()
    return path


def test_the_index_gives_fts5s_top_k(published: Path) -> None:
    search = Bm25Search(connect(published, readonly=True))
    searcher = keyword_index.KeywordIndex(keyword_index.folder(published)).searcher(1)
    assert searcher is not None and searcher.num_docs == 1500
    for words in (
        ["the", "report", "alpha"],
        ["gamma", "v1.1"],
        ["state-of-the-art", "model", "results"],
        ["the", "of"],
        ["zeta", "absentword"],
    ):
        for where, params, limit in (
            ("TRUE", [], 10),
            ("TRUE", [], 100),
            ("e.doc_id = ?", ["d2"], 30),
        ):
            expected = _full(search, words, where, params, limit)
            assert expected, words
            _same_ranking(search.search(words, where, params, limit, searcher), expected)


def test_a_rare_filter_falls_back_to_fts5(published: Path, monkeypatch) -> None:
    """A filter so rare that tantivy's first candidates hold too few of its rows: FTS5 answers."""
    monkeypatch.setattr(bm25_search, "MOST", bm25_search.FIRST)
    search = Bm25Search(connect(published, readonly=True))
    searcher = keyword_index.KeywordIndex(keyword_index.folder(published)).searcher(1)
    words = ["the", "report"]
    (last,) = search.con.execute("SELECT max(id) FROM entries").fetchone()
    where, params = "e.id > ?", [last - 3]
    assert search._from_keywords(searcher, words, where, params, 10, "text_key") is None
    _same_ranking(
        search.search(words, where, params, 10, searcher), _full(search, words, where, params, 10)
    )


def test_a_publish_brings_the_index_its_generation(published: Path) -> None:
    """Rows written after a publish reach readers with the next one; until then the stamp
    says the index holds the older generation, so a reader of the newer one gets no searcher."""
    reader = keyword_index.KeywordIndex(keyword_index.folder(published))
    writer = VectorStore(published, generation=2)
    writer.discard_unpublished(1)  # what a run does first: the index already holds generation 1
    writer.remove_documents(["d1"])
    kestrel = [Entry("chunks", "text", "k1", "d9", 1, "a kestrel over the report")]
    with writer.replacing_documents([], kestrel, {}):
        pass
    assert reader.searcher(2) is None and reader.searcher(1) is not None
    writer.published(2)
    searcher = reader.searcher(2)
    assert searcher is not None
    (kestrel_id,) = writer.con.execute("SELECT id FROM entries WHERE doc_id = 'd9'").fetchone()
    assert keyword_index.best_ids(
        searcher, keyword_index.weighted_query(searcher, [["kestrel"]], [1.0]), 5
    ) == [kestrel_id]
    (left,) = writer.con.execute("SELECT count(*) FROM entries WHERE doc_id = 'd1'").fetchone()
    assert left == 0 and searcher.num_docs == 1500 - 375 + 1  # d1's rows purged from both
    writer.close()


def test_an_index_behind_its_store_is_rebuilt(published: Path) -> None:
    """A run killed between a publish and the keyword commit leaves an older stamp (a store
    written before the keyword index leaves none): the next run rebuilds the index whole."""
    folder = keyword_index.folder(published)
    for damage in ("stale stamp", "no index"):
        if damage == "stale stamp":
            (folder / keyword_index.STAMP).write_text("0")
        else:
            keyword_index.discard(folder)
        assert keyword_index.KeywordIndex(folder).searcher(1) is None
        writer = VectorStore(published, generation=2)
        writer.discard_unpublished(1)
        writer.close()
        searcher = keyword_index.KeywordIndex(folder).searcher(1)
        assert searcher is not None and searcher.num_docs == 1500, damage


def test_corpus_searches_use_the_index_and_keep_fts5s_hits(corpus_store: Store) -> None:
    """The corpus index's keyword searches come from its keyword index, with FTS5's hits."""
    published = corpus_store.reader.published()
    where, params = _where(list(DEFAULT_VIEWS), "")
    qa = Path(__file__).resolve().parent.parent / "bench" / "qa" / "docsym_qa.jsonl"
    search = Bm25Search(connect(corpus_store.paths.vectors, readonly=True))
    where = f"({where}) AND {corpus_store.visible()}"
    for item in load_qa(qa)[:30]:
        words = search_words(item.question)
        found = corpus_store.fts(item.question, _where(list(DEFAULT_VIEWS), "")[0], params, 100)
        _same_ranking(found, _full(search, words, where, params, 100))
    assert corpus_store._keywords._loaded == published  # the keyword index answered


def test_docsym_check_reports_the_keyword_index(sample_index: Path, tmp_path: Path, capsys) -> None:
    """Current: nothing said; stale: said, still consistent (FTS5 answers); holding other rows
    than FTS5 at its generation: said, and the check fails."""
    index = tmp_path / "index"
    shutil.copytree(sample_index, index)
    folder = keyword_index.folder(index / "vectors.sqlite")
    assert main(["check", "--index", str(index)]) == 0
    assert "keyword index" not in capsys.readouterr().out
    generation = keyword_index.stamp(folder)
    (folder / keyword_index.STAMP).write_text(str(generation - 1))
    assert main(["check", "--index", str(index)]) == 0
    assert "keyword index: stale" in capsys.readouterr().out
    writer = keyword_index.KeywordWriter(folder, lambda text: text.split())
    writer.apply([], [1])  # one row gone from the index only
    writer.commit(generation)
    writer.close()
    assert main(["check", "--index", str(index)]) == 1
    out = capsys.readouterr().out
    assert "keyword index: differs" in out and "vectors.keywords" in out
