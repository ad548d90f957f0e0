"""Dense top-k from a sign file: Hamming candidates, checked, then re-scored exactly.

The caller supplies two reads of ``vectors.sqlite``: ``accept`` (which of some ids are entries
the reader sees and its filter matches, with their text keys) and ``floats`` (the stored float
vectors of some ids). Entries holding the same text (``entries.text_key``) have the same vector:
only the nearest of them counts, so the candidates are ``want`` distinct texts however many
copies a library holds of each.
Candidates are taken from the records the file's lists nearest the question hold (all records
of a file without lists; the next-nearest lists too, twice as many records each time, while
those hold too few that pass), nearest first in widening rings of Hamming distance until
``want`` texts pass ``accept``. The file keeps each
record's text key, so a ring's copies collapse in numpy before any lookup: ``accept`` checks
the nearest record of each text not yet found, and only for a text whose record it rejected (a
stale record, or a filter that passes another copy) that ring's other copies of it, one more
at a time for a few rounds, then the rest. A build writes each list's records by text key,
so a text's copies in a list stand together at one distance: a run, of which the rings hold
only the first record (``_Runs``), however many copies it has. An
unfiltered search checks about ``want`` ids however many copies there are, a filter matching a
tenth of the texts about ten times as many and their copies too (a filter on documents passes
some copies of a text and not others; the search cannot tell it from one on views, which passes
all or none). The ``want`` nearest that pass are re-scored from their float vectors, so every
score returned is the exact cosine.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from docsym.storage.directory import sign_file
from docsym.storage.directory.sign_file import DIM, SignScan
from docsym.storage.entries import read_next

# Hamming candidates re-scored exactly: a floor, and a multiple of k for large k.
MIN_CANDIDATES = 400
CANDIDATES_PER_K = 4
# Each ring spans at most this many times more records than the last. Past MAX_CHECKED ids
# looked up (records a ring's copies collapsed cost none), a filter that passed fewer than wanted
# is rare enough that reading all its ids (``accept(None)``) is cheaper than checking more; one
# that passed more had its lookups taken by copies of texts it rejected, and the search keeps
# the distinct texts found (fewer than wanted).
RING_GROWTH = 8
MAX_CHECKED = 200_000
NEXT_ROUNDS = 4  # of looking up one more copy of each unsettled text (_ring_accepted)
# A filter too rare for the lists scanned to hold ``want`` of its texts has the next-nearest
# lists read too, this many times the records each time. Reading the whole file instead took
# 220-680 ms at 10,000 papers for a question whose nearest texts are references, a view
# hybrid_search does not read (14 of 150 of bench/server_soak.py's questions; 65-237 ms now).
WIDEN = 2

# (ids, text keys) of the visible entries the filter matches among some ids (all when None).
Accept = Callable[[np.ndarray | None], tuple[np.ndarray, np.ndarray]]
# (ids, text keys) of the entries among some ids whose view the filter does not admit: it
# rejects every copy of their texts.
Outside = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
Floats = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def normalised(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, np.float32).reshape(-1)
    if vector.shape != (DIM,):
        raise ValueError(f"expected a query of {DIM} dimensions, got {vector.shape}")
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def search(
    scan: SignScan,
    query: np.ndarray,
    k: int,
    accept: Accept,
    floats: Floats,
    per_text: bool = True,
    outside: Outside | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k (rowids, cosine) among the accepted entries, best first. With ``per_text``, one
    entry per text key; without, each entry is its own text (``accept`` keys them by id), and
    the file's keys are not read."""
    query = normalised(query)
    if k <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    want = max(MIN_CANDIDATES, CANDIDATES_PER_K * k)
    checks = (accept, outside)
    with scan.scanned(query) as found:  # the candidates are copies: they outlive the arrays
        candidates, keys = _nearest_accepted(*_keyed(found, per_text), want, *checks)
    share = sign_file.PROBE_SHARE
    while len(candidates) < want and share < 1 and scan.partial():
        # A filter too rare for the lists read to hold enough of its texts: the next lists too,
        # for the texts still missing.
        found = scan.distances(query, upto=min(1.0, share * WIDEN), after=share)
        more, more_keys = _nearest_accepted(
            *_keyed(found, per_text), want, *checks, done=np.unique(keys)
        )
        candidates, keys = np.concatenate([candidates, more]), np.concatenate([keys, more_keys])
        share *= WIDEN
    return exact_top_k(query, k, *floats(candidates))


