"""The sign bits of a dense collection in a file beside ``vectors.sqlite``, read memory-mapped.

Dense search scans sign bits first (Hamming distance to the query's bits) and re-scores the
nearest few hundred from the float vectors of the sqlite-vec table, the store of record. Kept
in RAM, as ``vector_index.py`` does, the float vectors cost every server 1.5 KB a vector
and a reload of the whole collection after each publish. Here the bits (48 bytes a vector, with
its rowid: 56) live in ``vectors.<collection>.signs``, which the indexer appends to as it writes
vectors and every server maps: the pages are the kernel's, shared by all servers, and a publish
costs a reader only mapping the new tail.

The file is a cache of the vec0 table and may hold more than it: records appended in a
transaction that rolled back, or for rowids deleted since (a retired entry, an id reused). A
reader therefore checks every candidate against ``entries`` and reads its float vector from
vec0; a stale record only costs a candidate. What the file must not do is lack a vector: the
indexer appends inside the transaction writing the vector, and ``sync`` (at every writer open)
appends what a killed run left out, or rebuilds the file when it is missing, mostly stale, or
its centre was taken from too few vectors.

Layout: a 4096-byte header (``MAGIC``, the number of vectors the centre was taken from, the
centre: 384 float32), then fixed records of (rowid int64, 6 uint64 words of sign bits).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

DIM = 384
WORDS = DIM // 64
MAGIC = b"docsym-signs-1\n\0"
HEADER_BYTES = 4096
RECORD = np.dtype([("rowid", "<i8"), ("bits", "<u8", (WORDS,))])
# Rows per block of the Hamming scan: small enough that its temporary arrays stay in the CPU's
# cache (760k records: 14 ms a scan in blocks of 8,192, 29 ms in blocks of 262,144).
SCAN_ROWS = 8_192
READ_ROWS = 65_536  # vectors per batch when rebuilding from the vec0 table
# Rebuild when more than this share of records are stale, or when the collection has grown to
# this many times the vectors the centre was taken from (an early centre, from a few documents,
# splits later documents' vectors worse).
STALE_SHARE = 0.25
CENTRE_GROWTH = 4


def signs_path(vectors: Path, collection: str) -> Path:
    return vectors.with_name(f"{vectors.stem}.{collection}.signs")


def sign_bits(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(n, DIM) floats to (n, WORDS) uint64: bit set where the vector exceeds the centre."""
    return np.packbits(np.asarray(vectors, np.float32) > centre, axis=1).view(np.uint64)


def _header(centre: np.ndarray, centre_count: int) -> bytes:
    body = MAGIC + np.int64(centre_count).tobytes() + centre.astype("<f4").tobytes()
    return body.ljust(HEADER_BYTES, b"\0")


def _read_header(path: Path) -> tuple[np.ndarray, int] | None:
    """(centre, centre_count), or None for a file that is not a sign file of this layout."""
    try:
        with path.open("rb") as f:
            head = f.read(HEADER_BYTES)
    except FileNotFoundError:
        return None
    if len(head) < HEADER_BYTES or not head.startswith(MAGIC):
        return None
    count = int(np.frombuffer(head, "<i8", 1, len(MAGIC))[0])
    centre = np.frombuffer(head, "<f4", DIM, len(MAGIC) + 8).copy()
    return centre, count


def _record_count(size: int) -> int:
    return max(0, size - HEADER_BYTES) // RECORD.itemsize


# -- writing (the indexer) ------------------------------------------------------------------
class SignWriter:
    """Appends the sign bits of vectors as the indexer writes them."""

    def __init__(self, path: Path, centre: np.ndarray) -> None:
        self.path = path
        self.centre = centre
        # A record cut short by a killed write would shift every later one: drop it.
        size = path.stat().st_size
        whole = HEADER_BYTES + _record_count(size) * RECORD.itemsize
        self._file = path.open("r+b")
        if size != whole:
            self._file.truncate(whole)
        self._file.seek(whole)

    @classmethod
    def open(cls, path: Path) -> SignWriter | None:
        """None for a missing file, or one whose centre came from no vectors at all."""
        header = _read_header(path)
        return None if header is None or header[1] == 0 else cls(path, header[0])

    @classmethod
    def create(cls, path: Path, vectors: np.ndarray) -> SignWriter:
        """A new file, centred on the first vectors written (``needs_build`` replaces the
        centre once the collection has grown past them)."""
        aside = path.with_name(path.name + ".building")
        with aside.open("wb") as f:
            f.write(_header(np.asarray(vectors, np.float32).mean(axis=0), len(vectors)))
        os.replace(aside, path)
        return cls(path, _read_header(path)[0])

    def append(self, rowids: np.ndarray | list[int], vectors: np.ndarray) -> None:
        records = np.empty(len(rowids), RECORD)
        records["rowid"] = rowids
        records["bits"] = sign_bits(vectors, self.centre)
        self._file.write(records.tobytes())
        self._file.flush()  # readers map what the kernel has; no fsync: a lost tail is re-synced

    def close(self) -> None:
        self._file.close()


