"""What a publish costs as the library grows: the whole file copied (one-file publishing, which
DOCSYM_SEGMENT_MB larger than the index gives) against segments (the default).

The library is built by a shortcut, said here and in what this prints: the rows of an index the
indexer built (``--source``, e.g. the corpus papers) are repeated until they make ``--papers``
documents, each copy's ids prefixed so that every row is distinct. Only the DuckDB side is built:
the vector file is written in place either way. Then, in a subprocess per way of publishing:

- a writer's start (``IndexWriter.__enter__``: a copy of the whole file before; with segments a
  new head, or a copy of a small one);
- five times, one more document written (a copy of one of the source's), then published (the
  publish timed);
- the end of the run (the final publish);

and reads of what was published: ``index_status``'s first call (it counts every view), and
statements the tools run, p50 of 20 rounds.

    python bench/publish_scale.py --source CORPUS_INDEX --papers 1000 --work /tmp/ps
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

import duckdb

from docsym.storage import schema
from docsym.storage.directory.store import DirectoryStore
from docsym.tools.documents import index_status

WAYS = {"one file": "1000000", "segments": ""}  # DOCSYM_SEGMENT_MB ("" = the default)

RUN = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from publish_scale import copy_rows
from docsym.storage.directory.writer import IndexWriter

index, donor = Path(sys.argv[1]), sys.argv[2]
timings = {}
started = time.perf_counter()
writer = IndexWriter(index, publish_every=0)
writer.__enter__()
timings["start_s"] = time.perf_counter() - started
timings["publish_s"] = []
for n in range(5):
    writer.con.execute("BEGIN TRANSACTION")
    copy_rows(writer.con, "", f"{writer._head}.", f"new{n}_", [donor])
    writer.con.execute("COMMIT")
    writer._dirty = True
    started = time.perf_counter()
    writer.publish()
    timings["publish_s"].append(time.perf_counter() - started)
started = time.perf_counter()
writer.__exit__(None, None, None)
timings["final_s"] = time.perf_counter() - started
print(json.dumps(timings))
"""

READS = [  # what tools run on every call, on one document and across the library
    ("list documents", "SELECT doc_id, title, page_count FROM documents ORDER BY doc_id LIMIT 50"),
    ("one document's chunks", "SELECT chunk_id, text FROM chunks WHERE doc_id = $doc"),
    ("one document's tree", "SELECT node_id, parent_id, title FROM tree_nodes WHERE doc_id = $doc"),
    ("a sentence by id", "SELECT text, bbox FROM sentences WHERE sentence_id = $sentence"),
    ("count sentences", "SELECT count(*) FROM sentences"),
    ("entities by name", "SELECT entity_id FROM entities WHERE lower(name) = 'bm25' LIMIT 50"),
]


def copy_rows(con, source: str, target: str, prefix: str, doc_ids: list[str] | None) -> None:
    """Insert the rows of ``source`` tables (a catalog prefix such as ``src.``) into ``target``
    ones, every id prefixed with ``prefix`` (ids start with their doc id, so they stay unique
    and consistent); only ``doc_ids``' rows when given."""
    for table in schema.TABLES:
        columns = [c.name for c in table.columns]
        exprs = ", ".join(_copied(c.name, c.type, prefix) for c in table.columns)
        where = " WHERE doc_id = ANY(?)" if doc_ids is not None else ""
        con.execute(
            f"INSERT INTO {target}{table.name} ({', '.join(columns)}) "
            f"SELECT {exprs} FROM {source}{table.name}{where}",
            [doc_ids] if doc_ids is not None else [],
        )


def _copied(name: str, sql_type: str, prefix: str) -> str:
    if sql_type.upper() == "VARCHAR" and (name.endswith("_id") or name == "path"):
        return f"'{prefix}' || {name}"
    if sql_type.upper() == "VARCHAR[]" and name.endswith("_ids"):
        return f"list_transform({name}, lambda x: '{prefix}' || x)"
    return name


