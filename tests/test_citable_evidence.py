"""Citable evidence: sentences with page boxes, page labels, hits that point at the answering
sentence, fuzzy table headers, and a bbox on every tool result that names a PDF place."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pymupdf
import pytest
from mcp import Client, StdioServerParameters

from docsym.indexer.pdf.parser import parse_pdf
from docsym.indexer.pipeline import index_paths
from docsym.storage.backends import open_store
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError
from docsym.tools.evidence import Target, find_evidence
from docsym.tools.passages import read_passage
from docsym.tools.question import read_question
from docsym.tools.search import hybrid_search
from docsym.tools.tables import lookup_cells
from tests import pdf_factory
from tests.conftest import REPO, doc_id_of


def _line_box(page: pymupdf.Page, text: str) -> pymupdf.Rect:
    (found,) = page.search_for(text)
    return found


def test_sentence_boxes_are_where_the_text_was_drawn(tmp_path: Path) -> None:
    path = pdf_factory.placed_text_pdf(tmp_path / "placed.pdf")
    parsed = parse_pdf(path)
    texts = [s.text for s in parsed.sentences]
    assert texts == [
        "The pump moves water uphill.",
        "It runs on solar power during the day and stores the surplus in a tank.",
        "Maintenance happens every spring.",
    ]
    with pymupdf.open(path) as doc:
        page = doc[0]
        first_line = _line_box(page, "The pump moves water uphill.")
        second_line = _line_box(page, "during the day")
        last_line = _line_box(page, "Maintenance happens every spring.")
    one, two, three = (pymupdf.Rect(s.bbox) for s in parsed.sentences)
    assert one.contains(first_line) and not one.contains(second_line.tl + (0, 5))  # one line
    assert two.contains(second_line) and two.y0 <= first_line.y0 + 1  # both of its lines
    assert three.contains(last_line) and abs(three.y0 - last_line.y0) < 2
    for sentence in parsed.sentences:
        chunk = parsed.chunks[sentence.chunk]
        assert chunk.text[sentence.start : sentence.end] == sentence.text
        assert pymupdf.Rect(chunk.bbox).contains(pymupdf.Rect(sentence.bbox))


def test_a_sentence_across_a_page_break_has_a_box_on_each_page(tmp_path: Path) -> None:
    parsed = parse_pdf(pdf_factory.page_break_pdf(tmp_path / "break.pdf"))
    start = next(s for s in parsed.sentences if s.text.startswith("Every reading"))
    rest = parsed.sentences[start.ordinal + 1]
    assert start.continued and start.page_number == 1 and start.bbox[1] > 600
    assert rest.text.startswith("the height of the water") and rest.page_number == 2
    assert rest.bbox[1] < 120 and not rest.continued
    assert not any(s.continued for s in parsed.sentences if s is not start)


def _baselines_inside(box: list[float]) -> list[float]:
    """The baselines of pdf_factory.LIST_LINES that a sentence's box reaches over."""
    return [y for _, y, _, _ in pdf_factory.LIST_LINES if box[1] <= y <= box[3]]


def test_list_items_and_headings_start_sentences(tmp_path: Path) -> None:
    parsed = parse_pdf(pdf_factory.list_pdf(tmp_path / "lists.pdf"))
    boxes = {s.text: s.bbox for s in parsed.sentences}
    # Each item (and the heading) is a sentence of its own, whose box covers its lines only.
    items = {
        "• The height of the water above the weir, read from the staff gauge.": [114, 128],
        "• The colour of the water after rain.": [142],
        "– The time of the visit in local hours": [156],
        "1. Floods were rare in the dry years": [170],
        "2. Droughts followed the planting of the forest on the upper slopes.": [184, 198],
        "(a) Runoff fell by forty percent": [212],
        "(b) Dry days doubled": [226],
        "Gauge Readers": [240],
    }
    for text, baselines in items.items():
        assert text in boxes, f"{text!r} is not a sentence of its own"
        assert _baselines_inside(boxes[text]) == baselines
    # The line before a list ends its sentence there; an enumeration inside a sentence stays.
    assert "Each visit recorded three facts:" in boxes
    assert "Volunteers read the gauges." in boxes
    assert (
        "The survey asked two questions: (1) where each gauge stood and (2) who read it on the "
        "day of the flood." in boxes
    )


