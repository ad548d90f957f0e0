"""Entry points: one ``parse_<format>(path) -> ParsedDocument`` per office format.

Each has the signature of every parser ``runtime/formats.py`` names: the file, the run's OCR
(unused: images inside office files are not read by OCR) and ``on_page``, told of the slides or
sheets read. Each checks the file (``files``), reads it into the block stream (docling, or
openpyxl for XLSX), picks the title, and assembles the document (``assemble``). A file with
nothing to index raises ParseError, so it is reported and skipped like a bad PDF.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from docsym.indexer.errors import ParseError
from docsym.indexer.model import ParsedDocument
from docsym.indexer.office.assemble import assemble
from docsym.indexer.office.blocks import BlockStream, Heading, ImageBlock, Paragraph, TableBlock
from docsym.indexer.office.convert import convert
from docsym.indexer.office.docling_parser import docling_blocks
from docsym.indexer.office.files import check_ooxml, read_bytes
from docsym.indexer.office.html_headings import parse_html as read_html
from docsym.indexer.office.html_headings import promote_styled_headings
from docsym.indexer.office.metadata import choose_title, package_title
from docsym.indexer.office.xlsx import xlsx_blocks

if TYPE_CHECKING:
    from docsym.indexer.ocr.pages import OcrRun

OnPage = Callable[[int, int], None] | None


def parse_docx(path: Path, ocr: OcrRun | None = None, on_page: OnPage = None) -> ParsedDocument:
    check_ooxml(path, "docx")
    stream = docling_blocks(convert(path, "docx"), "docx")
    return _finish(stream, on_page, package_title(path), _body_title(stream))


def parse_pptx(path: Path, ocr: OcrRun | None = None, on_page: OnPage = None) -> ParsedDocument:
    check_ooxml(path, "pptx")
    stream = docling_blocks(convert(path, "pptx"), "pptx")
    return _finish(stream, on_page, package_title(path))


def parse_xlsx(path: Path, ocr: OcrRun | None = None, on_page: OnPage = None) -> ParsedDocument:
    check_ooxml(path, "xlsx")
    stream = xlsx_blocks(path)
    # The workbook's first line of text: a title row above the first table, or a text row.
    first = next((b for b in stream.blocks if isinstance(b, Paragraph | TableBlock)), None)
    text = (first.text if isinstance(first, Paragraph) else first.caption) if first else None
    return _finish(stream, on_page, package_title(path), (text or "").split("\n")[0])


def parse_html(path: Path, ocr: OcrRun | None = None, on_page: OnPage = None) -> ParsedDocument:
    raw = read_bytes(path)
    soup = read_html(raw)
    head_title = soup.title.get_text() if soup.title else None
    promoted, cover_title = promote_styled_headings(soup)
    data = soup.encode("utf-8") if promoted else raw  # encode() also rewrites <meta charset>
    stream = docling_blocks(convert(path, "html", data), "html")
    if promoted:
        for block in stream.blocks:
            if isinstance(block, Heading):
                block.source = "layout"  # found from bold text, not from heading tags
    return _finish(stream, on_page, _body_title(stream), cover_title, head_title)


def parse_markdown(path: Path, ocr: OcrRun | None = None, on_page: OnPage = None) -> ParsedDocument:
    read_bytes(path)  # empty-file check
    stream = docling_blocks(convert(path, "md"), "md")
    return _finish(stream, on_page, _body_title(stream))


def _body_title(stream: BlockStream) -> str | None:
    return stream.meta.title


def _finish(stream: BlockStream, on_page: OnPage, *titles: str | None) -> ParsedDocument:
    if not any(isinstance(b, Paragraph | TableBlock | ImageBlock | Heading) for b in stream.blocks):
        raise ParseError(f"no text, tables or images found in this {stream.format.upper()} file")
    first_heading = next((b.text for b in stream.blocks if isinstance(b, Heading)), None)
    stream.meta.title = choose_title(*titles, first_heading)
    if on_page is not None and stream.pages:  # slides or sheets, all read
        on_page(len(stream.pages), len(stream.pages))
    return assemble(stream)
