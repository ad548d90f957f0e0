"""BM25 top-100 at library scale: the store's search, FTS5 alone, and tantivy's block-max WAND.

    python bench/bm25_engines.py --index /tmp/ls1k/index [--copies 10 [--vary 0.3]]

Times the store's own ``fts`` on hybrid_search's default views for every question of the dev
and held-out sets (its keyword index's candidates scored as FTS5 scores them, where the index
holds the published generation), then FTS5 alone on the same rows (and how many of the store's
top 100 are FTS5's, scores and order), then writes the keyword rows (``entries`` with an FTS5
row) ``--copies`` times into a bare tantivy index (English stemming, the views as a filter field)
and times the same top 100 there, the question's words as docsym reads them (``search_words``).

Copies of a row are the same text: their scores tie, and block-max WAND prunes a library of
copies as it would not prune one of distinct papers. ``--vary SHARE`` makes every copy after the
first a text of its own with the library's word statistics: each of its words is replaced, with
probability SHARE, by a word drawn from all the rows' words (so by their frequency).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import apsw  # noqa: E402

from docsym.language.terms import search_words  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.entries import BM25  # noqa: E402
from docsym.tools.search import CANDIDATES, DEFAULT_VIEWS, _where  # noqa: E402

QA_SETS = (
    REPO.parent / "shared" / "dev-qa" / "qa.jsonl",
    REPO / "bench" / "qa" / "docsym_qa.jsonl",
)


def _questions() -> list[str]:
    return [
        json.loads(line)["question"]
        for path in QA_SETS
        if path.exists()
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def _summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def _store_and_fts5(index: Path, questions: list[str]) -> tuple[list[float], list[float], int]:
    """Times of the store's ``fts`` and of FTS5 alone, and the questions both rank alike."""
    store = open_store(index)
    where, params = _where(list(DEFAULT_VIEWS), "")
    store.fts(questions[0], where, params, CANDIDATES)  # opens the connections
    own, alone, alike = [], [], 0
    visible = f"({where}) AND {store.visible()}"
    for question in questions:
        start = time.perf_counter()
        found = store.fts(question, where, params, CANDIDATES)
        own.append(time.perf_counter() - start)
        start = time.perf_counter()
        plain = store._fts.search(search_words(question), visible, params, CANDIDATES)
        alone.append(time.perf_counter() - start)
        alike += [round(s, 9) for _, s in found] == [round(s, 9) for _, s in plain]
    used = store._keywords._loaded is not None
    store.close()
    print(f"the store's keyword index {'answered' if used else 'was not used'}")
    return own, alone, alike


def _tantivy(
    index: Path, questions: list[str], copies: int, vary: float = 0.0
) -> tuple[list[float], str]:
    import numpy as np
    import tantivy

    folder = Path(tempfile.mkdtemp(prefix="bm25-tantivy-"))
    try:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        builder.add_integer_field("id", stored=True, indexed=True, fast=True)
        builder.add_text_field("view", stored=False, tokenizer_name="raw")
        schema = builder.build()
        engine = tantivy.Index(schema, path=str(folder))
        writer = engine.writer(heap_size=400_000_000, num_threads=2)
        con = apsw.Connection(str(index / "vectors.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
        sql = (
            "SELECT id, table_name || '.' || column_name, text FROM entries "
            f"WHERE id IN (SELECT rowid FROM {BM25}) AND died IS NULL"
        )
        start, rows = time.perf_counter(), 0
        originals = list(con.execute(sql))
        pool = np.array([w for _, _, text in originals for w in text.split()], dtype=object)
        rng = np.random.default_rng(0)
        for copy in range(copies):
            for entry_id, view, text in originals:
                if copy and vary:
                    words = np.array(text.split(), dtype=object)
                    swap = rng.random(len(words)) < vary
                    words[swap] = pool[rng.integers(0, len(pool), int(swap.sum()))]
                    text = " ".join(words)
                writer.add_document(
                    tantivy.Document(text=text, id=copy * (1 << 40) + entry_id, view=view)
                )
                rows += 1
        writer.commit()
        writer.wait_merging_threads()
        size = sum(f.stat().st_size for f in folder.iterdir()) >> 20
        built = f"{rows:,} rows written in {time.perf_counter() - start:.0f} s, {size} MB"
        engine.reload()
        searcher = engine.searcher()
        views = [f"{t}.{c}" for t, c in DEFAULT_VIEWS]
        in_views = tantivy.Query.const_score_query(
            tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "view", v)) for v in views]
            ),
            0.0,
        )
        times = []
        for question in questions:
            words = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, engine.parse_query(f'"{word}"', ["text"]))
                    for word in search_words(question)
                ]
            )
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, words), (tantivy.Occur.Must, in_views)]
            )
            start = time.perf_counter()
            searcher.search(query, CANDIDATES, count=False)  # as the store asks: no count
            times.append(time.perf_counter() - start)
        return times, built
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a directory index")
    parser.add_argument("--copies", type=int, default=1, help="times each row goes to tantivy")
    parser.add_argument(
        "--vary", type=float, default=0.0, help="share of a copy's words replaced (0: none)"
    )
    args = parser.parse_args()
    questions = _questions()
    print(f"{len(questions)} questions, top {CANDIDATES} on the default views")
    own, alone, alike = _store_and_fts5(args.index, questions)
    print(f"the store's fts: {_summary(own)}")
    print(f"FTS5 alone: {_summary(alone)}; the same top {CANDIDATES} scores: {alike} questions")
    times, built = _tantivy(args.index, questions, args.copies, args.vary)
    varied = f", {args.vary:.0%} of each copy's words varied" if args.vary else ""
    print(f"tantivy x{args.copies}{varied}: {built}; {_summary(times)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
