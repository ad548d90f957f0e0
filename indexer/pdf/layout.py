"""Read a PDF into lines in reading order, with the font facts the other extractors need.

One pass of ``page.get_text("dict")`` per page feeds everything (sections, tables, figures,
equations, references, page text), which keeps parsing at hundreds of pages per second.

Reading order: blocks are grouped into horizontal bands separated by full-width blocks; within a
band the left column is read before the right one. Running headers, footers and page numbers are
marked as ``furniture`` so they never become headings or pollute text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import pymupdf

from docsym.indexer.model import BBox
from docsym.indexer.pdf.grids import Grid, drawn_rules, find_grids
from docsym.language.accents import place_accents
from docsym.language.hyphens import PrintedWords

# Lines in the top or bottom margin band (as a share of page height) may be running furniture.
MARGIN_SHARE = 0.09
# Bare page numbers sit further in on some layouts (books, 10-K filings): a wider band for them.
PAGE_NUMBER_SHARE = 0.15
# A margin line whose digit-folded text recurs on this share of pages is a running header/footer.
RECURRING_SHARE = 0.3

_PAGE_NUMBER = re.compile(r"^(page\s+)?([\divxlc]{1,6})(\s*(of|/)\s*\d+)?$", re.IGNORECASE)


@dataclass(slots=True)
class Line:
    """Text on one baseline inside one block (spans of the same line merged)."""

    text: str
    bbox: BBox
    size: float  # font size of the longest span
    bold: bool
    font: str
    page: int  # 1-based
    block: int  # block number on its page
    seq: int = 0  # position in the document's reading order
    furniture: bool = False  # running header, footer or page number
    # 0 across the page; 90 up it (read with the page turned clockwise), 270 down it
    rotation: int = 0

    @property
    def x0(self) -> float:
        return self.bbox[0]

    @property
    def y0(self) -> float:
        return self.bbox[1]


@dataclass(slots=True)
class PageLayout:
    number: int  # 1-based
    width: float
    height: float
    lines: list[Line]  # reading order, furniture included
    image_boxes: list[BBox]
    page: pymupdf.Page
    printed: str | None = None  # the page number printed on the page ("24", "iv"), if found
    # Set on an upright view of sideways text: maps page coordinates to the view's.
    matrix: pymupdf.Matrix | None = None
    two_columns: bool = False  # set in two columns of running text (most papers)
    text_span: tuple[float, float] = (0.0, 0.0)  # left and right edge of the running text
    # Ruled grids of a scanned page (tables whose rules the scan shows); none on other pages.
    grids: list[Grid] = field(default_factory=list)

    def body_lines(self) -> list[Line]:
        return [line for line in self.lines if not line.furniture]

    def text(self) -> str:
        """Page text in reading order without running headers, footers and page numbers."""
        out: list[str] = []
        previous_block = None
        for line in self.body_lines():
            if previous_block is not None and line.block != previous_block:
                out.append("\n")
            out.append(line.text)
            out.append("\n")
            previous_block = line.block
        return "".join(out).strip()


@dataclass
class DocumentLayout:
    pages: list[PageLayout]
    body_size: float = 10.0  # the most common font size, weighted by characters

    def lines(self):
        for page in self.pages:
            yield from page.lines

    @cached_property
    def printed(self) -> PrintedWords:
        """The words the document prints whole: which line-end hyphens join a compound."""
        return PrintedWords(line.text for line in self.lines())

    def seq_at(self, page_number: int, bbox: BBox) -> int:
        """Reading-order position of a region: that of the first body line at or after it."""
        page = self.pages[page_number - 1]
        mid_y = (bbox[1] + bbox[3]) / 2
        candidates = [
            line.seq
            for line in page.lines
            if line.bbox[3] >= bbox[1] and line.bbox[1] <= mid_y and _overlaps_x(line.bbox, bbox)
        ]
        if candidates:
            return min(candidates)
        later = [line.seq for line in page.lines if line.bbox[1] >= mid_y]
        if later:
            return min(later)
        return page.lines[-1].seq + 1 if page.lines else _first_seq_after(self.pages, page_number)


# Sizes this close to each other are one body size.
BODY_SIZE_SLACK = 0.15


def _first_seq_after(pages: list[PageLayout], page_number: int) -> int:
    for page in pages[page_number:]:
        if page.lines:
            return page.lines[0].seq
    return 10**9


def centred_in(box: BBox, regions: Iterable[BBox]) -> bool:
    """Whether the centre of ``box`` lies in one of ``regions`` (a line in a table's box)."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions)


def _overlaps_x(a: BBox, b: BBox) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0


def read_layout(
    doc: pymupdf.Document,
    ocr_pages: frozenset[int] = frozenset(),
    on_page: Callable[[int, int], None] | None = None,
) -> DocumentLayout:
    """``ocr_pages``: numbers of the pages whose text layer OCR wrote (one block per line);
    ``on_page(done, total)`` after each page is read (a long document's progress)."""
    pages = []
    for i in range(doc.page_count):
        pages.append(_read_page(doc[i], i + 1, i + 1 in ocr_pages))
        if on_page is not None:
            on_page(i + 1, doc.page_count)
    _mark_furniture(pages)
    seq = 0
    sizes: Counter = Counter()
    for page in pages:
        for line in page.lines:
            line.seq = seq
            seq += 1
            if not line.furniture:
                sizes[round(line.size, 1)] += len(line.text)
    return DocumentLayout(pages=pages, body_size=body_size(sizes))


def body_size(sizes: Counter) -> float:
    """The size of most characters. Nearby sizes count together: justified or scaled body
    text comes out as 9.9, 10.0 and 10.1, which one 11-point appendix must not outweigh."""
    if not sizes:
        return 10.0
    best = max(sizes, key=lambda s: (_near(sizes, s), sizes[s]))
    return best


def _near(sizes: Counter, size: float) -> int:
    return sum(n for other, n in sizes.items() if abs(other - size) <= BODY_SIZE_SLACK)


def _read_page(page: pymupdf.Page, number: int, ocr: bool = False) -> PageLayout:
    blocks = _text_blocks(page)
    image_boxes = [tuple(info["bbox"]) for info in page.get_image_info()]
    grids: list[Grid] = []
    if ocr:
        blocks = _paragraph_blocks(blocks, OCR_LINE_GAP)
        # The scan itself is the page, not a figure on it.
        page_area = page.rect.width * page.rect.height
        image_boxes = [b for b in image_boxes if _area(b) < SCAN_SHARE * page_area]
        grids = find_grids(drawn_rules(page))
    elif _line_per_block(blocks):
        blocks = _paragraph_blocks(blocks, TEXT_LINE_GAP)
    ordered = reading_order(blocks, page.rect.width, grids)
    lines: list[Line] = []
    for block in ordered:
        lines.extend(_block_lines(block, number))
    return PageLayout(
        number=number,
        width=page.rect.width,
        height=page.rect.height,
        lines=lines,
        image_boxes=image_boxes,
        page=page,
        two_columns=_has_two_columns(lines, page.rect.width),
        text_span=_text_span(lines, page.rect.width),
        grids=grids,
    )


# An image covering this share of an OCR page is the scan of it.
SCAN_SHARE = 0.8


def _area(box: BBox) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


# A line continues the one above it when the gap between them is under this share of their
# height: OCR boxes hug the glyphs, a text layer's lines include ascenders and descenders (a
# 9-point paragraph set 13.7 points apart leaves 0.63 of its 8.4-point boxes between lines).
OCR_LINE_GAP = 0.6
TEXT_LINE_GAP = 0.8
# A page whose text blocks are nearly all one line long was written a line at a time (some
# acmart PDFs): its paragraphs are put together as an OCR layer's are, or no sentence could
# run past a line end. At least this many blocks, this share of them single lines.
LINE_BLOCKS_MIN = 8
LINE_BLOCKS_SHARE = 0.8


def _line_per_block(blocks: list[dict]) -> bool:
    single = sum(1 for block in blocks if len(block["lines"]) == 1)
    return len(blocks) >= LINE_BLOCKS_MIN and single > LINE_BLOCKS_SHARE * len(blocks)


def _paragraph_blocks(blocks: list[dict], gap: float) -> list[dict]:
    """Join one-line blocks (an OCR text layer's, or a page written a line at a time) into
    paragraphs: a line that starts just below the one before it (``gap``: of their height),
    overlapping it across the page, continues it."""
    merged: list[dict] = []
    for block in sorted(blocks, key=lambda b: (b["bbox"][1], b["bbox"][0])):
        host = next((m for m in reversed(merged[-4:]) if _continues(m, block, gap)), None)
        if host is None:
            merged.append({**block, "lines": list(block["lines"])})
            continue
        host["lines"].extend(block["lines"])
        host["bbox"] = tuple(pymupdf.Rect(host["bbox"]) | pymupdf.Rect(block["bbox"]))
    return merged


def _continues(paragraph: dict, block: dict, gap: float) -> bool:
    low, across = _last_line(paragraph)
    first = block["lines"][0]["bbox"]
    height = min(low[3] - low[1], first[3] - first[1])
    overlap = min(across[1], first[2]) - max(across[0], first[0])
    narrower = min(across[1] - across[0], first[2] - first[0])
    # Of one type size: by the size set, not the box, which a superscript makes taller.
    sizes = _size(block["lines"][0]) / _size(max(paragraph["lines"], key=lambda x: x["bbox"][3]))
    return (
        -0.3 * height < first[1] - low[3] < gap * height
        and overlap > 0.5 * narrower
        and abs(first[0] - min(across[0], paragraph["bbox"][0])) < 3 * height
        and 0.8 < sizes < 1.25
    )


def _size(line: dict) -> float:
    return max((span["size"] for span in line["spans"]), default=0.0) or 1.0


def _last_line(paragraph: dict) -> tuple[BBox, tuple[float, float]]:
    """The paragraph's last printed line: the box of its lowest line, and from where to where
    the lines level with it run. A printed line may be several: a run-in heading and its text
    ("6.1.1 Participants. We recruited ..."), a footnote mark ("study.3 We discuss ...")."""
    boxes = [line["bbox"] for line in paragraph["lines"]]
    low = max(boxes, key=lambda box: box[3])
    level = [box for box in boxes if box[1] < low[3] and box[3] > low[1]]
    return low, (min(box[0] for box in level), max(box[2] for box in level))


def _text_span(lines: list[Line], width: float) -> tuple[float, float]:
    """Where running text starts and ends across the page (its margins), from its long lines."""
    long = [line for line in lines if len(line.text) > 40]
    if not long:
        return 0.0, width
    return min(line.bbox[0] for line in long), max(line.bbox[2] for line in long)


def _has_two_columns(lines: list[Line], width: float) -> bool:
    """Several long lines wholly inside each half of the page: a two-column layout."""
    middle = width / 2
    left = sum(1 for x in lines if x.bbox[2] < middle and len(x.text) > 40)
    right = sum(1 for x in lines if x.bbox[0] > middle and len(x.text) > 40)
    return left >= 5 and right >= 5


def _text_blocks(page: pymupdf.Page) -> list[dict]:
    # Ligatures are expanded ("ﬁ" -> "fi") so that text matches what people type.
    flags = (
        pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
    )
    data = page.get_text("dict", flags=flags)
    return [b for b in data["blocks"] if b.get("type") == 0]


def upright_view(page: PageLayout, turn: pymupdf.Matrix) -> PageLayout:
    """The page's sideways text as it reads when the page is turned: lines in the turned
    frame (``turn`` maps page coordinates to it), for the table reader. Text that ran across
    the page now runs up or down it and is left out."""
    blocks = _text_blocks(page.page)
    for block in blocks:
        block["bbox"] = tuple(pymupdf.Rect(block["bbox"]) * turn)
        for raw in block["lines"]:
            raw["bbox"] = tuple(pymupdf.Rect(raw["bbox"]) * turn)
            raw["dir"] = tuple(
                pymupdf.Point(raw["dir"]) * pymupdf.Matrix(turn.a, turn.b, turn.c, turn.d, 0, 0)
            )
            for span in raw["spans"]:
                span["bbox"] = tuple(pymupdf.Rect(span["bbox"]) * turn)
    turned = pymupdf.Rect(page.page.rect) * turn
    lines = [
        line
        for block in sorted(blocks, key=lambda b: (b["bbox"][1], b["bbox"][0]))
        for line in _block_lines(block, page.number)
        if not line.rotation
    ]
    return PageLayout(
        number=page.number,
        width=turned.width,
        height=turned.height,
        lines=lines,
        image_boxes=[],
        page=page.page,
        matrix=turn,
    )


def page_words(page: pymupdf.Page) -> list[tuple]:
    """The page's words as PyMuPDF reads them (``get_text("words")``), accents on their letters."""
    return [(*w[:4], place_accents(w[4]), *w[5:]) for w in page.get_text("words", sort=False)]


def _block_lines(block: dict, page_number: int) -> list[Line]:
    """Merge the block's lines that share a baseline (e.g. a heading number and its title)."""
    merged: list[list[dict]] = []
    for raw in block["lines"]:
        spans = [s for s in raw["spans"] if s["text"].strip()]
        if not spans:
            continue
        if merged and _same_baseline(merged[-1][-1], raw):
            merged[-1].append(raw)
        else:
            merged.append([raw])
    return [_make_line(group, page_number, block["number"]) for group in merged]


def _same_baseline(line_a: dict, line_b: dict) -> bool:
    if _rotation(line_a) or _rotation(line_b):
        return False
    a, b = line_a["bbox"], line_b["bbox"]
    height = min(a[3] - a[1], b[3] - b[1])
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return height > 0 and overlap > 0.6 * height and b[0] >= a[0]


def _make_line(group: list[dict], page_number: int, block_number: int) -> Line:
    spans = [s for raw in group for s in raw["spans"] if s["text"].strip()]
    spans.sort(key=lambda s: s["bbox"][0])
    parts: list[str] = []
    last_x1 = None
    for span in spans:
        gap = span["bbox"][0] - last_x1 if last_x1 is not None else 0
        if parts and gap > 0.15 * span["size"] and not parts[-1].endswith(" "):
            parts.append(" ")
        parts.append(span["text"])
        last_x1 = span["bbox"][2]
    main = max(spans, key=lambda s: len(s["text"].strip()))
    x0 = min(s["bbox"][0] for s in spans)
    y0 = min(s["bbox"][1] for s in spans)
    x1 = max(s["bbox"][2] for s in spans)
    y1 = max(s["bbox"][3] for s in spans)
    text = place_accents(re.sub(r"\s+", " ", "".join(parts)).strip())
    return Line(
        text=text,
        bbox=(x0, y0, x1, y1),
        size=main["size"],
        bold=_is_bold(main),
        font=main["font"],
        page=page_number,
        block=block_number,
        rotation=_rotation(group[0]),
    )


def _rotation(raw: dict) -> int:
    dx, dy = raw.get("dir", (1.0, 0.0))
    if abs(dy) <= abs(dx):
        return 0  # across the page (upside-down text is rare enough to read as is)
    return 90 if dy < 0 else 270


def turn_matrix(page: PageLayout, rotation: int) -> pymupdf.Matrix:
    """Page coordinates to those of the page turned so text of this rotation reads across."""
    if rotation == 90:  # (x, y) -> (height - y, x)
        return pymupdf.Matrix(0, 1, -1, 0, page.height, 0)
    return pymupdf.Matrix(0, -1, 1, 0, 0, page.width)  # (x, y) -> (y, width - x)


def _is_bold(span: dict) -> bool:
    font = span["font"].lower()
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or any(
        key in font for key in ("bold", "black", "heavy", "semibold", "medi", "-bd", "cmbx")
    )


def reading_order(blocks: list[dict], page_width: float, grids: Sequence[Grid] = ()) -> list[dict]:
    """Sort blocks band by band; inside a band, the left column before the right one. The
    blocks inside a ruled grid are read cell by cell, and the grid as one block: a wide table
    is not split into the page's columns."""
    blocks, units = _grid_units(blocks, grids)
    return [
        part
        for block in _column_order(blocks, page_width)
        for part in units.get(id(block), [block])
    ]


def _grid_units(
    blocks: list[dict], grids: Sequence[Grid]
) -> tuple[list[dict], dict[int, list[dict]]]:
    """The blocks with each grid's own blocks replaced by one block the size of the grid, and
    (by that block's id) the blocks it stands for, in cell order."""
    units: dict[int, list[dict]] = {}
    outside = list(blocks)
    for grid in grids:
        inside = [b for b in outside if grid.holds(b["bbox"])]
        if not inside:
            continue
        outside = [b for b in outside if not grid.holds(b["bbox"])]
        unit = {"bbox": grid.bbox}
        units[id(unit)] = sorted(inside, key=lambda b: grid.cell_order(b["bbox"]))
        outside.append(unit)
    return outside, units


def _column_order(blocks: list[dict], page_width: float) -> list[dict]:
    middle = page_width / 2
    slack = page_width * 0.02

    def column(b: dict) -> int:
        x0, _, x1, _ = b["bbox"]
        if x1 <= middle + slack:
            return 0
        if x0 >= middle - slack:
            return 1
        return -1  # spans both columns

    blocks = sorted(blocks, key=lambda b: (b["bbox"][1], b["bbox"][0]))
    has_columns = (
        sum(1 for b in blocks if column(b) == 1) >= 2
        and sum(1 for b in blocks if column(b) == 0) >= 2
    )
    if not has_columns:
        return blocks
    ordered: list[dict] = []
    band: list[dict] = []
    for block in blocks:
        if column(block) == -1:
            ordered.extend(sorted(band, key=lambda b: (column(b), b["bbox"][1], b["bbox"][0])))
            band = []
            ordered.append(block)
        else:
            band.append(block)
    ordered.extend(sorted(band, key=lambda b: (column(b), b["bbox"][1], b["bbox"][0])))
    return ordered


def _fold(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def _mark_furniture(pages: list[PageLayout]) -> None:
    """Mark running headers/footers and printed page numbers as furniture.

    Two signals: margin lines whose digit-folded text recurs on many pages, and lines at the top
    or bottom of a page that end with a printed page number at a consistent offset from the
    physical page (books and filings often print them well inside the margins, and their chapter
    headers change every few pages, so neither position nor recurrence alone finds them).
    """
    if not pages:
        return
    recurring: Counter = Counter()
    for page in pages:
        recurring.update({_fold(line.text) for line in _margin_lines(page)})
    threshold = max(3, RECURRING_SHARE * len(pages)) if len(pages) >= 3 else float("inf")
    for page in pages:
        for line in _margin_lines(page):
            if recurring[_fold(line.text)] >= threshold:
                line.furniture = True
        block_sizes = Counter(line.block for line in page.lines)
        for line in _margin_lines(page, PAGE_NUMBER_SHARE):
            bare = _PAGE_NUMBER.match(line.text.strip())
            if block_sizes[line.block] == 1 and bare:
                line.furniture = True
                page.printed = page.printed or _page_label(bare.group(2))
    _mark_numbered_edges(pages)
    _keep_consistent_numbers(pages)


_ROMAN = re.compile(r"^(?=[mdclxvi])m*(c[md]|d?c{0,3})(x[cl]|l?x{0,3})(i[xv]|v?i{0,3})$", re.I)


def _page_label(text: str) -> str | None:
    """A printed page number: digits, or a roman numeral (front matter)."""
    return text if text.isdigit() or _ROMAN.match(text) else None


def _keep_consistent_numbers(pages: list[PageLayout]) -> None:
    """Keep a printed page number only where another page agrees with its offset from the
    physical page (books and filings number pages steadily; a lone '9' in a margin is a figure
    label). Documents of one or two pages keep what they print."""
    if len(pages) <= 2:
        return
    offsets = Counter(offset for page in pages if (offset := _offset(page)) is not None)
    for page in pages:
        if page.printed is not None and offsets[_offset(page)] < 2:
            page.printed = None


def _offset(page: PageLayout) -> int | None:
    if page.printed is None:
        return None
    return page.number - (int(page.printed) if page.printed.isdigit() else _roman(page.printed))


def _roman(text: str) -> int:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    digits = [values[ch] for ch in text.lower()]
    return sum(-d if d < nxt else d for d, nxt in zip(digits, [*digits[1:], 0], strict=True))


_TRAILING_NUMBER = re.compile(r"(?:^|\s)(\d{1,4})$")
_LEADING_NUMBER = re.compile(r"^(\d{1,4})\s")


def _mark_numbered_edges(pages: list[PageLayout]) -> None:
    edges = [(page, _edge_lines(page)) for page in pages]
    # A leading number looks like a section heading ("2 Model") unless the rest of the line
    # recurs like a running header ("2 TIMP: An R Package ...").
    recurring = Counter(_fold(line.text) for _, lines in edges for line in lines)
    candidates: list[tuple[Line, int]] = []
    offsets: Counter = Counter()
    for page, lines in edges:
        for line in lines:
            text = line.text.strip()
            found = _TRAILING_NUMBER.search(text)
            if not found and recurring[_fold(text)] >= 3:
                found = _LEADING_NUMBER.search(text)
            if found and len(text) <= 90:
                offset = page.number - int(found.group(1))
                candidates.append((line, offset))
                offsets[offset] += 1
    if not offsets:
        return
    offset, count = offsets.most_common(1)[0]
    if count >= max(3, 0.2 * len(pages)):
        page_of = {id(line): page for page, lines in edges for line in lines}
        for line, line_offset in candidates:
            if line_offset == offset:
                line.furniture = True
                page = page_of[id(line)]
                page.printed = page.printed or str(page.number - offset)


def without_page_number(text: str) -> str:
    """``text`` without a page number printed before or after it ("12 Chapter One", "Title 9")."""
    found = _TRAILING_NUMBER.search(text) or _LEADING_NUMBER.search(text)
    if not found or found.group(0).strip() == text.strip():
        return text
    return (text[: found.start()] + text[found.end() :]).strip()


def _edge_lines(page: PageLayout) -> list[Line]:
    """The two top-most and two bottom-most lines of a page."""
    by_y = sorted(page.lines, key=lambda line: line.bbox[1])
    return list({id(line): line for line in by_y[:2] + by_y[-2:]}.values())


def _margin_lines(page: PageLayout, share: float = MARGIN_SHARE) -> list[Line]:
    top = page.height * share
    bottom = page.height * (1 - share)
    return [line for line in page.lines if line.bbox[3] <= top or line.bbox[1] >= bottom]