def _keyed(
    found: tuple[np.ndarray, np.ndarray, np.ndarray], per_text: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rowids, keys, distances) of the records scanned; without ``per_text``, the rowids are
    the keys."""
    rowids, keys, distances = found
    return rowids, keys if per_text else rowids, distances


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
    rowids: np.ndarray,
    keys: np.ndarray,
    distances: np.ndarray,
    want: int,
    accept: Accept,
    outside: Outside | None = None,
    done: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``want`` accepted ids of distinct texts, nearest first, and their text keys, read
    ring by ring of Hamming distance; texts of ``done`` (sorted keys: found in lists read
    before) are not taken again, and count toward ``want``. ``keys`` are the records' text
    keys as the file has them; the keys that count are those ``accept`` returns. They differ
    only for a stale record of a reused id (its old vector's bits under its old text's key):
    looked up, it counts for its entry's text, at its old place, as when every record was
    looked up; once its old text is found, it is not looked up, and the entry stands where its
    own record does.

    The rings hold the records that open a run (``_Runs``): a record repeating the key and the
    distance of the one before it is looked up only when its run's first was not settled."""
    runs = _Runs(keys, distances)
    # Rings grow by the records they span, copies included: grown by runs, a ring at 10,000
    # cloned papers spanned millions of records, and its rejected copies were looked up.
    cumulative = np.cumsum(np.bincount(distances, minlength=DIM + 1))
    passed: list[np.ndarray] = []
    passed_keys: list[np.ndarray] = []
    before = np.empty(0, np.int64) if done is None else done
    found = before  # the distinct keys accepted, sorted
    want -= len(before)  # texts still to find
    checked, looked_up, accepted, below, target = 0, 0, 0, -1, 2 * want
    while len(found) - len(before) < want and below < DIM:
        if looked_up > MAX_CHECKED and accepted < want:
            # A rare filter: take its ids whole instead.
            return _nearest_of(rowids, distances, accept(None), want, before)
        if looked_up > MAX_CHECKED:  # copies it rejected took the lookups: the texts found
            break
        # Every run at distance (below, ceiling]: the next ring spanning ~target more records.
        ceiling = min(int(np.searchsorted(cumulative, checked + target)), DIM)
        ring = runs.within(below, ceiling)
        checked = int(cumulative[ceiling])
        ring = ring[np.argsort(distances[ring], kind="stable")]
        ring = ring[~_member(keys[ring], found)]  # a text found in a nearer ring is done
        positions, ok_keys, asked = _ring_accepted(
            ring, rowids, keys, distances, runs, accept, outside
        )
        passed.append(rowids[positions])
        passed_keys.append(ok_keys)
        found = np.union1d(found, ok_keys)
        looked_up += asked
        accepted += len(positions)
        below = ceiling
        target = read_next(checked, len(found) - len(before), want, RING_GROWTH) - checked
    if not passed:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ordered, ordered_keys = np.concatenate(passed), np.concatenate(passed_keys)
    first = _first_per_key(ordered_keys)[:want]
    return ordered[first], ordered_keys[first]


