"""Write OCR lines into a page of the open (in-memory) PDF as invisible text.

The layout reader then sees a scanned page as it sees any PDF page: spans with boxes, sizes and
words, so sections, chunks, tables and sentence positions come out of the same code. The file on
disk is never written.

PyMuPDF writes and reads text in the page's unrotated space and drops what lies outside its
mediabox, whatever the page's /Rotate says. So a page whose OCR frame differs from that space (a
scan read sideways or upside down, or a page the file turns with /Rotate) gets, in memory, no
/Rotate and a mediabox the size of the frame OCR read: its text reads across, inside the page,
and the boxes found on it are mapped back to the page as the file shows it.
"""

from __future__ import annotations

import pymupdf

from docsym.indexer.ocr.engine import PageOcr
from docsym.indexer.pdf.grids import find_grids
from docsym.indexer.pdf.layout import reading_order

FONT = "helv"
# Helvetica has no glyphs beyond Latin-1; Chinese and Japanese text is written in the built-in
# Droid Sans Fallback, which covers them (and Latin).
WIDE_FONT = "china-s"
# Helvetica's glyph box, ascender to descender, in units of the font size.
FONT_HEIGHT = 1.074 + 0.299
DESCENT = 0.299 / FONT_HEIGHT
# An OCR line box is this many font sizes tall (measured against born-digital pages).
BOX_PER_SIZE = 1.09


def write_text_layer(page: pymupdf.Page, ocr: PageOcr, *, replace: bool) -> pymupdf.Matrix | None:
    """Put each line's text over its box, scaled to fill it; ``replace`` first removes the
    page's own text (a poor OCR layer under ``--ocr force``). Returns, for a page turned to
    read it, the matrix from the turned page to the page as its file shows it."""
    if replace:
        _remove_text(page)
    shown = page.rect  # the page as the file shows it, which OCR read (turned by rotation)
    to_shown = turned_to_shown(ocr.rotation, shown.width, shown.height)
    # Text the page already has (a caption over a scan) is kept, and not written twice.
    own = [
        pymupdf.Rect(block[:4]) * page.rotation_matrix * ~to_shown
        for block in page.get_text("blocks")
    ]
    if page.rotation or ocr.rotation:
        frame = pymupdf.Rect(0, 0, shown.width, shown.height) * ~to_shown
        page.set_rotation(0)
        page.set_mediabox(pymupdf.Rect(0, 0, frame.width, frame.height))
    # Written in reading order: the text extractor keeps lines in the order they were
    # written, and joins consecutive lines of a paragraph into one block. A ruled table's
    # lines are written cell by cell, not split into the page's columns.
    blocks = reading_order(
        [{"bbox": line.bbox, "line": line} for line in ocr.lines],
        page.rect.width,
        find_grids(ocr.rules),
    )
    # One shape for all the lines: each committed alone rescans the page's whole content
    # stream (PyMuPDF counts its q/Q balance), which grows with every line.
    shape = page.new_shape()
    for block in blocks:
        line, box = block["line"], pymupdf.Rect(block["bbox"])
        if not any(_mostly_inside(box, other) for other in own):
            _put_line(shape, line.text, box)
    shape.commit()
    _draw_rules(page, ocr.rules)
    return to_shown if ocr.rotation else None


def _draw_rules(page: pymupdf.Page, rules: tuple) -> None:
    """Ruled lines as thin vector lines along their middle, as a born-digital table draws
    them (the page is never shown or saved; the table reader reads its drawings)."""
    if not rules:
        return
    shape = page.new_shape()
    for x0, y0, x1, y1 in rules:
        if x1 - x0 >= y1 - y0:
            middle = (y0 + y1) / 2
            shape.draw_line((x0, middle), (x1, middle))
        else:
            middle = (x0 + x1) / 2
            shape.draw_line((middle, y0), (middle, y1))
    shape.finish(width=0.5, color=(0, 0, 0))
    shape.commit()


def turned_to_shown(rotation: int, width: float, height: float) -> pymupdf.Matrix:
    """The matrix from a page of ``width`` x ``height`` turned clockwise by ``rotation``
    degrees back to the page itself."""
    if rotation == 90:
        return pymupdf.Matrix(0, -1, 1, 0, 0, height)
    if rotation == 180:
        return pymupdf.Matrix(-1, 0, 0, -1, width, height)
    if rotation == 270:
        return pymupdf.Matrix(0, 1, -1, 0, width, 0)
    return pymupdf.Identity


def _mostly_inside(box: pymupdf.Rect, block: pymupdf.Rect) -> bool:
    common = box & block
    return not common.is_empty and common.get_area() > 0.5 * box.get_area()


def _put_line(shape: pymupdf.Shape, text: str, box: pymupdf.Rect) -> None:
    size = box.height / BOX_PER_SIZE
    font = FONT if all(ord(ch) < 256 for ch in text) else WIDE_FONT
    natural = pymupdf.get_text_length(text, fontname=font, fontsize=size)
    if size <= 0 or natural <= 0:
        return
    # The glyph boxes fill the line box: scaled across to its width, down to its height.
    stretch = pymupdf.Matrix(box.width / natural, box.height / (FONT_HEIGHT * size))
    baseline = pymupdf.Point(box.x0, box.y1 - DESCENT * box.height)
    shape.insert_text(
        baseline, text, fontname=font, fontsize=size, render_mode=3, morph=(baseline, stretch)
    )


def _remove_text(page: pymupdf.Page) -> None:
    page.add_redact_annot(page.rect)
    page.apply_redactions(
        images=pymupdf.PDF_REDACT_IMAGE_NONE,
        graphics=pymupdf.PDF_REDACT_LINE_ART_NONE,
        text=pymupdf.PDF_REDACT_TEXT_REMOVE,
    )
