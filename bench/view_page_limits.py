"""view_page on pages costly to draw, against a real server: the limits hold, the server stays
small and its other tools keep answering.

    python bench/view_page_limits.py [--calls 5] [--searches 40] [--python PY]
    python bench/view_page_limits.py --corpus ../shared/corpus [--memory-mb 128]

Indexes the bundled samples plus ``tests/bad_files.py``'s ``costly_pages_pdf`` (a 20,000 x
20,000 px image, nested transparency groups, a 3,000 x 3,000 px JPEG 2000 image), starts
``docsym serve`` over stdio with the mcp SDK's client (``--python`` picks the interpreter, so
an older install can be measured the same way) and samples the server's resident memory and,
apart, its largest child's (psutil). Prints:

1. ``hybrid_search`` p50/p95 on an idle server;
2. each costly page drawn alone: time, outcome (drawn at what dpi, or the message);
3. ``--calls`` calls at once on the 20,000 x 20,000 px page while ``hybrid_search`` runs in a
   loop: each call's time and outcome, the searches' p50/p95 (goal: p50 under 200 ms), and the
   server's RSS before, at its peak and after (goal: not growing with the renders).

``--corpus DIR`` instead draws every page of every PDF under DIR at 300 dpi (lowered to the
4-megapixel cap) in one render worker under ``--memory-mb`` and prints the slowest pages and any
page that needed a lower dpi or was refused: the figures behind the default limits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.hostile import MB, RssWatch, mb  # noqa: E402
from bench.mcp_latency import QUESTIONS  # noqa: E402
from bench.stats import percentile  # noqa: E402
from tests.bad_files import COSTLY_PAGES, costly_pages_pdf  # noqa: E402

HUGE = COSTLY_PAGES["huge_image"]
PLAIN = COSTLY_PAGES["plain"]
HUGE_LABEL = "20,000 x 20,000 px image"
GOAL_P50_MS = 200


def latencies(samples: list[float]) -> str:
    return (
        f"p50 {statistics.median(samples):7.1f} ms   p95 {percentile(samples, 0.95):7.1f} ms   "
        f"n={len(samples)}"
    )


def outcome(result) -> str:
    if result.is_error:
        return "refused: " + result.content[0].text
    page = result.structured_content
    return f"drawn {page['width_px']}x{page['height_px']} px at {page['dpi']} dpi" + (
        f" ({page['note']})" if page.get("note") else ""
    )


def server_process(index: Path) -> psutil.Process:
    """The ``docsym serve`` the client started (a child of this process)."""
    for child in psutil.Process().children(recursive=True):
        try:
            if "serve" in child.cmdline() and str(index) in child.cmdline():
                return child
        except psutil.NoSuchProcess:
            continue
    raise SystemExit("the server process was not found")


async def measure(index: Path, python: str, calls: int, searches: int) -> None:
    server = StdioServerParameters(
        command=python,
        args=["-m", "docsym", "serve", "--index", str(index)],
        cwd=str(index.parent),  # not the checkout: the interpreter's own install serves
    )
    async with Client(server) as client:
        watch = RssWatch(server_process(index).pid)
        listed = await client.call_tool(
            "run_sql", {"sql": "SELECT doc_id, file_name FROM documents"}
        )
        doc_id = next(r[0] for r in listed.structured_content["rows"] if r[1] == "costly.pdf")
        questions = [{"query": q} for q in QUESTIONS]

        async def search(n: int) -> float:
            started = time.perf_counter()
            result = await client.call_tool("hybrid_search", questions[n % len(questions)])
            assert not result.is_error, result.content[0].text
            return (time.perf_counter() - started) * 1000

        for n in range(3):  # warm-up: the model, and view_page's first page
            await search(n)
        await client.call_tool("view_page", {"doc_id": doc_id, "page_number": PLAIN, "dpi": 72})
        idle = [await search(n) for n in range(searches)]
        print(f"1. hybrid_search, idle server: {latencies(idle)}")

        print("\n2. each costly page alone (default dpi 110)")
        for name, page in COSTLY_PAGES.items():
            started = time.perf_counter()
            result = await client.call_tool("view_page", {"doc_id": doc_id, "page_number": page})
            elapsed = time.perf_counter() - started
            print(f"   {name:14} {elapsed:6.2f} s  {outcome(result)[:260]}")

        before, _ = watch.now()
        watch.reset()
        print(f"\n3. {calls} calls at once on the {HUGE_LABEL} page, hybrid_search meanwhile")
        done: list[tuple[float, str]] = []
        meanwhile: list[float] = []

        async def draw() -> None:
            started = time.perf_counter()
            args = {"doc_id": doc_id, "page_number": HUGE}
            result = await client.call_tool("view_page", args)
            done.append((time.perf_counter() - started, outcome(result)))

        async def keep_searching() -> None:
            n = 0
            while len(done) < calls:
                meanwhile.append(await search(n))
                n += 1

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(draw)
            group.start_soon(keep_searching)
        wall = time.perf_counter() - started
        peak, worker_peak = watch.peaks()
        after, _ = watch.now()
        for elapsed, text in sorted(done):
            print(f"   {elapsed:6.2f} s  {text[:200]}")
        verdict = "ok" if statistics.median(meanwhile) < GOAL_P50_MS else "FAIL"
        print(f"   all {calls} answered in {wall:.1f} s")
        print(f"   hybrid_search meanwhile: {latencies(meanwhile)}  {verdict} (goal p50 < 200 ms)")
        print(
            f"   server RSS before {mb(before)}, peak {mb(peak)}, after {mb(after)} "
            f"(+{(after - before) / MB:.0f} MB); largest child (render worker) peak "
            f"{mb(worker_peak)}"
        )
        watch.stop()


def corpus_pages(corpus: Path, memory_mb: int) -> None:
    """Every page of the corpus at 300 dpi, one render worker, under ``memory_mb``."""
    import pymupdf

    from docsym.runtime.process_pool import PoolLimits, ProcessPool, WorkerStopped
    from docsym.tools.page_render import RECYCLE_MB
    from docsym.tools.pages import MAX_PIXELS

    limits = PoolLimits(seconds=600, memory_mb=memory_mb, workers=1, wait=1)
    pool = ProcessPool(
        "docsym.tools.render_worker", [str(memory_mb)], limits, recycle_mb=RECYCLE_MB
    )
    timed, troubled = [], []
    try:
        for path in sorted(corpus.rglob("*.pdf")):
            with pymupdf.open(path) as doc:
                pages = doc.page_count
            for page in range(1, pages + 1):
                request = {"path": os.fspath(path), "sha256": None, "page": page, "box": None}
                request |= {"dpi": 300, "max_pixels": MAX_PIXELS, "marks": []}
                started = time.perf_counter()
                try:
                    reply = pool.ask(request)
                except WorkerStopped as stop:
                    reply = {"error": f"stopped: {stop.limit}"}
                elapsed = time.perf_counter() - started
                name = f"{path.relative_to(corpus)} p{page}"
                timed.append((elapsed, name, reply.get("dpi")))
                if "error" in reply or any("memory" in n for n in reply["notes"]):
                    troubled.append((name, reply.get("error") or reply["notes"][-1]))
    finally:
        pool.close()
    timed.sort(reverse=True)
    total = sum(t[0] for t in timed)
    print(f"{len(timed)} pages at 300 dpi under {memory_mb} MB; total {total:.0f} s")
    for elapsed, name, dpi in timed[:5]:
        print(f"   {elapsed:6.2f} s  {name} (drawn at {dpi} dpi)")
    print(f"   pages drawn at a lower dpi for memory, or refused: {len(troubled)}")
    for name, why in troubled[:10]:
        print(f"   {name}: {why[:120]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--python", default=sys.executable, help="the server's interpreter")
    parser.add_argument("--corpus", type=Path, help="draw every page of DIR's PDFs instead")
    parser.add_argument("--memory-mb", type=int, default=128, help="with --corpus")
    args = parser.parse_args()
    if args.corpus:
        corpus_pages(args.corpus, args.memory_mb)
        return
    from docsym.indexer.pipeline import index_paths

    with tempfile.TemporaryDirectory() as tmp:
        docs, index = Path(tmp) / "docs", Path(tmp) / "index"
        docs.mkdir()
        costly_pages_pdf(docs / "costly.pdf")
        report = index_paths([REPO / "docsym" / "samples", docs], index, ocr="off")
        assert report.ok, report.failed
        anyio.run(measure, index, args.python, args.calls, args.searches)


if __name__ == "__main__":
    main()