def build(path: Path, con: apsw.Connection, table: str) -> None:
    """Write the sign file of vec0 table ``table`` from scratch: centre = mean of its vectors.
    Written aside and renamed over, so a reader keeps its mapping of the old file."""
    total, count = np.zeros(DIM, np.float64), 0
    for _, vectors in _vec0_batches(con, table):
        total += vectors.sum(axis=0, dtype=np.float64)
        count += len(vectors)
    centre = (total / count if count else total).astype(np.float32)
    aside = path.with_name(path.name + ".building")
    with aside.open("wb") as f:
        f.write(_header(centre, count))
    writer = SignWriter(aside, centre)
    try:
        for rowids, vectors in _vec0_batches(con, table):
            writer.append(rowids, vectors)
    finally:
        writer.close()
    os.replace(aside, path)


def _vec0_batches(con: apsw.Connection, table: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    cursor = con.execute(f"SELECT rowid, embedding FROM {table}")
    while batch := list(itertools.islice(cursor, READ_ROWS)):
        rowids, blobs = zip(*batch, strict=True)
        vectors = np.frombuffer(b"".join(blobs), np.float32).reshape(len(batch), DIM)
        yield np.asarray(rowids, np.int64), vectors


def vec0_rowids(con: apsw.Connection, table: str) -> np.ndarray:
    """Every rowid of a vec0 table, sorted."""
    rows = con.execute(f"SELECT rowid FROM {table}_rowids ORDER BY rowid")
    return np.fromiter((r[0] for r in rows), np.int64)


def needs_build(path: Path, live: int) -> bool:
    """Whether the file must be rebuilt for a collection of ``live`` vectors: missing while
    vectors exist, mostly stale records, or a centre taken from too few vectors."""
    header = _read_header(path)
    if header is None:
        return live > 0
    try:
        records = _record_count(path.stat().st_size)
    except FileNotFoundError:
        return live > 0
    stale = records - live  # at least: some records may be stale while others are missing
    return stale > STALE_SHARE * max(records, 1) or live > CENTRE_GROWTH * max(header[1], 1)


def sync(path: Path, con: apsw.Connection, table: str) -> str:
    """Make the sign file cover every vector of ``table``: 'built', 'appended' or 'current'."""
    live = vec0_rowids(con, table)
    if not len(live):
        return "current"  # nothing to cover: the first vectors written create the file
    if needs_build(path, len(live)):
        build(path, con, table)
        return "built"
    header = _read_header(path)
    missing = live[~np.isin(live, SignScan(path).rowids())]
    if not len(missing):
        return "current"
    writer = SignWriter(path, header[0])
    try:
        for start in range(0, len(missing), READ_ROWS):
            ids = missing[start : start + READ_ROWS]
            found_ids, vectors = float_vectors(con, table, ids)
            writer.append(found_ids, vectors)
    finally:
        writer.close()
    return "appended"


def float_vectors(
    con: apsw.Connection, table: str, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The stored float vectors of ``ids`` (those that have one), one point lookup each: a
    single ``rowid IN (...)`` made vec0 scan its chunks (2.9x slower for 400 ids at 1M)."""
    found, blobs = [], []
    for rowid in ids.tolist():
        for (blob,) in con.execute(f"SELECT embedding FROM {table} WHERE rowid = ?", (rowid,)):
            found.append(rowid)
            blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), np.float32).reshape(len(found), DIM)
    return np.asarray(found, np.int64), matrix


# -- reading (the servers) ------------------------------------------------------------------
@dataclass
class _Mapping:
    identity: tuple[int, int, int]  # inode, device, size when mapped
    records: np.ndarray  # a memmap of RECORD


class SignScan:
    """A server's view of a sign file, mapped again when the file grows or is rebuilt."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mapping: _Mapping | None = None
        self.centre = np.zeros(DIM, np.float32)

    @classmethod
    def open(cls, path: Path) -> SignScan | None:
        scan = cls(path)
        return scan if scan._records() is not None else None

    def _records(self) -> np.ndarray | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        identity = (st.st_ino, st.st_dev, st.st_size)
        if self._mapping is None or self._mapping.identity != identity:
            header = _read_header(self.path)
            if header is None:
                return None
            self.centre = header[0]
            count = _record_count(st.st_size)
            records = (
                np.memmap(self.path, RECORD, "r", HEADER_BYTES, (count,))
                if count
                else np.empty(0, RECORD)
            )
            self._mapping = _Mapping(identity, records)
        return self._mapping.records

    def rowids(self) -> np.ndarray:
        records = self._records()
        return np.empty(0, np.int64) if records is None else np.asarray(records["rowid"])

    def distances(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, Hamming distance of each record's bits to the query's), in file order."""
        records = self._records()
        if records is None or not len(records):
            return np.empty(0, np.int64), np.empty(0, np.uint16)
        query_bits = sign_bits(query[None, :], self.centre)[0]
        out = np.empty(len(records), np.uint16)
        for start in range(0, len(records), SCAN_ROWS):
            block = records["bits"][start : start + SCAN_ROWS]
            out[start : start + len(block)] = _hamming(block, query_bits)
        return records["rowid"], out


def _hamming(block: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Bits in which each row of ``block`` differs from ``query_bits``, summed a word at a time:
    numpy's ``sum(axis=1)`` over six words a row took 1.8 times as long (bench/vector_scale.py,
    1M vectors)."""
    distance = np.bitwise_count(block[:, 0] ^ query_bits[0]).astype(np.uint16)
    for word in range(1, WORDS):
        distance += np.bitwise_count(block[:, word] ^ query_bits[word])
    return distance
