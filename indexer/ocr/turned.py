"""Boxes found on a page turned to read it, mapped back to the page as its file shows it."""

from __future__ import annotations

import pymupdf

from docsym.indexer.model import BBox, ParsedDocument


def map_turned_boxes(parsed: ParsedDocument, turned: dict[int, pymupdf.Matrix]) -> None:
    """Rewrite, in place, every box on the pages in ``turned`` (page number -> matrix)."""

    def on(page: int | None, box: BBox | None) -> BBox | None:
        if box is None or page not in turned:
            return box
        rect = pymupdf.Rect(box) * turned[page]
        return (rect.x0, rect.y0, rect.x1, rect.y1)

    for section in parsed.sections:
        section.bbox = on(section.page_start, section.bbox)
    for table in parsed.tables:
        table.bbox = on(table.page_number, table.bbox)
        for cell in table.cells:
            cell.bbox = on(table.page_number, cell.bbox)
    for item in [*parsed.figures, *parsed.equations, *parsed.chunks, *parsed.sentences]:
        item.bbox = on(item.page_number, item.bbox)
