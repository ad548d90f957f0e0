"""In-memory k-NN search over the embeddings of a sqlite-vec ``vec0`` table.

sqlite-vec stays the store of record; this is a read-side cache built from it. sqlite-vec's
brute-force KNN costs 40-90 ms at 100k x 384, so searches go through a two-stage scan instead:

1. Binary first pass: every (mean-centred) vector is reduced to its 384 sign bits, packed into
   six uint64 words. Hamming distance to the query's bits (xor + ``np.bitwise_count``) ranks all
   rows at ~32x less memory traffic than a float scan, and a histogram of those distances picks
   the few hundred best candidates in O(n) without sorting.
2. Exact re-score: the candidates' float32 vectors are dotted with the query (cosine, since both
   are L2-normalised) and the top k returned, so scores are always exact.

Filtered searches (a set of allowed rowids) run the same two stages on just those rows; small
subsets skip the binary pass and are scored exactly, which is both cheaper and exact.

The float products use ``np.einsum`` rather than ``@``: on this 2-core machine OpenBLAS's threaded
gemv has a fixed ~8 ms wake-up stall for mid-sized matrices, which einsum's own loop avoids.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw
import numpy as np

DIM = 384
WORDS = DIM // 64
# Below this many rows an exact float scan is both cheap (< 1 ms) and exact.
EXACT_SCAN_MAX_ROWS = 8192
# Binary candidates re-scored exactly: a floor, and a multiple of k for large k.
MIN_CANDIDATES = 400
CANDIDATES_PER_K = 40


@dataclass(eq=False)
class VectorIndex:
    """Rowids and their L2-normalised float32 vectors, plus packed sign bits for the first pass."""

    rowids: np.ndarray  # int64 (n,), in build order
    vectors: np.ndarray  # float32 (n, DIM), row i belongs to rowids[i]
    bits_by_word: np.ndarray  # uint64 (WORDS, n): word-major so each pass over a word is contiguous
    center: np.ndarray  # float32 (DIM,): mean subtracted before taking signs
    sorted_rowids: np.ndarray  # int64 (n,): for mapping rowids to positions by binary search
    sorted_positions: np.ndarray  # intp (n,): where each sorted rowid lives in build order

    @classmethod
    def build(
        cls, rowids: np.ndarray, vectors: np.ndarray, *, centered: bool = True
    ) -> VectorIndex:
        rowids = np.ascontiguousarray(rowids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != DIM or len(vectors) != len(rowids):
            raise ValueError(
                f"expected vectors of shape ({len(rowids)}, {DIM}), got {vectors.shape}"
            )
        order = np.argsort(rowids, kind="stable")
        sorted_rowids = rowids[order]
        if len(sorted_rowids) > 1 and not np.all(sorted_rowids[1:] > sorted_rowids[:-1]):
            raise ValueError("rowids must be unique")
        # Embeddings share a common direction; centring first makes the sign bits carry more of
        # what distinguishes rows, which raises first-pass recall.
        center = vectors.mean(axis=0) if centered and len(vectors) else np.zeros(DIM, np.float32)
        return cls(
            rowids=rowids,
            vectors=vectors,
            bits_by_word=_pack_sign_bits(vectors, center),
            center=center.astype(np.float32),
            sorted_rowids=sorted_rowids,
            sorted_positions=order,
        )

    def __len__(self) -> int:
        return len(self.rowids)

    def without(self, hidden: np.ndarray) -> VectorIndex:
        """This index less the given rowids (self when none of them is in it)."""
        keep = ~np.isin(self.rowids, np.asarray(hidden, dtype=np.int64))
        if keep.all():
            return self
        return VectorIndex.build(self.rowids[keep], self.vectors[keep])

    def search(
        self, query: np.ndarray, k: int, subset: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rowids by cosine similarity to ``query`` (descending), optionally among ``subset``.

        ``subset`` holds allowed rowids; ones not in the index are ignored.
        """
        query = _normalised(np.asarray(query, dtype=np.float32).reshape(-1))
        if query.shape != (DIM,):
            raise ValueError(f"expected a query of {DIM} dimensions, got {query.shape}")
        positions = None if subset is None else self.positions_of(subset)
        row_count = len(self) if positions is None else len(positions)
        if k <= 0 or row_count == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        candidate_count = max(MIN_CANDIDATES, CANDIDATES_PER_K * k)
        if row_count <= max(EXACT_SCAN_MAX_ROWS, 2 * candidate_count):
            candidates = positions  # None: every row
        else:
            candidates = self._binary_candidates(query, candidate_count, positions)
        return self._top_k_exact(query, k, candidates)

    def similarities(self, query: np.ndarray, rowids: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to each given rowid, in order; 0 where a rowid has no
        vector. For scoring a known set of rows (all nodes of a document), not for top-k."""
        query = _normalised(np.asarray(query, dtype=np.float32).reshape(-1))
        wanted = np.asarray(rowids, dtype=np.int64).reshape(-1)
        scores = np.zeros(len(wanted), dtype=np.float32)
        if len(self) == 0 or len(wanted) == 0:
            return scores
        slots = np.minimum(np.searchsorted(self.sorted_rowids, wanted), len(self) - 1)
        found = self.sorted_rowids[slots] == wanted
        block = np.take(self.vectors, self.sorted_positions[slots[found]], axis=0)
        scores[found] = block @ query
        return scores

    def positions_of(self, subset_rowids: np.ndarray) -> np.ndarray:
        """Row positions of the given rowids, deduplicated, skipping rowids not in the index."""
        wanted = np.asarray(subset_rowids, dtype=np.int64).reshape(-1)
        if len(wanted) > 1 and not np.all(wanted[1:] > wanted[:-1]):
            wanted = np.unique(wanted)  # sorted input (the usual case) skips this O(m log m) step
        if len(self) == 0:
            return np.empty(0, np.intp)
        slots = np.minimum(np.searchsorted(self.sorted_rowids, wanted), len(self) - 1)
        found = self.sorted_rowids[slots] == wanted
        return self.sorted_positions[slots[found]]

    def _binary_candidates(
        self, query: np.ndarray, count: int, positions: np.ndarray | None
    ) -> np.ndarray:
        """Positions of about ``count`` rows nearest the query in Hamming distance."""
        query_words = _pack_sign_bits(query[None, :], self.center)[:, 0]
        words = self.bits_by_word if positions is None else np.take(self.bits_by_word, positions, 1)
        distances = np.bitwise_count(words[0] ^ query_words[0]).astype(np.uint16)
        for word_index in range(1, WORDS):
            distances += np.bitwise_count(words[word_index] ^ query_words[word_index])
        # The smallest distance whose cumulative count reaches `count`: every row at or below it.
        cumulative = np.cumsum(np.bincount(distances, minlength=DIM + 1))
        threshold = int(np.searchsorted(cumulative, count))
        chosen = np.flatnonzero(distances <= threshold)
        if len(chosen) > 4 * count:  # a crowded tie at the threshold: keep the nearest only
            chosen = chosen[np.argpartition(distances[chosen], count)[:count]]
        return chosen if positions is None else positions[chosen]

    def _top_k_exact(
        self, query: np.ndarray, k: int, candidates: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top k among candidate positions (None: all rows)."""
        if candidates is None:
            candidates = np.arange(len(self))
            block = self.vectors  # scanning everything: skip the gather copy
        else:
            block = np.take(self.vectors, candidates, axis=0)
        scores = np.einsum("ij,j->i", block, query)
        if k < len(scores):
            best = np.argpartition(-scores, k - 1)[:k]
        else:
            best = np.arange(len(scores))
        best = best[np.argsort(-scores[best], kind="stable")]
        return self.rowids[candidates[best]], scores[best]


def _normalised(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _pack_sign_bits(vectors: np.ndarray, center: np.ndarray) -> np.ndarray:
    """(n, DIM) floats to (WORDS, n) uint64 sign-bit words, built in blocks to bound memory."""
    packed = np.empty((len(vectors), WORDS), dtype=np.uint64)
    block_rows = 65536
    for start in range(0, len(vectors), block_rows):
        block = vectors[start : start + block_rows]
        packed[start : start + len(block)] = np.packbits(block > center, axis=1).view(np.uint64)
    return np.ascontiguousarray(packed.T)


def load_from_sqlite(con, vec_table: str) -> VectorIndex:
    """Build an index from every (rowid, embedding) of a sqlite-vec ``vec0`` table.

    ``con`` is an apsw connection with sqlite-vec loaded. Reads vec0's chunk shadow tables
    directly when their layout is the one expected (a chunk of ~1k vectors per blob, ~10x faster
    than a row-by-row scan), else falls back to ``SELECT rowid, embedding``.
    """
    if not vec_table.replace("_", "").isalnum():
        raise ValueError(f"not a plain table name: {vec_table!r}")
    loaded = _read_vec0_chunks(con, vec_table)
    rowids, vectors = loaded if loaded is not None else _read_vec0_rows(con, vec_table)
    return VectorIndex.build(rowids, vectors)


@contextmanager
def _memory_mapped_reads(con) -> Iterator[None]:
    """Read the file through mmap while loading: multi-megabyte blobs span hundreds of overflow
    pages, and mmap avoids a pread per page (~3x faster). The caller's setting is restored."""
    previous = con.execute("PRAGMA mmap_size").fetchall()[0][0]
    con.execute(f"PRAGMA mmap_size = {1 << 40}")  # SQLite caps it at its compile-time maximum
    try:
        yield
    finally:
        con.execute(f"PRAGMA mmap_size = {int(previous)}")


def _read_vec0_rows(con, vec_table: str) -> tuple[np.ndarray, np.ndarray]:
    """The portable path: one row per entry; float32 blobs are joined then reinterpreted once."""
    rows = con.execute(f"SELECT rowid, embedding FROM {vec_table}").fetchall()
    if not rows:
        return np.empty(0, np.int64), np.empty((0, DIM), np.float32)
    rowids, blobs = zip(*rows, strict=True)
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), DIM)
    return np.asarray(rowids, dtype=np.int64), vectors


