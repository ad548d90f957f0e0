"""The section (heading) tree of a PDF.

Two sources, in order of trust:

* the PDF outline (bookmarks): levels and titles come from it; each entry is located on its page
  (title text matched to a layout line, the destination's y as a tie-breaker and fallback) so the
  body text can be split at the heading;
* the layout: headings are detected from font size, weight and numbering ("3.2 Training",
  "A.1 Details", "Appendix B", "PART II", "Item 7."), then checked for consistency (numbers
  follow each other, one style per numbering depth) so that bold words in figures, table
  headers, list items and run-in paragraph titles do not become sections.

Both paths end in the same builder, which nests the headings (parent = nearest earlier heading
of a shallower level), renumbers levels as tree depths and cuts the body text between headings.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf

from docsym.indexer.heading_numbers import LETTER, split_heading_number
from docsym.indexer.model import BBox, Section, Table
from docsym.indexer.pdf.layout import DocumentLayout, Line, PageLayout

# Hierarchy rank of keyword headings; decimal depth d ranks as d.
_KEYWORD_RANK = {"part": 0.0, "chapter": 1.0, "item": 1.5, "section": 1.5}
# Unnumbered headings that are headings wherever they stand (matched case-insensitively).
_KNOWN_HEADINGS = {
    "abstract",
    "introduction",
    "contents",
    "table of contents",
    "summary",
    "executive summary",
    "preface",
    "foreword",
    "overview",
    "background",
    "references",
    "bibliography",
    "acknowledgments",
    "acknowledgements",
    "acknowledgment",
    "acknowledgement",
    "appendix",
    "appendices",
    "conclusion",
    "conclusions",
}
# Outline titles led by a part number: "II MuPDF Internals".
_OUTLINE_ROMAN = re.compile(r"^([IVX]{1,5})\.?\s+([A-Z].*)$")
_CHAPTER_LINE = re.compile(r"^chapter\s+(\d{1,3}|[A-Z])$", re.IGNORECASE)
_TEX_MARKUP = re.compile(r"[{}^\\]|--")
_TOC_TITLE = re.compile(r"^(table of )?contents$", re.IGNORECASE)
MAX_HEADING_WORDS = 16
MAX_KEYWORD_HEADING_WORDS = 28
MAX_UNNUMBERED_WORDS = 10
# A line this much wider than its text needs is spread over table columns.
MAX_SPREAD = 1.45
# A heading set in a larger size than the text it heads is at least this much larger.
HEADING_SIZE_RATIO = 1.12
# Lines of a heading merged at most (a title wrapped over two or three lines).
MAX_HEADING_LINES = 3


@dataclass(slots=True)
class _Heading:
    key: float  # raw hierarchy rank (smaller = shallower); tree depth is derived from it
    number: str | None
    title: str
    page: int
    bbox: BBox | None
    seq: int  # first line of the heading
    end_seq: int  # last line of the heading (the body starts after it)
    source: str
    kind: str = "unnumbered"  # "decimal", "letter", a keyword, "unnumbered"
    style: tuple = ()


def extract_sections(
    doc: pymupdf.Document, layout: DocumentLayout, tables: Sequence[Table] = ()
) -> list[Section]:
    """The heading tree of ``doc``, from its outline when it has one, else from its layout.

    Layout headings that are really a table's header row (bold text in a row of several cells,
    inside a detected table) are dropped; their text stays in the table.
    """
    toc = doc.get_toc(simple=False)
    if toc:
        headings = _outline_headings(toc, layout)
    else:
        headings = [h for h in _layout_headings(layout) if not _in_table_row(h, tables)]
    if not headings:
        return []
    return _build_sections(headings, layout)


def _in_table_row(heading: _Heading, tables: Sequence[Table]) -> bool:
    """Whether the heading lies in a table row that holds two or more non-empty cells.

    Numbered headings are kept: a numbered sequence is stronger evidence than a table region,
    which can swallow a heading when the table detector over-reaches.
    """
    if heading.bbox is None or heading.number:
        return False
    x0, y0, x1, y1 = heading.bbox
    for table in tables:
        tx0, ty0, tx1, ty1 = table.bbox
        if table.page_number != heading.page or not (ty0 <= y0 + 1 and y1 - 1 <= ty1):
            continue
        beside = {
            (cell.row, cell.col)
            for cell in table.cells
            if cell.bbox and cell.text.strip() and cell.bbox[1] < y1 and y0 < cell.bbox[3]
        }
        if len(beside) >= 2:
            return True
    return False


# --------------------------------------------------------------------------------------------
# Shared helpers


def _norm(text: str) -> str:
    """Lower-case ASCII letters and digits only: robust to ligatures, accents (also TeX-made
    ones like "Lemaˆıtre"), hyphens, spacing and case."""
    folded = unicodedata.normalize("NFKD", text.replace("ı", "i")).lower()
    return "".join(ch for ch in folded if ch.isalnum() and ch.isascii())


def _number_tuple(kind: str, number: str) -> tuple[int, ...]:
    parts = number.split(".")
    if kind == "letter":
        return (ord(parts[0].upper()) - ord("A") + 1, *(int(p) for p in parts[1:]))
    return tuple(int(p) for p in parts)


def _style(line: Line) -> tuple:
    letters = [ch for ch in line.text if ch.isalpha()]
    caps = bool(letters) and all(ch.isupper() for ch in letters)
    return (round(line.size * 2) / 2, line.bold, caps)


# --------------------------------------------------------------------------------------------
# Outline path


def _outline_headings(toc: list, layout: DocumentLayout) -> list[_Heading]:
    letters_at = _outline_letter_evidence(toc)
    headings: list[_Heading] = []
    previous_seq = -1
    for level, raw_title, page_number, dest in toc:
        page_number = _outline_page(page_number, dest, len(layout.pages))
        if page_number is None:
            continue  # dead bookmark: nothing in the document to attach it to
        title = " ".join(str(raw_title).split())
        kind, number, bare_title = split_heading_number(title)
        if kind == "letter" and "." not in number and not letters_at.get(number):
            kind, number, bare_title = "unnumbered", None, title  # "A Survey of ..." is a title
        roman = _OUTLINE_ROMAN.match(title)
        if kind == "unnumbered" and roman:
            kind, number, bare_title = "part", roman.group(1), roman.group(2)  # "II Internals"
        page = layout.pages[page_number - 1]
        dest_y = _dest_top(dest, page)
        found = _locate_title(page, title, bare_title, dest_y, previous_seq)
        if found is not None:
            first, last = found
            printed = " ".join(
                line.text for line in page.lines if first.seq <= line.seq <= last.seq
            )
            line_kind, line_number, line_title = split_heading_number(printed)
            if number is None:
                # The outline often leaves out the number printed with the heading.
                if line_kind in ("decimal", "letter") and _norm(line_title) == _norm(title):
                    kind, number = line_kind, line_number
                elif (chapter := _chapter_number(page, first)) is not None:
                    kind, number = "chapter", chapter
            if _TEX_MARKUP.search(bare_title) and _norm(line_title) == _norm(bare_title):
                bare_title = line_title  # "Lema{^i }tre--Tolman" in the outline, clean in print
            bbox = _union(first.bbox, last.bbox) if last is not first else first.bbox
            seq, end_seq = first.seq, last.seq
        else:
            anchor = _line_near(page, dest_y)
            bbox = None
            seq = anchor.seq if anchor else layout.seq_at(page_number, (0, dest_y or 0, 1, 1))
            end_seq = seq - 1  # the heading was not found: the body starts at the anchor
        previous_seq = max(previous_seq, seq)
        headings.append(
            _Heading(
                key=float(level),
                number=number if kind != "unnumbered" else None,
                title=bare_title or title,
                page=page_number,
                bbox=bbox,
                seq=seq,
                end_seq=end_seq,
                source="outline",
                kind=kind,
            )
        )
    return headings


def _chapter_number(page: PageLayout, heading: Line) -> str | None:
    """The number of a "Chapter 3" line printed just above the heading."""
    above = [line for line in page.lines if line.seq < heading.seq and not line.furniture]
    if not above:
        return None
    match = _CHAPTER_LINE.match(above[-1].text.strip())
    return match.group(1) if match else None


def _outline_letter_evidence(toc: list) -> dict[str, bool]:
    """Which single letters lead titles as appendix numbers (another entry continues the run)."""
    leading: set[str] = set()
    dotted: set[str] = set()
    for entry in toc:
        match = LETTER.match(" ".join(str(entry[1]).split()))
        if match:
            number = match.group(1)
            (dotted if "." in number else leading).add(number.split(".")[0])
    evidence: dict[str, bool] = {}
    for letter in leading:
        neighbours = {chr(ord(letter) - 1), chr(ord(letter) + 1)}
        evidence[letter] = bool(neighbours & leading) or letter in dotted
    return evidence


def _outline_page(page_number: int, dest: dict, page_count: int) -> int | None:
    if 1 <= page_number <= page_count:
        return page_number
    target = dest.get("page") if isinstance(dest, dict) else None
    if isinstance(target, int) and 0 <= target < page_count:
        return target + 1
    return None


def _dest_top(dest: dict, page: PageLayout) -> float | None:
    """The destination's y in top-left coordinates (outline points are bottom-up)."""
    point = dest.get("to") if isinstance(dest, dict) else None
    if point is None:
        return None
    y = page.height - float(point.y)
    # Destinations at (or above) the page top carry no position.
    return y if 0 < y < page.height and y > page.height * 0.07 else None


