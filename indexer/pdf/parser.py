"""PDF -> ParsedDocument: one layout pass, then each view extracted from it.

An extractor that fails on an odd file costs only its own view (recorded as a warning); a file
that cannot be opened at all raises ParseError with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pymupdf

from docsym.indexer.chunking import LineSpan, TextUnit, chunk_units
from docsym.indexer.errors import ParseError
from docsym.indexer.model import (
    BBox,
    Chunk,
    DocumentMeta,
    Page,
    ParsedDocument,
    Section,
    Sentence,
    Table,
)
from docsym.indexer.ocr.pages import OcrOutcome, OcrPage, OcrRun, ocr_document
from docsym.indexer.ocr.turned import map_turned_boxes
from docsym.indexer.pdf.equations import extract_equations
from docsym.indexer.pdf.figures import extract_figures
from docsym.indexer.pdf.layout import DocumentLayout, Line, PageLayout, centred_in, read_layout
from docsym.indexer.pdf.metadata import extract_metadata
from docsym.indexer.pdf.references import extract_references
from docsym.indexer.pdf.sections import (
    HEADING_SIZE_RATIO,
    MAX_HEADING_LINES,
    MAX_HEADING_WORDS,
    extract_sections,
    runs_on,
)
from docsym.indexer.pdf.tables import extract_tables
from docsym.indexer.sentences import sentences_of
from docsym.language.hyphens import PrintedWords, join_lines
from docsym.language.sentences import carries_on, opens_item

log = logging.getLogger(__name__)
T = TypeVar("T")

NO_TEXT_WARNING = (
    "no text found (no text layer, and OCR off or it read nothing): "
    "pages recorded for viewing, nothing to search"
)


def parse_pdf(
    path: Path, ocr: OcrRun | None = None, on_page: Callable[[int, int], None] | None = None
) -> ParsedDocument:
    """Parse a PDF; with ``ocr``, pages without a usable text layer are read by OCR first.
    ``on_page(done, total)`` hears the page count as the file opens, then each page read."""
    doc = open_pdf(path)
    try:
        if on_page is not None:
            on_page(0, doc.page_count)  # before OCR, which may take minutes
        read = ocr_document(doc, ocr) if ocr else OcrOutcome()
        layout = read_layout(doc, frozenset(read.pages), on_page)
        pages = [_page(p, read.pages.get(p.number)) for p in layout.pages]
        warnings: list[str] = list(read.warnings)
        if not any(p.has_text for p in pages):
            return ParsedDocument(
                format="pdf",
                meta=_scan_meta(doc),
                pages=pages,
                warnings=[NO_TEXT_WARNING, *warnings],
            )

        def run(name: str, fn: Callable[[], T], empty: T) -> T:
            try:
                return fn()
            except Exception as exc:  # one view failing must not lose the document
                log.debug("%s: %s extraction failed", path, name, exc_info=True)
                warnings.append(f"{name} extraction failed: {type(exc).__name__}: {exc}")
                return empty

        tables = run("tables", lambda: extract_tables(layout), [])
        parsed = ParsedDocument(
            format="pdf",
            meta=run("metadata", lambda: extract_metadata(doc, layout, tables), DocumentMeta()),
            pages=pages,
            sections=run("sections", lambda: extract_sections(doc, layout, tables), []),
            tables=tables,
            figures=run("figures", lambda: extract_figures(layout), []),
            equations=run("equations", lambda: extract_equations(layout), []),
            references=run("references", lambda: extract_references(layout), []),
            warnings=warnings,
        )
        parsed.chunks, parsed.sentences = build_chunks(layout, parsed.sections, parsed.tables)
        turned = {n: page.to_shown for n, page in read.pages.items() if page.to_shown}
        if turned:
            map_turned_boxes(parsed, turned)
        return parsed
    finally:
        doc.close()


def _page(p: PageLayout, ocr: OcrPage | None) -> Page:
    width, height = p.width, p.height
    if ocr and ocr.to_shown:  # read turned: recorded as the file shows it
        shown = pymupdf.Rect(0, 0, p.width, p.height) * ocr.to_shown
        width, height = shown.width, shown.height
    text = p.text()
    return Page(
        number=p.number,
        width=width,
        height=height,
        text=text,
        has_text=bool(text.strip()),
        label=_page_label(p.page) or p.printed,
        ocr=ocr is not None,
        ocr_confidence=ocr.confidence if ocr else None,
    )


def open_pdf(path: Path) -> pymupdf.Document:
    """Open a PDF or raise ParseError saying exactly what is wrong with it."""
    try:
        if path.stat().st_size == 0:
            raise ParseError("empty file (0 bytes)")
        with path.open("rb") as fh:
            head = fh.read(1024)
            fh.seek(max(0, path.stat().st_size - 2048))
            tail = fh.read()
        if b"%PDF-" not in head:
            raise ParseError("not a PDF (no %PDF- header)")
        doc = pdf_document(path)
    except ParseError:
        raise
    except Exception as exc:
        raise ParseError(f"cannot open PDF: {exc}") from None
    if doc.is_repaired and b"%%EOF" not in tail:
        doc.close()
        raise ParseError(
            "truncated PDF: the file ends before its end-of-file marker; copy it again"
        )
    if doc.needs_pass:
        doc.close()
        raise ParseError("encrypted PDF: a password is needed to open it")
    if doc.page_count == 0:
        doc.close()
        raise ParseError("PDF has no pages")
    try:  # a truncated file may open but fail on first access to a page
        doc.load_page(doc.page_count - 1).get_text("text")
    except Exception as exc:
        doc.close()
        raise ParseError(f"damaged PDF, pages cannot be read: {exc}") from None
    return doc


def pdf_document(path: Path) -> pymupdf.Document:
    """PyMuPDF's document for ``path``. PyMuPDF takes a file name as UTF-8 text, so a file
    whose name is not (``storage/file_names.py``) is read into memory and opened from there."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return pymupdf.open(stream=path.read_bytes(), filetype="pdf")
    return pymupdf.open(path, filetype="pdf")


