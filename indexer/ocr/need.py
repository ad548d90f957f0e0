"""Which pages need OCR: no text layer, or one that covers little of what the page shows.

A page rendered small shows where its ink is; the text layer says where its text is. Ink on an
image that no text covers is an image of text (a scan, perhaps under a thin caption or stamp
layer) or a photograph; either way OCR is how to find out, and it keeps only confident lines.
"""

from __future__ import annotations

import numpy as np
import pymupdf

from docsym.runtime.settings import OcrMode

# Rendered this coarse, a page is measured in a few milliseconds.
PROBE_DPI = 24
# A pixel this dark is ink.
INK_LEVEL = 160
# OCR when at least this share of the page's ink lies on images outside any text ...
UNREAD_INK_SHARE = 0.5
# ... and images cover at least this share of the page: a scan, not a chart in a report.
SCAN_AREA_SHARE = 0.5
# Pages with less ink than this share of their area are blank; for this test any mark darker
# than BLANK_LEVEL counts (at PROBE_DPI, a few short lines of text average out to light grey).
BLANK_SHARE = 0.002
BLANK_LEVEL = 200


def needs_ocr(page: pymupdf.Page, mode: OcrMode) -> bool:
    """``off``: never; ``force``: always (its text layer is replaced); ``auto``: where images
    cover most of the page and hold most of its ink with no text layer over them."""
    if mode != "auto":
        return mode == "force"
    if not page.get_images():
        return False  # no image at all (most born-digital pages): a lookup, no content parse
    images = [pymupdf.Rect(info["bbox"]) & page.rect for info in page.get_image_info()]
    covered = sum(r.width * r.height for r in images if not r.is_empty)
    if covered < SCAN_AREA_SHARE * page.rect.width * page.rect.height:
        return False
    return _unread_ink_share(page, images) >= UNREAD_INK_SHARE


def _unread_ink_share(page: pymupdf.Page, images: list[pymupdf.Rect]) -> float:
    pix = page.get_pixmap(dpi=PROBE_DPI, colorspace=pymupdf.csGRAY, alpha=False)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w)
    if int((gray < BLANK_LEVEL).sum()) < BLANK_SHARE * gray.size:
        return 0.0
    ink = gray < INK_LEVEL
    total = max(int(ink.sum()), 1)
    scale = pix.w / page.rect.width
    on_images = np.zeros_like(ink)
    for rect in images:
        on_images[_pixels(rect, scale, ink.shape)] = True
    for x0, y0, x1, y1, *_ in page.get_text("blocks"):
        on_images[_pixels(pymupdf.Rect(x0, y0, x1, y1), scale, ink.shape)] = False
    return float((ink & on_images).sum()) / total


def _pixels(rect: pymupdf.Rect, scale: float, shape: tuple[int, int]) -> tuple[slice, slice]:
    y0, y1 = max(int(rect.y0 * scale), 0), min(int(np.ceil(rect.y1 * scale)), shape[0])
    x0, x1 = max(int(rect.x0 * scale), 0), min(int(np.ceil(rect.x1 * scale)), shape[1])
    return slice(y0, y1), slice(x0, x1)
