"""Document titles for office files: the file's own title property, else what the body says.

Only the title is taken from the package properties. ``dc:creator`` names whoever saved the file
(a template's author, "ibays"), not the printed authors that ``documents.authors`` holds, and
``dcterms:created`` is often the template's date (the Nestlé 2023 workbook says 2011), so
authors and year are left empty rather than wrong.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from defusedxml import ElementTree

_DC = "{http://purl.org/dc/elements/1.1/}"
# A title that is only a file name ("glxz-10k_20211231.htm") or a generator's default.
_PLACEHOLDER = re.compile(
    r"(^[\w.\- ]+\.(html?|docx?|pptx?|xlsx?|md|pdf)$)|^(untitled|slide \d+|presentation\d*|"
    r"document\d*|book\d*|powerpoint presentation)$",
    re.IGNORECASE,
)


def package_title(path: Path) -> str | None:
    """dc:title from docProps/core.xml of a DOCX/PPTX/XLSX, if set."""
    try:
        with zipfile.ZipFile(path) as archive:
            root = ElementTree.fromstring(archive.read("docProps/core.xml"))
    except (KeyError, OSError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    node = root.find(f"{_DC}title")
    return node.text if node is not None else None


def choose_title(*candidates: str | None) -> str | None:
    """The first candidate that is a real title: non-empty, not a file name or placeholder."""
    for candidate in candidates:
        text = " ".join((candidate or "").split())
        if text and not _PLACEHOLDER.match(text):
            return text
    return None
