"""``find_entities``: BookRAG's Select_by_Entity. Entities by name or alias (exact, fuzzy and
semantic), each with the sections it is linked to through the GT-links, so the next step can
select those sections' subtrees or rank their nodes."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from docsym.language.names import normalise_name
from docsym.storage.store import Store
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.evidence import Evidence, Target, find_evidence
from docsym.tools.graph import EntityGraph, entity_graph
from docsym.tools.question import read_question
from docsym.tools.results import ToolResult, markdown_table, page_citation, with_note
from docsym.tools.spec import Arguments, Name, ToolSpec

MAX_LIMIT = 50
SECTIONS_PER_ENTITY = 5
FUZZY_MIN = 0.86  # Jaro-Winkler similarity of names for a fuzzy match
SEMANTIC_MIN = 0.55  # cosine similarity of MiniLM name vectors for a semantic match
MENTION_CHARS = 300


class LinkedSection(BaseModel):
    node_id: str
    section_id: str | None
    title: str | None
    page_start: int | None
    page_end: int | None
    mentions: int = Field(description="mentions of the entity in this section's own nodes")


class EntityHit(BaseModel):
    entity_id: str
    doc_id: str
    name: str
    entity_type: str
    aliases: list[str]
    description: str | None
    mention_count: int
    score: float
    matched: str = Field(description="exact, alias, fuzzy or semantic")
    sections: list[LinkedSection]
    neighbours: list[str] = Field(description="most strongly related entities (names)")
    mention: Evidence | None = Field(
        default=None, description="its first mention: page, printed label, bbox and sentence"
    )


class EntityResult(ToolResult):
    query: str
    hits: list[EntityHit]
    note: str | None = None

    def to_markdown(self) -> str:
        rows = [
            [
                f"{hit.name} ({hit.entity_id}, {hit.matched})",
                hit.entity_type,
                ", ".join(hit.aliases[:5]),
                hit.doc_id,
                hit.mention_count,
                "; ".join(_section_label(s) for s in hit.sections),
                _mention_label(hit.mention),
            ]
            for hit in self.hits
        ]
        header = [
            "entity",
            "type",
            "aliases",
            "doc_id",
            "mentions",
            "sections (node: pages)",
            "first mention (page, bbox)",
        ]
        return with_note(markdown_table(header, rows), self.note)


def _mention_label(mention: Evidence | None) -> str:
    if mention is None or mention.page_number is None:
        return ""
    return f"p{page_citation(mention.page_number, mention.page_label)} {mention.bbox or ''}"


def _section_label(section: LinkedSection) -> str:
    pages = f": p{section.page_start}-{section.page_end})" if section.page_start else ")"
    return f"{section.title or section.node_id} ({section.node_id}{pages}"


def find_entities(
    store: Store,
    query: str,
    doc_id: str | None = None,
    entity_types: list[str] | None = None,
    limit: int = 10,
) -> EntityResult:
    if not query.strip():
        raise ToolError("query is empty: give an entity name, e.g. 'BM25' or 'Natural Questions'")
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    con = store.sql()
    if (
        doc_id
        and con.execute("SELECT 1 FROM documents WHERE doc_id = ?", [doc_id]).fetchone() is None
    ):
        raise NotFoundError(f"no document {doc_id!r}; call list_documents for the doc_ids")
    graph = entity_graph(store)
    scores = _lexical(graph, query, doc_id)
    for entity_id, similarity in _semantic(store, query, doc_id):
        if similarity >= SEMANTIC_MIN and entity_id not in scores:
            scores[entity_id] = (similarity, "semantic")
    if entity_types:
        scores = {i: s for i, s in scores.items() if graph.entities[i].entity_type in entity_types}
    ranked = sorted(
        scores.items(), key=lambda item: (-item[1][0], -graph.entities[item[0]].mention_count)
    )[:limit]
    descriptions = dict(
        con.execute(
            "SELECT entity_id, description FROM entities WHERE entity_id = ANY(?)",
            [[entity_id for entity_id, _ in ranked]],
        ).fetchall()
    )
    hits = [
        _hit(con, graph, entity_id, score, how, descriptions.get(entity_id))
        for entity_id, (score, how) in ranked
    ]
    _first_mentions(store, hits)
    note = None
    if not hits:
        note = "No entity matches; try another spelling, hybrid_search, or drop the doc_id."
    return EntityResult(query=query, hits=hits, note=note)


def _lexical(graph: EntityGraph, query: str, doc_id: str | None) -> dict:
    key = normalise_name(query)
    scores: dict[str, tuple[float, str]] = {}
    for entity_id in graph.by_key.get(key, []):
        info = graph.entities[entity_id]
        if doc_id is None or info.doc_id == doc_id:
            exact = normalise_name(info.name) == key
            scores[entity_id] = (1.0 if exact else 0.98, "exact" if exact else "alias")
    for entity_id, similarity in _fuzzy(graph, key, doc_id):
        if entity_id not in scores:
            scores[entity_id] = (0.9 * (similarity or FUZZY_MIN), "fuzzy")
    return scores


def _fuzzy(graph: EntityGraph, key: str, doc_id: str | None) -> list[tuple[str, float]]:
    """Entities whose name or an alias is spelt like ``key`` (Jaro-Winkler), or whose name
    contains it: (entity_id, best similarity). Every spelling is scored in one rapidfuzz call."""
    ids = [i for i, info in graph.entities.items() if doc_id is None or info.doc_id == doc_id]
    names = [graph.entities[i].name.lower() for i in ids]
    spellings, owners = list(names), list(range(len(ids)))
    for n, entity_id in enumerate(ids):
        for alias in graph.entities[entity_id].aliases:
            spellings.append(alias.lower())
            owners.append(n)
    if not spellings:
        return []
    scores = process.cdist([key], spellings, scorer=JaroWinkler.similarity, dtype=np.float64)[0]
    best = np.zeros(len(ids))
    np.maximum.at(best, np.array(owners), scores)
    return [
        (entity_id, float(best[n]))
        for n, entity_id in enumerate(ids)
        if best[n] >= FUZZY_MIN or key in names[n]
    ]


def _semantic(store: Store, query: str, doc_id: str | None) -> list[tuple[str, float]]:
    collections = store.collections()
    if "minilm" not in collections:
        return []
    where = "e.table_name = 'entities'" + (" AND e.doc_id = ?" if doc_id else "")
    params = [doc_id] if doc_id else []
    vector = store.encoder_for("minilm").encode_question(query)
    found = store.dense("minilm", vector, where, params, limit=20)
    entries = store.entries([i for i, _ in found])
    return [(entries[i].primary_key, score) for i, score in found if i in entries]


def _first_mentions(store: Store, hits: list[EntityHit]) -> None:
    """Each entity's first mention in document order, cited down to the sentence."""
    con = store.sql()
    for hit in hits:
        first = con.execute(
            "SELECT n.ref_table, n.ref_id, n.page_start FROM entity_links l "
            "JOIN tree_nodes n ON n.node_id = l.node_id WHERE l.entity_id = ? "
            "ORDER BY n.ordinal LIMIT 1",
            [hit.entity_id],
        ).fetchone()
        if first is None:
            continue
        target = Target(first[0], "", first[1], hit.doc_id, first[2])
        question = read_question(store, hit.name)
        (hit.mention,) = find_evidence(store, question, [target], MENTION_CHARS)