def _page_label(page: pymupdf.Page) -> str | None:
    """The PDF's own label for the page (its /PageLabels), if the file defines them."""
    try:
        return page.get_label() or None
    except Exception:  # a malformed label tree costs the labels, not the document
        return None


def _scan_meta(doc: pymupdf.Document) -> DocumentMeta:
    title = (doc.metadata or {}).get("title") or None
    return DocumentMeta(title=title.strip() if title else None)


def build_chunks(
    layout: DocumentLayout, sections: list[Section], tables: list[Table]
) -> tuple[list[Chunk], list[Sentence]]:
    """Chunk each section's body text (table bodies excluded: tables are a view of their own),
    and place every sentence of the chunks on its page."""
    table_boxes: dict[int, list[BBox]] = {}
    for t in tables:
        table_boxes.setdefault(t.page_number, []).append(t.bbox)
    starts = sorted((s.seq, s.ordinal) for s in sections)
    groups: list[tuple[int | None, list[Line]]] = [(None, [])]
    boundary = 0
    for line in layout.lines():
        while boundary < len(starts) and line.seq >= starts[boundary][0]:
            groups.append((starts[boundary][1], []))
            boundary += 1
        if line.furniture or centred_in(line.bbox, table_boxes.get(line.page, ())):
            continue
        if boundary and line.seq == starts[boundary - 1][0]:
            continue  # the heading line itself: it lives in sections.title
        groups[-1][1].append(line)
    chunks: list[Chunk] = []
    sentences: list[Sentence] = []
    for section, lines in groups:
        units, first_seqs = _paragraphs(lines, layout.printed)
        made = []
        for piece in chunk_units(units):
            chunk = Chunk(
                ordinal=len(chunks),
                section=section,
                text=piece.text,
                page_number=piece.page_start,
                page_end=piece.page_end,
                token_count=piece.token_count,
                seq=first_seqs.get(piece.page_start, lines[0].seq if lines else 0),
            )
            chunks.append(chunk)
            made.append((chunk, piece))
        sentences += sentences_of(made, units, first_ordinal=len(sentences))
    return chunks, sentences


