"""Files made to hurt an indexer, written small: the tests and ``bench/hostile_files.py`` build
their folders from these. Each writer makes a real file of its format (a PDF PyMuPDF wrote, an
XLSX openpyxl wrote, a DOCX python-docx wrote), bent in one way."""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import Path

# A file name that is not UTF-8 (the bytes of a Latin-1 name read on a UTF-8 system).
BAD_UTF8_NAME = b"bad\xff\xfeutf8"


def write_control(path: Path, sentence: str) -> str:
    """A small Markdown document holding ``sentence``; returns the sentence (to search for)."""
    path.write_text(f"# {path.stem[:40]}\n\n{sentence}\n")
    return sentence


def huge_page_pdf(path: Path, side: float, text: str = "") -> None:
    """A one-page PDF of ``side`` x ``side`` points, with ``text`` near its top-left corner (or
    none: a blank page, which OCR would read)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=side, height=side)
    if text:
        page.insert_text((72, 72), text, fontsize=11)
    path.write_bytes(doc.tobytes())  # PyMuPDF cannot save to a name that is not UTF-8
    doc.close()


def huge_scan_pdf(path: Path, side: float, text: str) -> None:
    """A one-page PDF of ``side`` x ``side`` points covered by one image of ``text`` (a poster
    scanned as one picture): a page that OCR reads, at the largest render there is."""
    import pymupdf

    source = pymupdf.open()
    source.new_page(width=200, height=200).insert_textbox(
        pymupdf.Rect(10, 10, 190, 190), text, fontsize=14
    )
    image = source[0].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).tobytes("png")
    doc = pymupdf.open()
    doc.new_page(width=side, height=side).insert_image(pymupdf.Rect(0, 0, side, side), stream=image)
    path.write_bytes(doc.tobytes())
    doc.close()
    source.close()


# The pages of costly_pages_pdf, by what makes each costly to draw.
COSTLY_PAGES = {"huge_image": 1, "plain": 2, "nested_groups": 3, "jpeg2000": 4}
HUGE_IMAGE_SIDE = 20_000


def costly_pages_pdf(path: Path) -> None:
    """A PDF of pages costly to draw (``COSTLY_PAGES``), 1.2 MB: a 20,000 x 20,000 px RGB image
    (1.2 GB of pixels, inflated in full whatever the dpi), a plain text page, 30 nested
    transparency groups (a buffer each, of the output's size) and a 3,000 x 3,000 px JPEG 2000
    image (decoded at full size). Each page has a line of text to find it by."""
    import pymupdf
    from PIL import Image

    doc = pymupdf.open()
    image_page = doc.new_page()
    image_page.insert_text((72, 72), "The quokka poster page holds one huge image.", fontsize=11)
    xref = doc.get_new_xref()
    doc.update_object(
        xref,
        f"<< /Type /XObject /Subtype /Image /Width {HUGE_IMAGE_SIDE} /Height "
        f"{HUGE_IMAGE_SIDE} /ColorSpace /DeviceRGB /BitsPerComponent 8 >>",
    )
    rows = 100  # compressed once, repeated: the file stays small and quick to write
    pixels = _flate_repeated(bytes([200]) * (HUGE_IMAGE_SIDE * 3 * rows), HUGE_IMAGE_SIDE // rows)
    doc.update_stream(xref, pixels, new=True, compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    image_page.insert_image(pymupdf.Rect(72, 100, 540, 568), xref=xref)

    doc.new_page().insert_text((72, 72), "The platypus page is plain text.", fontsize=11)

    groups_page = doc.new_page()
    groups_page.insert_text((72, 72), "The echidna page nests transparency groups.", fontsize=11)
    inner = None
    for _ in range(30):
        group = doc.get_new_xref()
        inside = f"/Resources << /XObject << /G {inner} 0 R >> >>" if inner else ""
        doc.update_object(
            group,
            "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Group << /S /Transparency "
            f"/I true /K true >> {inside} >>",
        )
        doc.update_stream(group, b"/G Do" if inner else b"0.2 0.4 0.8 rg 0 0 612 792 re f")
        inner = group
    resources = int(doc.xref_get_key(groups_page.xref, "Resources")[1].split()[0])
    doc.xref_set_key(resources, "XObject", f"<< /Top {inner} 0 R >>")
    drawing = doc.get_new_xref()
    doc.update_object(drawing, "<< >>")
    doc.update_stream(drawing, b"q 0.5 0 0 0.5 100 100 cm /Top Do Q")
    kind, contents = doc.xref_get_key(groups_page.xref, "Contents")
    contents = contents.strip("[]") if kind == "array" else contents
    doc.xref_set_key(groups_page.xref, "Contents", f"[{contents} {drawing} 0 R]")

    jpx_page = doc.new_page()
    jpx_page.insert_text((72, 72), "The wombat page holds a JPEG 2000 image.", fontsize=11)
    jpx = io.BytesIO()
    Image.new("RGB", (3000, 3000), (200, 180, 160)).save(
        jpx, "JPEG2000", irreversible=True, quality_mode="rates", quality_layers=[200]
    )
    jpx_page.insert_image(pymupdf.Rect(72, 100, 540, 568), stream=jpx.getvalue())
    path.write_bytes(doc.tobytes())
    doc.close()


def _flate_repeated(chunk: bytes, times: int) -> bytes:
    """zlib data of ``chunk`` repeated ``times``: after a full flush the compressor starts
    afresh, so every copy compresses to the same bytes, and only the checksum needs them all."""
    compressor = zlib.compressobj(9)
    first = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()[:-4]  # the empty last block, without the checksum
    checksum = 1
    for _ in range(times):
        checksum = zlib.adler32(chunk, checksum)
    return first + again * (times - 1) + end + checksum.to_bytes(4, "big")


def deep_html(path: Path, depth: int) -> None:
    """An HTML page whose text sits inside ``depth`` nested <div>s."""
    body = "<div>" * depth + "deep text" + "</div>" * depth
    path.write_text(f"<html><body><p>A page.</p>{body}</body></html>")


def one_line_markdown(path: Path, megabytes: float) -> None:
    """A Markdown file of one paragraph on one line."""
    words = "lorem ipsum dolor sit amet consectetur "
    size = int(megabytes * 2**20)
    path.write_text("# One line\n\n" + (words * (size // len(words) + 1))[:size] + "\n")


def wide_sheet(path: Path, rows: int, columns: int) -> None:
    """An XLSX workbook with one sheet of ``rows`` x ``columns`` values under a header row."""
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("data")
    sheet.append([f"column {c}" for c in range(columns)])
    for r in range(rows):
        sheet.append([r * columns + c for c in range(columns)])
    workbook.save(path)


def _docx_bytes(text: str) -> bytes:
    from docx import Document

    document = Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _rewrite_member(data: bytes, name: str, change) -> bytes:
    """The zip package ``data`` with member ``name`` replaced by ``change(old bytes)``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for member in src.infolist():
            content = src.read(member)
            if member.filename == name:
                content = change(content)
            dst.writestr(member, content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def billion_laughs_docx(path: Path) -> None:
    """A DOCX whose document.xml declares entities that expand to ~3 GB (ten levels of ten)."""
    entities = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">'
        for n in range(1, 10)
    ]
    doctype = "<!DOCTYPE w:document [" + "".join(entities) + "]>"

    def change(xml: bytes) -> bytes:
        text = xml.decode()
        text = re.sub(r"(<\?xml[^>]*\?>)", r"\1" + doctype, text, count=1)
        return text.replace("laughing", "&lol9;").encode()

    path.write_bytes(_rewrite_member(_docx_bytes("laughing"), "word/document.xml", change))


def zip_bomb_docx(path: Path, unpacked_mb: float) -> None:
    """A DOCX carrying a part of ``unpacked_mb`` MB of zeros (a few kB packed)."""
    data = _docx_bytes("A small document with a large attachment.")
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/padding.bin", bytes(int(unpacked_mb * 2**20)))
    path.write_bytes(out.getvalue())
