"""``get_table`` and ``lookup_cells``: one extracted table, whole or by header path.

``get_table`` returns a table as HTML (spans kept), as a GitHub markdown grid (multi-level column
headers joined with " › " into one header line) or as cell records with their header paths.
Output is bounded: leading rows are kept while they fit, and the note says which ``run_sql``
query returns the rest. ``lookup_cells`` answers "the value at row X, column Y" by matching
labels against each data cell's row and column header paths.
"""

from __future__ import annotations

from html import escape
from typing import Annotated, Any

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string, get_column_letter
from pydantic import BaseModel, Field

from docsym.language.labels import (
    HEADER_PATH_SEP,
    acronym_words,
    label_core,
    label_key,
    label_stems,
    label_words,
)
from docsym.language.terms import FUNCTION_WORDS
from docsym.runtime.formats import has_page_images
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.results import (
    MAX_RESULT_CHARS,
    PAGE_LABEL_HELP,
    ToolResult,
    markdown_row,
    markdown_table,
    page_citation,
    page_labels,
)
from docsym.tools.spec import Arguments, Label, Name, ToolSpec

FORMATS = ("markdown", "html", "cells")
MAX_CELLS = 10_000
MAX_LOOKUP = 500
NEAREST_PATHS = 15  # paths a refusal lists
MAX_TREE_NODES = 400  # per header tree; a 1,000-row table lists its first 400 row labels

_CELL_COLUMNS = (
    "cell_id, doc_id, page_number, row, col, row_span, col_span, text, value, unit, "
    "is_col_header, is_row_header, "
    "row_path, col_path, bbox, address"
)
_CELL_KEYS = [c.strip() for c in _CELL_COLUMNS.split(",")]


class HeaderNode(BaseModel):
    """One label of a header hierarchy and the grid columns (top header) or rows (left header)
    it spans; its children are the labels under it."""

    label: str
    span: list[int] = Field(description="[first, last] grid column (top) or row (left), 0-based")
    children: list[HeaderNode] = Field(default_factory=list)


class TableView(ToolResult):
    table_id: str
    doc_id: str
    section_id: str | None = Field(default=None, description="the section the table stands in")
    page_number: int | None
    page_label: str | None = Field(default=None, description=PAGE_LABEL_HELP)
    bbox: list[float] | None = Field(
        default=None, description="[x0, y0, x1, y1] PDF points, origin top-left"
    )
    label: str | None
    caption: str | None
    header_rows: int
    header_cols: int
    n_rows: int
    n_cols: int
    confidence: float = Field(
        default=1.0,
        description="How far the structure can be trusted (0.1-1); below 0.8, check it: view_page "
        "on a PDF's table, the cells' header paths (format='cells') on other formats.",
    )
    doubts: list[str] = Field(default_factory=list, description="Why the structure may be wrong.")
    format: str
    sheet_range: str | None = Field(
        default=None,
        description="The A1 range of its sheet the table covers, e.g. 'A6:J20' (XLSX only); "
        "each cell's own address is table_cells.address.",
    )
    has_page_image: bool = Field(
        default=True, exclude=True, description="view_page can show it (a PDF's table)"
    )
    content: str = Field(description="The table as HTML or markdown; empty for format='cells'.")
    col_header_tree: list[HeaderNode] = Field(
        default_factory=list,
        description="The top header as a tree: each data cell's col_path is a path from a root.",
    )
    row_header_tree: list[HeaderNode] = Field(
        default_factory=list,
        description="The left header (row sections included) as a tree of row_path labels.",
    )
    cells: list[dict[str, Any]] = Field(default_factory=list)
    truncated: bool = False
    note: str | None = Field(default=None, description="What was cut and how to get the rest.")

    def to_markdown(self) -> str:
        page = page_citation(self.page_number, self.page_label)
        cells = f"cells {self.sheet_range}, " if self.sheet_range else ""
        head = f"{self.label or self.table_id} (doc {self.doc_id}, page {page}, {cells}"
        head += f"bbox {self.bbox}): {self.caption or ''}"
        body = self.content or f"{len(self.cells)} cells in structured content"
        return "\n\n".join(part for part in (head, self._trust(), body, self.note or "") if part)

    def _trust(self) -> str:
        if not self.doubts:
            return ""
        doubts = "; ".join(self.doubts)
        return f"Structure confidence {self.confidence:.2f} ({doubts}): {self._how_to_check()}."

    def _how_to_check(self) -> str:
        """A PDF's table is checked against its page image; other formats have none, so their
        cells are read with the header paths they were given."""
        if self.has_page_image and self.page_number is not None:
            box = f", bounding_box={self.bbox}" if self.bbox else ""
            return (
                f"check with view_page(doc_id='{self.doc_id}', page_number={self.page_number}{box})"
            )
        return (
            f"this {'sheet' if self.sheet_range else 'file'} has no page image; check the "
            f"header paths with get_table(table_id='{self.table_id}', format='cells') or "
            f'run_sql "SELECT row, col, text, row_path, col_path FROM table_cells WHERE '
            f"table_id = '{self.table_id}'\"{self._around()}"
        )

    def _around(self) -> str:
        if self.section_id is None:
            return ""
        return f", and the text around it with read_passage(id='{self.section_id}')"


