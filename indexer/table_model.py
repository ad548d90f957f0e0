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

from docsym.indexer.model import BBox, Table, TableCell

# Marks that decorate numbers in papers and reports (significance, footnotes, best result).
_DECORATION = re.compile(r"[*†‡§¶♠♣♦♥#⋆∗]+|\^\w+|\[\w{1,3}\]|[⁰¹²³⁴⁵⁶⁷⁸⁹⁽⁾ᵃᵇᶜᵈᵉ]+")
# A footnote reference printed after a value: "1,234 (1)", "27 % (a)", "(496) (2)".
_FOOTNOTE = re.compile(r"(?<=[\d%)])\s*\((?:\d{1,2}|[a-z])\)$")
_EMPTY = {"", "-", "–", "—", "−", "n/a", "na", "n.a.", "nm", "n/m", "n.m.", "none", "nil", "x"}
_EMPTY |= {"*", "?", "/", "--", "---", "‒"}
_CURRENCY = {"$": "$", "US$": "$", "€": "€", "£": "£", "¥": "¥", "₹": "₹"}
CURRENCY_SIGNS = frozenset(_CURRENCY)  # the signs read as a currency before a number
_NUMBER = re.compile(
    r"""^(?P<sign>[-+−–]?)\s*
    (?P<cur>US\$|[$€£¥₹]|(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR)(?=[\s\d]))?\s*
    (?P<sign2>[-+−–]?)
    (?P<num>(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:[\u00a0\u202f\u2009]\d{3})+|\d+)(?:\.\d+)?|\.\d+)
    (?:[eE](?P<exp>[-+−]?\d+))?
    \s*(?P<unit>%|×|¢|million|billion|thousand|trillion|[A-Za-z]{1,3}|[$€£¥₹])?$""",
    re.VERBOSE,
)
# "102.7–103.6", "(2.1 to 2.4)": a range of values (a confidence interval) is a value too.
_RANGE = re.compile(r"\s*[–—]\s*|\s+to\s+|\s+-\s+|(?<=\d)-(?=\d)")
# A row of years ("2021 2020", "2017 (a)", "2019–20") is a header, though it reads as numbers.
_YEAR = re.compile(r"^(19|20)\d\d(\s*(?:[-–—/]|to)\s*(?:19|20)?\d\d)?$")
# A text column further right than this is data (a comment, a date), not a row label.
MAX_LEFT_HEADER = 4
# "(In millions, except percentages)": a note on units, part of the header, never a row section.
_UNITS_NOTE = re.compile(
    r"^\(.*\)$|\b(in|of)\s+(thousands|millions|billions)\b|^(amounts|dollars|\$)\s+in\b", re.I
)


def _strip_marks(text: str) -> str:
    """The text without footnote marks, daggers, asterisks and a trailing ``± spread``."""
    cleaned = _DECORATION.sub("", text or "").strip()
    cleaned = re.sub(r"\s*±.*$", "", cleaned)
    return _FOOTNOTE.sub("", cleaned).strip()


def parse_number(text: str) -> tuple[float | None, str | None]:
    """Read a table cell as a number: ``"(1,234)"`` -> (-1234.0, None), ``"12.5%"`` -> (12.5, "%").

    Handles thousands separators (commas, thin and no-break spaces), parentheses for negatives
    (also "(27)%" and "$ (1,234)"), unicode minus, currency symbols and ISO codes (returned as
    the unit), a short unit suffix (``%``, ``M``, ``ms``, ``million``), footnote marks ("(1)",
    "ᵃ", "[2]"), asterisks and daggers, and a trailing ``± spread`` (dropped). Dashes, blanks and
    "n/m" are empty.
    """
    cleaned = _strip_marks(text)
    if _is_placeholder(cleaned):
        return None, None
    negative = False
    if re.fullmatch(r"\(.*\)\s*[%¢]", cleaned):
        # "(27)%", "(0.13)¢": the unit sits outside the parentheses
        negative, cleaned = True, cleaned[1 : cleaned.rindex(")")].strip() + cleaned[-1]
    elif cleaned.startswith("(") and cleaned.endswith(")"):
        negative, cleaned = True, cleaned[1:-1].strip()
    elif re.fullmatch(r"[$€£¥₹]\s*\(.*\)", cleaned):
        # "$ (1,234)": the currency sits outside the parentheses
        negative, cleaned = True, cleaned[0] + cleaned[1:].strip()[1:-1]
    match = _NUMBER.match(cleaned)
    if not match:
        return None, None
    value = float(re.sub(r"[,\u00a0\u202f\u2009]", "", match["num"]))
    if match["exp"]:
        value *= 10 ** int(match["exp"].replace("−", "-"))
    if (match["sign"] or match["sign2"]) in ("-", "−", "–"):
        negative = not negative
    unit = match["unit"] or (_CURRENCY.get(match["cur"], match["cur"]) if match["cur"] else None)
    if unit in _CURRENCY:
        unit = _CURRENCY[unit]
    return (-value if negative else value), unit


