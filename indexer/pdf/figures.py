"""Figures: "Figure N:" captions and the graphics they describe.

A caption is a line starting with "Figure N" / "Fig. N" followed by ":" "." or a dash (in-text
mentions like "Figure 2 shows" are not captions). The figure's region is the chain of embedded
images and vector drawings closest to the caption, above it first (the usual place), else
below it; drawings are read only on pages with a caption. A caption with no graphics nearby
(e.g. text-only diagrams) gets the region between it and the text above it in its column.
Embedded images without a caption are kept too (label None) unless they are logos or icons.
"""

from __future__ import annotations

import re

from docsym.indexer.model import BBox, Figure
from docsym.indexer.pdf.layout import DocumentLayout, Line, PageLayout
from docsym.language.hyphens import join_all

_CAPTION = re.compile(
    r"^(fig(?:ure)?\.?)\s*(\d+|[A-Z]\.?\d+|[IVX]+)[a-z]?\s*(?:[:.|—–]|-\s)\s*", re.IGNORECASE
)
# Graphics closer than this (points) to each other or to the caption belong to one figure.
CHAIN_GAP = 24.0
# Images smaller than this on either side are logos, icons or bullets.
MIN_IMAGE_SIDE = 40.0
CAPTION_MAX_LINES = 15
_GRAPHIC_KINDS = frozenset({"fill-path", "stroke-path", "fill-shade", "fill-image"})


def extract_figures(layout: DocumentLayout) -> list[Figure]:
    figures: list[Figure] = []
    seen_labels: set[str] = set()
    for page in layout.pages:
        captions = _captions(page, seen_labels)
        graphics = _graphics(page, bool(captions))
        taken: list[BBox] = []
        for caption_lines, label in captions:
            box = _figure_box(page, caption_lines, graphics, taken)
            taken.append(box)
            figures.append(_figure(layout, page, box, label, caption_lines, len(figures)))
        for image in page.image_boxes:
            if _is_meaningful_image(image, page) and not any(_inside(image, t) for t in taken):
                taken.append(image)
                figures.append(_figure(layout, page, image, None, [], len(figures)))
    return figures


def _figure(
    layout: DocumentLayout,
    page: PageLayout,
    box: BBox,
    label: str | None,
    caption_lines: list[Line],
    ordinal: int,
) -> Figure:
    caption = join_all((line.text for line in caption_lines), layout.printed) or None
    return Figure(
        ordinal=ordinal,
        page_number=page.number,
        bbox=box,
        label=label,
        caption=caption,
        seq=caption_lines[0].seq if caption_lines else layout.seq_at(page.number, box),
    )


def _captions(page: PageLayout, seen_labels: set[str]) -> list[tuple[list[Line], str]]:
    lines = [line for line in page.lines if not line.furniture]
    captions: list[tuple[list[Line], str]] = []
    for index, line in enumerate(lines):
        match = _CAPTION.match(line.text)
        if not match or not _starts_block(lines, index):
            continue
        word = "Fig." if match.group(1).lower().startswith("fig.") else "Figure"
        if match.group(1).lower() == "fig":
            word = "Fig."
        label = f"{word} {match.group(2)}"
        if label.lower() in seen_labels:
            continue  # a figure's caption appears once; later hits are in-text mentions
        seen_labels.add(label.lower())
        captions.append((_caption_lines(lines, index), label))
    return captions


def _starts_block(lines: list[Line], index: int) -> bool:
    """Captions open their own block; in-text mentions sit inside a paragraph."""
    if index == 0:
        return True
    previous, line = lines[index - 1], lines[index]
    if previous.block != line.block or previous.page != line.page:
        return True
    return line.bbox[1] - previous.bbox[3] > 0.6 * line.size


def _caption_lines(lines: list[Line], index: int) -> list[Line]:
    first = lines[index]
    out = [first]
    for line in lines[index + 1 : index + CAPTION_MAX_LINES]:
        last = out[-1]
        gap = line.bbox[1] - last.bbox[3]
        same_column = min(line.bbox[2], first.bbox[2]) - max(line.bbox[0], first.bbox[0]) > 0
        if _CAPTION.match(line.text) or not same_column or abs(line.size - first.size) > 0.6:
            break
        if line.block != last.block and gap > 0.4 * line.size:
            break
        if not -0.5 * line.size < gap < 0.8 * line.size:
            break
        out.append(line)
    return out


