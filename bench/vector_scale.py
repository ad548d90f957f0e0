"""Dense search at library scale: the sign file against the in-memory index, on a synthetic
``vectors.sqlite`` of N 384-d vectors written through the project's own writer.

    python bench/vector_scale.py build  --dir /tmp/vs1m --vectors 1000000
    python bench/vector_scale.py truth  --dir /tmp/vs1m
    python bench/vector_scale.py search --dir /tmp/vs1m --mode signs    # or whole, or memory

``build`` writes documents of 400 entries each (70% chunks.text, 20% entities.name, 10%
sections.title) with an ``IndexWriter`` (an empty DuckDB published as generation 1) and a
``VectorStore``, as the indexer does. Vectors are clustered and normalised: a common direction
(embeddings share one), one of 20,000 topic centres, and noise, so a topic's members sit at a
cosine of about 0.75 to its centre. Queries are fresh draws from the same topics. ``truth``
computes the exact top 10 of each query by streaming every vector once.

``search`` opens a ``DirectoryStore`` (``signs``: the sign file's nearest lists scanned; ``whole``:
every record scanned, as in a file without lists; ``memory``: the sign file moved aside, so the
store falls back to the in-memory ``VectorIndex``) and reports: the first search (the load), p50/p95
of unfiltered top-10 searches, of top-100 searches filtered on hybrid_search's default views, and of
a one-document filter; recall@10 against exact; then 1,000 vectors added by a writer process in a
new generation and published, the first search after it, and the process's peak and final RSS
(VmHWM, VmRSS) and its file-backed share (RssFile).
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.storage.directory import sign_file  # noqa: E402
from docsym.storage.directory.sign_file import signs_path  # noqa: E402
from docsym.storage.directory.store import DirectoryStore  # noqa: E402
from docsym.storage.directory.vectors import VectorStore  # noqa: E402
from docsym.storage.directory.writer import IndexWriter  # noqa: E402
from docsym.storage.entries import Entry  # noqa: E402
from docsym.tools.search import DEFAULT_VIEWS, _where  # noqa: E402

DIM = 384
DOC_ENTRIES = 400
TOPICS = 20_000
QUERIES = 100
VIEWS = (("chunks", "text", 0.7), ("entities", "name", 0.2), ("sections", "title", 0.1))


@functools.cache
def topics() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((TOPICS, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    common = rng.standard_normal(DIM, dtype=np.float32)
    return centres, common / np.linalg.norm(common)


def draw(rng: np.random.Generator, count: int) -> np.ndarray:
    centres, common = topics()
    members = 0.5 * common + centres[rng.integers(0, TOPICS, count)]
    members = members + rng.standard_normal((count, DIM), dtype=np.float32) * 0.045
    return (members / np.linalg.norm(members, axis=1, keepdims=True)).astype(np.float32)


def queries() -> np.ndarray:
    return draw(np.random.default_rng(12345), QUERIES)


def write_documents(root: Path, first_doc: int, count: int, seed: int) -> None:
    """``count`` vectors in documents of DOC_ENTRIES entries, as one generation."""
    rng = np.random.default_rng(seed)
    views = rng.choice(len(VIEWS), size=count, p=[share for _, _, share in VIEWS])
    with IndexWriter(root) as writer:
        store = VectorStore(root / "vectors.sqlite", generation=writer.generation)
        writer.after_publish = store.published  # as the indexer does: purge, refresh signs
        store.ensure_collection("minilm", "synthetic", DIM)
        for start in range(0, count, DOC_ENTRIES):
            doc = f"d{first_doc + start // DOC_ENTRIES}"
            size = min(DOC_ENTRIES, count - start)
            # A text of its own each: entries of one text are one candidate (a text key).
            entries = [
                Entry(VIEWS[v][0], VIEWS[v][1], f"{doc}:{n}", doc, n // 20 + 1, f"{doc}:{n}")
                for n, v in enumerate(views[start : start + size])
            ]
            with store.replacing_documents([doc], entries, {"minilm": draw(rng, size)}):
                pass
        writer.publish()  # no DuckDB row changed, but the new vectors' generation goes out
        writer.after_publish = None  # a first build publishes again at exit: nothing new
        store.settle()
        store.close()


def build(root: Path, vectors: int) -> None:
    started = time.perf_counter()
    write_documents(root, 0, vectors, seed=1)
    elapsed = time.perf_counter() - started
    disk = sum(p.stat().st_size for p in root.iterdir() if p.is_file())
    signs = signs_path(root / "vectors.sqlite", "minilm").stat().st_size
    print(f"built {vectors} vectors in {elapsed:.0f} s; {disk / 1e9:.2f} GB in all,", end=" ")
    print(f"sign file {signs / 1e6:.0f} MB")


def truth(root: Path) -> None:
    from docsym.storage.directory.sign_file import _vec0_batches
    from docsym.storage.directory.vectors import connect

    con = connect(root / "vectors.sqlite", readonly=True)
    q = queries()
    best_ids = np.zeros((QUERIES, 0), np.int64)
    best_scores = np.zeros((QUERIES, 0), np.float32)
    for rowids, vectors in _vec0_batches(con, "vec_minilm"):
        scores = np.concatenate([best_scores, (vectors @ q.T).T], axis=1)
        ids = np.concatenate([best_ids, np.broadcast_to(rowids, (QUERIES, len(rowids)))], axis=1)
        top = np.argsort(-scores, axis=1)[:, :10]
        best_ids = np.take_along_axis(ids, top, 1)
        best_scores = np.take_along_axis(scores, top, 1)
    np.save(root / "truth.npy", best_ids)
    print("exact top 10 saved")


def memory_kb() -> dict[str, int]:
    status = Path("/proc/self/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in status)
    return {k: int(fields[k].split()[0]) for k in ("VmHWM", "VmRSS", "RssFile")}


def timed(call) -> tuple[object, float]:
    started = time.perf_counter()
    result = call()
    return result, (time.perf_counter() - started) * 1000


def percentiles(times: list[float]) -> str:
    return f"p50 {np.percentile(times, 50):.1f} ms, p95 {np.percentile(times, 95):.1f} ms"


def search(root: Path, mode: str) -> None:
    signs = signs_path(root / "vectors.sqlite", "minilm")
    aside = signs.with_name(signs.name + ".aside")
    if mode == "memory":
        signs.rename(aside)
    share = sign_file.PROBE_SHARE
    if mode == "whole":
        sign_file.PROBE_SHARE = 1.0
    try:
        report = run_searches(root)
    finally:
        sign_file.PROBE_SHARE = share
        if aside.exists():
            aside.rename(signs)
    print(json.dumps({"mode": mode, **report}, indent=1))


def run_searches(root: Path) -> dict:
    store = DirectoryStore(root)
    q, exact = queries(), np.load(root / "truth.npy")
    where, params = _where(list(DEFAULT_VIEWS), "")
    report: dict = {}
    _, report["first_search_ms"] = timed(lambda: store.dense("minilm", q[0], limit=10))
    found, plain = [], []
    for query in q:
        hits, ms = timed(lambda query=query: store.dense("minilm", query, limit=10))
        found.append([i for i, _ in hits])
        plain.append(ms)
    report["top10"] = percentiles(plain)
    recall = np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact, strict=True)])
    report["recall@10"] = round(float(recall), 3)
    views = [timed(lambda v=v: store.dense("minilm", v, where, params, 100))[1] for v in q[:50]]
    report["top100_default_views"] = percentiles(views)
    doc = [
        timed(lambda v=v: store.dense("minilm", v, "e.doc_id = ?", ["d7"], 10))[1] for v in q[:50]
    ]
    report["top10_one_document"] = percentiles(doc)
    report["rss_kb_before_update"] = memory_kb()
    report |= add_and_search_again(root, store, q)
    report["rss_kb_end"] = memory_kb()
    store.close()
    return report


def add_and_search_again(root: Path, store: DirectoryStore, q: np.ndarray) -> dict:
    """1,000 vectors written by another process as a new generation, then the next search."""
    first_doc = time.time_ns() // 1000  # a fresh doc id at each run
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r});"
        f"from bench.vector_scale import write_documents; from pathlib import Path;"
        f"write_documents(Path({str(root)!r}), {first_doc}, 1000, seed=99)"
    )
    _, write_ms = timed(lambda: subprocess.run([sys.executable, "-c", code], check=True))
    with store.reading():
        _, first_ms = timed(lambda: store.dense("minilm", q[1], limit=10))
    later = [timed(lambda v=v: store.dense("minilm", v, limit=10))[1] for v in q[2:22]]
    return {
        "add_1000_write_ms": round(write_ms),
        "first_search_after_add_ms": round(first_ms, 1),
        "top10_after_add": percentiles(later),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["build", "truth", "search"])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--mode", choices=["signs", "whole", "memory"], default="signs")
    args = parser.parse_args()
    if args.step == "build":
        build(args.dir, args.vectors)
    elif args.step == "truth":
        truth(args.dir)
    else:
        search(args.dir, args.mode)


if __name__ == "__main__":
    main()
