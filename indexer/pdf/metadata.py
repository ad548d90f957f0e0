"""Document metadata: title, authors, abstract, year, venue, DOI and arXiv id.

The PDF's own metadata is used when it is meaningful (LaTeX/hyperref usually fills title and
author); otherwise everything comes from the first page's layout: the title is the largest text
near the top, the authors are the lines between the title and the abstract.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

import pymupdf

from docsym.indexer.model import DocumentMeta, Table
from docsym.indexer.pdf.layout import (
    DocumentLayout,
    Line,
    PageLayout,
    centred_in,
    without_page_number,
)
from docsym.language.accents import place_accents
from docsym.language.hyphens import PrintedWords, join_all

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+)", re.IGNORECASE)
# The arXiv side stamp: "arXiv:2004.04906v3 [cs.CL] 30 Sep 2020".
_ARXIV_STAMP = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+/\d{7}(?:v\d+)?)\s*\[")
_ARXIV_ANY = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5}(?:v\d+)?)", re.IGNORECASE)
YEAR_PAGES = 2  # the pages a printed year is looked for on
_YEAR = re.compile(r"(?<!\d)((?:19[5-9]|20[0-4])\d)(?!\d)")
_DATED_LINE = re.compile(
    r"©|\(c\)|copyright|proceedings|conference|journal|published|volume|accepted|workshop",
    re.IGNORECASE,
)
_JUNK_TITLE = re.compile(
    r"^(microsoft (word|powerpoint|excel)|untitled|slide \d|doi:|presentation\d*$|document\d*$)"
    r"|\.(pdf|docx?|tex|dvi|ps|pptx?|indd|qxd|rtf)$"
    r"|^[\w\-]+_[\w\-]+$|^[\d\-_. ]+$",
    re.IGNORECASE,
)
_VENUES = (
    re.compile(r"(Proceedings of (?:the )?.+?)(?:,\s*pages\b|,\s*(?:vol|pp)\.|,\s*\d|$)"),
    re.compile(r"(?:Published|Accepted|Appearing|To appear) (?:as a \w+ paper )?(?:in|at) (.+)"),
    re.compile(r"\b((?:Journal|Transactions|Annals) of [A-Z][A-Za-z&\- ]+?)(?:\s+\d|,|$)"),
)
_ABSTRACT = re.compile(r"^a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b\s*[.:—–\-]*\s*", re.IGNORECASE)
_ABSTRACT_END = re.compile(
    r"^(keywords|key words|index terms|ccs concepts|additional key words|©|\(c\)|"
    r"received\b|(1|i)\.?\s+introduction|introduction$)",
    re.IGNORECASE,
)
_AFFILIATION = re.compile(
    r"universit|institut|department|dept\.|school|college|laborator|\blab\b|research|"
    r"academy|centre|center|corporation|\binc\b|\bltd\b|gmbh|google|microsoft|facebook|meta ai|"
    r"amazon|ibm|allen|\bai\b|hospital|foundation|faculty|@|www\.|http|\d{3}|division|"
    r"ministry|agency|council|online|press|csiro|australia|usa\b|germany|china|japan|canada|"
    r"france|italy|spain|netherlands|united|\buk\b",
    re.IGNORECASE,
)
_NAME_TOKEN = re.compile(r"^(?:[A-Z][^\s\d,;:()]*|[a-z]{1,3}|van|von|der|den|de|da|di|del|la|le)$")
_FOOTNOTE_MARKS = re.compile(r"[†‡∗*§¶⋆♯♮♭✝✉#]+")
_KEYWORDS = re.compile(r"^(keywords|key words|index terms|ccs concepts)\b", re.IGNORECASE)
_COPYRIGHT_TAIL = re.compile(r"\s*(?:©|\(c\)|\bq)\s*(?:19|20)\d\d\b.{0,80}reserved\.?\s*$")
ABSTRACT_MAX_WORDS = 600
# A title is at least this much larger than the body text. OCR'd line sizes are measured line
# heights that vary by several percent from line to line; born-digital titles are 1.3x or more.
TITLE_SIZE_RATIO = 1.15
# Letters make most of a title; an OCR'd formula ("d (t) + 3rA1 (t)³G(t)") is often as tall.
TITLE_LETTER_SHARE = 0.6
MAX_TITLE_LINES = 3  # a page's first block longer than this is a paragraph, not its title


def extract_metadata(
    doc: pymupdf.Document, layout: DocumentLayout, tables: Sequence[Table] = ()
) -> DocumentMeta:
    """``tables``: the document's tables, whose cells on page 1 are never its title or authors
    (a scan of one table would be titled by its first header cell)."""
    info = doc.metadata or {}
    first = layout.pages[0] if layout.pages else None
    lines = _first_page_lines(first, tables) if first else []
    title_lines, layout_title = _title(lines, first.height, layout.body_size) if first else ([], "")
    title = _clean_meta_title(info.get("title", "")) or layout_title or None
    authors = _split_meta_authors(info.get("author", ""))
    if not authors and first and title_lines:
        authors = _layout_authors(first, lines, title_lines)
    page_text = "\n".join(line.text for line in first.lines) if first else ""
    meta_text = " ".join(str(info.get(key) or "") for key in ("title", "subject", "keywords"))
    arxiv_id = _find_arxiv(page_text, meta_text)
    doi = _find_doi(page_text, meta_text)
    year, year_from = _year(arxiv_id, doi, lines, layout.pages[:YEAR_PAGES], info)
    return DocumentMeta(
        title=title,
        authors=authors,
        abstract=_abstract(layout),
        year=year,
        year_from=year_from,
        venue=_venue(lines, first.height if first else 0.0, info.get("subject", "")),
        doi=doi,
        arxiv_id=arxiv_id,
    )


def _first_page_lines(page: PageLayout, tables: Sequence[Table]) -> list[Line]:
    """The page's horizontal lines outside its tables."""
    boxes = [t.bbox for t in tables if t.page_number == page.number and t.bbox]
    return [
        line for line in page.lines if _is_horizontal(line) and not centred_in(line.bbox, boxes)
    ]


