"""Every id the index stores or cites, built and parsed in one place.

A ``doc_id`` is the first 16 hex digits of the file's SHA-256 (``indexer/discover.py``); it never
holds a '-'. Every other id is its parent's id, a '-' and a *segment*: the kind's prefix and a
number (a table cell has two, ``r<row>c<col>``)::

    <doc_id>-s3        section 3          <doc_id>-t1-r2c5     table 1's cell at row 2, column 5
    <doc_id>-ent7      entity 7           <doc_id>-ent7-n40    entity 7's link to tree node 40

``KINDS`` is the table of every kind: its prefix, its parent and the view and column holding it.
Numbers are ordinals in document order (0-based), a page's is its page number (1-based). The same
bytes always get the same ids. No two kinds under one parent share a segment's form (a table's
cell 'r<row>c<col>' has a second number, its row 'r<row>' none), and a segment is read as all its
letters then all its digits, so no prefix can be mistaken for another ('r' and 'row', 'e' and
'ent'); a table's row 'r<row>' and a document's reference 'r<n>' differ by parent.

Old ids keep resolving. Until schema version 7 (``storage/migrations.py``'s
``m007_entity_relation_ids``) entities were '<doc_id>-e<n>' and relations '<doc_id>-r<n>', the
prefixes of equations and references. That migration rewrites them in every table and in the
vector store, so nothing stored holds an old form. A client may still hold one: ``current(id,
kind)`` maps an old entity, relation or entity-link id to today's wherever the context says
which kind is meant (the numbers were kept, only the prefix changed). No tool takes an entity or
relation id as an argument (``find_entities`` and ``rank_nodes`` take names and questions,
``select_subtree``, ``rank_nodes`` and ``get_outline`` take doc, section and tree node ids, which
never changed), so no tool argument needs it today; a tool that comes to take one passes it
through ``current``. Two places cannot tell the kind and take ids as written: ``run_sql`` (the
tables as they are) and a search filter's ``primary_key``, matched against the entries of every
view, where '<doc_id>-e3' is also equation 3's key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCUMENT = "document"


@dataclass(frozen=True)
class Kind:
    name: str
    prefix: str  # letters before the (first) number; "" for a document
    parent: str | None  # the kind this one's ids extend
    view: str | None  # the view whose rows carry the id (None: a citation unit only)
    column: str | None
    second: str | None = None  # letters before a second number (a cell's column)
    numbers: str = "ordinal"  # what the number counts

    def __str__(self) -> str:
        return self.name


KINDS: tuple[Kind, ...] = (
    Kind(DOCUMENT, "", None, "documents", "doc_id", numbers="-"),
    Kind("page", "p", DOCUMENT, "pages", "page_id", numbers="page number (1-based)"),
    Kind("section", "s", DOCUMENT, "sections", "section_id"),
    Kind("chunk", "c", DOCUMENT, "chunks", "chunk_id"),
    Kind("sentence", "x", DOCUMENT, "sentences", "sentence_id"),
    Kind("table", "t", DOCUMENT, "tables", "table_id"),
    Kind("image", "i", DOCUMENT, "images", "image_id"),
    Kind("equation", "e", DOCUMENT, "equations", "equation_id"),
    Kind("reference", "r", DOCUMENT, "doc_references", "reference_id"),
    Kind("node", "n", DOCUMENT, "tree_nodes", "node_id"),
    Kind("entity", "ent", DOCUMENT, "entities", "entity_id"),
    Kind("relation", "rel", DOCUMENT, "relations", "relation_id"),
    Kind("cell", "r", "table", "table_cells", "cell_id", "c", "row and column"),
    # A table row as a citation unit (search hits' cited ids, view_page highlights): all its
    # cells; no view holds it.
    Kind("table_row", "r", "table", None, None, numbers="row"),
    Kind("row_summary", "row", "table", "table_summaries", "summary_id"),
    Kind("column_summary", "col", "table", "table_summaries", "summary_id"),
    Kind("link", "n", "entity", "entity_links", "link_id", numbers="the tree node's ordinal"),
)

BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
# (parent kind, prefix, has a second number) -> kind: what a segment after its parent means.
_BY_SEGMENT: dict[tuple[str | None, str, bool], Kind] = {
    (k.parent, k.prefix, k.second is not None): k for k in KINDS if k.parent
}
assert len(_BY_SEGMENT) == len(KINDS) - 1, "two kinds share a segment form under one parent"

_DOC = re.compile(r"[0-9A-Za-z_]+")
_NUMBER = r"(0|[1-9][0-9]{0,17})"  # canonical: no leading zeros, so parse and build agree
_SEGMENT = re.compile(rf"([a-z]+){_NUMBER}(?:([a-z]+){_NUMBER})?")
# Entity and relation segments before schema version 7 (see the module's docstring).
OLD_PREFIXES = {"entity": "e", "relation": "r"}


@dataclass(frozen=True)
class ParsedId:
    kind: Kind
    parent: str | None  # the parent's id; None for a document
    numbers: tuple[int, ...]  # () for a document, (row, col) for a cell, else one
    doc_id: str


def build(kind: str | Kind, parent: str, *numbers: int) -> str:
    """The id of the ``kind`` item numbered ``numbers`` under ``parent`` (a doc_id for the kinds
    of a document; a table id for cells, rows and summaries; an entity id for links)."""
    k = BY_NAME[kind] if isinstance(kind, str) else kind
    if k.parent is None:
        raise ValueError("a doc_id is made from the file's SHA-256, not built from a parent")
    want = 2 if k.second else 1
    if len(numbers) != want or any(
        isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in numbers
    ):
        raise ValueError(f"a {k.name} id takes {want} non-negative number(s), got {numbers}")
    if k.second:
        return f"{parent}-{k.prefix}{numbers[0]}{k.second}{numbers[1]}"
    return f"{parent}-{k.prefix}{numbers[0]}"


def parse(value: str) -> ParsedId | None:
    """The kind, parent id and numbers of an id, or None if it is no id of any kind."""
    if not isinstance(value, str):
        return None
    doc, *segments = value.split("-")
    if not _DOC.fullmatch(doc):
        return None
    kind, parent, numbers = BY_NAME[DOCUMENT], None, ()
    for n, segment in enumerate(segments):
        found = _SEGMENT.fullmatch(segment)
        if found is None:
            return None
        prefix, first, second_prefix, second = found.groups()
        kind = _BY_SEGMENT.get((kind.name, prefix, second_prefix is not None))
        if kind is None or (second_prefix is not None and second_prefix != kind.second):
            return None
        parent = "-".join([doc, *segments[:n]])
        numbers = (int(first),) if second is None else (int(first), int(second))
    return ParsedId(kind, parent, numbers, doc)


def kind_of(value: str) -> str | None:
    found = parse(value)
    return found.kind.name if found else None


def doc_id_of(value: str) -> str | None:
    found = parse(value)
    return found.doc_id if found else None


def current(value: str, kind: str) -> str | None:
    """Today's id of the ``kind`` item ``value`` names, where the caller knows only a ``kind``
    can be meant: ``value`` itself, or an entity, relation or link id of before schema version 7
    in today's form; None if ``value`` names no such item."""
    found = parse(value)
    if found is not None and found.kind.name == kind:
        return value
    if kind == "link":
        entity, _, node = value.rpartition("-") if isinstance(value, str) else ("", "", "")
        now = current(entity, "entity")
        return current(f"{now}-{node}", "link") if now and now != entity else None
    old = OLD_PREFIXES.get(kind)
    if found is None or old is None or found.kind.parent != DOCUMENT or found.kind.prefix != old:
        return None
    return build(kind, found.parent or "", *found.numbers)


