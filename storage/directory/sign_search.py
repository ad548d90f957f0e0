"""Dense top-k from a sign file: Hamming candidates, checked, then re-scored exactly.

The caller supplies two reads of ``vectors.sqlite``: ``accept`` (which of some ids are entries
the reader sees and its filter matches, with their text keys) and ``floats`` (the stored float
vectors of some ids). Entries holding the same text (``entries.text_key``) have the same vector:
only the nearest of them counts, so the candidates are ``want`` distinct texts however many
copies a library holds of each.
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
from docsym.storage.entries import read_next

# Hamming candidates re-scored exactly: a floor, and a multiple of k for large k.
MIN_CANDIDATES = 400
CANDIDATES_PER_K = 4
# Each ring checks at most this many times more ids than the last. Past MAX_CHECKED ids, a
# filter that passed fewer than wanted is rare enough that reading all its ids
# (``accept(None)``) is cheaper than checking more; one that passed more had its rings filled by
# copies of a few texts, and the search keeps the distinct texts found (fewer than wanted).
RING_GROWTH = 8
MAX_CHECKED = 200_000

# (ids, text keys) of the visible entries the filter matches among some ids (all when None).
Accept = Callable[[np.ndarray | None], tuple[np.ndarray, np.ndarray]]
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
    query: np.ndarray, k: int, ids: np.ndarray, vectors: np.ndarray, keys: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of ``ids`` by cosine; with ``keys`` (one per id), the best of each key."""
    scores = vectors @ query if len(ids) else np.empty(0, np.float32)
    best = np.argsort(-scores, kind="stable")
    if keys is not None:
        best = best[_first_per_key(np.asarray(keys)[best])]
    best = best[:k]
    return ids[best], scores[best].astype(np.float32)


def _nearest_accepted(
    rowids: np.ndarray, distances: np.ndarray, want: int, accept: Accept
) -> np.ndarray:
    """Up to ``want`` accepted ids of distinct texts, nearest first, read ring by ring of
    Hamming distance."""
    cumulative = np.cumsum(np.bincount(distances, minlength=DIM + 1))
    passed: list[np.ndarray] = []
    passed_keys: list[np.ndarray] = []
    found, checked, below, target = 0, 0, -1, 2 * want
    while found < want and below < DIM:
        if checked > MAX_CHECKED and sum(map(len, passed)) < want:
            # A rare filter: take its ids whole instead.
            return _nearest_of(rowids, distances, accept(None), want)
        if checked > MAX_CHECKED:  # copies fill the rings: the texts found so far it is
            break
        # Every record at distance (below, ceiling]: the next ring holding ~target more records.
        ceiling = min(int(np.searchsorted(cumulative, checked + target)), DIM)
        ring = np.flatnonzero((distances > below) & (distances <= ceiling))
        ring = ring[np.argsort(distances[ring], kind="stable")]
        ids = np.asarray(rowids[ring])
        ok_ids, keys = keys_of(ids, accept(np.unique(ids)))
        passed.append(ok_ids)
        passed_keys.append(keys)
        found = len(np.unique(np.concatenate(passed_keys)))
        checked += len(ring)
        below = ceiling
        target = read_next(checked, found, want, RING_GROWTH) - checked
    if not passed:
        return np.empty(0, np.int64)
    ordered = np.concatenate(passed)
    return ordered[_first_per_key(np.concatenate(passed_keys))][:want]


def _nearest_of(
    rowids: np.ndarray, distances: np.ndarray, allowed: tuple[np.ndarray, np.ndarray], want: int
) -> np.ndarray:
    positions = np.flatnonzero(np.isin(rowids, allowed[0]))
    positions = positions[np.argsort(distances[positions], kind="stable")]
    ids, keys = keys_of(np.asarray(rowids[positions]), allowed)
    return ids[_first_per_key(keys)][:want]


def keys_of(
    ids: np.ndarray, accepted: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The ``ids`` that are ``accepted`` (in their order), and each one's text key."""
    accepted_ids, accepted_keys = accepted
    order = np.argsort(accepted_ids, kind="stable")
    sorted_ids = accepted_ids[order]
    slots = np.minimum(np.searchsorted(sorted_ids, ids), max(len(sorted_ids) - 1, 0))
    ok = sorted_ids[slots] == ids if len(sorted_ids) else np.zeros(len(ids), bool)
    return ids[ok], accepted_keys[order][slots[ok]]


def _first_per_key(keys: np.ndarray) -> np.ndarray:
    """Positions of each key's first occurrence, in order (a rowid the file holds twice has
    one key too, so repeats go as well)."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)