def _is_horizontal(line: Line) -> bool:
    x0, y0, x1, y1 = line.bbox
    return (y1 - y0) < 2.5 * max(x1 - x0, 1.0) or len(line.text) < 3


def _clean_meta_title(title: str) -> str | None:
    title = re.sub(r"\s+", " ", title or "").strip()
    if len(title) < 6 or " " not in title or _JUNK_TITLE.search(title):
        return None
    return title


def _split_meta_authors(author: str) -> list[str]:
    author = re.sub(r"\s+", " ", author or "").strip()
    if not author or _AFFILIATION.search(author):
        return []
    parts = re.split(r"\s*(?:;|,|&|\band\b)\s*", author)
    names = [_clean_name(part) for part in parts]
    return [name for name in names if name]


def _title(lines: list[Line], page_height: float, body_size: float) -> tuple[list[Line], str]:
    """The title's lines and text: the largest-font lines in the top half of page 1 (journal
    banners excluded); without any notably larger than the body, the block heading the page."""
    candidates = [
        line
        for line in lines
        if line.bbox[1] < page_height * 0.5
        and line.size >= body_size * TITLE_SIZE_RATIO
        and _reads_as_title(line.text)
    ]
    if not candidates:
        head = _page_head(lines)
        return head, without_page_number(_join(head))
    biggest = max(line.size for line in candidates)
    top = [line for line in candidates if line.size >= biggest - 0.5]
    start = min(top, key=lambda line: line.seq)
    out = [start]
    for line in candidates:
        if line.seq <= start.seq or abs(line.size - start.size) > 0.5:
            continue
        gap = line.bbox[1] - out[-1].bbox[3]
        if -0.5 * line.size <= gap < 1.2 * line.size:
            out.append(line)
    return out, _join(out)