def _locate_title(
    page: PageLayout, title: str, bare_title: str, dest_y: float | None, after_seq: int
) -> tuple[Line, Line] | None:
    """First and last line of the heading on the page, best match first."""
    wanted = {_norm(title), _norm(bare_title)} - {""}
    if not wanted:
        return None
    lines = page.body_lines()
    best: tuple[float, Line, Line] | None = None
    for index, line in enumerate(lines):
        found = _match_at(lines, index, wanted)
        if found is None:
            continue
        quality, last = found
        score = quality
        if line.seq <= after_seq:
            score -= 4  # headings come in document order; an earlier match is likely the TOC
        if dest_y is not None:
            score -= min(abs(line.bbox[1] - dest_y), 400) / 100
        if best is None or score > best[0]:
            best = (score, line, last)
    return (best[1], best[2]) if best else None


def _match_at(lines: list[Line], index: int, wanted: set[str]) -> tuple[float, Line] | None:
    """How well the heading text starts at ``lines[index]``; and its last line."""
    line = lines[index]
    text = _norm(line.text)
    core = _norm(split_heading_number(line.text)[2])
    for target in wanted:
        if text == target or core == target:
            return 3.0 + _emphasis(line), line
    for target in wanted:
        for start in (text, core):
            if len(start) >= 4 and target.startswith(start):
                joined, last = start, line
                for follower in lines[index + 1 : index + MAX_HEADING_LINES]:
                    joined += _norm(follower.text)
                    last = follower
                    if joined.startswith(target):
                        return 2.5 + _emphasis(line), last
                    if not target.startswith(joined):
                        break
    for target in wanted:
        if len(target) >= 6 and (text.startswith(target) or core.startswith(target)):
            return 1.0 + _emphasis(line), line
    return None


