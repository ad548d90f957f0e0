"""The keyword index (tantivy beside FTS5) proposes texts; the scores and the top k are FTS5's
wherever no text repeats, and a text a library holds many times is one document, counted once.

Real files throughout: a ``VectorStore`` writes FTS5 and the tantivy index, publishes
generations, and ``Bm25Search`` answers from the index's candidates against the plain FTS5
query over every matching row.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import tantivy

from docsym.cli import main
from docsym.language.terms import search_words
from docsym.storage.directory import bm25_search, keyword_index
from docsym.storage.directory.bm25_search import Bm25Search
from docsym.storage.directory.vectors import VectorStore, connect
from docsym.storage.entries import BM25, Entry
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
    """``count`` distinct texts (FTS5 counts a repeated text's rows; the index, its text)."""
    texts: dict[str, None] = {}
    while len(texts) < count:
        words = rng.choices(_COMMON, k=rng.randint(3, 30))
        words += [w for w in _WORDS if rng.random() < 0.05]
        rng.shuffle(words)
        texts[" ".join(words)] = None
    return list(texts)


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


@pytest.mark.parametrize("few", [0, bm25_search.FEW], ids=["index", "filter-scored-whole"])
def test_the_index_gives_fts5s_top_k(published: Path, few: int, monkeypatch) -> None:
    """From tantivy's candidates, and (every filter here passing at most FEW rows) from the
    filter's rows scored whole."""
    monkeypatch.setattr(bm25_search, "FEW", few)
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
    monkeypatch.setattr(bm25_search, "FEW", 2)
    search = Bm25Search(connect(published, readonly=True))
    searcher = keyword_index.KeywordIndex(keyword_index.folder(published)).searcher(1)
    words = ["the", "report"]
    (last,) = search.con.execute("SELECT max(id) FROM entries").fetchone()
    where, params = "e.id > ?", [last - 3]
    assert search._from_keywords(searcher, words, where, params, 10, True, None) is None
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
    assert keyword_index.best_keys(
        searcher, keyword_index.weighted_query(searcher, [["kestrel"]], [1.0]), 5
    ) == [kestrel[0].text_key]
    (left,) = writer.con.execute("SELECT count(*) FROM entries WHERE doc_id = 'd1'").fetchone()
    assert left == 0 and searcher.num_docs == 1500 - 375 + 1  # d1's rows purged from both
    writer.close()


def test_an_index_behind_its_store_is_rebuilt(published: Path) -> None:
    """A run killed between a publish and the keyword commit leaves an older stamp (a store
    written before the keyword index leaves none): the next run rebuilds the index whole."""
    folder = keyword_index.folder(published)
    for damage in ("stale stamp", "no index"):
        if damage == "stale stamp":
            (folder / keyword_index.STAMP).write_text(f"{keyword_index.LAYOUT} 0")
        else:
            keyword_index.discard(folder)
        assert keyword_index.KeywordIndex(folder).searcher(1) is None
        writer = VectorStore(published, generation=2)
        writer.discard_unpublished(1)
        writer.close()
        searcher = keyword_index.KeywordIndex(folder).searcher(1)
        assert searcher is not None and searcher.num_docs == 1500, damage


def _by_texts(search: Bm25Search, words: list[str], where: str, params: list, limit: int) -> list:
    """The plain query: every matching row scored by FTS5's formula, with the statistics of
    distinct texts (a word's n: the texts holding it; N: the texts), the first row of each."""
    texts = f"SELECT count(DISTINCT e.text_key) FROM {BM25} JOIN entries e ON e.id = {BM25}.rowid"
    keyword_texts = (
        f"SELECT count(DISTINCT e.text_key) FROM {BM25}_docsize AS d JOIN entries e ON e.id = d.id"
    )
    (total,) = search.con.execute(keyword_texts).fetchone()
    kept = [w for w in words if search._query_tokens(w)]
    holding = [
        search.con.execute(f"{texts} WHERE {BM25} MATCH ?", [f'"{w}"']).fetchone()[0] for w in kept
    ]
    rows, tokens = search._totals()
    scoring = bm25_search._Scoring(
        [search._query_tokens(w) for w in kept],
        [bm25_search._idf(n, total) for n in holding],
        tokens / rows,
    )
    sql = (
        f"SELECT e.id, e.text_key, e.text FROM {BM25} JOIN entries e ON e.id = {BM25}.rowid "
        f"WHERE {BM25} MATCH ? AND ({where}) ORDER BY e.id"
    )
    best: dict[int, tuple[int, float]] = {}
    for i, key, text in search.con.execute(sql, [" OR ".join(f'"{w}"' for w in kept), *params]):
        best.setdefault(key, (i, search._score(scoring, text)))
    return sorted(best.values(), key=lambda hit: (-hit[1], hit[0]))[:limit]


def test_corpus_searches_use_the_index_and_count_texts(corpus_store: Store) -> None:
    """The corpus index's keyword searches come from its keyword index: the hits of every
    matching row scored with the statistics of distinct texts (its section titles, entity
    names and repeated passages stand in several documents)."""
    published = corpus_store.reader.published()
    where, params = _where(list(DEFAULT_VIEWS), "")
    qa = Path(__file__).resolve().parent.parent / "bench" / "qa" / "docsym_qa.jsonl"
    search = Bm25Search(connect(corpus_store.paths.vectors, readonly=True))
    where = f"({where}) AND {corpus_store.visible()}"
    for item in load_qa(qa)[:30]:
        words = search_words(item.question)
        found = corpus_store.fts(item.question, _where(list(DEFAULT_VIEWS), "")[0], params, 100)
        _same_ranking(found, _by_texts(search, words, where, params, 100))
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
    (folder / keyword_index.STAMP).write_text(f"{keyword_index.LAYOUT} {generation - 1}")
    assert main(["check", "--index", str(index)]) == 0
    assert "keyword index: stale" in capsys.readouterr().out
    con = connect(index / "vectors.sqlite", readonly=True)
    (key,) = con.execute("SELECT text_key FROM entries WHERE table_name = 'chunks'").fetchone()
    con.close()
    writer = keyword_index.KeywordWriter(folder, lambda text: text.split())
    writer.apply([], [key])  # one text gone from the index only
    writer.commit(generation)
    writer.close()
    assert main(["check", "--index", str(index)]) == 1
    out = capsys.readouterr().out
    assert "keyword index: differs" in out and "vectors.keywords" in out


def test_a_text_in_many_documents_is_one_text(tmp_path: Path, monkeypatch) -> None:
    """Ten papers holding one sentence: one document of the index, counted once in a word's
    idf, found once; it stays while any copy stays and leaves with the last."""
    monkeypatch.setattr(bm25_search, "FEW", 0)  # from the index's candidates
    path = tmp_path / "vectors.sqlite"
    shared = "a kestrel over the report"

    def paper(n: int) -> list[Entry]:
        return [
            Entry("chunks", "text", f"p{n}-0", f"d{n}", 1, shared),
            Entry("chunks", "text", f"p{n}-1", f"d{n}", 1, f"the kestrel ringing log {n}"),
        ]

    writer = VectorStore(path, generation=1)
    for n in range(10):
        with writer.replacing_documents([], paper(n), {}):
            pass
    writer.published(1)  # the index is built whole
    with writer.replacing_documents([], paper(10), {}):  # then kept by each transaction
        pass
    writer.published(2)
    reader = keyword_index.KeywordIndex(keyword_index.folder(path))
    search = Bm25Search(connect(path, readonly=True))

    def found(generation: int) -> list[str]:
        searcher = reader.searcher(generation)
        assert searcher is not None
        hits = search.search(["kestrel", "report"], "TRUE", [], 20, searcher)
        rows = dict(search.con.execute("SELECT id, doc_id FROM entries"))
        return [rows[i] for i, _ in hits]

    searcher = reader.searcher(2)
    assert searcher.num_docs == 12 and keyword_index.texts_holding(searcher, ["kestrel"]) == 12
    hits = found(2)
    assert hits[0] == "d0" and len(hits) == 12  # the shared text once, by its first row
    writer.remove_documents([f"d{n}" for n in range(10)])
    writer.published(3)
    writer.published(4)  # retired rows are purged once their generation is out
    assert reader.searcher(4).num_docs == 2 and found(4) == ["d10", "d10"]
    writer.remove_documents(["d10"])
    writer.published(5)
    writer.published(6)
    assert reader.searcher(6).num_docs == 0
    writer.close()


def test_an_index_of_the_older_layout_is_replaced(published: Path) -> None:
    """An index of one document per row (keyed by entry id, its stamp a bare generation) is
    not read, and the next run rebuilds it in the text-key layout."""
    folder = keyword_index.folder(published)
    keyword_index.discard(folder)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name="whitespace")
    builder.add_integer_field("id", stored=False, indexed=True, fast=True)
    tantivy.Index(builder.build(), path=str(folder.mkdir() or folder))
    (folder / keyword_index.STAMP).write_text("1")
    assert keyword_index.stamp(folder) is None
    assert keyword_index.KeywordIndex(folder).searcher(1) is None
    writer = VectorStore(published, generation=2)
    writer.discard_unpublished(1)
    writer.close()
    searcher = keyword_index.KeywordIndex(folder).searcher(1)
    assert searcher is not None and searcher.num_docs == 1500


