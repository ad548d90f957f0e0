"""DoclingDocument (from DOCX, HTML, PPTX or Markdown) -> the office block stream.

docling gives the body in reading order: headings with their levels, paragraphs, list items,
tables with spans and header flags, pictures with captions. What this module adds:
- inline runs (a Markdown paragraph with a link is three docling items) become one paragraph;
- text inside tables stays out of the paragraphs (it is in table_cells), except in layout tables
  that hold prose (a 10-K's auditor's report sits in a one-column table), whose text must be
  searchable as chunks too;
- a caption docling links to nothing (an HTML <figure> around a video) still makes a figure;
- a PPTX slide is a page and a level-1 section titled by the slide title ("Slide N" without one);
- several body titles (Markdown with many "# " headings) are level-1 sections, everything else
  one level below; a single title is the document's title, not a section.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from docsym.indexer.model import BBox, Page, TableCell
from docsym.indexer.office.blocks import (
    BlockStream,
    Heading,
    ImageBlock,
    Paragraph,
    TableBlock,
)
from docsym.indexer.office.table_grid import header_depths, join_sign_columns

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument, NodeItem

EMU_PER_POINT = 12700  # PPTX geometry is in English Metric Units
PROSE_WORDS = 40  # a table cell this long is running text, not a value
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_IMAGE_MARK = re.compile(r"<!--\s*image\s*-->")
_NO_SPACE_BEFORE = (".", ",", ";", ":", "!", "?", ")", "]", "%")


def docling_blocks(doc: DoclingDocument, fmt: str) -> BlockStream:
    stream = BlockStream(format=fmt)
    walker = _Walker(doc, stream, slides=fmt == "pptx")
    walker.walk()
    stream.pages = walker.pages()
    stream.meta.title = walker.body_title
    return stream


class _Walker:
    def __init__(self, doc: DoclingDocument, stream: BlockStream, slides: bool) -> None:
        self.doc = doc
        self.stream = stream
        self.slides = slides
        self.titles = [t for t in _body_items(doc) if t.label.value == "title"]
        self.titles_are_sections = len(self.titles) > 1 and not slides
        self.body_title = self.titles[0].text.strip() if self.titles and not slides else None
        self.slide = 0
        self.page_texts: dict[int, list[str]] = {}
        self._inline: tuple[str, list[str], int | None] | None = None  # (group ref, texts, page)
        self._container: dict[str, str | None] = {}  # parent ref -> see _table_container
        # Captions docling linked to a picture or table; any other caption (an HTML figure
        # holding a video) still captions a figure.
        self.linked = {c.cref for x in [*doc.pictures, *doc.tables] for c in x.captions}

    def walk(self) -> None:
        for item in _body_items(self.doc):
            page, bbox = self._place(item)
            if self.slides and page and page != self.slide:
                self._flush_inline()
                self._start_slide(page, item)
                if item.label.value == "title":
                    continue
            label = item.label.value
            if self._table_container(item) == "table":
                continue  # its text is in table_cells
            if label == "table":
                self._flush_inline()
                self._table(item, page, bbox)
            elif label == "picture":
                self._flush_inline()
                caption = item.caption_text(self.doc).strip() or None
                self.stream.add(ImageBlock(caption=caption, page=page, bbox=bbox))
            elif label in ("section_header", "title"):
                self._flush_inline()
                self._heading(item, page, bbox)
            else:
                self._text(item, page)
                if label == "caption" and item.self_ref not in self.linked and item.text.strip():
                    caption = " ".join(item.text.split())
                    self.stream.add(ImageBlock(caption=caption, page=page, bbox=bbox))
        self._flush_inline()

    # -- pages (slides) ----------------------------------------------------------------------

    def _place(self, item: NodeItem) -> tuple[int | None, BBox | None]:
        prov = getattr(item, "prov", None)
        if not self.slides or not prov:
            return (self.slide or None) if self.slides else None, None
        box = prov[0].bbox
        bbox = (box.l, box.t, box.r, box.b)
        return prov[0].page_no, tuple(round(v / EMU_PER_POINT, 2) for v in bbox)

    def _start_slide(self, page: int, item: NodeItem) -> None:
        self.slide = page
        is_title = item.label.value == "title" and item.text.strip()
        title = item.text.strip() if is_title else f"Slide {page}"
        self._add(Heading(title, level=1, page=page), title)

    def pages(self) -> list[Page]:
        if not self.slides:
            return []
        out = []
        for number, page in sorted(self.doc.pages.items()):
            text = "\n".join(self.page_texts.get(number, []))
            width, height = page.size.width / EMU_PER_POINT, page.size.height / EMU_PER_POINT
            out.append(
                Page(
                    number=number,
                    width=round(width, 2),
                    height=round(height, 2),
                    text=text,
                    has_text=bool(text.strip()),
                )
            )
        return out

    def _add(self, block, text: str) -> None:
        self.stream.add(block)
        if self.slides and text and block.page:
            self.page_texts.setdefault(block.page, []).append(text)

    # -- items -------------------------------------------------------------------------------

    def _heading(self, item: NodeItem, page: int | None, bbox: BBox | None) -> None:
        text = " ".join(item.text.split())
        if not text:
            return
        if item.label.value == "title":
            if self.slides:  # a second title on a slide: its text
                self._add(Paragraph(text, page=page), text)
                return
            if not self.titles_are_sections:
                return  # the document title: documents.title, not a section
            level = 1
        else:
            level = item.level + (1 if self.titles_are_sections else 0)
            if self.slides:
                level += 1  # under the slide's own section
        self._add(Heading(item.text, level=level, page=page, bbox=bbox), text)

    def _text(self, item: NodeItem, page: int | None) -> None:
        text = getattr(item, "text", "") or ""
        parent = item.parent.cref if item.parent else ""
        if self._is_inline(parent):
            if self._inline and self._inline[0] != parent:
                self._flush_inline()
            if not self._inline:
                self._inline = (parent, [], page)
            self._inline[1].append(text)
            return
        self._flush_inline()
        if text.strip():
            self._add(Paragraph(text.strip(), page=page), text.strip())

    def _flush_inline(self) -> None:
        if not self._inline:
            return
        _, texts, page = self._inline
        self._inline = None
        text = _join_inline(texts)
        if text:
            self._add(Paragraph(text, page=page), text)

    def _is_inline(self, parent_ref: str) -> bool:
        if not parent_ref.startswith("#/groups/"):
            return False
        group = self.doc.groups[int(parent_ref.rsplit("/", 1)[1])]
        return group.label.value == "inline"

    def _table(self, item: NodeItem, page: int | None, bbox: BBox | None) -> None:
        cells = join_sign_columns(table_cells(item))
        if not cells:
            return
        header_rows, header_cols = header_depths(cells)
        if header_cols is None:
            for cell in cells:  # stray row-header flags must not decide the depth
                cell.is_row_header = False
        caption = " ".join(item.caption_text(self.doc).split()) or None
        block = TableBlock(
            cells,
            page=page,
            bbox=bbox,
            caption=caption,
            header_rows=header_rows,
            header_cols=header_cols,
        )
        rows: dict[int, list[str]] = {}
        for cell in cells:
            rows.setdefault(cell.row, []).append(cell.text)
        self._add(block, "\n".join(" | ".join(t for t in r if t) for r in rows.values()))

    def _table_container(self, item: NodeItem) -> str | None:
        """Where the item sits: 'table' inside a data table, 'prose' inside a layout table of
        running text, None outside tables."""
        parent = item.parent
        if parent is None or parent.cref == "#/body":
            return None
        ref = parent.cref
        if ref not in self._container:
            node = parent.resolve(self.doc)
            if node.label.value == "table":
                self._container[ref] = "prose" if _holds_prose(node) else "table"
            else:
                self._container[ref] = self._table_container(node)
        return self._container[ref]


def _body_items(doc: DoclingDocument) -> Iterator[NodeItem]:
    for item, _ in doc.iterate_items():
        yield item


def table_cells(item: NodeItem) -> list[TableCell]:
    """docling's table cells as index cells (each spanning cell once, text cleaned)."""
    cells: list[TableCell] = []
    seen: set[tuple[int, int]] = set()
    for c in item.data.table_cells:
        key = (c.start_row_offset_idx, c.start_col_offset_idx)
        if key in seen:
            continue
        seen.add(key)
        cells.append(
            TableCell(
                row=c.start_row_offset_idx,
                col=c.start_col_offset_idx,
                row_span=max(c.end_row_offset_idx - c.start_row_offset_idx, 1),
                col_span=max(c.end_col_offset_idx - c.start_col_offset_idx, 1),
                text=clean_cell_text(c.text),
                is_col_header=bool(c.column_header),
                is_row_header=bool(c.row_header),
            )
        )
    return cells


def clean_cell_text(text: str) -> str:
    text = _IMAGE_MARK.sub(" ", text or "")
    text = _MARKDOWN_LINK.sub(r"\1", text)
    return " ".join(text.split())


def _holds_prose(table: NodeItem) -> bool:
    return any(len(c.text.split()) > PROSE_WORDS for c in table.data.table_cells)


def _join_inline(texts: list[str]) -> str:
    out = ""
    for text in texts:
        text = text.strip()
        if not text:
            continue
        joiner = "" if not out or text.startswith(_NO_SPACE_BEFORE) or out.endswith("(") else " "
        out = f"{out}{joiner}{text}"
    return out