def _hit(
    con, graph: EntityGraph, entity_id: str, score: float, how: str, description: str | None
) -> EntityHit:
    info = graph.entities[entity_id]
    sections = con.execute(
        """
        SELECT s.node_id, s.ref_id, s.title, s.page_start, s.page_end, sum(l.mention_count) AS m
        FROM entity_links l
        JOIN tree_nodes n ON n.node_id = l.node_id
        JOIN tree_nodes s ON s.node_id = CASE WHEN n.node_type IN ('section', 'document')
                                              THEN n.node_id ELSE n.parent_id END
        WHERE l.entity_id = ?
        GROUP BY s.node_id, s.ref_id, s.title, s.page_start, s.page_end
        ORDER BY m DESC, s.page_start, s.node_id LIMIT ?
        """,
        [entity_id, SECTIONS_PER_ENTITY],
    ).fetchall()
    linked = [
        LinkedSection(
            node_id=node_id,
            section_id=ref_id if ref_id != info.doc_id else None,
            title=title,
            page_start=start,
            page_end=end,
            mentions=int(m),
        )
        for node_id, ref_id, title, start, end, m in sections
    ]
    # Ties broken by id: the same order whatever order the store returned the relations in.
    neighbours = sorted(
        graph.graph[entity_id].items(), key=lambda item: (-item[1]["weight"], item[0])
    )[:5]
    return EntityHit(
        entity_id=entity_id,
        doc_id=info.doc_id,
        name=info.name,
        entity_type=info.entity_type,
        aliases=list(info.aliases),
        description=description,
        mention_count=info.mention_count,
        score=round(score, 4),
        matched=how,
        sections=linked,
        neighbours=[graph.entities[n].name for n, _ in neighbours if n in graph.entities],
    )


ENTITY_TYPES = (
    "method, dataset, metric, software, organisation, person, term, acronym, name, table, "
    "figure, header, citation, concept"
)


class FindEntitiesArgs(Arguments):
    query: Annotated[str, Field(description="An entity name, e.g. 'DPR'", max_length=200)]
    doc_id: Annotated[str | None, Field(description="From list_documents.", max_length=64)] = None
    entity_types: Annotated[
        list[Name] | None, Field(description=f"Some of: {ENTITY_TYPES}", max_length=14)
    ] = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10


FIND_ENTITIES = ToolSpec(
    name="find_entities",
    summary="entities (methods, datasets, acronyms ...) by name or alias, with sections.",
    description=(
        "Entities (methods, datasets, metrics, organisations, people, acronyms, defined "
        "terms, tables, figures, table headers, citations) by name or alias: exact, fuzzy "
        "and semantic matches, each with the sections it is linked to (node_id, title, "
        "pages) and its strongest neighbours in the entity graph. Use it to find where a "
        "thing is discussed, then select_subtree or rank_nodes on those sections."
    ),
    arguments=FindEntitiesArgs,
    function=find_entities,
)
