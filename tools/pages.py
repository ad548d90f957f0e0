"""``view_page``: a PNG of a page, or of a region of it, straight from the indexed PDF.

A client that found a table, figure or passage by its bbox can look at the printed original to
check what extraction may have lost (layout, symbols, plots). The document path comes from the
``documents`` row, never from the caller; the file is read once, checked against the SHA-256
recorded at indexing time, and rendered from those same bytes, so what is shown is what was
indexed. Highlights are drawn on the in-memory copy only; the file on disk is never written.
The reading and drawing happen in a worker process under a time and memory limit
(``tools/page_render.py``); this module checks the call and finds the document and the boxes.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from docsym.runtime.formats import has_page_images
from docsym.storage.file_names import original_path
from docsym.storage.ids import table_row_sql
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.page_render import RenderRefused, render
from docsym.tools.results import ToolResult
from docsym.tools.spec import Arguments, Box, PageNumber, ToolSpec

BBOX_HELP = (
    "Bounding boxes are [x0, y0, x1, y1] in PDF points (1/72 inch) with the origin at the "
    "top-left corner of the page and y growing downwards: the same convention as every bbox "
    "column in the index (tables.bbox, images.bbox, table_cells.bbox, ...). On rotated pages "
    "they are in the unrotated page space, as text extraction reports them."
)

MIN_DPI = 36
MAX_DPI = 300
MAX_PIXELS = 4_000_000
MAX_HIGHLIGHTS = 50


class PageImage(ToolResult):
    doc_id: str
    page_number: int
    bbox: list[float] = Field(description="Region rendered, clipped to the page. " + BBOX_HELP)
    width_px: int
    height_px: int
    dpi: int
    # Binary payload: the MCP layer sends it as image content, not inside the JSON.
    png: bytes = Field(exclude=True, repr=False)
    note: str | None = Field(default=None, description="What was adjusted, e.g. a lowered dpi.")

    def to_markdown(self) -> str:
        summary = (
            f"doc {self.doc_id} page {self.page_number}, region {self.bbox}, "
            f"{self.width_px}x{self.height_px} px at {self.dpi} dpi"
        )
        return summary + (f". {self.note}" if self.note else "")

    def image_png(self) -> bytes | None:
        return self.png


def view_page(
    store: Store,
    doc_id: str,
    page_number: int,
    bounding_box: list[float] | None = None,
    dpi: int = 110,
    highlights: list[list[float]] | None = None,
    highlight_ids: list[str] | None = None,
) -> PageImage:
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not MIN_DPI <= dpi <= MAX_DPI:
        raise ToolError(f"dpi must be a whole number between {MIN_DPI} and {MAX_DPI}, got {dpi!r}")
    wanted = None if bounding_box is None else _check_box(bounding_box, "bounding_box")
    marks = _check_highlights(highlights or [])
    path, page_count, sha256 = _pdf_of(store, doc_id)
    if isinstance(page_number, bool) or not isinstance(page_number, int):
        raise ToolError(f"page_number must be a whole number (1-based), got {page_number!r}")
    if not 1 <= page_number <= page_count:
        raise ToolError(
            f"page_number {page_number} is out of range: document {doc_id} has pages "
            f"1..{page_count}"
        )
    cited, elsewhere = boxes_of(store, doc_id, page_number, highlight_ids or [])
    marks += [_check_box(box, "a highlighted id's bbox") for box in cited]
    request = {
        "path": os.fspath(path),
        "sha256": sha256,
        "page": page_number,
        "box": wanted,
        "dpi": dpi,
        "max_pixels": MAX_PIXELS,
        "marks": marks,
    }
    try:
        page = render(request, f"page {page_number} of document {doc_id}")
    except RenderRefused as refused:
        raise ToolError(_refusal(refused, doc_id, page_number, store)) from None
    notes = page.notes
    if elsewhere:
        notes.append(f"not highlighted (not on this page, or no box): {', '.join(elsewhere)}")
    return PageImage(
        doc_id=doc_id,
        page_number=page_number,
        bbox=page.bbox,
        width_px=page.width,
        height_px=page.height,
        dpi=page.dpi,
        png=page.png,
        note="; ".join(notes) or None,
    )


def _refusal(refused: RenderRefused, doc_id: str, page_number: int, store: Store) -> str:
    if refused.kind == "stale":
        return (
            f"the file of document {doc_id} {refused}; re-run docsym index on its folder to "
            f"index the current version (index: {store.location})"
        )
    if refused.kind == "box":
        return f"{refused} {BBOX_HELP}"
    return f"page {page_number} of document {doc_id}: {refused}"


# Rows with an id and a box on a page; a table row (storage/ids.py's table_row_id) is all its
# cells.
_BOXES = """
    SELECT sentence_id, page_number, bbox FROM sentences WHERE sentence_id = ANY($ids)
    UNION ALL SELECT cell_id, page_number, bbox FROM table_cells WHERE cell_id = ANY($ids)
    UNION ALL SELECT chunk_id, page_number, bbox FROM chunks WHERE chunk_id = ANY($ids)
    UNION ALL SELECT table_id, page_number, bbox FROM tables WHERE table_id = ANY($ids)
    UNION ALL SELECT image_id, page_number, bbox FROM images WHERE image_id = ANY($ids)
    UNION ALL SELECT equation_id, page_number, bbox FROM equations
        WHERE equation_id = ANY($ids)
    UNION ALL SELECT summary_id, page_number, bbox FROM table_summaries
        WHERE summary_id = ANY($ids)
    UNION ALL SELECT {row_id}, any_value(page_number),
        ARRAY[min(bbox[1]), min(bbox[2]), max(bbox[3]), max(bbox[4])]
        FROM table_cells WHERE {row_id} = ANY($ids) GROUP BY table_id, row
