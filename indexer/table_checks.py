"""How far a table's structure can be trusted: a confidence and the doubts behind it.

A wrong header path gives a confident wrong answer, so every table carries what its grid says
about itself: values without a column header, columns whose cells disagree on being numbers,
header paths shared by several columns (a lookup cannot tell them apart), rows that fill only
a corner of the grid. Extractors add doubts only they can see (a table found from rows of
numbers with no caption, one read from a sideways page). ``get_table`` shows both, so a client
knows when to check the page with ``view_page``.
"""

from __future__ import annotations

from collections import Counter

from docsym.indexer.model import Table, TableCell
from docsym.indexer.table_model import is_data_text

# What each doubt costs; confidence is 1 minus the sum, never below FLOOR.
COST = {
    "no header": 0.3,
    "values without a column header": 0.3,
    "mixed columns": 0.2,
    "shared column paths": 0.2,
    "sparse rows": 0.15,
    "no caption": 0.1,
    "read sideways": 0.1,
}
FLOOR = 0.1


def check_structure(table: Table, extra: list[str] | None = None) -> Table:
    """Set the table's doubts (plain sentences, each starting with a COST key) and its
    confidence. ``extra`` holds the extractor's own doubts."""
    doubts = [*_grid_doubts(table), *(extra or [])]
    cost = sum(COST[key] for doubt in doubts for key in COST if doubt.startswith(key))
    table.doubts = doubts
    table.confidence = round(max(FLOOR, 1.0 - cost), 2)
    return table


def _grid_doubts(table: Table) -> list[str]:
    if table.n_cols < 2 or table.n_rows < 2:
        return []  # a box of text: no paths to get wrong
    data = [c for c in table.cells if not (c.is_col_header or c.is_row_header) and c.text]
    doubts: list[str] = []
    if table.header_rows == 0:
        doubts.append("no header row: cells have no column path")
    orphans = [c for c in data if not c.col_path]
    if table.header_rows and orphans:
        doubts.append(f"values without a column header: {len(orphans)} of {len(data)} cells")
    mixed = _mixed_columns(data)
    if mixed:
        doubts.append(f"mixed columns: numbers and text share column(s) {mixed}")
    shared = _shared_paths(data)
    if shared:
        doubts.append(f"shared column paths: {shared} name more than one column")
    sparse = _sparse_rows(table)
    if sparse:
        doubts.append(f"sparse rows: {sparse} body rows fill under a third of the columns")
    return doubts


def _mixed_columns(data: list[TableCell]) -> list[int]:
    """Value columns (most cells numbers) holding several cells of words: columns misread."""
    by_col: dict[int, list[TableCell]] = {}
    for cell in data:
        by_col.setdefault(cell.col, []).append(cell)
    mixed = []
    for col, cells in sorted(by_col.items()):
        values = sum(is_data_text(c.text) for c in cells)
        words = len(cells) - values
        if values >= 3 and words >= 2 and words * 4 >= len(cells):
            mixed.append(col)
    return mixed


def _shared_paths(data: list[TableCell]) -> list[str]:
    """Column paths that more than one grid column carries."""
    columns: dict[tuple[str, ...], set[int]] = {}
    for cell in data:
        if cell.col_path:
            columns.setdefault(tuple(cell.col_path), set()).add(cell.col)
    return [" › ".join(path) for path, cols in columns.items() if len(cols) > 1][:3]


def _sparse_rows(table: Table) -> int:
    """Body rows with text in under a third of the columns (wrapped lines read as rows)."""
    filled: Counter[int] = Counter()
    for cell in table.cells:
        if cell.row >= table.header_rows and cell.text.strip():
            filled[cell.row] += cell.col_span
    labels_only = {c.row for c in table.cells if c.col == 0 and c.text.strip()}
    for cell in table.cells:
        if cell.col > 0 and cell.text.strip():
            labels_only.discard(cell.row)
    body = range(table.header_rows, table.n_rows)
    # a label alone in the first column names a section of rows; it is not a broken row
    sparse = sum(1 for r in body if r not in labels_only and 0 < filled[r] * 3 < table.n_cols)
    return sparse if sparse * 5 >= len(body) and sparse >= 2 else 0
