"""``view_page``'s pages are drawn in worker processes, under a time and memory limit.

A page can cost far more than the image it makes: MuPDF inflates every pixel of a 20,000 x
20,000 px image even to draw it 300 px wide (5 s a call here), decodes a JPEG 2000 image at full
size (1 GB for 8,000 x 8,000 px), and cannot be stopped inside a page. Drawn in the server, five
calls on such a page held other searches for 14-28 s and grew it from 276 to 622 MB. So
``tools/render_worker.py`` reads, checks and draws each page in a worker of a
``runtime/process_pool.py`` pool: killed and replaced after ``DOCSYM_RENDER_SECONDS``, its
address space capped at what it maps plus ``DOCSYM_RENDER_MEMORY_MB`` (a page that needs more is
drawn at a lower dpi, else refused), at most ``DOCSYM_RENDER_WORKERS`` at once, and a call
finding them busy is told so after ``DOCSYM_RENDER_WAIT_SECONDS``. The server never holds a
page's pixels, only the PNG it sends.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from docsym.runtime.process_pool import PoolLimits, ProcessPool, WorkerStopped
from docsym.runtime.settings import get_settings
from docsym.tools.errors import ToolError

# A worker holding more than this after a page is replaced (one that has drawn an ordinary page
# holds ~150 MB, MuPDF included).
RECYCLE_MB = 320


@dataclass(frozen=True)
class Rendered:
    bbox: list[float]  # the region drawn, clipped to the page
    width: int
    height: int
    dpi: int
    notes: list[str]  # what was adjusted: a box clipped, a dpi lowered
    png: bytes


class RenderRefused(ToolError):
    """The worker refused the request: ``kind`` is "stale" (the file moved or changed since
    indexing), "box" (the box lies off the page) or None (MuPDF could not draw it)."""

    def __init__(self, message: str, kind: str | None) -> None:
        super().__init__(message)
        self.kind = kind


def render_limits(**overrides: Any) -> PoolLimits:
    """The limits for drawing pages, from the settings' ``render_*`` fields, any replaced."""
    s = get_settings()
    limits = PoolLimits(
        s.render_seconds, s.render_memory_mb, s.render_workers, s.render_wait_seconds
    )
    return replace(limits, **overrides)


class _Workers:
    """The process's render workers, started on the first page and started again when the
    settings' limits change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPool | None = None

    def pool(self) -> ProcessPool:
        limits = render_limits()
        with self._lock:
            if self._pool is None or self._pool.limits != limits:
                if self._pool is not None:
                    self._pool.close()
                self._pool = ProcessPool(
                    "docsym.tools.render_worker",
                    [str(limits.memory_mb)],
                    limits,
                    recycle_mb=RECYCLE_MB,
                )
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


WORKERS = _Workers()


def render(request: dict[str, Any], where: str) -> Rendered:
    """Draw what ``request`` asks (see ``tools/render_worker.py``) in a worker; ``where`` names
    the page in messages. A limit hit raises a ``ToolError`` saying which and what to try."""
    pool = WORKERS.pool()
    try:
        reply = pool.ask(request)
    except WorkerStopped as stop:
        raise ToolError(_stopped(stop, pool.limits, where)) from None
    if "error" in reply:
        if reply["kind"] == "memory":
            raise ToolError(
                f"view_page could not draw {where} within the memory limit "
                f"({pool.limits.memory_mb} MB, DOCSYM_RENDER_MEMORY_MB), {reply['error']}"
                + _advice(reply.get("image"), "", shrink=False)
            )
        raise RenderRefused(reply["error"], reply["kind"])
    return Rendered(
        reply["bbox"],
        reply["width"],
        reply["height"],
        reply["dpi"],
        reply["notes"],
        reply["payload"],
    )


def _stopped(stop: WorkerStopped, limits: PoolLimits, where: str) -> str:
    image = next((n["image"] for n in stop.notes if "image" in n), None)
    if stop.limit == "busy":
        return (
            f"busy: {limits.workers} pages are already being drawn and none finished within "
            f"{limits.wait:g} s; retry in a few seconds"
        )
    if stop.limit == "crash":
        return (
            f"view_page stopped: the process drawing {where} ended without an answer (most "
            f"often the memory limit, {limits.memory_mb} MB, DOCSYM_RENDER_MEMORY_MB)"
            + _advice(image, "", shrink=False)
        )
    return (
        f"view_page stopped at the time limit ({limits.seconds:g} s, DOCSYM_RENDER_SECONDS) "
        f"drawing {where}"
        + _advice(image, ", all of whose pixels are decoded whatever the dpi", shrink=True)
    )


def _advice(image: dict[str, Any] | None, decoded: str, *, shrink: bool) -> str:
    """What made the page costly, when known, and what to try instead: a box covering less of
    an image shortens its decoding (``shrink``), but only leaving it out saves its memory."""
    if image is None:
        return ". Pass a smaller bounding_box or a lower dpi."
    at = f" at {image['bbox']}" if image.get("bbox") else ""
    box = "leaves the image out or covers less of it" if shrink else "leaves the image out"
    return (
        f": it holds a {image['width']:,} x {image['height']:,} px image{at} "
        f"({image['filter'] or 'unfiltered'}){decoded}. Pass a bounding_box that {box}, or read "
        "the page's text instead (run_sql on pages)."
    )
