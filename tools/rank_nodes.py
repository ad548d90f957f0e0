"""``rank_nodes``: BookRAG's Graph_Reasoning, Text_Reasoning and Skyline_Ranker over a scope.

The scope is a document, or one subtree of it (a section or node). Each node of the scope gets a
score per criterion:

- ``graph``: personalized PageRank on the entity subgraph of the scope, seeded by the entities the
  question names (exact names and aliases among its word n-grams, weighted by how specific they
  are, plus the entities most similar to the question by embedding), mapped to tree nodes through
  the GT-links: a node scores the PageRank mass of the entities it mentions;
- ``text``: cosine similarity of the question to the node's vector (chunk text, table caption or
  summary, figure caption, section title or pooled content);
- ``lexical``: BM25 of the node's text for the question (optional third criterion).

Skyline_Ranker keeps the Pareto frontier: the nodes no other node beats on every chosen criterion.
Its size follows the data rather than a fixed k; ``layers`` adds the next frontiers (the frontier
of what is left) when more context is wanted. Every returned node carries its scores, its rank on
each criterion and the criteria on which it is the best of its layer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from docsym.language.names import normalise_name
from docsym.language.terms import surface_words
from docsym.storage.entries import views_sql
from docsym.storage.schema import NODE_TYPES
from docsym.storage.store import Store
from docsym.tools import results
from docsym.tools.errors import ToolError
from docsym.tools.evidence import Target, find_evidence
from docsym.tools.graph import DocumentGraph, document_graph, personalized_pagerank
from docsym.tools.question import read_question
from docsym.tools.results import ToolResult, markdown_table, page_citation, trimmed, with_note
from docsym.tools.spec import Arguments, Name, ToolSpec
from docsym.tools.subtree import (
    SUBTREE,
    DocId,
    NodeId,
    NodeTypes,
    Section,
    SubtreeNode,
    fill_from_views,
    resolve_root,
    walk_params,
)

CRITERIA = ("graph", "text", "lexical")
DEFAULT_NODE_TYPES = ("text", "table", "image")
MAX_LIMIT = 50
MAX_LAYERS = 5
MAX_NGRAM = 6
SEMANTIC_SEEDS = 5
SEMANTIC_SEED_MIN = 0.5
DAMPING = 0.85
ELITE = 32  # strong points the skyline checks everyone against first
NODE_TEXT = 400  # excerpt budget per node
# The views whose vectors stand for a node of each kind (the best of them counts).
NODE_VIEWS = {
    "chunks": ("text",),
    "tables": ("caption", "summary"),
    "images": ("caption", "summary"),
    "sections": ("title", "content"),
    "equations": ("text",),
}


class RankedNode(SubtreeNode):
    scores: dict[str, float] = Field(description="criterion -> score (graph, text, lexical)")
    ranks: dict[str, int] = Field(
        description="criterion -> rank of the node in the scope (1 = best)"
    )
    layer: int = Field(description="1 = on the Pareto frontier; 2 = frontier once layer 1 removed")
    best_on: list[str] = Field(description="criteria on which it is the best of its layer")
    why: str


class RankResult(ToolResult):
    query: str
    doc_id: str
    scope_node_id: str
    criteria: list[str]
    seeds: list[str] = Field(description="entities of the question that seeded the graph walk")
    scope_nodes: int
    nodes: list[RankedNode]
    note: str | None = None

    def to_markdown(self) -> str:
        head = (
            f"{len(self.nodes)} of {self.scope_nodes} nodes under {self.scope_node_id}; "
            f"seeds: {', '.join(self.seeds[:8]) or 'none'}"
        )
        rows = [
            [
                n.node_id,
                n.node_type,
                page_citation(n.page_start, n.page_label),
                f"{n.ref_table}:{n.ref_id}",
                ", ".join(f"{k} {v:.3f}" for k, v in n.scores.items()),
                n.why,
                trimmed(n.text or n.title),
            ]
            for n in self.nodes
        ]
        header = ["node_id", "type", "page", "ref", "scores", "why", "text"]
        return with_note(f"{head}\n\n{markdown_table(header, rows)}", self.note)


def rank_nodes(
    store: Store,
    query: str,
    doc_id: str,
    section: str | None = None,
    node_id: str | None = None,
    criteria: list[str] | None = None,
    node_types: list[str] | None = None,
    layers: int = 1,
    limit: int = 10,
) -> RankResult:
    chosen = _check(query, criteria, node_types, layers, limit)
    con = store.sql()
    root_id = resolve_root(con, doc_id, section, node_id)
    scope = _scope_nodes(con, doc_id, root_id, list(node_types or DEFAULT_NODE_TYPES))
    if not scope:
        raise ToolError(
            f"no nodes of types {node_types or list(DEFAULT_NODE_TYPES)} under {root_id}"
        )
    graph = document_graph(store, doc_id)
    vector = None
    if "text" in chosen or "graph" in chosen:
        vector = store.encoder_for("minilm").encode_question(query)
    seeds = _seeds(store, graph, query, vector) if "graph" in chosen else {}
    scores = np.zeros((len(scope), len(chosen)), dtype=np.float64)
    for column, criterion in enumerate(chosen):
        if criterion == "graph":
            scores[:, column] = _graph_scores(graph, scope, seeds)
        elif criterion == "text":
            scores[:, column] = _text_scores(store, scope, doc_id, vector)
        else:
            scores[:, column] = _lexical_scores(store, scope, doc_id, query)
    picked = _skyline_layers(scores, layers)[:limit]
    nodes = _ranked_nodes(scope, scores, chosen, picked)
    fill_from_views(store, nodes)
    _cite(store, query, doc_id, nodes)
    note = None
    if "graph" in chosen and not seeds:
        note = "No entity of the question was found in this scope; graph scores are all 0."
    return RankResult(
        query=query,
        doc_id=doc_id,
        scope_node_id=root_id,
        criteria=chosen,
        seeds=[graph.entities[e].name for e in sorted(seeds, key=lambda e: -seeds[e])],
        scope_nodes=len(scope),
        nodes=nodes,
        note=note,
    )


def _check(query, criteria, node_types, layers: int, limit: int) -> list[str]:
    if not query or not query.strip():
        raise ToolError("query is empty: give the question or the words to rank nodes by")
    chosen = list(dict.fromkeys(criteria or ["graph", "text"]))
    unknown = set(chosen) - set(CRITERIA)
    if unknown or not chosen:
        raise ToolError(f"criteria must be some of {list(CRITERIA)}, got {criteria}")
    bad_types = set(node_types or ()) - set(NODE_TYPES)
    if bad_types:
        raise ToolError(f"unknown node_types {sorted(bad_types)}; use some of {list(NODE_TYPES)}")
    if not 1 <= layers <= MAX_LAYERS:
        raise ToolError(f"layers must be between 1 and {MAX_LAYERS}, got {layers}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    return chosen


def _scope_nodes(con, doc_id: str, root_id: str, node_types: list[str]) -> list[tuple]:
    """(node_id, node_type, depth, title, page_start, page_end, ref_table, ref_id) in order."""
    return con.execute(
        f"""
        {SUBTREE}
        SELECT t.node_id, t.node_type, t.depth, t.title, t.page_start, t.page_end,
               t.ref_table, t.ref_id
        FROM tree_nodes t JOIN sub USING (node_id)
        WHERE t.doc_id = ? AND t.node_type IN ({", ".join("?" * len(node_types))})
        ORDER BY t.ordinal
        """,
        [*walk_params(root_id, doc_id), doc_id, *node_types],
    ).fetchall()


# -- graph reasoning ----------------------------------------------------------------------------
def _seeds(
    store: Store, graph: DocumentGraph, query: str, vector: np.ndarray | None
) -> dict[str, float]:
    """Entities of the document named by the question, weighted by specificity or similarity."""
    words = [match.group() for match in surface_words(query)]
    in_doc = graph.entities
    nodes_in_doc = max(1, sum(info.node_count for info in in_doc.values()))
    seeds: dict[str, float] = {}
    for n in range(1, MAX_NGRAM + 1):
        for start in range(len(words) - n + 1):
            key = normalise_name(" ".join(words[start : start + n]))
            for entity_id in graph.by_key.get(key, ()):
                if entity_id in in_doc:
                    count = max(1, graph.entities[entity_id].node_count)
                    seeds[entity_id] = max(
                        seeds.get(entity_id, 0), math.log(1 + nodes_in_doc / count)
                    )
    if vector is not None and "minilm" in store.collections():
        entries = _doc_entries(store, graph.doc_id)
        similarities = store.similarities("minilm", vector, entries.entity_ids)
        top = max(seeds.values(), default=1.0)
        for n in np.argsort(-similarities)[:SEMANTIC_SEEDS]:
            entity_id = entries.entity_keys[n]
            if entity_id in in_doc and similarities[n] >= SEMANTIC_SEED_MIN:
                seeds[entity_id] = max(seeds.get(entity_id, 0), float(similarities[n]) * top * 0.5)
    return seeds


def _graph_scores(graph: DocumentGraph, scope: list[tuple], seeds: dict[str, float]) -> np.ndarray:
    scores = np.zeros(len(scope))
    positions, adjacency = graph.positions, graph.adjacency
    node_rows, links = graph.node_rows, graph.links
    in_scope = [(n, node_rows[row[0]]) for n, row in enumerate(scope) if row[0] in node_rows]
    if not in_scope:
        return scores
    scope_links = links[[r for _, r in in_scope]]
    linked = np.unique(scope_links.indices)  # entities mentioned inside the scope
    personal = np.zeros(len(linked))
    local = {int(p): n for n, p in enumerate(linked)}
    for entity_id, weight in seeds.items():
        if positions.get(entity_id) in local:
            personal[local[positions[entity_id]]] = weight
    if not personal.any():
        return scores
    rank = personalized_pagerank(adjacency[linked][:, linked], personal, DAMPING)
    scores[[n for n, _ in in_scope]] = scope_links[:, linked] @ rank
    return scores


# -- text reasoning -----------------------------------------------------------------------------
@dataclass(frozen=True)
class _DocEntries:
    """A document's search entries that stand for tree nodes, and for entities (kept while the
    document is unchanged, so a query needs no lookup of entry ids)."""

    node_ids: np.ndarray  # entry ids of the NODE_VIEWS entries
    node_rows: list[tuple[str, str]]  # (table_name, primary_key) of each
    entity_ids: np.ndarray  # entry ids of entities.name
    entity_keys: list[str]  # entity_id of each


def _doc_entries(store: Store, doc_id: str) -> _DocEntries:
    return store.per_document("rank-nodes-entries", doc_id, _read_doc_entries)


def _read_doc_entries(store: Store, doc_id: str) -> _DocEntries:
    # The document's entries in one query by document, split here: asked for its entity
    # entries, SQLite searched them by view, every entity entry of the library.
    entries = sorted(store.entry_keys("e.doc_id = ?", [doc_id]).items())
    views = {(t, c) for t, columns in NODE_VIEWS.items() for c in columns}
    nodes = [(i, key) for i, key in entries if key[:2] in views]
    entities = [(i, key) for i, key in entries if key[0] == "entities"]
    return _DocEntries(
        node_ids=np.array([i for i, _ in nodes], dtype=np.int64),
        node_rows=[(t, k) for _, (t, _, k) in nodes],
        entity_ids=np.array([i for i, _ in entities], dtype=np.int64),
        entity_keys=[k for _, (_, _, k) in entities],
    )


def _view_where(doc_id: str) -> tuple[str, list]:
    views, params = views_sql([(t, c) for t, columns in NODE_VIEWS.items() for c in columns])
    return f"e.doc_id = ? AND {views}", [doc_id, *params]


def _by_row(scope: list[tuple]) -> dict[tuple[str, str], list[int]]:
    positions: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, row in enumerate(scope):
        positions[(row[6], row[7])].append(n)
    return positions


def _text_scores(store: Store, scope: list[tuple], doc_id: str, vector) -> np.ndarray:
    scores = np.zeros(len(scope))
    entries = _doc_entries(store, doc_id)
    similarities = store.similarities("minilm", vector, entries.node_ids)
    positions = _by_row(scope)
    for row, similarity in zip(entries.node_rows, similarities, strict=True):
        for n in positions.get(row, ()):
            scores[n] = max(scores[n], float(similarity))
    return scores


def _lexical_scores(store: Store, scope: list[tuple], doc_id: str, query: str) -> np.ndarray:
    scores = np.zeros(len(scope))
    where, params = _view_where(doc_id)
    found = store.fts(query, where, params, limit=2000, per_text=False)  # every node scored
    keys = store.entries([i for i, _ in found])
    positions = _by_row(scope)
    for entry_id, score in found:
        entry = keys[entry_id]
        for n in positions.get((entry.table_name, entry.primary_key), ()):
            scores[n] = max(scores[n], score)
    return scores


# -- skyline ------------------------------------------------------------------------------------
def _skyline_layers(scores: np.ndarray, layers: int) -> list[tuple[int, int]]:
    """[(node position, layer)] for the first ``layers`` Pareto frontiers, best first."""
    remaining = np.flatnonzero(scores.max(axis=1) > 0)
    picked: list[tuple[int, int]] = []
    for layer in range(1, layers + 1):
        if remaining.size == 0:
            break
        front = remaining[_pareto_front(scores[remaining])]
        order = front[np.argsort(-_normalised(scores)[front].sum(axis=1), kind="stable")]
        picked.extend((int(n), layer) for n in order)
        remaining = np.setdiff1d(remaining, front)
    return picked


def _pareto_front(points: np.ndarray) -> np.ndarray:
    """Positions of the points no other point dominates (>= on all criteria, > on one).

    Points are first checked against a few strong ones (the best by sum), which dominate most of
    the rest; only the survivors are compared with every point.
    """
    elite = points[np.argsort(-points.sum(axis=1), kind="stable")[:ELITE]]
    survivors = np.flatnonzero(~_dominated_by(points, elite))
    beaten = _dominated_by(points[survivors], points)
    return np.sort(survivors[~beaten])


def _dominated_by(points: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each point, whether some point of ``others`` dominates it."""
    at_least = (others[None, :, :] >= points[:, None, :]).all(axis=2)
    better = (others[None, :, :] > points[:, None, :]).any(axis=2)
    return (at_least & better).any(axis=1)


