"""Display equations: math set apart from the paragraphs, usually numbered "(3)" at the right.

A display is found from a seed line and grown over its neighbours:
- numbered seed: a non-prose line ending in an equation tag near its column's right edge;
- unnumbered seed: a math-font line with a relation sign, indented, with no prose beside it.
TeX splits a display into many fragments (big delimiters, sub/superscripts, the tag), so the
display is every fragment in the seed's column overlapping its rows, plus adjacent non-prose
rows closer than half a line. Prose lines (several plain words, body font) never join one.
"""

from __future__ import annotations

import re
from collections import Counter

from docsym.indexer.model import BBox, Equation
from docsym.indexer.pdf.layout import DocumentLayout, Line, PageLayout

_TAG = re.compile(r"\s*\(((?:[A-Z]\.)?[1-9]\d{0,2}(?:\.\d{1,3})?[a-h]?)\)$")
_MATH_FONT = re.compile(
    r"cmmi|cmsy|cmex|msbm|msam|eufm|eusm|rsfs|math|symbol|stix|lmmi|lmsy|lmex|esint|wasy|"
    r"txsy|txex|pxsy|pxex|mtsy|mtex|mt2|euex|cmbsy|cmmib",
    re.IGNORECASE,
)
_PLAIN_WORD = re.compile(r"^[a-z]{2,}[,.;:]?$")
_RELATION = re.compile(r"[=<>≤≥≈∝∼≡→⇒∈∑∏∫√±∂∇]")
# A display grows over neighbours closer than this share of the body size.
GROW_GAP = 0.55


def extract_equations(layout: DocumentLayout) -> list[Equation]:
    body_font = _body_font(layout)
    equations: list[Equation] = []
    for page in layout.pages:
        for box, number, text in _page_displays(page, layout.body_size, body_font):
            equations.append(
                Equation(
                    ordinal=len(equations),
                    page_number=page.number,
                    bbox=box,
                    number=number,
                    text=text,
                    seq=layout.seq_at(page.number, box),
                )
            )
    return equations


def _body_font(layout: DocumentLayout) -> str:
    fonts: Counter = Counter()
    for page in layout.pages[:20]:
        for line in page.lines:
            fonts[line.font] += len(line.text)
    return fonts.most_common(1)[0][0] if fonts else ""


class _Column:
    """The text column a line belongs to, with its left and right edges."""

    def __init__(self, lines: list[Line], page_width: float) -> None:
        self.middle = page_width / 2
        self.two_columns = (
            sum(1 for line in lines if line.bbox[0] > self.middle - 5) >= 5
            and sum(1 for line in lines if line.bbox[2] < self.middle + 5) >= 5
        )
        self.edges: dict[int, tuple[float, float]] = {}
        for key in (-1, 0, 1):
            members = [line for line in lines if self.key(line) == key]
            if members:
                self.edges[key] = (_mode_edge(members, 0), _mode_edge(members, 2))

    def key(self, line: Line) -> int:
        if not self.two_columns:
            return -1
        if line.bbox[2] <= self.middle + 8:
            return 0
        if line.bbox[0] >= self.middle - 8:
            return 1
        return -1

    def width(self, key: int) -> float:
        left, right = self.edges.get(key, (0.0, 1.0))
        return max(right - left, 1.0)


def _mode_edge(lines: list[Line], index: int) -> float:
    counts = Counter(round(line.bbox[index]) for line in lines if len(line.text) > 30)
    if not counts:
        counts = Counter(round(line.bbox[index]) for line in lines)
    return float(counts.most_common(1)[0][0])


def _page_displays(
    page: PageLayout, body_size: float, body_font: str
) -> list[tuple[BBox, str | None, str]]:
    lines = [line for line in page.lines if not line.furniture and _is_horizontal(line)]
    if not lines:
        return []
    columns = _Column(lines, page.width)
    used: set[int] = set()
    displays: list[tuple[BBox, str | None, str]] = []
    for line in lines:
        if id(line) in used:
            continue
        number = _numbered_seed(line, lines, columns, body_size, body_font)
        if number is None and not _unnumbered_seed(line, lines, columns, body_size, body_font):
            continue
        members = _grow(line, lines, columns, body_size, body_font, used)
        if not any(m.size >= 0.8 * body_size for m in members):
            continue
        used.update(id(m) for m in members)
        number = number or _member_number(members)
        text = _display_text(members)
        if len(text) < 3:
            continue
        displays.append((_union(members), number or None, text))
    return displays


def _is_horizontal(line: Line) -> bool:
    x0, y0, x1, y1 = line.bbox
    return (y1 - y0) < 2.5 * max(x1 - x0, 1.0) or len(line.text) < 3


def _is_math(line: Line, body_font: str) -> bool:
    if _MATH_FONT.search(line.font):
        return True
    # Computer Modern text fonts set math only in documents whose body is not CM.
    return line.font.upper().startswith(("CMR", "CMBX")) and not body_font.upper().startswith("CM")


def _is_prose(line: Line, body_font: str) -> bool:
    text = _TAG.sub("", line.text)
    plain = sum(1 for word in text.split() if _PLAIN_WORD.match(word))
    return plain >= 4 and not (_is_math(line, body_font) and plain < 6)