def _read_vec0_chunks(con, vec_table: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Valid (rowids, vectors) straight from vec0's chunk tables, or None if they look unusual.

    vec0 (sqlite-vec 0.1.x) keeps, per chunk of ``size`` slots, an int64 rowid array and a
    validity bitmap in ``<t>_chunks`` and the packed float32 vectors in ``<t>_vector_chunks00``.
    Any mismatch with that layout (other versions, several vector columns, partitions) returns
    None so the caller scans rows instead; the entry count is checked against ``<t>_rowids``.
    """
    try:
        with _memory_mapped_reads(con):
            return _read_vec0_chunks_unguarded(con, vec_table)
    except apsw.SQLError:  # no such shadow table or column: not the layout this reader knows
        return None


def _read_vec0_chunks_unguarded(con, vec_table: str) -> tuple[np.ndarray, np.ndarray] | None:
    expected = con.execute(f"SELECT count(*) FROM {vec_table}_rowids").fetchall()[0][0]
    chunk_slots = con.execute(
        f"SELECT chunk_id, size, validity, rowids FROM {vec_table}_chunks"
    ).fetchall()
    # A separate query per table: a JOIN sorts the multi-megabyte blobs through a temp b-tree.
    vector_blobs = dict(
        con.execute(f"SELECT rowid, vectors FROM {vec_table}_vector_chunks00").fetchall()
    )
    rowid_parts, vector_parts = [], []
    for chunk_id, size, validity, rowid_blob in chunk_slots:
        vector_blob = vector_blobs.get(chunk_id, b"")
        if len(rowid_blob) != 8 * size or len(vector_blob) != 4 * DIM * size:
            return None
        valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:size]
        keep = np.flatnonzero(valid)
        rowid_parts.append(np.frombuffer(rowid_blob, np.int64)[keep])
        vector_parts.append(np.frombuffer(vector_blob, np.float32).reshape(size, DIM)[keep])
    count = sum(len(part) for part in rowid_parts)
    if count != expected:
        return None
    if count == 0:
        return np.empty(0, np.int64), np.empty((0, DIM), np.float32)
    return np.concatenate(rowid_parts), np.concatenate(vector_parts)