def _emphasis(line: Line) -> float:
    return 0.5 if line.bold else 0.0


def _line_near(page: PageLayout, y: float | None) -> Line | None:
    lines = page.body_lines()
    if not lines:
        return None
    if y is None:
        return lines[0]
    below = [line for line in lines if line.bbox[3] > y]
    return min(below, key=lambda line: (line.bbox[1], line.seq)) if below else lines[-1]


def _union(a: BBox, b: BBox) -> BBox:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


# --------------------------------------------------------------------------------------------
# Layout path


def _layout_headings(layout: DocumentLayout) -> list[_Heading]:
    candidates: list[_Heading] = []
    for page in layout.pages:
        if _is_toc_page(page):
            continue
        candidates.extend(_page_candidates(page, layout.body_size))
    candidates = _drop_front_matter(candidates, layout)
    numbered = [h for h in candidates if h.kind in ("decimal", "letter")]
    accepted_numbers = _consistent_numbers(numbered)
    styles = _level_styles(accepted_numbers)
    if styles:
        # Second pass: a number in the wrong style for its depth is a list item or a table row.
        numbered = [h for h in numbered if _fits_style(h, styles)]
        accepted_numbers = _consistent_numbers(numbered)
    keyword = _consistent_keywords([h for h in candidates if h.kind in _KEYWORD_RANK])
    unnumbered = [h for h in candidates if h.kind == "unnumbered"]
    if keyword:
        # "1 Consolidated Statements" under "ITEM 15": numbers nest below keyword headings.
        offset = max(h.key for h in keyword)
        for heading in accepted_numbers:
            heading.key += offset
    headings = sorted(accepted_numbers + keyword, key=lambda h: h.seq)
    _rank_unnumbered(unnumbered, headings)
    return sorted(headings + unnumbered, key=lambda h: h.seq)


