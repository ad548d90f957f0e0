"""``read_passage``: read a chunk, a section, a page or a sentence in full, with where each of its
sentences is printed, and its neighbours on request, so a client reads on from a hit without SQL.

The unit is told by its id: '<doc>-c<n>' a chunk, '<doc>-s<n>' a section (its own text, up to
the next heading), '<doc>-p<n>' a page, '<doc>-x<n>' a sentence. ``before`` and ``after`` add that
many neighbouring units of the same kind (the chunks, sections, pages or sentences around it).
Output is bounded: whole sentences are kept while they fit ``max_chars``; the note says where to
continue.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from docsym.storage.ids import parse
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.results import (
    TRIM_MARK,
    ToolResult,
    markdown_table,
    page_citation,
    page_labels,
    with_note,
)
from docsym.tools.spec import Arguments, ToolSpec

MAX_NEIGHBOURS = 5
MAX_CHARS = 12_000
DEFAULT_CHARS = 4_000
_KINDS = ("chunk", "section", "page", "sentence")
# Sentences of units of each kind, by document and the unit's range of ordinals (or pages).
_SENTENCES = {
    "chunk": "JOIN chunks u ON u.chunk_id = s.chunk_id WHERE s.doc_id = ? AND u.ordinal "
    "BETWEEN ? AND ?",
    "section": "JOIN sections u ON u.section_id = s.section_id WHERE s.doc_id = ? AND u.ordinal "
    "BETWEEN ? AND ?",
    "page": "WHERE s.doc_id = ? AND s.page_number BETWEEN ? AND ?",
    "sentence": "WHERE s.doc_id = ? AND s.ordinal BETWEEN ? AND ?",
}


class PassageSentence(BaseModel):
    sentence_id: str
    chunk_id: str
    page_number: int | None
    page_label: str | None = None
    bbox: list[float] | None = Field(default=None, description="[x0, y0, x1, y1] PDF points")
    text: str


class Passage(ToolResult):
    id: str
    doc_id: str
    kind: str = Field(description="chunk, section, page or sentence")
    text: str = Field(description="the sentences shown, joined")
    sentences: list[PassageSentence]
    previous_id: str | None = Field(default=None, description="the unit before what is shown")
    next_id: str | None = Field(default=None, description="the unit after what is shown")
    truncated: bool = False
    note: str | None = None

    def to_markdown(self) -> str:
        rows = [
            [s.sentence_id, page_citation(s.page_number, s.page_label), s.bbox, s.text]
            for s in self.sentences
        ]
        head = f"{self.kind} {self.id} (doc {self.doc_id})"
        moves = [
            f"previous: {self.previous_id}" if self.previous_id else "",
            f"next: {self.next_id}" if self.next_id else "",
        ]
        listing = markdown_table(["sentence_id", "page", "bbox", "text"], rows)
        tail = "; ".join(m for m in moves if m)
        return with_note(f"{head}\n\n{listing}" + (f"\n\n{tail}" if tail else ""), self.note)


def read_passage(
    store: Store, id: str, before: int = 0, after: int = 0, max_chars: int = DEFAULT_CHARS
) -> Passage:
    found = parse(id.strip()) if isinstance(id, str) else None
    if found is None or found.kind.name not in _KINDS:
        raise ToolError(
            f"id {id[:80]!r} is not a passage id: give a chunk ('<doc_id>-c12'), section "
            "('<doc_id>-s3'), page ('<doc_id>-p5') or sentence ('<doc_id>-x40') id, e.g. the "
            "primary_key of a hybrid_search hit or a sentence id it cites"
        )
    for name, value, top in (("before", before, MAX_NEIGHBOURS), ("after", after, MAX_NEIGHBOURS)):
        if not 0 <= value <= top:
            raise ToolError(f"{name} must be between 0 and {top}, got {value}")
    if not 200 <= max_chars <= MAX_CHARS:
        raise ToolError(f"max_chars must be between 200 and {MAX_CHARS}, got {max_chars}")
    doc_id, kind = found.doc_id, found.kind.name
    con = store.sql()
    position = _position(con, kind, doc_id, id)
    first, last = max(0, position - before), position + after
    rows = con.execute(
        "SELECT s.sentence_id, s.chunk_id, s.page_number, s.bbox, s.text, s.ordinal "
        f"FROM sentences s {_SENTENCES[kind]} ORDER BY s.ordinal",
        [doc_id, first, last],
    ).fetchall()
    shown, used = [], 0
    for sentence_id, chunk_id, page, bbox, text, _ in rows:
        if shown and used + len(text) + 1 > max_chars:
            break
        shown.append(
            PassageSentence(
                sentence_id=sentence_id,
                chunk_id=chunk_id,
                page_number=page,
                bbox=bbox,
                text=text if len(text) <= max_chars else text[:max_chars] + TRIM_MARK,
            )
        )
        used += len(text) + 1
    labels = page_labels(store)
    for sentence in shown:
        sentence.page_label = labels.get((doc_id, sentence.page_number))
    truncated = len(shown) < len(rows)
    note = None
    if truncated:
        note = (
            f"Showing {len(shown)} of {len(rows)} sentences ({max_chars} characters). Continue "
            f"with read_passage(id='{rows[len(shown)][0]}', after={MAX_NEIGHBOURS})."
        )
    elif not rows:
        note = "This unit has no sentences (a heading only, or a page of tables and figures)."
    return Passage(
        id=id,
        doc_id=doc_id,
        kind=kind,
        text=" ".join(s.text for s in shown),
        sentences=shown,
        previous_id=_neighbour(con, kind, doc_id, first - 1),
        next_id=_neighbour(con, kind, doc_id, last + 1),
        truncated=truncated,
        note=note,
    )


def _position(con, kind: str, doc_id: str, unit_id: str) -> int:
    """The unit's ordinal (its page number for pages); refuses an id the index lacks."""
    sql = {
        "chunk": "SELECT ordinal FROM chunks WHERE chunk_id = ?",
        "section": "SELECT ordinal FROM sections WHERE section_id = ?",
        "page": "SELECT page_number FROM pages WHERE page_id = ?",
        "sentence": "SELECT ordinal FROM sentences WHERE sentence_id = ?",
    }[kind]
    found = con.execute(sql, [unit_id]).fetchone()
    if found is None:
        raise NotFoundError(
            f"no {kind} {unit_id!r} in the index; ids come from hybrid_search hits "
            f"(primary_key, cited), get_outline (sections) or run_sql over {kind}s of {doc_id}"
        )
    return int(found[0])


