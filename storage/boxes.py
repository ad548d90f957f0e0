"""Bounding boxes as the index stores them: [x0, y0, x1, y1] in PDF points, origin top-left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Box = tuple[float, float, float, float]


def union(boxes: Iterable[Sequence[float] | None]) -> Box | None:
    """The smallest box holding every given box (missing ones skipped); None without any."""
    present = [b for b in boxes if b]
    if not present:
        return None
    return (
        min(b[0] for b in present),
        min(b[1] for b in present),
        max(b[2] for b in present),
        max(b[3] for b in present),
    )