def _is_toc_page(page: PageLayout) -> bool:
    return any(_TOC_TITLE.match(line.text.strip()) for line in page.lines[:12])


def _page_candidates(page: PageLayout, body_size: float) -> list[_Heading]:
    lines = page.lines
    out: list[_Heading] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not _could_be_heading(line, page, body_size):
            index += 1
            continue
        last_index = _heading_end(lines, index)
        text = " ".join(lines[i].text for i in range(index, last_index + 1))
        heading = _candidate(text, line, lines[last_index], page, body_size)
        if heading is not None and (
            _ends_paragraph(lines, index)
            or _is_run_in(lines, index, last_index, page)
            or (heading.kind == "unnumbered" and not _prose_follows(lines, last_index, heading))
        ):
            heading = None
        if heading is not None:
            out.append(heading)
        index = last_index + 1
    return out


def _could_be_heading(line: Line, page: PageLayout, body_size: float) -> bool:
    """Cheap filters every line goes through; most body lines stop here."""
    if line.furniture or line.size < body_size - 0.6:
        return False
    emphasised = line.bold or line.size >= body_size * HEADING_SIZE_RATIO
    if not emphasised:
        return False
    text = line.text
    if len(text) < 2 or len(text) > 200 or text.endswith(("-", ",", ";")):
        return False
    return not _inside_image(line.bbox, page.image_boxes)


def _inside_image(bbox: BBox, image_boxes: list[BBox]) -> bool:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    return any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in image_boxes)


def _heading_end(lines: list[Line], index: int) -> int:
    """Index of the last line of a heading wrapped over several lines of the same style."""
    first = lines[index]
    last = index
    while last + 1 < len(lines) and last - index + 1 < MAX_HEADING_LINES:
        current, follower = lines[last], lines[last + 1]
        gap = follower.bbox[1] - current.bbox[3]
        same_style = abs(follower.size - first.size) < 0.3 and follower.bold == first.bold
        if (
            follower.furniture
            or not same_style
            or gap > 0.6 * first.size
            or current.text.endswith(".")
            or split_heading_number(follower.text)[0] != "unnumbered"
            or (follower.block != current.block and not runs_on(current, lines))
        ):
            break
        last += 1
    return last


def runs_on(line: Line, lines: list[Line]) -> bool:
    """The line runs on: it stops on a connective or reaches the right edge of the text."""
    if line.text.endswith(("&", " and", " of", " for", " the", " to", " in", " on")):
        return True
    right_edge = max(other.bbox[2] for other in lines)
    return line.bbox[2] >= right_edge - 2 * line.size


