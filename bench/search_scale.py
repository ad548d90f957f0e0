"""Search on the PostgreSQL store as it grows: hybrid_search and filtered vector_search latency, and
HNSW recall@10 against exact search, at a given number of entries.

    python bench/search_scale.py [--entries 100000] [--copies mix|noise] [--noise 0.02]
                                 [--ef-search 40,100,200] [--url postgresql://...] [--search-only]

The corpus (papers, long_docs, tables; OCR off) is indexed; then copies of its entries are
added under new doc ids (an earlier run's copies deleted first) until the store holds --entries
entries; the HNSW index is built after the bulk load, as a team would rebuild it. A copy's
vector is made one of two ways:

- ``mix`` (the default): the original mixed with another entry's vector picked at random,
  ``normalise(a * v + (1 - a) * w)`` with ``a`` uniform in [0.5, 1). The copies stay in the span
  of real embeddings, whose variance sits in few directions, as a large corpus's would.
- ``noise``: the original moved by isotropic Gaussian noise (``--noise`` per dimension) and
  normalised. Noise spreads the data over all 384 dimensions, far from real embeddings, which
  is the worst case for HNSW (recall@10 0.38 at 1M with 0.02, 0.24 with 0.05).

Queries are the questions of ../shared/dev-qa/qa.jsonl and bench/qa/docsym_qa.jsonl, each asked
once warm: p50/p95 wall time per call, through the same ``PostgresStore`` the server uses.
Recall@10 compares the HNSW top 10 with the exact cosine top 10 computed in numpy over every
vector, at the store's own ef_search and at each value of --ef-search (with its p50).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bundled_postgres import store_server  # noqa: E402
from bench.stats import percentile  # noqa: E402
from docsym.indexer.pipeline import index_paths  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.postgres import ddl  # noqa: E402
from docsym.tools.evaluate import load_qa  # noqa: E402
from docsym.tools.search import hybrid_search, vector_search  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
QA = [REPO.parent / "shared" / "dev-qa" / "qa.jsonl", REPO / "bench" / "qa" / "docsym_qa.jsonl"]
CORPORA = ("papers", "long_docs", "tables")
NOISE = 0.02  # per-dimension standard deviation of the copies' noise (unit vectors)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--url", help="a PostgreSQL database (default: a bundled one)")
    parser.add_argument(
        "--noise", type=float, default=NOISE, help="per-dimension noise of the copies' vectors"
    )
    parser.add_argument(
        "--copies", choices=("mix", "noise"), default="mix", help="how copies' vectors are made"
    )
    parser.add_argument(
        "--ef-search", default="40,100,200", help="hnsw.ef_search values to measure recall at"
    )
    parser.add_argument(
        "--search-only", action="store_true", help="search the store at --url as it is"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docsym-search-scale-"))
    url = store_server(args.url, work)
    if not args.search_only:
        started = time.perf_counter()
        report = index_paths([CORPUS / p for p in CORPORA], url, ocr="off")
        print(f"corpus: {report.pages} pages indexed in {time.perf_counter() - started:.0f} s")
        _sizes(url)
        started = time.perf_counter()
        total = _grow(url, args.entries, args.copies, args.noise)
        print(f"{total} entries, HNSW built, in {time.perf_counter() - started:.0f} s", flush=True)
    questions = [item.question for path in QA for item in load_qa(path)]
    store = open_store(url)
    for q in questions[:3]:  # warm: pools, encoder, graph
        hybrid_search(store, q)
    _report("hybrid_search", [_timed(hybrid_search, store, q) for q in questions])
    doc_id = store.sql().execute("SELECT doc_id FROM documents LIMIT 1").fetchone()[0]
    by_doc = [
        _timed(vector_search, store, q, filter=f"doc_id == '{doc_id}'", limit=10) for q in questions
    ]
    _report("vector_search, one document", by_doc)
    tables = [
        _timed(vector_search, store, q, filter="table_name == 'tables'", limit=10)
        for q in questions
    ]
    _report("vector_search, tables only", tables)
    short = sum(1 for result in [*by_doc, *tables] if len(result[1].hits) < 10)
    print(f"filtered searches with fewer than 10 hits: {short}")
    _recalls(store, url, questions, [int(v) for v in args.ef_search.split(",") if v])
    store.close()
    _sizes(url)


def _sizes(url: str) -> None:
    """Disk the store takes: in all, per page of the corpus (for extrapolating; copies add
    entries, not pages), and the largest relations (tables with their TOAST, and indexes)."""
    with psycopg.connect(url) as con:
        pages = con.execute("SELECT count(*) FROM pages").fetchone()[0]
        total = con.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        entries = con.execute(f"SELECT count(*) FROM {ddl.ENTRIES}").fetchone()[0]
        largest = con.execute(
            "SELECT c.relname, CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) "
            "ELSE pg_table_size(c.oid) END FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i', 'm') "
            "ORDER BY 2 DESC LIMIT 8"
        ).fetchall()
    per_page = (
        f", {entries / pages:.1f} entries and {total / pages / 1024:.0f} kB per page"
        if pages
        else ""
    )
    print(f"store: {total / 2**20:.0f} MB, {entries} entries{per_page}")
    for name, size in largest:
        print(f"  {name:32} {size / 2**20:8.1f} MB")


def _grow(url: str, entries: int, copies: str, noise: float) -> int:
    """Copies of the corpus entries, with new vectors (see the module's docstring), until there
    are ``entries`` (the copies of an earlier run are deleted first)."""
    with psycopg.connect(url) as con:
        register_vector(con)
        con.execute("DROP INDEX IF EXISTS vec_minilm_hnsw")
        con.execute(f"DELETE FROM {ddl.ENTRIES} WHERE doc_id LIKE '%~%'")
        rows = con.execute(
            f"SELECT e.table_name, e.column_name, e.primary_key, e.doc_id, e.page_number, "
            f"e.text, e.keyword, e.tsv, e.length, v.embedding FROM {ddl.ENTRIES} e "
            "JOIN vec_minilm v ON v.id = e.id ORDER BY e.id"
        ).fetchall()
        have = len(rows)
        originals = np.stack([r[-1].to_numpy() for r in rows]).astype(np.float32)
        rng = np.random.default_rng(7)
        copy = 0
        while have < entries:
            copy += 1
            batch = rows[: entries - have]
            vectors = _moved(originals[: len(batch)], originals, copies, noise, rng)
            with con.cursor() as cur:
                cur.execute("SELECT nextval(pg_get_serial_sequence('entries', 'id'))")
                first = cur.fetchone()[0]
                cur.execute(
                    "SELECT setval(pg_get_serial_sequence('entries', 'id'), %s)",
                    [first + len(batch)],
                )
                with cur.copy(
                    f"COPY {ddl.ENTRIES} (id, table_name, column_name, primary_key, doc_id, "
                    "page_number, text, keyword, tsv, length) FROM STDIN"
                ) as out:
                    for n, r in enumerate(batch):
                        out.write_row(
                            [first + n, r[0], r[1], f"{r[2]}~{copy}", f"{r[3]}~{copy}", *r[4:9]]
                        )
                with cur.copy(
                    "COPY vec_minilm (id, embedding) FROM STDIN WITH (FORMAT BINARY)"
                ) as out:
                    out.set_types(["int8", "vector"])
                    for n, vector in enumerate(vectors):
                        out.write_row([first + n, vector])
            have += len(batch)
        con.execute(
            "INSERT INTO lexemes (lexeme, df) SELECT lexeme, count(*) FROM entries e, "
            "unnest(e.tsv) WHERE e.keyword GROUP BY lexeme "
            "ON CONFLICT (lexeme) DO UPDATE SET df = excluded.df"
        )
        con.execute(
            "UPDATE store_state SET entries = s.n, length = s.l, version = version + 1 FROM "
            "(SELECT count(*) AS n, sum(length) AS l FROM entries WHERE keyword) s"
        )
        # The graph must fit in memory while it is built (about 2 kB per 384-d vector), and a
        # parallel build uses both cores.
        con.execute("SET maintenance_work_mem = '4GB'")
        con.execute("SET max_parallel_maintenance_workers = 1")
        started = time.perf_counter()
        for statement in ddl.vector_table("vec_minilm", 384):
            con.execute(statement)
        print(f"HNSW index over {have} vectors built in {time.perf_counter() - started:.0f} s")
        con.execute("ANALYZE")
        return have


def _moved(
    vectors: np.ndarray, pool: np.ndarray, copies: str, noise: float, rng: np.random.Generator
) -> np.ndarray:
    """New unit vectors near ``vectors``: mixed with random vectors of ``pool``, or noised."""
    if copies == "mix":
        weight = rng.uniform(0.5, 1.0, (len(vectors), 1)).astype(np.float32)
        partners = pool[rng.integers(0, len(pool), len(vectors))]
        moved = weight * vectors + (1 - weight) * partners
    else:
        moved = vectors + rng.normal(0, noise, vectors.shape).astype(np.float32)
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def _timed(search, *args, **kwargs):
    started = time.perf_counter()
    result = search(*args, **kwargs)
    return time.perf_counter() - started, result


def _report(name: str, timed: list) -> None:
    ms = [1000 * t for t, _ in timed]
    p95 = percentile(ms, 0.95)
    print(f"{name:30} p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  ({len(ms)} calls)")


def _recalls(store, url: str, questions: list[str], ef_values: list[int]) -> None:
    """HNSW recall@10 against exact search: through the store, then at each ef_search."""
    with psycopg.connect(url) as con:
        register_vector(con)
        rows = con.execute("SELECT id, embedding FROM vec_minilm").fetchall()
    matrix = np.stack([vector.to_numpy() for _, vector in rows]).astype(np.float32)
    ids = np.array([entry_id for entry_id, _ in rows])
    del rows
    encoder = store.encoder_for("minilm")
    queries = encoder.encode(questions)
    exact = [set(ids[np.argsort(-(matrix @ query))[:10]].tolist()) for query in queries]
    found = sum(
        len(want & {i for i, _ in store.dense("minilm", query, limit=10)})
        for query, want in zip(queries, exact, strict=True)
    )
    print(f"HNSW recall@10 against exact, as the store searches: {found / (10 * len(exact)):.3f}")
    with psycopg.connect(url) as con:
        register_vector(con)
        for ef in ef_values:
            con.execute(f"SET hnsw.ef_search = {int(ef)}")
            found, times = 0, []
            for query, want in zip(queries, exact, strict=True):
                started = time.perf_counter()
                got = con.execute(
                    "SELECT id FROM vec_minilm ORDER BY embedding <=> %s LIMIT 10", [query]
                ).fetchall()
                times.append(1000 * (time.perf_counter() - started))
                found += len(want & {i for (i,) in got})
            print(
                f"  ef_search {ef:4}: recall@10 {found / (10 * len(exact)):.3f}, "
                f"p50 {statistics.median(times):.1f} ms"
            )


if __name__ == "__main__":
    main()
