"""PDF table rules, one synthetic page per rule, and the corpus tables that needed them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pymupdf
import pytest

from docsym.indexer.model import Table, TableCell
from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.tables import extract_tables

# A row of a synthetic table: (x, text) pieces on one baseline.
Row = Sequence[tuple[float, str]]


def _page_tables(doc: pymupdf.Document) -> list[Table]:
    return extract_tables(read_layout(doc))


def _draw_rows(
    page: pymupdf.Page, rows: Sequence[Row], top: float, step: float = 12, size: float = 9
) -> float:
    y = top
    for row in rows:
        for x, text in row:
            page.insert_text((x, y), text, fontsize=size)
        y += step
    return y


def _rule(page: pymupdf.Page, y: float, x0: float = 60, x1: float = 360) -> None:
    page.draw_line((x0, y), (x1, y), width=0.6)


def _cell(table: Table, text: str) -> TableCell:
    return next(c for c in table.cells if c.text == text)


def _ruled_table(
    caption: str, header: Sequence[Row], body: Sequence[Row], top: float = 60, size: float = 10
) -> pymupdf.Document:
    """A one-page PDF holding a booktabs table: caption, rule, header rows, rule, body, rule."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, top), caption, fontsize=size)
    _rule(page, top + 10)
    y = _draw_rows(page, header, top + 22)
    _rule(page, y - 8)
    y = _draw_rows(page, body, y + 2)
    _rule(page, y - 6)
    return doc


DATASET_HEADER: Row = [(62, "Dataset"), (200, "Docs"), (260, "Words"), (330, "Sents")]


def _body(rows: int = 4) -> list[Row]:
    return [
        [(62, f"Item {i}"), (200, f"{10 + i}"), (260, f"{20 + i}.5"), (330, f"{30 + i}")]
        for i in range(rows)
    ]


def test_stacked_header_lines_are_one_cell() -> None:
    """A header set on two lines is one cell; a header over sub-headers is a level."""
    header = [
        [(62, "Age group"), (205, "Counts")],
        [(62, "(yrs)")],
        [(198, "no."), (258, "Rate"), (325, "Share")],
    ]
    doc = _ruled_table("Table 1: Deaths by age group.", header, _body())
    table = next(t for t in _page_tables(doc) if t.label == "Table 1")
    assert [c.text for c in table.cells if c.is_col_header and c.col == 0] == ["Age group (yrs)"]
    value = _cell(table, "21.5")
    assert value.col_path == ["Counts", "Rate"]
    assert value.row_path == ["Item 1"]


def test_repeated_sub_headers_stay_a_level() -> None:
    """ "F1" under each dataset is a header level, not a second line of the dataset's name."""
    header = [[(200, "MAG"), (258, "MeSH")], [(200, "F1"), (258, "F1")]]
    body = [[(62, f"Model {i}"), (200, f"7{i}.1"), (258, f"8{i}.2")] for i in range(4)]
    doc = _ruled_table("Table 2: Scores.", header, body)
    table = next(t for t in _page_tables(doc) if t.label == "Table 2")
    assert _cell(table, "81.2").col_path == ["MeSH", "F1"]