class CellLookup(ToolResult):
    """The data cells lookup_cells found, best match first."""

    table_id: str
    cells: list[dict[str, Any]]

    def to_markdown(self) -> str:
        sheet = any(c.get("address") for c in self.cells)
        rows = [
            [
                c["cell_id"],
                HEADER_PATH_SEP.join(c["row_path"] or []),
                HEADER_PATH_SEP.join(c["col_path"] or []),
                c["text"],
                c["value"],
                c["unit"],
                page_citation(c["page_number"], c.get("page_label")),
                c["address"] if sheet else c["bbox"],
            ]
            for c in self.cells
        ]
        place = "address" if sheet else "bbox"  # a sheet's cells have no box, but an address
        header = ["cell_id", "row_path", "col_path", "text", "value", "unit", "page", place]
        return markdown_table(header, rows)


def get_table(
    store: Store, table_id: str, format: str = "markdown", max_cells: int = 2000
) -> TableView:
    if format not in FORMATS:
        raise ToolError(f"unknown format {format!r}; use one of: {', '.join(FORMATS)}")
    if isinstance(max_cells, bool) or not isinstance(max_cells, int):
        raise ToolError(f"max_cells must be a whole number, got {max_cells!r}")
    if not 1 <= max_cells <= MAX_CELLS:
        raise ToolError(f"max_cells must be between 1 and {MAX_CELLS}, got {max_cells}")
    meta = _table_row(store, table_id)
    cells = _cells(store, table_id)
    view = TableView(
        table_id=table_id,
        doc_id=meta["doc_id"],
        section_id=meta["section_id"],
        page_number=meta["page_number"],
        page_label=page_label(store, meta["doc_id"], meta["page_number"]),
        bbox=meta["bbox"],
        label=meta["label"],
        caption=meta["caption"],
        header_rows=meta["header_rows"] or 0,
        header_cols=meta["header_cols"] or 0,
        n_rows=meta["n_rows"] or 0,
        n_cols=meta["n_cols"] or 0,
        confidence=meta["confidence"] if meta["confidence"] is not None else 1.0,
        doubts=meta["doubts"] or [],
        format=format,
        sheet_range=sheet_range(cells),
        has_page_image=has_page_images(meta["format"]),
        content="",
    )
    data = [c for c in cells if not (c["is_col_header"] or c["is_row_header"])]
    view.col_header_tree = header_tree(data, "col")
    view.row_header_tree = header_tree(data, "row")
    if format == "cells":
        view.cells, shown_rows = _fit_cells(cells, max_cells, view.n_rows)
    elif format == "markdown":
        view.content, shown_rows = _markdown(cells, view, max_cells)
    else:
        view.content, shown_rows = _html(cells, view, meta["html"], max_cells)
    if shown_rows < view.n_rows:
        view.truncated = True
        view.note = _rest_note(table_id, shown_rows, view.n_rows, max_cells)
    return view


def sheet_range(cells: list[dict[str, Any]]) -> str | None:
    """'A6:J20': the span of a spreadsheet table's cell addresses; None outside spreadsheets."""
    places = [coordinate_from_string(c["address"]) for c in cells if c["address"]]
    if not places:
        return None
    columns = [column_index_from_string(letters) for letters, _ in places]
    rows = [row for _, row in places]
    first = f"{get_column_letter(min(columns))}{min(rows)}"
    return f"{first}:{get_column_letter(max(columns))}{max(rows)}"


