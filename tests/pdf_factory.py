"""Small synthetic PDFs made inside the tests, for edge cases the corpus does not cover."""

from __future__ import annotations

from pathlib import Path

import pymupdf

LOREM = (
    "Hybrid retrieval combines sparse and dense signals. The index keeps every view of a "
    "document in a relational schema. Each encodable cell is embedded once. "
)


def text_pdf(path: Path, pages: int = 2, marker: str = "alpha") -> Path:
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 72), f"{number} Section {marker} {number}", fontsize=14)
        page.insert_textbox(
            pymupdf.Rect(72, 100, 520, 700), (LOREM + f"Marker {marker} page {number}. ") * 6
        )
    doc.set_metadata({"title": f"Synthetic {marker}", "author": "Test Author"})
    doc.save(path)
    doc.close()
    return path


def encrypted_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    doc.close()
    return path


def scanned_pdf(path: Path, pages: int = 2) -> Path:
    """Pages that hold only an image: no text layer at all."""
    doc = pymupdf.open()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 100), 0)
    pix.clear_with(200)
    for _ in range(pages):
        doc.new_page().insert_image(pymupdf.Rect(72, 72, 472, 272), pixmap=pix)
    doc.save(path)
    doc.close()
    return path


def zero_page_pdf(path: Path) -> Path:
    path.write_bytes(
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
        b"trailer<</Root 1 0 R>>\n%%EOF\n"
    )
    return path


def truncated_pdf(path: Path, source: Path) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return path


# Lines of a one-column page: (y of the baseline, text). Each sentence sits on known lines.
PLACED_LINES = (
    (100.0, "The pump moves water uphill. It runs on solar power"),
    (114.0, "during the day and stores the surplus in a tank."),
    (160.0, "Maintenance happens every spring."),
)


def placed_text_pdf(path: Path) -> Path:
    """One page whose lines are drawn at PLACED_LINES, in 11-point Helvetica from x = 72."""
    doc = pymupdf.open()
    page = doc.new_page()
    for y, text in PLACED_LINES:
        page.insert_text((72, y), text, fontsize=11)
    doc.save(path)
    doc.close()
    return path


def page_break_pdf(path: Path) -> Path:
    """A sentence that starts at the bottom of page 1 and ends at the top of page 2."""
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_text(
        (72, 100), "Hydrology notes. The gauge records the flow of the river", fontsize=11
    )
    first.insert_text(
        (72, 700), "Every reading of the gauge is stored with the time of day and", fontsize=11
    )
    second = doc.new_page()
    second.insert_text(
        (72, 90), "the height of the water above the weir. Floods are rare.", fontsize=11
    )
    doc.save(path)
    doc.close()
    return path


def numbered_pages_pdf(path: Path, printed: list[str], labels: list[dict] | None = None) -> Path:
    """Pages of text, each with its printed number centred at the foot; optionally PDF page
    labels (``Document.set_page_labels``) as well."""
    doc = pymupdf.open()
    for number, text in enumerate(printed, 1):
        page = doc.new_page()
        page.insert_textbox(
            pymupdf.Rect(72, 90, 520, 400), f"Page body {number}. " + LOREM * 3, fontsize=10
        )
        if text:
            page.insert_text((300, 770), text, fontsize=9)
    if labels:
        doc.set_page_labels(labels)
    doc.save(path)
    doc.close()
    return path


