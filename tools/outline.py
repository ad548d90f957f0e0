"""A document's outline: its section tree with pages and what each section holds."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

from pydantic import BaseModel, Field

from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.results import ToolResult
from docsym.tools.spec import Arguments, ToolSpec

MAX_DEPTH = 10
MAX_SECTIONS = 500


class OutlineNode(BaseModel):
    section_id: str
    node_id: str
    level: int
    number: str | None
    title: str
    page_start: int | None
    page_end: int | None
    tables: int = Field(description="tables anywhere under this section")
    figures: int
    equations: int


class Outline(ToolResult):
    doc_id: str
    title: str | None
    page_count: int
    sections: list[OutlineNode]
    truncated: bool = False
    note: str | None = None

    def to_markdown(self) -> str:
        lines = [f"# {self.title or self.doc_id} ({self.doc_id}, {self.page_count} pages)"]
        for s in self.sections:
            label = f"{s.number} {s.title}" if s.number else s.title
            counts = ", ".join(
                f"{n} {what}"
                for n, what in ((s.tables, "tables"), (s.figures, "figures"), (s.equations, "eqs"))
                if n
            )
            pages = ""
            if s.page_start is not None:  # DOCX, HTML and Markdown have no pages
                pages = f"p. {s.page_start}"
                pages += f"–{s.page_end}" if s.page_end not in (None, s.page_start) else ""
            lines.append(
                f"{'  ' * (s.level - 1)}- {label} [{s.section_id}] {pages}"
                + (f" ({counts})" if counts else "")
            )
        if self.note:
            lines.append(f"\n{self.note}")
        return "\n".join(lines)


def get_outline(store: Store, doc_id: str, depth: int = 3) -> Outline:
    if not 1 <= depth <= MAX_DEPTH:
        raise ToolError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    con = store.sql()
    doc = con.execute(
        "SELECT title, page_count FROM documents WHERE doc_id = ?", [doc_id]
    ).fetchone()
    if doc is None:
        raise NotFoundError(f"no document {doc_id!r}; call list_documents for the doc_ids")
    nodes = con.execute(
        "SELECT node_id, parent_id, node_type, ref_id FROM tree_nodes WHERE doc_id = ? "
        "ORDER BY ordinal",
        [doc_id],
    ).fetchall()
    counts = _counts_under_sections(nodes)
    sections = con.execute(
        "SELECT s.section_id, n.node_id, s.level, s.number, s.title, n.page_start, n.page_end "
        "FROM sections s JOIN tree_nodes n ON n.ref_table = 'sections' AND n.ref_id = s.section_id "
        "WHERE s.doc_id = ? AND s.level <= ? ORDER BY s.ordinal",
        [doc_id, depth],
    ).fetchall()
    outline = [
        OutlineNode(
            section_id=sid,
            node_id=nid,
            level=level,
            number=number,
            title=title,
            page_start=start,
            page_end=end,
            **counts.get(nid, _zero()),
        )
        for sid, nid, level, number, title, start, end in sections
    ]
    truncated = len(outline) > MAX_SECTIONS
    note = None
    if truncated:
        note = (
            f"{len(outline)} sections; showing the first {MAX_SECTIONS}. Lower depth, or run_sql "
            f"over sections WHERE doc_id = '{doc_id}' with LIMIT/OFFSET."
        )
    return Outline(
        doc_id=doc_id,
        title=doc[0],
        page_count=doc[1] or 0,
        sections=outline[:MAX_SECTIONS],
        truncated=truncated,
        note=note,
    )


def _zero() -> dict[str, int]:
    return {"tables": 0, "figures": 0, "equations": 0}


def _counts_under_sections(nodes: list[tuple]) -> dict[str, dict[str, int]]:
    """node_id of each section -> counts of table/image/equation leaves in its subtree."""
    parent = {node_id: parent_id for node_id, parent_id, _, _ in nodes}
    kind = {"table": "tables", "image": "figures", "equation": "equations"}
    counts: dict[str, dict[str, int]] = defaultdict(_zero)
    for node_id, _, node_type, _ in nodes:
        if node_type not in kind:
            continue
        ancestor = parent.get(node_id)
        while ancestor is not None:
            counts[ancestor][kind[node_type]] += 1
            ancestor = parent.get(ancestor)
    return counts


DocId = Annotated[str, Field(description="From list_documents.", max_length=64)]


class GetOutlineArgs(Arguments):
    doc_id: DocId
    depth: Annotated[int, Field(ge=1, le=MAX_DEPTH)] = 3


GET_OUTLINE = ToolSpec(
    name="get_outline",
    summary="the section tree with pages and table/figure/equation counts.",
    description=(
        "A document's section tree: section ids, numbers, titles, page ranges and how many "
        "tables, figures and equations sit under each section. Use the section_id or page "
        "range to narrow run_sql or search filters (page_number >= a and page_number <= b)."
    ),
    arguments=GetOutlineArgs,
    function=get_outline,
)