def _normalised(scores: np.ndarray) -> np.ndarray:
    top = scores.max(axis=0)
    top[top == 0] = 1.0
    return scores / top


def _ranked_nodes(
    scope: list[tuple], scores: np.ndarray, chosen: list[str], picked: list[tuple[int, int]]
) -> list[RankedNode]:
    ranks = np.argsort(np.argsort(-scores, axis=0, kind="stable"), axis=0) + 1
    layer_best = {
        (layer, c): max(scores[n, c] for n, lay in picked if lay == layer)
        for layer in {lay for _, lay in picked}
        for c in range(len(chosen))
    }
    nodes: list[RankedNode] = []
    for n, layer in picked:
        best_on = [
            name
            for c, name in enumerate(chosen)
            if scores[n, c] > 0 and scores[n, c] == layer_best[(layer, c)]
        ]
        node_id, node_type, depth, title, start, end, ref_table, ref_id = scope[n]
        node_scores = {name: round(float(scores[n, c]), 6) for c, name in enumerate(chosen)}
        node_ranks = {name: int(ranks[n, c]) for c, name in enumerate(chosen)}
        nodes.append(
            RankedNode(
                node_id=node_id,
                node_type=node_type,
                depth=depth,
                title=title,
                page_start=start,
                page_end=end,
                ref_table=ref_table,
                ref_id=ref_id,
                scores=node_scores,
                ranks=node_ranks,
                layer=layer,
                best_on=best_on,
                why=_why(layer, best_on, node_ranks),
            )
        )
    return nodes