def _paragraphs(lines: list[Line], printed: PrintedWords) -> tuple[list[TextUnit], dict[int, int]]:
    """Join lines into paragraphs (one per layout block, or more where a sentence runs on from
    one block into the next), undoing end-of-line hyphenation (``language.hyphens``)."""
    units: list[TextUnit] = []
    first_seq: dict[int, int] = {}
    current: list[Line] = []
    for line in lines:
        first_seq.setdefault(line.page, line.seq)
        if current and _opens_paragraph(current[-1], line):
            units.append(_join(current, printed))
            current = []
        current.append(line)
    if current:
        units.append(_join(current, printed))
    return units, first_seq


def _opens_paragraph(last: Line, line: Line) -> bool:
    """Whether ``line`` starts a paragraph after ``last``: it opens another layout block and
    does not carry on ``last``'s sentence."""
    return (line.page, line.block) != (last.page, last.block) and not continues_below(last, line)


def continues_below(last: Line, line: Line) -> bool:
    """Whether ``line``, the first of another layout block, carries on the sentence ``last``
    left unfinished (``carries_on``) right under it, in the same column: producers start a
    block at a change of font, a footnote mark or a reference's hanging indent as well as at a
    paragraph."""
    if line.page != last.page or line.rotation or last.rotation:
        return False
    if not carries_on(last.text, line.text):
        return False
    height = last.bbox[3] - last.bbox[1]
    gap = line.bbox[1] - last.bbox[3]
    overlap = min(last.bbox[2], line.bbox[2]) - max(last.bbox[0], line.bbox[0])
    return -height / 2 <= gap <= height and overlap > 0


def _join(lines: list[Line], printed: PrintedWords) -> TextUnit:
    """One paragraph's text, where each of its lines sits in that text, and the lines a new
    sentence starts at (``_opens_sentence``)."""
    out = lines[0].text
    spans = [LineSpan(0, len(out), lines[0].page, lines[0].bbox)]
    for line in lines[1:]:
        out = join_lines(out, line.text, printed)
        start = len(out) - len(line.text)
        spans.append(LineSpan(start, len(out), line.page, line.bbox))
    opens = _opens_sentence(lines)
    breaks = tuple(span.start for span, new in zip(spans, opens, strict=True) if new and span.start)
    return TextUnit(out, lines[0].page, tuple(spans), breaks)


def _opens_sentence(lines: list[Line]) -> list[bool]:
    """For each line of a paragraph, whether a sentence starts with it though no full stop may
    end the one before: it opens a list item, or a heading starts or ends there."""
    items: list[bool] = []
    for n, line in enumerate(lines):
        previous = lines[n - 1].text if n else None
        items.append(opens_item(line.text, previous, bool(n) and items[-1]))
    heads = _heading_lines(lines)
    return [item or (n > 0 and heads[n] != heads[n - 1]) for n, item in enumerate(items)]


def _heading_lines(lines: list[Line]) -> list[bool]:
    """Which lines of a paragraph are a heading over the text below it in the same block: a
    short run of lines set apart from that text by weight or size, its last line ending short
    of the right edge without running on into the next (not bold sentences that wrap)."""
    heads = [False] * len(lines)
    for n in range(len(lines) - 1):
        last, follower = lines[n], lines[n + 1]
        emphasised = (last.bold and not follower.bold) or (
            last.size >= follower.size * HEADING_SIZE_RATIO
        )
        # Text running on in lower case continues the line's sentence (unless it is a list
        # item, "a. ..."): no heading ends there.
        lower = follower.text[:1].islower() and not opens_item(follower.text)
        runs = lower or last.text.endswith(("-", ","))
        if not emphasised or runs or runs_on(last, lines):
            continue
        first = n
        while first > 0 and _same_style(lines[first - 1], last):
            first -= 1
        words = sum(len(line.text.split()) for line in lines[first : n + 1])
        if n - first < MAX_HEADING_LINES and words <= MAX_HEADING_WORDS:
            heads[first : n + 1] = [True] * (n + 1 - first)
    return heads


def _same_style(a: Line, b: Line) -> bool:
    return a.bold == b.bold and abs(a.size - b.size) < 0.3
