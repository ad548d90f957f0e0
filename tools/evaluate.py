"""``docsym eval``: recall@k and MRR of the gold pages of a QA set, per search mode.

A question is answered at rank r when the r-th hit comes from the question's file and one of its
gold pages. Every mode returns at most ``depth`` hits; modes run over the same index.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from docsym.storage.store import Store
from docsym.tools.search import DEFAULT_VIEWS, SearchResult, hybrid_search, vector_search

KS = (1, 5, 10)


class QAItem(BaseModel):
    id: str
    file: str
    question: str
    kind: str = "text"
    pages: list[int]


class ModeScore(BaseModel):
    mode: str
    ranks: dict[str, int | None]  # question id -> rank of the first gold hit
    recall: dict[int, float]
    mrr: float


SearchFn = Callable[[Store, str, int], SearchResult]


def _single(collection: str) -> SearchFn:
    def run(store: Store, question: str, depth: int) -> SearchResult:
        where = " or ".join(
            f"(table_name == '{t}' and column_name == '{c}')" for t, c in DEFAULT_VIEWS
        )
        return vector_search(store, question, collection, filter=where, limit=depth)

    return run


MODES: dict[str, SearchFn] = {
    "bm25": _single("bm25"),
    "minilm": _single("minilm"),
    "hybrid": lambda store, q, depth: hybrid_search(store, q, limit=depth),
    # Classic RAG: dense retrieval over chunks only, top-k.
    "classic": lambda store, q, depth: vector_search(
        store, q, "minilm", "chunks", "text", limit=depth
    ),
}


def load_qa(path: Path) -> list[QAItem]:
    with path.open() as fh:
        return [QAItem.model_validate(json.loads(line)) for line in fh if line.strip()]


def evaluate(
    store: Store, items: list[QAItem], modes: list[str] | None = None, depth: int = 10
) -> list[ModeScore]:
    paths = dict(store.sql().execute("SELECT doc_id, path FROM documents").fetchall())
    results = []
    for mode in modes or list(MODES):
        ranks: dict[str, int | None] = {}
        for item in items:
            hits = MODES[mode](store, item.question, depth).hits
            ranks[item.id] = next(
                (
                    n
                    for n, hit in enumerate(hits, 1)
                    if paths.get(hit.doc_id, "").endswith(item.file)
                    and hit.page_number in item.pages
                ),
                None,
            )
        results.append(_score(mode, ranks))
    return results


def by_kind(score: ModeScore, items: list[QAItem]) -> dict[str, ModeScore]:
    """The same score restricted to each kind of question ('text', 'table'), kinds sorted."""
    kinds = sorted({item.kind for item in items})
    return {
        kind: _score(
            score.mode,
            {i.id: score.ranks[i.id] for i in items if i.kind == kind and i.id in score.ranks},
        )
        for kind in kinds
    }


def _score(mode: str, ranks: dict[str, int | None]) -> ModeScore:
    n = max(len(ranks), 1)
    recall = {k: sum(1 for r in ranks.values() if r and r <= k) / n for k in KS}
    mrr = sum(1 / r for r in ranks.values() if r) / n
    return ModeScore(mode=mode, ranks=ranks, recall=recall, mrr=mrr)