def _candidate(
    text: str, first: Line, last: Line, page: PageLayout, body_size: float
) -> _Heading | None:
    text = " ".join(text.split())
    kind, number, title = split_heading_number(text)
    words = title.split()
    if not _plausible_title(title, kind):
        return None
    limit = {"decimal": MAX_HEADING_WORDS, "letter": MAX_HEADING_WORDS}.get(
        kind, MAX_KEYWORD_HEADING_WORDS if kind in _KEYWORD_RANK else MAX_UNNUMBERED_WORDS
    )
    if len(words) > limit:
        return None
    if kind == "unnumbered" and not _plausible_unnumbered(first, last, text, body_size):
        return None
    if _spread_out(first, text):
        return None
    key = _KEYWORD_RANK.get(kind, 0.0)
    if kind in ("decimal", "letter"):
        key = float(len(number.split(".")))
    return _Heading(
        key=key,
        number=number,
        title=title,
        page=page.number,
        bbox=_union(first.bbox, last.bbox),
        seq=first.seq,
        end_seq=last.seq,
        source="layout",
        kind=kind,
        style=_style(first),
    )


def _plausible_title(title: str, kind: str) -> bool:
    letters = sum(ch.isalpha() for ch in title)
    digits = sum(ch.isdigit() for ch in title)
    if letters < 2 or digits > letters * 0.3 or "...." in title or ". . ." in title:
        return False
    if kind in _KEYWORD_RANK:
        return True
    first = title[0]
    if not (first.isupper() or (first.isdigit() and kind == "unnumbered")):
        return False
    # A long title ending with a full stop is a sentence, not a heading.
    return not (title.endswith(".") and len(title.split()) > 6)


def _plausible_unnumbered(first: Line, last: Line, text: str, body_size: float) -> bool:
    if text.lower().rstrip(":.") in _KNOWN_HEADINGS:
        return True
    if text.endswith((".", ":")) or not first.text[0].isupper():
        return False
    # Bold words at body size that run into a sentence ("Results. We use ...") are not headings.
    return first.bold or first.size >= body_size * HEADING_SIZE_RATIO


def _spread_out(line: Line, text: str) -> bool:
    """Table rows merged onto one baseline cover far more width than their text needs."""
    width = line.bbox[2] - line.bbox[0]
    needed = len(line.text) * line.size * 0.5
    return len(line.text) > 6 and width > MAX_SPREAD * needed + 2 * line.size


def _ends_paragraph(lines: list[Line], index: int) -> bool:
    """A bold line closing a block of body text is emphasis inside that paragraph."""
    if index == 0:
        return False
    line, previous = lines[index], lines[index - 1]
    tight = line.bbox[1] - previous.bbox[3] < 0.45 * line.size  # no heading space above
    return (
        tight
        and previous.block == line.block
        and not previous.furniture
        and previous.bold != line.bold
    )


def _prose_follows(lines: list[Line], last_index: int, heading: _Heading) -> bool:
    """An unnumbered heading introduces text; a bold table header introduces numbers."""
    if heading.title.lower().rstrip(":.") in _KNOWN_HEADINGS:
        return True
    followers = [line for line in lines[last_index + 1 :] if not line.furniture][:2]
    return any(_is_prose(line.text) for line in followers)


def _is_prose(text: str) -> bool:
    words = text.split()
    return sum(1 for word in words if len(word) > 1 and word.isalpha() and word.islower()) >= 3


def _is_run_in(lines: list[Line], index: int, last_index: int, page: PageLayout) -> bool:
    """A bold phrase opening a paragraph on the same line ("Training Data We use ...").

    Only suspicious lines are checked (a body paragraph follows right below); the check reads
    the spans of that one line from the page.
    """
    line = lines[last_index]
    if last_index + 1 >= len(lines):
        return False
    follower = lines[last_index + 1]
    adjacent = follower.bbox[1] - line.bbox[3] < 0.6 * line.size and _overlaps_x(follower, line)
    if not adjacent or follower.bold == line.bold:
        return False
    if line.text.endswith("-"):
        return True
    block_right = max(
        other.bbox[2] for other in lines if other.block in (line.block, follower.block)
    )
    if line.bbox[2] < block_right - 2 * line.size:
        return False  # a short line ending well before the margin: a heading of its own
    rect = pymupdf.Rect(line.bbox) + (-1, -1, 1, 1)
    spans = [
        span
        for block in page.page.get_text("dict", clip=rect)["blocks"]
        for raw in block.get("lines", [])
        for span in raw["spans"]
        if span["text"].strip()
    ]
    return any(not _span_bold(span) for span in spans) and any(_span_bold(s) for s in spans)


