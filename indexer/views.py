"""Turn a parsed document into rows of the index's view tables (see storage/schema.py).

Ids are derived from the doc_id and each item's ordinal, so they stay stable when the same file is
indexed again. Tables, figures and equations are placed in the innermost section whose heading
precedes them in reading order.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from docsym.indexer.model import BBox, ParsedDocument
from docsym.indexer.summaries import DocumentSummaries
from docsym.indexer.table_model import table_to_html
from docsym.indexer.table_summaries import summarise_rows_and_columns
from docsym.indexer.tree import build_tree
from docsym.storage import ids
from docsym.storage.boxes import union
from docsym.storage.file_names import readable, stored_path
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import (
    ChunkRow,
    DocumentRow,
    EquationRow,
    ImageRow,
    PageRow,
    ReferenceRow,
    SectionRow,
    SentenceRow,
    TableCellRow,
    TableRow,
    TableSummaryRow,
)


@dataclass(frozen=True)
class FileFacts:
    doc_id: str
    path: Path
    sha256: str
    size_bytes: int


def build_rows(
    facts: FileFacts, parsed: ParsedDocument, summaries: DocumentSummaries
) -> DocumentRows:
    """Every view's rows for one document, the document tree included."""
    doc_id = facts.doc_id
    locate = _SectionLocator(doc_id, parsed)
    views = DocumentRows(
        [
            _document_row(facts, parsed, summaries.tldr),
            *_page_rows(doc_id, parsed, summaries),
            *_section_rows(doc_id, parsed, summaries),
            *_chunk_rows(doc_id, parsed),
            *_sentence_rows(doc_id, parsed),
            *_image_rows(doc_id, parsed, locate, summaries),
            *_equation_rows(doc_id, parsed, locate),
            *_reference_rows(doc_id, parsed),
            *_table_rows(doc_id, parsed, locate, summaries),
            *_table_summary_rows(doc_id, parsed),
        ]
    )
    return views.merged(DocumentRows(build_tree(doc_id, parsed, views)))


def _document_row(facts: FileFacts, parsed: ParsedDocument, tldr: str | None) -> DocumentRow:
    meta = parsed.meta
    path, path_bytes = stored_path(facts.path)
    return DocumentRow(
        doc_id=facts.doc_id,
        path=path,
        path_bytes=path_bytes,
        file_name=readable(facts.path.name),
        format=parsed.format,
        sha256=facts.sha256,
        size_bytes=facts.size_bytes,
        page_count=len(parsed.pages),
        title=meta.title,
        authors=meta.authors,
        abstract=meta.abstract,
        year=meta.year,
        year_from=meta.year_from,
        venue=meta.venue,
        doi=meta.doi,
        arxiv_id=meta.arxiv_id,
        has_text=any(p.has_text for p in parsed.pages) or bool(parsed.chunks),
        tldr=tldr,
        indexed_at=datetime.now(UTC).replace(tzinfo=None),
    )


def _page_rows(doc_id: str, parsed: ParsedDocument, summaries: DocumentSummaries) -> list[PageRow]:
    return [
        PageRow(
            page_id=ids.page_id(doc_id, p.number),
            doc_id=doc_id,
            page_number=p.number,
            width=p.width,
            height=p.height,
            text=p.text,
            has_text=p.has_text,
            ocr=p.ocr,
            ocr_confidence=p.ocr_confidence,
            summary=summaries.pages.get(p.number),
            label=p.label,
        )
        for p in parsed.pages
    ]


def _section_rows(
    doc_id: str, parsed: ParsedDocument, summaries: DocumentSummaries
) -> list[SectionRow]:
    boxes = _section_boxes(parsed)
    return [
        SectionRow(
            section_id=ids.section_id(doc_id, s.ordinal),
            doc_id=doc_id,
            parent_id=None if s.parent is None else ids.section_id(doc_id, s.parent),
            ordinal=s.ordinal,
            level=s.level,
            number=s.number,
            title=s.title,
            content=s.content,
            summary=summaries.sections.get(s.ordinal),
            page_start=s.page_start,
            page_end=s.page_end,
            bbox=_box(s.bbox),
            source=s.source,
            boxes=boxes.get(s.ordinal),
        )
        for s in parsed.sections
    ]


def _section_boxes(parsed: ParsedDocument) -> dict[int, list[list[float]]]:
    """section ordinal -> [page, x0, y0, x1, y1] per page its heading and own chunks cover."""
    section_of = {c.ordinal: c.section for c in parsed.chunks}
    parts: dict[int, dict[int, list[BBox]]] = {}
    for s in parsed.sections:
        if s.bbox is not None and s.page_start is not None:
            parts.setdefault(s.ordinal, {}).setdefault(s.page_start, []).append(s.bbox)
    for sentence in parsed.sentences:
        section = section_of.get(sentence.chunk)
        if section is not None and sentence.bbox is not None and sentence.page_number:
            by_page = parts.setdefault(section, {})
            by_page.setdefault(sentence.page_number, []).append(sentence.bbox)
    return {
        section: [[page, *_box(union(boxes))] for page, boxes in sorted(by_page.items())]
        for section, by_page in parts.items()
    }


def _chunk_rows(doc_id: str, parsed: ParsedDocument) -> list[ChunkRow]:
    return [
        ChunkRow(
            chunk_id=ids.chunk_id(doc_id, c.ordinal),
            doc_id=doc_id,
            section_id=None if c.section is None else ids.section_id(doc_id, c.section),
            ordinal=c.ordinal,
            text=c.text,
            page_number=c.page_number,
            page_end=c.page_end,
            token_count=c.token_count,
            bbox=_box(c.bbox),
        )
        for c in parsed.chunks
    ]


