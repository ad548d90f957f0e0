"""Hostile load against a real server: limits held, refusals fast, other clients unharmed.

    python bench/hostile.py --index DIR [--kills 20] [--corpus ../shared/corpus]

Starts ``docsym serve --transport http`` on a loopback port over DIR, drives it with the mcp
SDK's client, and samples the resident memory of the server process and of its SQL worker
processes every 20 ms (psutil). Prints:

1. every probe of ``tests/hostile_cases.py`` plus the SQL ones: time to refusal, reply size and
   peak RSS (server, workers); goal: answered within its budget (the SQL time limit for SQL,
   none for the rest) + 1 s, the server never above its idle RSS + 300 MB and a worker never
   above the SQL memory budget + 300 MB;
2. ``hybrid_search`` p50/p95 idle, then while 4 clients run the slow SQL in a loop; goal: p95
   at most 2x idle;
3. an HTTP load run, 20 clients x 25 mixed calls: errors, p50/p95, server RSS before and after;
4. ``--kills`` SIGKILLs of the indexer inside the vector-write window (new vectors committed,
   DuckDB not yet published), on an index of the bundled samples with corpus papers added:
   after each, no hit may name a document run_sql lacks and the consistency check must pass.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import psutil
from mcp import Client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.mcp_latency import QUESTIONS  # noqa: E402
from bench.stats import percentile  # noqa: E402
from docsym.runtime.settings import get_settings  # noqa: E402
from tests.hostile_cases import (  # noqa: E402
    HUGE_STRING_SQL,
    SLOW_SQL,
    agreement,
    hostile_calls,
    kill_in_window,
)

MB = 2**20
QUERIES = [*QUESTIONS, "gross bookings 2021", "flow duration curve regionalisation"]
SQL_PROBES = [
    ("slow function", SLOW_SQL),
    ("1.5 GB string", HUGE_STRING_SQL),
    ("6.6 MB IN-list", "SELECT 1 WHERE 1 IN (" + ", ".join(["12345"] * 940_000) + ")"),
    ("write in WITH", "WITH d AS (DELETE FROM documents RETURNING *) SELECT * FROM d"),
    ("settings", "SELECT * FROM duckdb_settings()"),
    ("host file", "SELECT * FROM read_csv('/etc/passwd')"),
    ("cross join", "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"),
]
KILL_PAPERS = [
    "papers/2305.03393v1-pg9.pdf",
    "papers/N18-3011_literature_graph.pdf",
    "papers/jhydrol_2005_flow_duration_curves.pdf",
    "papers/2020.acl-main.207_specter.pdf",
]


class RssWatch:
    """Peak resident memory of a process and, apart, of its children, since the last reset."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self._peaks = (0, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def now(self) -> tuple[int, int]:
        main = self.process.memory_info().rss
        children = 0
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):  # it ended meanwhile
                children = max(children, child.memory_info().rss)
        return main, children

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                main, child = self.now()
            except psutil.NoSuchProcess:
                return
            with self._lock:
                self._peaks = (max(self._peaks[0], main), max(self._peaks[1], child))
            time.sleep(0.02)

    def reset(self) -> None:
        with self._lock:
            self._peaks = (0, 0)

    def peaks(self) -> tuple[int, int]:
        time.sleep(0.05)  # one more sample
        with self._lock:
            return self._peaks

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    watch: RssWatch


