"""The sign bits of a dense collection in a file beside ``vectors.sqlite``, read block by block.

Dense search scans sign bits first (Hamming distance to the query's bits) and re-scores the
nearest few hundred from the float vectors of the sqlite-vec table, the store of record. Kept
in RAM, as ``vector_index.py`` does, the float vectors cost every server 1.5 KB a vector
and a reload of the whole collection after each publish. Here the bits (48 bytes a vector, with
its rowid and its entry's text key: 64) live in ``vectors.<collection>.signs``, which the
indexer appends to as it writes vectors and every server reads a search's lists of into one
small buffer: the file's pages are the kernel's cache, shared by all servers and never counted
in one, and a publish costs a reader only reading the header of the grown file again. (Mapped,
the pages a server had touched counted in its memory: 565 MB of its 1,393 MB after 100 calls at
10,000 papers, against 118 of 940 read.)

The file is a cache of the vec0 table and may hold more than it: records appended in a
transaction that rolled back, or for rowids deleted since (a retired entry, an id reused). A
reader therefore checks every candidate against ``entries`` and reads its float vector from
vec0; a stale record only costs a candidate. What the file must not do is lack a vector: the
indexer appends inside the transaction writing the vector, and ``sync`` (at every writer open)
appends what a killed run left out, rewrites a file of an older layout, or rebuilds the file
when it is missing, mostly stale, or its centre was taken from too few vectors.

A large collection's file is partitioned (an inverted file): at a build, k-means over a sample
of the vectors gives the lists' centroids, and the records are written grouped by their nearest
centroid, each list contiguous. A search scans the lists nearest the question until they hold
``PROBE_SHARE`` of the records, and the tail appended since the build whole; a filter too rare
for those lists to hold enough of its ids has the next-nearest lists read too, twice as many
records each time, up to the whole file (``sign_search.py``). A collection under ``LIST_MIN``
vectors has no lists: the whole file is scanned.

Each record carries its entry's text key (``entries.text_key``: copies of a text in different
documents share it, and their vectors): a search collapses the copies in numpy and looks up one
entry per text instead of every copy (``sign_search.py``). A build and a regroup write each
list's records by key, so the copies of a text in a list are one run. A key is written with
its record and never changes (an entry's text does not); a record whose entry is gone is stale
whatever its key.

Layout: a header of whole 4096-byte pages (``MAGIC``; the number of vectors the centre was taken
from; the number of lists; the number of records written grouped; the header's size; the
centre: 384 float32; the centroids: lists x 384 float32; each list's first record and the end of
the last: lists + 1 int64), then fixed 64-byte records of (rowid int64, text key int64, 6 uint64
words of sign bits). Older layouts are read as they are, each record's key read as its rowid
(each entry its own text), and rewritten by the next writer's open (``migrate``): the second
(``MAGIC_2``) has the same header and 56-byte records without the key; the first (``MAGIC_1``:
the centre only, in 4096 bytes, and 56-byte records) reads as one without lists, and is rebuilt
instead once its collection passes ``LIST_MIN``.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

import apsw
import numpy as np

T = TypeVar("T")
DIM = 384
WORDS = DIM // 64
MAGIC = b"docsym-signs-3\n\0"
MAGIC_2 = b"docsym-signs-2\n\0"
MAGIC_1 = b"docsym-signs-1\n\0"
PAGE = 4096
RECORD = np.dtype([("rowid", "<i8"), ("key", "<i8"), ("bits", "<u8", (WORDS,))])
RECORD_2 = np.dtype([("rowid", "<i8"), ("bits", "<u8", (WORDS,))])  # layouts 1 and 2: no key
# Rows per block of the Hamming scan: small enough that its temporary arrays stay in the CPU's
# cache (760k records: 14 ms a scan in blocks of 8,192, 29 ms in blocks of 262,144).
SCAN_ROWS = 8_192
READ_ROWS = 65_536  # vectors per batch when rebuilding from the vec0 table
# A scan's output arrays (rowid, key and distance: 18 bytes a record scanned, ~20 MB at 10,000
# papers) are kept for the next scan, this many sets of them: arrays made afresh for each search
# took ~1,600 page faults a search once other tools' calls had used the heap between searches.
KEPT_SCANS = 2
# Vectors given their nearest list at a time: the products are rows x lists floats (128 MB at
# 4,096 lists). Unbatched, a regroup of a 1.4M-vector tail asked for 21.8 GB at 6,300 papers.
ASSIGN_ROWS = 8_192
# Rebuild when more than this share of records are stale, or when the collection has grown to
# this many times the vectors the centre was taken from (an early centre, from a few documents,
# splits later documents' vectors worse).
STALE_SHARE = 0.25
CENTRE_GROWTH = 4
# The inverted file (docs/ARCHITECTURE.md has why these values): collections of LIST_MIN
# vectors and more get about one list per LIST_SIZE vectors (a power of two, at most MAX_LISTS),
# trained by KMEANS_ROUNDS of spherical k-means over TRAIN_PER_LIST vectors a list. A search
# scans PROBE_SHARE of the grouped records (1: all of them); a tail past TAIL_SHARE of the
# records is regrouped into its nearest lists.
LIST_MIN = 1_000_000
LIST_SIZE = 768
MAX_LISTS = 4_096
TRAIN_PER_LIST = 48
KMEANS_ROUNDS = 8
PROBE_SHARE = 1 / 8
TAIL_SHARE = 0.25


def signs_path(vectors: Path, collection: str) -> Path:
    return vectors.with_name(f"{vectors.stem}.{collection}.signs")


def sign_bits(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(n, DIM) floats to (n, WORDS) uint64: bit set where the vector exceeds the centre."""
    return np.packbits(np.asarray(vectors, np.float32) > centre, axis=1).view(np.uint64)


