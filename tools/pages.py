"""``view_page`` and ``page_image``: a PNG of a page, or of a region of it, straight from the
indexed PDF.

A client that found a table, figure or passage by its bbox can look at the printed original to
check what extraction may have lost (layout, symbols, plots). The document path comes from the
``documents`` row, never from the caller; the file is read once, checked against the SHA-256
recorded at indexing time, and rendered from those same bytes, so what is shown is what was
indexed. Highlights are drawn on the in-memory copy only; the file on disk is never written.
The reading and drawing happen in a worker process under a time and memory limit
(``tools/page_render.py``); this module checks the call and finds the document and the boxes.
``page_image`` is the evidence view's: a whole page, unmarked, with the boxes for the view to draw.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from docsym.runtime.formats import has_page_images
from docsym.storage.file_names import original_path
from docsym.storage.ids import table_row_sql
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.page_render import Rendered, RenderRefused, render
from docsym.tools.results import PAGE_LABEL_HELP, ToolResult, page_citation, page_labels, with_note
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
    _check_page(doc_id, page_number, page_count)
    cited, elsewhere = boxes_of(store, doc_id, page_number, highlight_ids or [])
    marks += [_check_box(box, "a highlighted id's bbox") for box in cited.values()]
    page = _render(store, doc_id, page_number, path, sha256, dpi=dpi, box=wanted, marks=marks)
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


def _check_page(doc_id: str, page_number: int, page_count: int) -> None:
    if isinstance(page_number, bool) or not isinstance(page_number, int):
        raise ToolError(f"page_number must be a whole number (1-based), got {page_number!r}")
    if not 1 <= page_number <= page_count:
        raise ToolError(
            f"page_number {page_number} is out of range: document {doc_id} has pages "
            f"1..{page_count}"
        )


def _render(
    store: Store,
    doc_id: str,
    page_number: int,
    path: Path,
    sha256: str | None,
    *,
    dpi: int,
    box: list[float] | None = None,
    marks: list[list[float]] | None = None,
    unrotated: bool = False,
) -> Rendered:
    """The page (or its ``box``) drawn by a render worker (``tools/render_worker.py``'s
    request), ``marks`` highlighted; refusals say what to do."""
    request = {
        "path": os.fspath(path),
        "sha256": sha256,
        "page": page_number,
        "box": box,
        "dpi": dpi,
        "max_pixels": MAX_PIXELS,
        "marks": marks or [],
        "unrotated": unrotated,
    }
    try:
        return render(request, f"page {page_number} of document {doc_id}")
    except RenderRefused as refused:
        raise ToolError(_refusal(refused, doc_id, page_number, store)) from None


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
) -> tuple[dict[str, list[float]], list[str]]:
    """The box of each cited id on that page (in the order asked), and the ids that are not
    there (or have no box): sentences, cells, table rows, chunks, tables, figures, equations
    and table summaries."""
    if len(ids) > MAX_HIGHLIGHTS:
        raise ToolError(f"at most {MAX_HIGHLIGHTS} highlight_ids per call, got {len(ids)}")
    ids = list(dict.fromkeys(i for i in ids if isinstance(i, str) and i.startswith(f"{doc_id}-")))
    if not ids:
        return {}, []
    rows = store.sql().execute(_BOXES, {"ids": ids}).fetchall()
    found = {key: list(bbox) for key, page, bbox in rows if page == page_number and bbox}
    return {i: found[i] for i in ids if i in found}, [i for i in ids if i not in found]


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
    evidence=True,
)


# page_image: a whole page for a view to draw the cited boxes on (the MCP evidence view).
DEFAULT_WIDTH_PX = 900
MIN_WIDTH_PX = 200
MAX_WIDTH_PX = 2400
LETTER_WIDTH_PT = 612.0  # a page's width when the index does not know it


class PageBox(BaseModel):
    id: str
    bbox: list[float] = Field(description="[x0, y0, x1, y1] PDF points, top-left origin")


class EvidencePage(ToolResult):
    doc_id: str
    page_number: int
    page_label: str | None = Field(default=None, description=PAGE_LABEL_HELP)
    page_count: int
    width_pt: float = Field(description="Page width in PDF points, the space of every bbox.")
    height_pt: float = Field(description="Page height in PDF points.")
    width_px: int
    height_px: int
    boxes: list[PageBox] = Field(
        description="The highlight ids found on this page, each with its bbox, to draw: the "
        "image carries no marks. Scale a bbox by width_px / width_pt."
    )
    # Binary payload: the MCP layer sends it as image content, not inside the JSON.
    png: bytes = Field(exclude=True, repr=False)
    note: str | None = Field(default=None, description="Ids not on this page, or without a box.")

    def to_markdown(self) -> str:
        where = page_citation(self.page_number, self.page_label)
        lines = [
            f"doc {self.doc_id} page {where} of {self.page_count}: {self.width_px}x"
            f"{self.height_px} px of a {self.width_pt:g}x{self.height_pt:g} pt page"
        ]
        lines += [f"- {box.id}: {box.bbox}" for box in self.boxes]
        return with_note("\n".join(lines), self.note)

    def image_png(self) -> bytes | None:
        return self.png


def page_image(
    store: Store,
    doc_id: str,
    page_number: int,
    highlight_ids: list[str] | None = None,
    width_px: int = DEFAULT_WIDTH_PX,
) -> EvidencePage:
    """A whole page, unmarked and upright in the bboxes' own space (a rotated page is drawn
    unrotated), with the boxes of the given ids on it: a view draws them itself, so it can
    select, hover and rescale them without asking for another picture."""
    if isinstance(width_px, bool) or not isinstance(width_px, int):
        raise ToolError(f"width_px must be a whole number, got {width_px!r}")
    if not MIN_WIDTH_PX <= width_px <= MAX_WIDTH_PX:
        raise ToolError(
            f"width_px must be between {MIN_WIDTH_PX} and {MAX_WIDTH_PX}, got {width_px}"
        )
    path, page_count, sha256 = _pdf_of(store, doc_id)
    _check_page(doc_id, page_number, page_count)
    found, elsewhere = boxes_of(store, doc_id, page_number, highlight_ids or [])
    dpi = _dpi_for(store, doc_id, page_number, width_px)
    page = _render(store, doc_id, page_number, path, sha256, dpi=dpi, unrotated=True)
    notes = page.notes
    if elsewhere:
        notes.append(f"not on this page, or without a box: {', '.join(elsewhere)}")
    x0, y0, x1, y1 = page.bbox
    return EvidencePage(
        doc_id=doc_id,
        page_number=page_number,
        page_label=page_labels(store).get((doc_id, page_number)),
        page_count=page_count,
        width_pt=round(x1 - x0, 2),
        height_pt=round(y1 - y0, 2),
        width_px=page.width,
        height_px=page.height,
        boxes=[PageBox(id=key, bbox=bbox) for key, bbox in found.items()],
        png=page.png,
        note="; ".join(notes) or None,
    )


def _dpi_for(store: Store, doc_id: str, page_number: int, width_px: int) -> int:
    """The dpi that draws the page about ``width_px`` wide, within view_page's dpi range (the
    worker lowers it further to stay under MAX_PIXELS)."""
    sql = "SELECT width FROM pages WHERE doc_id = ? AND page_number = ?"
    row = store.sql().execute(sql, [doc_id, page_number]).fetchone()
    width_pt = float(row[0]) if row and row[0] else LETTER_WIDTH_PT
    return min(MAX_DPI, max(MIN_DPI, round(width_px * 72 / width_pt)))


class PageImageArgs(Arguments):
    doc_id: Annotated[str, Field(description="From a hit, a cell or a table.", max_length=64)]
    page_number: PageNumber
    highlight_ids: Annotated[
        list[Annotated[str, Field(max_length=100)]] | None,
        Field(
            description="ids whose boxes to return: a hit's cited ids, sentences, cells, table "
            "rows, chunks, tables, figures",
            max_length=MAX_HIGHLIGHTS,
        ),
    ] = None
    width_px: Annotated[
        int, Field(ge=MIN_WIDTH_PX, le=MAX_WIDTH_PX, description="about how wide to draw it")
    ] = DEFAULT_WIDTH_PX


PAGE_IMAGE = ToolSpec(
    name="page_image",
    summary="a whole page and the boxes of the given ids, for the evidence view to draw.",
    description=(
        "For the evidence view (an MCP App), not the model: a PNG of a whole PDF page, about "
        "width_px wide and unmarked, with the page's size in PDF points and the bbox of each "
        "of highlight_ids found on it, for the view to draw. " + BBOX_HELP
    ),
    arguments=PageImageArgs,
    function=page_image,
    visibility=("app",),
)
