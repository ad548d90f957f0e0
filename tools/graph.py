"""One document's entity graph, built from its ``entities``, ``relations`` and ``entity_links``
rows when a call first ranks it and kept while the document is unchanged (``Store.per_document``:
a publish that leaves it alone keeps it; the least recently used go first).

Nodes are entity ids; an edge's weight is the sum of the weights of the relations between the two
entities (co-occurrence counts, is_a, cites, mentions, header_of). Entities of different documents
that share a normalised name or alias are linked in SQL when a call asks
(``tools/entity_names.py``), never held for the whole library: a server holds the graphs of the
documents it was asked about, whatever the library's size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from docsym.language.names import normalise_name
from docsym.storage.store import Store

if TYPE_CHECKING:  # scipy loads on first use: the server starts faster without it
    from scipy import sparse

GRAPHS = "entity-graph"  # the per-document structure's name in the store's cache


@dataclass(frozen=True)
class EntityInfo:
    entity_id: str
    doc_id: str
    name: str
    entity_type: str
    aliases: tuple[str, ...]
    mention_count: int
    node_count: int

    def name_keys(self) -> set[str]:
        """The normalised name and aliases it is found by."""
        return name_keys(self.name, self.aliases)


def name_keys(name: str, aliases: Iterable[str]) -> set[str]:
    """The keys an entity of ``name`` and ``aliases`` is found by."""
    return {normalise_name(n) for n in (name, *aliases)}


ENTITY_COLUMNS = "entity_id, doc_id, name, entity_type, aliases, mention_count, node_count"


def entity_info(row: tuple) -> EntityInfo:
    """An ``ENTITY_COLUMNS`` row as an ``EntityInfo``."""
    entity_id, doc_id, name, entity_type, aliases, mentions, nodes = row
    return EntityInfo(
        entity_id, doc_id, name, entity_type, tuple(aliases or ()), mentions or 0, nodes or 0
    )


@dataclass(frozen=True)
class DocumentGraph:
    """A document's entities, their graph as a weighted adjacency matrix (PageRank runs on it
    without building one per query) and which tree nodes mention them."""

    doc_id: str
    entities: dict[str, EntityInfo]  # in the order the index stores them
    by_key: dict[str, list[str]]  # normalised name or alias -> entity ids
    positions: dict[str, int]  # entity id -> row and column of ``adjacency``
    adjacency: sparse.csr_array
    node_rows: dict[str, int]  # tree node -> row of ``links``
    links: sparse.csr_array  # tree node x entity: 1 + log(mentions)


def document_graph(store: Store, doc_id: str) -> DocumentGraph:
    """The document's entity graph, kept while the document is unchanged."""
    return store.per_document(GRAPHS, doc_id, build_document_graph)


def build_document_graph(store: Store, doc_id: str) -> DocumentGraph:
    con = store.sql()
    # No ORDER BY: rows come in the order the index stores them, as every reader of the graph
    # has had them (a segmented index's views have no rowid to order by).
    rows = con.execute(
        f"SELECT {ENTITY_COLUMNS} FROM entities WHERE doc_id = ?", [doc_id]
    ).fetchall()
    entities = {row[0]: entity_info(row) for row in rows}
    by_key: dict[str, list[str]] = defaultdict(list)
    for entity_id, info in entities.items():
        for key in info.name_keys():
            by_key[key].append(entity_id)
    positions = {entity_id: n for n, entity_id in enumerate(entities)}
    relations = con.execute(
        "SELECT source_id, target_id, sum(weight) FROM relations WHERE doc_id = ? "
        "GROUP BY source_id, target_id",
        [doc_id],
    ).fetchall()
    links = con.execute(
        "SELECT node_id, entity_id, mention_count FROM entity_links WHERE doc_id = ?", [doc_id]
    ).fetchall()
    node_rows, link_matrix = _links(positions, links)
    return DocumentGraph(
        doc_id=doc_id,
        entities=entities,
        by_key=dict(by_key),
        positions=positions,
        adjacency=_adjacency(positions, relations),
        node_rows=node_rows,
        links=link_matrix,
    )


def _adjacency(positions: dict[str, int], relations: list[tuple]) -> sparse.csr_array:
    """The undirected graph's weights: an edge sums the relations both ways between its two
    entities, a self-loop its own once (as networkx's adjacency of the same graph)."""
    cells: list[tuple[int, int, float]] = []
    for source, target, weight in relations:
        a, b = positions.get(source), positions.get(target)
        if a is not None and b is not None:
            cells.append((a, b, float(weight)))
            if a != b:
                cells.append((b, a, float(weight)))
    from scipy import sparse

    r, c, v = zip(*cells, strict=True) if cells else ((), (), ())
    shape = (len(positions), len(positions))
    at = (np.array(r, dtype=np.int64), np.array(c, dtype=np.int64))
    matrix = sparse.coo_array((np.array(v, dtype=np.float64), at), shape=shape)
    return sparse.csr_array(matrix)  # duplicates summed


def _links(
    positions: dict[str, int], links: list[tuple]
) -> tuple[dict[str, int], sparse.csr_array]:
    """(tree node -> row, node x entity matrix of 1 + log(mentions)), columns in ``positions``
    order: a node's graph score is a product with PageRank."""
    rows: dict[str, int] = {}
    r, c, v = [], [], []
    for node_id, entity_id, count in links:
        column = positions.get(entity_id)
        if column is not None:
            r.append(rows.setdefault(node_id, len(rows)))
            c.append(column)
            v.append(1.0 + np.log(max(count, 1)))
    from scipy import sparse

    return rows, sparse.csr_array((v, (r, c)), shape=(len(rows), len(positions)))


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