# -- the builders the indexer and tools call ------------------------------------------------------


def page_id(doc_id: str, page_number: int) -> str:
    return build("page", doc_id, page_number)


def section_id(doc_id: str, ordinal: int) -> str:
    return build("section", doc_id, ordinal)


def chunk_id(doc_id: str, ordinal: int) -> str:
    return build("chunk", doc_id, ordinal)


def sentence_id(doc_id: str, ordinal: int) -> str:
    return build("sentence", doc_id, ordinal)


def table_id(doc_id: str, ordinal: int) -> str:
    return build("table", doc_id, ordinal)


def image_id(doc_id: str, ordinal: int) -> str:
    return build("image", doc_id, ordinal)


def equation_id(doc_id: str, ordinal: int) -> str:
    return build("equation", doc_id, ordinal)


def reference_id(doc_id: str, ordinal: int) -> str:
    return build("reference", doc_id, ordinal)


def node_id(doc_id: str, ordinal: int) -> str:
    """A tree node; the document's own node is ordinal 0."""
    return build("node", doc_id, ordinal)


def entity_id(doc_id: str, ordinal: int) -> str:
    return build("entity", doc_id, ordinal)


def relation_id(doc_id: str, ordinal: int) -> str:
    return build("relation", doc_id, ordinal)


def cell_id(table: str, row: int, col: int) -> str:
    return build("cell", table, row, col)


def table_row_id(table: str, row: int) -> str:
    return build("table_row", table, row)


def summary_id(table: str, axis: str, ordinal: int) -> str:
    """A row summary (axis 'row') or a column summary (axis 'col') of a table."""
    kinds = {"row": "row_summary", "col": "column_summary"}
    if axis not in kinds:
        raise ValueError(f"a summary's axis is 'row' or 'col', not {axis!r}")
    return build(kinds[axis], table, ordinal)


def link_id(entity: str, node: str) -> str:
    """An entity's link to a tree node: the entity id with the node's number."""
    found = parse(node)
    if found is None or found.kind.name != "node":
        raise ValueError(f"not a tree node id: {node!r}")
    return build("link", entity, *found.numbers)


def table_row_sql(table_column: str, row_column: str) -> str:
    """SQL giving ``table_row_id`` from a table id column and a row number column."""
    prefix = BY_NAME["table_row"].prefix
    return f"{table_column} || '-{prefix}' || {row_column}"
