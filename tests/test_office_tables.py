"""Spreadsheet tables: merged and multi-level headers, titles as captions, nested row groups.

Expected cell values are read from the workbooks with openpyxl at the coordinates named here;
the parser under test has to find the same cell by its header paths.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from docsym.indexer.model import ParsedDocument, Table, TableCell
from docsym.indexer.office import parse_xlsx
from docsym.indexer.office.xlsx import display_text
from tests.conftest import CORPUS

NESTLE = CORPUS / "office" / "2023-half-year-analyses-by-segment.xlsx"
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
