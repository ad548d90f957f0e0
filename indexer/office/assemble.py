"""Blocks in reading order -> ``ParsedDocument``: the section tree, tables, images and chunks.

Format-independent: every office reader ends here. Sections nest by heading level (a heading's
parent is the nearest earlier heading of a lower level, so skipped levels keep the right parent);
a section's content is its paragraphs up to the next heading of any level. Chunks are built per
section with the project's tokenizer-based chunker (``indexer.chunking``), table bodies left out
as for PDFs. Items of formats without pages keep ``page_number`` None.
"""

from __future__ import annotations

import re

from docsym.indexer.chunking import ChunkText, TextUnit, chunk_units
from docsym.indexer.heading_numbers import split_heading_number
from docsym.indexer.model import Chunk, Figure, ParsedDocument, Section, Sentence, Table
from docsym.indexer.office.blocks import BlockStream, Heading, ImageBlock, Paragraph, TableBlock
from docsym.indexer.sentences import sentences_of
from docsym.indexer.table_checks import check_structure
from docsym.indexer.table_model import finish_table
from docsym.language.sentences import carries_on

_TABLE_LABEL = re.compile(r"^(Table|Tab\.)\s*([A-Z]?\d+(?:\.\d+)*)", re.IGNORECASE)
_FIGURE_LABEL = re.compile(r"^(Figure|Fig\.)\s*([A-Z]?\d+(?:\.\d+)*)", re.IGNORECASE)
# A single letter is a section number only when punctuated ("A. Purpose", "B) Scope", "C<tab>"),
# so that "A New Approach" keeps its first word.
_LETTER_NUMBER = re.compile(r"^[A-Z](?:\.\d{1,2}){0,3}(?:[.)]|\t)")


def assemble(stream: BlockStream) -> ParsedDocument:
    attach_captions(stream)
    sections = build_sections(stream)
    chunks, sentences = build_chunks(stream, sections)
    return ParsedDocument(
        format=stream.format,
        meta=stream.meta,
        pages=stream.pages,
        sections=sections,
        tables=build_tables(stream),
        figures=build_figures(stream),
        chunks=chunks,
        sentences=sentences,
        warnings=stream.warnings,
    )


def split_heading(text: str) -> tuple[str | None, str]:
    """(number, title) of a heading: "A.<tab>PURPOSE" -> ("A", "PURPOSE"); keyword headings
    ("CHAPTER 1 – INTRODUCTION", "ITEM 1A. RISK FACTORS") keep their whole text as title."""
    kind, number, title = split_heading_number(text)
    if kind == "letter" and not _LETTER_NUMBER.match(text.strip()):
        return None, _clean(text)
    return number, _clean(title)


def attach_captions(stream: BlockStream) -> None:
    """Give an uncaptioned image or table the "Figure 3: ..." / "Table 2: ..." paragraph right
    after it (or, for tables, right before it): Word sets captions as styled paragraphs that
    docling does not link. The paragraph stays in the text too, as a PDF caption does."""
    blocks = stream.blocks
    for i, block in enumerate(blocks):
        if isinstance(block, ImageBlock) and not block.caption:
            block.caption = _caption_at(blocks, i + 1, _FIGURE_LABEL)
        elif isinstance(block, TableBlock) and not block.caption:
            block.caption = _caption_at(blocks, i + 1, _TABLE_LABEL) or _caption_at(
                blocks, i - 1, _TABLE_LABEL
            )


def _caption_at(blocks: list, i: int, label: re.Pattern) -> str | None:
    if 0 <= i < len(blocks) and isinstance(blocks[i], Paragraph):
        text = _clean(blocks[i].text)
        return text if label.match(text) else None
    return None


def build_sections(stream: BlockStream) -> list[Section]:
    sections: list[Section] = []
    open_stack: list[Section] = []
    for block in stream.blocks:
        if isinstance(block, Heading):
            while open_stack and open_stack[-1].level >= block.level:
                open_stack.pop()
            number, title = split_heading(block.text)
            section = Section(
                ordinal=len(sections),
                level=block.level,
                number=number,
                title=title,
                parent=open_stack[-1].ordinal if open_stack else None,
                page_start=block.page,
                page_end=block.page,
                bbox=block.bbox,
                source=block.source,
                seq=block.seq,
            )
            sections.append(section)
            open_stack.append(section)
        elif sections:
            _extend(sections[-1], block)
    return sections


