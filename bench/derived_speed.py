"""What a server holds and how long its graph calls take on a library of N documents, and how
the first calls after one document is added compare: the derived structures (entity graphs,
document names, page labels) follow that document instead of being rebuilt from the whole store.

    python bench/derived_speed.py --index DIR [--python PATH] [--add PDF] [--doc FILE_NAME]
                                  [--keyword-only]

DIR is an index of many papers (``bench/folder_speed.py``'s folder, indexed with ``docsym
index FOLDER --index DIR``); it is copied to a scratch folder first, as a paper is added to the
copy. One ``docsym serve`` over stdio (``--python``: the interpreter of the installation to
measure, say an older version's virtual environment) answers, as a client sees it: the first
and repeated rank_nodes on ``--doc`` and library-wide find_entities, the server's RSS; then
``docsym index`` adds ``--add`` (default: a fresh copy of a corpus paper, distinct bytes) while
the server runs, and the first call of each tool after that publish is timed, then its RSS.
``--keyword-only`` adds it without vectors (an index whose run was stopped before its vectors
would otherwise encode every document awaiting them).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
import pymupdf
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stats import percentile  # noqa: E402

PAPERS = REPO.parent / "shared" / "corpus" / "papers"
RANK_QUESTIONS = [
    "Which pretrained model initialises the DPR question and passage encoders?",
    "BM25 negatives in-batch training",
    "How many passages does the Wikipedia corpus hold?",
    "What top-20 retrieval accuracy does DPR reach on Natural Questions?",
    "Which datasets are used for open-domain question answering?",
    "How is the dual encoder trained?",
]
ENTITY_QUERIES = [
    "BM25",
    "Dense Passage Retriever",
    "SciBERT",
    "TableFormer",
    "Semantic Scholar",
    "Natural Questions",
    "citation graph",
    "ColBERT",
]


def server_rss_mb() -> float:
    """The RSS of this process's ``docsym serve`` child (the stdio client spawned it)."""
    for child in psutil.Process().children(recursive=True):
        if "serve" in child.cmdline():
            return child.memory_info().rss / 2**20
    raise RuntimeError("no docsym serve process found")


async def timed(client: Client, tool: str, arguments: dict) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return (time.perf_counter() - started) * 1000


async def doc_id(client: Client, file_name: str) -> str:
    sql = f"SELECT doc_id FROM documents WHERE file_name = '{file_name}'"
    result = await client.call_tool("run_sql", {"sql": sql})
    assert not result.is_error and result.structured_content["rows"], file_name
    return result.structured_content["rows"][0][0]


def line(name: str, samples: list[float]) -> str:
    if len(samples) == 1:
        return f"{name:<44} {samples[0]:9.1f} ms"
    p95 = percentile(samples, 0.95)
    return (
        f"{name:<44} p50 {statistics.median(samples):7.1f} ms  p95 {p95:7.1f} ms  n={len(samples)}"
    )


async def measure(python: str, index: Path, added: Path, file_name: str, keyword: bool) -> None:
    server = StdioServerParameters(
        command=python, args=["-m", "docsym", "serve", "--index", str(index)], cwd=str(index.parent)
    )
    async with Client(server) as client:
        documents = await client.call_tool("run_sql", {"sql": "SELECT count(*) FROM documents"})
        print(f"documents: {documents.structured_content['rows'][0][0]}")
        doc = await doc_id(client, file_name)
        await timed(client, "hybrid_search", {"query": "warm up the encoder"})
        print(f"server RSS after a search: {server_rss_mb():.0f} MB")
        rank = {"query": RANK_QUESTIONS[0], "doc_id": doc}
        print(line("rank_nodes, first", [await timed(client, "rank_nodes", rank)]))
        repeated = [
            await timed(client, "rank_nodes", {"query": q, "doc_id": doc})
            for q in RANK_QUESTIONS[1:] * 3
        ]
        print(line("rank_nodes, repeated", repeated))
        first = {"query": ENTITY_QUERIES[0], "limit": 20}
        print(line("find_entities (library), first", [await timed(client, "find_entities", first)]))
        repeated = [
            await timed(client, "find_entities", {"query": q, "limit": 20})
            for q in ENTITY_QUERIES[1:] * 3
        ]
        print(line("find_entities (library), repeated", repeated))
        print(f"server RSS after the graph calls: {server_rss_mb():.0f} MB")
        started = time.perf_counter()
        command = [python, "-m", "docsym", "index", str(added), "--index", str(index)]
        command += ["--ocr", "off", "--quiet"] + (["--keyword-only"] if keyword else [])
        await anyio.run_process(command)
        print(f"one document added and published in {time.perf_counter() - started:.1f} s")
        after = [
            ("hybrid_search, first after the add", "hybrid_search", {"query": "DPR encoders"}),
            ("rank_nodes (untouched doc), first after", "rank_nodes", rank),
            ("find_entities (library), first after", "find_entities", first),
        ]
        for name, tool, arguments in after:
            print(line(name, [await timed(client, tool, arguments)]))
        new_doc = await doc_id(client, added.name)
        print(
            line(
                "rank_nodes (new doc), first",
                [
                    await timed(
                        client, "rank_nodes", {"query": RANK_QUESTIONS[0], "doc_id": new_doc}
                    )
                ],
            )
        )
        print(f"server RSS at the end: {server_rss_mb():.0f} MB")


def distinct_copy(folder: Path, source: Path) -> Path:
    """A copy of ``source`` with distinct bytes, so it is a new document."""
    target = folder / f"added-{source.name}"
    with pymupdf.open(source) as doc:
        doc.set_metadata({**doc.metadata, "subject": f"added {time.time()}"})
        doc.save(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--add", type=Path, default=PAPERS / "2004.04906v3_dpr.pdf")
    parser.add_argument("--doc", default="0001-2004.04906v3_dpr.pdf")
    parser.add_argument("--keyword-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch) / "index"
        shutil.copytree(args.index, index)
        added = distinct_copy(Path(scratch), args.add)
        anyio.run(measure, args.python, index, added, args.doc, args.keyword_only)


if __name__ == "__main__":
    main()