def _overlaps_x(a: Line, b: Line) -> bool:
    return min(a.bbox[2], b.bbox[2]) - max(a.bbox[0], b.bbox[0]) > 0


def _span_bold(span: dict) -> bool:
    font = span["font"].lower()
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or any(
        key in font for key in ("bold", "black", "heavy", "semibold", "medi", "-bd", "cmbx")
    )


def _drop_front_matter(candidates: list[_Heading], layout: DocumentLayout) -> list[_Heading]:
    """Drop the title, authors and affiliations: unnumbered lines on page 1 before the first
    numbered or well-known heading of that page."""
    anchor_seq = None
    for heading in candidates:
        if heading.page != 1:
            break
        if heading.kind != "unnumbered" or heading.title.lower().rstrip(":.") in _KNOWN_HEADINGS:
            anchor_seq = heading.seq
            break
    first_page_end = layout.pages[0].lines[-1].seq if layout.pages[0].lines else -1
    limit = anchor_seq if anchor_seq is not None else first_page_end + 1
    return [h for h in candidates if not (h.kind == "unnumbered" and h.seq < limit)]


def _consistent_numbers(candidates: list[_Heading]) -> list[_Heading]:
    """Keep numbered headings whose numbers follow each other (1, 2, 2.1, 2.2, 3, A, A.1...).

    Each number must be the next sibling (one gap allowed) or the first child of the previous
    accepted number; appendix letters run their own sequence after the decimal one.
    """
    accepted: list[_Heading] = []
    last: dict[str, tuple[int, ...] | None] = {"decimal": None, "letter": None}
    for heading in candidates:
        kind = heading.kind
        if kind == "decimal" and last["letter"] is not None:
            continue  # appendices come last: decimals inside them are lists or tables
        if kind == "letter" and last["decimal"] is None and "appendix" not in heading.title.lower():
            continue  # "A Survey of ..." before any section is a title, not an appendix
        number = _number_tuple(kind, heading.number)
        if _follows(last[kind], number):
            accepted.append(heading)
            last[kind] = number
    return accepted


