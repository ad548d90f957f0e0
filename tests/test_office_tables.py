"""Office tables: spreadsheets' merged and multi-level headers, titles as captions, nested row
groups and cell addresses; filings' currency and sign columns joined to their numbers.

Expected cell values are read from the workbooks with openpyxl at the coordinates named here;
the parser under test has to find the same cell by its header paths.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from docsym.indexer.model import ParsedDocument, Table, TableCell
from docsym.indexer.office import parse_docx, parse_html, parse_xlsx
from docsym.indexer.office.xlsx import display_text
from tests.conftest import CORPUS

NESTLE = CORPUS / "office" / "2023-half-year-analyses-by-segment.xlsx"
TENK = CORPUS / "office" / "example-10k.html"
HITAB = CORPUS / "tables" / "hitab"


def _parse(path: Path) -> ParsedDocument:
    if not path.is_file():
        pytest.skip(f"{path} not found (set DOCSYM_CORPUS)")
    return parse_xlsx(path)


@pytest.fixture(scope="module")
def nestle() -> ParsedDocument:
    return _parse(NESTLE)


@pytest.fixture(scope="module")
def hitab() -> dict[int, ParsedDocument]:
    return {n: _parse(HITAB / f"statcan_annotation_{n}.xlsx") for n in (1, 25, 34)}


def _sheet_value(path: Path, sheet: str, coordinate: str) -> str:
    workbook = openpyxl.load_workbook(path, data_only=True)
    cell = workbook[sheet][coordinate]
    return display_text(cell.value, cell.number_format)


def _cell(table: Table, row_path: list[str], col_path: list[str]) -> TableCell:
    found = [
        c
        for c in table.cells
        if c.row_path == row_path and c.col_path == col_path and not c.is_row_header
    ]
    assert len(found) == 1, (row_path, col_path, len(found))
    return found[0]


def _main_table(parsed: ParsedDocument, sheet_number: int) -> Table:
    """The first table of the sheet (annotation notes follow it in the HiTab files)."""
    return next(t for t in parsed.tables if t.page_number == sheet_number)


def test_sheets_are_pages_and_sections(nestle: ParsedDocument) -> None:
    names = openpyxl.load_workbook(NESTLE, read_only=True).sheetnames
    assert [p.number for p in nestle.pages] == list(range(1, len(names) + 1))
    assert [s.title for s in nestle.sections] == names
    assert all(s.level == 1 and s.page_start == s.page_end for s in nestle.sections)
    assert all(p.width is None and p.text for p in nestle.pages)


def test_nestle_title_rows_become_the_caption_not_header_levels(nestle: ParsedDocument) -> None:
    first, second = (t for t in nestle.tables if t.page_number == 1)
    assert first.caption.splitlines() == [
        _sheet_value(NESTLE, "OS-Rev.and results 30 06 2023", c) for c in ("A1", "A3", "A4")
    ]
    assert first.header_rows == 2 and first.header_cols == 1
    # The 2022 block below has no title rows of its own: the same titles apply.
    assert second.caption == first.caption


@pytest.mark.parametrize(
    ("table_index", "period_cell", "value_cell"),
    [(0, "J6", "D10"), (1, "J21", "D25")],
)
def test_nestle_cells_by_period_and_measure(
    nestle: ParsedDocument, table_index: int, period_cell: str, value_cell: str
) -> None:
    sheet = "OS-Rev.and results 30 06 2023"
    table = [t for t in nestle.tables if t.page_number == 1][table_index]
    period = " ".join(_sheet_value(NESTLE, sheet, period_cell).split())
    # The right-aligned period label covers every data column, so it is in each col_path.
    cell = _cell(table, ["Zone EUR"], [period, "Trading operating profit"])
    assert cell.text == _sheet_value(NESTLE, sheet, value_cell)
    assert cell.value == float(cell.text.replace(",", ""))


def test_nestle_periods_over_column_pairs(nestle: ParsedDocument) -> None:
    sheet = "OS-Other information 30 06 2023"
    table = _main_table(nestle, 2)
    label = "Impairment of intangible assets (d)"
    for period_cell, value_cell in (("C6", "C14"), ("F6", "F14")):
        period = " ".join(_sheet_value(NESTLE, sheet, period_cell).split())
        cell = _cell(table, ["Nestlé Health Science"], [period, label])
        assert cell.text == _sheet_value(NESTLE, sheet, value_cell)


def test_sheets_are_labelled_with_their_names(nestle: ParsedDocument) -> None:
    """A sheet is cited by its name, as a PDF page by its printed number."""
    names = openpyxl.load_workbook(NESTLE, read_only=True).sheetnames
    assert [p.label for p in nestle.pages] == names


def test_spreadsheet_cells_keep_their_a1_address(nestle: ParsedDocument) -> None:
    """The address is the sheet's own (row 10 of the sheet, not the table grid's row), so the
    value read there with openpyxl is the cell's text."""
    sheet = "OS-Rev.and results 30 06 2023"
    first = _main_table(nestle, 1)
    cell = next(c for c in first.cells if c.row_path == ["Zone EUR"] and c.value is not None)
    assert cell.address == "B10"
    assert cell.text == _sheet_value(NESTLE, sheet, "B10")
    assert all(c.address for t in nestle.tables for c in t.cells)
    # A merged title cell keeps its top-left address; a header its own.
    assert next(c for c in first.cells if c.text.startswith("January")).address == "J6"
    assert next(c for c in first.cells if c.text == "Sales (a)").address == "B7"