def _graphics(page: PageLayout, has_caption: bool) -> list[BBox]:
    """Images and, on pages with a caption, vector paths.

    ``get_bboxlog`` gives the box of every path painted on the page without building the path
    objects that ``get_drawings`` returns, which is several times faster on plot-heavy pages.
    """
    boxes = [box for box in page.image_boxes if _area(box) > 4.0]
    if not has_caption:
        return boxes
    page_area = page.width * page.height
    for kind, rect in page.page.get_bboxlog():
        if kind not in _GRAPHIC_KINDS:
            continue
        box = (rect[0], rect[1], rect[2], rect[3])
        if box[2] - box[0] + box[3] - box[1] < 1 or _area(box) > 0.8 * page_area:
            continue  # empty paths, and page backgrounds or frames
        boxes.append(box)
    return boxes


def _figure_box(
    page: PageLayout, caption: list[Line], graphics: list[BBox], taken: list[BBox]
) -> BBox:
    cap = _union([line.bbox for line in caption])
    x0, x1 = _column_span(page, cap)
    candidates = [
        box
        for box in graphics
        if min(box[2], x1) - max(box[0], x0) > 0 and not any(_inside(box, t) for t in taken)
    ]
    above = _chain(cap, [b for b in candidates if b[3] <= cap[1] + 2], upward=True)
    if above:
        return _clip(_union(above), page)
    below = _chain(cap, [b for b in candidates if b[1] >= cap[3] - 2], upward=False)
    if below:
        return _clip(_union(below), page)
    return _region_above(page, cap, x0, x1)


def _column_span(page: PageLayout, cap: BBox) -> tuple[float, float]:
    """The horizontal extent a figure may occupy: the caption's column, or the full width."""
    middle = page.width / 2
    if cap[2] <= middle + 10:
        return 0.0, middle
    if cap[0] >= middle - 10:
        return middle, page.width
    return 0.0, page.width


def _chain(cap: BBox, boxes: list[BBox], upward: bool) -> list[BBox]:
    """Boxes linked to the caption through gaps of at most CHAIN_GAP, walking away from it."""
    edge = cap[1] if upward else cap[3]
    picked: list[BBox] = []
    remaining = sorted(boxes, key=lambda b: -b[3] if upward else b[1])
    changed = True
    while changed:
        changed = False
        for box in list(remaining):
            gap = edge - box[3] if upward else box[1] - edge
            overlapping = any(_vertical_overlap(box, p) > 0 for p in picked)
            if gap <= CHAIN_GAP or overlapping:
                picked.append(box)
                remaining.remove(box)
                edge = min(edge, box[1]) if upward else max(edge, box[3])
                changed = True
    # A chain of hairlines only (table rules, underlines) is not a figure.
    if (
        picked
        and max(b[3] - b[1] for b in picked) < 8
        and _union(picked)[3] - _union(picked)[1] < 8
    ):
        return []
    return picked


def _region_above(page: PageLayout, cap: BBox, x0: float, x1: float) -> BBox:
    """Between the caption and the nearest text line above it in its column (vector figure)."""
    ceiling = page.height * 0.06
    for line in page.lines:
        if line.furniture or min(line.bbox[2], x1) - max(line.bbox[0], x0) <= 0:
            continue
        if line.bbox[3] <= cap[1] - 2 and len(line.text.split()) >= 6:
            ceiling = max(ceiling, line.bbox[3])
    return (max(x0, cap[0] - 5), ceiling, min(x1, cap[2] + 5), cap[1])


def _is_meaningful_image(box: BBox, page: PageLayout) -> bool:
    width, height = box[2] - box[0], box[3] - box[1]
    if width < MIN_IMAGE_SIDE or height < MIN_IMAGE_SIDE:
        return False
    return width * height < 0.9 * page.width * page.height  # not a scanned page background


def _clip(box: BBox, page: PageLayout) -> BBox:
    return (max(box[0], 0.0), max(box[1], 0.0), min(box[2], page.width), min(box[3], page.height))


def _inside(box: BBox, outer: BBox) -> bool:
    return (
        box[0] >= outer[0] - 2
        and box[1] >= outer[1] - 2
        and box[2] <= outer[2] + 2
        and box[3] <= outer[3] + 2
    )


def _vertical_overlap(a: BBox, b: BBox) -> float:
    return min(a[3], b[3]) - max(a[1], b[1])


def _area(box: BBox) -> float:
    return max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)


def _union(boxes: list[BBox]) -> BBox:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
