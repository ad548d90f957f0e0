"""Dense top-k from a sign file: Hamming candidates, checked, then re-scored exactly.

The caller supplies two reads of ``vectors.sqlite``: ``accept`` (which of some ids are entries
the reader sees and its filter matches) and ``floats`` (the stored float vectors of some ids).
Candidates are taken from the records the file's lists nearest the question hold (all records
of a file without lists; all of them too when those hold too few that pass), nearest first in
widening rings of Hamming distance until enough pass ``accept``: an unfiltered search checks
about ``want`` ids, a filter matching a tenth of the entries about ten times as many. The
``want`` nearest that pass are re-scored from their float vectors, so every score returned is the
exact cosine.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from docsym.storage.directory.sign_file import DIM, SignScan

# Hamming candidates re-scored exactly: a floor, and a multiple of k for large k.
MIN_CANDIDATES = 400
CANDIDATES_PER_K = 4
# Each ring checks this many times more ids than the last; past MAX_CHECKED ids a filter is
# rare enough that reading all its ids (``accept(None)``) is cheaper than checking more.
RING_GROWTH = 8
MAX_CHECKED = 200_000

Accept = Callable[[np.ndarray | None], np.ndarray]
Floats = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def normalised(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, np.float32).reshape(-1)
    if vector.shape != (DIM,):
        raise ValueError(f"expected a query of {DIM} dimensions, got {vector.shape}")
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def search(
    scan: SignScan, query: np.ndarray, k: int, accept: Accept, floats: Floats
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k (rowids, cosine) among the accepted entries, best first."""
    query = normalised(query)
    if k <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    want = max(MIN_CANDIDATES, CANDIDATES_PER_K * k)
    rowids, distances = scan.distances(query)
    candidates = _nearest_accepted(rowids, distances, want, accept)
    if len(candidates) < want and scan.partial():
        # A filter too rare for the lists scanned to hold enough of its ids: the whole file.
        rowids, distances = scan.distances(query, whole=True)
        candidates = _nearest_accepted(rowids, distances, want, accept)
    return exact_top_k(query, k, *floats(candidates))


def exact_top_k(
    query: np.ndarray, k: int, ids: np.ndarray, vectors: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    scores = vectors @ query if len(ids) else np.empty(0, np.float32)
    best = np.argsort(-scores, kind="stable")[:k]
    return ids[best], scores[best].astype(np.float32)


def _nearest_accepted(
    rowids: np.ndarray, distances: np.ndarray, want: int, accept: Accept
) -> np.ndarray:
    """Up to ``want`` accepted ids, nearest first, read ring by ring of Hamming distance."""
    cumulative = np.cumsum(np.bincount(distances, minlength=DIM + 1))
    passed: list[np.ndarray] = []
    found, checked, below, target = 0, 0, -1, 2 * want
    while found < want and below < DIM:
        if checked > MAX_CHECKED:  # a rare filter: take its ids whole instead
            return _nearest_of(rowids, distances, accept(None), want)
        # Every record at distance (below, ceiling]: the next ring holding ~target more records.
        ceiling = min(int(np.searchsorted(cumulative, checked + target)), DIM)
        ring = np.flatnonzero((distances > below) & (distances <= ceiling))
        ring = ring[np.argsort(distances[ring], kind="stable")]
        ids = np.asarray(rowids[ring])
        ok = np.isin(ids, accept(np.unique(ids)))
        passed.append(ids[ok])
        found += int(ok.sum())
        checked += len(ring)
        below, target = ceiling, target * RING_GROWTH
    ordered = np.concatenate(passed) if passed else np.empty(0, np.int64)
    return _first_unique(ordered)[:want]


def _nearest_of(
    rowids: np.ndarray, distances: np.ndarray, allowed: np.ndarray, want: int
) -> np.ndarray:
    positions = np.flatnonzero(np.isin(rowids, allowed))
    if len(positions) > want:
        positions = positions[np.argpartition(distances[positions], want - 1)[:want]]
    positions = positions[np.argsort(distances[positions], kind="stable")]
    return _first_unique(np.asarray(rowids[positions]))


def _first_unique(ids: np.ndarray) -> np.ndarray:
    """``ids`` without repeats (a rowid the file holds twice), first occurrence kept."""
    _, first = np.unique(ids, return_index=True)
    return ids[np.sort(first)]