def test_a_search_of_some_views_reads_only_their_texts(tmp_path: Path, monkeypatch) -> None:
    """Three hundred section contents say "kestrel" more often than five chunks: a search of
    the chunks alone gets the five from the index's first candidates, every score FTS5's."""
    monkeypatch.setattr(bm25_search, "FEW", 0)  # from the index's candidates
    path = tmp_path / "vectors.sqlite"
    writer = VectorStore(path, generation=1)
    entries = [
        Entry("sections", "content", f"s{n}", "d0", 1, f"kestrel kestrel ringing {n}")
        for n in range(300)
    ] + [Entry("chunks", "text", f"c{n}", "d0", 1, f"a kestrel in report {n}") for n in range(5)]
    with writer.replacing_documents([], entries, {}):
        pass
    writer.published(1)
    writer.close()
    searcher = keyword_index.KeywordIndex(keyword_index.folder(path)).searcher(1)
    query = keyword_index.weighted_query(searcher, [["kestrel"]], [1.0], [("chunks", "text")])
    chunk_keys = {e.text_key for e in entries if e.table_name == "chunks"}
    assert set(keyword_index.best_keys(searcher, query, 10)) == chunk_keys
    search = Bm25Search(connect(path, readonly=True))
    where, params = _where([("chunks", "text")], "")
    found = search.search(["kestrel"], where, params, 5, searcher, True, [("chunks", "text")])
    assert len(found) == 5
    assert [s for _, s in found] == pytest.approx(
        [s for _, s in search.search(["kestrel"], where, params, 5, searcher)], rel=1e-12
    )
