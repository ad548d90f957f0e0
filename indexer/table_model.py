"""Format-independent table logic: header depths, header paths, numeric values and HTML.

Every table parser (PDF, DOCX, HTML, XLSX) produces a grid of cells (row, col, spans, text and,
when the format says so, header flags); ``finish_table`` turns that grid into a complete
``indexer.model.Table``. Each data cell is located by its *row path* (the left header cells to
its left, outermost first, prefixed by the section row it sits under) and its *col path* (the top
header cells above it, outermost first), which is what HD-RAG style retrieval keys on.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from indexer.model import BBox, Table, TableCell

# Marks that decorate numbers in papers and reports (significance, footnotes, best result).
_DECORATION = re.compile(r"[*†‡§¶♠♣♦♥#⋆∗]+|\^\w+|\[\w{1,3}\]")
_EMPTY = {"", "-", "–", "—", "−", "n/a", "na", "n.a.", "none", "nil", "x", "*", "?", "/"}
_CURRENCY = {"$": "$", "US$": "$", "€": "€", "£": "£", "¥": "¥", "₹": "₹"}
_NUMBER = re.compile(
    r"""^(?P<sign>[-+−–]?)\s*
    (?P<cur>US\$|[$€£¥₹])?\s*
    (?P<sign2>[-+−–]?)
    (?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)
    (?:[eE](?P<exp>[-+−]?\d+))?
    \s*(?P<unit>%|[A-Za-z]{1,3}|[$€£¥₹])?$""",
    re.VERBOSE,
)
# A row of years ("2021 2020") is a header, not data, even though it parses as numbers.
_YEAR = re.compile(r"^(19|20)\d\d$")


def parse_number(text: str) -> tuple[float | None, str | None]:
    """Read a table cell as a number: ``"(1,234)"`` -> (-1234.0, None), ``"12.5%"`` -> (12.5, "%").

    Handles thousands separators, parentheses for negatives, unicode minus, currency symbols
    (returned as the unit), a short unit suffix (``%``, ``M``, ``ms``), footnote marks,
    asterisks and daggers, and a trailing ``± spread`` (dropped). Dashes and blanks are empty.
    """
    cleaned = _DECORATION.sub("", text or "").strip()
    cleaned = re.sub(r"\s*±.*$", "", cleaned)
    if cleaned.lower() in _EMPTY:
        return None, None
    negative = False
    if cleaned.startswith("(") and cleaned.endswith(")"):
        negative, cleaned = True, cleaned[1:-1].strip()
    elif re.fullmatch(r"[$€£¥₹]\s*\(.*\)", cleaned):
        # "$ (1,234)": the currency sits outside the parentheses
        negative, cleaned = True, cleaned[0] + cleaned[1:].strip()[1:-1]
    match = _NUMBER.match(cleaned)
    if not match:
        return None, None
    value = float(match["num"].replace(",", ""))
    if match["exp"]:
        value *= 10 ** int(match["exp"].replace("−", "-"))
    if (match["sign"] or match["sign2"]) in ("-", "−", "–"):
        negative = not negative
    unit = match["unit"] or (_CURRENCY[match["cur"]] if match["cur"] else None)
    if unit in _CURRENCY:
        unit = _CURRENCY[unit]
    return (-value if negative else value), unit


def finish_table(
    cells: Sequence[TableCell],
    *,
    ordinal: int,
    page_number: int,
    bbox: BBox,
    label: str | None = None,
    caption: str | None = None,
    header_rows: int | None = None,
    header_cols: int | None = None,
    seq: int = 0,
) -> Table:
    """Complete a raw grid into a ``Table``: header depths, flags, paths and numeric values.

    ``cells`` need row, col, spans and text (bbox optional). Header depths are taken from the
    arguments, else from header flags already set on the cells (formats that mark ``<th>``),
    else inferred from where the numbers start.
    """
    cells = [cell.model_copy() for cell in cells if cell.text is not None]
    n_rows = max((c.row + c.row_span for c in cells), default=0)
    n_cols = max((c.col + c.col_span for c in cells), default=0)
    grid = _occupancy(cells, n_rows, n_cols)
    if header_rows is None:
        header_rows = _flagged_depth(cells, "row") or infer_header_rows(grid)
    if header_cols is None:
        header_cols = _flagged_depth(cells, "col") or infer_header_cols(grid, header_rows)
    header_rows = min(header_rows, max(n_rows - 1, 0))
    header_cols = min(header_cols, max(n_cols - 1, 0))
    for cell in cells:
        cell.is_col_header = cell.row < header_rows
        cell.is_row_header = not cell.is_col_header and cell.col < header_cols
        cell.value, cell.unit = (None, None) if cell.is_col_header else parse_number(cell.text)
    _assign_paths(cells, grid, header_rows, header_cols)
    cells.sort(key=lambda c: (c.row, c.col))
    return Table(
        ordinal=ordinal,
        page_number=page_number,
        bbox=bbox,
        label=label,
        caption=caption,
        n_rows=n_rows,
        n_cols=n_cols,
        header_rows=header_rows,
        header_cols=header_cols,
        cells=cells,
        seq=seq,
    )


Grid = list[list[TableCell | None]]


def _occupancy(cells: Sequence[TableCell], n_rows: int, n_cols: int) -> Grid:
    """Grid position -> the cell covering it (spanning cells cover several positions)."""
    grid: Grid = [[None] * n_cols for _ in range(n_rows)]
    for cell in cells:
        for r in range(cell.row, cell.row + cell.row_span):
            for c in range(cell.col, cell.col + cell.col_span):
                grid[r][c] = cell
    return grid


def _flagged_depth(cells: Sequence[TableCell], axis: str) -> int:
    """Header depth from flags the source format set (``<th>`` rows or columns)."""
    if axis == "row":
        flagged = [c.row + c.row_span for c in cells if c.is_col_header]
    else:
        flagged = [c.col + c.col_span for c in cells if c.is_row_header]
    return max(flagged, default=0)


def _is_numeric(cell: TableCell | None) -> bool:
    return cell is not None and parse_number(cell.text)[0] is not None


def _is_year_row(row: list[TableCell | None]) -> bool:
    texts = [c.text.strip() for c in _distinct(row) if c.text.strip()]
    return bool(texts) and all(_YEAR.match(t) or parse_number(t)[0] is None for t in texts)


def _distinct(row: Sequence[TableCell | None]) -> list[TableCell]:
    seen: list[TableCell] = []
    for cell in row:
        if cell is not None and all(cell is not s for s in seen):
            seen.append(cell)
    return seen


def infer_header_rows(grid: Grid) -> int:
    """Rows above the first row that is mostly numbers (years and spanning cells are headers)."""
    if len(grid) < 2:
        return 0
    for r, row in enumerate(grid):
        filled = [c for c in _distinct(row[1:]) if c.row == r and c.text.strip()]
        spans_columns = any(c.col_span > 1 for c in filled)
        numeric = sum(_is_numeric(c) for c in filled)
        if filled and not spans_columns and numeric * 2 >= len(filled) and not _is_year_row(row):
            return max(r, 1)
    return 1


def infer_header_cols(grid: Grid, header_rows: int) -> int:
    """Columns left of the first column whose body cells are mostly numbers (at least one)."""
    n_cols = len(grid[0]) if grid else 0
    body = grid[header_rows:]
    for c in range(n_cols):
        column = [row[c] for row in body if row[c] is not None and row[c].col == c]
        filled = [cell for cell in column if cell.text.strip()]
        if filled and sum(_is_numeric(cell) for cell in filled) * 2 >= len(filled):
            return max(c, 1) if n_cols > 1 else 0
    return 1 if n_cols > 1 else 0


def _is_section_row(row: list[TableCell | None], header_cols: int) -> bool:
    """A body row that only labels the rows below it ("Revenue:", "Multi-task models")."""
    labels = [c for c in _distinct(row[:header_cols]) if c.text.strip()]
    data = [c for c in _distinct(row[header_cols:]) if c.text.strip() and c not in labels]
    return bool(labels) and not data and len(row) > header_cols


def _assign_paths(cells: list[TableCell], grid: Grid, header_rows: int, header_cols: int) -> None:
    section: str | None = None
    row_paths: list[list[str]] = []
    above: dict[int, TableCell] = {}  # outer left-header column -> last label seen in the body
    for r, row in enumerate(grid):
        left = [row[c] for c in range(min(header_cols, len(row)))]
        if r >= header_rows:
            left = _fill_down(left, above)
        path = _chain(left)
        if r >= header_rows and header_cols and _is_section_row(row, header_cols):
            section = " ".join(path)
            row_paths.append(path)
            above.clear()
            continue
        if section and r >= header_rows and path[:1] != [section]:
            path = [section, *path]
        row_paths.append(path)
    for cell in cells:
        column = [grid[r][cell.col] for r in range(min(header_rows, len(grid)))]
        if cell.is_col_header:
            cell.col_path = _chain(column[: cell.row + 1])
            continue
        cell.col_path = _chain(column)
        if cell.is_row_header:
            cell.row_path = row_paths[cell.row][: _path_index(row_paths[cell.row], cell) + 1]
        else:
            cell.row_path = row_paths[cell.row]


def _fill_down(left: list[TableCell | None], above: dict[int, TableCell]) -> list:
    """Academic tables print a group label ("Hybrid") only on its first row; the blank outer
    left-header cells below it belong to the same group."""
    filled = list(left)
    for c, cell in enumerate(left[:-1]):  # the innermost level is each row's own label
        if cell is not None and cell.text.strip():
            above[c] = cell
        elif c in above:
            filled[c] = above[c]
    return filled


def _path_index(path: list[str], cell: TableCell) -> int:
    text = _clean(cell.text)
    return path.index(text) if text in path else len(path) - 1


def _chain(cells) -> list[str]:
    """Texts of the distinct non-empty cells, in order (a spanning cell counts once)."""
    out: list[str] = []
    seen: list[TableCell] = []
    for cell in cells:
        if cell is None or any(cell is s for s in seen):
            continue
        seen.append(cell)
        text = _clean(cell.text)
        if text:
            out.append(text)
    return out


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def table_to_html(table: Table) -> str:
    """Render as ``<table>`` with ``<thead>``/``<th>`` for headers and rowspan/colspan."""
    by_row: dict[int, list[TableCell]] = {}
    for cell in table.cells:
        by_row.setdefault(cell.row, []).append(cell)
    parts = ["<table>"]
    if table.caption or table.label:
        parts.append(f"<caption>{html.escape(table.caption or table.label or '')}</caption>")
    for section, rows in (
        ("thead", range(table.header_rows)),
        ("tbody", range(table.header_rows, table.n_rows)),
    ):
        if not rows:
            continue
        parts.append(f"<{section}>")
        for r in rows:
            parts.append("<tr>")
            parts.extend(_cell_html(c) for c in sorted(by_row.get(r, []), key=lambda c: c.col))
            parts.append("</tr>")
        parts.append(f"</{section}>")
    parts.append("</table>")
    return "".join(parts)


def _cell_html(cell: TableCell) -> str:
    tag = "th" if cell.is_col_header or cell.is_row_header else "td"
    attrs = ""
    if cell.row_span > 1:
        attrs += f' rowspan="{cell.row_span}"'
    if cell.col_span > 1:
        attrs += f' colspan="{cell.col_span}"'
    if cell.is_row_header:
        attrs += ' scope="row"'
    elif cell.is_col_header and cell.col_span > 1:
        attrs += ' scope="colgroup"'
    elif cell.is_col_header:
        attrs += ' scope="col"'
    return f"<{tag}{attrs}>{html.escape(_clean(cell.text))}</{tag}>"
