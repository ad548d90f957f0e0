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