@dataclass(frozen=True)
class Header:
    """What a sign file's header holds."""

    centre: np.ndarray  # (DIM,) float32
    centre_count: int  # vectors the centre was taken from
    centroids: np.ndarray  # (lists, DIM) float32, unit length; (0, DIM) without lists
    starts: np.ndarray  # (lists + 1,) int64: list i is records [starts[i], starts[i + 1])
    size: int  # bytes before the first record
    layout: int = 3  # 1 or 2: records without keys, read as they are until a writer migrates

    @property
    def record(self) -> np.dtype:
        """The dtype of this file's records."""
        return RECORD if self.layout == 3 else RECORD_2

    @property
    def grouped(self) -> int:
        """Records written grouped by list; those after them are the tail appended since."""
        return int(self.starts[-1]) if len(self.starts) else 0


def _header_bytes(
    centre: np.ndarray, centre_count: int, centroids: np.ndarray, starts: np.ndarray
) -> bytes:
    lists = len(centroids)
    fixed = len(MAGIC) + 4 * 8
    size = -(-(fixed + 4 * DIM * (1 + lists) + 8 * (lists + 1)) // PAGE) * PAGE
    counts = np.array([centre_count, lists, starts[-1] if lists else 0, size], "<i8")
    body = b"".join(
        [
            MAGIC,
            counts.tobytes(),
            centre.astype("<f4").tobytes(),
            centroids.astype("<f4").tobytes(),
            starts.astype("<i8").tobytes() if lists else b"",
        ]
    )
    return body.ljust(size, b"\0")


def _without_lists(centre: np.ndarray, centre_count: int) -> bytes:
    return _header_bytes(centre, centre_count, np.empty((0, DIM), np.float32), np.zeros(1))


def _read_header(path: Path) -> Header | None:
    """The header, or None for a file that is not a sign file of any layout."""
    try:
        with path.open("rb") as f:
            return _header_of(f)
    except FileNotFoundError:
        return None


def _header_of(f: BinaryIO) -> Header | None:
    """The header of the open file ``f`` (read from its start), or None."""
    f.seek(0)
    head = f.read(PAGE)
    if head.startswith(MAGIC_1) and len(head) == PAGE:
        count = int(np.frombuffer(head, "<i8", 1, len(MAGIC_1))[0])
        centre = np.frombuffer(head, "<f4", DIM, len(MAGIC_1) + 8).copy()
        no_lists = np.empty((0, DIM), np.float32)
        return Header(centre, count, no_lists, np.zeros(1), PAGE, layout=1)
    if len(head) < PAGE or not head.startswith((MAGIC, MAGIC_2)):
        return None
    layout = 3 if head.startswith(MAGIC) else 2  # the same header in both
    count, lists, _, size = np.frombuffer(head, "<i8", 4, len(MAGIC)).tolist()
    head += f.read(size - PAGE)
    if len(head) < size:
        return None
    at = len(MAGIC) + 4 * 8
    centre = np.frombuffer(head, "<f4", DIM, at).copy()
    centroids = np.frombuffer(head, "<f4", lists * DIM, at + 4 * DIM).reshape(lists, DIM).copy()
    starts = np.frombuffer(head, "<i8", lists + 1, at + 4 * DIM * (1 + lists)).copy()
    starts = starts if lists else np.zeros(1, np.int64)
    return Header(centre, count, centroids, starts, size, layout)


def _record_count(header: Header, size: int) -> int:
    return max(0, size - header.size) // header.record.itemsize


# -- writing (the indexer) ------------------------------------------------------------------
class SignWriter:
    """Appends the sign bits of vectors as the indexer writes them (to the tail: a build
    groups them)."""

    def __init__(self, path: Path, header: Header) -> None:
        self.path = path
        self.centre = header.centre
        # A record cut short by a killed write would shift every later one: drop it.
        size = path.stat().st_size
        whole = header.size + _record_count(header, size) * RECORD.itemsize
        self._file = path.open("r+b")
        if size != whole:
            self._file.truncate(whole)
        self._file.seek(whole)

    @classmethod
    def open(cls, path: Path) -> SignWriter | None:
        """None for a missing file, one whose centre came from no vectors at all, or one of an
        older layout: ``sync`` migrates those at a writer's open, so one still here held only
        stale records then (no vectors to migrate for) and is replaced."""
        header = _read_header(path)
        if header is None or header.centre_count == 0 or header.layout != 3:
            return None
        return cls(path, header)

    @classmethod
    def create(cls, path: Path, vectors: np.ndarray) -> SignWriter:
        """A new file, centred on the first vectors written (``needs_build`` replaces the
        centre once the collection has grown past them)."""
        aside = path.with_name(path.name + ".building")
        with aside.open("wb") as f:
            f.write(_without_lists(np.asarray(vectors, np.float32).mean(axis=0), len(vectors)))
        os.replace(aside, path)
        return cls(path, _read_header(path))

    def append(
        self, rowids: np.ndarray | list[int], keys: np.ndarray | list[int], vectors: np.ndarray
    ) -> None:
        """Records of ``rowids`` with their entries' text ``keys`` and ``vectors``' bits."""
        self._file.write(_records(rowids, keys, vectors, self.centre).tobytes())
        self._file.flush()  # readers map what the kernel has; no fsync: a lost tail is re-synced

    @property
    def size(self) -> int:
        """The file's length after the records appended so far."""
        return self._file.tell()

    def close(self) -> None:
        self._file.close()


def _records(
    rowids: np.ndarray | list[int],
    keys: np.ndarray | list[int],
    vectors: np.ndarray,
    centre: np.ndarray,
) -> np.ndarray:
    records = np.empty(len(rowids), RECORD)
    records["rowid"] = rowids
    records["key"] = keys
    records["bits"] = sign_bits(vectors, centre)
    return records


def text_keys(con: apsw.Connection, rowids: np.ndarray) -> np.ndarray:
    """The text key of each rowid's entry, in order: the rowid itself for an entry written
    before keys (NULL) or gone (a stale record, which readers reject whatever its key). One
    lookup by id each."""
    asked = json.dumps(np.asarray(rowids, np.int64).tolist())
    found = con.execute(
        "SELECT coalesce((SELECT text_key FROM entries WHERE id = j.value), j.value) "
        "FROM json_each(?) AS j ORDER BY j.key",
        (asked,),
    )
    return np.fromiter((key for (key,) in found), np.int64, len(rowids))


def build(path: Path, con: apsw.Connection, table: str) -> None:
    """Write the sign file of vec0 table ``table`` from scratch: centre = mean of its vectors,
    and for LIST_MIN vectors or more, the records grouped by list. Written aside and renamed
    over, so a reader keeps its mapping of the old file."""
    count = len(vec0_rowids(con, table))
    lists = list_count(count)
    # The first pass sums the vectors for the centre and keeps a sample to train the lists on.
    rng = np.random.default_rng(0)  # the same vectors give the same lists
    share = min(1.0, TRAIN_PER_LIST * lists / max(count, 1))
    total, sample = np.zeros(DIM, np.float64), []
    for _, vectors in _vec0_batches(con, table):
        total += vectors.sum(axis=0, dtype=np.float64)
        if lists:
            sample.append(vectors[rng.random(len(vectors)) < share])
    centre = (total / count if count else total).astype(np.float32)
    centroids = _train(np.concatenate(sample), lists, rng) if lists else None
    aside = path.with_name(path.name + ".building")
    if centroids is None:
        _write_plain(aside, centre, count, con, table)
    else:
        _write_grouped(aside, centre, count, centroids, con, table)
    os.replace(aside, path)


def list_count(vectors: int) -> int:
    """Lists for a collection of this many vectors: none under LIST_MIN."""
    if vectors < LIST_MIN:
        return 0
    return min(MAX_LISTS, 2 ** round(np.log2(vectors / LIST_SIZE)))


def _write_plain(
    aside: Path, centre: np.ndarray, count: int, con: apsw.Connection, table: str
) -> None:
    with aside.open("wb") as f:
        f.write(_without_lists(centre, count))
        for rowids, vectors in _vec0_batches(con, table):
            f.write(_records(rowids, text_keys(con, rowids), vectors, centre).tobytes())


def _write_grouped(
    aside: Path,
    centre: np.ndarray,
    count: int,
    centroids: np.ndarray,
    con: apsw.Connection,
    table: str,
) -> None:
    """Every record, grouped by its nearest centroid. The records are held in memory to be
    ordered, rather than the floats read twice more: 64 bytes a vector and 2 for its list, filled
    in place (at 7.6M vectors, ~490 MB and the order's 61 MB)."""
    records = np.empty(count, RECORD)
    nearest = np.empty(count, np.int16)  # MAX_LISTS fits
    filled = 0
    for rowids, vectors in _vec0_batches(con, table):
        end = filled + len(rowids)
        if end > count:  # more vectors than counted: the one writer's build never sees this
            raise RuntimeError(f"{table} grew while its sign file was built")
        records[filled:end] = _records(rowids, text_keys(con, rowids), vectors, centre)
        nearest[filled:end] = nearest_lists(vectors, centroids, 1)[:, 0]
        filled = end
    records, nearest = records[:filled], nearest[:filled]
    order = np.lexsort((records["key"], nearest))  # by list, then text: see _by_text
    starts = np.searchsorted(nearest[order], np.arange(len(centroids) + 1))
    with aside.open("wb") as f:
        f.write(_header_bytes(centre, count, centroids, starts))
        for at in range(0, len(order), READ_ROWS):
            f.write(records[order[at : at + READ_ROWS]].tobytes())


def nearest_lists(vectors: np.ndarray, centroids: np.ndarray, n: int) -> np.ndarray:
    """(len(vectors), n) indices of each vector's n most similar centroids, nearest first."""
    if n == 1:  # a build's assignment: ASSIGN_ROWS at a time, their argmax kept
        return _nearest_list(vectors, centroids)[:, None]
    similarity = np.asarray(vectors, np.float32) @ centroids.T
    if n >= len(centroids):
        return np.argsort(-similarity, axis=1, kind="stable")
    top = np.argpartition(-similarity, n - 1, axis=1)[:, :n]
    ranked = np.take_along_axis(similarity, top, axis=1)
    return np.take_along_axis(top, np.argsort(-ranked, axis=1, kind="stable"), axis=1)


def _nearest_list(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    nearest = np.empty(len(vectors), np.int64)
    for at in range(0, len(vectors), ASSIGN_ROWS):
        block = np.asarray(vectors[at : at + ASSIGN_ROWS], np.float32)
        nearest[at : at + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return nearest


def _train(sample: np.ndarray, lists: int, rng: np.random.Generator) -> np.ndarray:
    """Spherical k-means: ``lists`` unit centroids of the sample's directions."""
    points = _unit(sample)
    centroids = points[rng.choice(len(points), size=min(lists, len(points)), replace=False)]
    for _ in range(KMEANS_ROUNDS):
        nearest = nearest_lists(points, centroids, 1)[:, 0]
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, points)
        empty = ~sums.any(axis=1)  # a list nothing chose keeps its centroid
        sums[empty] = centroids[empty]
        centroids = _unit(sums)
    return centroids


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1)).astype(np.float32)


