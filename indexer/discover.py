"""Find the files to index under the paths a user gives."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

SUPPORTED_SUFFIXES = {
    ".pdf": "pdf",
    # Office formats (indexer/office): parsed by docling, XLSX by openpyxl.
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".md": "md",
    ".markdown": "md",
}


def discover(paths: Iterable[Path]) -> list[Path]:
    """Supported files under ``paths`` (recursively), sorted, hidden folders skipped.

    A file named explicitly is taken whatever its suffix says, so that a bad file gets a clear
    error instead of being silently ignored.
    """
    found: set[Path] = set()
    for path in paths:
        path = path.expanduser().resolve()
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            for candidate in path.rglob("*"):
                relative = candidate.relative_to(path).parts
                if any(part.startswith(".") for part in relative):
                    continue
                if candidate.suffix.lower() in SUPPORTED_SUFFIXES and candidate.is_file():
                    found.add(candidate)
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    return sorted(found)


def file_format(path: Path) -> str | None:
    return SUPPORTED_SUFFIXES.get(path.suffix.lower())


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def doc_id_for(sha256: str) -> str:
    """Stable id from content: the same bytes always get the same id, wherever they live."""
    return sha256[:16]
