"""Every id a tool shows holds the text it shows beside it: ``run_sql`` on the id's view and key
column (``storage.ids``) returns that text.

The rule, precisely. ``one_spaced(s)`` is ``s`` with every run of whitespace made one space
(``tools.results``). A text ``shown`` beside an id *matches* the stored value ``stored`` when
``one_spaced(shown)``, with the trim mark (``TRIM_MARK``, ' …') at its end removed, is a
substring of ``one_spaced(stored)``: an excerpt, or a prefix cut to a budget, matches; a word of
another row does not (a chunk c0 shown with the next chunk's sentence fails, as the text of c0
does not hold it). A table hit shows its caption (or summary), the mark and the rows it cites
(``caption_then_rows``): the part up to the first mark matches the hit's column, the part after
it matches the table's rows as ``table_cells`` holds them (each row's non-empty cells joined by
``ROW_SEP``, rows joined by a space, in grid order); a table without a caption shows its rows
alone. Tree nodes (select_subtree, rank_nodes) show their ``ref_id`` row's text the same way.

The index is the session's corpus index (``corpus_store``, built once per session, as in CI);
DOCSYM_IDS_TEST_INDEX names an index already built instead, for a quick run over a few files:
``docsym index FILE... --index /tmp/ix --ocr off`` then DOCSYM_IDS_TEST_INDEX=/tmp/ix.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from docsym.runtime.bounds import MAX_CELL_CHARS
from docsym.storage import ids
from docsym.storage.schema import encodable_columns
from docsym.storage.store import Store
from docsym.tools.documents import list_documents
from docsym.tools.entities import find_entities
from docsym.tools.evidence import ROW_SEP
from docsym.tools.outline import get_outline
from docsym.tools.passages import read_passage
from docsym.tools.query_plans import run_plan
from docsym.tools.rank_nodes import rank_nodes
from docsym.tools.results import TRIM_MARK, one_spaced
from docsym.tools.search import SearchHit, hybrid_search, parse_views, vector_search
from docsym.tools.sql import run_sql
from docsym.tools.subtree import TEXT_OF, select_subtree
from docsym.tools.tables import get_table, lookup_cells

QUESTIONS = (
    "What is the F1 score in Table 1",
    "Which results are reported in Table 2",
    "How are entities linked to the knowledge graph",
    "What TEDS score does OTSL reach on complex tables",
    "cell selection accuracy on SQA test set",
    "What was Uber's total revenue in 2021",
    "How many participants took part in the study",
    "title and authors of the paper",
)


@pytest.fixture(scope="module")
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A prebuilt index where DOCSYM_IDS_TEST_INDEX names one, else the session's corpus index."""
    chosen = os.environ.get("DOCSYM_IDS_TEST_INDEX")
    if not chosen:
        yield request.getfixturevalue("corpus_store")
        return
    from docsym.storage.backends import open_store

    opened = open_store(Path(chosen))
    yield opened
    opened.close()


def untrimmed(text: str) -> str:
    """The text without the trim mark at its end."""
    text = one_spaced(text)
    return text.removesuffix(TRIM_MARK.strip()).rstrip() if text.endswith(TRIM_MARK) else text


def stored(store: Store, row_id: str, column: str) -> str:
    """``column`` of the row ``row_id`` names, read with run_sql as a client would."""
    kind = ids.parse(row_id)
    assert kind is not None and kind.kind.view, f"{row_id!r} names no row of any view"
    source = f"FROM {kind.kind.view} WHERE {kind.kind.column} = '{row_id}'"
    return whole(store, column, source)


def table_rows(store: Store, table_id: str) -> str:
    """The table's rows as evidence cites them."""
    rows = (
        f"SELECT row, string_agg(text, '{ROW_SEP}' ORDER BY col) AS line FROM table_cells "
        f"WHERE table_id = '{table_id}' AND text <> '' GROUP BY row"
    )
    return whole(store, "string_agg(line, ' ' ORDER BY row)", f"FROM ({rows})")


def whole(store: Store, expression: str, source: str) -> str:
    """The text ``SELECT expression source`` gives, read in pieces of the longest value run_sql
    returns uncut (MAX_CELL_CHARS), as a client reads a long one; whitespace made one space."""

    def piece(start: int) -> str:
        return f"substr({expression}, {start}, {MAX_CELL_CHARS})"

    # The length and the first piece in one statement: most texts are one piece.
    found = run_sql(store, f"SELECT length({expression}), {piece(1)} {source}").rows
    assert len(found) == 1, f"run_sql found {len(found)} rows {source}"
    size, first = found[0][0] or 0, found[0][1] or ""
    pieces = [
        run_sql(store, f"SELECT {piece(start)} {source}").rows[0][0]
        for start in range(1 + MAX_CELL_CHARS, size + 1, MAX_CELL_CHARS)
    ]
    return one_spaced(first + "".join(pieces))


def assert_holds(store: Store, row_id: str, column: str, shown: str | None, where: str) -> None:
    """``shown`` matches ``column`` of ``row_id`` (the module's rule)."""
    if not shown:
        return
    text = stored(store, row_id, column)
    assert untrimmed(shown) in text, f"{where}: {row_id} ({column}) shows {shown[:160]!r}"


