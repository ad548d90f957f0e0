"""Office files through the whole pipeline: views, tree, vectors, search and the table tools.

One index per module: a few real office files of ../shared/corpus, a Markdown file and broken
office files generated here. Broken files are reported with their reason and skipped; the rest
is indexed into the same views as PDFs.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from openpyxl.drawing.image import Image as SheetImage
from PIL import Image

from docsym.indexer.pipeline import IndexReport, index_paths
from docsym.storage.backends import open_store
from docsym.storage.consistency import check
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.outline import get_outline
from docsym.tools.pages import view_page
from docsym.tools.search import hybrid_search
from docsym.tools.subtree import select_subtree
from docsym.tools.tables import get_table, lookup_cells
from tests.conftest import CORPUS

OFFICE = CORPUS / "office"
HITAB = CORPUS / "tables" / "hitab"
REAL_FILES = [
    OFFICE / "word_sample.docx",
    OFFICE / "wiki_duck.html",
    OFFICE / "powerpoint_sample.pptx",
    OFFICE / "2023-half-year-analyses-by-segment.xlsx",
    *(HITAB / f"statcan_annotation_{n}.xlsx" for n in (1, 25, 34)),
]
NOTES = """# Pond survey notes

## Methods

The volunteers counted the greylag geese at dawn on three consecutive Sundays.

## Results