def _sentence_rows(doc_id: str, parsed: ParsedDocument) -> list[SentenceRow]:
    section_of = {c.ordinal: c.section for c in parsed.chunks}
    rows = []
    for s in parsed.sentences:
        section = section_of.get(s.chunk)
        rows.append(
            SentenceRow(
                sentence_id=ids.sentence_id(doc_id, s.ordinal),
                doc_id=doc_id,
                chunk_id=ids.chunk_id(doc_id, s.chunk),
                section_id=None if section is None else ids.section_id(doc_id, section),
                ordinal=s.ordinal,
                text=s.text,
                char_start=s.start,
                char_end=s.end,
                page_number=s.page_number,
                bbox=_box(s.bbox),
                continued=s.continued,
            )
        )
    return rows


def _image_rows(
    doc_id: str, parsed: ParsedDocument, locate: _SectionLocator, summaries: DocumentSummaries
) -> list[ImageRow]:
    return [
        ImageRow(
            image_id=ids.image_id(doc_id, f.ordinal),
            doc_id=doc_id,
            section_id=locate(f.seq),
            ordinal=f.ordinal,
            page_number=f.page_number,
            bbox=_box(f.bbox),
            label=f.label,
            caption=f.caption,
            summary=summaries.figures.get(f.ordinal),
        )
        for f in parsed.figures
    ]


def _equation_rows(
    doc_id: str, parsed: ParsedDocument, locate: _SectionLocator
) -> list[EquationRow]:
    return [
        EquationRow(
            equation_id=ids.equation_id(doc_id, e.ordinal),
            doc_id=doc_id,
            section_id=locate(e.seq),
            ordinal=e.ordinal,
            page_number=e.page_number,
            bbox=_box(e.bbox),
            number=e.number,
            text=e.text,
        )
        for e in parsed.equations
    ]


def _reference_rows(doc_id: str, parsed: ParsedDocument) -> list[ReferenceRow]:
    return [
        ReferenceRow(
            reference_id=ids.reference_id(doc_id, r.ordinal),
            doc_id=doc_id,
            ordinal=r.ordinal,
            label=r.label,
            text=r.text,
            year=r.year,
            doi=r.doi,
            arxiv_id=r.arxiv_id,
            page_number=r.page_number,
        )
        for r in parsed.references
    ]


def _table_rows(
    doc_id: str, parsed: ParsedDocument, locate: _SectionLocator, summaries: DocumentSummaries
) -> list[TableRow | TableCellRow]:
    rows: list[TableRow | TableCellRow] = []
    for t in parsed.tables:
        table_id = ids.table_id(doc_id, t.ordinal)
        rows.append(
            TableRow(
                table_id=table_id,
                doc_id=doc_id,
                section_id=locate(t.seq),
                ordinal=t.ordinal,
                page_number=t.page_number,
                bbox=_box(t.bbox),
                label=t.label,
                caption=t.caption,
                html=table_to_html(t),
                n_rows=t.n_rows,
                n_cols=t.n_cols,
                header_rows=t.header_rows,
                header_cols=t.header_cols,
                summary=summaries.tables.get(t.ordinal),
                confidence=t.confidence,
                doubts=t.doubts,
            )
        )
        rows.extend(
            TableCellRow(
                cell_id=ids.cell_id(table_id, c.row, c.col),
                table_id=table_id,
                doc_id=doc_id,
                row=c.row,
                col=c.col,
                row_span=c.row_span,
                col_span=c.col_span,
                text=c.text,
                value=c.value,
                unit=c.unit,
                is_col_header=c.is_col_header,
                is_row_header=c.is_row_header,
                row_path=c.row_path,
                col_path=c.col_path,
                page_number=t.page_number,
                bbox=_box(c.bbox),
                address=c.address,
            )
            for c in t.cells
        )
    return rows


def _table_summary_rows(doc_id: str, parsed: ParsedDocument) -> list[TableSummaryRow]:
    """HD-RAG row- and column-level summaries of every table (indexer/table_summaries.py)."""
    rows: list[TableSummaryRow] = []
    for t in parsed.tables:
        table_id = ids.table_id(doc_id, t.ordinal)
        rows.extend(
            TableSummaryRow(
                summary_id=ids.summary_id(table_id, s.axis, s.ordinal),
                table_id=table_id,
                doc_id=doc_id,
                axis=s.axis,
                level=s.level,
                path=s.path,
                text=s.text,
                page_number=t.page_number,
                bbox=_box(s.bbox),
                cell_count=len(s.cells),
            )
            for s in summarise_rows_and_columns(t)
        )
    return rows


class _SectionLocator:
    """Maps a reading-order position to the id of the innermost section around it."""

    def __init__(self, doc_id: str, parsed: ParsedDocument) -> None:
        ordered = sorted(parsed.sections, key=lambda s: (s.seq, s.ordinal))
        self._seqs = [s.seq for s in ordered]
        self._ids = [ids.section_id(doc_id, s.ordinal) for s in ordered]

    def __call__(self, seq: int) -> str | None:
        i = bisect.bisect_right(self._seqs, seq) - 1
        return None if i < 0 else self._ids[i]


def _box(bbox: BBox | None) -> list[float] | None:
    return None if bbox is None else [round(v, 2) for v in bbox]
