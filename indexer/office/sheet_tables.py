"""A worksheet's cells -> its tables, their captions, and the text around them.

A sheet is rarely one clean grid: reports put title rows above a table, footnotes below it, and
sometimes two tables one under the other (Nestlé: January–June 2023, then 2022). The sheet is
cut into *bands*, runs of rows with at most one blank row between them. In a band, the rows
from the first to the last row with two or more filled cells are the table; the single-cell rows
above it are its caption (the merged title rows), those below it its footnotes. A band is cut
again where, after numeric rows and a blank row, a row of labels starts a new header.

Then, per table: blank spacer columns are dropped, the header depth is where the body starts (a
row of numbers, or a row labelling a group of rows), and a label right-aligned over empty header
cells (Excel's way of setting "January–June 2023" over all the columns of a period) is widened
over them, so that it lands in those columns' paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

from docsym.indexer.model import TableCell
from docsym.indexer.office.blocks import Paragraph, TableBlock
from docsym.indexer.office.table_grid import row_cells
from docsym.indexer.office.table_paths import apply_column_dividers, nest_row_groups
from docsym.indexer.table_model import (
    Grid,
    infer_header_cols,
    infer_header_rows,
    occupancy,
    parse_number,
)

_YEAR = re.compile(r"^(19|20)\d\d$")
MAX_GAP = 1  # blank rows allowed inside a band
MAX_TITLE_ROWS = 3  # a longer run of text above a table is not its title


@dataclass
class SheetCell:
    """A filled cell (or the top-left cell of a merged range) at its sheet position, 1-based."""

    row: int
    col: int
    text: str
    address: str | None = None  # its A1 address ("C7"), which a reader of the sheet cites
    row_span: int = 1
    col_span: int = 1
    align: str | None = None  # horizontal alignment
    indent: float = 0.0


def sheet_blocks(cells: list[SheetCell], page: int) -> list[TableBlock | Paragraph]:
    """Tables (with captions) and paragraphs of one sheet, in sheet order."""
    by_row: dict[int, list[SheetCell]] = {}
    for cell in cells:
        by_row.setdefault(cell.row, []).append(cell)
    out: list[TableBlock | Paragraph] = []
    previous: TableBlock | None = None
    titles: list[int] = []  # a short text-only band right above: part of the next title
    for band in _bands(sorted(by_row)):
        multi = [r for r in band if len(by_row[r]) >= 2]
        if not multi:  # text only; it may also be the title of the table below
            out.extend(_paragraphs(band, by_row, page))
            titles = band if len(band) <= MAX_TITLE_ROWS else []
            continue
        head = [r for r in band if r < multi[0]]
        tail = [r for r in band if r > multi[-1]]
        own = "\n".join(_row_text(by_row[r]) for r in [*titles, *head]) or None
        titles = []
        for rows in _split_tables([r for r in band if multi[0] <= r <= multi[-1]], by_row):
            table = _table(rows, by_row, page, own)
            if table is None:
                continue
            if own is None and previous is not None and _continues(table, previous):
                table.caption = previous.caption  # same headers: the same titles apply
            out.append(table)
            previous, own = table, None
        out.extend(_paragraphs(tail, by_row, page))
    return out


def _continues(table: TableBlock, previous: TableBlock) -> bool:
    """A table with (mostly) the same column labels as the one before it continues it (the
    Nestlé 2022 block under the 2023 one)."""
    mine, theirs = _header_texts(table), _header_texts(previous)
    return bool(mine) and len(mine & theirs) * 2 >= len(mine)


def _header_texts(table: TableBlock) -> set[str]:
    rows = table.header_rows or 0
    return {" ".join(c.text.split()) for c in table.cells if c.row < rows and c.col > 0}


def _bands(rows: list[int]) -> list[list[int]]:
    bands: list[list[int]] = []
    for r in rows:
        if bands and r - bands[-1][-1] - 1 <= MAX_GAP:
            bands[-1].append(r)
        else:
            bands.append([r])
    return bands


def _split_tables(rows: list[int], by_row: dict[int, list[SheetCell]]) -> list[list[int]]:
    """Cut where a header row follows numeric rows after a blank row."""
    tables: list[list[int]] = [[]]
    seen_numbers = False
    for i, r in enumerate(rows):
        after_gap = i > 0 and r - rows[i - 1] > 1
        labels_only = len(by_row[r]) >= 2 and not _has_numbers(by_row[r])
        numbers_follow = any(_has_numbers(by_row[x]) for x in rows[i + 1 :])
        if seen_numbers and after_gap and labels_only and numbers_follow:
            tables.append([])
            seen_numbers = False
        tables[-1].append(r)
        seen_numbers = seen_numbers or _has_numbers(by_row[r])
    return [t for t in tables if t]


def _table(
    rows: list[int], by_row: dict[int, list[SheetCell]], page: int, caption: str | None
) -> TableBlock | None:
    members = [c for r in rows for c in by_row[r]]
    columns = sorted({c.col for c in members})
    if len(columns) < 2:
        return None
    row_index = {r: i for i, r in enumerate(rows)}
    col_index = {c: i for i, c in enumerate(columns)}
    cells: list[TableCell] = []
    for c in members:
        cells.append(
            TableCell(
                row=row_index[c.row],
                col=col_index[c.col],
                row_span=_span(c.row, c.row_span, row_index),
                col_span=_span(c.col, c.col_span, col_index),
                text=c.text,
                address=c.address,
            )
        )
    grid = occupancy(cells)
    header_rows = _header_rows(grid)
    header_cols = infer_header_cols(grid, header_rows)
    _widen_banners(grid, cells, members, header_rows, header_cols)
    indents = {row_index[c.row]: c.indent for c in members if col_index[c.col] == 0}
    return TableBlock(
        cells,
        page=page,
        caption=caption,
        header_rows=header_rows,
        header_cols=header_cols,
        post=[partial(nest_row_groups, indents=indents), apply_column_dividers],
    )


def _span(start: int, span: int, index: dict[int, int]) -> int:
    """A merged range's span counted in kept rows/columns (blank spacers dropped)."""
    return max(sum(1 for x in range(start, start + span) if x in index), 1)