def header_tree(data: list[dict[str, Any]], axis: str) -> list[HeaderNode]:
    """The header hierarchy of one axis from the data cells' paths: every distinct path prefix
    is a node spanning the grid positions of the cells under it, siblings in table order.
    At most MAX_TREE_NODES nodes (the first in table order) are kept."""
    key, start, size = ("col", "col", "col_span") if axis == "col" else ("row", "row", "row_span")
    nodes: dict[tuple[str, ...], HeaderNode] = {}
    roots: list[HeaderNode] = []
    for cell in sorted(data, key=lambda c: (c[start], c["row" if key == "col" else "col"])):
        path = cell[f"{key}_path"] or []
        first, last = cell[start], cell[start] + max(cell[size] or 1, 1) - 1
        for depth in range(1, len(path) + 1):
            prefix = tuple(path[:depth])
            node = nodes.get(prefix)
            if node is None:
                if len(nodes) >= MAX_TREE_NODES:
                    return roots
                node = nodes[prefix] = HeaderNode(label=path[depth - 1], span=[first, last])
                (nodes[prefix[:-1]].children if depth > 1 else roots).append(node)
            node.span = [min(node.span[0], first), max(node.span[1], last)]
    return roots


def lookup_cells(
    store: Store,
    table_id: str,
    row_path_contains: list[str] | None = None,
    col_path_contains: list[str] | None = None,
    limit: int = 50,
) -> CellLookup:
    """Data cells whose row path and column path each contain every given label.

    A label matches a path when it is part of one of the path's labels, or all its words are,
    footnote marks, case, spacing and punctuation aside (``language.labels``): 'Gross Bookings'
    matches 'Gross Bookings (2)', 'Grobid NN' matches 'GrobidNN'; plurals, inflections and
    acronyms match too ('aircrafts' and 'Aircraft rent', 'ASM' and 'Available seat miles'). A
    one-letter label matches a whole word only ('R' the column R, not 'Grobid Subset'). The
    best explained cells come first (``rank_cells``). With no match, the refusal lists the
    nearest row and column paths.
    """
    row_labels = _labels(row_path_contains, "row_path_contains")
    col_labels = _labels(col_path_contains, "col_path_contains")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LOOKUP:
        raise ToolError(f"limit must be a whole number between 1 and {MAX_LOOKUP}, got {limit!r}")
    meta = _table_row(store, table_id)
    data = [c for c in _cells(store, table_id) if not (c["is_col_header"] or c["is_row_header"])]
    found = rank_cells(data, row_labels, col_labels)
    if not found and data:
        raise NotFoundError(_no_match_message(table_id, data, row_labels, col_labels))
    label = page_label(store, meta["doc_id"], meta["page_number"])
    return CellLookup(
        table_id=table_id,
        cells=[{"table_id": table_id, **cell, "page_label": label} for cell in found[:limit]],
    )


def page_label(store: Store, doc_id: str, page_number: int | None) -> str | None:
    """The printed label of a page where it differs from its number."""
    return None if page_number is None else page_labels(store).get((doc_id, page_number))


def rank_cells(
    cells: list[dict[str, Any]], row_labels: list[str], col_labels: list[str]
) -> list[dict[str, Any]]:
    """The cells whose row path matches every row label and whose column path matches every
    column label (``_grades``), best first:
    1. those matching more labels exactly (a label equal to a whole path label);
    2. those matching more labels as typed, not only through stems or acronyms (``_grade``);
    3. those whose paths the labels explain best (``_unexplained``): 'income' prefers the row
       'Income' to 'Net income', 'net income' prefers 'Net income' to 'Interest expense, net',
       'operating revenue' prefers 'Total operating revenue' to 'Other operating revenue';
    4. a row or column of totals ('Total', 'Totals'), the answer when no label names one of
       the rows or columns it sums;
    5. table order.
    Labels are lower-cased already. Shared by lookup_cells and bench/table_structure.py, so
    the AIT-QA reachability figure measures exactly this matching."""
    scored = []
    for cell in cells:
        row = _grades(row_labels, cell["row_path"])
        col = _grades(col_labels, cell["col_path"])
        if row is None or col is None:
            continue
        exact = (row + col).count(EXACT)
        typed = sum(grade >= TYPED for grade in row + col)
        loose = _unexplained(row_labels, cell["row_path"])
        loose += _unexplained(col_labels, cell["col_path"])
        totals = _is_total(cell["row_path"]) + _is_total(cell["col_path"])
        scored.append((-exact, -typed, loose, -totals, cell["row"], cell["col"], cell))
    scored.sort(key=lambda item: item[:6])
    return [cell for *_, cell in scored]


