"""The entity graph of one document (BookRAG's KG with GT-links), built from its tree nodes.

Walks the tree nodes in document order. Each node gives sentences to ``indexer.entities``:
a text leaf its chunk text, a section its title (acronyms and labels only: a title-case heading
is not a name), a table or figure its caption. Tables and figures are typed entities themselves
("Table 2", "Figure 3", described by their caption) and a table's header cells are ``header``
entities linked to it by ``header_of``, so "Table 2" in the text, the table node and its headers
meet in the graph. Mentions are resolved as they arrive (``indexer.entity_resolution``).

Rows produced (see storage/schema.py): ``entities``; ``relations`` (``co_occurs`` for entities
in the same sentence, ``is_a``, ``cites``, ``mentions`` from a table or figure to the entities
of its caption, ``header_of``), each with its evidence nodes; ``entity_links`` (entity -> tree
node, with the number of mentions there).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from docsym.indexer.entities import Mention, ProperNouns, explicit_relations, extract_mentions
from docsym.indexer.entity_resolution import ResolutionSettings, Resolver
from docsym.language.sentences import split_sentences
from docsym.storage import ids as id_of
from docsym.storage.rows import DocumentRows
from docsym.storage.schema import (
    ChunkRow,
    DocumentRow,
    EntityLinkRow,
    EntityRow,
    ImageRow,
    RelationRow,
    TableCellRow,
    TableRow,
    TreeNodeRow,
)

MAX_PER_SENTENCE = 8  # co-occurrence pairs come from the first 8 entities of a sentence
MAX_EVIDENCE_NODES = 20
EVIDENCE_CHARS = 300
MAX_HEADER_CHARS = 80


@dataclass
class _Relation:
    weight: int = 0
    nodes: list[str] = field(default_factory=list)
    evidence: str = ""
    page: int | None = None


@dataclass
class GraphBuild:
    rows: DocumentRows  # entities, relations, entity_links
    stats: dict[str, int]


def build_graph(
    doc_id: str,
    rows: DocumentRows,
    settings: ResolutionSettings | None = None,
) -> GraphBuild:
    """Entities, relations and GT-links of one document from its view rows and tree nodes."""
    units = list(_units(rows))
    authors = frozenset(a for d in rows.of(DocumentRow) for a in d.authors or [])
    proper = ProperNouns(s for _, _, sentences, _ in units for s in sentences)
    found = [
        [extract_mentions(s, proper, authors) for s in sentences] for _, _, sentences, _ in units
    ]
    builder = _Builder(doc_id, Resolver(settings or ResolutionSettings()))
    for (node, kind, sentences, extra), node_mentions in zip(units, found, strict=True):
        for sentence, mentions in zip(sentences, node_mentions, strict=True):
            builder.sentence(node, kind, sentence, mentions)
        if extra:
            builder.typed_node(node, extra)
    return GraphBuild(builder.rows(), builder.stats())


@dataclass(frozen=True)
class _Captioned:
    """What a table or figure node adds as an entity of its own."""

    label: str
    type: str  # "table" or "figure"
    caption: str
    headers: list[str]


def _units(rows: DocumentRows):
    """(tree node, kind of text, sentences, typed-node facts) in document order."""
    chunks = {c.chunk_id: c for c in rows.of(ChunkRow)}
    captioned: dict[str, TableRow | ImageRow] = {t.table_id: t for t in rows.of(TableRow)}
    captioned |= {f.image_id: f for f in rows.of(ImageRow)}
    headers = _header_texts(rows.of(TableCellRow))
    for node in rows.of(TreeNodeRow):
        if node.node_type == "text":
            chunk = chunks.get(node.ref_id or "")
            yield node, "text", split_sentences(chunk.text or "") if chunk else [], None
        elif node.node_type == "section":
            yield node, "title", [node.title] if node.title else [], None
        elif node.node_type in ("table", "image"):
            row = captioned.get(node.ref_id or "")
            caption = (row.caption if row else None) or ""
            extra = _Captioned(
                label=(row.label if row else None) or _default_label(node.node_type, row),
                type="table" if node.node_type == "table" else "figure",
                caption=caption,
                headers=headers.get(node.ref_id or "", []),
            )
            yield node, "caption", split_sentences(caption) if caption else [], extra


def _header_texts(cells: list[TableCellRow]) -> dict[str, list[str]]:
    """table_id -> the distinct texts of its header cells (short enough to be names)."""
    headers: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        if (cell.is_col_header or cell.is_row_header) and cell.text:
            text = " ".join(cell.text.split())
            if 1 < len(text) <= MAX_HEADER_CHARS and text not in headers[cell.table_id]:
                headers[cell.table_id].append(text)
    return headers


def _default_label(node_type: str, row: TableRow | ImageRow | None) -> str:
    word = "Table" if node_type == "table" else "Figure"
    page = row.page_number if row else None
    ordinal = (row.ordinal or 0) if row else 0
    return f"{word} (unlabelled, page {page}, #{ordinal + 1})"


class _Builder:
    def __init__(self, doc_id: str, resolver: Resolver) -> None:
        self.doc_id = doc_id
        self.resolver = resolver
        self.links: dict[tuple[int, str], int] = Counter()
        self.relations: dict[tuple[int, int, str], _Relation] = defaultdict(_Relation)
        self.first_page: dict[int, int | None] = {}
        self.description: dict[int, str] = {}
        self.pages: dict[str, int | None] = {}
        self.mention_total = 0
        self.node_slots: dict[str, list[int]] = defaultdict(list)

    def sentence(self, node: TreeNodeRow, kind: str, sentence: str, found: list[Mention]) -> None:
        if kind == "title":
            found = [m for m in found if m.kind in ("acronym", "label")]
        slots: list[int] = []
        for mention in found:
            slot = self.resolver.resolve(
                mention.name, mention.entity_type, mention.kind, mention.alias
            )
            self._link(slot, node, sentence)
            if slot not in slots:
                slots.append(slot)
        for a, b in combinations(slots[:MAX_PER_SENTENCE], 2):
            self._relate(a, b, "co_occurs", node, sentence)
        for relation in explicit_relations(sentence, found):
            source = self.resolver.resolve(
                relation.source.name, relation.source.entity_type, relation.source.kind
            )
            target = self.resolver.resolve(relation.target_name, relation.target_type, "concept")
            if relation.relation == "is_a":
                self._link(target, node, sentence)
            self._relate(source, target, relation.relation, node, sentence)

    def typed_node(self, node: TreeNodeRow, extra: _Captioned) -> None:
        """A table or figure as an entity of its own, with its caption's entities and headers."""
        slot = self.resolver.resolve(extra.label, extra.type, "label")
        self.description.setdefault(slot, extra.caption or extra.label)
        self._link(slot, node, extra.caption)
        for other in list(self.node_slots[node.node_id]):
            if self.resolver.root(other) != self.resolver.root(slot):
                self._relate(slot, other, "mentions", node, extra.caption)
        for header in extra.headers:
            header_slot = self.resolver.resolve(header, "header", "header")
            self._link(header_slot, node, extra.caption)
            self._relate(header_slot, slot, "header_of", node, extra.caption)

    def _link(self, slot: int, node: TreeNodeRow, sentence: str) -> None:
        if (slot, node.node_id) not in self.links:
            self.node_slots[node.node_id].append(slot)
        self.links[(slot, node.node_id)] += 1
        self.pages[node.node_id] = node.page_start
        self.first_page.setdefault(slot, node.page_start)
        if sentence:
            self.description.setdefault(slot, sentence[:EVIDENCE_CHARS])
        self.mention_total += 1

    def _relate(self, a: int, b: int, relation: str, node: TreeNodeRow, sentence: str) -> None:
        if relation == "co_occurs" and b < a:
            a, b = b, a
        record = self.relations[(a, b, relation)]
        record.weight += 1
        if node.node_id not in record.nodes and len(record.nodes) < MAX_EVIDENCE_NODES:
            record.nodes.append(node.node_id)
        if not record.evidence:
            record.evidence = sentence[:EVIDENCE_CHARS]
            record.page = node.page_start

    # -- rows ----------------------------------------------------------------------------------
    def rows(self) -> DocumentRows:
        resolver = self.resolver
        roots = resolver.roots()
        ids = {slot: id_of.entity_id(self.doc_id, n) for n, slot in enumerate(roots)}
        members: dict[int, list[int]] = defaultdict(list)
        for s in range(len(resolver.entities)):
            members[resolver.root(s)].append(s)
        link_counts: dict[tuple[int, str], int] = Counter()
        for (slot, node_id), count in self.links.items():
            link_counts[(resolver.root(slot), node_id)] += count
        mentions: Counter[int] = Counter()
        nodes: Counter[int] = Counter()
        for (slot, _), count in link_counts.items():
            mentions[slot] += count
            nodes[slot] += 1
        entities = [
            EntityRow(
                entity_id=ids[slot],
                doc_id=self.doc_id,
                name=resolver.entities[slot].name,
                entity_type=resolver.entities[slot].entity_type,
                aliases=resolver.entities[slot].aliases,
                description=self._description(slot, members[slot]),
                mention_count=mentions[slot],
                node_count=nodes[slot],
                page_number=self._first_page(members[slot]),
            )
            for slot in roots
        ]
        links = [
            EntityLinkRow(
                link_id=id_of.link_id(ids[slot], node_id),
                entity_id=ids[slot],
                node_id=node_id,
                doc_id=self.doc_id,
                mention_count=count,
                page_number=self.pages.get(node_id),
            )
            for (slot, node_id), count in link_counts.items()
        ]
        return DocumentRows([*entities, *self._relation_rows(ids), *links])

    def _relation_rows(self, ids: dict[int, str]) -> list[RelationRow]:
        merged: dict[tuple[int, int, str], _Relation] = {}
        for (a, b, relation), record in self.relations.items():
            a, b = self.resolver.root(a), self.resolver.root(b)
            if a == b:
                continue
            if relation == "co_occurs" and b < a:
                a, b = b, a
            into = merged.setdefault((a, b, relation), _Relation())
            into.weight += record.weight
            into.nodes += [n for n in record.nodes if n not in into.nodes]
            into.nodes = into.nodes[:MAX_EVIDENCE_NODES]
            if not into.evidence:
                into.evidence, into.page = record.evidence, record.page
        return [
            RelationRow(
                relation_id=id_of.relation_id(self.doc_id, n),
                doc_id=self.doc_id,
                source_id=ids[a],
                target_id=ids[b],
                relation=relation,
                weight=record.weight,
                evidence_node_ids=record.nodes,
                evidence=record.evidence or None,
                page_number=record.page,
            )
            for n, ((a, b, relation), record) in enumerate(merged.items())
        ]

    def _description(self, slot: int, members: list[int]) -> str | None:
        entity = self.resolver.entities[slot]
        if entity.long_form:
            short = [n for n in entity.names if n != entity.long_form]
            if short:
                return f"{entity.long_form} ({short[0]})"
        return next((self.description[s] for s in members if s in self.description), None)

    def _first_page(self, members: list[int]) -> int | None:
        pages = [p for s in members if (p := self.first_page.get(s)) is not None]
        return min(pages) if pages else None

    def stats(self) -> dict[str, int]:
        return {
            "entities": len(self.resolver.roots()),
            "mentions": self.mention_total,
            **{f"merged_{k}": v for k, v in self.resolver.merges.items()},
        }
