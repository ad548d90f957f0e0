"""The reading-order stream every office reader produces: headings, paragraphs, tables, images.

A reader (docling for DOCX/HTML/PPTX/Markdown, openpyxl for XLSX) only has to say what comes next
and where; ``indexer.office.assemble`` turns the stream into a ``ParsedDocument``. ``seq`` is the
position in the stream, which is how views and the tree place items in sections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docsym.indexer.model import BBox, DocumentMeta, Page, TableCell


@dataclass
class Heading:
    text: str
    level: int  # 1 = top level; levels may skip (a level-3 heading right under a level-1 one)
    page: int | None = None
    bbox: BBox | None = None
    source: str = "markup"  # sections.source: "markup" (styles, tags) or "layout" (bold text)
    seq: int = 0


@dataclass
class Paragraph:
    text: str
    page: int | None = None
    seq: int = 0


@dataclass
class TableBlock:
    cells: list[TableCell]
    page: int | None = None
    bbox: BBox | None = None
    caption: str | None = None
    header_rows: int | None = None  # None: let table_model infer it
    header_cols: int | None = None
    # Applied to the finished table (see indexer.office.table_paths), e.g. nested row groups.
    post: list = field(default_factory=list)
    seq: int = 0


@dataclass
class ImageBlock:
    caption: str | None = None
    page: int | None = None
    bbox: BBox | None = None
    seq: int = 0


Block = Heading | Paragraph | TableBlock | ImageBlock


@dataclass
class BlockStream:
    """What a reader hands over: the blocks in reading order, the pages (slides or sheets; none
    for formats without pages), metadata and warnings."""

    format: str
    blocks: list[Block] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    meta: DocumentMeta = field(default_factory=DocumentMeta)
    warnings: list[str] = field(default_factory=list)

    def add(self, block: Block) -> None:
        block.seq = len(self.blocks)
        self.blocks.append(block)
