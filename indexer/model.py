"""The parsed-document model: what every format parser produces and every view builder consumes.

Coordinates follow PyMuPDF: a bounding box is ``(x0, y0, x1, y1)`` in PDF points (1/72 inch) with
the origin at the top-left corner of the page and y growing downwards. Page numbers are 1-based.
A PPTX "page" is a slide and an XLSX "page" a sheet; formats without pages (DOCX, HTML, Markdown)
leave page numbers and boxes None, and their items are placed by section and ``seq`` instead.
Every item carries its page and box, so provenance travels from the parser to the search hit.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

BBox = tuple[float, float, float, float]


class DocumentMeta(BaseModel):
    title: str | None = None
    authors: list[str] = Field(default_factory=list)
    abstract: str | None = None
    year: int | None = None
    year_from: str | None = None  # where the year was read (storage.schema: DocumentRow)
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None


class Page(BaseModel):
    number: int
    width: float | None  # None for sheets of a spreadsheet (no physical size)
    height: float | None
    text: str
    has_text: bool
    label: str | None = None  # the page's own label or printed number ("iv", "24"), if any
    ocr: bool = False  # its text was read from the page image
    ocr_confidence: float | None = None  # mean recognition confidence of that text


class Section(BaseModel):
    """A heading and the text under it, up to the next heading of any level."""

    ordinal: int  # position in document order, 0-based
    level: int  # 1 = top level
    number: str | None = None  # "3", "3.2", "A", "A.1", None for unnumbered headings
    title: str
    parent: int | None = None  # ordinal of the parent section
    page_start: int | None  # None for formats without pages (DOCX, HTML, Markdown)
    page_end: int | None
    bbox: BBox | None = None  # of the heading on page_start
    content: str = ""
    source: str = "layout"  # "outline" or "layout"
    seq: int = 0  # reading-order position of the heading (see indexer.pdf.layout)


class TableCell(BaseModel):
    row: int
    col: int
    row_span: int = 1
    col_span: int = 1
    text: str
    is_col_header: bool = False  # part of the top (column) header
    is_row_header: bool = False  # part of the left (row) header
    row_path: list[str] = Field(default_factory=list)
    col_path: list[str] = Field(default_factory=list)
    value: float | None = None
    unit: str | None = None
    bbox: BBox | None = None
    address: str | None = None  # A1 address in its spreadsheet sheet ("C7"); None elsewhere


class Table(BaseModel):
    ordinal: int
    page_number: int | None  # None for formats without pages (DOCX, HTML, Markdown)
    bbox: BBox | None  # None where the format has no geometry (HTML, DOCX, XLSX)
    label: str | None = None  # "Table 2"
    caption: str | None = None
    n_rows: int
    n_cols: int
    header_rows: int  # depth of the top header
    header_cols: int  # depth of the left header
    cells: list[TableCell]
    seq: int = 0
    confidence: float = 1.0  # how far the structure can be trusted (indexer/table_checks.py)
    doubts: list[str] = Field(default_factory=list)  # why it may be wrong


class Figure(BaseModel):
    ordinal: int
    page_number: int | None
    bbox: BBox | None
    label: str | None = None  # "Figure 3"
    caption: str | None = None
    seq: int = 0


class Equation(BaseModel):
    ordinal: int
    page_number: int
    bbox: BBox
    number: str | None = None  # "3" for an equation printed with "(3)"
    text: str
    seq: int = 0


class Reference(BaseModel):
    ordinal: int
    page_number: int
    label: str | None = None  # "[12]" or "12" when printed
    text: str
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None


class Chunk(BaseModel):
    ordinal: int
    section: int | None  # ordinal of the section it belongs to
    text: str
    page_number: int | None  # None for formats without pages (DOCX, HTML, Markdown)
    page_end: int | None
    token_count: int  # word pieces of the embedding model, special tokens included
    seq: int = 0  # reading-order position of its first line
    bbox: BBox | None = None  # the union of its sentences' boxes (PDF)


class Sentence(BaseModel):
    """A sentence of a chunk (a part of one, where a page break or the window cut it)."""

    ordinal: int  # position in document order
    chunk: int  # ordinal of its chunk
    start: int  # character span in the chunk's text
    end: int
    text: str
    page_number: int | None
    bbox: BBox | None  # the union of its lines' boxes on that page (PDF)
    continued: bool = False  # goes on in the next sentence (cut by a page or column break)


class ParsedDocument(BaseModel):
    format: str  # "pdf", "docx", ...
    meta: DocumentMeta
    pages: list[Page]
    sections: list[Section] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)
    equations: list[Equation] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    chunks: list[Chunk] = Field(default_factory=list)
    sentences: list[Sentence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
