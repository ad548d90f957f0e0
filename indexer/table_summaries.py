"""Row- and column-level summaries of a table (HD-RAG's RCL corpus, S_row and S_col).

One summary per row path and per column path, at every level of the header hierarchy: the row
"Revenue" and its sub-rows "Revenue › Mobility", "Revenue › Delivery"; the column "Recall@5" and
"Recall@5 › Maintenance". Each is a short, deterministic text built from the header paths and the
values the path spans::

    Table 2 (Segment revenue…) — row Revenue › Mobility: 2021 = 6,953; 2020 = 6,089
    Table 1 (Retrieval quality…) — column Recall@5 › Maintenance: BM25 = 0.71; Hybrid › RRF = 0.91

A question names a row and a column ("Mobility revenue in 2021"); the table-level summary holds
only the header labels, while these texts put each label next to its values, which is what
makes the right table (and the right region of it) retrievable. Texts stay short, so embedding
them is cheap and one vector never has to average a whole table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docsym.indexer.model import BBox, Table, TableCell
from docsym.indexer.table_model import is_data_text, is_year
from docsym.language.labels import HEADER_PATH_SEP
from docsym.storage.boxes import union

MAX_CHARS = 480  # about 150 word pieces: one pass of the embedding model, no averaging
CAPTION_CHARS = 90
LABEL_CHARS = 60
VALUE_CHARS = 24
_PRINTED_LABEL = re.compile(r"^(Table\s+[A-Z]?\d+(?:[-.]\d+)?)\b", re.I)
MAX_PER_AXIS = 200  # a 1,000-row table gets its first 200 row summaries, not thousands


@dataclass(frozen=True)
class TableSummary:
    axis: str  # "row" or "col"
    ordinal: int  # position among the table's summaries of this axis
    level: int  # 1 for the outermost header level
    path: list[str]
    text: str
    cells: list[TableCell]  # the data cells the path spans, in table order
    bbox: BBox


def summarise_rows_and_columns(table: Table, max_chars: int = MAX_CHARS) -> list[TableSummary]:
    """The row summaries (top to bottom, outer level before inner) then the column summaries."""
    data = [c for c in table.cells if _is_data_cell(c)]
    title = table_title(table)
    out: list[TableSummary] = []
    for axis in ("row", "col"):
        for ordinal, (path, cells) in enumerate(_groups(data, axis)[:MAX_PER_AXIS]):
            text = _summary_text(title, axis, path, cells, max_chars)
            bbox = union([c.bbox for c in cells]) or table.bbox
            out.append(TableSummary(axis, ordinal, len(path), path, text, cells, bbox))
    return out


def table_title(table: Table) -> str:
    """'Table 2 (first words of the caption…)', or 'Table on page 53' without label or caption."""
    caption = " ".join((table.caption or "").split())
    label = table.label or ""
    printed = _PRINTED_LABEL.match(caption)
    if not label and printed:
        label = printed[1]
    if label and caption.lower().startswith(label.lower()):
        caption = caption[len(label) :].lstrip(" .:|-–—")
    caption = _trim(caption, CAPTION_CHARS)
    if label and caption:
        return f"{label} ({caption})"
    if caption:
        return f"Table ({caption})"
    return label or f"Table on page {table.page_number}"


def _is_data_cell(cell: TableCell) -> bool:
    return not (cell.is_col_header or cell.is_row_header) and bool(cell.text.strip())


def _groups(data: list[TableCell], axis: str) -> list[tuple[list[str], list[TableCell]]]:
    """(path prefix, cells under it) for every prefix of every cell's path on this axis, in
    table order; a prefix that spans exactly the cells of its only longer path is left out."""
    groups: dict[tuple[str, ...], list[TableCell]] = {}
    order = sorted(data, key=lambda c: (c.row, c.col) if axis == "row" else (c.col, c.row))
    for cell in order:
        path = clean_path(cell.row_path if axis == "row" else cell.col_path, axis)
        for level in range(1, len(path) + 1):
            groups.setdefault(tuple(path[:level]), []).append(cell)
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for path in groups:
        children.setdefault(path[:-1], []).append(path)
    kept = []
    for path, cells in groups.items():
        below = children.get(path, [])
        if len(below) == 1 and len(groups[below[0]]) == len(cells):
            continue
        kept.append((list(path), cells))
    return kept


def clean_path(path: list[str], axis: str) -> list[str]:
    """Header labels worth reading: whitespace folded, repeated text dropped, and in column paths
    the values that a header row picked up by mistake left out (years stay: period columns are
    asked for by year). Row labels may be numbers ("6" encoder layers) and are kept."""
    out: list[str] = []
    for part in path:
        part = " ".join(part.split())
        if not part or (out and out[-1] == part and not is_data_text(part)):
            continue  # "Revenue › Revenue" is an artefact; "6 › 6" (two keys) is not
        if axis == "col" and is_data_text(part) and not is_year(part):
            continue
        out.append(part)
    return out


def _summary_text(
    title: str, axis: str, path: list[str], cells: list[TableCell], max_chars: int
) -> str:
    name = "row" if axis == "row" else "column"
    head = f"{title} — {name} {HEADER_PATH_SEP.join(_trim(p, LABEL_CHARS) for p in path)}: "
    items = [f"{_item_label(c, axis, len(path))} = {_value(c)}" for c in cells]
    return head + _fit(items, max_chars - len(head))


def _item_label(cell: TableCell, axis: str, level: int) -> str:
    """What tells a value apart inside the summary: for a row, the column path (and the inner row
    labels below this level); for a column, the row path (and the inner column labels)."""
    if axis == "row":
        inner, other = clean_path(cell.row_path, "row")[level:], clean_path(cell.col_path, "col")
    else:
        inner, other = clean_path(cell.col_path, "col")[level:], clean_path(cell.row_path, "row")
    parts = [*inner, *other] if inner else other
    return HEADER_PATH_SEP.join(_trim(p, LABEL_CHARS) for p in parts) or f"col {cell.col + 1}"


def _value(cell: TableCell) -> str:
    return _trim(" ".join(cell.text.split()), VALUE_CHARS)


def _fit(items: list[str], budget: int) -> str:
    """'a; b; c' within budget characters, with '; … (+N more)' when items are left out."""
    shown: list[str] = []
    used = 0
    for n, item in enumerate(items):
        rest = len(items) - n - 1
        reserve = len(f"; … (+{len(items)} more)") if rest else 0
        if shown and used + len(item) + 2 + reserve > budget:
            return "; ".join(shown) + f"; … (+{len(items) - len(shown)} more)"
        shown.append(item)
        used += len(item) + 2
    return "; ".join(shown)


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    cut = re.sub(r"\s+\S*$", "", cut) or cut
    return cut.rstrip(" ,;:") + "…"
