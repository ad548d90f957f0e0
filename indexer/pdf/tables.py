"""Find tables in a PDF and rebuild their cell grids from words and ruling lines.

Cheap first, precise second: captions ("Table 2: ...") come from the layout lines already read,
and pages without one are only scanned for dense blocks of aligned numbers (financial
statements), so drawings and words are fetched for a handful of pages. On those pages the table
region is bounded by its horizontal rules (booktabs or full grids) or, without rules, by the run
of non-prose lines next to the caption; header lines printed just above that box (over the rule
that opens a ruled body) are taken in when they line up with its columns or sit in its ruled
grid. Columns come from projecting the words of the fullest rows onto the x axis, the printed
header placing cells that fall between them; spanning headers from the rules under them
(cmidrule), vertical rules, or the nearest header text set over them. ``indexer.table_model``
then derives header depths and paths.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

import pymupdf

from docsym.indexer.model import BBox, Table, TableCell
from docsym.indexer.pdf.grid_tables import with_grid_tables
from docsym.indexer.pdf.layout import (
    DocumentLayout,
    Line,
    PageLayout,
    page_words,
    turn_matrix,
    upright_view,
)
from docsym.indexer.table_checks import check_structure
from docsym.indexer.table_model import finish_table, is_data_text, is_year, parse_number
from docsym.language.hyphens import PrintedWords, join_lines

# "tABLE" is how small capitals come out of some fonts (MMWR's "tABLE 6.").
_CAPTION = re.compile(
    r"^(?P<label>(?:Table|TABLE|tABLE)\s+(?P<num>[A-Z]?\d+(?:[-.]\d+)?))(?P<sep>\s*[:.|]\s*|\s+|$)"
)
_OTHER_CAPTION = re.compile(r"^(Table|TABLE|tABLE|Figure|FIGURE|fIGURE|Fig\.)\s+[A-Z]?\d+")
# A caption farther than this from its table's nearest rule belongs to something else.
MAX_CAPTION_GAP = 40.0
# Lines running up or down a page that make it worth reading turned (a sideways table).
SIDEWAYS_LINES = 20
# Uncaptioned tables: a page needs this many numeric rows to be looked at.
MIN_NUMERIC_ROWS = 4
# Header lines a table may have above its first row of values (or above the box it was found in).
MAX_HEADER_LINES = 4
# Words closer than this share of their height belong to the same cell.
CELL_GAP_SHARE = 0.55
# A footnote mark set small beside a cell ("Trips ⁽²⁾", "Revenue (1), (2)", "42.1*").
_MARK = re.compile(
    r"^(\(\d{1,2}\)|\([a-z]\)|[*†‡§¶]{1,3}|[a-z])(\s*,\s*(\(\d{1,2}\)|\([a-z]\)|[*†‡§¶]{1,3}|[a-z]))*$"
)
_ACCENTS = {"ˆ", "˜", "¨", "´", "`", "^", "~", "¯", "˙"}
_STANDALONE = {"$", "€", "£", "%", ")", "US$"}
# Font names of typewriter faces, which set code listings rather than tables.
_MONOSPACE_FONTS = ("mono", "courier", "consolas", "menlo", "cmtt", "typewriter", "inconsolata")


@dataclass(slots=True)
class Rule:
    """A horizontal or vertical ruling line."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def y(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def x(self) -> float:
        return (self.x0 + self.x1) / 2

    def x_overlap(self, x0: float, x1: float) -> float:
        return min(self.x1, x1) - max(self.x0, x0)