# A filing's table as SEC filings set it: "$", ")" and "%" in cells of their own, each year's
# header spanning its signs and its number. Rows of (text, columns spanned).
FILING_ROWS = [
    [("", 1), ("2021", 3), ("2020", 3), ("Change", 2)],
    [("Licensing fees", 1), *[(t, 1) for t in ("$", "17,455", "", "$", "15,020", "", "16.2", "%")]],
    [("Refunds", 1), *[(t, 1) for t in ("", "(1,020", ")", "", "(311", ")", "(228", "%)")]],
    [("Total revenue", 1), *[(t, 1) for t in ("$", "16,435", "", "$", "14,709", "", "11.7", "%")]],
]


def _filing_html(path: Path, rows: list[list[tuple[str, int]]]) -> None:
    body = "".join(
        "<tr>" + "".join(f'<td colspan="{n}">{t}</td>' for t, n in row) + "</tr>" for row in rows
    )
    path.write_text(f"<html><body><p>Revenue by year.</p><table>{body}</table></body></html>")


def _filing_docx(path: Path, rows: list[list[tuple[str, int]]]) -> None:
    from docx import Document

    document = Document()
    document.add_paragraph("Revenue by year.")
    table = document.add_table(rows=len(rows), cols=sum(n for _, n in rows[0]))
    for r, row in enumerate(rows):
        col = 0
        for text, span in row:
            cell = table.cell(r, col).merge(table.cell(r, col + span - 1)) if span > 1 else None
            (cell or table.cell(r, col)).text = text
            col += span
    document.save(str(path))


FILINGS = {"html": (_filing_html, parse_html), "docx": (_filing_docx, parse_docx)}


def _column_headers(table: Table) -> list[str]:
    """The header text over each grid column, levels joined (as get_table's markdown)."""
    heads = [c for c in table.cells if c.is_col_header and c.text.strip()]
    return [
        " / ".join(c.text for c in heads if c.col <= col < c.col + c.col_span)
        for col in range(table.n_cols)
    ]


@pytest.mark.parametrize("fmt", sorted(FILINGS))
def test_sign_columns_are_joined_to_their_numbers(tmp_path: Path, fmt: str) -> None:
    write, parse = FILINGS[fmt]
    path = tmp_path / f"filing.{fmt}"
    write(path, FILING_ROWS)
    (table,) = parse(path).tables
    assert _column_headers(table) == ["", "2021", "2020", "Change"]
    assert _cell(table, ["Licensing fees"], ["2021"]).text == "$ 17,455"
    refunds = _cell(table, ["Refunds"], ["2020"])
    assert (refunds.text, refunds.value) == ("(311)", -311)
    change = _cell(table, ["Refunds"], ["Change"])
    assert (change.text, change.value, change.unit) == ("(228%)", -228, "%")
    total = _cell(table, ["Total revenue"], ["2021"])
    assert (total.value, total.unit) == (16435, "$")