def _reads_as_title(text: str) -> bool:
    """Words in any script (a Chinese title has no Latin letters), not a formula, a venue or an
    arXiv stamp."""
    letters = sum(ch.isalpha() for ch in text)
    return (
        letters >= 4
        and letters >= TITLE_LETTER_SHARE * len(text.replace(" ", ""))
        and not any(venue.search(text) for venue in _VENUES)
        and not _ARXIV_ANY.search(text)
    )


def _page_head(lines: list[Line]) -> list[Line]:
    """The page's first block when it is a heading (a few lines, no full stop): on a page
    without larger text (a scan's hidden layer, one page cut from a paper, a book page) that is
    the title or the running header."""
    body = [line for line in lines if not line.furniture]
    if not body:
        return []
    head = [line for line in body if line.block == body[0].block]
    text = _join(head)
    if len(head) > MAX_TITLE_LINES or text.endswith((".", ",", ";", ":")):
        return []
    return head if _reads_as_title(text) else []


def _join(lines: list[Line]) -> str:
    text = " ".join(line.text.strip() for line in lines)
    return re.sub(r"\s+", " ", text).strip()


def _layout_authors(page: PageLayout, lines: list[Line], title_lines: list[Line]) -> list[str]:
    """Names from the lines between the title and the abstract, superscripts read as commas."""
    top = max(line.bbox[3] for line in title_lines)
    bottom = _authors_bottom(lines, top)
    if bottom is None:
        return []  # no abstract or introduction to bound the author block: do not guess
    text = _text_without_superscripts(page.page, top, bottom)
    names: list[str] = []
    for row in text.split("\n"):
        if _AFFILIATION.search(row):
            # "NAME, Affiliation, Country" (ACM): keep only what precedes the affiliation.
            row = row.split(",")[0] if "," in row else ""
            if _AFFILIATION.search(row):
                continue
        for part in re.split(r"\s*(?:,|;|&|\band\b|\s{3,})\s*", row):
            name = _clean_name(part)
            if name and name not in names:
                names.append(name)
    return names


def _authors_bottom(lines: list[Line], top: float) -> float | None:
    """Top of the abstract (or, without one, of the first body-text paragraph)."""
    for line in lines:
        if line.bbox[1] > top and (_ABSTRACT.match(line.text) or _ABSTRACT_END.match(line.text)):
            return line.bbox[1]
    for line in lines:
        if line.bbox[1] > top and len(line.text.split()) >= 12:
            return line.bbox[1]
    return None


def _text_without_superscripts(page: pymupdf.Page, top: float, bottom: float) -> str:
    rows: list[str] = []
    clip = pymupdf.Rect(0, top + 0.5, page.rect.width, bottom - 0.5)
    for block in page.get_text("dict", clip=clip)["blocks"]:
        for raw in block.get("lines", []):
            spans = raw["spans"]
            sizes = [s["size"] for s in spans if s["text"].strip()]
            if not sizes:
                continue
            main = max(sizes)
            parts = [
                s["text"] if s["size"] > 0.8 * main or not s["text"].strip() else "," for s in spans
            ]
            rows.append(place_accents("".join(parts)))
    return "\n".join(rows)


def _clean_name(part: str) -> str | None:
    part = _FOOTNOTE_MARKS.sub(" ", part)
    part = re.sub(r"\s+", " ", part).strip(" ,.;:")
    tokens = part.split(" ")
    if not 2 <= len(tokens) <= 5 or any(ch.isdigit() for ch in part):
        return None
    if not all(_NAME_TOKEN.match(token) for token in tokens) or not tokens[-1][:1].isupper():
        return None
    if part.isupper():
        part = " ".join(token if token.endswith(".") else token.capitalize() for token in tokens)
    return part


def _abstract(layout: DocumentLayout) -> str | None:
    lines = [line for page in layout.pages[:2] for line in page.lines if not line.furniture]
    lines = [line for line in lines if _is_horizontal(line)]
    for index, line in enumerate(lines):
        match = _ABSTRACT.match(line.text)
        if match and (len(line.text) < 12 or line.bold or match.group(0).rstrip() != "Abstract"):
            return _abstract_from(lines, index, line.text[match.end() :], layout.printed)
    return _abstract_before_keywords(lines, layout.printed)