def assert_shows(store: Store, view: str, row_id: str, column: str, shown: str, where: str) -> None:
    """``shown`` matches its row; a table's caption and cited rows each match theirs."""
    if view != "tables":
        assert_holds(store, row_id, column, shown, where)
        return
    head, joint, rows = one_spaced(shown).partition(TRIM_MARK + " ")
    if not joint and untrimmed(head) in table_rows(store, row_id):
        return  # a table without a caption shows only its rows
    assert_holds(store, row_id, column, head, where)
    if joint:
        found = untrimmed(rows)
        assert found in table_rows(store, row_id), f"{where}: {row_id} shows rows {found[:160]!r}"


def assert_hit_holds(store: Store, hit: SearchHit, where: str) -> None:
    """A search hit's text matches its row; a table hit names the tools that read it."""
    assert_shows(store, hit.table_name, hit.primary_key, hit.column_name, hit.text, where)
    if hit.table_name == "tables":
        assert hit.read_with and hit.primary_key in hit.read_with, "a table hit names its tools"


def searches(store: Store) -> Iterator[tuple[str, list[SearchHit]]]:
    """Every search mode's hits for each question: hybrid over the default views and over every
    encodable view, and each collection alone."""
    every_view = [f"{t}.{c}" for t, c in encodable_columns()]
    assert parse_views(every_view)
    for question in QUESTIONS:
        yield f"hybrid {question!r}", hybrid_search(store, question, limit=10).hits
        wide = hybrid_search(store, question, limit=10, views=every_view).hits
        yield f"hybrid, every view, {question!r}", wide
        for collection in sorted(store.collections()):
            found = vector_search(store, question, collection=collection, limit=10).hits
            yield f"{collection} {question!r}", found


def test_every_search_hit_shows_the_text_of_the_row_it_names(store: Store) -> None:
    checked = 0
    for where, hits in searches(store):
        for hit in hits:
            assert_hit_holds(store, hit, where)
            checked += 1
    assert checked > 100


def test_run_plan_hits_show_the_text_of_the_rows_they_name(store: Store) -> None:
    plan = run_plan(store, " + ".join(QUESTIONS[:4]), limit=5)
    hits = [(leaf.question, hit) for leaf in plan.leaves for hit in leaf.hits]
    assert len(hits) >= 10
    for question, hit in hits:
        assert_hit_holds(store, hit, f"run_plan leaf {question!r}")


def documents(store: Store) -> list[str]:
    """The documents with text (a scan indexed without OCR has no nodes to rank)."""
    sql = "SELECT DISTINCT doc_id FROM chunks ORDER BY doc_id"
    return [row[0] for row in run_sql(store, sql).rows]


def test_document_and_tree_tools_show_their_rows_text(store: Store) -> None:
    listing = list_documents(store, limit=200)
    for doc_id, title, *_ in listing.rows:
        assert_holds(store, doc_id, "title", title, "list_documents")
    for doc_id in documents(store):
        outline = get_outline(store, doc_id)
        for section in outline.sections:
            assert_holds(store, section.section_id, "title", section.title, "get_outline")
        subtree = select_subtree(store, doc_id, limit=200)
        # Every node but the chunks, and every fourth chunk: chunks are most of a tree, and
        # checking each took 100 s of the test run.
        nodes = [n for i, n in enumerate(subtree.nodes) if n.ref_table != "chunks" or i % 4 == 0]
        for node in nodes:
            assert_node_holds(store, node, "select_subtree")
        ranked = rank_nodes(store, QUESTIONS[0], doc_id, limit=10)
        for node in ranked.nodes:
            assert_node_holds(store, node, "rank_nodes")


def assert_node_holds(store: Store, node, where: str) -> None:
    assert stored(store, node.node_id, "ref_id") == node.ref_id
    column = TEXT_OF.get(node.ref_table)
    if column is None:
        assert not node.text, f"{where} {node.node_id} shows text its row has no column for"
        return
    shown = node.text or ""
    assert_shows(store, node.ref_table, node.ref_id, column, shown, f"{where} {node.node_id}")


def test_passages_entities_and_tables_show_their_rows_text(store: Store) -> None:
    for question in QUESTIONS[:4]:
        for hit in hybrid_search(store, question, limit=10).hits:
            if hit.table_name == "tables":
                check_table(store, hit.primary_key)
            elif hit.table_name in ("chunks", "pages", "sections"):
                check_passage(store, hit.primary_key)
        for entity in find_entities(store, question, limit=5).hits:
            assert_holds(store, entity.entity_id, "name", entity.name, "find_entities")
            mention = entity.mention
            if mention and mention.excerpt:
                assert mention.within, "an excerpt names the row that holds it"
                view = ids.parse(mention.within).kind.view
                column = TEXT_OF[view]
                assert_shows(store, view, mention.within, column, mention.excerpt, "mention")


def check_passage(store: Store, unit_id: str) -> None:
    passage = read_passage(store, unit_id, before=1, after=1)
    for sentence in passage.sentences:
        assert_holds(store, sentence.sentence_id, "text", sentence.text, "read_passage")
        assert stored(store, sentence.sentence_id, "chunk_id") == sentence.chunk_id


def check_table(store: Store, table_id: str) -> None:
    view = get_table(store, table_id, format="cells")
    for cell in view.cells:
        assert_holds(store, cell["cell_id"], "text", cell["text"], "get_table")
    labels = [c for c in view.cells if c.get("row_path") and c.get("col_path")]
    if labels:
        cell = labels[-1]
        found = lookup_cells(store, table_id, cell["row_path"][-1:], cell["col_path"][-1:])
        for match in found.cells:
            assert_holds(store, match["cell_id"], "text", match["text"], "lookup_cells")
