"""The process that draws ``view_page``'s images: started by ``tools/page_render.py``, one page
at a time, under an address-space cap and killed at the time limit.

MuPDF cannot be stopped inside a page, and what it decodes is not bounded by the output: a
20,000 x 20,000 px image is inflated in full (5 s here) whatever the dpi, and a JPEG 2000 image
is decoded at full size (1 GB for 8,000 x 8,000 px). So the file is read, checked against the
SHA-256 recorded at indexing time and drawn here, never in the server.

Request: ``{"path", "sha256", "page", "box", "dpi", "max_pixels", "marks"}`` (``box`` and the
``marks`` to highlight in PDF points, in the unrotated page space the index uses), and
``"unrotated"`` to draw a rotated page as if it were not (``page_image``). Reply: the
PNG as the payload with ``{"bbox", "width", "height", "dpi", "notes"}``, or ``{"error",
"kind"}`` (``kind``: ``"memory"``, ``"stale"`` for a file moved or changed since indexing,
``"box"`` for a box off the page, or None). Before drawing, the page's largest image, when
large, is sent as a note, so a client whose render was stopped is told what made it costly.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf

from docsym.runtime.bounds import scrub
from docsym.runtime.process_limits import cap_address_space, give_back_free_memory
from docsym.runtime.process_pool import Note, serve
from docsym.storage.file_names import readable

HIGHLIGHT_RGB = (1.0, 0.0, 0.0)
HIGHLIGHT_FILL_OPACITY = 0.25
# An image holding more pixels than this is named to the client if its page cannot be drawn:
# MuPDF decodes all of an image's pixels even to draw it small (a full-page 300-dpi scan has 9M).
LARGE_IMAGE_PIXELS = 16_000_000
# What MuPDF and its decoders say when an allocation fails; MuPDF skips an image it cannot
# decode and draws the rest of the page, so these are looked for in its warnings too.
OUT_OF_MEMORY = ("malloc", "out of memory", "exceeds system limits")
# Each retry after running out of memory halves the dpi, down to this.
MIN_RETRY_DPI = 36


def main() -> None:
    serve(_start)


def _start() -> Callable[[dict[str, Any], Note], dict[str, Any]]:
    memory_mb = int(sys.argv[1])
    pymupdf.TOOLS.mupdf_display_errors(False)  # warnings are read after each page instead
    pymupdf.TOOLS.mupdf_display_warnings(False)
    pymupdf.open().close()  # map MuPDF's context before the cap is measured
    cap_address_space(memory_mb)
    return _answer


def _answer(request: dict[str, Any], note: Note) -> dict[str, Any]:
    try:
        data = _read_verified(Path(request["path"]), request["sha256"])
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            return _render(doc[request["page"] - 1], request, note)
    except _Refused as refused:
        return {"error": str(refused), "kind": refused.kind}
    except MemoryError:
        return {"error": "the file or page did not fit in memory", "kind": "memory"}
    except Exception as exc:  # MuPDF's errors (pymupdf.mupdf.FzError*) share no other base
        text = scrub(str(exc))
        if any(sign in text for sign in OUT_OF_MEMORY):
            return {"error": text, "kind": "memory"}
        return {"error": f"MuPDF could not draw it: {type(exc).__name__}: {text}", "kind": None}
    finally:
        pymupdf.TOOLS.store_shrink(100)  # MuPDF keeps decoded images for the next page
        give_back_free_memory()


class _Refused(Exception):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _read_verified(path: Path, expected: str | None) -> bytes:
    """The file's bytes, refused unless they are the bytes that were indexed."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _Refused(
            f"is no longer readable at {readable(path)} ({exc.strerror or type(exc).__name__}): "
            "it was moved or deleted since indexing",
            "stale",
        ) from None
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise _Refused(
            f"at {readable(path)} changed since it was indexed (its SHA-256 no longer matches)",
            "stale",
        )
    return data


def _render(page: pymupdf.Page, request: dict[str, Any], note: Note) -> dict[str, Any]:
    if request.get("unrotated"):  # page_image: a view draws index bboxes on it as they are
        page.set_rotation(0)
    # Index bboxes are in the unrotated page space (as text extraction reports them);
    # rendering clips in the displayed space, hence the rotation matrix below.
    page_box = page.rect * page.derotation_matrix
    clip = _clip(page_box, request["box"])
    notes: list[str] = []
    if request["box"] is not None and not _same_box(clip, request["box"]):
        notes.append(f"bounding_box clipped to the page ({_fmt(page_box)})")
    dpi = _fit_dpi(clip, request["dpi"], request["max_pixels"])
    if dpi < request["dpi"]:
        notes.append(
            f"dpi lowered from {request['dpi']} to {dpi} to stay within "
            f"{request['max_pixels']:,} pixels; pass a smaller bounding_box to see the region in "
            "more detail"
        )
    image = _largest_image(page, LARGE_IMAGE_PIXELS)
    if image is not None:
        note({"image": image})
    for mark in request["marks"]:
        _draw_highlight(page, pymupdf.Rect(mark))
    drawn = _draw(page, clip, dpi)
    if drawn is None:
        image = _largest_image(page, 0)
        return {"error": f"not even at {MIN_RETRY_DPI} dpi", "kind": "memory", "image": image}
    pixmap, png, used_dpi = drawn
    if used_dpi < dpi:
        notes.append(
            f"dpi lowered from {dpi} to {used_dpi} to stay within the render memory limit "
            "(DOCSYM_RENDER_MEMORY_MB)"
        )
    return {
        "bbox": [round(v, 2) for v in clip],
        "width": pixmap.width,
        "height": pixmap.height,
        "dpi": used_dpi,
        "notes": notes,
        "payload": png,
    }