def build_library(source: Path, papers: int, out: Path) -> Path:
    """``out``/index.duckdb holding ``papers`` documents: the source's, repeated (kept)."""
    library = out / f"library-{papers}"
    done = library / "built"
    if done.exists():
        return library
    # The source's vector file, so a store opens on the library (its entries are not the copies').
    vectors = library / "vectors.sqlite"
    shutil.rmtree(library, ignore_errors=True)
    library.mkdir(parents=True)
    target = library / "index.duckdb"
    shutil.copyfile(source / "index.duckdb", target)
    shutil.copyfile(source / "vectors.sqlite", vectors)
    with duckdb.connect(str(target)) as con:
        con.execute(f"ATTACH '{source / 'index.duckdb'}' AS src (READ_ONLY)")
        rows = con.execute("SELECT doc_id FROM src.documents ORDER BY 1").fetchall()
        doc_ids = [d for (d,) in rows]
        copy = 1
        while (copy + 1) * len(doc_ids) <= papers:
            con.execute("BEGIN TRANSACTION")
            copy_rows(con, "src.", "", f"c{copy}_", None)
            con.execute("COMMIT")
            copy += 1
        rest = papers - copy * len(doc_ids)
        if rest > 0:
            copy_rows(con, "src.", "", f"c{copy}_", doc_ids[:rest])
        con.execute("CHECKPOINT")
    done.touch()
    return library


def run_way(library: Path, work: Path, segment_mb: str) -> dict:
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(library, index, ignore=shutil.ignore_patterns("built"))
    env = {k: v for k, v in os.environ.items() if k != "DOCSYM_SEGMENT_MB"}
    if segment_mb:
        env["DOCSYM_SEGMENT_MB"] = segment_mb
    with duckdb.connect(str(index / "index.duckdb"), read_only=True) as con:
        (donor,) = con.execute("SELECT min(doc_id) FROM documents").fetchone()
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(index), donor, here],
        env=env, capture_output=True, text=True,
    )
    if done.returncode:
        raise SystemExit(f"the writer failed:\n{done.stderr[-3000:]}")
    timings = json.loads(done.stdout.strip().splitlines()[-1])
    timings["reads_ms"] = read_latencies(index)
    timings["files"] = sorted(p.name for p in index.rglob("*.duckdb"))
    return timings


def read_latencies(index: Path) -> dict[str, float]:
    store = DirectoryStore(index)
    try:
        con = store.sql()
        doc = con.execute("SELECT max(doc_id) FROM documents").fetchone()[0]
        sentence = con.execute(
            "SELECT max(sentence_id) FROM sentences WHERE doc_id = ?", [doc]
        ).fetchone()[0]
        started = time.perf_counter()
        index_status(store)  # counts every view: once per generation
        found = {"index_status, first (ms)": round((time.perf_counter() - started) * 1000, 1)}
        for name, sql in READS:
            statement = sql.replace("$doc", "?").replace("$sentence", "?")
            params = [doc] if "$doc" in sql else [sentence] if "$sentence" in sql else []
            times = []
            for _ in range(20):
                started = time.perf_counter()
                store.sql().execute(statement, params).fetchall()
                times.append((time.perf_counter() - started) * 1000)
            found[name] = round(statistics.median(times), 2)
        return found
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="an index the indexer built")
    parser.add_argument("--papers", type=int, nargs="+", default=[1000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/publish-scale"))
    args = parser.parse_args()
    for papers in args.papers:
        library = build_library(args.source, papers, args.work)
        size_mb = (library / "index.duckdb").stat().st_size / 2**20
        print(f"## {papers} documents (source rows repeated), index.duckdb {size_mb:,.0f} MB")
        for way, segment_mb in WAYS.items():
            found = run_way(library, args.work, segment_mb)
            publishes = found["publish_s"]
            print(
                f"{way:>9}: start {found['start_s']:.2f} s; publish p50 "
                f"{statistics.median(publishes):.2f} s, max {max(publishes):.2f} s; final "
                f"{found['final_s']:.2f} s; files {found['files']}"
            )
            print(f"{'':>9}  reads (ms, p50): {found['reads_ms']}")


if __name__ == "__main__":
    main()