| Pond | Geese |
|---|---|
| North | 41 |
| South | 17 |
"""


def _broken_files(folder: Path) -> None:
    """One file per way an office file can be unreadable."""
    whole = (OFFICE / "word_sample.docx").read_bytes()
    (folder / "truncated.docx").write_bytes(whole[: len(whole) // 3])
    (folder / "empty.docx").write_bytes(b"")
    (folder / "headless.html").write_text("<html><head><title>Only a head</title></head></html>")
    picture = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(picture, format="PNG")
    book = openpyxl.Workbook()
    book.active.add_image(SheetImage(picture), "B2")
    book.save(folder / "picture_only.xlsx")
    openpyxl.Workbook().save(folder / "blank.xlsx")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IndexReport]:
    missing = [p for p in REAL_FILES if not p.is_file()]
    if missing:
        pytest.skip(f"corpus files not found: {missing} (set DOCSYM_CORPUS)")
    folder = tmp_path_factory.mktemp("office-docs")
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")
    _broken_files(folder)
    index_dir = tmp_path_factory.mktemp("office-index")
    return index_dir, index_paths([folder, *REAL_FILES], index_dir)


@pytest.fixture(scope="module")
def store(indexed):
    s = open_store(indexed[0])
    yield s
    s.close()


def _doc(store: Store, file_name: str) -> str:
    row = (
        store.sql()
        .execute("SELECT doc_id FROM documents WHERE file_name = ?", [file_name])
        .fetchone()
    )
    assert row is not None, f"{file_name} is not indexed"
    return row[0]


def test_broken_files_are_reported_with_their_reason_and_skipped(indexed) -> None:
    _, report = indexed
    reasons = {Path(p).name: r for p, r in report.failed}
    assert set(reasons) == {
        "truncated.docx",
        "empty.docx",
        "headless.html",
        "picture_only.xlsx",
        "blank.xlsx",
    }
    assert "truncated or damaged DOCX" in reasons["truncated.docx"]
    assert "empty file" in reasons["empty.docx"]
    assert "no <body>" in reasons["headless.html"]
    assert "only 1 image(s)" in reasons["picture_only.xlsx"]
    assert "empty sheets" in reasons["blank.xlsx"]
    added = {Path(p).name for p in report.added}
    assert added == {"notes.md", *(p.name for p in REAL_FILES)}


def test_formats_and_page_semantics(store: Store) -> None:
    con = store.sql()
    rows = con.execute(
        "SELECT d.file_name, d.format, d.page_count, count(p.page_id) FROM documents d "
        "LEFT JOIN pages p USING (doc_id) GROUP BY ALL"
    ).fetchall()
    by_name = {name: (fmt, count, pages) for name, fmt, count, pages in rows}
    assert by_name["word_sample.docx"] == ("docx", 0, 0)
    assert by_name["wiki_duck.html"] == ("html", 0, 0)
    assert by_name["notes.md"] == ("md", 0, 0)
    assert by_name["powerpoint_sample.pptx"] == ("pptx", 3, 3)
    sheets = len(openpyxl.load_workbook(REAL_FILES[3], read_only=True).sheetnames)
    assert by_name[REAL_FILES[3].name] == ("xlsx", sheets, sheets)
    # Items of page-less formats carry no page; slides and sheets do.
    for view in ("chunks", "tables", "images", "table_cells"):
        pages = con.execute(
            f"SELECT d.format, count(v.page_number) FROM {view} v JOIN documents d USING (doc_id) "
            "WHERE d.format IN ('docx', 'html', 'md') GROUP BY ALL"
        ).fetchall()
        assert all(count == 0 for _, count in pages), (view, pages)
    assert con.execute(
        "SELECT count(*) FROM table_cells c JOIN documents d USING (doc_id) "
        "WHERE d.format IN ('pptx', 'xlsx') AND c.page_number IS NULL"
    ).fetchone() == (0,)


def test_tree_nodes_mirror_sections_and_leaves(store: Store) -> None:
    con = store.sql()
    for name in ("word_sample.docx", "wiki_duck.html", "powerpoint_sample.pptx", "notes.md"):
        doc = _doc(store, name)
        # every section node hangs under its parent section's node
        mismatched = con.execute(
            "SELECT count(*) FROM sections s "
            "JOIN tree_nodes n ON n.ref_table = 'sections' AND n.ref_id = s.section_id "
            "LEFT JOIN tree_nodes pn ON pn.node_id = n.parent_id "
            "WHERE s.doc_id = ? AND coalesce(s.parent_id, '') <> "
            "coalesce(CASE WHEN pn.ref_table = 'sections' THEN pn.ref_id END, '')",
            [doc],
        ).fetchone()[0]
        assert mismatched == 0, name
        counts = dict(
            con.execute(
                "SELECT ref_table, count(*) FROM tree_nodes WHERE doc_id = ? GROUP BY ALL", [doc]
            ).fetchall()
        )
        for view in ("sections", "chunks", "tables", "images"):
            rows = con.execute(f"SELECT count(*) FROM {view} WHERE doc_id = ?", [doc]).fetchone()
            assert counts.get(view, 0) == rows[0], (name, view)


def test_every_table_has_cells_with_paths(store: Store) -> None:
    con = store.sql()
    empty = con.execute(
        "SELECT t.table_id FROM tables t LEFT JOIN table_cells c USING (table_id) "
        "GROUP BY t.table_id HAVING count(c.cell_id) = 0"
    ).fetchall()
    assert empty == []
    slide_table = con.execute(
        "SELECT c.row_path, c.col_path FROM table_cells c JOIN documents d USING (doc_id) "
        "WHERE d.file_name = 'powerpoint_sample.pptx' AND c.row = 2 AND c.col = 1"
    ).fetchone()
    assert slide_table == (["R1"], ["Class1", "A merged with B"])
    north = con.execute(
        "SELECT c.value, c.col_path FROM table_cells c JOIN documents d USING (doc_id) "
        "WHERE d.file_name = 'notes.md' AND c.row_path = ['North'] AND NOT c.is_row_header"
    ).fetchone()
    assert north == (41.0, ["Geese"])


def test_chunks_sit_in_their_sections(store: Store) -> None:
    con = store.sql()
    doc = _doc(store, "notes.md")
    rows = con.execute(
        "SELECT s.title, c.text FROM chunks c JOIN sections s USING (section_id) "
        "WHERE c.doc_id = ?",
        [doc],
    ).fetchall()
    assert ("Methods", NOTES.split("\n\n")[2]) in rows


@pytest.mark.parametrize(
    ("query", "file_name"),
    [
        ("how many greylag geese did the volunteers count at dawn", "notes.md"),
        ("lay down in the water and try not to drown", "word_sample.docx"),
        ("pecten along the bill of a duck", "wiki_duck.html"),
    ],
)
def test_hybrid_search_finds_office_text(store: Store, query: str, file_name: str) -> None:
    hits = hybrid_search(store, query, limit=5).hits
    assert _doc(store, file_name) in {h.doc_id for h in hits}


def test_subtree_and_outline_of_a_pageless_document(store: Store) -> None:
    doc = _doc(store, "word_sample.docx")
    subtree = select_subtree(store, doc, section="Let’s swim!")
    types = {n.node_type for n in subtree.nodes}
    assert {"section", "text"} <= types  # nested "Let’s eat" and the text under both
    assert all(n.page_start is None for n in subtree.nodes)
    outline = get_outline(store, doc)
    assert [s.title for s in outline.sections] == ["Let’s swim!", "Let’s eat"]


def test_view_page_refuses_office_documents_with_a_way_forward(store: Store) -> None:
    with pytest.raises(ToolError) as refused:
        view_page(store, _doc(store, "powerpoint_sample.pptx"), 1)
    message = str(refused.value)
    assert "only PDFs" in message and "select_subtree" in message and "get_table" in message


NESTLE_SHEET = "OS-Rev.and results 30 06 2023"  # the workbook's first sheet


def _first_table(store: Store, doc_id: str) -> str:
    sql = "SELECT table_id FROM tables WHERE doc_id = ? ORDER BY ordinal LIMIT 1"
    return store.sql().execute(sql, [doc_id]).fetchone()[0]


def test_a_spreadsheet_value_is_cited_by_sheet_and_cell(store: Store) -> None:
    """The sheet's name stands where a PDF's printed page number would, and the cell's A1
    address where its box would: in SQL, lookup_cells, get_table and search hits."""
    doc = _doc(store, "2023-half-year-analyses-by-segment.xlsx")
    sql = store.sql()
    labels = sql.execute(
        "SELECT label FROM pages WHERE doc_id = ? ORDER BY page_number", [doc]
    ).fetchall()
    assert labels[0] == (NESTLE_SHEET,) and len(labels) == 5
    table = _first_table(store, doc)
    found = sql.execute(
        "SELECT text FROM table_cells WHERE table_id = ? AND address = 'B10'", [table]
    ).fetchall()
    assert found == [("9,467",)]  # Zone EUR's sales, January–June 2023
    (cell,) = lookup_cells(store, table, ["Zone EUR"], ["2023", "Sales"]).cells
    assert (cell["text"], cell["address"]) == ("9,467", "B10")
    cited = f"1 (sheet {NESTLE_SHEET})"
    assert cell["page_label"] == f"sheet {NESTLE_SHEET}"
    assert cited in lookup_cells(store, table, ["Zone EUR"], ["2023", "Sales"]).to_markdown()
    view = get_table(store, table, format="cells")
    assert view.sheet_range == "A6:J18" and view.page_label == f"sheet {NESTLE_SHEET}"
    assert {c["address"] for c in view.cells} >= {"A6", "J6", "B7", "B10"}
    head = get_table(store, table).to_markdown().splitlines()[0]
    assert f"page {cited}, cells A6:J18" in head
    hits = hybrid_search(store, "Zone EUR sales", filter=f"doc_id == '{doc}'", limit=3).hits
    assert hits[0].page_number == 1 and hits[0].page_label == f"sheet {NESTLE_SHEET}"


def test_cells_outside_spreadsheets_have_no_address(store: Store) -> None:
    counts = store.sql().execute(
        "SELECT d.format, count(c.address) FROM table_cells c JOIN documents d "
        "ON d.doc_id = c.doc_id GROUP BY d.format"
    )
    by_format = dict(counts.fetchall())
    assert by_format.pop("xlsx") > 0
    assert set(by_format.values()) == {0}


@pytest.mark.parametrize(
    ("file_name", "query", "next_tool"),
    [
        ("2023-half-year-analyses-by-segment.xlsx", "Zone EUR sales", "get_table(table_id="),
        ("powerpoint_sample.pptx", "Class1 merged with B", "get_table(table_id="),
        ("powerpoint_sample.pptx", "List item4 List item5", "read_passage(id="),
    ],
)
def test_next_step_after_a_sheet_or_slide_hit_reads_it(
    store: Store, file_name: str, query: str, next_tool: str
) -> None:
    """A sheet or a slide is a page, but view_page shows only a PDF's: the next step names a
    tool that reads the hit."""
    doc = _doc(store, file_name)
    result = hybrid_search(store, query, filter=f"doc_id == '{doc}'", limit=3)
    assert result.hits[0].page_number is not None
    assert next_tool in result.note and "view_page" not in result.note


def test_an_office_tables_doubts_say_how_to_check_it_without_view_page(store: Store) -> None:
    table = _first_table(store, _doc(store, "powerpoint_sample.pptx"))
    view = get_table(store, table)
    assert view.doubts  # the merged "A merged with B" header names two columns
    text = view.to_markdown()
    assert "Structure confidence" in text and "view_page" not in text
    assert f"get_table(table_id='{table}', format='cells')" in text
    assert "read_passage(id=" in text


def test_vector_store_matches_the_database(store: Store) -> None:
    assert check(store).ok


# HiTab annotated questions: (file, words of the question) -> how to answer it with lookups.
Lookup = Callable[[list[str], list[str]], float]
HITAB_QUESTIONS: list[tuple[int, str, Callable[[Lookup], object]]] = [
    (
        25,
        "how many estimated energy intake for under-reporters was lower",
        lambda v: (
            v(["Total"], ["2004", "Under-reporters", "kcal"])
            - v(["Total"], ["2015", "Under-reporters", "kcal"])
        ),
    ),
    (
        25,
        "for over-reporters was lower than in 2004",
        lambda v: (
            v(["Total"], ["2004", "Over-reporters", "kcal"])
            - v(["Total"], ["2015", "Over-reporters", "kcal"])
        ),
    ),
    (
        25,
        "between 2004 and 2015 for plausible reporter",
        lambda v: (
            v(["Total"], ["2004", "Plausible reporters", "kcal"])
            - v(["Total"], ["2015", "Plausible reporters", "kcal"])
        ),
    ),
    (
        34,
        "annual decrease in consumption frequency at ages 12 to 18",
        lambda v: -v(["Including fruit juice", "12 to 18"], ["Annual change"]),
    ),
    (
        34,
        "annual decrease in Quebec",
        lambda v: -v(["Including fruit juice", "Quebec"], ["Annual change"]),
    ),
    (
        34,
        "Excluding fruit juice, which group of people has a lower average frequency",
        lambda v: min(
            ("Male", "Female"),
            key=lambda sex: sum(
                v(["Excluding fruit juice", "Sex", sex], [year, "Average times/day"])
                for year in ("2007", "2014")
            ),
        ),
    ),
    (
        1,
        "Male or female?",
        lambda v: max(
            ("Male", "Female"),
            key=lambda sex: sum(
                v(["Sex", sex], [f"Agricultural region {region}", language])
                for region in (1, 3, 4)
                for language in ("French-language", "English-language")
            ),
        ),
    ),
]


def _annotated_answer(number: int, words: str) -> object:
    """The answer HiTab's annotators recorded: the cached result of the answer formula in the
    row after the question in the "labeling" sheet."""
    sheet = openpyxl.load_workbook(HITAB / f"statcan_annotation_{number}.xlsx", data_only=True)[
        "labeling"
    ]
    rows = list(sheet.iter_rows(values_only=True))
    for i, row in enumerate(rows):
        if row[0] == "question rewrite:" and words.lower() in str(row[1]).lower():
            assert rows[i + 1][0] == "answer (formula):"
            return rows[i + 1][1]
    raise AssertionError(f"question {words!r} not found in statcan_annotation_{number}.xlsx")


@pytest.mark.parametrize(("number", "words", "plan"), HITAB_QUESTIONS)
def test_hitab_questions_answered_with_lookup_cells(store: Store, number, words, plan) -> None:
    doc = _doc(store, f"statcan_annotation_{number}.xlsx")
    sheet_number = (
        openpyxl.load_workbook(
            HITAB / f"statcan_annotation_{number}.xlsx", read_only=True
        ).sheetnames.index("original")
        + 1
    )
    (table_id,) = (
        store.sql()
        .execute(
            "SELECT table_id FROM tables WHERE doc_id = ? AND page_number = ? ORDER BY ordinal "
            "LIMIT 1",
            [doc, sheet_number],
        )
        .fetchone()
    )

    def value(row: list[str], col: list[str]) -> float:
        cells = lookup_cells(store, table_id, row, col, limit=5).cells
        return cells[0]["value"]

    expected = _annotated_answer(number, words)
    answer = plan(value)
    if isinstance(expected, str):
        assert answer == expected
    else:
        assert answer == pytest.approx(expected, abs=1e-9)
