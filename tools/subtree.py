"""``select_subtree``: BookRAG's Select_by_Section with Filter_Modal and Filter_Range.

The nodes of a document's tree under one section (by number, id or title) or node, optionally
only some node types and only a page range, in document order, with bounded text and the counts
by type of everything that matched (so "how many tables are in section 5" is one call).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from docsym.storage import ids
from docsym.storage.schema import NODE_TYPES
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.results import (
    PAGE_LABEL_HELP,
    ToolResult,
    markdown_table,
    page_citation,
    page_labels,
    trimmed,
    with_note,
)
from docsym.tools.spec import Arguments, Name, Offset, PageNumber, ToolSpec

# `sub`: the ids of the tree nodes under a root, the root included, bound by ``walk_params``.
# Each step joins the root's document's nodes only (a filter DuckDB tests in its scan), not the
# library's.
SUBTREE = """
    WITH RECURSIVE sub(node_id) AS (
        SELECT node_id FROM tree_nodes WHERE node_id = ? AND doc_id = ?
        UNION ALL
        SELECT t.node_id FROM tree_nodes t JOIN sub ON t.parent_id = sub.node_id
        WHERE t.doc_id = ?
    )
"""


def walk_params(root_id: str, doc_id: str) -> list[str]:
    """The parameters ``SUBTREE`` binds, in order."""
    return [root_id, doc_id, doc_id]


MAX_NODES = 200
TEXT_CHARS = 300

# What to show for each kind of leaf: the view's text column.
TEXT_OF = {
    "sections": "title",
    "chunks": "text",
    "tables": "caption",
    "images": "caption",
    "equations": "text",
}
_HAS_BBOX = {"sections", "chunks", "tables", "images", "equations"}


class SubtreeNode(BaseModel):
    node_id: str
    node_type: str
    depth: int
    title: str | None
    page_start: int | None
    page_end: int | None
    ref_table: str
    ref_id: str
    page_label: str | None = Field(default=None, description=f"of page_start: {PAGE_LABEL_HELP}")
    bbox: list[float] | None = Field(
        default=None, description="[x0, y0, x1, y1] PDF points on page_start"
    )
    cited: list[str] = Field(default_factory=list, description="ids of what the bbox covers")
    text: str | None = None


class Subtree(ToolResult):
    doc_id: str
    root: SubtreeNode
    counts: dict[str, int]  # matching nodes by type, before limit/offset
    nodes: list[SubtreeNode]
    truncated: bool = False
    note: str | None = None

    def to_markdown(self) -> str:
        counts = ", ".join(f"{n} {t}" for t, n in sorted(self.counts.items()))
        head = f"Under {self.root.title or self.root.node_id} ({self.root.node_id}): {counts}"
        rows = [
            [
                n.node_id,
                n.node_type,
                page_citation(n.page_start, n.page_label),
                f"{n.ref_table}:{n.ref_id}",
                n.bbox,
                trimmed(n.text or n.title),
            ]
            for n in self.nodes
        ]
        listing = markdown_table(["node_id", "type", "page", "ref", "bbox", "text"], rows)
        return with_note(f"{head}\n\n{listing}", self.note)


def select_subtree(
    store: Store,
    doc_id: str,
    section: str | None = None,
    node_id: str | None = None,
    node_types: list[str] | None = None,
    pages: list[int] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Subtree:
    _check(node_types, pages, limit, offset)
    con = store.sql()
    root_id = resolve_root(con, doc_id, section, node_id)
    types = list(node_types or NODE_TYPES)
    first, last = pages if pages else (1, 1_000_000)
    matching = f"""
        {SUBTREE}
        SELECT t.node_id, t.node_type, t.depth, t.title, t.page_start, t.page_end,
               t.ref_table, t.ref_id, t.ordinal
        FROM tree_nodes t JOIN sub USING (node_id)
        WHERE t.doc_id = ? AND t.node_id <> ? AND t.node_type IN ({", ".join("?" * len(types))})
          AND (? OR (coalesce(t.page_end, t.page_start) >= ? AND t.page_start <= ?))
    """
    # No page filter: every node, including those of formats without pages (NULL page range).
    params = [*walk_params(root_id, doc_id), doc_id, root_id, *types, not pages, first, last]
    counts = dict(
        con.execute(
            f"SELECT node_type, count(*) FROM ({matching}) GROUP BY node_type", params
        ).fetchall()
    )
    rows = con.execute(f"{matching} ORDER BY t.ordinal LIMIT ? OFFSET ?", [*params, limit, offset])
    nodes = [SubtreeNode(**dict(zip(_FIELDS, r[:8], strict=True))) for r in rows.fetchall()]
    fill_from_views(store, nodes)
    root = _node(con, root_id)
    total = sum(counts.values())
    note = None
    if offset + len(nodes) < total:
        note = f"{total} nodes match; call again with offset={offset + len(nodes)} for more."
    return Subtree(
        doc_id=doc_id, root=root, counts=counts, nodes=nodes, truncated=note is not None, note=note
    )


_FIELDS = (
    "node_id",
    "node_type",
    "depth",
    "title",
    "page_start",
    "page_end",
    "ref_table",
    "ref_id",
)


def _check(node_types, pages, limit: int, offset: int) -> None:
    unknown = set(node_types or ()) - set(NODE_TYPES)
    if unknown:
        raise ToolError(f"unknown node_types {sorted(unknown)}; use some of {list(NODE_TYPES)}")
    if pages is not None and (len(pages) != 2 or pages[0] < 1 or pages[1] < pages[0]):
        raise ToolError("pages must be [from, to] with 1 <= from <= to, e.g. [3, 5]")
    if not 1 <= limit <= MAX_NODES:
        raise ToolError(f"limit must be between 1 and {MAX_NODES}, got {limit}")
    if offset < 0:
        raise ToolError(f"offset must be >= 0, got {offset}")


def resolve_root(con, doc_id: str, section: str | None, node_id: str | None) -> str:
    if con.execute("SELECT 1 FROM documents WHERE doc_id = ?", [doc_id]).fetchone() is None:
        raise NotFoundError(f"no document {doc_id!r}; call list_documents for the doc_ids")
    if node_id:
        found = con.execute(
            "SELECT node_id FROM tree_nodes WHERE node_id = ? AND doc_id = ?", [node_id, doc_id]
        ).fetchone()
        if found is None:
            raise NotFoundError(f"no tree node {node_id!r} in {doc_id}; see get_outline")
        return found[0]
    if not section:
        return ids.node_id(doc_id, 0)
    found = con.execute(
        """
        SELECT n.node_id FROM sections s
        JOIN tree_nodes n ON n.ref_table = 'sections' AND n.ref_id = s.section_id
        WHERE s.doc_id = ? AND (s.number = ? OR s.section_id = ? OR lower(s.title) = lower(?)
                                OR strpos(lower(s.title), lower(?)) > 0)
        ORDER BY (s.number = ? OR s.section_id = ?) DESC, (lower(s.title) = lower(?)) DESC,
                 s.ordinal
        LIMIT 1
        """,
        [doc_id, section, section, section, section, section, section, section],
    ).fetchone()
    if found is None:
        raise NotFoundError(
            f"no section {section!r} in {doc_id}: give a number ('5', '3.2'), a section_id or "
            "words of its title; get_outline lists them"
        )
    return found[0]


def _node(con, node_id: str) -> SubtreeNode:
    row = con.execute(f"SELECT {', '.join(_FIELDS)} FROM tree_nodes WHERE node_id = ?", [node_id])
    return SubtreeNode(**dict(zip(_FIELDS, row.fetchone(), strict=True)))


def fill_from_views(store: Store, nodes: list[SubtreeNode]) -> None:
    """Add each leaf's bounded text, its bbox where its row has one, and its first page's
    printed label."""
    con = store.sql()
    by_table: dict[str, list[SubtreeNode]] = {}
    for node in nodes:
        by_table.setdefault(node.ref_table, []).append(node)
    for table, group in by_table.items():
        column = TEXT_OF.get(table)
        if column is None:
            continue
        key = {
            "sections": "section_id",
            "chunks": "chunk_id",
            "tables": "table_id",
            "images": "image_id",
            "equations": "equation_id",
        }[table]
        bbox = "bbox" if table in _HAS_BBOX else "NULL"
        marks = ", ".join("?" * len(group))
        rows = con.execute(
            f"SELECT {key}, left({column}, {TEXT_CHARS}), {bbox} FROM {table} "
            f"WHERE {key} IN ({marks})",
            [n.ref_id for n in group],
        ).fetchall()
        found = {r[0]: r[1:] for r in rows}
        for node in group:
            node.text, node.bbox = found.get(node.ref_id, (None, None))
    labels = page_labels(store)
    for node in nodes:
        node.page_label = labels.get((ids.doc_id_of(node.node_id), node.page_start))


DocId = Annotated[str, Field(description="From list_documents.", max_length=64)]
Section = Annotated[
    str | None, Field(description="Number ('5', '3.2'), section_id or title words", max_length=200)
]
NodeId = Annotated[str | None, Field(description="A tree_nodes.node_id", max_length=100)]
NodeTypes = Annotated[
    list[Name] | None, Field(description="section, text, table, image, equation", max_length=5)
]


class SelectSubtreeArgs(Arguments):
    doc_id: DocId
    section: Section = None
    node_id: NodeId = None
    node_types: NodeTypes = None
    pages: Annotated[
        list[PageNumber] | None, Field(description="[from, to]", min_length=2, max_length=2)
    ] = None
    limit: Annotated[int, Field(ge=1, le=MAX_NODES)] = 50
    offset: Offset = 0


SELECT_SUBTREE = ToolSpec(
    name="select_subtree",
    summary="a section's nodes by type and page range, with counts.",
    description=(
        "The tree nodes under one section of a document (by number like '5' or '3.2', "
        "section_id, or words of its title) or under a node_id, optionally only some "
        "node_types (section, text, table, image, equation) and pages [from, to]. Returns "
        "the nodes in document order with bounded text, bbox and ref_table/ref_id (use "
        "get_table on a table's ref_id), plus counts by type of all matching nodes: "
        "'how many tables in section 5' is one call."
    ),
    arguments=SelectSubtreeArgs,
    function=select_subtree,
)
