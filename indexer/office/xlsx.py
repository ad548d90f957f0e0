"""XLSX -> the office block stream, read with openpyxl.

Why not docling's XLSX backend: it cuts a sheet into one table per contiguous region (51 tables
for the 5 Nestlé sheets, every title row a 1x1 table), so a title no longer captions its table
and a header row can end up in another table than its body; and it drops the cell alignment and
indentation that say which header label spans a period and how row groups nest. openpyxl (a
dependency of docling's XLSX extra) gives merged ranges, cached formula results, alignment and
indentation directly.

Each sheet is a page (1-based, in workbook order) and a level-1 section titled with the sheet
name; its tables and the text around them follow (``indexer.office.sheet_tables``). Cell text is
the value as displayed: cached formula results, percentages and thousands separators as the
number format says.
"""

from __future__ import annotations

import datetime as dt
import re
import warnings
from pathlib import Path

from docsym.indexer.errors import ParseError
from docsym.indexer.model import Page
from docsym.indexer.office.blocks import BlockStream, Heading, ImageBlock, Paragraph, TableBlock
from docsym.indexer.office.sheet_tables import SheetCell, sheet_blocks

_DECIMALS = re.compile(r"\.(0+)")


def xlsx_blocks(path: Path) -> BlockStream:
    workbook = _open(path)
    stream = BlockStream(format="xlsx")
    images = 0
    for number, sheet in enumerate(workbook.worksheets, 1):
        cells = _sheet_cells(sheet) if hasattr(sheet, "merged_cells") else []
        pictures = len(getattr(sheet, "_images", [])) + len(getattr(sheet, "_charts", []))
        images += pictures
        stream.add(Heading(sheet.title, level=1, page=number))
        lines: list[str] = []
        for block in sheet_blocks(cells, number):
            stream.add(block)
            lines.append(_text_of(block))
        for _ in range(pictures):  # openpyxl keeps no caption or position worth citing
            stream.add(ImageBlock(page=number))
        text = "\n".join(line for line in lines if line)
        # The sheet's name is its label: a value is cited by sheet, as a PDF's by printed page.
        stream.pages.append(
            Page(
                number=number,
                width=None,
                height=None,
                text=text,
                has_text=bool(text),
                label=sheet.title,
            )
        )
    if not any(p.has_text for p in stream.pages):
        what = f"{images} image(s) or chart(s)" if images else "empty sheets"
        raise ParseError(f"no cell holds a value (the workbook has only {what}): nothing to index")
    return stream


def _open(path: Path):
    import openpyxl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "unknown extension" noise from Excel add-ins
            return openpyxl.load_workbook(path, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError, zipfile errors, XML errors, ...
        raise ParseError(f"cannot read XLSX: {type(exc).__name__}: {exc}") from None


def _sheet_cells(sheet) -> list[SheetCell]:
    merged = {
        (rng.min_row, rng.min_col): (rng.max_row - rng.min_row + 1, rng.max_col - rng.min_col + 1)
        for rng in sheet.merged_cells.ranges
    }
    # The cells the file stores, in sheet order: iter_rows() would visit every position of the
    # used range, which formatting alone can stretch to a million rows. The other cells of a
    # merged range hold no value, so only its top-left cell is kept, with its spans.
    stored = getattr(sheet, "_cells", None)
    cells = [stored[k] for k in sorted(stored)] if stored is not None else _all_cells(sheet)
    out: list[SheetCell] = []
    for cell in cells:
        text = display_text(cell.value, cell.number_format) if cell.value is not None else ""
        if not text:
            continue
        rows, cols = merged.get((cell.row, cell.column), (1, 1))
        out.append(
            SheetCell(
                row=cell.row,
                col=cell.column,
                text=text,
                address=cell.coordinate,
                row_span=rows,
                col_span=cols,
                align=cell.alignment.horizontal,
                indent=float(cell.alignment.indent or 0),
            )
        )
    return out


def _all_cells(sheet) -> list:
    return [cell for row in sheet.iter_rows() for cell in row]


def display_text(value: object, number_format: str | None) -> str:
    """A cell value as a reader sees it: '12,553', '35.3%', '2023-06-30', 'TRUE' (line breaks
    inside a text cell kept, other runs of white space folded)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return _number_text(float(value), number_format or "General")
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    lines = (" ".join(line.split()) for line in str(value).splitlines())
    return "\n".join(line for line in lines if line)


def _number_text(value: float, number_format: str) -> str:
    section = number_format.split(";")[0]
    if section.lower() == "general" or "0" not in section:
        return str(int(value)) if value.is_integer() else f"{value:.10g}"
    match = _DECIMALS.search(section)
    decimals = len(match.group(1)) if match else 0
    if "%" in section:
        return f"{value * 100:.{decimals}f}%"
    grouping = "," if "," in section else ""
    return f"{value:{grouping}.{decimals}f}"


def _text_of(block) -> str:
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, TableBlock):
        rows: dict[int, list[str]] = {}
        for cell in sorted(block.cells, key=lambda c: (c.row, c.col)):
            rows.setdefault(cell.row, []).append(cell.text)
        body = "\n".join(" | ".join(texts) for texts in rows.values())
        return f"{block.caption}\n{body}" if block.caption else body
    return ""