class _Runs:
    """The records of a scan that lead a run: those not repeating the key and distance of the
    record before. A list keeps the records of a text together (``sign_file``), and copies of a
    text have one vector: a library's copies of a text in a list are one run, looked up once.

    Where most records repeat (a library holding its texts many times over), the leads are
    listed once and each ring picks from them (~35,000 runs of 957,000 records a question at
    10,000 cloned papers); otherwise each ring tests every record, as listing a lead for nearly
    every record costs more than the rings save (18 ms against 5 for a million distinct)."""

    def __init__(self, keys: np.ndarray, distances: np.ndarray) -> None:
        # In place: each temporary over a scan's million records costs its pages afresh.
        self.lead = np.ones(len(keys), bool)
        np.not_equal(keys[1:], keys[:-1], out=self.lead[1:])
        self.lead[1:] |= distances[1:] != distances[:-1]
        self.distances = distances
        leads = int(np.count_nonzero(self.lead))
        self._listed = np.flatnonzero(self.lead) if 2 * leads < len(keys) else None
        self._repeats: tuple[np.ndarray, np.ndarray] | None = None  # (positions, their leads)

    def within(self, below: int, ceiling: int) -> np.ndarray:
        """Positions of the leads at distance (below, ceiling], in scan order."""
        if self._listed is not None:
            at = self.distances[self._listed]
            return self._listed[(at > below) & (at <= ceiling)]
        return np.flatnonzero(self.lead & (self.distances > below) & (self.distances <= ceiling))

    def repeats_of(self, leads: np.ndarray) -> np.ndarray:
        """Positions of the records after each of ``leads`` in its run."""
        if self._listed is not None:  # a run ends where the next lead stands
            ends = np.append(self._listed, len(self.lead))[np.searchsorted(self._listed, leads) + 1]
            return _spans(leads + 1, ends - leads - 1)
        if self._repeats is None:  # once a search, if any text is left unsettled
            held = np.flatnonzero(~self.lead)
            starts = np.ones(len(held), bool)  # a run's first repeat follows its lead
            starts[1:] = held[1:] != held[:-1] + 1
            self._repeats = held, (held[starts] - 1)[np.cumsum(starts) - 1]
        held, owners = self._repeats  # owners rise with the positions
        first = np.searchsorted(owners, leads, "left")
        return held[_spans(first, np.searchsorted(owners, leads, "right") - first)]


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """starts[0], starts[0] + 1, ... (lengths[0] of them), then the same from starts[1], ..."""
    before = np.cumsum(lengths) - lengths  # the values of the spans before each
    return np.repeat(starts - before, lengths) + np.arange(lengths.sum())