@dataclass(slots=True)
class Fragment:
    """Words of one cell on one baseline."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    words: list[tuple] = field(default_factory=list)

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass
class Row:
    fragments: list[Fragment] = field(default_factory=list)
    spans_next: bool = False  # its fragments also cover the row below (vertically centred)

    @property
    def y0(self) -> float:
        return min(f.y0 for f in self.fragments)

    @property
    def y1(self) -> float:
        return max(f.y1 for f in self.fragments)

    @property
    def cy(self) -> float:
        return median(f.cy for f in self.fragments)


@dataclass(slots=True)
class Caption:
    label: str
    line_index: int  # in page.lines
    text: str
    bbox: BBox
    end_index: int = 0  # one past its last line in page.lines

    def holds(self, line_index: int) -> bool:
        return self.line_index <= line_index < self.end_index


def extract_tables(layout: DocumentLayout) -> list[Table]:
    """All tables of the document in reading order, captioned ones labelled "Table N"."""
    found: list[tuple[int, Table]] = []
    seen_labels: set[str] = set()
    for page in layout.pages:
        views = [page]
        rotation = _sideways_rotation(page)
        if rotation:
            views.append(upright_view(page, turn_matrix(page, rotation)))
        for view in views:
            captions = [c for c in _captions(view, layout.body_size) if c.label not in seen_labels]
            looked = captions or _looks_numeric(view)
            from_text = _page_tables(view, captions, layout) if looked else []
            for table in with_grid_tables(view, from_text, layout):
                if view.matrix is not None:
                    _back_to_page(table, ~view.matrix, layout)
                if table.label:
                    seen_labels.add(table.label)
                found.append((table.seq, table))
    found.sort(key=lambda item: item[0])
    tables = [table for _, table in found]
    for ordinal, table in enumerate(tables):
        table.ordinal = ordinal
    return tables


def _sideways_rotation(page: PageLayout) -> int:
    """The rotation of a sideways table on the page (a landscape table in a portrait paper),
    or 0: enough text running up or down the page to hold one."""
    turned = Counter(line.rotation for line in page.lines if line.rotation)
    if not turned:
        return 0
    rotation, count = turned.most_common(1)[0]
    return rotation if count >= SIDEWAYS_LINES else 0


def _back_to_page(table: Table, to_page: pymupdf.Matrix, layout: DocumentLayout) -> None:
    """Boxes of a table read in a turned view, in page coordinates again."""
    table.bbox = _turn_box(table.bbox, to_page)
    for cell in table.cells:
        if cell.bbox is not None:
            cell.bbox = _turn_box(cell.bbox, to_page)
    table.seq = layout.seq_at(table.page_number, table.bbox)


def _turn_box(bbox: BBox, matrix: pymupdf.Matrix) -> BBox:
    rect = pymupdf.Rect(bbox) * matrix
    return (rect.x0, rect.y0, rect.x1, rect.y1)


def _captions(page: PageLayout, body_size: float) -> list[Caption]:
    captions: list[Caption] = []
    labels: set[str] = set()
    for i, line in enumerate(page.lines):
        if line.furniture or line.rotation or not _starts_caption(page.lines, i):
            continue
        match = _CAPTION.match(line.text)
        if not match or not _caption_like(match, line, body_size):
            continue
        label = f"Table {match['num']}"
        if label in labels:
            continue
        labels.add(label)
        end = _caption_end(page.lines, i)
        block = page.lines[i:end]
        bbox = (
            min(x.bbox[0] for x in block),
            line.bbox[1],
            max(x.bbox[2] for x in block),
            max(x.bbox[3] for x in block),
        )
        text = re.sub(r"(\w)- (\w)", r"\1\2", " ".join(x.text for x in block))
        captions.append(Caption(label, i, text, bbox, end))
    return captions


def _starts_block(lines: list[Line], i: int) -> bool:
    return i == 0 or lines[i - 1].block != lines[i].block


def _starts_caption(lines: list[Line], i: int) -> bool:
    """A caption opens a block, or follows table text that PyMuPDF put in the same block (a
    change of size or weight tells them apart)."""
    return _starts_block(lines, i) or _style_break(lines[i - 1], lines[i])


def _style_break(before: Line, line: Line) -> bool:
    return abs(before.size - line.size) > 0.5 or before.bold != line.bold


def _caption_end(lines: list[Line], i: int) -> int:
    """One past the caption's last line: the rest of its block, up to a change of size (table
    text below a caption in the same block). A bare label ("Table 1") takes the title line
    set right under it as its own block."""
    end = i + 1
    if _CAPTION.fullmatch(lines[i].text.strip()) and end < len(lines):
        title = lines[end]
        gap = title.bbox[1] - lines[i].bbox[3]
        if abs(title.size - lines[i].size) <= 0.5 and -1 <= gap < 0.8 * title.size:
            i = end
            end += 1
    while (
        end < len(lines)
        and lines[end].block == lines[i].block
        and lines[end].page == lines[i].page
        and abs(lines[end].size - lines[i].size) <= 0.5
    ):
        end += 1
    return end


def _caption_like(match: re.Match, line: Line, body_size: float) -> bool:
    """Tell "Table 2: Results" from prose that starts with "Table 2 shows"."""
    rest = line.text[match.end() :]
    sep = match["sep"].strip()
    if rest and rest[0].isdigit():
        return False  # a table row whose first cell reads "Table"
    if not rest or sep in (":", "|"):
        return True
    if not sep and rest[0].islower():
        return False  # "Table 2 compares ...": a sentence about the table
    smaller = line.size < body_size - 0.5
    if sep == ".":
        return "." not in match["num"] or smaller
    return smaller or line.bold


def _looks_numeric(page: PageLayout) -> bool:
    """Several lines that read as table rows: a financial statement or other uncaptioned table."""
    count = 0
    for line in page.lines:
        if _is_numeric_row(line):
            count += 1
            if count >= MIN_NUMERIC_ROWS:
                return True
    return False


def _is_numeric_row(line: Line) -> bool:
    """A line holding at least two numbers, and mostly numbers ("Trips 5,025 6,368 27 %")."""
    if _is_monospace(line.font):
        return False  # code listings ("/Pages 3 0 R") read as numbers but are not tables
    tokens = [t for t in line.text.split() if t not in _STANDALONE]
    if sum(any(ch.isdigit() for ch in t) for t in tokens) < 2:
        return False  # most lines of a page: cheap to rule out before parsing numbers
    is_number = [parse_number(t)[0] is not None for t in tokens]
    numbers = sum(is_number)
    # a long row label followed by its values ("Net loss attributable to ... (6,768) (496)")
    trailing = next((i for i, n in enumerate(reversed(is_number)) if not n), len(tokens))
    return numbers >= 2 and (numbers * 3 >= len(tokens) or (trailing >= 2 and len(tokens) <= 16))


def _is_monospace(font: str) -> bool:
    name = font.lower()
    return any(key in name for key in _MONOSPACE_FONTS)


# ---------------------------------------------------------------------------------------------
# Regions


@dataclass
class Region:
    x0: float
    y0: float
    x1: float
    y1: float
    rules: list[Rule]  # horizontal rules inside, top to bottom
    caption: Caption | None = None

    @property
    def rect(self) -> pymupdf.Rect:
        return pymupdf.Rect(self.x0, self.y0, self.x1, self.y1)


def _page_tables(page: PageLayout, captions: list[Caption], layout: DocumentLayout) -> list[Table]:
    # drawings cost a lot on pages with plots; only captioned tables are bounded by rules
    horizontal, vertical = _rules(page) if captions else ([], [])
    words = _words(page)
    regions: list[Region] = []
    for caption in captions:
        region = _caption_region(page, caption, horizontal, layout.body_size)
        if region and not any(_overlap(region, other) for other in regions):
            regions.append(region)
    if not captions:
        regions.extend(_numeric_regions(page, layout.body_size))
        if regions:  # rules under spanning headers tell levels from wrapped lines
            horizontal, vertical = _rules(page)
            for region in regions:
                region.rules = [r for r in horizontal if _rule_inside(r, region)]
    tables = []
    for region in regions:
        _take_header_lines(region, words, horizontal, vertical)
        table = _build_table(page, region, words, vertical, layout)
        if table is not None:
            tables.append(table)
    return tables


def _take_header_lines(
    region: Region, words: list[tuple], horizontal: list[Rule], vertical: list[Rule]
) -> None:
    """Widen the region up over header lines printed above its box: over the rule that opens
    a ruled body, or over the rows of numbers an uncaptioned table was found from (a header
    line too long to pass for a short one). A line is a header line when it holds no values
    and its cells line up with the table's columns or sit in its ruled grid
    (``_heads_table``)."""
    body = _rows_of(_words_inside(region, words))
    columns = _columns(body) if len(body) >= 2 else []
    if len(columns) < 2:
        return
    height = median(f.height for row in body for f in row.fragments)
    top = body[0]
    for row in _rows_above(region, words, top, height)[:MAX_HEADER_LINES]:
        if not _heads_table(row, top, height, columns, vertical):
            break
        top = row
    if top is body[0]:
        return
    y0 = top.y0 - 1
    ruled = [r for r in horizontal if y0 - 2 <= r.y < region.y0 - 2 and _rule_inside(r, region)]
    region.rules = sorted([*region.rules, *ruled], key=lambda r: r.y)
    region.y0 = y0


def _words_inside(region: Region, words: list[tuple]) -> list[tuple]:
    """Words whose centre lies in the region."""
    return [
        w
        for w in words
        if region.x0 - 1 <= (w[0] + w[2]) / 2 <= region.x1 + 1
        and region.y0 < (w[1] + w[3]) / 2 < region.y1
    ]


def _rows_of(words: list[tuple]) -> list[Row]:
    fragments = _fragments(words)
    return _rows(fragments) if fragments else []


def _rows_above(region: Region, words: list[tuple], top: Row, height: float) -> list[Row]:
    """The text rows just above the region's first row, nearest first."""
    reach = top.y0 - 3 * MAX_HEADER_LINES * height
    band = Region(region.x0, reach, region.x1, min(top.y0, region.y0), [])
    return list(reversed(_rows_of(_words_inside(band, words))))


def _heads_table(
    row: Row, below: Row, height: float, columns: list[tuple[float, float]], vertical: list[Rule]
) -> bool:
    """A header line of the table: close above the row under it, set no larger than the
    table's text, holding no values nor a caption, over the table's columns, and either
    one cell per column (a column's own header, or a group header centred over several) or
    one cell between the table's vertical rules."""
    tallest = max(f.height for f in row.fragments)
    if below.y0 - row.y1 > 1.5 * tallest or tallest > 1.3 * height or _has_value(row):
        return False
    if _OTHER_CAPTION.match(" ".join(f.text for f in row.fragments)):
        return False
    left, right = columns[0][0] - height, columns[-1][1] + height
    if not all(left <= f.cx <= right for f in row.fragments):
        return False
    if len(row.fragments) == 1:
        return _in_ruled_cell(row.fragments[0], below, columns, vertical)
    # a sentence or a title runs over half the table; a header cell heads a few columns
    if any(f.x1 - f.x0 > 0.5 * (right - left) for f in row.fragments):
        return False
    homes = {_column_at(f.cx, columns) for f in row.fragments}
    return len(homes) == len(row.fragments)


