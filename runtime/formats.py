"""Every file format docsym reads, one record each: the one place a format is described.

A record says which suffixes name the format, which function parses it (imported by name on
first use, so a folder of PDFs never loads an office library), which libraries that parser loads
(a worker imports them before it measures a file's memory budget), the largest file it takes,
and what its pages are: PDF pages (rendered by ``view_page``), slides, sheets, or none (DOCX,
HTML and Markdown flow without pages and are located by section and reading order). The indexer
(discovery, input limits, parsing), the settings (``DOCSYM_MAX_FILE_MB``) and the tools (page
images, how a page is cited) all read these records instead of testing format names.

It lives in ``runtime/`` because every layer above reads it; the parser is named as text so
this module imports nothing of the indexer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# What a format's page is: a PDF page, a slide, a sheet (known by its name), or none at all.
PageKind = Literal["page", "slide", "sheet"]


@dataclass(frozen=True)
class FileFormat:
    name: str  # documents.format
    title: str  # how messages name it
    suffixes: tuple[str, ...]
    parser: str  # "module:function": (path, ocr, on_page) -> ParsedDocument
    libraries: tuple[str, ...]  # modules its parser loads, imported before the memory cap
    max_mb: int  # default largest file (packaged formats: unpacked), DOCSYM_MAX_FILE_MB
    packaged: bool = False  # an Office Open XML zip package, checked part by part
    pages: PageKind | None = None  # what its page_number counts; None: it has no pages
    page_images: bool = False  # view_page renders its pages


# In the order one index worker reads them: PDFs first, so the OCR processes their scans start
# end before a library for another format loads beside them; docling's formats last.
FORMATS: tuple[FileFormat, ...] = (
    FileFormat(
        "pdf",
        "PDF",
        (".pdf",),
        "docsym.indexer.pdf.parser:parse_pdf",
        ("pymupdf",),
        1024,
        pages="page",
        page_images=True,
    ),
    FileFormat(
        "xlsx",
        "XLSX",
        (".xlsx",),
        "docsym.indexer.office.parsers:parse_xlsx",
        ("openpyxl",),
        256,
        packaged=True,
        pages="sheet",
    ),
    FileFormat(
        "docx",
        "DOCX",
        (".docx",),
        "docsym.indexer.office.parsers:parse_docx",
        ("docling.backend.msword_backend",),
        512,
        packaged=True,
    ),
    FileFormat(
        "pptx",
        "PPTX",
        (".pptx",),
        "docsym.indexer.office.parsers:parse_pptx",
        ("docling.backend.mspowerpoint_backend",),
        2048,
        packaged=True,
        pages="slide",
    ),
    FileFormat(
        "html",
        "HTML",
        (".html", ".htm"),
        "docsym.indexer.office.parsers:parse_html",
        ("docling.backend.html_backend",),
        64,
    ),
    FileFormat(
        "md",
        "Markdown",
        (".md", ".markdown"),
        "docsym.indexer.office.parsers:parse_markdown",
        ("docling.backend.md_backend",),
        16,
    ),
)

BY_NAME: dict[str, FileFormat] = {f.name: f for f in FORMATS}
BY_SUFFIX: dict[str, FileFormat] = {s: f for f in FORMATS for s in f.suffixes}
# A file named on the command line whatever its suffix is tried as this.
FALLBACK = BY_NAME["pdf"]


def format_named(name: str | None) -> FileFormat | None:
    """The record of ``documents.format``; None for a name no docsym reads."""
    return BY_NAME.get(name or "")


def has_page_images(name: str | None) -> bool:
    """Whether ``view_page`` renders the pages of a document of this format."""
    fmt = format_named(name)
    return fmt is not None and fmt.page_images


def format_of(path: Path) -> FileFormat | None:
    """The format a file's suffix names, or None when docsym does not read it."""
    return BY_SUFFIX.get(path.suffix.lower())


def reads(path: Path) -> FileFormat:
    """The format a file is read as: its suffix's, else (a file named explicitly) PDF."""
    return format_of(path) or FALLBACK