def _draw(
    page: pymupdf.Page, clip: pymupdf.Rect, dpi: int
) -> tuple[pymupdf.Pixmap, bytes, int] | None:
    """The page drawn at ``dpi`` and its PNG, or at half the dpi, and so on, if it runs out of
    memory; MuPDF leaves out what it cannot decode and goes on, so its warnings say whether it
    did. None if it runs out of memory even at MIN_RETRY_DPI."""
    while True:
        pymupdf.TOOLS.mupdf_warnings(reset=True)
        try:
            pixmap = page.get_pixmap(dpi=dpi, clip=clip * page.rotation_matrix, alpha=False)
            png = pixmap.tobytes("png")
        except Exception as exc:
            said = str(exc) + pymupdf.TOOLS.mupdf_warnings()
            if not any(sign in said for sign in OUT_OF_MEMORY):
                raise
        else:
            warnings = pymupdf.TOOLS.mupdf_warnings()
            if not any(sign in warnings for sign in OUT_OF_MEMORY):
                return pixmap, png, dpi
        pixmap = png = None
        pymupdf.TOOLS.store_shrink(100)
        if dpi <= MIN_RETRY_DPI:
            return None
        dpi = max(MIN_RETRY_DPI, dpi // 2)


def _largest_image(page: pymupdf.Page, more_than: int) -> dict[str, Any] | None:
    """The page's largest image if it holds more than ``more_than`` pixels: its size, how it is
    stored and where it is drawn. Nothing is decoded: the page's resources say whether there is
    one, then a pass over its content without drawing says where (``get_image_rects`` would
    decode every image to match it by its hash)."""
    stored = [i for i in page.get_images(full=True) if i[2] * i[3] > more_than]
    if not stored:
        return None
    _, _, width, height, _, _, _, _, compression, *_ = max(stored, key=lambda i: i[2] * i[3])
    drawn = [i for i in page.get_image_info() if (i["width"], i["height"]) == (width, height)]
    return {
        "width": width,
        "height": height,
        "filter": compression,
        "bbox": [round(v, 1) for v in drawn[0]["bbox"]] if drawn else None,
    }


def _clip(page_rect: pymupdf.Rect, wanted: list[float] | None) -> pymupdf.Rect:
    if wanted is None:
        return pymupdf.Rect(page_rect)
    clipped = pymupdf.Rect(wanted) & page_rect
    if clipped.is_empty:
        raise _Refused(
            f"bounding_box {_fmt(pymupdf.Rect(wanted))} lies outside the page ({_fmt(page_rect)}).",
            "box",
        )
    return clipped


def _fit_dpi(clip: pymupdf.Rect, dpi: int, max_pixels: int) -> int:
    """The largest dpi up to ``dpi`` whose rendering stays under ``max_pixels`` (rounding
    included)."""
    for candidate in range(dpi, 0, -1):
        scale = candidate / 72
        width = math.ceil(clip.width * scale) + 1
        height = math.ceil(clip.height * scale) + 1
        if width * height <= max_pixels:
            return candidate
    return 1


def _draw_highlight(page: pymupdf.Page, rect: pymupdf.Rect) -> None:
    # Drawing takes unrotated page coordinates, the space of the index bboxes.
    page.draw_rect(
        rect,
        color=HIGHLIGHT_RGB,
        fill=HIGHLIGHT_RGB,
        width=1.5,
        fill_opacity=HIGHLIGHT_FILL_OPACITY,
        overlay=True,
    )


def _same_box(rect: pymupdf.Rect, box: list[float]) -> bool:
    # Rect holds single-precision floats, so compare within a hundredth of a point.
    return all(abs(a - float(b)) < 0.01 for a, b in zip(rect, box, strict=True))


def _fmt(rect: pymupdf.Rect) -> str:
    return "[" + ", ".join(f"{v:g}" for v in (round(c, 2) for c in rect)) + "]"


if __name__ == "__main__":
    main()
