"""Search results read as they rank: one hit per passage, however often the index holds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.tools.passages import read_passage
from docsym.tools.search import SearchHit, _distinct_cited, hybrid_search, vector_search
from tests.conftest import new_database

REPEATED = (
    "The cooling tower's basin is drained every fourteen days, and the drain log records "
    "the water temperature, the operator and the volume released to the storm sewer."
)


def _write(folder: Path) -> None:
    """Three files that print the same paragraph four times, among other text."""
    folder.mkdir()
    other = [
        "The boiler room holds two gas boilers serviced each spring by an outside firm.",
        "Visitors sign the register at the front desk and wear a badge at all times.",
        "The roof membrane was replaced in 2019 and is inspected after every storm.",
    ]
    (folder / "handbook.md").write_text(
        f"# Plant handbook\n\n## Cooling\n\n{REPEATED}\n\n## Boilers\n\n{other[0]}\n\n"
        f"## Cooling, again\n\n{REPEATED}\n\n## Visitors\n\n{other[1]}\n"
    )
    (folder / "manual.md").write_text(
        f"# Operations manual\n\n## Drains\n\n{REPEATED}\n\n## Roof\n\n{other[2]}\n"
    )
    (folder / "copy.md").write_text(f"# Copy of the manual\n\n## Drains\n\n{REPEATED}\n")


@pytest.fixture(scope="module", params=["directory", "postgres"])
def repeating_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The three files in an index directory, then in a PostgreSQL store."""
    root = tmp_path_factory.mktemp("repeats")
    _write(root / "docs")
    target = str(root / "index")
    if request.param == "postgres":
        target = new_database(request.getfixturevalue("pg_server"), "repeats")
    assert index_paths([root / "docs"], target).ok
    store = open_store(target)
    yield store
    store.close()


@pytest.mark.parametrize(
    "search",
    [
        lambda store, q: hybrid_search(store, q, limit=10),
        lambda store, q: vector_search(store, q, "bm25", limit=10),
        lambda store, q: vector_search(store, q, "minilm", limit=10),
    ],
)
def test_a_repeated_passage_is_one_hit_listing_where_else_it_stands(repeating_store, search):
    hits = search(repeating_store, "How often is the cooling tower basin drained?").hits
    texts = [" ".join(h.text.split()) for h in hits]
    assert len(texts) == len(set(texts))
    first = next(h for h in hits if "fourteen days" in h.text)
    elsewhere = {(p.table_name, p.primary_key) for p in first.also}
    assert (first.table_name, first.primary_key) not in elsewhere
    assert len(first.also) >= 3  # the other copies: the handbook's second, the manual, the copy
    assert all("fourteen days" not in h.text for h in hits if h is not first)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_a_hit_counts_and_lists_the_copies_of_its_text(repeating_store):
    """Searches return one entry per text; the store names the three other chunks holding it."""
    question = "How often is the cooling tower basin drained?"
    hits = hybrid_search(repeating_store, question, limit=5, views=["chunks.text"]).hits
    first = hits[0]
    assert "fourteen days" in first.text and first.copies == 3
    assert len({p.primary_key for p in first.also}) == 3
    assert len({first.doc_id} | {p.doc_id for p in first.also}) == 3  # handbook, manual, copy
    assert all(h.copies == 0 for h in hits[1:])


def _hit(rank: int, key: str, text: str, cited: list[str], page: int = 1) -> SearchHit:
    return SearchHit(
        rank=rank, score=1.0 - rank / 10, table_name="chunks", column_name="text",
        primary_key=key, doc_id="d", page_number=page, text=text, cited=cited,
    )  # fmt: skip


def test_hits_citing_the_same_box_fold_and_the_next_distinct_ones_fill_the_limit():
    """A chunk, the next chunk and their page citing one sentence are one place to read; the
    limit is filled from further down the ranking, reading evidence only for what is missing."""
    ranked = [
        _hit(1, "c1", "the answer, with the chunk's context", ["x7"]),
        _hit(2, "c2", "the answer, with the next chunk's context", ["x7"]),
        _hit(3, "p1", "the answer, as the page reads it", ["x7"]),
        _hit(4, "c9", "another passage", ["x30"], page=2),
        _hit(5, "c12", "a third passage", ["x41"], page=3),
        _hit(6, "c15", "never needed", ["x50"], page=4),
    ]
    read: list[str] = []
    kept = _distinct_cited(lambda hits: read.extend(h.primary_key for h in hits) or hits, ranked, 3)
    assert [h.primary_key for h in kept] == ["c1", "c9", "c12"]
    assert [h.rank for h in kept] == [1, 2, 3]
    assert [p.primary_key for p in kept[0].also] == ["c2", "p1"]
    assert read == ["c1", "c2", "p1", "c9", "c12"]  # never c15


