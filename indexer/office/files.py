"""Refuse unreadable office files early, with a reason a user can act on.

docling reports a broken file as "could not load document with hash ...", which tells the user
nothing; these checks name the actual problem (empty, truncated, not the format its name says)
before any parser runs. They raise ``indexer.errors.ParseError``, so the pipeline reports the
file and goes on, as it does for bad PDFs.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from docsym.indexer.errors import ParseError

# The part every valid OOXML package of that kind has.
_MAIN_PART = {
    "docx": ("word/document.xml", "Word document"),
    "pptx": ("ppt/presentation.xml", "PowerPoint presentation"),
    "xlsx": ("xl/workbook.xml", "Excel workbook"),
}


def read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read file: {exc.strerror or exc}") from None
    if not data.strip():
        raise ParseError("empty file (0 bytes)" if not data else "empty file (only whitespace)")
    return data


def check_ooxml(path: Path, fmt: str) -> None:
    """A DOCX/PPTX/XLSX is a zip package: check it is complete and holds its main part."""
    data = read_bytes(path)
    part, kind = _MAIN_PART[fmt]
    name = fmt.upper()
    if not zipfile.is_zipfile(path):
        if data.startswith(b"PK"):
            raise ParseError(
                f"truncated or damaged {name}: its zip archive is incomplete (no central "
                "directory); copy the file again"
            )
        if data.startswith(b"\xd0\xcf\x11\xe0"):
            raise ParseError(
                f"not a {name}: this is an old binary Office file (.doc/.ppt/.xls) or an "
                "encrypted one; save it as .docx/.pptx/.xlsx"
            )
        raise ParseError(f"not a {name}: the file is not a zip package")
    try:
        with zipfile.ZipFile(path) as archive:
            if part not in archive.namelist():
                raise ParseError(f"not a {kind}: the package has no {part}")
            broken = archive.testzip()
    except ParseError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ParseError(f"damaged {name}: {exc}") from None
    if broken:
        raise ParseError(f"damaged {name}: member {broken} fails its checksum")