def _follows(previous: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    if previous is None:
        return number[0] <= 2 and all(part <= 2 for part in number[1:])
    depth = len(number)
    if len(previous) < depth - 1 or previous[: depth - 1] != number[: depth - 1]:
        return False
    before = previous[depth - 1] if len(previous) >= depth else 0
    return before < number[-1] <= before + 2


def _level_styles(headings: list[_Heading]) -> dict[float, tuple]:
    """The dominant style of each numbering depth seen at least twice."""
    by_key: dict[float, Counter] = {}
    for heading in headings:
        by_key.setdefault(heading.key, Counter())[heading.style] += 1
    return {
        key: counts.most_common(1)[0][0]
        for key, counts in by_key.items()
        if sum(counts.values()) >= 2
    }


def _fits_style(heading: _Heading, styles: dict[float, tuple]) -> bool:
    style = styles.get(heading.key)
    if style is None:
        return True
    return abs(style[0] - heading.style[0]) <= 0.5 and style[1] == heading.style[1]


def _consistent_keywords(candidates: list[_Heading]) -> list[_Heading]:
    """Keyword headings (PART I, Item 7) in series: numbers increase, one style per keyword."""
    accepted: list[_Heading] = []
    last: dict[str, tuple[int, int]] = {}
    style: dict[str, tuple] = {}
    for heading in candidates:
        rest = heading.title.split(maxsplit=2)[2:]
        if rest and rest[0][:1].islower():
            continue  # "Section 412 of the Code ...": a reference in prose
        number = _keyword_number(heading.number)
        previous = last.get(heading.kind)
        if previous is None:
            fits = number[0] <= 2
        else:
            fits = previous < number and number[0] <= previous[0] + 2
        if not fits or style.setdefault(heading.kind, heading.style) != heading.style:
            continue
        last[heading.kind] = number
        accepted.append(heading)
    kinds = Counter(h.kind for h in accepted)
    # A keyword seen once ("Section 3 shows ...") is prose; real ones come in series.
    return [h for h in accepted if kinds[h.kind] >= 2]


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _keyword_number(number: str) -> tuple[int, int]:
    """(integer, letter suffix) of "IV", "7", "7A", "B"."""
    upper = number.upper()
    digits = upper.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    if digits.isdigit():
        suffix = upper[len(digits) :]
        return int(digits), ord(suffix[0]) - ord("A") + 1 if suffix else 0
    if all(ch in _ROMAN for ch in upper):
        total = 0
        for ch, following in zip(upper, upper[1:] + " ", strict=True):
            value = _ROMAN[ch]
            total += -value if following in _ROMAN and _ROMAN[following] > value else value
        return total, 0
    return ord(upper[0]) - ord("A") + 1, 0


def _rank_unnumbered(unnumbered: list[_Heading], numbered: list[_Heading]) -> None:
    """Give unnumbered headings a hierarchy rank from their style."""
    styles = _level_styles(numbered) or {h.key: h.style for h in numbered}
    if not styles:
        ranked = sorted({h.style for h in unnumbered}, key=lambda s: (-s[0], not s[1], not s[2]))
        for heading in unnumbered:
            heading.key = float(ranked.index(heading.style))
        return
    keyword_keys = {h.key for h in numbered if h.kind in _KEYWORD_RANK}
    levels = sorted(styles.items())
    for heading in unnumbered:
        heading.key = _unnumbered_key(heading.style, levels, keyword_keys)


def _unnumbered_key(
    style: tuple, levels: list[tuple[float, tuple]], keyword_keys: set[float]
) -> float:
    numbered_levels = [(key, s) for key, s in levels if key not in keyword_keys]
    for same in (lambda a, b: a == b, lambda a, b: a[:2] == b[:2]):  # exact, then bar the case
        for key, level_style in numbered_levels:
            if same(level_style, style):
                return key  # styled like a numbered level ("Abstract", "References"): a sibling
    size = style[0]
    if size > max(s[0] for _, s in levels) + 0.4:
        return levels[0][0]  # larger than every numbered level: top level, never their parent
    # Otherwise it sits below the deepest level printed at least as large.
    deeper = [key for key, s in levels if s[0] >= size - 0.4]
    return (max(deeper) if deeper else levels[-1][0]) + 0.5


# --------------------------------------------------------------------------------------------
# Tree and content


def _build_sections(headings: list[_Heading], layout: DocumentLayout) -> list[Section]:
    all_lines = [line for page in layout.pages for line in page.lines]
    starts = sorted({h.seq for h in headings})
    sections: list[Section] = []
    stack: list[tuple[float, int]] = []  # (raw key, ordinal) of the open ancestors
    for ordinal, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.key:
            stack.pop()
        parent = stack[-1][1] if stack else None
        level = sections[parent].level + 1 if parent is not None else 1
        stack.append((heading.key, ordinal))
        body = _body_lines(all_lines, heading, starts)
        page_end = max([heading.page, *(line.page for line in body)])
        sections.append(
            Section(
                ordinal=ordinal,
                level=level,
                number=heading.number,
                title=unicodedata.normalize("NFKC", heading.title),  # "ﬁ" ligatures to "fi"
                parent=parent,
                page_start=heading.page,
                page_end=page_end,
                bbox=heading.bbox,
                content=_join_lines(body),
                source=heading.source,
                seq=heading.seq,
            )
        )
    return sections


def _body_lines(all_lines: list[Line], heading: _Heading, starts: list[int]) -> list[Line]:
    position = bisect.bisect_right(starts, heading.seq)
    stop = starts[position] if position < len(starts) else len(all_lines)
    return [line for line in all_lines[heading.end_seq + 1 : stop] if not line.furniture]


def _join_lines(lines: list[Line]) -> str:
    """Lines joined with newlines, a blank line between blocks (paragraph breaks)."""
    out: list[str] = []
    previous: tuple[int, int] | None = None
    for line in lines:
        block = (line.page, line.block)
        if previous is not None and block != previous:
            out.append("")
        out.append(line.text)
        previous = block
    return "\n".join(out).strip()
