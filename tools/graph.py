"""The entity graph in memory (networkx), built from the index's ``entities``, ``relations`` and
``entity_links`` tables once and rebuilt when the index changes (``Store.derived``).

Nodes are entity ids; an edge's weight is the sum of the weights of the relations between the two
entities (co-occurrence counts, is_a, cites, mentions, header_of). Entities of different documents
that share a normalised name or alias are joined by a ``same_name`` edge, so a corpus-wide scope
can walk from one paper's "BM25" to another's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from docsym.language.names import normalise_name
from docsym.storage.store import Store

if TYPE_CHECKING:  # networkx and scipy load on first use: the server starts faster without them
    import networkx as nx
    from scipy import sparse

SAME_NAME_WEIGHT = 1.0


@dataclass(frozen=True)
class EntityInfo:
    entity_id: str
    doc_id: str
    name: str
    entity_type: str
    aliases: tuple[str, ...]
    mention_count: int
    node_count: int


@dataclass
class EntityGraph:
    graph: nx.Graph
    entities: dict[str, EntityInfo]
    by_key: dict[str, list[str]]  # normalised name or alias -> entity ids
    node_entities: dict[str, dict[str, int]]  # tree node -> {entity id: mentions}
    doc_entities: dict[str, list[str]] = field(default_factory=dict)
    _matrices: dict[str, tuple[dict[str, int], sparse.csr_array]] = field(default_factory=dict)
    _links: dict[str, tuple[dict[str, int], sparse.csr_array]] = field(default_factory=dict)

    def doc_links(self, doc_id: str) -> tuple[dict[str, int], sparse.csr_array]:
        """(tree node -> row, node x entity matrix of 1 + log(mentions)) for one document,
        columns in ``doc_matrix`` order: a node's graph score is a product with PageRank."""
        if doc_id not in self._links:
            positions, _ = self.doc_matrix(doc_id)
            rows: dict[str, int] = {}
            r, c, v = [], [], []
            for node_id, linked in self.node_entities.items():
                for entity_id, count in linked.items():
                    column = positions.get(entity_id)
                    if column is not None:
                        r.append(rows.setdefault(node_id, len(rows)))
                        c.append(column)
                        v.append(1.0 + np.log(max(count, 1)))
            shape = (len(rows), len(positions))
            from scipy import sparse

            self._links[doc_id] = (rows, sparse.csr_array((v, (r, c)), shape=shape))
        return self._links[doc_id]

    def doc_matrix(self, doc_id: str) -> tuple[dict[str, int], sparse.csr_array]:
        """(entity id -> position, weighted adjacency) of one document's entity graph; built on
        first use and kept: PageRank runs on it without rebuilding a matrix per query."""
        if doc_id not in self._matrices:
            ids = self.doc_entities.get(doc_id, [])
            import networkx as nx
            from scipy import sparse

            matrix = nx.to_scipy_sparse_array(self.graph, nodelist=ids, weight="weight")
            self._matrices[doc_id] = ({e: n for n, e in enumerate(ids)}, sparse.csr_array(matrix))
        return self._matrices[doc_id]


def entity_graph(store: Store) -> EntityGraph:
    """The index's entity graph, cached on the store until the index changes."""
    return store.derived("entity_graph", build_entity_graph)


def build_entity_graph(store: Store) -> EntityGraph:
    con = store.sql()
    entities: dict[str, EntityInfo] = {}
    by_key: dict[str, list[str]] = defaultdict(list)
    doc_entities: dict[str, list[str]] = defaultdict(list)
    rows = con.execute(
        "SELECT entity_id, doc_id, name, entity_type, aliases, mention_count, node_count "
        "FROM entities"
    ).fetchall()
    import networkx as nx

    graph = nx.Graph()
    for entity_id, doc_id, name, entity_type, aliases, mentions, nodes in rows:
        info = EntityInfo(
            entity_id, doc_id, name, entity_type, tuple(aliases or ()), mentions or 0, nodes or 0
        )
        entities[entity_id] = info
        doc_entities[doc_id].append(entity_id)
        graph.add_node(entity_id)
        for key in {normalise_name(n) for n in (name, *info.aliases)}:
            by_key[key].append(entity_id)
    for source, target, weight in con.execute(
        "SELECT source_id, target_id, sum(weight) FROM relations GROUP BY source_id, target_id"
    ).fetchall():
        _add_weight(graph, source, target, float(weight))
    for ids in by_key.values():
        docs = {entities[i].doc_id for i in ids}
        if len(docs) > 1:
            for a, b in zip(ids, ids[1:], strict=False):
                if entities[a].doc_id != entities[b].doc_id:
                    _add_weight(graph, a, b, SAME_NAME_WEIGHT)
    node_entities: dict[str, dict[str, int]] = defaultdict(dict)
    for entity_id, node_id, count in con.execute(
        "SELECT entity_id, node_id, mention_count FROM entity_links"
    ).fetchall():
        node_entities[node_id][entity_id] = count
    return EntityGraph(
        graph=graph,
        entities=entities,
        by_key=dict(by_key),
        node_entities=dict(node_entities),
        doc_entities=dict(doc_entities),
    )


def _add_weight(graph: nx.Graph, a: str, b: str, weight: float) -> None:
    if graph.has_edge(a, b):
        graph[a][b]["weight"] += weight
    else:
        graph.add_edge(a, b, weight=weight)


def personalized_pagerank(
    adjacency: sparse.csr_array,
    personal: np.ndarray,
    damping: float = 0.85,
    tolerance: float = 1e-9,
    max_iterations: int = 100,
) -> np.ndarray:
    """Personalized PageRank by power iteration (what ``networkx.pagerank`` computes, on a
    prebuilt matrix): walk an edge with probability ``damping`` (chosen by weight), else jump
    back to the seeds; dangling nodes jump to the seeds too."""
    out_weight = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    from scipy import sparse

    transition = sparse.diags(inverse) @ adjacency
    jump = personal / personal.sum()
    dangling = out_weight == 0
    rank = jump.copy()
    for _ in range(max_iterations):
        following = damping * (transition.T @ rank + rank[dangling].sum() * jump)
        updated = following + (1 - damping) * jump
        if np.abs(updated - rank).sum() < tolerance * len(rank):
            return updated
        rank = updated
    return rank