def _neighbour(con, kind: str, doc_id: str, position: int) -> str | None:
    if position < 0:
        return None
    sql = {
        "chunk": "SELECT chunk_id FROM chunks WHERE doc_id = ? AND ordinal = ?",
        "section": "SELECT section_id FROM sections WHERE doc_id = ? AND ordinal = ?",
        "page": "SELECT page_id FROM pages WHERE doc_id = ? AND page_number = ?",
        "sentence": "SELECT sentence_id FROM sentences WHERE doc_id = ? AND ordinal = ?",
    }[kind]
    found = con.execute(sql, [doc_id, position]).fetchone()
    return found[0] if found else None


class ReadPassageArgs(Arguments):
    id: Annotated[
        str,
        Field(
            description="A chunk, section, page or sentence id ('<doc_id>-c12', '-s3', '-p5', "
            "'-x40')",
            max_length=64,
        ),
    ]
    before: Annotated[
        int, Field(ge=0, le=MAX_NEIGHBOURS, description="neighbouring units to add before")
    ] = 0
    after: Annotated[
        int, Field(ge=0, le=MAX_NEIGHBOURS, description="neighbouring units to add after")
    ] = 0
    max_chars: Annotated[int, Field(ge=200, le=MAX_CHARS)] = DEFAULT_CHARS


READ_PASSAGE = ToolSpec(
    name="read_passage",
    summary="a chunk, section, page or sentence in full, sentence by sentence with boxes.",
    description=(
        "Read around a hit without SQL: the full text of a chunk ('<doc_id>-c12'), a section "
        "('-s3', its own text), a page ('-p5') or a sentence ('-x40'), as sentences, each with "
        "its page, printed page label and bbox to cite. before/after (0-5) add that many "
        "neighbouring units of the same kind; previous_id/next_id continue further. Bounded by "
        "max_chars (whole sentences); the note says where to go on."
    ),
    arguments=ReadPassageArgs,
    function=read_passage,
    evidence=True,
)
