"""All-parts recall of the query compiler against one search of the whole question.

    python bench/multihop.py --index DIR [bench/qa/multihop.jsonl] [--per-question]

For each item of the multi-hop set, the gold expression is run with ``run_plan`` (the code the
MCP tool runs) in as many calls as its stages need, giving each call the gold placeholder values,
as a client answering from the evidence would. A question counts for "compiled" when every
leaf's gold page (file and page) is among the top 5 hits of that leaf's own search. The
baselines are one ``hybrid_search`` of the whole question, counting when the gold pages of all
its leaves are in its top 5 (or top 10). Printed per kind of question and in all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.query_plans import run_plan  # noqa: E402
from docsym.tools.search import SearchHit, hybrid_search  # noqa: E402

DEFAULT_QA = REPO / "bench" / "qa" / "multihop.jsonl"
CORPUS = REPO.parent / "shared" / "corpus"


def _found(hits: list[SearchHit], leaf: dict, files: dict[str, Path]) -> bool:
    wanted = (CORPUS / leaf["file"]).resolve()
    return any(files[h.doc_id] == wanted and h.page_number in leaf["pages"] for h in hits)


def compiled_hits(store: Store, item: dict) -> dict[int, list[SearchHit]]:
    """Each leaf's hits, driving run_plan stage by stage with the gold answers."""
    hits: dict[int, list[SearchHit]] = {}
    answers: dict[str, str] = {}
    for _ in range(len(item["leaves"]) + 1):
        run = run_plan(store, item["expression"], answers, limit=5)
        for leaf in run.leaves:
            if leaf.status == "ran":
                hits[leaf.leaf] = leaf.hits
        if run.complete:
            break
        answers |= {name: item["answers"][name] for name in run.to_answer}
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qa", nargs="?", type=Path, default=DEFAULT_QA)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--per-question", action="store_true")
    args = parser.parse_args()
    store = open_store(args.index)
    files = {
        doc_id: Path(path).resolve()
        for doc_id, path in store.sql().execute("SELECT doc_id, path FROM documents").fetchall()
    }
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # n, compiled, @5, @10
    for line in args.qa.read_text().splitlines():
        item = json.loads(line)
        by_leaf = compiled_hits(store, item)
        leaves = item["leaves"]
        compiled = all(_found(by_leaf.get(n, []), leaf, files) for n, leaf in enumerate(leaves, 1))
        single = hybrid_search(store, item["question"], limit=10).hits
        at5 = all(_found(single[:5], leaf, files) for leaf in leaves)
        at10 = all(_found(single, leaf, files) for leaf in leaves)
        for kind in (item["kind"], "all"):
            counts = totals[kind]
            counts[0] += 1
            counts[1] += compiled
            counts[2] += at5
            counts[3] += at10
        if args.per_question:
            print(
                f"{item['id']:<48} compiled {int(compiled)}  single@5 {int(at5)}  @10 {int(at10)}"
            )
    print("| kind | questions | compiled, all parts @5 | one search, all parts @5 | @10 |")
    print("|---|---|---|---|---|")
    for kind, (n, compiled, at5, at10) in sorted(totals.items(), key=lambda kv: kv[0] == "all"):
        print(f"| {kind} | {n} | {compiled / n:.2f} | {at5 / n:.2f} | {at10 / n:.2f} |")


if __name__ == "__main__":
    main()