def test_multilexsum_bullets_are_sentences_of_their_own(corpus: Path) -> None:
    parsed = parse_pdf(corpus / "papers/2206.10883v3_multilexsum.pdf")
    on_page = {s.text: s for s in parsed.sentences if s.page_number == 2}
    # The sentence before a bullet ends there: its box stops above the next bullet's line.
    last = on_page["In Multi-LexSum, the average source length is over 75,000 words."]
    bullet = next(s for t, s in on_page.items() if t.startswith("• Unlike other summarization"))
    assert last.bbox[3] <= bullet.bbox[1] + 1
    starts = [s.text[:12] for s in parsed.sentences if s.page_number == 4 and "•" in s.text]
    assert starts == ["• Long (L) s", "• Short (S) ", "• Tiny (T) s"]  # one bullet each
    # A numbered item's marker stays with its text; lettered items without full stops split.
    page_26 = [s.text for s in parsed.sentences if s.page_number == 26]
    assert "3. We contain the metadata for each, including but not limited to:" in page_26
    assert "b. Case type" in page_26 and "c. Case name" in page_26


def test_page_labels_from_the_pdf_and_from_printed_numbers(tmp_path: Path) -> None:
    roman_front = [
        {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
        {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1},
    ]
    labelled = parse_pdf(
        pdf_factory.numbered_pages_pdf(tmp_path / "labelled.pdf", ["", "", "", ""], roman_front)
    )
    assert [p.label for p in labelled.pages] == ["i", "ii", "1", "2"]
    printed = parse_pdf(
        pdf_factory.numbered_pages_pdf(tmp_path / "printed.pdf", ["", "iii", "iv", "1", "2", "3"])
    )
    assert [p.label for p in printed.pages] == [None, "iii", "iv", "1", "2", "3"]
    assert all("iv" not in p.text.split() for p in printed.pages)  # still furniture, not text
    stray = parse_pdf(pdf_factory.numbered_pages_pdf(tmp_path / "stray.pdf", ["", "", "9", ""]))
    assert [p.label for p in stray.pages] == [None] * 4  # one number no other page agrees with


def test_hits_cite_the_answering_sentence(sample_index: Path) -> None:
    store = open_store(sample_index)
    question = "How many candidates does each retriever give the hybrids?"
    result = hybrid_search(store, question, limit=5)
    chunk = next(h for h in result.hits if h.table_name in ("chunks", "pages"))
    assert "top 100 candidates" in chunk.text and len(chunk.cited) == 1 and chunk.bbox
    sentence = (
        store.sql()
        .execute("SELECT text, page_number, bbox FROM sentences WHERE sentence_id = ?", chunk.cited)
        .fetchone()
    )
    assert "top 100 candidates" in sentence[0]
    assert (sentence[1], sentence[2]) == (chunk.page_number, chunk.bbox)


def test_read_passage_reads_on_with_boxes(sample_index: Path) -> None:
    store = open_store(sample_index)
    (chunk_id,) = (
        store.sql()
        .execute(
            "SELECT chunk_id FROM chunks WHERE ordinal = 3 AND doc_id IN "
            "(SELECT doc_id FROM documents WHERE file_name = 'hybrid-retrieval-report.pdf')"
        )
        .fetchone()
    )
    alone = read_passage(store, chunk_id)
    wider = read_passage(store, chunk_id, before=1, after=1)
    assert alone.sentences and all(s.bbox and s.page_number for s in alone.sentences)
    assert alone.text in wider.text and len(wider.sentences) > len(alone.sentences)
    assert wider.previous_id and wider.next_id
    cut = read_passage(store, chunk_id, after=5, max_chars=200)
    assert cut.truncated and "read_passage(id=" in cut.note
    with pytest.raises(NotFoundError, match="no chunk"):
        read_passage(store, chunk_id.rsplit("-", 1)[0] + "-c99999")


def test_lookup_cells_ignores_footnote_marks_case_and_spacing(corpus_store: Store, corpus_db):
    """Uber's 10-K prints 'Gross Bookings (2)' style labels; a client types 'gross bookings'."""
    uber = doc_id_of(corpus_db, "uber_2021_10k.pdf")
    table_id, label = corpus_db.execute(
        "SELECT c.table_id, list_filter(c.row_path, lambda x: x ILIKE '%gross bookings%(%)%')[1] "
        "FROM table_cells c WHERE c.doc_id = ? AND "
        "len(list_filter(c.row_path, lambda x: x ILIKE '%gross bookings%(%)%')) > 0 LIMIT 1",
        [uber],
    ).fetchone()
    assert label != "Gross Bookings" and "(" in label  # a footnote mark is printed
    exact = lookup_cells(corpus_store, table_id, [label]).cells
    typed = lookup_cells(corpus_store, table_id, ["  GROSS bookings "]).cells
    assert typed and [c["cell_id"] for c in typed] == [c["cell_id"] for c in exact]
    assert all(c["page_number"] and len(c["bbox"]) == 4 for c in typed)
    with pytest.raises(NotFoundError) as refused:
        lookup_cells(corpus_store, table_id, ["gross bookingz"])
    assert "Nearest row paths: [" in str(refused.value) and "Gross Bookings" in str(refused.value)


def test_lookup_cells_reads_labels_as_people_write_them(corpus_store: Store, corpus_db):
    """PaperMage's results table prints the model 'GrobidNN' and the columns P, R and F1 under
    'Full' and 'Grobid Subset': 'Grobid NN' names the row, and 'R' the one column R, never a
    column whose group label holds the letter r."""
    papermage = doc_id_of(corpus_db, "papermage_2023.pdf")
    (table_id,) = corpus_db.execute(
        "SELECT DISTINCT table_id FROM table_cells WHERE doc_id = ? AND "
        "list_contains(row_path, 'GrobidNN')",
        [papermage],
    ).fetchone()
    cells = lookup_cells(corpus_store, table_id, ["Grobid NN"], ["grobid subset", "R"]).cells
    assert [(c["text"], c["row_path"], c["col_path"]) for c in cells] == [
        ("73.0", ["GrobidNN"], ["Grobid Subset", "R"])
    ]
    row = lookup_cells(corpus_store, table_id, ["GROBID-NN"]).cells
    assert {c["col_path"][-1] for c in row} == {"P", "R", "F1"} and len(row) == 6


def test_every_tool_result_naming_a_pdf_place_has_a_bbox(sample_index: Path) -> None:
    """Over MCP, each tool that returns places: every place with a page has a bbox."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(sample_index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    question = "How does reciprocal rank fusion combine the retrievers?"

    async def places() -> dict[str, list[dict]]:
        async with Client(server) as client:

            async def call(name: str, arguments: dict) -> dict:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result.content[0].text
                return result.structured_content

            docs = await call("list_documents", {"filter": "hybrid-retrieval"})
            doc_id = docs["rows"][0][0]
            table_id = f"{doc_id}-t0"
            found = {
                "hybrid_search": (await call("hybrid_search", {"query": question}))["hits"],
                "vector_search": (await call("vector_search", {"query": question}))["hits"],
                "select_subtree": (await call("select_subtree", {"doc_id": doc_id}))["nodes"],
                "rank_nodes": (await call("rank_nodes", {"query": question, "doc_id": doc_id}))[
                    "nodes"
                ],
                "get_table": [await call("get_table", {"table_id": table_id})],
                "lookup_cells": (await call("lookup_cells", {"table_id": table_id}))["cells"],
                "read_passage": (await call("read_passage", {"id": f"{doc_id}-c3", "after": 2}))[
                    "sentences"
                ],
            }
            entities = (await call("find_entities", {"query": "BM25", "doc_id": doc_id}))["hits"]
            found["find_entities"] = [e["mention"] for e in entities if e["mention"]]
            return found

    for tool, items in anyio.run(places).items():
        assert items, f"{tool} returned no places"
        for item in items:
            page = item.get("page_number", item.get("page_start"))
            if page is not None and item.get("node_type") not in ("document", "section"):
                assert item["bbox"] and len(item["bbox"]) == 4, (tool, item)


def test_index_upgrade_from_schema_2_fills_the_new_views(tmp_path: Path) -> None:
    """The migration to citable evidence re-indexes, so old documents gain sentences."""
    import duckdb

    from docsym.storage import schema

    folder = tmp_path / "docs"
    folder.mkdir()
    pdf_factory.placed_text_pdf(folder / "a.pdf")
    index = tmp_path / "index"
    index_paths([folder], index)
    with duckdb.connect(str(index / "index.duckdb")) as con:  # as docsym with schema 2 left it
        con.execute("DROP TABLE sentences")
        for table, column in (("chunks", "bbox"), ("sections", "boxes"), ("pages", "label")):
            # DuckDB drops no column of an indexed table: the index goes and comes back.
            con.execute(f"DROP INDEX idx_{table}_doc_id")
            con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            con.execute(f"CREATE INDEX idx_{table}_doc_id ON {table} (doc_id)")
        con.execute(f"UPDATE {schema.META_TABLE} SET value = '2' WHERE key = 'schema_version'")
    report = index_paths([folder], index)
    assert [Path(p).name for p in report.updated] == ["a.pdf"]
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        boxed = con.execute("SELECT count(*) FROM sentences WHERE bbox IS NOT NULL").fetchone()
        assert boxed == (3,)  # the three sentences of the page


def test_view_page_highlights_cited_ids(sample_index: Path) -> None:
    from docsym.tools.pages import view_page

    store = open_store(sample_index)
    hit = hybrid_search(store, "How many candidates does each retriever give the hybrids?").hits[0]
    plain = view_page(store, hit.doc_id, hit.page_number, dpi=72)
    marked = view_page(store, hit.doc_id, hit.page_number, dpi=72, highlight_ids=hit.cited)
    assert plain.note is None and marked.note is None and marked.png != plain.png
    x0, y0, x1, y1 = (round(v) for v in hit.bbox)
    before = pymupdf.Pixmap(plain.png)
    after = pymupdf.Pixmap(marked.png)
    middle = ((x0 + x1) // 2, (y0 + y1) // 2)  # 72 dpi: one pixel per point
    assert after.pixel(*middle) != before.pixel(*middle)
    other = view_page(store, hit.doc_id, hit.page_number, dpi=72, highlight_ids=["nope-x1"])
    assert other.png == plain.png
    (elsewhere,) = (
        store.sql()
        .execute(
            "SELECT sentence_id FROM sentences WHERE doc_id = ? AND page_number <> ? LIMIT 1",
            [hit.doc_id, hit.page_number],
        )
        .fetchone()
    )
    note = view_page(store, hit.doc_id, hit.page_number, dpi=72, highlight_ids=[elsewhere])
    assert note.png == plain.png and elsewhere in note.note


def test_evidence_words_meet_compounds_greek_letters_and_plurals() -> None:
    from docsym.language.terms import words_of
    from docsym.tools.question import read_question

    def terms(text: str):
        return read_question(None, text).terms

    unit = words_of("TABLEFORMERLARGE with inter-sqa pretraining uses λ = 1.1 for the titles")
    met = {
        sorted(t.forms)[0] for t in terms("TableFormer-large SQA lambda title") if t.met_by(unit)
    }
    assert met == {"lambda", "sqa", "tableformer-large", "title"}
    assert not any(t.forms == {"s"} for t in terms("What was Tennessee's stroke rate?"))


def test_a_document_hit_cites_the_table_row_holding_the_value(corpus_store: Store, corpus_db):
    """A document found by its title cites, among its sentences and its tables' rows, the row
    that holds the asked number (the NICS report is one table on one page)."""
    doc_id = doc_id_of(corpus_db, "nics-background-checks-2015-11.pdf")
    asked = "How many total NICS background checks did Texas have in November 2015?"
    question = read_question(corpus_store, asked)
    (evidence,) = find_evidence(
        corpus_store, question, [Target("documents", "title", doc_id, doc_id, 1)]
    )
    assert evidence.within is not None and evidence.within.startswith(doc_id)
    assert "Texas" in evidence.excerpt and "146,982" in evidence.excerpt
    assert evidence.bbox and evidence.page_number == 1