def _header_rows(grid: Grid) -> int:
    """Rows above the body: the first row of numbers, or the first row that only labels a
    group of rows ("Sex" over "Female", "Male"); finish_table's inference takes such a group
    row for a header row."""
    for r in range(len(grid)):
        cells = row_cells(grid, r)
        values = [c for c in cells if c.col > 0]
        numeric = [c for c in values if parse_number(c.text)[0] is not None]
        years = all(_YEAR.match(c.text.strip()) for c in numeric)
        if values and numeric and len(numeric) * 2 >= len(values) and not years:
            return r
        if r > 0 and cells and not values:
            return r
    return infer_header_rows(grid)


def _widen_banners(
    grid: Grid,
    cells: list[TableCell],
    members: list[SheetCell],
    header_rows: int,
    header_cols: int,
) -> None:
    """Widen a right-aligned header label over the empty header cells to its left (and a
    "center across selection" label over those to its right), within the data columns."""
    for cell, source in zip(cells, members, strict=True):
        if cell.row >= header_rows - 1 or cell.col < header_cols or cell.col_span > 1:
            continue
        row = grid[cell.row]
        if source.align == "right":
            while cell.col - 1 >= header_cols and row[cell.col - 1] is None:
                cell.col -= 1
                cell.col_span += 1
                row[cell.col] = cell
        elif source.align == "centerContinuous":
            while cell.col + cell.col_span < len(row) and row[cell.col + cell.col_span] is None:
                row[cell.col + cell.col_span] = cell
                cell.col_span += 1


def _paragraphs(rows: list[int], by_row: dict[int, list[SheetCell]], page: int) -> list:
    return [Paragraph(_row_text(by_row[r]), page=page) for r in rows]


def _row_text(cells: list[SheetCell]) -> str:
    return " ".join(c.text for c in sorted(cells, key=lambda c: c.col))


def _has_numbers(cells: list[SheetCell]) -> bool:
    return any(
        parse_number(c.text)[0] is not None and not _YEAR.match(c.text.strip()) for c in cells
    )