def _extend(section: Section, block) -> None:
    """Add a block that follows the heading to its section: content and page range."""
    if isinstance(block, Paragraph):
        section.content = f"{section.content}\n{block.text}" if section.content else block.text
    if block.page is not None:
        first = section.page_start if section.page_start is not None else block.page
        section.page_start = min(first, block.page)
        section.page_end = max(section.page_end or block.page, block.page)


def build_tables(stream: BlockStream) -> list[Table]:
    tables: list[Table] = []
    for block in stream.blocks:
        if not isinstance(block, TableBlock) or not block.cells:
            continue
        caption = block.caption or None
        label = _TABLE_LABEL.match(caption or "")
        table = finish_table(
            block.cells,
            ordinal=len(tables),
            page_number=block.page,
            bbox=block.bbox,
            label=f"{label.group(1).title()} {label.group(2)}" if label else None,
            caption=caption,
            header_rows=block.header_rows,
            header_cols=block.header_cols,
            seq=block.seq,
        )
        for step in block.post:
            step(table)
        tables.append(check_structure(table))
    return tables


def build_figures(stream: BlockStream) -> list[Figure]:
    figures: list[Figure] = []
    for block in stream.blocks:
        if isinstance(block, ImageBlock):
            label = _FIGURE_LABEL.match(block.caption or "")
            figures.append(
                Figure(
                    ordinal=len(figures),
                    page_number=block.page,
                    bbox=block.bbox,
                    label=f"Figure {label.group(2)}" if label else None,
                    caption=block.caption or None,
                    seq=block.seq,
                )
            )
    return figures


def build_chunks(
    stream: BlockStream, sections: list[Section]
) -> tuple[list[Chunk], list[Sentence]]:
    """Chunks of each section's paragraphs (and of the text before the first heading), and
    their sentences (without boxes: office formats are cited by section)."""
    groups: list[tuple[int | None, list[Paragraph]]] = [(None, [])]
    by_seq = {s.seq: s.ordinal for s in sections}
    for block in stream.blocks:
        if isinstance(block, Heading) and block.seq in by_seq:
            groups.append((by_seq[block.seq], []))
        elif isinstance(block, Paragraph) and block.text.strip():
            groups[-1][1].append(block)
    chunks: list[Chunk] = []
    sentences: list[Sentence] = []
    for section, paragraphs in groups:
        made, units = _chunk_group(section, paragraphs, first_ordinal=len(chunks))
        chunks += [chunk for chunk, _ in made]
        sentences += sentences_of(made, units, first_ordinal=len(sentences))
    return chunks, sentences


def _chunk_group(
    section: int | None, paragraphs: list[Paragraph], first_ordinal: int
) -> tuple[list[tuple[Chunk, ChunkText]], list[TextUnit]]:
    """Pack a section's paragraphs; each chunk's seq is that of the paragraph it starts in."""
    kept, texts = _sentence_paragraphs(paragraphs)
    # chunk_units keeps each chunk on one page; 0 stands for "no page" (formats without pages).
    units = [TextUnit(t, p.page or 0) for t, p in zip(texts, kept, strict=True)]
    out: list[tuple[Chunk, ChunkText]] = []
    for piece in chunk_units(units):
        chunk = Chunk(
            ordinal=first_ordinal + len(out),
            section=section,
            text=piece.text,
            page_number=piece.page_start or None,
            page_end=piece.page_end or None,
            token_count=piece.token_count,
            seq=kept[piece.pieces[0].unit].seq,
        )
        out.append((chunk, piece))
    return out, units


def _sentence_paragraphs(paragraphs: list[Paragraph]) -> tuple[list[Paragraph], list[str]]:
    """The non-empty paragraphs with their cleaned texts, a paragraph that carries on the
    sentence of the one before (``carries_on``: a document converted from print keeps each
    printed line a paragraph, "the trustee must, at a" then "minimum:") joined to it."""
    kept: list[Paragraph] = []
    texts: list[str] = []
    for paragraph in paragraphs:
        text = _clean(paragraph.text)
        if not text:
            continue
        if texts and kept[-1].page == paragraph.page and carries_on(texts[-1], text):
            texts[-1] = f"{texts[-1]} {text}"
        else:
            kept.append(paragraph)
            texts.append(text)
    return kept, texts


def _clean(text: str) -> str:
    return " ".join(text.split())