def start_server(index: Path) -> Server:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "docsym", "serve", "--transport", "http"]
    command += ["--port", str(port), "--index", str(index)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited: {process.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    return Server(f"http://127.0.0.1:{port}/mcp", process, RssWatch(process.pid))


def mb(value: int) -> str:
    return f"{value / MB:7.0f} MB"


# -- 1. probes ---------------------------------------------------------------------------------


async def probes(server: Server, doc_id: str) -> bool:
    settings = get_settings()
    idle_main, _ = server.watch.now()
    calls = [(f"run_sql {name}", "run_sql", {"sql": sql}) for name, sql in SQL_PROBES]
    for tool, arguments in hostile_calls(doc_id):
        calls.append((f"{tool} {_describe(arguments)}", tool, arguments))
    print(f"\n1. probes (server idle RSS {mb(idle_main)})")
    print(f"{'probe':52} {'seconds':>8} {'reply':>7} {'server':>10} {'worker':>10}  verdict")
    ok = True
    async with Client(server.url) as client:
        for label, tool, arguments in calls:
            budget = settings.sql_seconds if tool == "run_sql" else 0.0
            server.watch.reset()
            started = time.perf_counter()
            refused, text = await _call(client, tool, arguments)
            elapsed = time.perf_counter() - started
            main, worker = server.watch.peaks()
            passed = (
                refused
                and elapsed <= budget + 1
                and main <= idle_main + 300 * MB
                and worker <= (settings.sql_memory_mb + 300) * MB
            )
            ok &= passed
            verdict = "ok" if passed else "FAIL"
            print(
                f"{label[:52]:52} {elapsed:8.2f} {len(text):7} {mb(main)} {mb(worker)}  "
                f"{verdict}: {text[:70]!r}"
            )
    return ok


async def _call(client: Client, tool: str, arguments: dict) -> tuple[bool, str]:
    """(refused, text): a tool error, or a protocol error (the transport's own size limit)."""
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as exc:
        return True, f"protocol error {exc.code}: {exc.message} {exc.data or ''}"
    return result.is_error, result.content[0].text


def _describe(arguments: dict) -> str:
    parts = []
    for key, value in arguments.items():
        shown = repr(value)
        parts.append(f"{key}={shown[:24]}{'…' if len(shown) > 24 else ''}")
    return " ".join(parts)


# -- 2. hybrid_search while hostile SQL runs ---------------------------------------------------


async def timed_searches(url: str, count: int) -> list[float]:
    times = []
    async with Client(url) as client:
        for query in QUERIES:  # warm: the first search of a question fills caches
            await client.call_tool("hybrid_search", {"query": query})
        for i in range(count):
            started = time.perf_counter()
            result = await client.call_tool("hybrid_search", {"query": QUERIES[i % len(QUERIES)]})
            times.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result.content[0].text
    return times


async def hostile_loop(url: str, stop: anyio.Event, answers: dict[str, int]) -> None:
    async with Client(url) as client:
        while not stop.is_set():
            result = await client.call_tool("run_sql", {"sql": SLOW_SQL})
            text = result.content[0].text
            kinds = ("time limit", "memory limit", "busy")
            kind = next((k for k in kinds if k in text), "other") if result.is_error else "answered"
            answers[kind] = answers.get(kind, 0) + 1


async def contention(server: Server, count: int) -> bool:
    idle = await timed_searches(server.url, count)
    answers: dict[str, int] = {}
    loaded: list[float] = []
    stop = anyio.Event()

    async def measure() -> None:
        await anyio.sleep(1.0)  # let the hostile calls start
        loaded.extend(await timed_searches(server.url, count))
        stop.set()

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(hostile_loop, server.url, stop, answers)
        group.start_soon(measure)
    idle_p95, loaded_p95 = percentile(idle, 0.95), percentile(loaded, 0.95)
    passed = loaded_p95 <= 2 * idle_p95
    print("\n2. hybrid_search, idle and with 4 clients running the slow SQL in a loop")
    print(f"   idle:   p50 {statistics.median(idle):7.1f} ms  p95 {idle_p95:7.1f} ms  n={count}")
    print(
        f"   loaded: p50 {statistics.median(loaded):7.1f} ms  p95 {loaded_p95:7.1f} ms  "
        f"n={count}  ({'ok' if passed else 'FAIL'}: p95 {loaded_p95 / idle_p95:.2f}x idle)"
    )
    print(f"   hostile answers: {answers}")
    return passed


# -- 3. HTTP load --------------------------------------------------------------------------------


def mixed_calls(doc_ids: list[str]) -> list[tuple[str, dict, bool]]:
    """(tool, arguments, expected to be refused)."""
    doc = doc_ids[0]
    return [
        ("hybrid_search", {"query": random.choice(QUERIES)}, False),
        ("run_sql", {"sql": f"SELECT count(*) FROM chunks WHERE doc_id = '{doc}'"}, False),
        ("list_documents", {}, False),
        ("get_outline", {"doc_id": random.choice(doc_ids)}, False),
        ("vector_search", {"query": random.choice(QUERIES)}, False),
        ("calculate", {"expr": "1234 * 5.5 / 3"}, False),
        ("view_page", {"doc_id": doc, "page_number": 1, "dpi": 72}, False),
        ("select_subtree", {"doc_id": doc, "limit": 10}, False),
        ("list_documents", {"offset": 2**70}, True),
        ("run_sql", {"sql": "DELETE FROM documents"}, True),
    ]


async def load_client(
    url: str, doc_ids: list[str], calls: int, times: dict[str, list[float]], errors: list[str]
) -> None:
    async with Client(url) as client:
        for _ in range(calls):
            tool, arguments, refused = random.choice(mixed_calls(doc_ids))
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, arguments)
            except Exception as exc:  # a transport failure is an error of the run
                errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            times.setdefault(tool, []).append((time.perf_counter() - started) * 1000)
            if result.is_error != refused:
                errors.append(f"{tool}: {result.content[0].text[:120]}")


async def http_load(server: Server, doc_ids: list[str], clients: int, calls: int) -> bool:
    before = server.watch.now()
    times: dict[str, list[float]] = {}
    errors: list[str] = []
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(load_client, server.url, doc_ids, calls, times, errors)
    wall = time.perf_counter() - started
    after = server.watch.now()
    every = [t for samples in times.values() for t in samples]
    print(f"\n3. HTTP load: {clients} clients x {calls} mixed calls in {wall:.1f} s")
    print(
        f"   calls {len(every)}  errors {len(errors)}  p50 {statistics.median(every):.0f} ms  "
        f"p95 {percentile(every, 0.95):.0f} ms; RSS server {mb(before[0])} -> {mb(after[0])}, "
        f"largest worker {mb(before[1])} -> {mb(after[1])}"
    )
    for tool, samples in sorted(times.items()):
        print(
            f"   {tool:16} n={len(samples):3}  p50 {statistics.median(samples):6.0f} ms  "
            f"p95 {percentile(samples, 0.95):6.0f} ms"
        )
    for error in errors[:5]:
        print(f"   error: {error}")
    return not errors


# -- 4. kills in the vector-write window --------------------------------------------------------


def kills(corpus: Path, count: int) -> bool:
    files = [corpus / name for name in KILL_PAPERS if (corpus / name).exists()]
    with tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch) / "index"
        samples = REPO / "docsym" / "samples"
        command = [sys.executable, "-m", "docsym", "index", str(samples), "--index", str(index)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([*command, "--quiet"], check=True, env=env)
        done, attempts, stray, failed_checks, hidden = 0, 0, 0, 0, []
        victims_seen: set[str] = set()
        started = time.perf_counter()
        while done < count and attempts < 3 * count:
            attempts += 1
            # Files are indexed in sorted order: dropping the first ones varies the victim.
            victims = sorted(files)[attempts % len(files) :]
            if not kill_in_window(victims, index, jitter=random.choice([0.0, 0.3, 2.0])):
                continue
            done += 1
            seen = agreement(index)
            hidden.append(seen.unpublished)
            victims_seen.update(seen.hidden_docs)
            stray += bool(seen.stray_hits)
            failed_checks += not seen.check_ok
        check = subprocess.run(
            [sys.executable, "-m", "docsym", "check", "--index", str(index)],
            capture_output=True,
            text=True,
            env=env,
        )
        shutil.rmtree(index, ignore_errors=True)
    passed = done >= count and not stray and not failed_checks and check.returncode == 0
    print(
        f"\n4. SIGKILL inside the vector-write window: {done} kills in {attempts} runs, "
        f"{len(victims_seen)} documents caught half-indexed,"
    )
    print(
        f"   {time.perf_counter() - started:.0f} s; unpublished entries at the kill: "
        f"min {min(hidden, default=0)} median {statistics.median(hidden or [0]):.0f} "
        f"max {max(hidden, default=0)}; kills with a stray hit {stray}; failed checks "
        f"{failed_checks}; `docsym check` after the last kill exits {check.returncode}"
        f" ({'ok' if passed else 'FAIL'})"
    )
    return passed


async def served(server: Server, args: argparse.Namespace) -> list[bool]:
    async with Client(server.url) as client:
        listed = await client.call_tool("list_documents", {"limit": 100})
    doc_ids = [row[0] for row in listed.structured_content["rows"]]
    results = [await probes(server, doc_ids[0])]
    results.append(await contention(server, args.searches))
    results.append(await http_load(server, doc_ids, args.clients, args.calls))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=25)
    args = parser.parse_args()
    settings = get_settings()
    print(
        f"SQL limits: {settings.sql_seconds:g} s, {settings.sql_memory_mb} MB, "
        f"{settings.sql_workers} workers, wait {settings.sql_wait_seconds:g} s; "
        f"{os.cpu_count()} CPUs"
    )
    server = start_server(args.index)
    try:
        results = anyio.run(served, server, args)
    finally:
        server.watch.stop()
        server.process.terminate()
        server.process.wait(timeout=15)
    if args.kills:
        results.append(kills(args.corpus, args.kills))
    print("\nall goals met" if all(results) else "\nsome goals were NOT met")


if __name__ == "__main__":
    main()