def scan_of(
    source: Path,
    path: Path,
    *,
    dpi: int = 150,
    turn: int = 0,
    skew: float = 0.0,
    pages: list[int] | None = None,
) -> Path:
    """An image-only copy of a born-digital PDF, as a scanner would make it: each page (1-based
    numbers in ``pages``, default all) rendered in gray at ``dpi``, then turned clockwise by
    ``turn`` degrees (a multiple of 90) and by ``skew`` degrees more (a crooked sheet)."""
    import cv2
    import numpy as np

    src = pymupdf.open(source)
    out = pymupdf.open()
    for number in pages or range(1, src.page_count + 1):
        pix = src[number - 1].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
        gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w]
        codes = {
            90: cv2.ROTATE_90_CLOCKWISE,
            180: cv2.ROTATE_180,
            270: cv2.ROTATE_90_COUNTERCLOCKWISE,
        }
        if turn % 360:
            gray = cv2.rotate(gray, codes[turn % 360])
        if skew:
            h, w = gray.shape
            matrix = cv2.getRotationMatrix2D((w / 2, h / 2), -skew, 1.0)
            gray = cv2.warpAffine(gray, matrix, (w, h), borderValue=255)
        png = cv2.imencode(".png", np.ascontiguousarray(gray))[1].tobytes()
        h, w = gray.shape
        page = out.new_page(width=w * 72 / dpi, height=h * 72 / dpi)
        page.insert_image(page.rect, stream=png)
    out.save(path, garbage=3, deflate=True)
    out.close()
    src.close()
    return path


# (x, y, text, bold) of a page of lists: bullets, a dash, numbers and letters, items over two
# lines (hanging indent), a heading line over its text in the same block, and an enumeration
# inside a sentence ("(1) ... and" / "(2) ...") that stays one sentence.
LIST_LINES = (
    (72, 100, "The gauges were checked twice. Each visit recorded three facts:", False),
    (72, 114, "• The height of the water above the weir, read from the", False),
    (84, 128, "staff gauge. It is written down at once.", False),
    (72, 142, "• The colour of the water after rain.", False),
    (72, 156, "– The time of the visit in local hours", False),
    (72, 170, "1. Floods were rare in the dry years", False),
    (72, 184, "2. Droughts followed the planting of the", False),
    (84, 198, "forest on the upper slopes.", False),
    (72, 212, "(a) Runoff fell by forty percent", False),
    (72, 226, "(b) Dry days doubled", False),
    (72, 240, "Gauge Readers", True),
    (72, 254, "Volunteers read the gauges. They were paid by the visit.", False),
    (72, 268, "The survey asked two questions: (1) where each gauge stood and", False),
    (72, 282, "(2) who read it on the day of the flood.", False),
)


def list_pdf(path: Path) -> Path:
    """One page of LIST_LINES in 11-point Helvetica, drawn close enough to be one block (with
    embedded fonts: the simple Helvetica of ``insert_text`` has no bullet or dash)."""
    doc = pymupdf.open()
    page = doc.new_page()
    writer = pymupdf.TextWriter(page.rect)
    fonts = {False: pymupdf.Font("helv"), True: pymupdf.Font("hebo")}
    for x, y, text, bold in LIST_LINES:
        writer.append((x, y), text, font=fonts[bold], fontsize=11)
    writer.write_text(page)
    doc.save(path)
    doc.close()
    return path


# Two pages for the evidence view: one sentence about the lighthouse on each, among others, and
# printed page labels (iii, iv) that differ from the page numbers.
EVIDENCE_PAGES = (
    (
        "The lighthouse keeper writes the tide tables down every morning at dawn.",
        "Gulls nest on the northern cliffs through the whole of the spring.",
        "The harbour wall was rebuilt in granite after the great storm.",
    ),
    (
        "Fishing boats unload their catch on the quay before the market opens.",
        "The lighthouse lamp can be seen from twenty nautical miles away at night.",
        "A ferry crosses to the island twice a day in summer.",
    ),
)


def evidence_pdf(path: Path) -> Path:
    """EVIDENCE_PAGES, one sentence a line (11-point Helvetica, 40 points apart), pages
    labelled iii and iv."""
    doc = pymupdf.open()
    for sentences in EVIDENCE_PAGES:
        page = doc.new_page()
        page.insert_text((72, 72), "Harbour notes", fontsize=14)
        for i, sentence in enumerate(sentences):
            page.insert_text((72, 140 + 40 * i), sentence, fontsize=11)
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 3}])
    doc.save(path)
    doc.close()
    return path