def _numbered_seed(
    line: Line, lines: list[Line], columns: _Column, body_size: float, body_font: str
) -> str | None:
    match = _TAG.search(line.text)
    if not match or _is_prose(line, body_font) or "$" in line.text:
        return None
    key = columns.key(line)
    right = columns.edges.get(key, (line.bbox[0], line.bbox[2]))[1]
    if line.bbox[2] < right - 0.06 * columns.width(key):
        return None  # equation tags sit at the right margin
    row = [other for other in lines if other is line or _beside(other, line)]
    if any(_is_math(other, body_font) or _RELATION.search(other.text) for other in row):
        return match.group(1)
    if not line.text[: match.start()].strip():
        # A lone tag is centred on its display, which may not share its row: look around it.
        reach = body_size
        around = [
            other
            for other in lines
            if other is not line
            and columns.key(other) == key
            and other.bbox[1] < line.bbox[3] + reach
            and other.bbox[3] > line.bbox[1] - reach
        ]
        if around and not any(_is_prose(other, body_font) for other in around):
            return match.group(1)
    return None  # table rows and enumerations: no math on the tag's row


def _unnumbered_seed(
    line: Line, lines: list[Line], columns: _Column, body_size: float, body_font: str
) -> bool:
    if not _is_math(line, body_font) or _is_prose(line, body_font):
        return False
    if not _RELATION.search(line.text) or line.size < 0.8 * body_size:
        return False
    key = columns.key(line)
    left, right = columns.edges.get(key, (line.bbox[0], line.bbox[2]))
    if line.bbox[0] < left + 1.5 * body_size or line.bbox[2] > right - 0.5 * body_size:
        return False  # not set apart: inline math inside a paragraph line
    return not any(_beside(other, line) and _is_prose(other, body_font) for other in lines)


def _beside(other: Line, line: Line) -> bool:
    overlap = min(other.bbox[3], line.bbox[3]) - max(other.bbox[1], line.bbox[1])
    return other is not line and overlap > 0.3 * (line.bbox[3] - line.bbox[1])


def _grow(
    seed: Line,
    lines: list[Line],
    columns: _Column,
    body_size: float,
    body_font: str,
    used: set[int],
) -> list[Line]:
    key = columns.key(seed)
    pool = [
        line
        for line in lines
        if id(line) not in used
        and (columns.key(line) == key or key == -1 or columns.key(line) == -1)
        and not _is_prose(line, body_font)
    ]
    tag_rows = [_core(line) for line in pool if line is not seed and _TAG.search(line.text)]
    members = [seed]
    numbered = bool(_TAG.search(seed.text))
    top, bottom = _core(seed)
    changed = True
    while changed:
        changed = False
        for line in pool:
            if any(line is m for m in members):
                continue
            y0, y1 = _core(line)
            overlaps = min(y1, bottom) - max(y0, top) > 0
            near = -GROW_GAP * body_size < y0 - bottom < GROW_GAP * body_size or (
                -GROW_GAP * body_size < top - y1 < GROW_GAP * body_size
            )
            tagged = bool(_TAG.search(line.text))
            if numbered and (tagged or any(_overlap(row, (y0, y1)) > 0 for row in tag_rows)):
                continue  # another equation's number, or a fragment on that equation's row
            if overlaps or (near and _mathy(line, body_font)):
                members.append(line)
                numbered = numbered or tagged
                top, bottom = min(top, y0), max(bottom, y1)
                changed = True
    return members


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return min(a[1], b[1]) - max(a[0], b[0])


def _member_number(members: list[Line]) -> str | None:
    """The tag of an unnumbered seed's display, printed on one of its later rows."""
    for line in members:
        match = _TAG.search(line.text)
        if match:
            return match.group(1)
    return None


def _core(line: Line) -> tuple[float, float]:
    """Vertical extent without the overhang of big delimiters (tall CMEX glyphs)."""
    y0, y1 = line.bbox[1], line.bbox[3]
    excess = (y1 - y0) - 1.3 * line.size
    if excess > 0:
        y0, y1 = y0 + excess / 2, y1 - excess / 2
    return y0, y1


def _mathy(line: Line, body_font: str) -> bool:
    return _is_math(line, body_font) or bool(_RELATION.search(line.text)) or len(line.text) <= 12


def _display_text(members: list[Line]) -> str:
    """Fragments read row by row, left to right; the equation tag removed."""
    rows: list[list[Line]] = []
    for line in sorted(members, key=lambda m: (m.bbox[1] + m.bbox[3]) / 2):
        mid = (line.bbox[1] + line.bbox[3]) / 2
        if rows and abs(mid - _row_mid(rows[-1])) < 0.5 * line.size:
            rows[-1].append(line)
        else:
            rows.append([line])
    texts = []
    for row in rows:
        row.sort(key=lambda m: m.bbox[0])
        texts.append(" ".join(_TAG.sub("", m.text).strip() for m in row))
    return re.sub(r"\s+", " ", " ".join(texts)).strip()


def _row_mid(row: list[Line]) -> float:
    return sum((m.bbox[1] + m.bbox[3]) / 2 for m in row) / len(row)


def _union(members: list[Line]) -> BBox:
    return (
        min(m.bbox[0] for m in members),
        min(m.bbox[1] for m in members),
        max(m.bbox[2] for m in members),
        max(m.bbox[3] for m in members),
    )
