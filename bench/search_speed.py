"""k-NN search latency and recall: sqlite-vec brute force vs numpy exact vs storage.VectorIndex.

    python bench/search_speed.py                  # 100k synthetic entries
    python bench/search_speed.py --n 1000000      # 1M (needs ~5 GB RAM, ~3 GB temp disk)
    python bench/search_speed.py --index DIR      # also time a real index's vectors.sqlite

Builds a temporary vectors.sqlite with a sqlite-vec ``vec0`` table of N clustered, L2-normalised
384-d vectors (topics -> a few thousand cluster centres -> noisy members, plus a shared offset so
the cloud is anisotropic like real sentence embeddings) and a metadata table grouping the entries
into 100 documents (one doc ~1% of rows) and 5 (table, column) pairs (~20% each). Queries are
half perturbed copies of stored vectors, half fresh draws from the mixture.

Every method gets the same queries and k=10, unfiltered and with each filter. Filtered numpy and
VectorIndex searches take the allowed rowids as an array (fetching them from the metadata table
is timed separately); sqlite-vec filters with ``rowid IN (SELECT ...)`` inside its KNN query.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import numpy as np
import sqlite_vec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docsym.storage.directory.vector_index import DIM, VectorIndex, load_from_sqlite  # noqa: E402

K = 10
REPO = Path(__file__).resolve().parent.parent
VEC_TABLE = "vec_minilm"
META_TABLE = "vec_minilm_meta"
DOC_COUNT = 100
TABLE_COLUMNS = [
    ("chunks", "text"),
    ("sections", "title"),
    ("table_cells", "text"),
    ("figures", "caption"),
    ("equations", "text"),
]
TOPIC_COUNT = 64
CENTRE_COUNT = 3000
MEMBER_NOISE = 0.045  # per-dimension: a member's cosine to its centre is ~0.75
QUERY_NOISE = 0.03  # per-dimension: a perturbed query's cosine to its source is ~0.85


def connect(path: Path) -> apsw.Connection:
    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.enable_load_extension(False)
    return con


def index_bytes(index: VectorIndex) -> int:
    """Memory held by the index's arrays."""
    arrays = (index.rowids, index.vectors, index.bits_by_word, index.sorted_rowids)
    return sum(a.nbytes for a in arrays) + index.sorted_positions.nbytes


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class Mixture:
    """Two-level Gaussian mixture on the sphere with a shared offset."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        topics = normalise_rows(rng.standard_normal((TOPIC_COUNT, DIM), dtype=np.float32))
        topic_of_centre = rng.integers(0, TOPIC_COUNT, CENTRE_COUNT)
        spread = rng.standard_normal((CENTRE_COUNT, DIM), dtype=np.float32) * 0.06
        shared = normalise_rows(rng.standard_normal((1, DIM), dtype=np.float32)) * 0.35
        self.centres = normalise_rows(topics[topic_of_centre] + spread + shared)

    def draw(self, count: int) -> np.ndarray:
        members = self.rng.integers(0, CENTRE_COUNT, count)
        noise = self.rng.standard_normal((count, DIM), dtype=np.float32) * MEMBER_NOISE
        return normalise_rows(self.centres[members] + noise).astype(np.float32)


def build_store(path: Path, n: int, mixture: Mixture) -> np.ndarray:
    """Write n entries to a fresh vectors.sqlite; return their vectors (rowid i+1 is row i)."""
    con = connect(path)
    con.execute(f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0(embedding float[{DIM}])")
    con.execute(
        f"CREATE TABLE {META_TABLE} (rowid INTEGER PRIMARY KEY, table_name TEXT, "
        "column_name TEXT, primary_key TEXT, doc_id INTEGER, page_number INTEGER)"
    )
    vectors = np.empty((n, DIM), dtype=np.float32)
    rng = mixture.rng
    block_rows = 50_000
    for start in range(0, n, block_rows):
        block = mixture.draw(min(block_rows, n - start))
        vectors[start : start + len(block)] = block
        rowids = np.arange(start + 1, start + len(block) + 1)
        # Documents are contiguous runs of rowids, as an indexer writes them.
        doc_ids = (rowids - 1) * DOC_COUNT // n
        pairs = rng.integers(0, len(TABLE_COLUMNS), len(block))
        with con:
            con.executemany(
                f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)",
                zip(rowids.tolist(), (row.tobytes() for row in block), strict=True),
            )
            con.executemany(
                f"INSERT INTO {META_TABLE} VALUES (?, ?, ?, ?, ?, ?)",
                (
                    (rid, *TABLE_COLUMNS[pair], str(rid), doc, 1 + rid % 300)
                    for rid, pair, doc in zip(
                        rowids.tolist(), pairs.tolist(), doc_ids.tolist(), strict=True
                    )
                ),
            )
    con.execute(f"CREATE INDEX {META_TABLE}_doc ON {META_TABLE}(doc_id)")
    con.execute(f"CREATE INDEX {META_TABLE}_col ON {META_TABLE}(table_name, column_name)")
    con.close()
    return vectors


def make_queries(vectors: np.ndarray, mixture: Mixture, count: int) -> np.ndarray:
    rng = mixture.rng
    sources = vectors[rng.integers(0, len(vectors), count // 2)]
    perturbed = sources + rng.standard_normal(sources.shape, dtype=np.float32) * QUERY_NOISE
    fresh = mixture.draw(count - len(perturbed))
    queries = normalise_rows(np.vstack([perturbed, fresh])).astype(np.float32)
    return queries[rng.permutation(count)]


# Filters: a name and, per query, (SQL condition on the metadata table, its parameters).
FilterSpec = tuple[str, list[tuple[str, tuple]]]


def make_filters(query_count: int, rng: np.random.Generator) -> list[FilterSpec]:
    docs = rng.integers(0, DOC_COUNT, query_count).tolist()
    pairs = rng.integers(0, len(TABLE_COLUMNS), query_count).tolist()
    return [
        ("none", [("", ())] * query_count),
        ("doc_id (~1%)", [("doc_id = ?", (doc,)) for doc in docs]),
        (
            "table/column (~20%)",
            [("table_name = ? AND column_name = ?", TABLE_COLUMNS[p]) for p in pairs],
        ),
    ]


def subset_rowids(con: apsw.Connection, condition: str, params: tuple) -> np.ndarray | None:
    if not condition:
        return None
    sql = f"SELECT rowid FROM {META_TABLE} WHERE {condition} ORDER BY rowid"
    return np.fromiter((row[0] for row in con.execute(sql, params)), dtype=np.int64)


def sqlite_vec_knn(con: apsw.Connection, query: np.ndarray, condition: str, params: tuple):
    sql = f"SELECT rowid FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ?"
    if condition:
        sql += f" AND rowid IN (SELECT rowid FROM {META_TABLE} WHERE {condition})"
    return np.array([row[0] for row in con.execute(sql, (query.tobytes(), K, *params))])


def exact_knn(vectors: np.ndarray, query: np.ndarray, subset: np.ndarray | None, use_blas: bool):
    """Exact top K rowids; rowid r is row r-1. BLAS `@` and einsum are timed separately."""
    positions = None if subset is None else subset - 1
    block = vectors if positions is None else np.take(vectors, positions, axis=0)
    scores = block @ query if use_blas else np.einsum("ij,j->i", block, query)
    best = np.argpartition(-scores, K - 1)[:K]
    best = best[np.argsort(-scores[best])]
    return (best if positions is None else positions[best]) + 1


def time_calls(calls: list[Callable[[], np.ndarray]]) -> tuple[list[float], list[np.ndarray]]:
    calls[0]()  # warm caches and lazy imports
    latencies, results = [], []
    for call in calls:
        start = time.perf_counter()
        results.append(call())
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies, results


def recall(found: list[np.ndarray], truth: list[np.ndarray]) -> float:
    hits = [len(np.intersect1d(f, t)) / max(1, len(t)) for f, t in zip(found, truth, strict=True)]
    return float(np.mean(hits))


def print_row(method: str, filter_name: str, latencies: list[float], recall_at_k: str) -> None:
    p50, p95 = np.percentile(latencies, [50, 95])
    print(
        f"{method:<24}{filter_name:<22}{len(latencies):>6}{p50:>10.2f}{p95:>10.2f}{recall_at_k:>12}"
    )


def run_synthetic(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    mixture = Mixture(rng)
    with tempfile.TemporaryDirectory(prefix="docsym-search-") as tmp:
        path = Path(tmp) / "vectors.sqlite"
        start = time.perf_counter()
        vectors = build_store(path, args.n, mixture)
        print(
            f"built {args.n:,} entries in {time.perf_counter() - start:.1f}s "
            f"({path.stat().st_size / 2**20:.0f} MiB on disk)"
        )
        con = connect(path)

        start = time.perf_counter()
        index = load_from_sqlite(con, VEC_TABLE)
        load_seconds = time.perf_counter() - start
        assert len(index) == args.n
        print(
            f"load_from_sqlite: {load_seconds:.2f}s; VectorIndex memory "
            f"{index_bytes(index) / 2**20:.0f} MiB "
            f"(float32 {index.vectors.nbytes / 2**20:.0f} MiB, "
            f"sign bits {index.bits_by_word.nbytes / 2**20:.1f} MiB)"
        )

        queries = make_queries(vectors, mixture, args.queries)
        filters = make_filters(args.queries, rng)
        print(f"\nk={K}, {args.queries} queries ({args.sqlite_queries} for sqlite-vec)")
        print(
            f"{'method':<24}{'filter':<22}{'runs':>6}{'p50 ms':>10}{'p95 ms':>10}{'recall@10':>12}"
        )
        for filter_name, conditions in filters:
            fetch_ms, subsets = time_calls(
                [lambda c=c, p=p: subset_rowids(con, c, p) for c, p in conditions]
            )
            truth = [
                exact_knn(vectors, q, s, use_blas=False)
                for q, s in zip(queries, subsets, strict=True)
            ]
            if subsets[0] is not None:
                sizes = [len(s) for s in subsets]
                print_row(f"  fetch subset ({int(np.mean(sizes))})", filter_name, fetch_ms, "")
            sqlite_count = min(args.sqlite_queries, args.queries)
            latencies, found = time_calls(
                [
                    lambda q=q, c=c, p=p: sqlite_vec_knn(con, q, c, p)
                    for q, (c, p) in zip(queries[:sqlite_count], conditions, strict=False)
                ]
            )
            print_row(
                "sqlite-vec vec0 KNN",
                filter_name,
                latencies,
                f"{recall(found, truth[:sqlite_count]):.3f}",
            )
            for label, blas in (("numpy exact (@, BLAS)", True), ("numpy exact (einsum)", False)):
                latencies, found = time_calls(
                    [
                        lambda q=q, s=s, b=blas: exact_knn(vectors, q, s, use_blas=b)
                        for q, s in zip(queries, subsets, strict=True)
                    ]
                )
                print_row(label, filter_name, latencies, f"{recall(found, truth):.3f}")
            latencies, found = time_calls(
                [
                    lambda q=q, s=s: index.search(q, K, s)[0]
                    for q, s in zip(queries, subsets, strict=True)
                ]
            )
            print_row("VectorIndex", filter_name, latencies, f"{recall(found, truth):.3f}")
        con.close()


def run_real_index(index_dir: Path, vec_table: str, query_count: int, seed: int) -> None:
    path = index_dir / "vectors.sqlite"
    if not path.exists():
        print(f"\nskipping real index: {path} does not exist")
        return
    con = connect(path)
    start = time.perf_counter()
    index = load_from_sqlite(con, vec_table)
    load_seconds = time.perf_counter() - start
    print(
        f"\nreal index {path}: {len(index):,} vectors in {vec_table}, loaded in "
        f"{load_seconds:.2f}s, {index_bytes(index) / 2**20:.0f} MiB"
    )
    if len(index) == 0:
        return
    rng = np.random.default_rng(seed)
    sources = index.vectors[rng.integers(0, len(index), query_count)]
    queries = normalise_rows(
        sources + rng.standard_normal(sources.shape, dtype=np.float32) * QUERY_NOISE
    ).astype(np.float32)

    def exact(query: np.ndarray) -> np.ndarray:
        scores = np.einsum("ij,j->i", index.vectors, query)
        best = np.argpartition(-scores, min(K, len(scores)) - 1)[:K]
        return index.rowids[best]

    truth = [exact(q) for q in queries]
    print(f"{'method':<24}{'filter':<22}{'runs':>6}{'p50 ms':>10}{'p95 ms':>10}{'recall@10':>12}")
    latencies, found = time_calls([lambda q=q: exact(q) for q in queries])
    print_row("numpy exact (einsum)", "none", latencies, "1.000")
    latencies, found = time_calls([lambda q=q: index.search(q, K)[0] for q in queries])
    print_row("VectorIndex", "none", latencies, f"{recall(found, truth):.3f}")
    con.close()
    run_tool_calls(index_dir)


def run_tool_calls(index_dir: Path) -> None:
    """End-to-end latency of the search tools on a real index (query encoding included)."""
    from docsym.storage.backends import open_store
    from docsym.tools.search import hybrid_search, vector_search

    store = open_store(index_dir)
    questions = [
        "How many participants took part in the controlled lab study?",
        "Which pretrained model initialises the question and passage encoders?",
        "total revenue in 2021 in millions of dollars",
        "Which macro starts a protected block in exception handling?",
        "retrieval accuracy on open-domain QA datasets",
        "post-processing quality filters applied to papers",
    ]
    qa = REPO.parent / "shared" / "dev-qa" / "qa.jsonl"
    if qa.exists():  # distinct questions only: nothing is served from a warm cache twice
        questions += [json.loads(line)["question"] for line in qa.read_text().splitlines() if line]
    doc_id = (
        store.sql().execute("SELECT doc_id FROM documents ORDER BY page_count DESC").fetchone()[0]
    )
    store.encoder_for("minilm").encode(["warm up"])
    vector_search(store, "warm up", "minilm")
    calls = {
        ("vector_search minilm", "none"): lambda q: vector_search(store, q, "minilm"),
        ("vector_search minilm", "doc_id"): lambda q: vector_search(
            store, q, "minilm", filter=f"doc_id == '{doc_id}'"
        ),
        ("vector_search minilm", "table/column"): lambda q: vector_search(
            store, q, "minilm", "chunks", "text"
        ),
        ("vector_search bm25", "none"): lambda q: vector_search(store, q, "bm25"),
        ("hybrid_search", "none"): lambda q: hybrid_search(store, q),
        ("hybrid_search", "doc_id"): lambda q: hybrid_search(
            store, q, filter=f"doc_id == '{doc_id}'"
        ),
    }
    print(f"\ntool calls on {index_dir} (k=10, {len(questions)} questions, encoding included)")
    print(f"{'call':<24}{'filter':<22}{'runs':>6}{'p50 ms':>10}{'p95 ms':>10}")
    for (name, filter_name), call in calls.items():
        latencies, _ = time_calls([lambda q=q, call=call: call(q) for q in questions])
        print_row(name, filter_name, latencies, "")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="synthetic entries")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--sqlite-queries",
        type=int,
        default=None,
        help="queries for the slow sqlite-vec brute force (default: all, 30 at >= 500k)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--index", type=Path, help="a docsym index DIR with vectors.sqlite")
    parser.add_argument("--vec-table", default=VEC_TABLE)
    args = parser.parse_args()
    if args.sqlite_queries is None:
        args.sqlite_queries = 30 if args.n >= 500_000 else args.queries
    run_synthetic(args)
    if args.index is not None:
        run_real_index(args.index, args.vec_table, args.queries, args.seed)


if __name__ == "__main__":
    main()