def _words(labels: list[str]) -> set[str]:
    return {w for label in labels for w in label_words(label)}


# How a label meets a path label: equal to it, part of it as typed, or loosely: once plurals
# and inflections are set aside ('aircrafts' and 'Aircraft rent'), or as the acronym of some of
# its words ('ASM' and 'Available seat miles').
EXACT, TYPED, LOOSE = 3, 2, 1


def _grades(labels: list[str], path: list[str] | None) -> list[int] | None:
    """How each label meets the path (its best grade over the path's labels); None when one
    label meets none of them."""
    grades = []
    for label in labels:
        grade = max((_grade(label, p) for p in path or []), default=0)
        if not grade:
            return None
        grades.append(grade)
    return grades


def _grade(label: str, path_label: str) -> int:
    """EXACT when the labels are one once case, spaces and punctuation go ('Grobid NN' and
    'GROBIDNN'); TYPED when the label is part of the path label, spaces aside too; LOOSE
    through stems and acronyms. A one-letter label ('R' among the columns P, R, F1) names a
    whole word only: as a letter it is part of nearly every label."""
    key, path_key = label_key(label).replace(" ", ""), label_key(path_label).replace(" ", "")
    if key == path_key:
        return EXACT
    if label_words(label) <= label_words(path_label):
        return TYPED
    if len(key) <= 1:
        return 0
    if key in path_key:
        return TYPED
    if label_stems(label) <= label_stems(path_label) or acronym_words(label, path_label):
        return LOOSE
    return 0


# A total of X is what "X" asks for: 'Total' sets no row or column apart from the others.
_TOTAL = frozenset({"total"})


def _unexplained(labels: list[str], path: list[str] | None) -> float:
    """How much of the path the labels leave unexplained: for each path label, the share of
    its words that no label word (stem) and no acronym among the labels accounts for. 0 when
    no labels are given: an axis nobody asked about does not rank. Parenthesised asides ('(in
    millions)', '(RPMs)', '(Decrease)'), function words and 'total' do not count, so 'Total'
    under a matched group label costs nothing."""
    if not labels or not path:
        return 0.0
    given = {s for label in labels for s in label_stems(label)}
    loose = 0.0
    for path_label in path:
        core = label_core(path_label) - FUNCTION_WORDS - _TOTAL
        if core:
            spelled = {w for label in labels for w in acronym_words(label, path_label)}
            loose += len(core - given - spelled) / len(core)
    return loose


def _is_total(path: list[str] | None) -> bool:
    """The path ends in a plain 'Total' or 'Totals': the row or column summing the others."""
    return bool(path) and label_stems(path[-1]) == _TOTAL


def _table_row(store: Store, table_id: str) -> dict[str, Any]:
    if not isinstance(table_id, str) or not table_id.strip():
        raise ToolError("table_id is empty: give a table_id such as '<doc_id>-t0'")
    cursor = store.sql().execute(
        "SELECT t.doc_id, t.section_id, t.page_number, t.bbox, t.label, t.caption, t.html, "
        "t.n_rows, t.n_cols, t.header_rows, t.header_cols, t.confidence, t.doubts, d.format "
        "FROM tables t JOIN documents d ON d.doc_id = t.doc_id WHERE t.table_id = ?",
        [table_id],
    )
    row = cursor.fetchone()
    if row is None:
        raise NotFoundError(
            f'no table with table_id {table_id!r}; find ids with run_sql "SELECT table_id, '
            "label, caption FROM tables WHERE doc_id = '<doc_id>'\" (doc ids from list_documents)"
        )
    return dict(zip([d[0] for d in cursor.description], row, strict=True))


def _cells(store: Store, table_id: str) -> list[dict[str, Any]]:
    rows = (
        store.sql()
        .execute(
            f"SELECT {_CELL_COLUMNS} FROM table_cells WHERE table_id = ? ORDER BY row, col",
            [table_id],
        )
        .fetchall()
    )
    return [dict(zip(_CELL_KEYS, r, strict=True)) for r in rows]


