"""What each view's dense entries cost to encode and what they buy hybrid_search.

    python bench/dense_views.py --index DIR [--corpus ../shared/corpus]

Prints, for every encodable view, its entries and characters in the vector file and its share of
what is encoded (encoding time follows the characters: word pieces are about a quarter of them);
page text and section content are pooled from their chunks' vectors and cost no encoding, and
views searched by keyword only (``Col.dense`` false) are encoded not at all ("none").
Then, over the questions you can read pooled (``../shared/dev-qa/qa.jsonl``,
``bench/qa/docsym_qa.jsonl`` and each leaf of ``bench/qa/multihop.jsonl``), hybrid_search's
R@1, R@5 and MRR with every dense entry, and again without the dense entries of each of
hybrid's default views in turn (as if they had never been encoded: the view's rows are still
found by BM25, their cosine is 0, the dense search never returns them). Views outside the
defaults do not take part in hybrid_search; their dense entries serve vector_search over that
view, rank_nodes and entity resolution only; for the page and section summaries (sentences of
their page or section), vector_search over the summaries is set beside vector_search over the
pooled page text and section content, which cost no encoding.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.schema import POOLED, dense_columns, encodable_columns  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.evaluate import QAItem, _score, load_qa  # noqa: E402
from docsym.tools.search import DEFAULT_VIEWS, hybrid_search, vector_search  # noqa: E402

View = tuple[str, str]
# Summaries made of their page's or section's sentences, each beside the pooled view it sums up.
SUMMARY_PAIRS: list[View] = [
    ("pages", "summary"),
    ("pages", "text"),
    ("sections", "summary"),
    ("sections", "content"),
]


def questions(repo: Path) -> list[QAItem]:
    """Dev, held-out and the multi-hop leaves, pooled."""
    items = load_qa(repo.parent / "shared" / "dev-qa" / "qa.jsonl")
    items += load_qa(repo / "bench" / "qa" / "docsym_qa.jsonl")
    for line in (repo / "bench" / "qa" / "multihop.jsonl").read_text().splitlines():
        item = json.loads(line)
        for n, leaf in enumerate(item["leaves"]):
            file = leaf["file"].rsplit("/", 1)[-1]
            items.append(QAItem(id=f"{item['id']}-{n}", file=file, question=leaf["question"],
                                pages=leaf["pages"]))  # fmt: skip
    return items


def costs(store: Store) -> dict[View, tuple[int, int]]:
    """(entries, characters) of each view's dense entries."""
    found: dict[View, tuple[int, int]] = {}
    for table_name, column_name in encodable_columns():
        keys = store.entry_keys("e.table_name = ? AND e.column_name = ?", [table_name, column_name])
        ids = list(keys)
        chars = 0
        for start in range(0, len(ids), 5000):  # SQLite binds a bounded number of values
            chars += sum(
                len(e.text or "") for e in store.entries(ids[start : start + 5000]).values()
            )
        found[(table_name, column_name)] = (len(ids), chars)
    return found


class WithoutView:
    """The store as if one view's dense entries had never been written."""

    def __init__(self, store: Store, view: View) -> None:
        self.store, self.view = store, view
        self.dense = self._dense
        self.similarities = self._similarities

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def _dense(self, collection, vector, where, params, limit):
        where = f"({where}) AND NOT (e.table_name = ? AND e.column_name = ?)"
        return self.store.dense(collection, vector, where, [*params, *self.view], limit)

    def _similarities(self, collection, vector, ids: np.ndarray) -> np.ndarray:
        found = self.store.similarities(collection, vector, ids)
        entries = self.store.entries([int(i) for i in ids])
        dropped = [
            (entries[int(i)].table_name, entries[int(i)].column_name) == self.view for i in ids
        ]
        return np.where(np.array(dropped, dtype=bool), 0.0, found)


def score(store, items: list[QAItem], view: View | None = None) -> tuple[float, float, float]:
    """hybrid_search's R@1, R@5 and MRR of gold pages; with ``view``, vector_search's over that
    view alone."""
    if view is None:
        return ranked(store, items, lambda item: hybrid_search(store, item.question).hits)
    return ranked(
        store, items, lambda item: vector_search(store, item.question, "minilm", *view).hits
    )


def ranked(store, items: list[QAItem], search) -> tuple[float, float, float]:
    """R@1, R@5 and MRR of the gold pages among ``search(item)``'s top 10 hits."""
    paths = dict(store.sql().execute("SELECT doc_id, path FROM documents").fetchall())
    ranks: dict[str, int | None] = {}
    for item in items:
        hits = search(item)[:10]
        ranks[item.id] = next(
            (
                n
                for n, hit in enumerate(hits, 1)
                if paths.get(hit.doc_id, "").endswith(item.file) and hit.page_number in item.pages
            ),
            None,
        )
    result = _score("search", ranks)
    return result.recall[1], result.recall[5], result.mrr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    args = parser.parse_args()
    store = open_store(args.index)
    found = costs(store)
    encoded = dense_columns() - POOLED
    total = sum(chars for view, (_, chars) in found.items() if view in encoded) or 1
    print("| view | in hybrid | entries | characters | share of encoding |")
    print("|---|---|---|---|---|")
    for view, (n, chars) in sorted(found.items(), key=lambda kv: -kv[1][1]):
        default = "yes" if view in DEFAULT_VIEWS else "no"
        share = "pooled" if view in POOLED else "none" if view not in encoded else ""
        share = share or f"{chars / total:.1%}"
        print(f"| {'.'.join(view)} | {default} | {n:,} | {chars:,} | {share} |")
    items = questions(REPO)
    print(f"\n{len(items)} questions pooled\n")
    print("| dense entries | R@1 | R@5 | MRR |\n|---|---|---|---|")
    r1, r5, mrr = score(store, items)
    print(f"| all | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")
    for view in DEFAULT_VIEWS:
        r1, r5, mrr = score(WithoutView(store, view), items)
        print(f"| without {'.'.join(view)} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")
    print("\nvector_search over one view: a summary's own vectors against its page's or section's")
    print("(pooled from its chunks, encoded for nothing)\n")
    print("| view | R@1 | R@5 | MRR |\n|---|---|---|---|")
    dense = dense_columns()
    for view in SUMMARY_PAIRS:
        if view not in dense:  # measured at a58a798, before they lost their vectors
            print(f"| {'.'.join(view)} | keyword only: no vectors | | |")
            continue
        r1, r5, mrr = score(store, items, view)
        print(f"| {'.'.join(view)} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")
    table_summaries(store, [item for item in items if item.kind == "table"])


def table_summaries(store: Store, items: list[QAItem]) -> None:
    """Table summaries by each way a client reaches them, over the table questions."""
    view = ("table_summaries", "text")
    ways = {
        "vector_search, minilm": lambda q: vector_search(store, q, "minilm", *view, limit=10),
        "vector_search, bm25": lambda q: vector_search(store, q, "bm25", *view, limit=10),
        "hybrid_search over the view": lambda q: hybrid_search(store, q, views=[".".join(view)]),
        "... without its vectors": lambda q: hybrid_search(
            WithoutView(store, view), q, views=[".".join(view)]
        ),
    }
    print(f"\ntable_summaries.text over the {len(items)} table questions\n")
    print("| search | R@1 | R@5 | MRR |\n|---|---|---|---|")
    for name, search in ways.items():
        r1, r5, mrr = ranked(store, items, lambda item, search=search: search(item.question).hits)
        print(f"| {name} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")


if __name__ == "__main__":
    main()