def _in_ruled_cell(
    frag: Fragment, below: Row, columns: list[tuple[float, float]], vertical: list[Rule]
) -> bool:
    """A fragment boxed by vertical rules that run on down into the table, one of them between
    its columns (the table's outer frame alone also boxes a title)."""
    inner = [
        v
        for v in vertical
        if columns[0][1] < v.x < columns[-1][0] and v.y0 <= frag.cy and v.y1 >= below.cy
    ]
    crossed = any(frag.x0 + 1 < v.x < frag.x1 - 1 for v in inner)
    return bool(inner) and not crossed


def _rule_inside(rule: Rule, region: Region) -> bool:
    return region.y0 - 2 <= rule.y <= region.y1 + 2 and rule.x_overlap(region.x0, region.x1) > 0


def _overlap(a: Region, b: Region) -> bool:
    return min(a.y1, b.y1) - max(a.y0, b.y0) > 2 and min(a.x1, b.x1) - max(a.x0, b.x0) > 2


def _words(page: PageLayout) -> list[tuple]:
    words = page_words(page.page)
    if page.matrix is None:
        return words
    return [(*_turn_box(w[:4], page.matrix), *w[4:]) for w in words]


def _rules(page: PageLayout) -> tuple[list[Rule], list[Rule]]:
    """Thin lines and thin filled rectangles, split into horizontal and vertical rules."""
    horizontal: list[Rule] = []
    vertical: list[Rule] = []
    for drawing in page.page.get_drawings():
        for item in drawing["items"]:
            if item[0] == "l":
                p, q = item[1], item[2]
                rect = pymupdf.Rect(min(p.x, q.x), min(p.y, q.y), max(p.x, q.x), max(p.y, q.y))
            elif item[0] == "re":
                rect = item[1]
            else:
                continue
            if page.matrix is not None:
                rect = rect * page.matrix
            if rect.height <= 2.5 and rect.width >= 8:
                horizontal.append(Rule(rect.x0, rect.y0, rect.x1, rect.y1))
            elif rect.width <= 2.5 and rect.height >= 6:
                vertical.append(Rule(rect.x0, rect.y0, rect.x1, rect.y1))
    horizontal.sort(key=lambda r: (r.y, r.x0))
    return _merge_collinear(horizontal), vertical


def _merge_collinear(rules: list[Rule]) -> list[Rule]:
    """Join segments of one rule (grids draw a rule cell by cell)."""
    merged: list[Rule] = []
    for rule in rules:
        last = merged[-1] if merged else None
        if last and abs(last.y - rule.y) < 1.0 and rule.x0 <= last.x1 + 2:
            last.x1 = max(last.x1, rule.x1)
            last.y1 = max(last.y1, rule.y1)
        else:
            merged.append(Rule(rule.x0, rule.y0, rule.x1, rule.y1))
    return merged


def _column_span(page: PageLayout, bbox: BBox) -> tuple[float, float]:
    """The text column a caption or line sits in: left, right or (on a page set in one
    column) the full width."""
    if not page.two_columns:
        # the running text plus the 30-point margins a half-page column is measured with
        left, right = page.text_span
        return (left - 30, right + 30) if right > left else (0.0, page.width)
    middle = page.width / 2
    slack = page.width * 0.03
    if bbox[2] <= middle + slack:
        return 0.0, middle
    if bbox[0] >= middle - slack:
        return middle, page.width
    return 0.0, page.width


def _caption_region(
    page: PageLayout, caption: Caption, rules: list[Rule], body_size: float
) -> Region | None:
    col_x0, col_x1 = _column_span(page, caption.bbox)
    # rules mostly in the caption's column, or across it (a full-width table under a caption
    # set at the left of a two-column page)
    near = [
        r for r in rules if r.x_overlap(col_x0, col_x1) > 0.5 * min(r.x1 - r.x0, col_x1 - col_x0)
    ]
    cap_y0, cap_y1 = caption.bbox[1], caption.bbox[3]
    above = [r for r in near if r.y <= cap_y0 + 1 and cap_y0 - r.y < MAX_CAPTION_GAP]
    below = [r for r in near if r.y >= cap_y1 - 1 and r.y - cap_y1 < MAX_CAPTION_GAP]
    # Captions sit above tables in most journals but below them in ACL papers; the nearer
    # rule (with only non-prose text in between) tells which.
    options = []
    if above:
        options.append((cap_y0 - above[-1].y, -1))
    if below:
        options.append((below[0].y - cap_y1, 1))
    for _, direction in sorted(options):
        region = _rule_chain(page, caption, near, direction, body_size, (col_x0, col_x1))
        if region:
            return region
    return _text_region(page, caption, body_size, (col_x0, col_x1))


def _rule_chain(
    page: PageLayout,
    caption: Caption,
    rules: list[Rule],
    direction: int,
    body_size: float,
    column: tuple[float, float],
) -> Region | None:
    """Walk from the caption across consecutive rules while only table text lies between."""
    if direction < 0:
        ordered = [r for r in reversed(rules) if r.y <= caption.bbox[1] + 1]
        edge = caption.bbox[1]
    else:
        ordered = [r for r in rules if r.y >= caption.bbox[3] - 1]
        edge = caption.bbox[3]
    chain: list[Rule] = []
    for rule in ordered:
        lo, hi = sorted((edge, rule.y))
        if _blocked(page, caption, lo, hi, body_size, column):
            break
        if chain and rule.x_overlap(chain[0].x0, chain[0].x1) <= 0:
            continue
        chain.append(rule)
        edge = rule.y
    chain.sort(key=lambda r: r.y)
    chain = _trim_narrow_ends(chain)
    if not chain:
        return None
    x0 = min(r.x0 for r in chain)
    x1 = max(r.x1 for r in chain)
    y0 = min(r.y for r in chain)
    y1 = max(r.y for r in chain)
    if len(chain) == 1 or y1 - y0 < 8:
        return None
    return Region(x0, y0, x1, y1, chain, caption)


def _trim_narrow_ends(chain: list[Rule]) -> list[Rule]:
    """A table's top and bottom rules span it; a short rule past them (a footnote separator, a
    plot's axis) lies outside, while short rules inside are cmidrules."""
    widest = max((r.x1 - r.x0 for r in chain), default=0.0)
    start, end = 0, len(chain)
    while start < end and chain[start].x1 - chain[start].x0 < 0.6 * widest:
        start += 1
    while end > start and chain[end - 1].x1 - chain[end - 1].x0 < 0.6 * widest:
        end -= 1
    return chain[start:end]


def _blocked(
    page: PageLayout,
    caption: Caption,
    lo: float,
    hi: float,
    body_size: float,
    column: tuple[float, float],
) -> bool:
    """Whether prose, a heading or another caption lies between two heights."""
    for i, line in enumerate(page.lines):
        if caption.holds(i) or line.furniture:
            continue
        mid = (line.bbox[1] + line.bbox[3]) / 2
        if not lo < mid < hi or min(line.bbox[2], column[1]) - max(line.bbox[0], column[0]) <= 0:
            continue
        if _OTHER_CAPTION.match(line.text) and _starts_caption(page.lines, i):
            return True
        if _is_prose(line, body_size, column):
            return True
    return False


