"""VectorIndex: binary first pass + exact re-score must match exact search closely."""

from __future__ import annotations

import apsw
import numpy as np
import pytest
import sqlite_vec

from bench.search_speed import index_bytes
from docsym.storage.directory.vector_index import (
    DIM,
    EXACT_SCAN_MAX_ROWS,
    VectorIndex,
    load_from_sqlite,
)

ROWS = 20_000


def clustered(
    rng: np.random.Generator, count: int, centres: int = 500, centre_seed: int = 0
) -> np.ndarray:
    """Normalised members of random cluster centres, like sentence embeddings of related texts."""
    centre_rng = np.random.default_rng(centre_seed)
    centre_vectors = centre_rng.standard_normal((centres, DIM), dtype=np.float32)
    centre_vectors /= np.linalg.norm(centre_vectors, axis=1, keepdims=True)
    members = centre_vectors[rng.integers(0, centres, count)]
    members = members + rng.standard_normal((count, DIM), dtype=np.float32) * 0.045
    return (members / np.linalg.norm(members, axis=1, keepdims=True)).astype(np.float32)


def exact_top(rowids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = vectors @ (query / np.linalg.norm(query))
    return rowids[np.argsort(-scores, kind="stable")[:k]]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    vectors = clustered(rng, ROWS)
    rowids = rng.permutation(np.arange(1, ROWS + 1, dtype=np.int64) * 7)  # unordered, sparse
    # Fresh draws from the same clusters: queries about what the corpus holds.
    queries = clustered(np.random.default_rng(4), 100)
    return rowids, vectors, queries


@pytest.fixture(scope="module")
def index(data) -> VectorIndex:
    rowids, vectors, _ = data
    return VectorIndex.build(rowids, vectors)


def test_top10_recall_against_exact_search(data, index):
    rowids, vectors, queries = data
    hits = 0
    for query in queries:
        found, scores = index.search(query, 10)
        assert len(found) == 10
        assert np.all(np.diff(scores) <= 0), "scores must be descending"
        hits += len(np.intersect1d(found, exact_top(rowids, vectors, query, 10)))
    assert hits / (10 * len(queries)) >= 0.95


def test_scores_are_exact_cosine(data, index):
    rowids, vectors, queries = data
    found, scores = index.search(queries[0] * 3.0, 5)  # unnormalised query
    by_rowid = dict(zip(rowids.tolist(), vectors, strict=True))
    expected = [float(by_rowid[r] @ queries[0]) for r in found.tolist()]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


def test_small_subset_equals_exact_search_on_subset(data, index):
    rowids, vectors, queries = data
    rng = np.random.default_rng(5)
    picked = rng.choice(len(rowids), 300, replace=False)
    subset = rowids[picked]
    for query in queries[:10]:
        found, _ = index.search(query, 10, subset=subset)
        assert set(found.tolist()) <= set(subset.tolist())
        np.testing.assert_array_equal(found, exact_top(subset, vectors[picked], query, 10))


def test_large_subset_uses_binary_pass_and_stays_inside_subset(data, index):
    rowids, vectors, queries = data
    rng = np.random.default_rng(6)
    picked = rng.choice(len(rowids), EXACT_SCAN_MAX_ROWS + 4000, replace=False)
    subset = rowids[picked]
    allowed = set(subset.tolist())
    hits = 0
    for query in queries[:30]:
        found, _ = index.search(query, 10, subset=subset)
        assert set(found.tolist()) <= allowed
        hits += len(np.intersect1d(found, exact_top(subset, vectors[picked], query, 10)))
    assert hits / 300 >= 0.95


def test_subset_ignores_unknown_and_duplicate_rowids(data, index):
    rowids, _, queries = data
    subset = np.array([rowids[0], rowids[1], rowids[0], -1, 10**12], dtype=np.int64)
    found, _ = index.search(queries[0], 10, subset=subset)
    assert sorted(found.tolist()) == sorted([int(rowids[0]), int(rowids[1])])
    assert len(index.search(queries[0], 10, subset=np.array([], dtype=np.int64))[0]) == 0


def test_k_larger_than_index_returns_everything_sorted():
    rng = np.random.default_rng(8)
    vectors = clustered(rng, 7, centres=3)
    small = VectorIndex.build(np.arange(7, dtype=np.int64), vectors)
    found, scores = small.search(vectors[2], 50)
    assert sorted(found.tolist()) == list(range(7))
    assert found[0] == 2 and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert np.all(np.diff(scores) <= 0)


def test_empty_index():
    empty = VectorIndex.build(np.empty(0, np.int64), np.empty((0, DIM), np.float32))
    assert len(empty) == 0
    found, scores = empty.search(np.ones(DIM, np.float32), 10)
    assert found.shape == (0,) and scores.shape == (0,)
    assert len(empty.search(np.ones(DIM, np.float32), 10, subset=np.array([1]))[0]) == 0


def test_query_is_normalised(data, index):
    _, _, queries = data
    plain_rowids, plain_scores = index.search(queries[1], 10)
    scaled_rowids, scaled_scores = index.search(queries[1] * 250.0, 10)
    np.testing.assert_array_equal(plain_rowids, scaled_rowids)
    np.testing.assert_allclose(plain_scores, scaled_scores, rtol=1e-5)
    assert plain_scores[0] <= 1.0 + 1e-5


def test_memory_footprint_counts_vectors_and_bits(index):
    assert index_bytes(index) >= ROWS * DIM * 4 + ROWS * DIM // 8


def test_build_rejects_bad_shapes_and_duplicate_rowids():
    with pytest.raises(ValueError):
        VectorIndex.build(np.arange(3), np.zeros((3, 10), np.float32))
    with pytest.raises(ValueError):
        VectorIndex.build(np.array([1, 1]), np.zeros((2, DIM), np.float32))


def vec_connection(path) -> apsw.Connection:
    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.enable_load_extension(False)
    return con


def test_load_from_sqlite_round_trips_rowids_and_vectors(tmp_path):
    rng = np.random.default_rng(9)
    count = 2500  # spans several 1024-slot vec0 chunks
    vectors = clustered(rng, count)
    rowids = np.arange(1, count + 1, dtype=np.int64) * 3
    con = vec_connection(tmp_path / "vectors.sqlite")
    con.execute(f"CREATE VIRTUAL TABLE vec_minilm USING vec0(embedding float[{DIM}])")
    with con:
        con.executemany(
            "INSERT INTO vec_minilm(rowid, embedding) VALUES (?, ?)",
            [(int(r), v.tobytes()) for r, v in zip(rowids, vectors, strict=True)],
        )
        # Deleted entries leave invalid slots in their chunk; they must not come back.
        con.execute("DELETE FROM vec_minilm WHERE rowid IN (3, 1500, 7500)")
    kept = ~np.isin(rowids, [3, 1500, 7500])

    loaded = load_from_sqlite(con, "vec_minilm")

    assert len(loaded) == kept.sum()
    order = np.argsort(loaded.rowids)
    np.testing.assert_array_equal(loaded.rowids[order], rowids[kept])
    np.testing.assert_array_equal(loaded.vectors[order], vectors[kept])
    found, scores = loaded.search(vectors[10], 1)
    assert found[0] == rowids[10] and scores[0] == pytest.approx(1.0, abs=1e-5)


def test_load_from_empty_sqlite_table(tmp_path):
    con = vec_connection(tmp_path / "vectors.sqlite")
    con.execute(f"CREATE VIRTUAL TABLE vec_minilm USING vec0(embedding float[{DIM}])")
    assert len(load_from_sqlite(con, "vec_minilm")) == 0
    with pytest.raises(ValueError):
        load_from_sqlite(con, "vec; DROP TABLE x")