def test_copies_of_a_passage_are_folded_without_being_cited():
    """A library holding one paper many times returns hits found by the same text: only the
    first copy is cited, the rest are listed where it also stands, and the limit is filled by
    distinct passages from further down."""
    copies = [_hit(n, f"copy{n}", "the same paragraph in every copy", ["s1"]) for n in range(1, 9)]
    for n, hit in enumerate(copies):
        hit.doc_id = f"doc{n}"
    ranked = [*copies[:5], _hit(6, "other", "a different passage", ["s2"], page=2), *copies[5:]]
    read: list[str] = []
    kept = _distinct_cited(lambda hits: read.extend(h.primary_key for h in hits) or hits, ranked, 2)
    assert [h.primary_key for h in kept] == ["copy1", "other"]
    assert read == ["copy1", "other"]
    assert [p.primary_key for p in kept[0].also] == ["copy2", "copy3", "copy4", "copy5"]
    assert {p.doc_id for p in kept[0].also} == {"doc1", "doc2", "doc3", "doc4"}


def test_a_page_shown_again_is_marked_and_each_group_reads_by_score(sample_store):
    """Each page's best hit comes before any page's further hits, which say so: a score above
    an earlier one is never unexplained."""
    hits = hybrid_search(sample_store, "what the sample documents describe", limit=30).hits
    again = [h for h in hits if h.again]
    assert again, "the sample documents have too few pages for a page to come back"
    firsts = [h for h in hits if not h.again]
    assert hits == firsts + again  # every page's best hit before any further one
    for group in (firsts, again):
        scores = [h.score for h in group]
        assert scores == sorted(scores, reverse=True)


def test_the_next_step_after_a_hit_without_pages_is_a_tool_that_reads_it(repeating_store):
    """A Markdown hit has no page image to view: the hint reads the passage around it."""
    result = hybrid_search(repeating_store, "How often is the cooling tower basin drained?")
    top = result.hits[0]
    assert top.page_number is None
    assert "view_page" not in result.note
    assert top.table_name == "chunks"
    assert f"read_passage(id='{top.primary_key}', before=1, after=1)" in result.note
    passage = read_passage(repeating_store, top.primary_key, before=1, after=1)
    assert "fourteen days" in passage.model_dump_json()


def test_words_no_document_holds_are_named_above_the_hits(repeating_store):
    """'Galaxy' in a question about a library without it: the hits match the other words, and
    the result says which word no document holds (a stopword is never named)."""
    result = hybrid_search(repeating_store, "When is the Galaxy cooling tower basin drained?")
    assert result.absent == ["galaxy"]
    assert result.hits and "fourteen days" in result.hits[0].text
    assert result.to_markdown().startswith("No document holds 'galaxy' as written.\n")
    assert hybrid_search(repeating_store, "When is the basin drained?").absent == []


def test_each_store_returns_as_many_distinct_texts_as_asked(repeating_store):
    """More rows asked than the first read holds distinct texts: the store reads on (PostgreSQL
    eight times more rows) and returns one entry per text, up to the limit."""
    query = "How often is the cooling tower basin drained?"
    vector = repeating_store.encoder_for("minilm").encode_question(query)
    everything = repeating_store.dense("minilm", vector, "TRUE", [], 100, per_text=False)
    entries = repeating_store.entries([i for i, _ in everything])
    distinct = {(e.table_name, e.column_name, " ".join(e.text.split())) for e in entries.values()}
    for limit in (5, 20, 100):
        found = repeating_store.dense("minilm", vector, "TRUE", [], limit)
        rows = repeating_store.entries([i for i, _ in found])
        texts = [(r.table_name, r.column_name, " ".join(r.text.split())) for r in rows.values()]
        assert len(texts) == len(set(texts)) == min(limit, len(distinct))