def regroup(path: Path, con: apsw.Connection, table: str) -> None:
    """Move the tail appended since the last build into the lists its vectors are nearest,
    keeping the centre and the centroids: only the tail's vectors are read (a build reads every
    vector twice and trains the lists again). A tail record without a vector is dropped. Records
    are copied whole, keys with them: a file of the current layout (``refresh`` migrates
    first)."""
    header = _read_header(path)
    records = np.fromfile(path, RECORD, offset=header.size)
    grouped, tail = records[: header.grouped], records[header.grouped :]
    rowids = np.asarray(tail["rowid"])
    held = np.zeros(len(tail), bool)
    nearest = np.zeros(len(tail), np.int64)
    for at in range(0, len(tail), READ_ROWS):  # READ_ROWS vectors in memory at a time
        batch = rowids[at : at + READ_ROWS]
        # float_vectors gives the vectors of the ids asked that have one, in their order.
        found, vectors = float_vectors(con, table, batch)
        has = np.isin(batch, found)
        held[at : at + len(batch)] = has
        nearest[at : at + len(batch)][has] = nearest_lists(vectors, header.centroids, 1)[:, 0]
    kept, nearest = tail[held], nearest[held]
    sizes = np.diff(header.starts) + np.bincount(nearest, minlength=len(header.centroids))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    aside = path.with_name(path.name + ".building")
    with aside.open("wb") as f:
        f.write(_header_bytes(header.centre, header.centre_count, header.centroids, starts))
        for n in range(len(header.centroids)):
            members = [grouped[header.starts[n] : header.starts[n + 1]], kept[nearest == n]]
            f.write(_by_text(np.concatenate(members)).tobytes())
    os.replace(aside, path)