def _is_placeholder(text: str) -> bool:
    """A dash, blank or "n/m" standing for no value, with or without a currency or % sign."""
    bare = re.sub(r"^(US\$|[$€£¥₹])\s*|\s*%$", "", text.strip())
    return bare.lower() in _EMPTY


def is_data_text(text: str) -> bool:
    """A cell that holds a value: a number, or a dash standing for none ("—", "$ —", "—%")."""
    cleaned = _strip_marks(text)
    if not cleaned:
        return False
    if parse_number(cleaned)[0] is not None or _is_placeholder(cleaned):
        return True
    # a range of values, but not a period ("2020 to 2021 %" heads a column of changes)
    parts = [p.strip(" %") for p in _RANGE.split(cleaned.strip("()[] "))]
    return (
        len(parts) == 2
        and all(parse_number(p)[0] is not None for p in parts)
        and not all(is_year(p) for p in parts)
    )


def is_year(text: str) -> bool:
    return bool(_YEAR.match(_strip_marks(text)))


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
    else inferred from where the values start. Inferred or flagged top headers give back their
    trailing row-section rows ("Americas" alone in its row) to the body, where they become the
    outer level of the row paths below them.
    """
    cells = [cell.model_copy() for cell in cells if cell.text is not None]
    n_rows = max((c.row + c.row_span for c in cells), default=0)
    n_cols = max((c.col + c.col_span for c in cells), default=0)
    grid = occupancy(cells, n_rows, n_cols)
    if header_rows is None:
        header_rows = _flagged_depth(cells, "row") or infer_header_rows(grid)
        header_rows = _release_section_rows(grid, header_rows)
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


def occupancy(
    cells: Sequence[TableCell], n_rows: int | None = None, n_cols: int | None = None
) -> Grid:
    """Grid position -> the cell covering it (spanning cells cover several positions). The size
    defaults to what the cells reach."""
    n_rows = max((c.row + c.row_span for c in cells), default=0) if n_rows is None else n_rows
    n_cols = max((c.col + c.col_span for c in cells), default=0) if n_cols is None else n_cols
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


def _is_data(cell: TableCell | None) -> bool:
    return cell is not None and is_data_text(cell.text)


def _is_year_row(cells: Sequence[TableCell]) -> bool:
    texts = [c.text for c in cells if c.text.strip()]
    return bool(texts) and all(is_year(t) or not is_data_text(t) for t in texts)


def _distinct(row: Sequence[TableCell | None]) -> list[TableCell]:
    """Each cell of ``row`` once (a spanning cell fills several slots), in order."""
    seen: set[int] = set()  # by identity: two cells may hold equal values
    distinct: list[TableCell] = []
    for cell in row:
        if cell is not None and id(cell) not in seen:
            seen.add(id(cell))
            distinct.append(cell)
    return distinct


def _own_cells(row: Sequence[TableCell | None], r: int) -> list[TableCell]:
    """Non-empty cells that start in row ``r`` (not those spanning down from above)."""
    return [c for c in _distinct(row) if c.row == r and c.text.strip()]


def infer_header_rows(grid: Grid) -> int:
    """Rows above the first row of values (a row of years, or one with a text cell spanning
    value columns, is a header row); 0 when the first row holds values. A table without values
    ("Yes"/"No" grids) has the rows its first row's cells span down over."""
    if len(grid) < 2:
        return 0
    start = max(_first_value_column(grid), 1)
    for r, row in enumerate(grid):
        if _is_value_row(row, r, start):
            return r
    return _text_table_header_rows(grid)


def _first_value_column(grid: Grid) -> int:
    """The leftmost column holding at least two values, mostly values (whole grid)."""
    for c in range(len(grid[0])):
        own = _distinct([row[c] for row in grid if row[c] is not None and row[c].col == c])
        filled = [cell for cell in own if cell.text.strip()]
        values = sum(_is_data(cell) for cell in filled)
        if values >= 2 and values * 2 >= len(filled):
            return c
    return 1