def _ring_accepted(
    ring: np.ndarray,
    rowids: np.ndarray,
    keys: np.ndarray,
    distances: np.ndarray,
    runs: _Runs,
    accept: Accept,
    outside: Outside | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Of a ring's leads (positions, nearest first, their texts not found yet): the positions
    accepted, nearest first, with the keys ``accept`` gives them, and how many ids were looked
    up. Each key's first record is looked up; its other records (other leads, and the records
    repeating them in their runs) only when that one was rejected or turned out another text's,
    as any of them may be the nearest copy the filter passes, unless ``outside`` says its view
    is one the filter rejects whole."""
    ring_keys = keys[ring]
    firsts = _first_per_key(ring_keys)
    first = ring[firsts]
    ok, true_keys, settled, asked = _looked_up(first, rowids, keys, accept, outside)
    unsettled = ~_member(ring_keys, settled)  # the ring's leads of texts not settled
    others = unsettled.copy()
    others[firsts] = False
    rest = np.concatenate([ring[others], runs.repeats_of(ring[unsettled])])
    # An id looked up gives the same answer again (a stale record may be held more than once).
    rest = rest[~_member(rowids[rest], np.unique(rowids[first]))]
    rest = rest[np.lexsort((rest, distances[rest]))]  # ring order
    # The next record of each unsettled text first, a few times over: where stale records of
    # reused ids head a run, the copy after them passes or is of a view not searched, and the
    # run's other copies are not looked up (at 10,000 papers, a few such runs of ~700 copies
    # made most of a search's lookups). A filter passing few copies of a text gets the rest
    # looked up whole after NEXT_ROUNDS, or after a round the filter passed less than half of.
    passed, passed_keys = [first[ok]], [true_keys[ok]]
    for _ in range(NEXT_ROUNDS):
        if not len(rest):
            break
        step = rest[_first_per_key(keys[rest])]
        step_ok, step_keys, settled, more = _looked_up(step, rowids, keys, accept, outside)
        passed.append(step[step_ok])
        passed_keys.append(step_keys[step_ok])
        asked += more
        rest = np.setdiff1d(rest, step, assume_unique=True)
        rest = rest[~_member(keys[rest], settled)]
        if 2 * np.count_nonzero(step_ok) < len(step):  # the filter rejects most copies
            break
    rest_ok, rest_keys, more = _checked(rowids[rest], accept)
    positions = np.concatenate([*passed, rest[rest_ok]])
    order = np.lexsort((positions, distances[positions]))
    found_keys = np.concatenate([*passed_keys, rest_keys[rest_ok]])
    return positions[order], found_keys[order], asked + more


def _looked_up(
    positions: np.ndarray,
    rowids: np.ndarray,
    keys: np.ndarray,
    accept: Accept,
    outside: Outside | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Whether ``accept`` passes each record at ``positions`` and its entry's key, the keys
    those settle (sorted), and how many ids were looked up. A record settles its key when it
    passes under that key, or when ``outside`` says its view is one the filter rejects whole;
    a stale record of a reused id settles nothing."""
    ok, true_keys, asked = _checked(rowids[positions], accept)
    own = keys[positions]
    settled = own[ok & (true_keys == own)]
    rejected = positions[~ok]
    if outside is not None and len(rejected):
        out, out_keys = _matched(rowids[rejected], outside(np.unique(rowids[rejected])))
        settled = np.concatenate([settled, keys[rejected][out & (out_keys == keys[rejected])]])
        asked += len(rejected)
    return ok, true_keys, np.sort(settled), asked


def _checked(ids: np.ndarray, accept: Accept) -> tuple[np.ndarray, np.ndarray, int]:
    """Whether ``accept`` passes each of ``ids``, its key, and how many ids it looked up (none,
    and no call, for no ids)."""
    if not len(ids):
        return np.zeros(0, bool), np.zeros(0, np.int64), 0
    asked = np.unique(ids)
    ok, keys = _matched(ids, accept(asked))
    return ok, keys, len(asked)


def _nearest_of(
    rowids: np.ndarray,
    distances: np.ndarray,
    allowed: tuple[np.ndarray, np.ndarray],
    want: int,
    done: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``want`` nearest records ``allowed`` holds, of distinct texts not ``done``."""
    positions = np.flatnonzero(np.isin(rowids, allowed[0]))
    positions = positions[np.argsort(distances[positions], kind="stable")]
    ids, keys = keys_of(np.asarray(rowids[positions]), allowed)
    new = ~_member(keys, done)
    ids, keys = ids[new], keys[new]
    first = _first_per_key(keys)[:want]
    return ids[first], keys[first]


def keys_of(
    ids: np.ndarray, accepted: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The ``ids`` that are ``accepted`` (in their order), and each one's text key."""
    ok, keys = _matched(ids, accepted)
    return ids[ok], keys[ok]


def _matched(
    ids: np.ndarray, accepted: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``ids`` is ``accepted``, and its text key (0 where it is not)."""
    accepted_ids, accepted_keys = accepted
    if not len(accepted_ids):
        return np.zeros(len(ids), bool), np.zeros(len(ids), np.int64)
    order = np.argsort(accepted_ids, kind="stable")
    sorted_ids = accepted_ids[order]
    slots = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    ok = sorted_ids[slots] == ids
    return ok, np.where(ok, accepted_keys[order][slots], 0)


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each value is in ``sorted_set``: a binary search each (``np.isin`` sorts
    ``values`` too, and a ring may hold a million records)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    slots = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[slots] == values


def _first_per_key(keys: np.ndarray) -> np.ndarray:
    """Positions of each key's first occurrence, in order (a rowid the file holds twice has
    one key too, so repeats go as well)."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)