def test_footnote_marks_stay_with_their_cell() -> None:
    """A small raised "(2)" after a label is part of that label, never a column of its own."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 60), "Table 4: Highlights.", fontsize=10)
    _rule(page, 68)
    _draw_rows(page, [[(240, "2020"), (320, "2021")]], 80)
    _rule(page, 85)
    _rule(page, 145)
    for i, label in enumerate(["Trips", "Gross Bookings", "Revenue", "Net loss"]):
        y = 95 + 12 * i
        page.insert_text((62, y), label, fontsize=9)
        width = pymupdf.get_text_length(label, fontsize=9)
        page.insert_text((63 + width, y - 3), f"({i + 1})", fontsize=5)
        page.insert_text((240, y), f"{5 + i},1{i}5", fontsize=9)
        page.insert_text((320, y), f"{6 + i},3{i}8", fontsize=9)
    tables = _page_tables(doc)
    assert len(tables) == 1
    table = tables[0]
    assert table.n_cols == 3
    cell = _cell(table, "8,328")
    assert cell.row_path == ["Revenue (3)"]
    assert cell.col_path == ["2021"] and cell.value == pytest.approx(8328)


def test_centred_group_label_heads_the_rows_below() -> None:
    """A lone label centred across the table ("Tiny") is the outer level of row paths."""
    sets = [[(62, f"Set {i}"), (200, f"4{i}"), (260, f"5{i}.5"), (330, f"6{i}")] for i in range(2)]
    body = [[(200, "Tiny")], *_body(2), [(198, "Short")], *sets]
    doc = _ruled_table("Table 3: Datasets by size.", [DATASET_HEADER], body)
    table = next(t for t in _page_tables(doc) if t.label == "Table 3")
    assert table.header_rows == 1
    assert _cell(table, "20.5").row_path == ["Tiny", "Item 0"]
    assert _cell(table, "51.5").row_path == ["Short", "Set 1"]
    assert _cell(table, "51.5").col_path == ["Words"]


def test_small_capital_caption_is_a_caption() -> None:
    header = [[(62, "State"), (200, "Deaths"), (260, "Rate"), (330, "Rank")]]
    doc = _ruled_table("tABLE 6. Number of deaths, by state", header, _body(), size=9)
    tables = _page_tables(doc)
    assert [t.label for t in tables] == ["Table 6"]
    assert tables[0].caption.startswith("tABLE 6. Number of deaths")


@pytest.mark.parametrize("rotate", [90, -90])
def test_sideways_table_is_read_turned(rotate: int) -> None:
    """A landscape table placed sideways on a portrait page reads as if the page were turned;
    its boxes stay in page coordinates."""
    source = pymupdf.open()
    landscape = source.new_page(width=792, height=612)
    landscape.insert_text((60, 60), "Table 1: Site characteristics", fontsize=10)
    rows: list[Row] = [[(62, "Site"), (200, "Area"), (260, "Rain"), (330, "Age")]]
    rows += [
        [(62, f"Creek {i}"), (200, f"{870 + i}"), (260, f"14{i}2"), (330, f"1{i}")]
        for i in range(6)
    ]
    _draw_rows(landscape, rows, 80, step=14)
    doc = pymupdf.open()
    page = doc.new_page()
    page.show_pdf_page(page.rect, source, 0, rotate=rotate)
    tables = _page_tables(doc)
    assert [t.label for t in tables] == ["Table 1"]
    table = tables[0]
    cell = _cell(table, "1422")
    assert cell.row_path == ["Creek 2"] and cell.col_path == ["Rain"]
    x0, y0, x1, y1 = cell.bbox
    assert y1 - y0 > x1 - x0  # the number runs along the page's height
    assert page.rect.contains(pymupdf.Rect(table.bbox))


def test_prose_beside_a_table_is_not_taken_into_it() -> None:
    """On a two-column page, an uncaptioned table in the right column takes no lines of the
    paragraph in the left column, even where they share baselines."""
    doc = pymupdf.open()
    page = doc.new_page()
    sentence = "the model reads every table of the paper in order"
    for i in range(30):
        page.insert_text((50, 80 + 12 * i), f"{sentence} {i}", fontsize=9)
        page.insert_text((320, 80 + 12 * i), f"{sentence} {i}", fontsize=9)
    rows = [[(330, "Nation"), (420, "Gold"), (470, "Silver"), (520, "Bronze")]]
    rows += [
        [(330, name), (425, f"{g}"), (475, f"{s}"), (525, f"{b}")]
        for name, g, s, b in [
            ("Britain", 2, 1, 2),
            ("Spain", 1, 2, 0),
            ("Ukraine", 0, 2, 0),
            ("Chile", 3, 0, 1),
        ]
    ]
    page.draw_rect(pymupdf.Rect(316, 440, 560, 520), color=(1, 1, 1), fill=(1, 1, 1))
    _draw_rows(page, rows, 452)
    tables = _page_tables(doc)
    assert len(tables) == 1
    texts = [c.text for c in tables[0].cells]
    assert "Spain" in texts
    assert not any(sentence.split()[0] in text for text in texts)


def test_sentence_naming_a_table_is_not_its_caption() -> None:
    doc = _ruled_table("Table 2: Comparison of datasets.", [DATASET_HEADER], _body(), top=160)
    doc[0].insert_textbox(
        pymupdf.Rect(60, 50, 540, 120),
        "Table 2 compares the summaries with the sources and shows that the long ones are "
        "closest to the documents they summarise.",
        fontsize=10,
    )
    tables = _page_tables(doc)
    assert [t.caption for t in tables] == ["Table 2: Comparison of datasets."]


# ---------------------------------------------------------------------------------------------
# The corpus tables


def _tables(corpus: Path, name: str) -> list[Table]:
    with pymupdf.open(corpus / name) as doc:
        return _page_tables(doc)


def test_tableformer_table1_spanning_headers(corpus) -> None:
    tables = _tables(corpus, "papers/2203.00274v2_tableformer.pdf")
    table = next(t for t in tables if t.label == "Table 1")
    after_all = [c for c in table.cells if c.col_path == ["After Perturb", "ALL"]]
    assert "72.3" in [c.text for c in after_all]
    before_seq = [c for c in table.cells if c.col_path == ["Before Perturb", "SEQ"]]
    assert "47.5" in [c.text for c in before_seq]
    # page 1's abstract is prose, whatever numbers the figure beside it holds
    assert not any(len(c.text.split()) > 8 for t in tables if t.page_number == 1 for c in t.cells)


def test_multilexsum_table2_caption_headers_and_groups(corpus) -> None:
    tables = _tables(corpus, "papers/2206.10883v3_multilexsum.pdf")
    assert not [t for t in tables if t.page_number == 5]
    table = next(t for t in tables if t.label == "Table 2")
    assert table.page_number == 6
    assert table.caption.startswith("Table 2: Comparison of Multi-LexSum")
    assert "Tiny" not in [c.text for c in table.cells if c.is_col_header]
    xsum = next(c for c in table.cells if c.text == "454.5")
    assert xsum.col_path == ["Source", "Words"]
    assert xsum.row_path == ["Tiny", "XSUM"]


@pytest.fixture(scope="module")
def uber_tables(corpus: Path) -> list[Table]:
    return _tables(corpus, "long_docs/uber_2021_10k.pdf")


def test_uber_p53_year_and_change_columns(uber_tables) -> None:
    page = [t for t in uber_tables if t.page_number == 53]
    revenue = [c for t in page for c in t.cells if c.row_path and c.row_path[-1] == "Revenue"]
    paths = {c.text: c.col_path for c in revenue}
    assert paths["$ 17,455"] == ["Year Ended December 31,", "2021"]
    assert paths["$ 11,139"] == ["Year Ended December 31,", "2020"]
    assert paths["57 %"] == ["2020 to 2021 % Change"]
    assert paths["54%"] == ["Constant Currency (1)", "2020 to 2021 % Change"]
    adjusted = [c for t in page for c in t.cells if c.text == "$ (2,528)"]
    assert adjusted and adjusted[0].col_path == ["Year Ended December 31,", "2020"]


def test_jhydrol_table1_read_sideways(corpus) -> None:
    tables = _tables(corpus, "papers/jhydrol_2005_flow_duration_curves.pdf")
    assert [t.label for t in tables] == [f"Table {n}" for n in range(1, 6)]
    table = tables[0]
    assert table.page_number == 5
    assert table.caption == "Table 1 Site characteristics for all catchments"
    headers = [c.text for c in table.cells if c.is_col_header]
    assert "Pre-treatment (years)" in headers and "Mean annual rainfall (mm)" in headers
    rain = next(c for c in table.cells if c.text == "1472")
    assert rain.row_path == ["Traralgon Ck (Vic)"]
    assert rain.col_path == ["Mean annual rainfall (mm)"]
    x0, y0, x1, y1 = rain.bbox
    assert y1 - y0 > x1 - x0 and x0 >= 0 and y1 <= 743


def test_wrapped_row_labels_are_one_label() -> None:
    """A label that runs onto a second line stays one label, on the row with its values:
    values on the first line (papers) or on the last (financial statements)."""
    rows: list[Row] = [
        [(62, "Revenue"), (200, "11,139"), (260, "17,455")],
        [(62, "Net loss attributable to")],
        [(62, "Uber Technologies, Inc."), (200, "(6,768)"), (260, "(496)")],
        [(62, "Dense retrieval with"), (200, "78.4"), (260, "79.8")],
        [(62, "hard negatives")],
        [(62, "Adjusted EBITDA"), (200, "(2,528)"), (260, "(774)")],
    ]
    header = [[(62, "Method"), (200, "2020"), (260, "2021")]]
    doc = _ruled_table("Table 5: Results.", header, rows)
    table = next(t for t in _page_tables(doc) if t.label == "Table 5")
    labels = [c.text for c in table.cells if c.is_row_header]
    assert labels == [
        "Revenue",
        "Net loss attributable to Uber Technologies, Inc.",
        "Dense retrieval with hard negatives",
        "Adjusted EBITDA",
    ]
    assert _cell(table, "(496)").row_path == ["Net loss attributable to Uber Technologies, Inc."]
    assert _cell(table, "79.8").row_path == ["Dense retrieval with hard negatives"]


# ---------------------------------------------------------------------------------------------
# Header lines outside the detected table box


def _centred(page: pymupdf.Page, text: str, x0: float, x1: float, y: float) -> None:
    """Text centred over the x range (a group header over its sub-headers)."""
    width = pymupdf.get_text_length(text, fontsize=9)
    page.insert_text(((x0 + x1 - width) / 2, y), text, fontsize=9)


def test_group_headers_above_a_ruled_body_head_their_columns() -> None:
    """Group headers over sub-headers set above the rule that opens the body belong to the
    table: each value's column path reads group, then sub-header; the stub column and the
    ungrouped last column keep paths of their own."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 60), "Table 3: Fruit sold by region.", fontsize=10)
    _centred(page, "North", 190, 265, 84)
    _centred(page, "South", 290, 365, 84)
    leaves: Row = [(62, "Region"), (190, "Apples"), (240, "Pears")]
    leaves += [(290, "Apples"), (340, "Pears"), (400, "Total")]
    _draw_rows(page, [leaves], 96)
    _rule(page, 101, x1=430)
    body = [
        [(62, f"Town {i}"), (192, f"{i}0"), (242, f"{i}1"), (292, f"{i}2"), (342, f"{i}3")]
        + [(402, f"9{i}0")]
        for i in range(1, 5)
    ]
    y = _draw_rows(page, body, 113)
    _rule(page, y - 6, x1=430)
    table = next(t for t in _page_tables(doc) if t.label == "Table 3")
    assert table.n_cols == 6 and table.header_rows == 2
    assert _cell(table, "23").col_path == ["South", "Pears"]
    assert _cell(table, "23").row_path == ["Town 2"]
    assert _cell(table, "40").col_path == ["North", "Apples"]
    assert _cell(table, "920").col_path == ["Total"]
    assert table.bbox[1] < 76  # the box holds the group headers