def _is_value_row(row: list[TableCell | None], r: int, start: int) -> bool:
    """Mostly values in the value columns (row labels to their left, however many levels and
    however wide, do not count)."""
    own = _own_cells(row, r)
    if _is_year_row(own):
        return False
    cells = [c for c in own if c.col >= start]
    values = sum(_is_data(c) for c in cells)
    text_spans = any(c.col_span > 1 and not _is_data(c) for c in cells)
    return values > 0 and not text_spans and values * 2 >= len(cells)


def _text_table_header_rows(grid: Grid) -> int:
    """The first row, and the rows below it that its cells span down over."""
    spans = [c.row_span for c in _own_cells(grid[0], 0) if c.col >= 1]
    return min(max(spans, default=1), len(grid) - 1)


def _release_section_rows(grid: Grid, header_rows: int) -> int:
    """Hand trailing row-section rows of the top header back to the body.

    A row whose only text is a label in the first column, or one cell spanning the whole row,
    under real header rows ("Model | NQ | TREC" then "Multi-task models") labels the rows below
    it; it is the outer level of their row paths, not part of any column's header. A note on
    units ("(In millions)") stays in the header.
    """
    first_real = next(
        (r for r in range(header_rows) if not _is_label_only_row(grid[r], r)), header_rows
    )
    while header_rows - 1 > first_real and _is_label_only_row(
        grid[header_rows - 1], header_rows - 1
    ):
        own = _own_cells(grid[header_rows - 1], header_rows - 1)
        if _UNITS_NOTE.search(own[0].text.strip()):
            break
        header_rows -= 1
    return header_rows


def _is_label_only_row(row: list[TableCell | None], r: int) -> bool:
    own = _own_cells(row, r)
    return len(own) == 1 and own[0].col == 0 and not _is_data(own[0])


def infer_header_cols(grid: Grid, header_rows: int) -> int:
    """Columns left of the first column of values (at least one). A text column after it that
    labels most rows, with only value columns to its right, extends the left header
    ("# enc-layers | # dec-layers | Language | scores")."""
    n_cols = len(grid[0]) if grid else 0
    if n_cols < 2:
        return 0
    kinds = [_column_kind(grid, c, header_rows) for c in range(n_cols)]
    first = next((c for c, (kind, _) in enumerate(kinds) if kind == "value"), None)
    if first is None:
        return _grouped_depth(grid, header_rows)
    depth = max(first, 1)
    labelled_rows = max(count for kind, count in kinds if kind == "value")
    texts = [
        c
        for c in range(depth, min(n_cols, MAX_LEFT_HEADER))
        if kinds[c][0] == "text" and kinds[c][1] >= max(2, labelled_rows / 2)
    ]
    if texts:
        after = [kind for kind, _ in kinds[texts[-1] + 1 :]]
        if "text" not in after and after.count("value") >= 2:
            depth = texts[-1] + 1
    return depth


def _grouped_depth(grid: Grid, header_rows: int) -> int:
    """Left header depth of a table without values ("Yes"/"No" grids): one column, and one more
    for each leading column whose cells group rows (a cell spanning several body rows, as
    "Regional Airlines" over "PenAir" and "Ravn Alaska") while the column beside it names each
    row with a text of its own. A column repeating its texts ("True", "False") holds values."""
    depth = 1
    limit = min(len(grid[0]) - 1, MAX_LEFT_HEADER)
    while depth < limit and _groups_rows(grid, header_rows, depth - 1):
        texts = [c.text.strip() for c in _body_cells(grid, header_rows, depth) if c.text.strip()]
        if len(texts) < 2 or len(set(texts)) < len(texts):
            break
        depth += 1
    return depth


def _groups_rows(grid: Grid, header_rows: int, col: int) -> bool:
    return any(c.row_span > 1 and c.text.strip() for c in _body_cells(grid, header_rows, col))


def _body_cells(grid: Grid, header_rows: int, col: int) -> list[TableCell]:
    """The distinct cells that start in column ``col`` below the header."""
    return [c for c in _distinct([row[col] for row in grid[header_rows:]]) if c.col == col]


def _column_kind(grid: Grid, c: int, header_rows: int) -> tuple[str, int]:
    """('value' when most body cells starting in column c hold values, else 'text', or 'empty';
    and how many such cells there are)."""
    own = [
        row[c]
        for row in grid[header_rows:]
        if row[c] is not None and row[c].col == c and row[c].text.strip()
    ]
    own = _distinct(own)
    if not own:
        return "empty", 0
    values = sum(_is_data(cell) for cell in own)
    return ("value" if values * 2 >= len(own) else "text"), len(own)


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