""".format(row_id=table_row_sql("table_id", "row"))


def boxes_of(
    store: Store, doc_id: str, page_number: int, ids: list[str]
) -> tuple[list[list[float]], list[str]]:
    """The boxes of the cited ids on that page, and the ids that are not there (or have no box):
    sentences, cells, table rows, chunks, tables, figures, equations and table summaries."""
    if len(ids) > MAX_HIGHLIGHTS:
        raise ToolError(f"at most {MAX_HIGHLIGHTS} highlight_ids per call, got {len(ids)}")
    ids = [i for i in ids if isinstance(i, str) and i.startswith(f"{doc_id}-")]
    if not ids:
        return [], []
    rows = store.sql().execute(_BOXES, {"ids": ids}).fetchall()
    found = {key: bbox for key, page, bbox in rows if page == page_number and bbox}
    return list(found.values()), [i for i in ids if i not in found]


def _pdf_of(store: Store, doc_id: str) -> tuple[Path, int, str | None]:
    """Indexed path, page count and SHA-256 of a PDF document; refusals say what to call instead."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise ToolError("doc_id is empty: give a doc_id from list_documents")
    sql = "SELECT path, path_bytes, format, page_count, sha256 FROM documents WHERE doc_id = ?"
    row = store.sql().execute(sql, [doc_id]).fetchone()
    if row is None:
        raise NotFoundError(
            f"no document with doc_id {doc_id!r}; call list_documents to see the indexed ids"
        )
    path, path_bytes, format_name, page_count, sha256 = row
    if not has_page_images(format_name):
        raise ToolError(
            f"document {doc_id} is a {format_name} file, which has no page images: only PDFs "
            "are rendered. Read its content instead: select_subtree (a section's text, tables "
            "and images), get_table for a table, or run_sql over chunks, sections and "
            f"table_cells WHERE doc_id = '{doc_id}'"
        )
    return original_path(path, path_bytes), int(page_count or 0), sha256


def _check_box(box: object, what: str) -> list[float]:
    if not isinstance(box, list | tuple) or len(box) != 4:
        raise ToolError(f"{what} must be 4 numbers [x0, y0, x1, y1], got {box!r}. {BBOX_HELP}")
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ToolError(f"{what} must hold numbers only, got {box!r}. {BBOX_HELP}") from None
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        raise ToolError(f"{what} must hold finite numbers, got {box!r}")
    if not (x0 < x1 and y0 < y1):
        raise ToolError(f"{what} needs x0 < x1 and y0 < y1, got {box!r}. {BBOX_HELP}")
    return [x0, y0, x1, y1]


def _check_highlights(highlights: list[list[float]]) -> list[list[float]]:
    if len(highlights) > MAX_HIGHLIGHTS:
        raise ToolError(f"at most {MAX_HIGHLIGHTS} highlights per call, got {len(highlights)}")
    return [_check_box(box, f"highlights[{i}]") for i, box in enumerate(highlights)]


class ViewPageArgs(Arguments):
    doc_id: Annotated[str, Field(description="From list_documents.", max_length=64)]
    page_number: PageNumber
    bounding_box: Annotated[Box | None, Field(description="[x0, y0, x1, y1] in PDF points")] = None
    dpi: Annotated[int, Field(ge=MIN_DPI, le=MAX_DPI)] = 110
    highlights: Annotated[
        list[Box] | None, Field(description="boxes to draw", max_length=MAX_HIGHLIGHTS)
    ] = None
    highlight_ids: Annotated[
        list[Annotated[str, Field(max_length=100)]] | None,
        Field(
            description="ids whose boxes to draw: a hit's cited ids (sentences or rows), cell ids, "
            "table rows ('<table_id>-r<row>'), chunks, tables, figures",
            max_length=MAX_HIGHLIGHTS,
        ),
    ] = None


VIEW_PAGE = ToolSpec(
    name="view_page",
    summary="a PNG of a page or region, cited boxes drawn on it.",
    description=(
        "A PNG of a PDF page, or of a region of it, to read a figure, table or equation as "
        "printed. " + BBOX_HELP + " Pass the bbox of a search hit, table or figure as "
        "bounding_box to crop; mark what you cite with highlight_ids (a hit's cited ids, "
        "cell ids) or highlights (boxes). dpi 36-300; images are capped at 4 megapixels "
        "(dpi is lowered to fit, and the note says so). A page too costly to draw within the "
        "server's time or memory limit is refused, saying what to try instead."
    ),
    arguments=ViewPageArgs,
    function=view_page,
)
