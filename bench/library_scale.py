"""A library of N papers on the directory store: first index, disk, server start and memory,
tool latency, a saved paper's way into the watched library, and retrieval against the corpus.

    python bench/library_scale.py --papers 1000 --work DIR [--phase index|eval|serve|watch|all]

The library is ``--papers`` copies of the corpus papers (../shared/corpus/papers), each made
distinct as ``bench/folder_speed.py`` makes them, in DIR/library. Phases, each recorded in
DIR/results.json and skipped once recorded (``--redo`` runs it again), so a 10,000-paper run
can be split over several sittings (``--index-minutes M`` stops the first index after M minutes;
the next run continues it, and the figures sum its runs):

- index: ``docsym index DIR/library --ocr off`` into DIR/index, polled (folder_speed's
  ``timed_index``): seconds to the first searchable document, to every paper listed, to
  complete (every vector written); disk per page. A run stopped midway is continued by the next
  (its segments are summed). Then the corpus subset the QA sets ask about (papers, long_docs,
  scanned, tables; OCR off, as tests/conftest.py indexes it) is added, so the copies are its
  distractors.
- eval: hybrid recall@5 of the dev set (../shared/dev-qa/qa.jsonl) and of docsym's own set
  (bench/qa/docsym_qa.jsonl, held out from ranking work) on DIR/index against an index of the
  corpus subset alone (DIR/corpus-index), by ``tools/evaluate.py``. On the library twice: a hit
  counts only from the gold file, and from the gold file or a copy of it (the copies repeat its
  pages word for word, so the first score ranks identical pages against each other).
- serve: ``docsym serve --index DIR/index`` under the mcp SDK's stdio client: seconds from the
  spawn to the first tools/list answer; the server's RSS idle, and after the first call of each
  tool and then 100 mixed calls (20 each of hybrid_search, vector_search, rank_nodes,
  find_entities, select_subtree, in turn). The calls go on in turn to SAMPLES of each tool, and
  p50/p95 are over those (a p50 of 20 calls moved by 30 ms between runs).
- grow (only when asked: it adds to the library): ``--grow N`` more papers (copies numbered
  past the library's, in DIR/grown-K) indexed into an empty index and then into DIR/index,
  both polled as the first index is: does a paper cost more to add to a large library?
- watch: ``docsym serve --index DIR/index --watch DIR/library``; probe papers (a corpus paper
  with a unique word on its first page) saved into the library one at a time, each timed to
  searchable (its word's first hit) and complete (vectors written) by ``bench/watch_latency.py``'s
  ``time_saved_paper``. The first is saved as the server starts, so it waits for the watcher's
  first pass over the whole library; the others find it following. Then the probes are deleted
  and timed until the index no longer lists them.

Goals (issue 45, at 10,000 papers on 2 cores): server start <= 3 s, RSS <= 1 GB after the 100
calls, hybrid_search p50 <= 100 ms and p95 <= 300 ms, a saved paper searchable <= 10 s and
complete <= 60 s, R@5 within 0.02 of the corpus-only index; first index searchable within 30
minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.folder_speed import PAPERS, make_folder, timed_index  # noqa: E402
from bench.stats import percentile  # noqa: E402
from bench.watch_latency import time_saved_paper  # noqa: E402
from docsym.tools.evaluate import QAItem  # noqa: E402

CORPUS = PAPERS.parent
CORPUS_SUBSET = ("papers", "long_docs", "scanned", "tables")  # tests/conftest.py's corpus index
QA_SETS = {
    "dev": REPO.parent / "shared" / "dev-qa" / "qa.jsonl",
    "held-out": REPO / "bench" / "qa" / "docsym_qa.jsonl",
}
TOOLS = ("hybrid_search", "vector_search", "rank_nodes", "find_entities", "select_subtree")
MIXED_CALLS = 100  # the calls before the server's RSS is read
SAMPLES = 80  # calls of each tool timed (the mixed calls' and as many more, in the same turn)
ENTITIES = ("BM25", "DPR", "SPECTER", "Natural Questions", "S2ORC", "TableFormer", "BERT")
PHASES = ("index", "eval", "serve", "watch")
PROBE_SOURCE = PAPERS / "2020.acl-main.207_specter.pdf"
POLL = 0.2


# -- the library and its first index ---------------------------------------------------------


def phase_index(work: Path, papers: int, docsym: str, minutes: float | None) -> dict | None:
    """Copies made (those present kept), indexed into DIR/index, then the corpus added. With
    ``minutes``, the run stops after that long and None is returned: the next run continues."""
    library, index = work / "library", work / "index"
    library.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    pages = make_folder(library, papers)
    made = time.perf_counter() - started
    segments = _load(work).get("index_segments", [])
    stop_after = minutes * 60 if minutes else None
    segments.append(timed_index(docsym, library, index, papers, stop_after))
    _save(work, {"index_segments": segments})  # a stopped run's segments are kept
    if segments[-1]["stopped"]:
        return None
    disk = _disk_bytes(index)
    started = time.perf_counter()
    _index(docsym, [CORPUS / part for part in CORPUS_SUBSET], index)
    return {
        "papers": papers,
        "pages": pages,
        "copies_seconds": made,
        **_summed(segments),
        "disk_bytes": disk,
        "disk_per_page_kb": disk / pages / 1024,
        "corpus_added_s": time.perf_counter() - started,
    }


def _summed(segments: list[dict]) -> dict:
    """The first index's figures over its runs: a later run's seconds count from the end of
    the runs before it."""
    before = [sum(s["complete"] for s in segments[:n]) for n in range(len(segments))]
    ends = zip(before, segments, strict=True)
    listed = next(b + s["all"] for b, s in ends if s["all"] is not None)
    return {
        "segments": len(segments),
        "first_searchable_s": segments[0]["first"],
        "all_searchable_s": listed,
        "complete_s": before[-1] + segments[-1]["complete"],
        "documents": segments[-1]["docs"],
    }


def _index(docsym: str, paths: list[Path], index: Path) -> None:
    command = [docsym, "index", *map(str, paths), "--index", str(index), "--ocr", "off"]
    subprocess.run([*command, "--quiet"], check=True, stdout=subprocess.DEVNULL)


def _disk_bytes(index: Path) -> int:
    return sum(p.stat().st_size for p in index.rglob("*") if p.is_file())


# -- retrieval against the corpus alone ----------------------------------------------------------


def phase_grow(work: Path, docsym: str, papers: int) -> dict:
    """``papers`` new copies into an empty index, then into the library's; seconds and pages
    a second for each."""
    import tempfile

    index = work / "index"
    before = _documents(index)
    folder = work / f"grown-{before}"
    folder.mkdir(exist_ok=True)
    pages = make_folder(folder, papers, first=before)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        empty = timed_index(docsym, folder, Path(scratch) / "index", papers)
    library = timed_index(docsym, folder, index, before + papers)
    return {
        "papers": papers,
        "pages": pages,
        "library_documents_before": before,
        **{
            f"{into}_{key}_s": found[key]
            for into, found in (("empty", empty), ("library", library))
            for key in ("first", "all", "complete")
        },
    }


def _documents(index: Path) -> int:
    from docsym.storage.backends import open_store

    store = open_store(index)
    try:
        return int(store.sql().execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        store.close()


def phase_eval(work: Path, docsym: str) -> dict:
    """Hybrid recall@5 of each QA set on the library index and on the corpus-only index."""
    from docsym.storage.backends import open_store
    from docsym.tools.evaluate import evaluate, load_qa

    corpus_index = work / "corpus-index"
    _index(docsym, [CORPUS / part for part in CORPUS_SUBSET], corpus_index)  # made, or checked
    found: dict[str, dict[str, float]] = {}
    for label, index in (("library", work / "index"), ("corpus", corpus_index)):
        store = open_store(index)
        try:
            for name, path in QA_SETS.items():
                items = load_qa(path)
                (score,) = evaluate(store, items, modes=["hybrid"])
                found.setdefault(name, {})[label] = score.recall[5]
                if label == "library":
                    (score,) = evaluate(store, [_any_copy(item) for item in items], ["hybrid"])
                    found[name]["library_any_copy"] = score.recall[5]
        finally:
            store.close()
    return {"hybrid_r5": found}


def _any_copy(item: QAItem) -> QAItem:
    """The question answered by its file or any copy of it: a copy ("0042-NAME") holds the same
    pages, so the strict score counts a tie among identical pages as a miss."""
    return item.model_copy(update={"file": Path(item.file).name})


# -- the server: start, memory, latency -----------------------------------------------------------


def phase_serve(work: Path) -> dict:
    return anyio.run(_serve, work)


async def _serve(work: Path) -> dict:
    server = server_parameters(work / "index")
    with (work / "serve.stderr").open("w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(server, errlog=errlog)) as client:
            await client.list_tools()
            start_s = time.perf_counter() - started
            process = server_process()
            await anyio.sleep(2)  # idle: what the server holds before any call
            idle = process.memory_info().rss
            calls = await _calls(client)
            first = {}
            for tool in TOOLS:  # each tool's first call loads what it needs
                first[tool] = await _timed(client, *calls[tool][0])
            samples: dict[str, list[float]] = {tool: [] for tool in TOOLS}
            for k in range(SAMPLES * len(TOOLS)):
                if k == MIXED_CALLS:
                    after = process.memory_info()
                tool = TOOLS[k % len(TOOLS)]
                samples[tool].append(await _timed(client, *calls[tool][1 + k // len(TOOLS)]))
            after_all = process.memory_info().rss
    return {
        "start_s": start_s,
        "rss_idle_mb": idle / 2**20,
        "rss_after_mb": after.rss / 2**20,
        # Pages of mapped files (the sign file, the libraries): the kernel's to drop, shared.
        "rss_after_file_mb": after.shared / 2**20,
        "rss_after_all_mb": after_all / 2**20,
        "first_call_ms": first,
        "latency_ms": {
            tool: {"p50": statistics.median(ms), "p95": percentile(ms, 0.95), "n": len(ms)}
            for tool, ms in samples.items()
        },
    }


def server_parameters(index: Path, watch: Path | None = None) -> StdioServerParameters:
    args = ["-m", "docsym", "serve", "--index", str(index)]
    if watch is not None:
        args += ["--watch", str(watch)]
    env = {**os.environ, "DOCSYM_WATCH_SETTLE_SECONDS": "1"}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def server_process() -> psutil.Process:
    """The ``docsym serve`` process the client started (a child of this one)."""
    for child in psutil.Process().children(recursive=True):
        if "serve" in child.cmdline():
            return child
    raise SystemExit("no docsym serve process found")


async def _calls(client: Client) -> dict[str, list[tuple[str, dict]]]:
    """1 + SAMPLES calls of each tool: questions from the QA sets (81), documents of the
    library, the names of ENTITIES."""
    questions = [json.loads(line)["question"] for path in QA_SETS.values()
                 for line in path.read_text().splitlines() if line.strip()]
    listed = (await client.call_tool("list_documents", {"limit": 200})).structured_content
    doc_ids = [row[listed["columns"].index("doc_id")] for row in listed["rows"]]
    calls: dict[str, list[tuple[str, dict]]] = {tool: [] for tool in TOOLS}
    for n in range(1 + SAMPLES):
        question, doc_id = questions[n % len(questions)], doc_ids[n % len(doc_ids)]
        calls["hybrid_search"].append(("hybrid_search", {"query": question}))
        calls["vector_search"].append(
            ("vector_search", {"query": questions[-1 - n], "collection": "minilm"})
        )
        calls["rank_nodes"].append(("rank_nodes", {"query": question, "doc_id": doc_id}))
        calls["find_entities"].append(("find_entities", {"query": ENTITIES[n % len(ENTITIES)]}))
        calls["select_subtree"].append(("select_subtree", {"doc_id": doc_id}))
    return calls


async def _timed(client: Client, tool: str, arguments: dict) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise SystemExit(f"{tool}({arguments}) failed: {result.content[0].text}")
    return elapsed


# -- a paper saved into the watched library ------------------------------------------------------


def phase_watch(work: Path, probes: int) -> dict:
    return anyio.run(_watch, work, probes)


async def _watch(work: Path, probes: int) -> dict:
    from docsym.storage.backends import open_store

    library, index = work / "library", work / "index"
    library.mkdir(exist_ok=True)  # a cloned library's is empty: no clone has a file under it
    made = [_probe(work / "probes", n) for n in range(probes)]
    rows = []
    with (work / "watch.stderr").open("w") as errlog:
        async with Client(stdio_client(server_parameters(index, library), errlog=errlog)) as client:
            await client.list_tools()
            for source, word in made:  # polled from here, as a second reader would
                rows.append(time_saved_paper(source, library, index, open_store, query=word))
            await client.call_tool("list_documents", {"limit": 1})  # it still answers
            gone_s = _delete_probes(library, index, [source.name for source, _ in made])
    searchable, complete = [r[2] for r in rows], [r[3] for r in rows]
    return {
        "first_probe": {"searchable_s": searchable[0], "complete_s": complete[0]},
        "following": {
            "searchable_s": statistics.median(searchable[1:]) if probes > 1 else None,
            "complete_s": statistics.median(complete[1:]) if probes > 1 else None,
            "n": probes - 1,
        },
        "deleted_gone_s": gone_s,
    }


def _probe(folder: Path, n: int) -> tuple[Path, str]:
    """A corpus paper with a word no other document holds on its first page."""
    import pymupdf

    folder.mkdir(exist_ok=True)
    word = f"zanthoprobe{n}q{int(time.time())}"
    path = folder / f"probe-{word}.pdf"
    with pymupdf.open(PROBE_SOURCE) as doc:
        doc[0].insert_text((72, 30), f"Probe {word}", fontsize=9)
        doc.save(path)
    return path, word


def _delete_probes(library: Path, index: Path, names: list[str]) -> float:
    """Delete the saved probes; seconds until the published index lists none of them."""
    from docsym.storage.backends import open_store

    for name in names:
        (library / name).unlink()
    deleted = time.monotonic()
    marks = ", ".join("?" for _ in names)
    while True:
        time.sleep(POLL)
        store = open_store(index)
        try:
            sql = f"SELECT count(*) FROM documents WHERE file_name IN ({marks})"
            left = store.sql().execute(sql, names).fetchone()[0]
        finally:
            store.close()
        if not left:
            return time.monotonic() - deleted


# -- results -------------------------------------------------------------------------------------


def _load(work: Path) -> dict:
    path = work / "results.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _save(work: Path, update: dict) -> None:
    results = {**_load(work), **update}
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")


def _print_table(results: dict) -> None:
    rows: list[tuple[str, str]] = []
    if "index" in results and "shortcut" in results["index"]:  # bench/library_clone.py
        r = results["index"]
        rows += [
            ("papers (pages)", f"{r['papers']} ({r['pages']:,})"),
            ("first index", f"none: {r['shortcut']} in {r['clone_s']:.0f} s"),
            ("disk per page", f"{r['disk_per_page_kb']:.0f} KB ({r['disk_bytes'] / 2**20:.0f} MB)"),
        ]
    elif "index" in results:
        r = results["index"]
        rows += [
            ("papers (pages)", f"{r['papers']} ({r['pages']:,})"),
            ("first index: first searchable", f"{r['first_searchable_s']:.1f} s"),
            ("first index: all searchable", f"{r['all_searchable_s']:.1f} s"),
            ("first index: complete", f"{r['complete_s']:.1f} s ({r['segments']} run(s))"),
            ("disk per page", f"{r['disk_per_page_kb']:.0f} KB ({r['disk_bytes'] / 2**20:.0f} MB)"),
        ]
    if "serve" in results:
        r = results["serve"]
        rows += [
            ("server start (spawn to tools/list)", f"{r['start_s']:.2f} s"),
            ("server RSS idle", f"{r['rss_idle_mb']:.0f} MB"),
            (
                "server RSS after 100 mixed calls",
                f"{r['rss_after_mb']:.0f} MB ({r.get('rss_after_file_mb', 0):.0f} MB of it files)",
            ),
        ]
        if "rss_after_all_mb" in r:
            label = f"server RSS after {SAMPLES * len(TOOLS)} mixed calls"
            rows.append((label, f"{r['rss_after_all_mb']:.0f} MB"))
        for tool, ms in r["latency_ms"].items():
            first = r["first_call_ms"][tool]
            rows.append(
                (f"{tool} p50 / p95 (first call)",
                 f"{ms['p50']:.0f} / {ms['p95']:.0f} ms ({first:.0f} ms)")
            )
    if "watch" in results:
        r = results["watch"]
        first, following = r["first_probe"], r["following"]
        rows.append(
            ("saved at server start: searchable / complete",
             f"{first['searchable_s']:.1f} / {first['complete_s']:.1f} s")
        )
        if following["n"]:
            rows.append(
                (f"saved later (median of {following['n']}): searchable / complete",
                 f"{following['searchable_s']:.1f} / {following['complete_s']:.1f} s")
            )
        rows.append(("deleted to gone from the index", f"{r['deleted_gone_s']:.1f} s"))
    if "grow" in results:
        r = results["grow"]
        for into in ("empty", "library"):
            label = "an empty index" if into == "empty" else f"{r['library_documents_before']:,}"
            searchable, complete = r[f"{into}_all_s"], r[f"{into}_complete_s"]
            rows.append(
                (f"{r['papers']} more papers into {label}: searchable / complete",
                 f"{searchable:.1f} / {complete:.1f} s "
                 f"({r['pages'] / searchable:.1f} / {r['pages'] / complete:.1f} pages/s)")
            )
    if "eval" in results:
        for name, by in results["eval"]["hybrid_r5"].items():
            rows.append(
                (f"hybrid R@5 {name}: library / any copy / corpus only",
                 f"{by['library']:.3f} / {by['library_any_copy']:.3f} / {by['corpus']:.3f}")
            )
    width = max(len(label) for label, _ in rows) if rows else 0
    for label, value in rows:
        print(f"  {label:{width}}  {value}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, required=True)
    parser.add_argument("--work", type=Path, required=True, help="library, indexes, results")
    parser.add_argument("--phase", choices=[*PHASES, "grow", "all"], default="all")
    parser.add_argument("--grow", type=int, default=100, help="papers added in the grow phase")
    parser.add_argument("--redo", action="store_true", help="run recorded phases again")
    parser.add_argument("--probes", type=int, default=3, help="papers saved in the watch phase")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--index-minutes", type=float, help="stop the first index after this long (continued)"
    )
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if _load(work).get("papers", args.papers) != args.papers:
        raise SystemExit(f"{work} holds a library of {_load(work)['papers']} papers")
    _save(work, {"papers": args.papers})
    docsym = str(Path(sys.executable).with_name("docsym"))
    if not Path(docsym).exists():
        docsym = shutil.which("docsym") or "docsym"
    run = {
        "index": lambda: phase_index(work, args.papers, docsym, args.index_minutes),
        "eval": lambda: phase_eval(work, docsym),
        "serve": lambda: phase_serve(work),
        "watch": lambda: phase_watch(work, args.probes),
        "grow": lambda: phase_grow(work, docsym, args.grow),
    }
    for phase in PHASES if args.phase == "all" else (args.phase,):
        if phase in _load(work) and not args.redo:
            print(f"{phase}: recorded in {work / 'results.json'} (--redo runs it again)")
            continue
        if phase != "index" and "index" not in _load(work):
            raise SystemExit(f"{phase} needs the index phase first")
        if phase == "index" and args.redo:  # a first index again: from nothing
            shutil.rmtree(work / "index", ignore_errors=True)
            _save(work, {"index_segments": []})
        print(f"{phase} ...", flush=True)
        result = run[phase]()
        if result is None:
            print(f"{phase}: stopped after --index-minutes; run again to continue")
            return 0
        _save(work, {phase: result})
    results = _load(work)
    print(f"\n{args.papers} papers, {work}")
    _print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
