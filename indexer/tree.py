"""The document tree (BookRAG's tree): document › sections › leaves, in document order.

Built from the view rows so that every node points at its row (``ref_table``, ``ref_id``).
Leaves are text chunks, tables, images and equations, each under the innermost section that
contains it; a section's page range covers its whole subtree.
"""

from __future__ import annotations

from dataclasses import dataclass

from docsym.indexer.model import ParsedDocument
from docsym.storage import ids
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import ChunkRow, EquationRow, ImageRow, SectionRow, TableRow, TreeNodeRow

# Within the same reading position, a heading comes before the things under it.
_TYPE_ORDER = {"section": 0, "table": 1, "image": 2, "equation": 3, "text": 4}


@dataclass(frozen=True)
class _Item:
    """A view row about to become a tree node."""

    seq: int  # reading-order position (see indexer.pdf.layout)
    node_type: str
    ref_table: str
    ref_id: str
    parent_section: str | None  # sections.section_id of the enclosing section
    title: str | None
    page_start: int | None
    page_end: int | None


def build_tree(doc_id: str, parsed: ParsedDocument, views: DocumentRows) -> list[TreeNodeRow]:
    items = sorted(_items(parsed, views), key=lambda item: (item.seq, _TYPE_ORDER[item.node_type]))
    page_count = len(parsed.pages)
    root = TreeNodeRow(
        node_id=ids.node_id(doc_id, 0),
        doc_id=doc_id,
        parent_id=None,
        ordinal=0,
        depth=0,
        node_type="document",
        title=parsed.meta.title,
        page_start=1 if page_count else None,
        page_end=page_count or None,
        ref_table="documents",
        ref_id=doc_id,
    )
    nodes = [root]
    node_of_section: dict[str, TreeNodeRow] = {}
    for ordinal, item in enumerate(items, 1):
        parent = node_of_section.get(item.parent_section or "", root)
        node = TreeNodeRow(
            node_id=ids.node_id(doc_id, ordinal),
            doc_id=doc_id,
            parent_id=parent.node_id,
            ordinal=ordinal,
            depth=(parent.depth or 0) + 1,
            node_type=item.node_type,
            title=item.title,
            page_start=item.page_start,
            page_end=item.page_end,
            ref_table=item.ref_table,
            ref_id=item.ref_id,
        )
        nodes.append(node)
        if item.node_type == "section":
            node_of_section[item.ref_id] = node
    _widen_page_ranges(nodes)
    return nodes


def _items(parsed: ParsedDocument, views: DocumentRows) -> list[_Item]:
    seq_of = {
        "sections": {s.ordinal: s.seq for s in parsed.sections},
        "chunks": {c.ordinal: c.seq for c in parsed.chunks},
        "tables": {t.ordinal: t.seq for t in parsed.tables},
        "images": {f.ordinal: f.seq for f in parsed.figures},
        "equations": {e.ordinal: e.seq for e in parsed.equations},
    }

    def seq(table: str, ordinal: int | None) -> int:
        return seq_of[table].get(ordinal, 0) if ordinal is not None else 0

    items = [
        _Item(
            seq("sections", s.ordinal),
            "section",
            "sections",
            s.section_id,
            s.parent_id,
            s.title,
            s.page_start,
            s.page_end,
        )
        for s in views.of(SectionRow)
    ]
    items += [
        _Item(
            seq("chunks", c.ordinal),
            "text",
            "chunks",
            c.chunk_id,
            c.section_id,
            _title(c.text, "text"),
            c.page_number,
            c.page_end,
        )
        for c in views.of(ChunkRow)
    ]
    items += [
        _Item(
            seq("tables", t.ordinal),
            "table",
            "tables",
            t.table_id,
            t.section_id,
            t.caption if t.caption is not None else t.label,
            t.page_number,
            t.page_number,
        )
        for t in views.of(TableRow)
    ]
    items += [
        _Item(
            seq("images", f.ordinal),
            "image",
            "images",
            f.image_id,
            f.section_id,
            f.caption if f.caption is not None else f.label,
            f.page_number,
            f.page_number,
        )
        for f in views.of(ImageRow)
    ]
    items += [
        _Item(
            seq("equations", e.ordinal),
            "equation",
            "equations",
            e.equation_id,
            e.section_id,
            _title(e.text, "equation"),
            e.page_number,
            e.page_number,
        )
        for e in views.of(EquationRow)
    ]
    return items


def _title(text: str | None, node_type: str) -> str | None:
    """A text or equation leaf is titled by its first words."""
    if text is None:
        return None
    words = text.split()
    if node_type in ("text", "equation") and len(words) > 12:
        return " ".join(words[:12]) + " …"
    return text


def _widen_page_ranges(nodes: list[TreeNodeRow]) -> None:
    """Make each section's page range cover its whole subtree (children come after parents)."""
    by_id = {n.node_id: n for n in nodes}
    for node in reversed(nodes):
        parent = by_id.get(node.parent_id) if node.parent_id else None
        if parent is None or parent.node_type == "document":
            continue
        starts = [v for v in (parent.page_start, node.page_start) if v is not None]
        ends = [v for v in (parent.page_end, node.page_end) if v is not None]
        parent.page_start = min(starts) if starts else None
        parent.page_end = max(ends) if ends else None