def _by_text(records: np.ndarray) -> np.ndarray:
    """A list's records ordered by text key, in their order within a key: a text's copies
    (one vector, so one distance to any question) are then one run, of which a search's rings
    hold the first record only (``sign_search._Runs``). In rowid order, the rings of a library
    holding each text hundreds of times held every copy, and collapsing them cost more than the
    scan (docs/RESULTS.md)."""
    return records[np.argsort(records["key"], kind="stable")]


def refresh(path: Path, con: apsw.Connection, table: str, live: int) -> str:
    """Rebuild, migrate or regroup the file where it needs it: 'built', 'migrated',
    'regrouped' or 'current'."""
    if needs_build(path, live):
        build(path, con, table)
        return "built"
    done = "current"
    if needs_migration(path):
        migrate(path, con)
        done = "migrated"
    if needs_regroup(path):
        regroup(path, con, table)
        done = "regrouped"
    return done


def needs_migration(path: Path) -> bool:
    """Whether the file is of an older layout (records without text keys)."""
    header = _read_header(path)
    return header is not None and header.layout != 3


def migrate(path: Path, con: apsw.Connection) -> None:
    """Rewrite a file of an older layout as the current one, in place of a rebuild (which
    reads every float vector twice and trains the lists again): the same header, and every
    record in its place, given its entry's text key (``text_keys``), READ_ROWS at a time.
    Written aside and renamed over, as a build is."""
    header = _read_header(path)
    count = _record_count(header, path.stat().st_size)  # a record cut short is dropped
    old = np.memmap(path, header.record, "r", header.size, (count,)) if count else None
    aside = path.with_name(path.name + ".building")
    with aside.open("wb") as f:
        f.write(_header_bytes(header.centre, header.centre_count, header.centroids, header.starts))
        for at in range(0, count, READ_ROWS):
            batch = old[at : at + READ_ROWS]
            records = np.empty(len(batch), RECORD)
            records["rowid"] = batch["rowid"]
            records["key"] = text_keys(con, batch["rowid"])
            records["bits"] = batch["bits"]
            f.write(records.tobytes())
    del old  # the old file's mapping, before it is replaced
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
    vectors exist, mostly stale records, a centre taken from too few vectors, or lists wanted
    where there are none (or the other way round)."""
    header = _read_header(path)
    if header is None:
        return live > 0
    try:
        records = _record_count(header, path.stat().st_size)
    except FileNotFoundError:
        return live > 0
    stale = records - live  # at least: some records may be stale while others are missing
    if stale > STALE_SHARE * max(records, 1) or live > CENTRE_GROWTH * max(header.centre_count, 1):
        return True
    return (list_count(live) > 0) != (len(header.centroids) > 0)


def needs_regroup(path: Path) -> bool:
    """Whether a file with lists has a tail past TAIL_SHARE of its records."""
    header = _read_header(path)
    if header is None or not len(header.centroids):
        return False
    records = _record_count(header, path.stat().st_size)
    return records - header.grouped > TAIL_SHARE * records


def sync(path: Path, con: apsw.Connection, table: str) -> str:
    """Make the sign file cover every vector of ``table``, in the current layout: 'built',
    'migrated', 'regrouped', 'appended' or 'current'."""
    live = vec0_rowids(con, table)
    if not len(live):
        return "current"  # nothing to cover: the first vectors written create the file
    done = refresh(path, con, table, len(live))
    if done == "built":
        return done
    header = _read_header(path)
    missing = lacking(live, SignScan(path).rowids())
    if not len(missing):
        return done
    writer = SignWriter(path, header)
    try:
        for start in range(0, len(missing), READ_ROWS):
            ids = missing[start : start + READ_ROWS]
            found_ids, vectors = float_vectors(con, table, ids)
            writer.append(found_ids, text_keys(con, found_ids), vectors)
    finally:
        writer.close()
    return "appended"


def lacking(live: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The ids of ``live`` (sorted, as ``vec0_rowids`` gives them) that ``held`` lacks, marked
    in a bitmap over the ids: ``np.isin`` sorts both arrays (a writer's open at 7.6M vectors
    peaked at 865 MB RSS with it, 717 MB with the bitmap, 490 MB of that the file's pages)."""
    if not len(live):
        return live
    seen = np.zeros(int(live[-1]) + 1, bool)
    held = np.asarray(held)
    seen[held[(held >= 0) & (held <= live[-1])]] = True
    return live[~seen[live]]


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
@dataclass(frozen=True)
class _Read:
    identity: tuple[int, int, int]  # inode, device, size when its header was read
    header: Header
    count: int  # records