def _grid(cells: list[dict[str, Any]], n_rows: int, n_cols: int) -> list[list[str]]:
    """Text per grid position: column spans repeat their text so joined headers stay per
    column; row spans repeat too, so each markdown row reads on its own."""
    n_rows = max([n_rows, *(c["row"] + c["row_span"] for c in cells)])
    n_cols = max([n_cols, *(c["col"] + c["col_span"] for c in cells)])
    grid = [[""] * n_cols for _ in range(n_rows)]
    for cell in cells:
        text = " ".join((cell["text"] or "").split())
        for r in range(cell["row"], cell["row"] + max(cell["row_span"] or 1, 1)):
            for c in range(cell["col"], cell["col"] + max(cell["col_span"] or 1, 1)):
                grid[r][c] = text
    return grid


def _header_line(grid: list[list[str]], header_rows: int) -> list[str]:
    labels = []
    for col in range(len(grid[0]) if grid else 0):
        parts: list[str] = []
        for row in grid[:header_rows]:
            if row[col] and (not parts or parts[-1] != row[col]):
                parts.append(row[col])
        labels.append(HEADER_PATH_SEP.join(parts))
    return labels


def _markdown(cells: list[dict[str, Any]], view: TableView, max_cells: int) -> tuple[str, int]:
    grid = _grid(cells, view.n_rows, view.n_cols)
    if not grid:
        return "", 0
    header_rows = min(view.header_rows, len(grid))
    if header_rows:
        head, body_start = _header_line(grid, header_rows), header_rows
    else:
        head, body_start = [""] * len(grid[0]), 0
    _carry_down_stubs(grid, body_start, view.header_cols)
    lines = [markdown_row(head), "|" + "---|" * len(head)]
    used = sum(len(line) + 1 for line in lines)
    shown = body_start
    budget_rows = max(max_cells // max(len(head), 1), 1)
    for row in grid[body_start:]:
        line = markdown_row(row)
        if used + len(line) + 1 > MAX_RESULT_CHARS or shown - body_start >= budget_rows:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    return "\n".join(lines), shown


def _carry_down_stubs(grid: list[list[str]], body_start: int, header_cols: int) -> None:
    """A blank row-header cell means "same group as above" (e.g. 'Sparse' over 'BM25' and
    'BM25+RM3'); repeat the label so each markdown row reads on its own."""
    # Outer levels only: a blank innermost label is not a repeat of the one above.
    for col in range(min(header_cols - 1, len(grid[0]))):
        above = ""
        for row in grid[body_start:]:
            if row[col]:
                above = row[col]
            elif any(row[c] for c in range(col + 1, len(row))):
                row[col] = above


def _html(
    cells: list[dict[str, Any]], view: TableView, stored: str | None, max_cells: int
) -> tuple[str, int]:
    if stored and len(stored) <= MAX_RESULT_CHARS and len(cells) <= max_cells:
        return stored, view.n_rows
    # Too big: rebuild the leading rows from the cells, spans and header cells kept.
    parts = ["<table>"]
    if view.caption:
        parts.append(f"<caption>{escape(view.caption)}</caption>")
    used = sum(map(len, parts))
    count = 0
    shown = 0
    by_row: dict[int, list[dict[str, Any]]] = {}
    for cell in cells:
        by_row.setdefault(cell["row"], []).append(cell)
    for row in range(view.n_rows):
        html_row = "<tr>" + "".join(_html_cell(c) for c in by_row.get(row, [])) + "</tr>"
        count += len(by_row.get(row, []))
        if used + len(html_row) + 8 > MAX_RESULT_CHARS or count > max_cells:
            break
        parts.append(html_row)
        used += len(html_row)
        shown = row + 1
    parts.append("</table>")
    return "".join(parts), shown


def _html_cell(cell: dict[str, Any]) -> str:
    header = cell["is_col_header"] or cell["is_row_header"]
    tag = "th" if header else "td"
    attrs = ""
    if (cell["row_span"] or 1) > 1:
        attrs += f' rowspan="{cell["row_span"]}"'
    if (cell["col_span"] or 1) > 1:
        attrs += f' colspan="{cell["col_span"]}"'
    return f"<{tag}{attrs}>{escape(cell['text'] or '')}</{tag}>"


def _fit_cells(
    cells: list[dict[str, Any]], max_cells: int, n_rows: int
) -> tuple[list[dict[str, Any]], int]:
    """Leading cells, whole rows only, within max_cells and the character budget; and the
    number of grid rows they cover."""
    used = 0
    for i, cell in enumerate(cells):
        used += sum(len(str(v)) + 4 for v in cell.values()) + 60
        if i >= max_cells or used > MAX_RESULT_CHARS:
            cut_row = cell["row"]
            return [c for c in cells[:i] if c["row"] < cut_row], cut_row
    return cells, n_rows


def _rest_note(table_id: str, shown_rows: int, n_rows: int, max_cells: int) -> str:
    return (
        f"Showing the first {shown_rows} of {n_rows} grid rows (max_cells={max_cells} or the "
        f'{MAX_RESULT_CHARS:,}-character cap). Get the rest with run_sql "SELECT row, col, '
        f"text, value, row_path, col_path FROM table_cells WHERE table_id = '{table_id}' AND "
        f'row >= {shown_rows} ORDER BY row, col", or use lookup_cells for specific values.'
    )


def _labels(labels: list[str] | None, name: str) -> list[str]:
    if labels is None:
        return []
    if isinstance(labels, str) or not all(isinstance(x, str) for x in labels):
        raise ToolError(f"{name} must be a list of strings, e.g. ['Top-100', 'TREC']")
    return [x.strip().lower() for x in labels if x.strip()]


def _no_match_message(
    table_id: str, data: list[dict[str, Any]], row_labels: list[str], col_labels: list[str]
) -> str:
    rows = list(dict.fromkeys(tuple(c["row_path"] or []) for c in data))
    cols = list(dict.fromkeys(tuple(c["col_path"] or []) for c in data))
    return (
        f"no data cell of {table_id} has a row path matching {row_labels} and a column path "
        f"matching {col_labels}. Nearest row paths: {_nearest(rows, row_labels)}. Nearest "
        f"column paths: {_nearest(cols, col_labels)}. Retry with labels from these paths."
    )


def _nearest(paths: list[tuple[str, ...]], labels: list[str], limit: int = NEAREST_PATHS) -> str:
    """The paths sharing most words with the labels (table order among equals)."""
    wanted = _words(labels)

    def shared(path: tuple[str, ...]) -> int:
        return len(wanted & {w for p in path for w in label_words(p)})

    ranked = sorted(paths, key=shared, reverse=True) if wanted else paths
    shown = "; ".join(f"[{HEADER_PATH_SEP.join(p)}]" for p in ranked[:limit])
    return shown + (f"; … {len(paths) - limit} more" if len(paths) > limit else "")


TableId = Annotated[str, Field(description="A table_id, e.g. '<doc_id>-t0'.", max_length=100)]
Labels = Annotated[list[Label] | None, Field(max_length=10)]


class GetTableArgs(Arguments):
    table_id: TableId
    format: Annotated[Name, Field(description="markdown, html or cells")] = "markdown"
    max_cells: Annotated[int, Field(ge=1, le=MAX_CELLS)] = 2000


class LookupCellsArgs(Arguments):
    table_id: TableId
    row_path_contains: Labels = None
    col_path_contains: Labels = None
    limit: Annotated[int, Field(ge=1, le=MAX_LOOKUP)] = 50


GET_TABLE = ToolSpec(
    name="get_table",
    summary="a table as markdown, HTML or cells with header paths.",
    description=(
        "A table by table_id (from hybrid_search hits on tables.* or run_sql on tables): as "
        "markdown (multi-level headers joined with ' › '), html, or cells with row_path and "
        "col_path. Large tables are cut by whole rows; the note gives the SQL for the rest."
    ),
    arguments=GetTableArgs,
    function=get_table,
    evidence=True,
)

LOOKUP_CELLS = ToolSpec(
    name="lookup_cells",
    summary="data cells at given row and column headers.",
    description=(
        "The data cells of a table under given headers: every label in row_path_contains "
        "must occur in the cell's row path and every label in col_path_contains in its "
        "column path (case, spaces and punctuation aside; one letter only as a whole word; "
        "plurals and acronyms such as 'ASM' match too), e.g. row ['Multi', 'BM25 + DPR'], col "
        "['Top-100', 'TREC']. Best matches first. Returns value, unit, paths, page and bbox of "
        "each cell (a spreadsheet cell: its sheet as page_label and its A1 address)."
    ),
    arguments=LookupCellsArgs,
    function=lookup_cells,
    evidence=True,
)