def test_sign_columns_stay_when_a_word_shares_them(tmp_path: Path) -> None:
    """A column of "$" and a word is not a sign column: it stays; the others are joined."""
    path = tmp_path / "filing.html"
    rows = [list(row) for row in FILING_ROWS]
    rows[3][1] = ("USD", 1)
    _filing_html(path, rows)
    (table,) = parse_html(path).tables
    assert _column_headers(table) == ["", "2021", "2021", "2020", "Change"]
    assert _cell(table, ["Licensing fees"], ["2020"]).text == "$ 15,020"


def test_10k_revenue_table_has_one_column_per_year() -> None:
    """Galaxy Gaming's revenue by region: "$" stood in columns of its own under the years, so
    "2021" and "2020" each named two columns."""
    if not TENK.is_file():
        pytest.skip(f"{TENK} not found (set DOCSYM_CORPUS)")
    raw = TENK.read_text(encoding="utf-8", errors="replace")
    assert "19,984,378" in raw and "10,230,316" in raw
    tenk = parse_html(TENK)
    table = next(
        t
        for t in tenk.tables
        if any(c.text == "North America and Caribbean" for c in t.cells)
        and any(c.text == "Total revenue" for c in t.cells)
    )
    headers = [h for h in _column_headers(table) if h]
    assert headers == ["2021", "2020"]
    total = _cell(table, ["Total revenue"], ["2021"])
    assert (total.text, total.value, total.unit) == ("$ 19,984,378", 19984378, "$")
    assert _cell(table, ["Total revenue"], ["2020"]).text == "$ 10,230,316"
    assert not [d for d in table.doubts if d.startswith("shared column paths")]
    # The balance sheet, income and cash flow statements alike: no sign is left alone.
    alone = [c.text for t in tenk.tables for c in t.cells if c.text in ("$", ")", "%")]
    assert alone == []


@pytest.mark.parametrize(("number", "rows", "cols"), [(1, 3, 1), (25, 4, 2), (34, 3, 1)])
def test_hitab_header_depths(hitab, number: int, rows: int, cols: int) -> None:
    table = _main_table(hitab[number], 2)  # sheet "original"
    assert (table.header_rows, table.header_cols) == (rows, cols)
    assert table.label.startswith("Table ")


def test_hitab_grouped_rows_and_three_level_columns(hitab) -> None:
    path = HITAB / "statcan_annotation_1.xlsx"
    table = _main_table(hitab[1], 2)
    cell = _cell(
        table,
        ["Sex", "Female"],
        ["Agricultural region 3", "English-language workers", "percent"],
    )
    assert cell.text == _sheet_value(path, "original", "E7")
    married = _cell(
        table,
        ["Marital Status", "Married"],
        ["Agricultural region 1", "French-language workers", "percent"],
    )
    assert married.text == _sheet_value(path, "original", "B11")


def test_hitab_nested_row_groups_follow_indentation(hitab) -> None:
    path = HITAB / "statcan_annotation_34.xlsx"
    table = _main_table(hitab[34], 2)
    for group, coordinate in (("Including fruit juice", "B9"), ("Excluding fruit juice", "B35")):
        cell = _cell(table, [group, "Sex", "Male"], ["2007", "Average times/day"])
        assert cell.text == _sheet_value(path, "original", coordinate)


def test_hitab_four_level_header_and_year_divider(hitab) -> None:
    path = HITAB / "statcan_annotation_25.xlsx"
    table = _main_table(hitab[25], 2)
    path_2004 = ["2004", "Under-reporters", "95% confidence interval", "To"]
    assert _cell(table, ["9 to 13", "Female"], path_2004).text == _sheet_value(
        path, "original", "E11"
    )
    # The "2015" row spans the columns of "2004": the rows under it belong to 2015.
    path_2015 = ["2015", "Under-reporters", "95% confidence interval", "To"]
    assert _cell(table, ["9 to 13", "Female"], path_2015).text == _sheet_value(
        path, "original", "E27"
    )
    divider = next(c for c in table.cells if c.text == "2015")
    assert divider.is_col_header and divider.value is None
