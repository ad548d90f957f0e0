"""A long run of a served index: do calls fail, and does the server's memory stay bounded?

    python bench/server_soak.py --index DIR [--calls 1500] [--seed 5]

Starts ``docsym serve --index DIR`` under the mcp SDK's stdio client and makes ``--calls`` calls,
in turn, of hybrid_search, vector_search, rank_nodes, find_entities and select_subtree: each
question a random sentence of the index, each document and entity name a random one of the
index's (all drawn before the server starts, with ``--seed``). Unlike the 81 fixed questions
of ``bench/library_scale.py``'s serve phase, the calls reach everywhere in the library, as a
long-lived server's do. A call fails when the server could not answer it (a crash, as the server
words it); a call the tool refused with its reason (``rank_nodes`` on a document with no text,
say) is counted apart. Prints each failed or refused call, and every 250 calls how many so far
and the server's RSS, then each tool's p50 and p95.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.library_scale import TOOLS, server_parameters, server_process  # noqa: E402
from bench.stats import percentile  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402

REPORT_EVERY = 250


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    calls = _calls(args.index, args.calls, args.seed)
    anyio.run(_soak, args.index, calls)


def _calls(index: Path, count: int, seed: int) -> list[tuple[str, dict]]:
    """``count`` calls of the five tools in turn, over random parts of the index."""
    rng = random.Random(seed)
    sample = f"USING SAMPLE reservoir(%d ROWS) REPEATABLE ({seed})"
    with open_store(index) as store:
        con = store.sql()
        listed = con.execute("SELECT doc_id FROM documents ORDER BY doc_id").fetchall()
        doc_ids = [doc_id for (doc_id,) in listed]
        sampled = con.execute(f"SELECT text FROM sentences {sample % 5000}").fetchall()
        sentences = [text for (text,) in sampled if 40 < len(text) < 200]
        entities = con.execute(f"SELECT name FROM entities {sample % 2000}").fetchall()
        names = [name[:60] for (name,) in entities]
    calls = []
    for n in range(count):
        question, doc_id = rng.choice(sentences), rng.choice(doc_ids)
        arguments = {
            "hybrid_search": {"query": question},
            "vector_search": {"query": question, "collection": "minilm"},
            "rank_nodes": {"query": question, "doc_id": doc_id},
            "find_entities": {"query": rng.choice(names)},
            "select_subtree": {"doc_id": doc_id},
        }
        tool = TOOLS[n % len(TOOLS)]
        calls.append((tool, arguments[tool]))
    return calls


async def _soak(index: Path, calls: list[tuple[str, dict]]) -> None:
    latency: dict[str, list[float]] = {tool: [] for tool in TOOLS}
    failed: list[str] = []
    refused: list[str] = []
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            await _call_all(index, calls, errlog, latency, failed, refused)
        except BaseException:
            errlog.seek(0)
            print(errlog.read()[-4000:], file=sys.stderr)  # the server's last words
            raise
    for tool, ms in latency.items():
        print(f"{tool:16} p50 {statistics.median(ms):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms")


async def _call_all(
    index: Path,
    calls: list[tuple[str, dict]],
    errlog: IO[str],
    latency: dict[str, list[float]],
    failed: list[str],
    refused: list[str],
) -> None:
    async with Client(stdio_client(server_parameters(index), errlog=errlog)) as client:
        await client.list_tools()
        process = server_process()
        started = time.perf_counter()
        for n, (tool, arguments) in enumerate(calls, 1):
            began = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            latency[tool].append(1000 * (time.perf_counter() - began))
            if result.is_error:
                text = result.content[0].text
                crashed = "could not answer" in text  # mcp_server/server.py's _crash_text
                (failed if crashed else refused).append(f"{tool}({arguments}): {text[:200]}")
                print(f"{'failed' if crashed else 'refused'}: {text[:200]}", flush=True)
            if n % REPORT_EVERY == 0 or n == len(calls):
                rss = process.memory_info().rss / 2**20
                elapsed = time.perf_counter() - started
                print(f"{n} calls, {len(failed)} failed, {len(refused)} refused, "
                      f"RSS {rss:.0f} MB, {elapsed:.0f} s", flush=True)


if __name__ == "__main__":
    main()
