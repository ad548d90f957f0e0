"""The document tree (BookRAG's tree): document › sections › leaves, in document order.

Built from the view rows so that every node points at its row (``ref_table``, ``ref_id``).
Leaves are text chunks, tables, images and equations, each under the innermost section that
contains it; a section's page range covers its whole subtree.
"""

from __future__ import annotations

from indexer.model import ParsedDocument

# Within the same reading position, a heading comes before the things under it.
_TYPE_ORDER = {"section": 0, "table": 1, "image": 2, "equation": 3, "text": 4}


def build_tree(doc_id: str, parsed: ParsedDocument, rows: dict[str, list[dict]]) -> list[dict]:
    seqs = {
        "sections": {s.ordinal: s.seq for s in parsed.sections},
        "chunks": {c.ordinal: c.seq for c in parsed.chunks},
        "tables": {t.ordinal: t.seq for t in parsed.tables},
        "images": {f.ordinal: f.seq for f in parsed.figures},
        "equations": {e.ordinal: e.seq for e in parsed.equations},
    }
    items = []  # (seq, type order, node type, row, parent section id)
    for table, node_type, key, parent_key, title_key in (
        ("sections", "section", "section_id", "parent_id", "title"),
        ("chunks", "text", "chunk_id", "section_id", "text"),
        ("tables", "table", "table_id", "section_id", "caption"),
        ("images", "image", "image_id", "section_id", "caption"),
        ("equations", "equation", "equation_id", "section_id", "text"),
    ):
        for row in rows[table]:
            seq = seqs[table].get(row["ordinal"], 0)
            items.append(
                (seq, _TYPE_ORDER[node_type], node_type, table, key, row, parent_key, title_key)
            )
    items.sort(key=lambda item: (item[0], item[1]))

    page_count = len(parsed.pages)
    root_id = f"{doc_id}-n0"
    nodes: list[dict] = [
        {
            "node_id": root_id,
            "doc_id": doc_id,
            "parent_id": None,
            "ordinal": 0,
            "depth": 0,
            "node_type": "document",
            "title": parsed.meta.title,
            "page_start": 1 if page_count else None,
            "page_end": page_count or None,
            "ref_table": "documents",
            "ref_id": doc_id,
        }
    ]
    node_of_section: dict[str, dict] = {}
    for ordinal, (_, _, node_type, table, key, row, parent_key, title_key) in enumerate(items, 1):
        parent = node_of_section.get(row.get(parent_key) or "", nodes[0])
        start, end = _pages(row)
        node = {
            "node_id": f"{doc_id}-n{ordinal}",
            "doc_id": doc_id,
            "parent_id": parent["node_id"],
            "ordinal": ordinal,
            "depth": parent["depth"] + 1,
            "node_type": node_type,
            "title": _title(row.get(title_key), node_type, row),
            "page_start": start,
            "page_end": end,
            "ref_table": table,
            "ref_id": row[key],
        }
        nodes.append(node)
        if node_type == "section":
            node_of_section[row["section_id"]] = node
    _widen_page_ranges(nodes)
    return nodes


def _pages(row: dict) -> tuple[int | None, int | None]:
    if "page_start" in row:
        return row["page_start"], row["page_end"]
    return row.get("page_number"), row.get("page_end", row.get("page_number"))


def _title(text: str | None, node_type: str, row: dict) -> str | None:
    if text is None:
        return row.get("label")
    words = text.split()
    if node_type in ("text", "equation") and len(words) > 12:
        return " ".join(words[:12]) + " …"
    return text


def _widen_page_ranges(nodes: list[dict]) -> None:
    """Make each section's page range cover its whole subtree (children come after parents)."""
    by_id = {n["node_id"]: n for n in nodes}
    for node in reversed(nodes):
        parent = by_id.get(node["parent_id"]) if node["parent_id"] else None
        if parent is None or parent["node_type"] == "document":
            continue
        for key, pick in (("page_start", min), ("page_end", max)):
            values = [v for v in (parent[key], node[key]) if v is not None]
            parent[key] = pick(values) if values else None
