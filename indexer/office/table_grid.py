"""Header depths of office tables, decided before ``table_model.finish_table`` completes them.

Formats mark header cells unevenly: HTML ``<th>`` can sit anywhere (an infobox has header rows in
its middle), docling flags only the first row of a PPTX or DOCX table, and a spreadsheet marks
nothing. So the depth passed to ``finish_table`` is: the leading rows whose cells are all flagged
(else ``table_model.infer_header_rows``), extended by one row for each row of sub-headings under a
spanning header (the "Class1 / Class2 over A B C" pattern, whose body holds no numbers).
"""

from __future__ import annotations

from collections.abc import Sequence

from docsym.indexer.model import TableCell
from docsym.indexer.table_model import (
    CURRENCY_SIGNS,
    Grid,
    infer_header_rows,
    occupancy,
    parse_number,
)


def row_cells(grid: Grid, r: int) -> list[TableCell]:
    """The distinct cells that start in row ``r`` and hold text."""
    out: list[TableCell] = []
    for cell in grid[r]:
        if cell is not None and cell.row == r and cell.text.strip() and cell not in out:
            out.append(cell)
    return out


def flagged_header_rows(cells: Sequence[TableCell]) -> int:
    """Leading rows in which every cell with text is flagged as a column header."""
    grid = occupancy(cells)
    depth = 0
    for r in range(len(grid)):
        texts = row_cells(grid, r)
        if not texts or not all(c.is_col_header for c in texts):
            break
        depth = r + 1
    return depth


def flagged_header_cols(cells: Sequence[TableCell], header_rows: int) -> int:
    """Leading columns in which every body cell with text is flagged as a row header."""
    body = [c for c in cells if c.row >= header_rows and c.text.strip()]
    depth = 0
    n_cols = max((c.col + c.col_span for c in cells), default=0)
    for col in range(n_cols):
        column = [c for c in body if c.col == col]
        if not column or not all(c.is_row_header for c in column):
            break
        depth = col + 1
    return depth


def header_depths(cells: Sequence[TableCell]) -> tuple[int, int | None]:
    """(header rows, header cols or None to let finish_table infer it) from flags and shape."""
    grid = occupancy(cells)
    rows = flagged_header_rows(cells) or infer_header_rows(grid)
    cols = flagged_header_cols(cells, rows) or None
    return extend_spanning_header(grid, rows), cols


def extend_spanning_header(grid: Grid, header_rows: int) -> int:
    """Take in rows of sub-headings under a header cell that spans several data columns."""
    while 0 < header_rows < len(grid) - 1:
        last = row_cells(grid, header_rows - 1)
        spans_data = any(c.col_span > 1 and c.col > 0 for c in last)
        following = row_cells(grid, header_rows)
        if not spans_data or len(following) < 2 or any(c.col == 0 for c in following):
            break
        if any(parse_number(c.text)[0] is not None for c in following):
            break
        header_rows += 1
    return header_rows


# Signs that filings (SEC 10-K HTML) set in a column of their own beside the number they belong
# to: "$" | "19,984,378", "(1,234" | ")", "12.5" | "%". Before the number or after it.
_LEADING_SIGNS = CURRENCY_SIGNS | {"("}
_TRAILING_SIGNS = frozenset({"%", ")", "%)", ")%"})


def join_sign_columns(cells: list[TableCell]) -> list[TableCell]:
    """Join each column that holds only such signs to the number column beside it, so a value
    reads whole ("$ 19,984,378") and a header spanning sign and number ("2021" over "$" and
    "19,984,378") names one column, not two."""
    while (found := _sign_column(cells)) is not None:
        column, step = found
        cells = _join_column(cells, column, step)
    return cells


def _sign_column(cells: list[TableCell]) -> tuple[int, int] | None:
    """(a column holding only signs, +1 or -1 towards the numbers they belong to), or None."""
    n_cols = max((c.col + c.col_span for c in cells), default=0)
    starts = {(c.row, c.col): c for c in cells}
    for column in range(n_cols):
        signs = [c for c in cells if c.col == column and c.col_span == 1 and c.text.strip()]
        texts = {c.text.strip() for c in signs}
        if not texts:
            continue
        step = 1 if texts <= _LEADING_SIGNS else -1 if texts <= _TRAILING_SIGNS else 0
        if step and all(_holds_value(starts.get((c.row, column + step))) for c in signs):
            return column, step
    return None


def _holds_value(cell: TableCell | None) -> bool:
    """A one-column cell with a number (its parenthesis maybe still open: "(1,234") or a dash,
    which a sign beside it belongs to."""
    text = cell.text.strip() if cell is not None and cell.col_span == 1 else ""
    if not text:
        return False
    closed = text + ")" if text.count("(") > text.count(")") else text
    return parse_number(closed)[0] is not None or not any(ch.isalnum() for ch in text)


def _join_column(cells: list[TableCell], column: int, step: int) -> list[TableCell]:
    """The grid without ``column``: its signs joined to the neighbouring cell's text, spans
    across it one column narrower, the columns after it one to the left."""
    starts = {(c.row, c.col): c for c in cells}
    kept: list[TableCell] = []
    for cell in cells:
        sign = cell.text.strip()
        if cell.col == column and cell.col_span == 1:
            if sign:
                owner = starts[(cell.row, column + step)]
                owner.text = (
                    f"{sign} {owner.text}"
                    if sign in CURRENCY_SIGNS
                    else (f"{sign}{owner.text}" if step > 0 else f"{owner.text}{sign}")
                )
            continue
        if cell.col > column:
            cell.col -= 1
        elif cell.col + cell.col_span > column:
            cell.col_span -= 1
        kept.append(cell)
    return kept
