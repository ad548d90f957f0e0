"""Ruled grids: the boxes that ruled lines crossing each other close, and the cells inside.

A scan's ruled lines (found by ``indexer.ocr.engine`` and drawn on the page) say where a table
is before any text is read: text inside a grid belongs to its cells, not to the page's columns
(a wide table would otherwise be read left half, then right half), and the table reader takes
its cells from the rules rather than from how the words line up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pymupdf

from docsym.indexer.model import BBox

# Rules this close (points) touch: a scan's rules stop a little short of each other.
TOUCH = 3.0
# Rule positions this close (points) are one line of the grid (a rule found twice, a thick one).
SAME_LINE = 4.0


@dataclass(frozen=True, slots=True)
class GridCell:
    """One box the rules close: the grid rows and columns it covers, and where it is."""

    row: int
    col: int
    row_span: int
    col_span: int
    bbox: BBox

    def holds(self, box: BBox) -> bool:
        return _holds(self.bbox, box)


@dataclass(frozen=True, slots=True)
class Grid:
    """Crossing rules that close at least one box: two across and two down."""

    bbox: BBox
    across: tuple[BBox, ...]  # horizontal rules, top to bottom
    down: tuple[BBox, ...]  # vertical rules, left to right
    cells: tuple[GridCell, ...]  # top to bottom, left to right

    def holds(self, box: BBox) -> bool:
        """Whether the middle of ``box`` lies inside the grid."""
        return _holds(self.bbox, box)

    def cell_order(self, box: BBox) -> tuple[int, int, float, float]:
        """Sort key reading a grid cell by cell (a cell spanning rows comes in its top row),
        and inside a cell top to bottom."""
        cell = next((c for c in self.cells if c.holds(box)), None)
        if cell is None:  # outside every cell (on a rule): after the grid's cells
            return len(self.cells), 0, box[1], box[0]
        return cell.row, cell.col, box[1], box[0]


def find_grids(rules: Iterable[BBox]) -> list[Grid]:
    """The grids the rules make: rules joined by touching, kept where two across and two down
    rules meet (an underline or a lone booktabs rule is no grid)."""
    rules = list(rules)
    across = [r for r in rules if r[2] - r[0] >= r[3] - r[1]]
    down = [r for r in rules if r[2] - r[0] < r[3] - r[1]]
    groups = _touching_groups([*across, *down])
    grids = []
    for group in groups:
        rows = sorted((r for r in group if r in across), key=lambda r: _middle(r, 1))
        cols = sorted((r for r in group if r in down), key=lambda r: _middle(r, 0))
        if len(rows) >= 2 and len(cols) >= 2:
            box = (
                min(r[0] for r in group),
                min(r[1] for r in group),
                max(r[2] for r in group),
                max(r[3] for r in group),
            )
            grids.append(Grid(box, tuple(rows), tuple(cols), _cells(rows, cols)))
    return grids


def _cells(across: list[BBox], down: list[BBox]) -> tuple[GridCell, ...]:
    """The boxes the rules close. Between each pair of neighbouring rule positions lies a row
    (or column) of the grid; two neighbouring slots are one cell where no rule parts them (a
    spanning header has no rule under it or between its columns)."""
    ys, xs = grid_lines(across, 1), grid_lines(down, 0)
    slots = [(r, c) for r in range(len(ys) - 1) for c in range(len(xs) - 1)]
    parent = {slot: slot for slot in slots}
    for r, c in slots:
        cx, cy = (xs[c] + xs[c + 1]) / 2, (ys[r] + ys[r + 1]) / 2
        if c + 2 < len(xs) and not _ruled(down, 0, xs[c + 1], cy):
            _join(parent, (r, c), (r, c + 1))
        if r + 2 < len(ys) and not _ruled(across, 1, ys[r + 1], cx):
            _join(parent, (r, c), (r + 1, c))
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for slot in slots:
        groups.setdefault(_root(parent, slot), []).append(slot)
    cells = []
    for members in groups.values():
        r0, c0 = min(r for r, _ in members), min(c for _, c in members)
        r1, c1 = max(r for r, _ in members), max(c for _, c in members)
        box = (xs[c0], ys[r0], xs[c1 + 1], ys[r1 + 1])
        cells.append(GridCell(r0, c0, r1 - r0 + 1, c1 - c0 + 1, box))
    return tuple(sorted(cells, key=lambda cell: (cell.row, cell.col)))


def _ruled(rules: list[BBox], axis: int, at: float, across_at: float) -> bool:
    """Whether a rule lies at ``at`` along ``axis`` and reaches ``across_at`` the other way."""
    other = 1 - axis
    return any(
        abs(_middle(r, axis) - at) < SAME_LINE
        and r[other] - TOUCH <= across_at <= r[other + 2] + TOUCH
        for r in rules
    )


def _root(parent: dict, item: object) -> object:
    while parent[item] != item:
        parent[item] = parent[parent[item]]
        item = parent[item]
    return item


def _join(parent: dict, a: object, b: object) -> None:
    parent[_root(parent, a)] = _root(parent, b)


def _holds(outer: BBox, box: BBox) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def drawn_rules(page: pymupdf.Page) -> list[BBox]:
    """The straight lines drawn on a page, as boxes: on an OCR page, the scan's ruled lines
    (``indexer.ocr.text_layer`` draws each as one line along its middle)."""
    return [
        (min(p.x, q.x), min(p.y, q.y), max(p.x, q.x), max(p.y, q.y))
        for drawing in page.get_drawings()
        for kind, p, q, *_ in drawing["items"]
        if kind == "l"
    ]


def grid_lines(rules: Iterable[BBox], axis: int) -> list[float]:
    """Distinct positions of the rules along ``axis`` (0: x of vertical rules, 1: y of
    horizontal ones), rules within SAME_LINE of each other counted once."""
    lines: list[float] = []
    for at in sorted(_middle(r, axis) for r in rules):
        if lines and at - lines[-1] < SAME_LINE:
            continue
        lines.append(at)
    return lines


def _middle(rule: BBox, axis: int) -> float:
    return (rule[axis] + rule[axis + 2]) / 2


def _touching_groups(rules: list[BBox]) -> list[list[BBox]]:
    """Rules joined, directly or through others, by touching."""
    parent = {i: i for i in range(len(rules))}
    for i, a in enumerate(rules):
        for j in range(i + 1, len(rules)):
            if _touch(a, rules[j]):
                _join(parent, i, j)
    groups: dict[object, list[BBox]] = {}
    for i, rule in enumerate(rules):
        groups.setdefault(_root(parent, i), []).append(rule)
    return list(groups.values())


def _touch(a: BBox, b: BBox) -> bool:
    return (
        a[0] - TOUCH <= b[2]
        and b[0] - TOUCH <= a[2]
        and a[1] - TOUCH <= b[3]
        and b[1] - TOUCH <= a[3]
    )
