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