class SignScan:
    """A server's view of a sign file. Each read opens the file and reads its header again
    when the file grew or was replaced since the last, so a read's header and records always
    come from one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last: _Read | None = None
        self._kept: list[_ScanArrays] = []
        self._kept_lock = threading.Lock()

    @classmethod
    def open(cls, path: Path) -> SignScan | None:
        scan = cls(path)
        return scan if scan._opened(lambda fd, read: read) is not None else None

    def _opened(self, use: Callable[[int, _Read], T]) -> T | None:
        """``use(fd, read)`` on the file opened, or None when it is missing or no sign file."""
        try:
            opened = self.path.open("rb", buffering=0)
        except FileNotFoundError:
            return None
        with opened:
            st = os.fstat(opened.fileno())
            identity = (st.st_ino, st.st_dev, st.st_size)
            read = self._last  # once: another thread may read another file meanwhile
            if read is None or read.identity != identity:
                header = _header_of(opened)
                if header is None:
                    return None
                read = self._last = _Read(identity, header, _record_count(header, st.st_size))
            return use(opened.fileno(), read)

    def rowids(self) -> np.ndarray:
        """Every record's rowid, in file order."""
        found = self._opened(lambda fd, read: _every(fd, read, "rowid"))
        return np.empty(0, np.int64) if found is None else found

    def layout(self) -> tuple[Header, np.ndarray] | None:
        """The header and every record, read whole: for checking a file, not for searching."""
        return self._opened(lambda fd, read: (read.header, _every(fd, read)))

    def distances(
        self, query: np.ndarray, upto: float | None = None, after: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rowids, text keys, Hamming distance of each record's bits to the query's): of the
        records in the lists nearest the query, taken nearest first, from the list that passes
        ``after`` of the grouped records to the one that passes ``upto`` (``PROBE_SHARE`` when
        None), and of the tail with the first of them. Every record when the file has no lists
        or the lists asked for are all of them. In file order."""
        return self._scanned_into(_ScanArrays(), query, (after, upto or PROBE_SHARE))

    @contextmanager
    def scanned(self, query: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``distances(query)`` into arrays kept for the next scan: valid inside the block."""
        with self._kept_lock:
            arrays = self._kept.pop() if self._kept else _ScanArrays()
        try:
            yield self._scanned_into(arrays, query, (0.0, PROBE_SHARE))
        finally:
            with self._kept_lock:
                if len(self._kept) < KEPT_SCANS:
                    self._kept.append(arrays)

    def _scanned_into(
        self, arrays: _ScanArrays, query: np.ndarray, shares: tuple[float, float]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found = self._opened(lambda fd, read: _scan(fd, read, query, shares, arrays))
        return arrays.first(0) if found is None else found  # None: the file is gone

    def partial(self) -> bool:
        """Whether ``distances`` scans only part of the file."""
        read = self._opened(lambda fd, read: read)
        return read is not None and len(read.header.centroids) > 0


class _ScanArrays:
    """The arrays one scan writes its records' rowids, keys and distances into, grown as
    needed."""

    def __init__(self) -> None:
        self.rowids = np.empty(0, np.int64)
        self.keys = np.empty(0, np.int64)
        self.distances = np.empty(0, np.uint16)

    def sized(self, records: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays, at least ``records`` long (callers slice what they wrote)."""
        if len(self.rowids) < records:
            self.rowids = np.empty(records, np.int64)
            self.keys = np.empty(records, np.int64)
            self.distances = np.empty(records, np.uint16)
        return self.rowids, self.keys, self.distances

    def first(self, records: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The first ``records`` written."""
        return self.rowids[:records], self.keys[:records], self.distances[:records]


def _scan(
    fd: int, read: _Read, query: np.ndarray, shares: tuple[float, float], arrays: _ScanArrays
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``SignScan.distances`` over the records of the open file ``fd``, read block by block into
    one buffer (not mapped: see the module's docstring), written into ``arrays``."""
    header = read.header
    query_bits = sign_bits(query[None, :], header.centre)[0]
    ranges = _probed(header, query, read.count, *shares)
    total = sum(end - first for first, end in ranges)
    rowids, keys, distances = arrays.sized(total)
    key = "key" if header.layout == 3 else "rowid"  # older layouts: each record its own text
    at = 0
    for block in _blocks(fd, header, ranges, SCAN_ROWS):
        distances[at : at + len(block)] = _hamming(block["bits"], query_bits)
        rowids[at : at + len(block)] = block["rowid"]
        keys[at : at + len(block)] = block[key]
        at += len(block)
    return arrays.first(at)


def _every(fd: int, read: _Read, field: str | None = None) -> np.ndarray:
    """Every record in file order, or only its ``field`` (a writer's sync reads the rowids
    of millions of records: a column, not the records)."""
    blocks = _blocks(fd, read.header, [(0, read.count)], READ_ROWS)
    parts = [(block if field is None else block[field]).copy() for block in blocks]
    empty = np.empty(0, read.header.record)
    return np.concatenate(parts) if parts else (empty if field is None else empty[field])


def _blocks(
    fd: int, header: Header, ranges: list[tuple[int, int]], rows: int
) -> Iterator[np.ndarray]:
    """The records of each range, ``rows`` at a time, read into one buffer (each block is valid
    until the next is read)."""
    buffer = np.empty(rows, header.record)
    for first, end in ranges:
        for start in range(first, end, rows):
            block = _read_block(fd, header, start, buffer[: min(rows, end - start)])
            if not len(block):
                return
            yield block


def _read_block(fd: int, header: Header, start: int, block: np.ndarray) -> np.ndarray:
    """Records ``start``.. into ``block`` (as many as fit); fewer if the file ends first."""
    into = memoryview(block.view(np.uint8))
    offset = header.size + start * header.record.itemsize
    done = 0
    while done < len(into):
        read = os.preadv(fd, [into[done:]], offset + done)
        if read == 0:
            break
        done += read
    return block[: done // header.record.itemsize]


def _probed(
    header: Header, query: np.ndarray, records: int, after: float, upto: float
) -> list[tuple[int, int]]:
    """The record ranges a search scans: the lists nearest the query, from the one that passes
    ``after`` of the grouped records to the one that passes ``upto``; with the first of them
    (``after`` 0), the tail. Every record when the file has no lists or those asked are all."""
    if not len(header.centroids) or (after <= 0 and upto >= 1):
        return [(0, records)] if after <= 0 else []
    grouped = min(header.grouped, records)
    sizes = np.diff(header.starts)
    order = nearest_lists(query[None, :], header.centroids, len(header.centroids))[0]
    held = np.cumsum(sizes[order])
    first = int(np.searchsorted(held, after * grouped)) + 1 if after > 0 else 0
    end = int(np.searchsorted(held, upto * grouped)) + 1
    chosen = np.sort(order[first:end])  # in file order: the pages are read forwards
    ranges = [(int(header.starts[i]), int(min(header.starts[i + 1], grouped))) for i in chosen]
    tail = [(grouped, records)] if records > grouped and after <= 0 else []
    return [r for r in ranges if r[1] > r[0]] + tail


def _hamming(block: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Bits in which each row of ``block`` differs from ``query_bits``, summed a word at a time:
    numpy's ``sum(axis=1)`` over six words a row took 1.8 times as long (bench/vector_scale.py,
    1M vectors)."""
    distance = np.bitwise_count(block[:, 0] ^ query_bits[0]).astype(np.uint16)
    for word in range(1, WORDS):
        distance += np.bitwise_count(block[:, word] ^ query_bits[word])
    return distance
