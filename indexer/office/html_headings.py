"""Headings of HTML that has no heading tags: bold stand-alone blocks become <h2>..<h5>.

SEC filings and other generated HTML set headings as ``<p style="font-weight:bold">`` or
``<div><span style="font-weight:700">`` instead of ``<h1>``-``<h6>``, so docling finds no section
at all. Before conversion, a block (``p`` or ``div`` with no block inside it, outside tables and
lists) whose text is short and entirely bold is rewritten as a heading tag. Its level comes from
what it says, outermost first: "PART II", "ITEM 7A.", "NOTE 6.", other all-capitals headings,
other headings; levels not used are squeezed out, so a document with only capitals and
mixed-case headings gets levels 1 and 2. The largest bold text (a cover title) is returned as a
title candidate.
"""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, Tag, XMLParsedAsHTMLWarning

from docsym.indexer.errors import ParseError
from docsym.indexer.heading_numbers import split_heading_number

_BOLD = re.compile(r"font-weight\s*:\s*(bold|bolder|[6-9]00)", re.IGNORECASE)
_FONT_SIZE = re.compile(r"font-size\s*:\s*([\d.]+)\s*(pt|px)?", re.IGNORECASE)
_BLOCK_TAGS = ("p", "div", "table", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6")
_HEADING_TAGS = ("h2", "h3", "h4", "h5", "h6")
_NOTE = re.compile(r"^note\s+\d+\b", re.IGNORECASE)  # "NOTE 6. Assets deployed ..."
_CONTAINERS = ("table", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6")
MAX_HEADING_CHARS = 150
MAX_MIXED_CASE_WORDS = 14  # a longer bold line in mixed case is a run-in paragraph


def parse_html(data: bytes) -> BeautifulSoup:
    """The parsed HTML; ParseError when it has no body or nothing in it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)  # XHTML and inline XBRL
        soup = BeautifulSoup(data, "lxml")
    body = soup.body
    if body is None:
        raise ParseError("HTML has no <body>: nothing to index")
    if not body.get_text(strip=True) and body.find(["img", "table", "svg"]) is None:
        raise ParseError("HTML body is empty: no text, tables or images")
    return soup


def promote_styled_headings(soup: BeautifulSoup) -> tuple[int, str | None]:
    """Rewrite bold stand-alone blocks as heading tags when the page has none (h2-h6).

    Returns how many blocks were promoted and the text of the largest one (a cover title, when
    it is set larger than the others), or None.
    """
    body = soup.body
    if body is None or body.find(_HEADING_TAGS) is not None:
        return 0, None
    found: list[tuple[Tag, str, float]] = []
    for block in body.find_all(["p", "div"]):
        text = " ".join(block.get_text(" ").split())
        if _is_heading_text(text) and _stands_alone(block) and _all_bold(block):
            found.append((block, text, _font_size(block)))
    if not found:
        return 0, None
    ranks = [_rank(text) for _, text, _ in found]
    levels = {rank: level for level, rank in enumerate(sorted(set(ranks)), 1)}
    for (block, _, _), rank in zip(found, ranks, strict=True):
        block.name = f"h{levels[rank] + 1}"  # docling reads h2 as level 1 (h1 is the title)
    largest = max(found, key=lambda item: item[2])
    smallest = min(size for _, _, size in found)
    return len(found), (largest[1] if largest[2] > smallest else None)


def _is_heading_text(text: str) -> bool:
    if not text or len(text) > MAX_HEADING_CHARS or not any(ch.isalpha() for ch in text):
        return False
    if text.upper() != text and len(text.split()) > MAX_MIXED_CASE_WORDS:
        return False
    return not text.endswith((",", ";"))


def _stands_alone(block: Tag) -> bool:
    """No block inside it and not part of a table, list or heading."""
    return block.find(_BLOCK_TAGS) is None and block.find_parent(_CONTAINERS) is None


def _all_bold(block: Tag) -> bool:
    """Every visible piece of text is bold: by the block's style, an ancestor's, or b/strong."""
    if _bold_tag(block) or any(_bold_tag(parent) for parent in block.parents):
        return True
    pieces = [s for s in block.find_all(string=True) if s.strip()]
    return bool(pieces) and all(_bold_between(piece, block) for piece in pieces)


def _bold_between(piece, block: Tag) -> bool:
    for parent in piece.parents:
        if parent is block:
            return False
        if _bold_tag(parent):
            return True
    return False


def _bold_tag(tag: Tag) -> bool:
    if tag.name in ("b", "strong"):
        return True
    style = tag.get("style") if isinstance(tag, Tag) else None
    return bool(style and _BOLD.search(style))


def _font_size(block: Tag) -> float:
    for tag in (block, *block.find_all(style=True)):
        match = _FONT_SIZE.search(tag.get("style") or "")
        if match:
            size = float(match.group(1))
            return size * 0.75 if (match.group(2) or "").lower() == "px" else size
    return 0.0


def _rank(text: str) -> int:
    kind, _, _ = split_heading_number(text)
    if kind == "part":
        return 1
    if kind in ("item", "chapter", "section"):
        return 2
    if _NOTE.match(text):
        return 3
    letters = [ch for ch in text if ch.isalpha()]
    return 4 if all(ch.isupper() for ch in letters) else 5
