"""MCP latency over stdio, as a client sees it.

    python bench/mcp_latency.py [--index DIR] [--calls N]

Starts `docsym serve` as a subprocess with the mcp SDK's client and prints: the time from spawning
the process to a completed `initialize`, and p50/p95 round trips of run_sql, list_documents,
vector_search and hybrid_search (distinct questions; the first call of each tool is a warm-up).
Defaults to an index of the bundled sample documents, built into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stats import percentile  # noqa: E402

QA = REPO.parent / "shared" / "dev-qa" / "qa.jsonl"
QUESTIONS = [
    "What Recall@5 did RRF reach on the Maintenance split?",
    "How long are backups kept?",
    "Which retrievers were compared?",
    "median query latency of BM25",
    "annotator agreement kappa",
    "How were the manuals chunked?",
]


def percentiles(samples: list[float]) -> str:
    p95 = percentile(samples, 0.95)
    return f"p50 {statistics.median(samples):7.2f} ms   p95 {p95:7.2f} ms   n={len(samples)}"


async def measure(index: Path, calls: int) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "docsym", "serve", "--index", str(index)], cwd=REPO
    )
    questions = list(QUESTIONS)
    if QA.exists():
        questions += [json.loads(line)["question"] for line in QA.read_text().splitlines() if line]
    started = time.perf_counter()
    async with Client(server) as client:
        print(f"spawn -> initialize done: {(time.perf_counter() - started) * 1000:7.1f} ms")
        plans = {
            "run_sql": [
                {"sql": f"SELECT page_id, page_number FROM pages WHERE page_number = {n % 5 + 1}"}
                for n in range(calls)
            ],
            "list_documents": [{"limit": 10} for _ in range(calls)],
            "vector_search": [{"query": q, "collection": "minilm"} for q in questions],
            "hybrid_search": [{"query": q} for q in questions],
        }
        for tool, arguments in plans.items():
            await client.call_tool(tool, arguments[0])  # warm-up
            samples = []
            for args in arguments:
                start = time.perf_counter()
                result = await client.call_tool(tool, args)
                samples.append((time.perf_counter() - start) * 1000)
                assert not result.is_error, result.content[0].text
            print(f"{tool:16} {percentiles(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="index DIR (default: the bundled samples)")
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    if args.index:
        anyio.run(measure, args.index.resolve(), args.calls)
        return
    from docsym.indexer.pipeline import index_paths

    with tempfile.TemporaryDirectory() as tmp:
        index_paths([REPO / "docsym" / "samples"], Path(tmp))
        anyio.run(measure, Path(tmp), args.calls)


if __name__ == "__main__":
    main()
