"""Tables read from a scanned page's ruled grids: cells from the rules, text from the OCR words.

A scan's ruled grid (``indexer.pdf.grids``) already draws every cell, spanning headers
included, so its table is read from the rules rather than from how the words line up: each
word goes to the cell its middle lies in, and ``finish_table`` derives header depths and paths
from where the values start.
"""

from __future__ import annotations

from docsym.indexer.model import BBox, Table, TableCell
from docsym.indexer.pdf.grids import Grid, GridCell
from docsym.indexer.pdf.layout import DocumentLayout, PageLayout, page_words
from docsym.indexer.table_checks import check_structure
from docsym.indexer.table_model import finish_table

# Words whose middles are closer than this share of their height are on one line of a cell.
SAME_LINE_SHARE = 0.5
NO_CAPTION = "no caption: found from its ruled grid in the scan"


def with_grid_tables(page: PageLayout, found: list[Table], layout: DocumentLayout) -> list[Table]:
    """The page's tables: one for each ruled grid of a scanned page that holds text in two rows
    and two columns, and those ``found`` otherwise outside them. A table found over a grid lends
    it its caption."""
    if not page.grids:
        return found
    words = page_words(page.page)
    read = [t for grid in page.grids if (t := _grid_table(page, grid, words, layout))]
    for table in read:
        captioned = [t for t in found if t.label and _overlaps(t.bbox, table.bbox)]
        if captioned:
            table.label, table.caption = captioned[0].label, captioned[0].caption
            check_structure(table)  # its doubts again, without NO_CAPTION
    return [*read, *(t for t in found if not any(_overlaps(t.bbox, g.bbox) for g in read))]


def _grid_table(
    page: PageLayout, grid: Grid, words: list[tuple], layout: DocumentLayout
) -> Table | None:
    cells = [
        TableCell(
            row=cell.row,
            col=cell.col,
            row_span=cell.row_span,
            col_span=cell.col_span,
            text=_cell_text(cell, words),
            bbox=cell.bbox,
        )
        for cell in grid.cells
    ]
    filled = [c for c in cells if c.text]  # an empty cell is left out, as the PDF reader does
    if len({c.row for c in filled}) < 2 or len({c.col for c in filled}) < 2:
        return None  # a framed box of text, not a table
    table = finish_table(
        filled,
        ordinal=0,
        page_number=page.number,
        bbox=grid.bbox,
        seq=layout.seq_at(page.number, grid.bbox),
    )
    return check_structure(table, [NO_CAPTION])


def _cell_text(cell: GridCell, words: list[tuple]) -> str:
    """The words inside the cell, line by line, each line left to right."""
    inside = sorted((w for w in words if cell.holds(w[:4])), key=lambda w: (w[1] + w[3]) / 2)
    lines: list[list[tuple]] = []
    for word in inside:
        middle, height = (word[1] + word[3]) / 2, word[3] - word[1]
        last = lines[-1][-1] if lines else None
        if last is not None and abs((last[1] + last[3]) / 2 - middle) < SAME_LINE_SHARE * height:
            lines[-1].append(word)
        else:
            lines.append([word])
    return " ".join(w[4] for line in lines for w in sorted(line, key=lambda w: w[0]))


def _overlaps(a: BBox | None, b: BBox | None) -> bool:
    if a is None or b is None:
        return False
    return min(a[2], b[2]) - max(a[0], b[0]) > 2 and min(a[3], b[3]) - max(a[1], b[1]) > 2
