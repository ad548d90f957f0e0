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
from docsym.indexer.table_model import Grid, infer_header_rows, occupancy, parse_number


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
