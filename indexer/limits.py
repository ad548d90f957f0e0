"""Input limits, checked before a file is parsed: what a parser would choke on is refused by name.

The worker's time and memory budget (``indexer/workers.py``) stops any file that runs away; these
checks refuse most such files in milliseconds, with a reason that names the limit, the file's
measure and the setting that raises it:

- size, per format (for DOCX, PPTX and XLSX the *unpacked* size of the package, so a zip bomb
  is refused before anything inflates it);
- XML that declares a DTD: Office files never do, and a DTD's entities are how a few kilobytes
  expand to gigabytes ("billion laughs");
- nesting depth of HTML and Office XML: docling walks its tree recursively and fails past ~800
  levels, after minutes;
- cells per XLSX sheet: reading a sheet's tables takes time that grows faster than its cells;
- page size of a PDF: 14,400 points (200 inches) is the format's own maximum.

The defaults admit every file of the test corpus with a wide margin; ``docs/ARCHITECTURE.md``
lists the largest each has to admit.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

from docsym.indexer.errors import ParseError
from docsym.runtime.formats import FileFormat

MB = 2**20
READ_BYTES = 1 << 20


class LimitError(ParseError):
    """A file passes an input limit; the message names it and the setting that raises it."""


@dataclass(frozen=True)
class FileLimits:
    file_mb: dict[str, float]  # per format; unpacked contents for DOCX, PPTX, XLSX
    sheet_cells: int
    nesting: int
    page_points: float

    @classmethod
    def from_settings(cls) -> FileLimits:
        from docsym.runtime.settings import get_settings

        s = get_settings()
        return cls(dict(s.max_file_mb), s.max_sheet_cells, s.max_nesting, s.max_page_points)


def check_file(path: Path, fmt: FileFormat, limits: FileLimits) -> None:
    """Raise ``LimitError`` if the file at ``path`` (of format ``fmt``) passes a limit."""
    if fmt.packaged:
        _check_package(path, fmt.name, limits)
        return
    _check_size(path.stat().st_size, fmt.name, limits, "")
    check = _CONTENT_CHECKS.get(fmt.name)
    if check is not None:
        check(path, limits)


def _check_page_sizes(path: Path, limit: float) -> None:
    """A page larger than the limit makes every render of it (layout probe, OCR) huge."""
    from docsym.indexer.pdf.parser import pdf_document

    try:
        doc = pdf_document(path)
    except Exception:
        return  # the parser says what is wrong with the file
    with doc:
        for number in range(doc.page_count):
            try:
                box = doc.page_cropbox(number)
            except Exception:
                continue
            if max(box.width, box.height) > limit:
                raise LimitError(
                    f"page {number + 1} measures {box.width:,.0f} x {box.height:,.0f} pt, over "
                    f"the limit of {limit:,.0f} pt a side (PDF's own maximum is 14,400 pt): "
                    "DOCSYM_MAX_PAGE_POINTS raises it"
                )


def _check_size(size: int, fmt: str, limits: FileLimits, what: str) -> None:
    limit = limits.file_mb.get(fmt)
    if limit is not None and size > limit * MB:
        raise LimitError(
            f"{size / MB:,.1f} MB{what}, over the limit of {limit:,g} MB for {fmt} files: "
            f"DOCSYM_MAX_FILE_MB='{{\"{fmt}\": {_more(size)}}}' raises it"
        )


def _more(size: int) -> int:
    """A round limit above ``size`` bytes, for the message's example."""
    mb = size / MB
    step = 10 ** max(0, len(str(int(mb))) - 1)
    return int((mb // step + 1) * step)


# -- Office packages -------------------------------------------------------------------------


def _check_package(path: Path, fmt: str, limits: FileLimits) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return  # not a readable zip: the format's own check says what is wrong with it
    with archive:
        members = archive.infolist()
        _check_size(sum(m.file_size for m in members), fmt, limits, " unpacked")
        for member in members:
            if member.filename.endswith((".xml", ".rels")):
                _check_xml(archive, member, fmt, limits)


def _check_xml(archive: zipfile.ZipFile, member: zipfile.ZipInfo, fmt: str, limits: FileLimits):
    """Stream one XML part through expat: no DTD, no deeper than the limit, and for a sheet no
    more cells than the limit. Stops at the first problem."""
    scan = _XmlScan(member.filename, limits, count_cells=_is_sheet(fmt, member.filename))
    read = 0
    try:
        with archive.open(member) as stream:
            while block := stream.read(READ_BYTES):
                read += len(block)
                if read > member.file_size:  # the header lied about its size
                    raise LimitError(
                        f"damaged {fmt.upper()}: part {member.filename} inflates past the "
                        f"{member.file_size:,} bytes it declares"
                    )
                scan.parser.Parse(block, False)
            scan.parser.Parse(b"", True)
    except expat.ExpatError:
        return  # malformed XML: the parser reports it in its own words
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return  # a damaged member: the format's own check reports it


def _is_sheet(fmt: str, name: str) -> bool:
    return fmt == "xlsx" and name.startswith("xl/worksheets/") and name.count("/") == 2


class _XmlScan:
    def __init__(self, part: str, limits: FileLimits, count_cells: bool) -> None:
        self.part = part
        self.limits = limits
        self.depth = 0
        self.cells = 0
        self.parser = expat.ParserCreate()
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._doctype
        self.parser.StartElementHandler = self._cell_start if count_cells else self._start
        self.parser.EndElementHandler = self._end

    def _doctype(self, *_args) -> None:
        raise LimitError(
            f"part {self.part} declares a DTD (<!DOCTYPE>), which Office files never do: its "
            "entities could expand a few kilobytes into gigabytes, so the file is refused"
        )

    def _start(self, _name: str, _attrs: dict) -> None:
        self.depth += 1
        if self.depth > self.limits.nesting:
            raise LimitError(_too_deep(f"part {self.part}", self.limits.nesting))

    def _cell_start(self, name: str, attrs: dict) -> None:
        self._start(name, attrs)
        if name == "c":
            self.cells += 1
            if self.cells > self.limits.sheet_cells:
                sheet = self.part.rsplit("/", 1)[-1].removesuffix(".xml")
                raise LimitError(
                    f"{sheet} stores more than {self.limits.sheet_cells:,} cells, the limit "
                    "for one sheet: DOCSYM_MAX_SHEET_CELLS raises it (reading a sheet's tables "
                    "takes time that grows faster than its cells)"
                )

    def _end(self, _name: str) -> None:
        self.depth -= 1


def _too_deep(what: str, limit: int) -> str:
    return (
        f"{what} nests elements more than {limit} levels deep, the limit: "
        "DOCSYM_MAX_NESTING raises it (docling reads a tree recursively and fails past ~800 "
        "levels)"
    )


# -- HTML ------------------------------------------------------------------------------------


def _check_html_depth(path: Path, limit: int) -> None:
    """libxml2's HTML parser, in C: a fast reading of how deep the elements go."""
    from lxml import etree

    depth = 0
    try:
        with path.open("rb") as stream:
            for event, element in etree.iterparse(
                stream, events=("start", "end"), html=True, recover=True, no_network=True
            ):
                if event == "start":
                    depth += 1
                    if depth > limit:
                        raise LimitError(_too_deep("the page", limit))
                else:
                    depth -= 1
                    element.clear()
    except etree.LxmlError:
        return  # what libxml2 cannot read, the HTML parser reports in its own words


# A format's own check of its content, beyond its size (packaged formats: part by part above).
_CONTENT_CHECKS: dict[str, Callable[[Path, FileLimits], None]] = {
    "pdf": lambda path, limits: _check_page_sizes(path, limits.page_points),
    "html": lambda path, limits: _check_html_depth(path, limits.nesting),
}