def _abstract_before_keywords(lines: list[Line], printed: PrintedWords) -> str | None:
    """No "Abstract" heading (ACM style): the paragraph right before "CCS Concepts"/"Keywords"."""
    end = next(
        (i for i, line in enumerate(lines) if _KEYWORDS.match(line.text) and line.page == 1), None
    )
    if not end:
        return None
    picked = [lines[end - 1]]
    for line in reversed(lines[: end - 1]):
        gap = picked[0].bbox[1] - line.bbox[3]
        if abs(line.size - picked[0].size) > 0.6 or line.bold or not -2 < gap < line.size:
            break
        picked.insert(0, line)
    text = join_all((line.text for line in picked), printed)
    return text if len(text.split()) >= 40 else None


def _abstract_from(lines: list[Line], index: int, lead: str, printed: PrintedWords) -> str | None:
    parts = [lead] if lead.strip() else []
    size = None
    for line in lines[index + 1 :]:
        text = line.text.strip()
        if _ABSTRACT_END.match(text) or (line.bold and len(text) < 60 and parts):
            break
        if size is None:
            size = line.size
        elif abs(line.size - size) > 1.0:
            break
        parts.append(text)
        if sum(len(part.split()) for part in parts) > ABSTRACT_MAX_WORDS:
            break
    text = _COPYRIGHT_TAIL.sub("", join_all(parts, printed))
    return text if len(text.split()) >= 20 else None


def _find_arxiv(page_text: str, meta_text: str) -> str | None:
    match = _ARXIV_STAMP.search(page_text) or _ARXIV_ANY.search(meta_text)
    return match.group(1) if match else None


def _find_doi(page_text: str, meta_text: str) -> str | None:
    match = _DOI.search(meta_text) or _DOI.search(page_text)
    return match.group(1).rstrip(".)]") if match else None


def _year(
    arxiv_id: str | None,
    doi: str | None,
    lines: list[Line],
    first_pages: list[PageLayout],
    info: dict,
) -> tuple[int | None, str | None]:
    """The year and where it was read (``DocumentRow.year_from``): an arXiv id's or a DOI's
    year; else a year on a dated line of the first page ('© 1999', 'Journal of ... 2005');
    else the latest year the first pages print that is not after the file was made (a paper's
    citations are never later than the paper; a scan's file is often years younger than its
    pages: the ZFN scan prints 1999 in a file made in 2009); else the file's creation year."""
    if arxiv_id and re.match(r"\d{4}\.", arxiv_id):
        yy = int(arxiv_id[:2])
        return (2000 + yy if yy < 90 else 1900 + yy), "arxiv id"
    if doi:
        match = re.search(r"[/.]((?:19[5-9]|20[0-4])\d)[/.]", doi)
        if match:
            return int(match.group(1)), "doi"
    for line in lines:
        if _DATED_LINE.search(line.text):
            match = _YEAR.search(line.text)
            if match:
                return int(match.group(1)), "page"
    created = re.match(r"D:(\d{4})", info.get("creationDate") or "")
    made = int(created.group(1)) if created else None
    latest = made or date.today().year
    printed = [
        int(year)
        for page in first_pages
        for line in page.lines
        for year in _YEAR.findall(line.text)
        if int(year) <= latest
    ]
    if printed:
        return max(printed), "page"
    return (made, "file metadata") if made else (None, None)


def _venue(lines: list[Line], page_height: float, subject: str) -> str | None:
    margins = [
        line.text
        for line in lines
        if line.bbox[1] < 0.2 * page_height or line.bbox[1] > 0.8 * page_height
    ]
    for pattern in _VENUES:
        for text in [*margins, subject or ""]:
            match = pattern.search(text)
            if match:
                return match.group(1).strip(" .,")
    return None
