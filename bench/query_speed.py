"""hybrid_search latency on a real index: p50/p95 wall time, CPU per query, and where it goes.

    python bench/query_speed.py (--index DIR | --store URL) [--repeat 1] [--untuned]

Questions are those of ../shared/dev-qa/qa.jsonl and bench/qa/docsym_qa.jsonl; each is asked
``--repeat`` times in one warm process (three other questions are asked before timing, so the
encoder and the connections are loaded; a repeat reuses the question's vector, as a server
does), in a process tuned as ``docsym serve`` tunes itself: the garbage collector, and matrix
products in one thread (``--untuned``, once ``--default-gc``, leaves CPython's and OpenBLAS's
defaults). Prints, over all calls, the p50 and p95 of wall time and the mean CPU time (both
cores count), then the mean time of each stage of a call: query encoding, BM25, dense search,
the cosine of BM25-only candidates, entry lookup, reading the question, fusion and the evidence
finder (sentence, row and box of each hit).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import docsym.tools.search as search  # noqa: E402
from bench.stats import percentile  # noqa: E402
from docsym.mcp_server.server import tune_serving_process  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.evaluate import load_qa  # noqa: E402

# Not in the QA sets, so every timed question is asked for the first time.
WARM_UP = (
    "What does the paper propose?",
    "How many pages does the report have?",
    "Which table lists the results?",
)
QA = [REPO.parent / "shared" / "dev-qa" / "qa.jsonl", REPO / "bench" / "qa" / "docsym_qa.jsonl"]


def main() -> None:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--index", type=Path, help="an index directory")
    where.add_argument("--store", help="a shared PostgreSQL store")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--untuned", "--default-gc", action="store_true", help="CPython's and OpenBLAS's defaults"
    )
    args = parser.parse_args()
    store = open_store(args.store or args.index)
    questions = [item.question for path in QA for item in load_qa(path)]
    for question in WARM_UP:
        search.hybrid_search(store, question)
    if not args.untuned:
        tune_serving_process()
    stages = _instrument(store)
    wall, cpu = [], []
    for _ in range(args.repeat):
        for question in questions:
            started, started_cpu = time.perf_counter(), time.process_time()
            with store.reading():  # one generation for the call, as a served call reads
                search.hybrid_search(store, question)
            wall.append(1000 * (time.perf_counter() - started))
            cpu.append(1000 * (time.process_time() - started_cpu))
    print(
        f"hybrid_search: {len(wall)} calls, p50 {statistics.median(wall):.1f} ms, "
        f"p95 {percentile(wall, 0.95):.1f} ms, CPU {statistics.fmean(cpu):.1f} ms per call"
    )
    for name, times in stages.items():
        print(f"  {name:24} {sum(times) / len(wall):6.1f} ms per call")
    store.close()


def _instrument(store: Store) -> dict[str, list[float]]:
    """Wrap the stages of a hybrid_search call in timers (this process only)."""
    stages: dict[str, list[float]] = defaultdict(list)

    def timed(name: str, function: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                stages[name].append(1000 * (time.perf_counter() - started))

        return wrapper

    encoder = store.encoder_for("minilm")
    encoder.encode = timed("encode query", encoder.encode)
    store.fts = timed("bm25", store.fts)
    store.dense = timed("dense", store.dense)
    store.similarities = timed("cosine of the rest", store.similarities)
    store.entries = timed("entries", store.entries)
    search.prepare = timed("question", search.prepare)
    search.Fusion.__init__ = timed("fusion", search.Fusion.__init__)
    search.Fusion.ranked = timed("fusion", search.Fusion.ranked)
    search.find_evidence = timed("evidence", search.find_evidence)
    return stages


if __name__ == "__main__":
    main()
