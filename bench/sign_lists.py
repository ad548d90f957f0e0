"""The partitioned sign file on a real index: how much of the dense search's recall, and of
hybrid_search's, each share of the records scanned keeps.

    python bench/sign_lists.py --index DIR [--list-size 768]

The index's sign file is built with lists whatever its size (``LIST_MIN`` lowered; the file is
restored afterwards), one list per ``--list-size`` vectors. The dev and held-out questions
(../shared/dev-qa/qa.jsonl, bench/qa/docsym_qa.jsonl) are encoded; for the whole file and for
each share of the records probed, it prints the sign search's recall@10 and recall@100 against
the exact top 100 (every vector read into memory), its p50, and hybrid_search's R@1 and R@5 on
each set, strict (the gold file) and any copy (a library's copies of the gold file count).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.directory import sign_file, sign_search  # noqa: E402
from docsym.storage.directory.sign_file import SignScan  # noqa: E402
from docsym.storage.directory.vectors import connect  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.evaluate import QAItem, evaluate, load_qa  # noqa: E402

QA_SETS = {
    "dev": REPO.parent / "shared" / "dev-qa" / "qa.jsonl",
    "held-out": REPO / "bench" / "qa" / "docsym_qa.jsonl",
}
SHARES = (1 / 8, 1 / 16, 1 / 32)
TABLE = "vec_minilm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--list-size", type=int, default=sign_file.LIST_SIZE)
    args = parser.parse_args()
    signs = sign_file.signs_path(args.index / "vectors.sqlite", "minilm")
    kept = signs.with_name(signs.name + ".kept")
    shutil.copy(signs, kept)
    try:
        measure(args.index, signs, args.list_size)
    finally:
        kept.replace(signs)


def measure(index: Path, signs: Path, list_size: int) -> None:
    con = connect(index / "vectors.sqlite")
    sign_file.LIST_MIN, sign_file.LIST_SIZE = 1, list_size
    started = time.perf_counter()
    sign_file.build(signs, con, TABLE)
    built = time.perf_counter() - started
    scan = SignScan.open(signs)
    ids, vectors = _every_vector(con)
    lists = len(scan.layout()[0].centroids)
    print(f"{len(ids)} vectors, {lists} lists, built in {built:.1f} s")
    store = open_store(index)
    sets = {name: load_qa(path) for name, path in QA_SETS.items()}
    encoder = store.encoder_for("minilm")
    questions = [item.question for items in sets.values() for item in items]
    queries = np.stack([sign_search.normalised(encoder.encode_question(q)) for q in questions])
    exact = [ids[np.argsort(-(vectors @ q), kind="stable")[:100]] for q in queries]
    try:
        for share in (1.0, *SHARES):
            sign_file.PROBE_SHARE = share
            label = "whole file" if share == 1 else f"1/{round(1 / share)}"
            print(f"{label}: {_dense(scan, queries, exact, ids, vectors)}")
            for name, items in sets.items():
                print(f"  {name}: {_hybrid(store, items)}")
    finally:
        store.close()


def _every_vector(con) -> tuple[np.ndarray, np.ndarray]:
    """Every (rowid, vector) of the collection, sorted by rowid."""
    batches = list(sign_file._vec0_batches(con, TABLE))
    ids = np.concatenate([rowids for rowids, _ in batches])
    vectors = np.concatenate([v for _, v in batches])
    order = np.argsort(ids)
    return ids[order], vectors[order]


def _dense(scan: SignScan, queries, exact, ids: np.ndarray, vectors: np.ndarray) -> str:
    def floats(candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return candidates, vectors[np.searchsorted(ids, candidates)]

    def accept(candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        passed = ids if candidates is None else candidates
        return passed, passed  # every id passes, keyed by itself (each its own text)

    at10 = at100 = 0.0
    times = []
    for query, best in zip(queries, exact, strict=True):
        started = time.perf_counter()
        found, _ = sign_search.search(scan, query, 100, accept, floats, per_text=False)
        times.append(time.perf_counter() - started)
        at10 += len(set(found[:10].tolist()) & set(best[:10].tolist())) / 10
        at100 += len(set(found.tolist()) & set(best.tolist())) / 100
    n = len(queries)
    p50 = 1000 * statistics.median(times)
    return f"recall@10 {at10 / n:.3f}, recall@100 {at100 / n:.3f}, p50 {p50:.1f} ms"


def _hybrid(store: Store, items: list[QAItem]) -> str:
    (strict,) = evaluate(store, items, ["hybrid"])
    copies = [item.model_copy(update={"file": Path(item.file).name}) for item in items]
    (any_copy,) = evaluate(store, copies, ["hybrid"])
    return (
        f"hybrid R@1 {strict.recall[1]:.3f}, R@5 {strict.recall[5]:.3f}; any copy "
        f"R@1 {any_copy.recall[1]:.3f}, R@5 {any_copy.recall[5]:.3f}"
    )


if __name__ == "__main__":
    main()
