"""Where each sentence of a chunk is: its span in the chunk's text and, when the parser knows
the lines (PDF), the box of those lines on the page. That box is what a client cites.

A sentence never crosses a paragraph (``indexer/pdf/parser.py`` joins two layout blocks only
where one carries the other's sentence on right under it), so its lines sit in one column of one
page and their union is a tight rectangle. A sentence that a page or column break cuts becomes two
sentences, the first marked ``continued``.
"""

from __future__ import annotations

from docsym.indexer.chunking import ChunkText, LineSpan, TextUnit
from docsym.indexer.model import BBox, Chunk, Sentence
from docsym.language.sentences import carries_on
from docsym.storage.boxes import union


def sentences_of(
    chunks: list[tuple[Chunk, ChunkText]], units: list[TextUnit], first_ordinal: int
) -> list[Sentence]:
    """The sentences of ``chunks`` (built from ``units``), numbered from ``first_ordinal``.
    Sets each chunk's bbox to the union of its sentences' boxes."""
    out: list[Sentence] = []
    for chunk, text in chunks:
        first = len(out)
        for piece in text.pieces:
            unit = units[piece.unit]
            out.append(
                Sentence(
                    ordinal=first_ordinal + len(out),
                    chunk=chunk.ordinal,
                    start=piece.chunk_start,
                    end=piece.chunk_end,
                    text=piece.text,
                    page_number=unit.page or None,
                    bbox=box_of(unit.lines, piece.start, piece.end),
                    continued=_continues(piece.text, piece.end, piece.unit, units),
                )
            )
        chunk.bbox = union([s.bbox for s in out[first:]])
    return out


def box_of(lines: tuple[LineSpan, ...], start: int, end: int) -> BBox | None:
    """The union of the boxes of the lines holding characters ``start``..``end``."""
    return union([line.bbox for line in lines if line.start < end and line.end > start])


def _continues(text: str, end: int, unit: int, units: list[TextUnit]) -> bool:
    """A unit's last sentence, carried on (``carries_on``) by the next unit, which starts on the
    next page or back up in another column: the rest of the sentence after the break."""
    here = units[unit]
    if unit + 1 >= len(units) or not here.lines or not units[unit + 1].lines:
        return False
    following = units[unit + 1]
    if end < len(here.text.rstrip()) or not carries_on(text, following.text):
        return False
    last, first = here.lines[-1], following.lines[0]
    return first.page != last.page or first.bbox[1] < last.bbox[1]
