"""``find_entities``: BookRAG's Select_by_Entity. Entities by name or alias (exact, fuzzy and
semantic), each with the sections it is linked to through the GT-links, so the next step can
select those sections' subtrees or rank their nodes."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from pydantic import BaseModel, Field

from docsym.storage.store import Store
from docsym.tools.entity_names import LibraryRead, NameMatch, match_names, same_name_weights
from docsym.tools.errors import NotFoundError, ToolError
from docsym.tools.evidence import Evidence, Target, find_evidence
from docsym.tools.graph import ENTITY_COLUMNS, EntityInfo, entity_info
from docsym.tools.question import read_question
from docsym.tools.results import ToolResult, markdown_table, page_citation, with_note
from docsym.tools.spec import Arguments, Name, ToolSpec

MAX_LIMIT = 50
SECTIONS_PER_ENTITY = 5
NEIGHBOURS = 5
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
    enough = partial(_exact_enough, limit=limit, entity_types=entity_types)
    search = match_names(store, query, doc_id, enough)
    found = {m.info.entity_id: m for m in search.matches}
    infos = {entity_id: m.info for entity_id, m in found.items()}
    scores = {entity_id: (m.score, m.how) for entity_id, m in found.items()}
    semantic = [
        (entity_id, similarity)
        for entity_id, similarity in ([] if search.complete else _semantic(store, query, doc_id))
        if similarity >= SEMANTIC_MIN and entity_id not in scores
    ]
    infos.update(_entities(con, [entity_id for entity_id, _ in semantic]))
    for entity_id, similarity in semantic:
        scores[entity_id] = (similarity, "semantic")
    scores = {i: s for i, s in scores.items() if _of_types(infos[i], entity_types)}
    ranked = sorted(scores.items(), key=lambda item: (-item[1][0], -infos[item[0]].mention_count))
    ranked = ranked[:limit]
    descriptions = dict(
        con.execute(
            "SELECT entity_id, description FROM entities WHERE entity_id = ANY(?)",
            [[entity_id for entity_id, _ in ranked]],
        ).fetchall()
    )
    neighbours = _neighbours(store, [infos[entity_id] for entity_id, _ in ranked], search.read)
    hits = [
        _hit(con, infos[entity_id], (score, how), descriptions.get(entity_id), neighbours)
        for entity_id, (score, how) in ranked
    ]
    _first_mentions(store, hits)
    note = None
    if not hits:
        note = "No entity matches; try another spelling, hybrid_search, or drop the doc_id."
    return EntityResult(query=query, hits=hits, note=note)


def _exact_enough(named: list[NameMatch], limit: int, entity_types: list[str] | None) -> bool:
    """``limit`` exact names of the types asked for: they are the hits, as nothing else scores
    1.0 (an alias 0.98, a spelling at most 0.9; a semantic match only with the name's vector)."""
    exact = [m for m in named if m.how == "exact" and _of_types(m.info, entity_types)]
    return len(exact) >= limit


def _of_types(info: EntityInfo, entity_types: list[str] | None) -> bool:
    return not entity_types or info.entity_type in entity_types


def _entities(con, entity_ids: list[str]) -> dict[str, EntityInfo]:
    rows = con.execute(
        f"SELECT {ENTITY_COLUMNS} FROM entities WHERE entity_id = ANY(?)", [entity_ids]
    ).fetchall()
    return {row[0]: entity_info(row) for row in rows}


def _neighbours(
    store: Store, entities: list[EntityInfo], read: LibraryRead | None
) -> dict[str, list[str]]:
    """entity id -> the names of its most strongly related entities: its relations in its
    document (both ways summed) and its links to entities of the same name in other documents,
    ties broken by id (the same order whatever order the store returned the relations in)."""
    weights = same_name_weights(store, entities, read)
    ids = [info.entity_id for info in entities]
    # Two scans, each of one column against the list: DuckDB tests neither side of an OR
    # inside its scan.
    relations = store.sql().execute(
        "SELECT source_id, target_id, sum(weight) FROM ("
        " SELECT source_id, target_id, weight FROM relations WHERE source_id = ANY(?)"
        " UNION ALL SELECT source_id, target_id, weight FROM relations"
        " WHERE target_id = ANY(?) AND NOT source_id = ANY(?)"
        ") AS linked GROUP BY source_id, target_id",
        [ids, ids, ids],
    )
    for source, target, weight in relations.fetchall():
        for entity_id, other in {(source, target), (target, source)}:
            if entity_id in weights:
                weights[entity_id][other] = weights[entity_id].get(other, 0.0) + float(weight)
    strongest = {
        entity_id: sorted(found.items(), key=lambda item: (-item[1], item[0]))[:NEIGHBOURS]
        for entity_id, found in weights.items()
    }
    shown = list({other for top in strongest.values() for other, _ in top})
    names = {entity_id: info.name for entity_id, info in _entities(store.sql(), shown).items()}
    return {
        entity_id: [names[other] for other, _ in top if other in names]
        for entity_id, top in strongest.items()
    }


def _semantic(store: Store, query: str, doc_id: str | None) -> list[tuple[str, float]]:
    collections = store.collections()
    if "minilm" not in collections:
        return []
    where = "e.table_name = 'entities'" + (" AND e.doc_id = ?" if doc_id else "")
    params = [doc_id] if doc_id else []
    vector = store.encoder_for("minilm").encode_question(query)
    # Every entity row: each document's entity of a name is a hit of its own.
    found = store.dense("minilm", vector, where, params, limit=20, per_text=False)
    entries = store.entries([i for i, _ in found])
    return [(entries[i].primary_key, score) for i, score in found if i in entries]


def _first_mentions(store: Store, hits: list[EntityHit]) -> None:
    """Each entity's first mention in document order, cited down to the sentence."""
    if not hits:
        return
    # One query for every hit: each entity's links are a scan of the whole link table.
    rows = store.sql().execute(
        "SELECT entity_id, ref_table, ref_id, page_start FROM ("
        " SELECT l.entity_id, n.ref_table, n.ref_id, n.page_start,"
        " row_number() OVER (PARTITION BY l.entity_id ORDER BY n.ordinal) AS place"
        " FROM entity_links l JOIN tree_nodes n ON n.node_id = l.node_id"
        " WHERE l.entity_id = ANY(?)"
        ") AS ranked WHERE place = 1",
        [[hit.entity_id for hit in hits]],
    )
    firsts = {entity_id: rest for entity_id, *rest in rows.fetchall()}
    for hit in hits:
        first = firsts.get(hit.entity_id)
        if first is None:
            continue
        target = Target(first[0], "", first[1], hit.doc_id, first[2])
        question = read_question(store, hit.name)
        (hit.mention,) = find_evidence(store, question, [target], MENTION_CHARS)


def _hit(
    con,
    info: EntityInfo,
    match: tuple[float, str],
    description: str | None,
    neighbours: dict[str, list[str]],
) -> EntityHit:
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
        [info.entity_id, SECTIONS_PER_ENTITY],
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
    score, how = match
    return EntityHit(
        entity_id=info.entity_id,
        doc_id=info.doc_id,
        name=info.name,
        entity_type=info.entity_type,
        aliases=list(info.aliases),
        description=description,
        mention_count=info.mention_count,
        score=round(score, 4),
        matched=how,
        sections=linked,
        neighbours=neighbours[info.entity_id],
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