def test_header_above_the_top_rule_is_the_tables_header() -> None:
    """A header row printed above the rule that opens a ruled body (caption below the table,
    as ACL papers set it) is the table's header, not text around it."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = _draw_rows(page, [DATASET_HEADER], 80)
    _rule(page, y - 8)
    y = _draw_rows(page, _body(), y + 2)
    _rule(page, y - 6)
    page.insert_text((60, y + 12), "Table 4: Sizes of the datasets.", fontsize=10)
    table = next(t for t in _page_tables(doc) if t.label == "Table 4")
    assert table.header_rows == 1 and table.n_cols == 4
    assert _cell(table, "21.5").col_path == ["Words"]
    assert _cell(table, "12").col_path == ["Docs"]
    assert _cell(table, "12").row_path == ["Item 2"]


def test_lone_header_in_the_tables_grid_is_taken() -> None:
    """A header line of one cell ("Counts") above the rule that opens the body belongs to the
    table when the table's vertical rules box it; its sub-headers read under it."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 60), "Table 5: Dataset sizes.", fontsize=10)
    _centred(page, "Counts", 190, 360, 78)
    y = _draw_rows(page, [DATASET_HEADER], 90)
    _rule(page, y - 8)
    y = _draw_rows(page, _body(), y + 2)
    _rule(page, y - 6)
    for x in (60, 180, 360):  # the grid's vertical rules, from the header line down
        page.draw_line((x, 70), (x, y - 6), width=0.6)
    table = next(t for t in _page_tables(doc) if t.label == "Table 5")
    assert table.header_rows == 2
    assert _cell(table, "21.5").col_path == ["Counts", "Words"]
    assert _cell(table, "Item 1").col_path == ["Dataset"]