def _is_prose(line: Line, body_size: float, column: tuple[float, float]) -> bool:
    """A body-size line that fills its text column with words: a sentence, not a row. A
    narrow column's line holds fewer words (about one per 30 points)."""
    width = line.bbox[2] - line.bbox[0]
    column_width = column[1] - column[0] - 60
    words = line.text.split()
    return (
        line.size >= body_size - 0.3
        and width > 0.8 * column_width
        and len(words) >= min(8, max(5, column_width // 30))
        # values, dashes standing for none included ("... respectively — —")
        and sum(is_data_text(w) for w in words) * 3 < len(words)
    )


def _text_region(
    page: PageLayout, caption: Caption, body_size: float, column: tuple[float, float]
) -> Region | None:
    """No rules: take the run of non-prose lines next to the caption (below first)."""
    best: Region | None = None
    for direction in (1, -1):
        lines = _adjacent_lines(page, caption, body_size, column, direction)
        if len(lines) < 2:
            continue
        region = Region(
            min(line.bbox[0] for line in lines) - 1,
            min(line.bbox[1] for line in lines) - 1,
            max(line.bbox[2] for line in lines) + 1,
            max(line.bbox[3] for line in lines) + 1,
            [],
            caption,
        )
        if best is None or len(lines) > 3 * _line_count(best, page):
            best = region
    return best


def _line_count(region: Region, page: PageLayout) -> int:
    return sum(1 for line in page.lines if region.y0 <= line.bbox[1] <= region.y1)


def _adjacent_lines(
    page: PageLayout, caption: Caption, body_size: float, column: tuple[float, float], step: int
) -> list[Line]:
    candidates = [
        line
        for i, line in enumerate(page.lines)
        if not line.furniture
        and not caption.holds(i)
        and min(line.bbox[2], column[1]) - max(line.bbox[0], column[0]) > 0
        and (line.bbox[1] >= caption.bbox[3] - 1 if step > 0 else line.bbox[3] <= caption.bbox[1])
    ]
    candidates.sort(key=lambda line: line.bbox[1] * step)
    taken: list[Line] = []
    edge = caption.bbox[3] if step > 0 else caption.bbox[1]
    for line in candidates:
        gap = (line.bbox[1] - edge) if step > 0 else (edge - line.bbox[3])
        if gap > 2.2 * line.size or _is_prose(line, body_size, column):
            break
        if _OTHER_CAPTION.match(line.text):
            break
        taken.append(line)
        edge = max(edge, line.bbox[3]) if step > 0 else min(edge, line.bbox[1])
    return taken


def _numeric_regions(page: PageLayout, body_size: float) -> list[Region]:
    """Uncaptioned tables: runs of numeric rows, with the short header lines just above."""
    lines = sorted(
        (line for line in page.body_lines() if not line.rotation), key=lambda line: line.bbox[1]
    )
    regions: list[Region] = []
    i = 0
    while i < len(lines):
        if not _is_numeric_row(lines[i]):
            i += 1
            continue
        # on a two-column page a table in one column never takes lines from the other
        column = _column_span(page, lines[i].bbox)
        run = [lines[i]]
        numeric = 1
        end = i
        for j in range(i + 1, len(lines)):
            if not _within(lines[j], column):
                continue
            if not _continues_table(page, run[-1], lines[j], body_size):
                break
            run.append(lines[j])
            numeric += _is_numeric_row(lines[j])
            end = j
        while not _is_numeric_row(run[-1]):  # text after the last row of numbers is not the table's
            run.pop()
        above = [line for line in lines[:i] if _within(line, column)]
        for _ in range(MAX_HEADER_LINES):  # header lines just above the first numeric row
            if not above or not _continues_table(page, run[0], above[-1], body_size, up=True):
                break
            run.insert(0, above.pop())
        if numeric >= 3:
            regions.append(
                Region(
                    min(line.bbox[0] for line in run) - 1,
                    run[0].bbox[1] - 1,
                    max(line.bbox[2] for line in run) + 1,
                    run[-1].bbox[3] + 1,
                    [],
                )
            )
        i = end + 1
    return regions


def _within(line: Line, column: tuple[float, float]) -> bool:
    width = max(line.bbox[2] - line.bbox[0], 1.0)
    return min(line.bbox[2], column[1]) - max(line.bbox[0], column[0]) > 0.5 * width


def _continues_table(
    page: PageLayout, line: Line, other: Line, body_size: float, up: bool = False
) -> bool:
    """Whether the next line (or, going up, the previous one) still belongs to the table.
    Prose is judged against its own text column: a line of a two-column page's left column is
    short, but it is still a sentence."""
    gap = line.bbox[1] - other.bbox[3] if up else other.bbox[1] - line.bbox[3]
    if gap > 1.2 * other.size:
        return False
    if _is_numeric_row(other):
        return True
    column = _column_span(page, other.bbox)
    # an abstract or a footnote is set a point smaller than the body, and is still prose
    if _is_prose(other, body_size - 1.0, column):
        return False
    if up:  # above the numbers: short header lines, never the end of a paragraph
        return len(other.text) <= 60 and not _in_paragraph(page, other, body_size)
    # below: a row label may run long ("Common stock, $0.00001 par value, 5,000,000 shares")
    return len(other.text) <= 120


def _in_paragraph(page: PageLayout, line: Line, body_size: float) -> bool:
    """A line whose block holds prose: the tail of a paragraph ("... period.")."""
    return any(
        other.block == line.block
        and other is not line
        and _is_prose(other, body_size - 1.0, _column_span(page, other.bbox))
        for other in page.lines
    )


# ---------------------------------------------------------------------------------------------
# Grid


def _build_table(
    page: PageLayout,
    region: Region,
    words: list[tuple],
    vertical: list[Rule],
    layout: DocumentLayout,
) -> Table | None:
    fragments = _fragments(_words_inside(region, words))
    if len(fragments) < 2:
        return None
    rows = _rows(fragments)
    columns = _columns(rows)
    if len(columns) < 2 and _is_framed_text(region, rows):
        columns = [(region.x0, region.x1)]
    elif len(rows) < 2 or len(columns) < 2:
        return None
    for r, row in enumerate(rows):
        numeric_row = _has_number(row)
        below = rows[r + 1] if r + 1 < len(rows) else None
        row.fragments = [
            part
            for f in row.fragments
            for part in (
                [f]
                if _heads_subcolumns(f, below)
                else _split_across_columns(f, columns, numeric_row)
            )
        ]
    rows = _join_stacked_lines(rows, columns, region.rules, layout.printed)
    rows = _join_wrapped_labels(rows, columns, layout.printed)
    cells = _cells(rows, columns, region, vertical)
    # a box of text has no header row: its first line is text like the rest
    header_rows = 0 if len(columns) == 1 else _ruled_header_rows(rows, region)
    bbox = (region.x0, region.y0, region.x1, region.y1)
    caption = region.caption
    table = finish_table(
        cells,
        ordinal=0,
        page_number=page.number,
        bbox=bbox,
        label=caption.label if caption else None,
        caption=caption.text if caption else None,
        header_rows=header_rows,
        seq=layout.seq_at(page.number, bbox),
    )
    doubts = [] if caption else ["no caption: found from rows of numbers"]
    if page.matrix is not None:
        doubts.append("read sideways: the page was turned to read it")
    return check_structure(table, doubts)


def _has_number(row: Row) -> bool:
    return any(parse_number(f.text)[0] is not None for f in row.fragments)


def _heads_subcolumns(frag: Fragment, below: Row | None) -> bool:
    """A header over a row of sub-headers ("After Perturb" over "ALL" and "VP") spans them,
    even when each of its words sits over one of them; tight headers over data do not."""
    if below is None or _has_number(below) or len(frag.words) < 2:
        return False
    under = [f for f in below.fragments if frag.x0 - 2 <= f.cx <= frag.x1 + 2]
    return len(under) >= 2


def _join_stacked_lines(
    rows: list[Row], columns: list[tuple[float, float]], rules: list[Rule], printed: PrintedWords
) -> list[Row]:
    """One header cell set on several lines ("Age group" over "(yrs)") is one cell, not two
    levels. A line joins the header text right above it when it is the only line in that
    text's reach: a header over several sub-headers is a level ("Top-20" over five datasets),
    and so is a year, a ruled-off line or a label repeated along its row ("F1" under each
    dataset)."""
    header_end = _first_value_row(rows)
    if header_end in (0, 1, len(rows)) or len(columns) < 2:
        return rows
    stub_edge = _stub_edge(rows, columns)
    for r in range(1, header_end):
        for frag in list(rows[r].fragments):
            upper = _stacked_parent(frag, rows, r, stub_edge, rules)
            if upper is None:
                continue
            owner, parent = upper
            owner.fragments[owner.fragments.index(parent)] = _joined(parent, frag, printed)
            rows[r].fragments.remove(frag)
    return [row for row in rows if row.fragments]


# A row label broken here goes on in the next line ("Net loss attributable to" / "Uber, Inc.").
_OPEN_END = re.compile(r"([-,(/&]|\b(and|or|of|for|from|to|in|on|the|a|an|with|by|per|net))$", re.I)


def _join_wrapped_labels(
    rows: list[Row], columns: list[tuple[float, float]], printed: PrintedWords
) -> list[Row]:
    """A row label that wraps onto a second line is one label, on the row holding its values.

    Below the header, a line holding only a label joins the row above when it reads as that
    label's continuation (it starts in lower case, or the label above ends open: "and", ",").
    A label-only line whose label ends open joins the row below it, where financial statements
    print the values (on the label's last line)."""
    if len(columns) < 2:
        return rows
    stub_edge = _stub_edge(rows, columns)
    start = _first_value_row(rows)
    out = rows[:start]
    for row in rows[start:]:
        label = _lone_label(row, stub_edge)
        above = out[-1] if len(out) > start else None
        head = _lone_label(above, stub_edge) if above else None
        if above and head is not None and label is None and _OPEN_END.search(head.text):
            _merge_label(row, head, stub_edge, printed)  # the label above goes on in this row
            out[-1] = row
        elif above and label is not None and _continues(label, above, stub_edge):
            _merge_label(above, label, stub_edge, printed)
        else:
            out.append(row)
    return out


def _lone_label(row: Row, stub_edge: float) -> Fragment | None:
    """The row's label if it is all the row holds."""
    if len(row.fragments) == 1 and row.fragments[0].x1 <= stub_edge + 2:
        return row.fragments[0]
    return None


def _continues(label: Fragment, above: Row, stub_edge: float) -> bool:
    first = [f for f in above.fragments if f.x1 <= stub_edge + 2]
    if not first or label.y0 - first[0].y1 > 0.6 * label.height:
        return False
    return label.text[:1].islower() or bool(_OPEN_END.search(first[0].text))


def _merge_label(into: Row, label: Fragment, stub_edge: float, printed: PrintedWords) -> None:
    """Join a label from a neighbouring line with the label of row ``into``, in reading order."""
    own = next((f for f in into.fragments if f.x1 <= stub_edge + 2), None)
    if own is None:
        into.fragments.insert(0, label)
        return
    upper, lower = (label, own) if label.cy < own.cy else (own, label)
    into.fragments[into.fragments.index(own)] = _joined(upper, lower, printed)


def _joined(upper: Fragment, lower: Fragment, printed: PrintedWords) -> Fragment:
    """Two lines of one cell as one fragment ("Pre-treat-" and "ment" read "Pre-treatment",
    ``language.hyphens``)."""
    joined = _fragment([*upper.words, *lower.words])
    joined.text = join_lines(upper.text, lower.text, printed)
    return joined


def _first_value_row(rows: list[Row]) -> int:
    """Where the header ends: the first row holding a value (len(rows) when none does)."""
    return next((r for r, row in enumerate(rows) if _has_value(row)), len(rows))


def _stub_edge(rows: list[Row], columns: list[tuple[float, float]]) -> float:
    """The left edge of the first column of values: row labels sit left of it."""
    return columns[min(_first_numeric_column(rows, columns), len(columns) - 1)][0]


def _stacked_parent(
    frag: Fragment, rows: list[Row], r: int, stub_edge: float, rules: list[Rule]
) -> tuple[Row, Fragment] | None:
    """The header fragment frag continues, with the row holding it, if any."""
    owner = next((row for row in reversed(rows[:r]) if _overlapping(row, frag)), None)
    if owner is None:
        return None
    above = _overlapping(owner, frag)
    parent = above[0]
    lo, hi = _reach(parent, owner, stub_edge)
    # lines under text higher up belong to that text, not to the parent
    higher = rows[: rows.index(owner)]
    under = [
        f
        for f in rows[r].fragments
        if lo <= f.cx <= hi and (f is frag or not any(_overlapping(row, f) for row in higher))
    ]
    if len(above) > 1 or under != [frag] or frag.y0 - parent.y1 > 1.2 * frag.height:
        return None
    if is_year(parent.text) or is_year(frag.text):
        return None
    if sum(f.text == frag.text for f in rows[r].fragments) > 1:
        return None
    ruled = any(
        parent.y1 - 1 <= rule.y <= frag.y0 + 1 and rule.x_overlap(frag.x0, frag.x1) > 0
        for rule in rules
    )
    return None if ruled else (owner, parent)


def _overlapping(row: Row, frag: Fragment) -> list[Fragment]:
    return [g for g in row.fragments if _x_overlaps(g, frag)]


def _reach(frag: Fragment, row: Row, stub_edge: float) -> tuple[float, float]:
    """The x range a header fragment can head: halfway to its neighbours in its row, on its
    own side of the stub (row labels) edge."""
    lo, hi = (float("-inf"), stub_edge) if frag.cx < stub_edge else (stub_edge, float("inf"))
    for other in row.fragments:
        if other.x1 <= frag.x0:
            lo = max(lo, (other.x1 + frag.x0) / 2)
        elif other.x0 >= frag.x1:
            hi = min(hi, (frag.x1 + other.x0) / 2)
    return lo, hi


def _x_overlaps(a: Fragment, b: Fragment) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 0.3 * min(a.x1 - a.x0, b.x1 - b.x0)


def _is_framed_text(region: Region, rows: list[Row]) -> bool:
    """A captioned box of text between rules ("Table 10: Annotation guidelines"): a table of
    one column, one cell per line."""
    return region.caption is not None and len(region.rules) >= 2 and len(rows) >= 3


def _fragments(words: list[tuple]) -> list[Fragment]:
    """Join words of one text line into cell fragments, splitting at wide gaps."""
    by_line: dict[tuple[int, int], list[tuple]] = {}
    for w in words:
        if w[4] in _ACCENTS:
            continue  # a hat or tilde drawn over the cell's text
        by_line.setdefault((w[5], w[6]), []).append(w)
    fragments: list[Fragment] = []
    for line_words in by_line.values():
        line_words.sort(key=lambda w: w[0])
        current: list[tuple] = []
        for w in line_words:
            height = w[3] - w[1]
            if current and (
                w[0] - current[-1][2] > CELL_GAP_SHARE * height or _both_numbers(current[-1], w)
            ):
                fragments.append(_fragment(current))
                current = []
            current.append(w)
        if current:
            fragments.append(_fragment(current))
    return _attach_marks(_attach_symbols(fragments))


def _both_numbers(left: tuple, right: tuple) -> bool:
    """Two numbers side by side are two cells, however narrow the gap."""
    return all(w[4] not in _STANDALONE and parse_number(w[4])[0] is not None for w in (left, right))


def _one_word_per_column(words: list[tuple], columns: list[tuple[float, float]]) -> bool:
    homes = []
    for word in words:
        centre = (word[0] + word[2]) / 2
        inside = [
            i
            for i, (x0, x1) in enumerate(columns)
            if x0 - 1 <= centre <= x1 + 1 and word[2] - word[0] <= x1 - x0 + 8
        ]
        if not inside:
            return False
        homes.append(inside[0])
    return len(set(homes)) == len(homes)


def _fragment(words: list[tuple]) -> Fragment:
    return Fragment(
        min(w[0] for w in words),
        min(w[1] for w in words),
        max(w[2] for w in words),
        max(w[3] for w in words),
        " ".join(w[4] for w in words),
        list(words),
    )


def _attach_symbols(fragments: list[Fragment]) -> list[Fragment]:
    """Glue a lone "$" to the number after it and a lone "%" or ")" to the number before it."""
    fragments.sort(key=lambda f: (round(f.cy), f.x0))
    out: list[Fragment] = []
    pending: Fragment | None = None
    for frag in fragments:
        if pending and abs(pending.cy - frag.cy) < 0.5 * frag.height:
            frag = _fragment([*pending.words, *frag.words])
            pending = None
        elif pending:
            out.append(pending)
            pending = None
        if frag.text in ("$", "€", "£", "US$"):
            pending = frag
            continue
        if frag.text in ("%", ")") and out and abs(out[-1].cy - frag.cy) < 0.5 * frag.height:
            last = out[-1]
            out[-1] = Fragment(
                last.x0, last.y0, frag.x1, last.y1, last.text + frag.text, last.words + frag.words
            )
            continue
        out.append(frag)
    if pending:
        out.append(pending)
    return out


def _attach_marks(fragments: list[Fragment]) -> list[Fragment]:
    """Keep a small raised footnote mark with the cell it follows, never as a column of its
    own (PyMuPDF puts superscripts on lines of their own)."""
    marks = [f for f in fragments if _MARK.match(f.text)]
    kept = [f for f in fragments if not _MARK.match(f.text)]
    for mark in marks:
        host = _mark_host(mark, kept)
        if host is None:
            kept.append(mark)
            continue
        kept[kept.index(host)] = Fragment(
            host.x0,
            host.y0,
            max(host.x1, mark.x1),
            host.y1,
            f"{host.text} {mark.text}",
            [*host.words, *mark.words],
        )
    return kept


def _mark_host(mark: Fragment, fragments: list[Fragment]) -> Fragment | None:
    """The fragment a mark is set against: just left of it, taller, on the same line."""
    hosts = [
        f
        for f in fragments
        if mark.height < 0.85 * f.height
        and f.y0 - 1 <= mark.cy <= f.y1 + 1
        and -1.5 <= mark.x0 - f.x1 <= 0.8 * f.height
    ]
    return min(hosts, key=lambda f: mark.x0 - f.x1, default=None)


def _rows(fragments: list[Fragment]) -> list[Row]:
    """Group fragments by vertical centre; mark rows centred between their neighbours."""
    fragments = sorted(fragments, key=lambda f: f.cy)
    tolerance = 0.45 * median(f.height for f in fragments)
    rows: list[Row] = []
    for frag in fragments:
        if rows and abs(rows[-1].cy - frag.cy) <= tolerance:
            rows[-1].fragments.append(frag)
        else:
            rows.append(Row([frag]))
    return _merge_centred_rows(rows)


def _merge_centred_rows(rows: list[Row]) -> list[Row]:
    """A label drawn between two rows ("Single" beside "DPR" and "BM25 + DPR") spans both."""
    out: list[Row] = []
    i = 0
    while i < len(rows):
        row = rows[i]
        if out and i + 1 < len(rows) and _centred_between(row, out[-1], rows[i + 1]):
            out[-1].fragments.extend(row.fragments)
            out[-1].spans_next = True
            for frag in row.fragments:
                frag.y1 = max(frag.y1, rows[i + 1].y1)
        else:
            out.append(row)
        i += 1
    return out


def _centred_between(row: Row, above: Row, below: Row) -> bool:
    overlaps_above = above.y1 - row.y0
    overlaps_below = row.y1 - below.y0
    height = row.y1 - row.y0
    return (
        overlaps_above > 0.2 * height
        and overlaps_below > 0.2 * height
        and not _shares_columns(row, above)
        and not _shares_columns(row, below)
    )


def _shares_columns(a: Row, b: Row) -> bool:
    return any(min(f.x1, g.x1) - max(f.x0, g.x0) > 0 for f in a.fragments for g in b.fragments)


def _columns(rows: list[Row]) -> list[tuple[float, float]]:
    """Column extents: x ranges covered by the fragments of most of the fullest rows.

    Counting coverage (rather than merging intervals) keeps one overlong cell, such as a label
    run into its number, from fusing two columns.
    """
    most = max(len(row.fragments) for row in rows)
    full_rows = [row for row in rows if len(row.fragments) >= max(2, 0.6 * most)]
    if not full_rows:
        return []
    left = int(min(f.x0 for row in full_rows for f in row.fragments))
    right = int(max(f.x1 for row in full_rows for f in row.fragments)) + 1
    coverage = [0] * (right - left + 1)
    for row in full_rows:
        for f in row.fragments:
            for x in range(int(f.x0) - left, int(f.x1) - left + 1):
                coverage[x] += 1
    # one overlong cell must not bridge a gap that every other row leaves open
    needed = 1 if len(full_rows) < 3 else max(2, 0.2 * len(full_rows))
    columns: list[tuple[float, float]] = []
    start = None
    for x, count in enumerate([*coverage, 0]):
        if count >= needed and start is None:
            start = x
        elif count < needed and start is not None:
            columns.append((start + left, x - 1 + left))
            start = None
    full = {id(row) for row in full_rows}
    header = [f for row in rows[: _first_value_row(rows)] if id(row) in full for f in row.fragments]
    return _add_gap_columns(columns, full_rows, header)


def _add_gap_columns(
    columns: list[tuple[float, float]], full_rows: list[Row], header: list[Fragment]
) -> list[tuple[float, float]]:
    """A full row's cell that falls between columns heads a column whose body is blank (e.g.
    checkmarks drawn as graphics), unless the printed header (``header``: the cells of full
    rows above the values) places it: a value under a header cell that heads a column is in
    that column ("4 559" set with a space), and a header cell beside a column no header
    names heads that column (a narrow number right-aligned under a wider centred header)."""
    columns = list(columns)
    extra: list[Fragment] = []
    for f in (f for row in full_rows for f in row.fragments):
        if any(_spans_overlap(column, (f.x0, f.x1)) for column in columns):
            continue
        if f in header:
            i = _unheaded_neighbour(f, columns, header)
            if i is not None:
                columns[i] = (min(columns[i][0], f.x0), max(columns[i][1], f.x1))
                continue
        elif any(_spans_overlap((h.x0, h.x1), (f.x0, f.x1)) for h in header):
            continue
        extra.append(f)
    return sorted([*columns, *_merge_extras(extra, header)])


def _merge_extras(extra: list[Fragment], header: list[Fragment]) -> list[tuple[float, float]]:
    """The x ranges of new columns: overlapping cells are one column, and so are a header cell
    and a value right beside it (within a line height)."""
    merged: list[tuple[float, float]] = []
    last: Fragment | None = None
    for f in sorted(extra, key=lambda f: f.x0):
        beside = last is not None and (f in header) != (last in header)
        if merged and (f.x0 <= merged[-1][1] or beside and f.x0 - merged[-1][1] <= f.height):
            merged[-1] = (merged[-1][0], max(merged[-1][1], f.x1))
        else:
            merged.append((f.x0, f.x1))
        last = f
    return merged


def _spans_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return min(a[1], b[1]) - max(a[0], b[0]) > 0


def _unheaded_neighbour(
    frag: Fragment, columns: list[tuple[float, float]], header: list[Fragment]
) -> int | None:
    """The column right beside a header cell (within a line height) that no header cell
    overlaps, if any: the column that cell heads."""
    near = [
        (max(x0 - frag.x1, frag.x0 - x1), i)
        for i, (x0, x1) in enumerate(columns)
        if max(x0 - frag.x1, frag.x0 - x1) <= frag.height
        and not any(_spans_overlap((h.x0, h.x1), (x0, x1)) for h in header)
    ]
    return min(near)[1] if near else None


def _split_across_columns(
    frag: Fragment, columns: list[tuple[float, float]], numeric_row: bool
) -> list[Fragment]:
    """Split a fragment whose words sit in different columns (tight "CLS USR CITE REC")."""
    first, last = _covered_columns(frag, columns)
    if first == last or len(frag.words) < 2:
        return [frag]
    groups: dict[int, list[tuple]] = {}
    for word in frag.words:
        centre = (word[0] + word[2]) / 2
        home = [i for i, (x0, x1) in enumerate(columns) if x0 - 1.5 <= centre <= x1 + 1.5]
        if not home and not numeric_row:
            return [frag]
        groups.setdefault(home[0] if home else _column_at(centre, columns), []).append(word)
    if len(groups) < 2:
        return [frag]
    if not numeric_row and not _one_word_per_column(frag.words, columns):
        return [frag]  # a spanning header such as "Citation prediction" stays whole
    return [_fragment(words) for _, words in sorted(groups.items())]


@dataclass
class GridContext:
    """What placing one row's fragments needs to know about the whole table."""

    rows: list[Row]
    columns: list[tuple[float, float]]
    region: Region
    vertical: list[Rule]
    first_data_col: int


Spans = dict[int, tuple[int, list[Fragment]]]  # first column -> (last column, fragments)


def _cells(
    rows: list[Row], columns: list[tuple[float, float]], region: Region, vertical: list[Rule]
) -> list[TableCell]:
    ctx = GridContext(rows, columns, region, vertical, _first_numeric_column(rows, columns))
    cells: list[TableCell] = []
    parent: Spans = {}
    labelled: set[int] = set()  # columns some header row above has text over
    for r, row in enumerate(rows):
        if _is_section_label(row, region):
            frag = row.fragments[0]
            box = (frag.x0, frag.y0, frag.x1, frag.y1)
            cells.append(TableCell(row=r, col=0, col_span=len(columns), text=frag.text, bbox=box))
            parent = {}
            continue
        header_like = _is_header_like(row, rows, r)
        spans = _place(row, columns, header_like)
        if header_like and len(spans) < len(columns):
            # the header row right above the data labels single columns: it only widens over
            # columns no header row names (a "Train" over two unlabelled columns)
            leaf = not (r + 1 < len(rows) and _is_header_like(rows[r + 1], rows, r + 1))
            spans = _extend_spans(ctx, r, spans, parent, labelled if leaf else set())
        if header_like:
            labelled |= {i for c, (last, _) in spans.items() for i in range(c, last + 1)}
        parent = spans if header_like else {}
        for col, (last, frags) in spans.items():
            cells.append(
                TableCell(
                    row=r,
                    col=col,
                    col_span=last - col + 1,
                    row_span=2 if row.spans_next and _is_centred_label(frags, row) else 1,
                    text=" ".join(f.text for f in frags),
                    bbox=(
                        min(f.x0 for f in frags),
                        min(f.y0 for f in frags),
                        max(f.x1 for f in frags),
                        max(f.y1 for f in frags),
                    ),
                )
            )
    return _drop_covered(cells)


def _place(row: Row, columns: list[tuple[float, float]], header_like: bool) -> Spans:
    """Columns of each fragment: those it overlaps, or (header text) the one under its centre."""
    spans: Spans = {}
    for frag in sorted(row.fragments, key=lambda f: f.x0):
        first, last = _covered_columns(frag, columns)
        if header_like:
            first = last = _column_at(frag.cx, columns)
        if first in spans:
            spans[first] = (max(last, spans[first][0]), [*spans[first][1], frag])
        else:
            spans[first] = (last, [frag])
    return spans


def _column_at(x: float, columns: list[tuple[float, float]]) -> int:
    return min(
        range(len(columns)),
        key=lambda i: 0 if columns[i][0] <= x <= columns[i][1] else abs(sum(columns[i]) / 2 - x),
    )


def _is_centred_label(frags: list[Fragment], row: Row) -> bool:
    return any(f.y1 > row.y1 - 0.5 and f.cy > row.cy + 1 for f in frags)


def _drop_covered(cells: list[TableCell]) -> list[TableCell]:
    """A row-spanning label hides what sits under it in the next row (nothing, normally)."""
    covered = {
        (c.row + 1, col)
        for c in cells
        if c.row_span > 1
        for col in range(c.col, c.col + c.col_span)
    }
    return [c for c in cells if (c.row, c.col) not in covered]


def _covered_columns(frag: Fragment, columns: list[tuple[float, float]]) -> tuple[int, int]:
    hits = [i for i, (x0, x1) in enumerate(columns) if min(x1, frag.x1) - max(x0, frag.x0) > 0.5]
    if hits:
        return hits[0], hits[-1]
    nearest = _column_at(frag.cx, columns)
    return nearest, nearest


def _first_numeric_column(rows: list[Row], columns: list[tuple[float, float]]) -> int:
    for i, (x0, x1) in enumerate(columns):
        texts = [f.text for row in rows for f in row.fragments if x0 <= f.cx <= x1]
        if texts and sum(parse_number(t)[0] is not None for t in texts) * 2 >= len(texts):
            return max(i, 1)
    return 1


def _extend_spans(
    ctx: GridContext, r: int, spans: Spans, parent: Spans, labelled: set[int]
) -> Spans:
    """Widen header text over the data columns it heads (never past its parent's edge)."""
    row = ctx.rows[r]
    edges = {col for col in parent} | {last + 1 for last, _ in parent.values()}
    extents = _column_extents(ctx.rows[r + 1 :], ctx.columns)
    for col in sorted(spans):
        last, frags = spans[col]
        if col < ctx.first_data_col:
            continue
        lo, hi = _span_from_rules(frags, ctx, r)
        if lo is None:
            lo, hi = _span_by_proximity(col, spans, ctx, row, edges, labelled)
            lo, hi = _aligned_span(frags, extents, col, lo, hi)
        spans[col] = (max(hi, last), frags)
        if lo < col and all(c not in spans for c in range(lo, col)):
            spans[lo] = spans.pop(col)
    return dict(sorted(spans.items()))


def _is_header_like(row: Row, rows: list[Row], r: int) -> bool:
    """Sparse text rows above the numbers are where spanning headers live."""
    texts = [f.text for f in row.fragments]
    if any(parse_number(t)[0] is not None for t in texts if not re.fullmatch(r"(19|20)\d\d", t)):
        return False
    later = rows[r + 1 :]
    return any(len(other.fragments) > len(row.fragments) for other in later[:3])


def _span_from_rules(frags: list[Fragment], ctx: GridContext, r: int) -> tuple[int | None, int]:
    """A cmidrule just under a header cell spans exactly the columns it covers."""
    cx = sum(f.cx for f in frags) / len(frags)
    bottom = max(f.y1 for f in frags)
    next_top = ctx.rows[r + 1].y0 if r + 1 < len(ctx.rows) else bottom + 10
    region = ctx.region
    for rule in region.rules:
        if not (bottom - 2 <= rule.y <= next_top + 2 and rule.x0 - 1 <= cx <= rule.x1 + 1):
            continue
        if rule.x1 - rule.x0 >= region.x1 - region.x0 - 4:
            continue  # a full rule separates rows; it says nothing about spans
        if any(rule.x0 <= f.cx <= rule.x1 for f in ctx.rows[r].fragments if f not in frags):
            continue  # a rule under several headers of the row separates rows too
        hits = [
            i
            for i, (x0, x1) in enumerate(ctx.columns)
            if rule.x0 - 2 <= (x0 + x1) / 2 <= rule.x1 + 2
        ]
        if hits:
            return hits[0], hits[-1]
    return None, 0


def _span_by_proximity(
    col: int, spans: Spans, ctx: GridContext, row: Row, edges: set[int], labelled: set[int]
) -> tuple[int, int]:
    """Give each empty data column to the nearest header text, not across a rule or edge."""
    owners = sorted(c for c in spans if c >= ctx.first_data_col)
    centres = {c: sum(f.cx for f in spans[c][1]) / len(spans[c][1]) for c in owners}
    claimed = {i for c, (last, _) in spans.items() if c != col for i in range(c, last + 1)}
    claimed |= labelled
    chosen = [col]
    for step in (-1, 1):
        i = col + step
        while ctx.first_data_col <= i < len(ctx.columns) and i not in claimed:
            if (i if step > 0 else i + 1) in edges:
                break
            centre = sum(ctx.columns[i]) / 2
            nearest = min(owners, key=lambda c: abs(centres[c] - centre))
            if nearest != col or _rule_between(ctx.vertical, centres[col], centre, row):
                break
            chosen.append(i)
            i += step
    return min(chosen), max(chosen)


def _column_extents(
    rows: list[Row], columns: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """How far each column's cells reach (a sub-header wider than the numbers under it)."""
    extents = list(columns)
    for frag in (f for row in rows for f in row.fragments):
        first, last = _covered_columns(frag, columns)
        if first == last:
            x0, x1 = extents[first]
            extents[first] = (min(x0, frag.x0), max(x1, frag.x1))
    return extents


def _aligned_span(
    frags: list[Fragment], extents: list[tuple[float, float]], col: int, lo: int, hi: int
) -> tuple[int, int]:
    """The widest columns lo..hi around col that the header text is set centred, left- or
    right-aligned over (``extents``: how far each column's cells reach). Proximity alone
    gives a group header ("South" over "Apples Pears") the ungrouped column beside its group
    ("Total") too; the text's placement tells them apart. The proximity span stays when no
    part of it lines up."""
    x0, x1 = min(f.x0 for f in frags), max(f.x1 for f in frags)
    slack = max(f.height for f in frags)
    spans = [(a, b) for a in range(lo, col + 1) for b in range(col, hi + 1)]
    aligned = [
        (a, b)
        for a, b in spans
        if min(
            abs(extents[a][0] + extents[b][1] - x0 - x1) / 2,
            abs(extents[a][0] - x0),
            abs(extents[b][1] - x1),
        )
        <= slack
    ]
    return max(aligned, key=lambda span: span[1] - span[0], default=(lo, hi))


def _rule_between(vertical: list[Rule], xa: float, xb: float, row: Row) -> bool:
    lo, hi = sorted((xa, xb))
    return any(lo < v.x < hi and v.y0 <= row.cy <= v.y1 for v in vertical)


def _ruled_header_rows(rows: list[Row], region: Region) -> int | None:
    """Rows above the full-width rule that closes the header (booktabs midrule)."""
    width = region.x1 - region.x0
    inner = [
        r.y
        for r in region.rules
        if r.x1 - r.x0 > 0.7 * width and region.y0 + 3 < r.y < region.y1 - 3
    ]
    best = None
    for y in inner:  # the last rule with only header rows above it (a rule may split levels)
        above = [row for row in rows if row.cy < y]
        values = [row for row in above if _has_value(row)]
        # a scale ("10 20 ... 100" under "Percentile") closing the header is a header row
        if values and not (values == above[-1:] and len(above) > 1 and _is_scale(values[0])):
            break
        if above and _is_section_label(above[-1], region):
            break
        if 1 <= len(above) <= 4 and len(above) < len(rows):
            best = len(above)
    return best


def _is_section_label(row: Row, region: Region) -> bool:
    """A lone label centred across the table ("Tiny", "Short") names the group of rows below
    it: the outer level of their row paths, not a column header."""
    if len(row.fragments) != 1 or _has_number(row):
        return False
    width = region.x1 - region.x0
    frag = row.fragments[0]
    return (
        frag.x1 - frag.x0 < 0.5 * width
        and abs(frag.cx - (region.x0 + region.x1) / 2) < 0.08 * width
    )


def _is_scale(row: Row) -> bool:
    """Whole numbers rising from cell to cell: the levels of a header, not measured values."""
    numbers = [parse_number(f.text)[0] for f in sorted(row.fragments, key=lambda f: f.x0)]
    if len(numbers) < 3 or any(n is None or n != int(n) for n in numbers):
        return False
    return all(a < b for a, b in zip(numbers, numbers[1:], strict=False))


def _has_value(row: Row) -> bool:
    """A number that is not a year: header rows may hold years ("2021 2020"), not values."""
    return any(
        parse_number(f.text)[0] is not None and not is_year(f.text.strip()) for f in row.fragments
    )