def _cite(store: Store, query: str, doc_id: str, nodes: list[RankedNode]) -> None:
    """Point each node at the sentence or table row in it that answers the question."""
    targets = [Target(n.ref_table, "", n.ref_id, doc_id, n.page_start) for n in nodes]
    found = find_evidence(store, read_question(store, query), targets, NODE_TEXT)
    for node, evidence in zip(nodes, found, strict=True):
        if evidence.within not in (None, node.ref_id):
            # The answer stands in another row (a chunk beside it on its page, a section's
            # chunk): the node keeps its own text and box, so its ids hold what it shows.
            continue
        if evidence.bbox is not None:
            node.bbox, node.cited = evidence.bbox, evidence.cited
            node.page_start, node.page_label = evidence.page_number, evidence.page_label
        if evidence.excerpt and node.ref_table == "tables" and node.text:
            node.text = results.caption_then_rows(node.text, evidence.excerpt)
        elif evidence.excerpt:
            node.text = evidence.excerpt


def _why(layer: int, best_on: list[str], ranks: dict[str, int]) -> str:
    placed = ", ".join(f"#{r} on {c}" for c, r in ranks.items())
    where = "on the Pareto frontier" if layer == 1 else f"on skyline layer {layer}"
    if best_on:
        return f"{where}: best of its layer on {' and '.join(best_on)} ({placed})"
    return f"{where}: no node beats it on every criterion ({placed})"


class RankNodesArgs(Arguments):
    query: Annotated[str, Field(description="The question.", max_length=2000)]
    doc_id: DocId
    section: Section = None
    node_id: NodeId = None
    criteria: Annotated[
        list[Name] | None, Field(description="graph, text, lexical", max_length=3)
    ] = None
    node_types: NodeTypes = None
    layers: Annotated[int, Field(ge=1, le=MAX_LAYERS)] = 1
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10


RANK_NODES = ToolSpec(
    name="rank_nodes",
    summary="a document's or section's nodes on the skyline of graph (entity PageRank), "
    "text and lexical scores.",
    description=(
        "Rank the nodes of a document, or of one section (by number, id or title words) or "
        "node, for a question: graph (personalized PageRank from the question's entities "
        "over the entity graph, mapped to nodes), text (semantic similarity) and optionally "
        "lexical (BM25). Returns the Pareto frontier (skyline) over the chosen criteria, "
        "not a fixed top-k; layers=2 adds the next frontier. Each node says which scores "
        "put it there. Then view_page or run_sql on the nodes you need."
    ),
    arguments=RankNodesArgs,
    function=rank_nodes,
)
