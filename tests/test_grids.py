"""Ruled grids from rule boxes: which rules make one, and the cells their crossings close."""

from __future__ import annotations

from docsym.indexer.pdf.grids import find_grids


def test_rules_make_a_grid_whose_cells_span_where_no_rule_parts_them() -> None:
    across = [(0, 0, 300, 1), (200, 40, 300, 41), (0, 80, 300, 81), (0, 120, 300, 121)]
    down = [(0, 0, 1, 120), (100, 0, 101, 120), (200, 0, 201, 120), (250, 40, 251, 120)]
    down.append((300, 0, 301, 120))
    underline = [(500, 60, 560, 61)]  # touches nothing: no grid
    (grid,) = find_grids([*across, *down, *underline])
    spans = {(c.row, c.col): (c.row_span, c.col_span) for c in grid.cells}
    # the header over two columns; the cell left of it over two rows; the body one by one
    assert spans == {
        (0, 0): (2, 1),
        (0, 1): (2, 1),
        (0, 2): (1, 2),
        (1, 2): (1, 1),
        (1, 3): (1, 1),
        (2, 0): (1, 1),
        (2, 1): (1, 1),
        (2, 2): (1, 1),
        (2, 3): (1, 1),
    }
