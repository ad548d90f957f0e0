"""OCR the pages of an open PDF that need it, and give them a text layer.

Pages are rendered here (the document cannot travel to another process), read by the pool, and
written back as invisible text. What the rest of the parse needs to know is returned per page:
its mean confidence, and for a page turned to read it, the matrix back to the page as shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pymupdf

from docsym.indexer.ocr.need import needs_ocr
from docsym.indexer.ocr.pool import OcrPool, PageImage
from docsym.indexer.ocr.text_layer import write_text_layer
from docsym.runtime.settings import OcrMode

# Pages are rendered at their images' own resolution, within these bounds: finer adds nothing
# the models can use and costs detection time; coarser loses small print.
MIN_DPI = 150
MAX_DPI = 300
# With no image to take a resolution from (vector outlines of text), this one.
DEFAULT_DPI = 200
# No side of a rendered page longer than this (posters, engineering drawings).
MAX_SIDE_PIXELS = 5000


@dataclass
class OcrPage:
    confidence: float | None  # mean recognition confidence; None when nothing was read
    to_shown: pymupdf.Matrix | None = None  # turned page -> page as the file shows it


@dataclass
class OcrRun:
    """How one index run reads scans: the pool, the mode, and whom to tell of each page."""

    pool: OcrPool
    mode: OcrMode = "auto"
    on_page: Callable[[int, int], None] | None = None


@dataclass
class OcrOutcome:
    pages: dict[int, OcrPage] = field(default_factory=dict)  # by 1-based page number
    warnings: list[str] = field(default_factory=list)


def ocr_document(doc: pymupdf.Document, run: OcrRun) -> OcrOutcome:
    outcome = OcrOutcome()
    chosen = [page for page in doc if needs_ocr(page, run.mode)]
    if not chosen:
        # The OCR processes (~600 MB each) are kept from one scanned document to the next, and
        # end at the first document that needs none, so they never sit beside a born-digital
        # document's parse.
        run.pool.release()
        return outcome
    images = (_render(page) for page in chosen)  # rendered as the pool takes them
    results = run.pool.read(images, len(chosen), run.on_page)
    for page, result in zip(chosen, results, strict=True):
        if isinstance(result, str):
            outcome.warnings.append(result)
            continue
        to_shown = write_text_layer(page, result, replace=run.mode == "force")
        outcome.pages[page.number + 1] = OcrPage(result.confidence, to_shown)
    return outcome


def _render(page: pymupdf.Page) -> PageImage:
    dpi = _dpi(page)
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w]
    return PageImage(page.number + 1, gray.copy(), page.rect.width / pix.w)


def _dpi(page: pymupdf.Page) -> int:
    native = [
        info["width"] / (rect.width / 72)
        for info in page.get_image_info()
        if (rect := pymupdf.Rect(info["bbox"])).width > 0.2 * page.rect.width
    ]
    dpi = min(max(max(native), MIN_DPI), MAX_DPI) if native else DEFAULT_DPI
    longest = max(page.rect.width, page.rect.height) / 72
    return int(min(dpi, MAX_SIDE_PIXELS / longest))
