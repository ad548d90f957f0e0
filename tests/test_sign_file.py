"""Dense search from sign files: exact scores, filters, visibility, old indexes, killed runs.

Real sqlite-vec, real DuckDB (an ``IndexWriter`` publishing generations), real ``DirectoryStore``.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest

from docsym.storage.directory import sign_file
from docsym.storage.directory.store import DirectoryStore
from docsym.storage.directory.vectors import VectorStore, connect
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.entries import Entry
from tests.test_vector_index import clustered

DOCS = 30
PER_DOC = 400  # 12,000 vectors: past the small-filter path, so the sign scan runs


def write(root: Path, docs: range, seed: int, remove: tuple[str, ...] = ()) -> dict:
    """Documents of PER_DOC entries as one published generation; their vectors by entry id."""
    rng = np.random.default_rng(seed)
    written = {}
    with IndexWriter(root) as writer:
        store = VectorStore(root / "vectors.sqlite", generation=writer.generation)
        writer.after_publish = store.published
        store.ensure_collection("minilm", "test", 384)
        store.remove_documents(remove)
        for d in docs:
            doc = f"d{d}"
            table = "chunks" if d % 3 else "entities"
            entries = [
                Entry(table, "text", f"{doc}:{n}", doc, 1, f"passage {n} of {doc}")
                for n in range(PER_DOC)
            ]
            vectors = clustered(rng, PER_DOC, centres=50)
            with store.replacing_documents([doc], entries, {"minilm": vectors}):
                pass
            ids = [i for i, _ in store.entries_of(doc)]
            written |= dict(zip(ids, vectors, strict=True))
        writer.publish()
        writer.after_publish = None
        store.settle()
        store.close()
    return written


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("signs")
    return root, write(root, range(DOCS), seed=1)


def exact(vectors: dict, query: np.ndarray, k: int, ids=None) -> list[int]:
    keys = np.array(sorted(vectors if ids is None else ids))
    scores = np.stack([vectors[i] for i in keys]) @ (query / np.linalg.norm(query))
    return keys[np.argsort(-scores, kind="stable")[:k]].tolist()


def test_writer_keeps_a_sign_file_covering_every_vector(index):
    root, vectors = index
    scan = sign_file.SignScan.open(sign_file.signs_path(root / "vectors.sqlite", "minilm"))
    assert scan is not None
    assert set(scan.rowids().tolist()) >= set(vectors)
    with DirectoryStore(root) as store:
        assert store.sign_gaps() == {"minilm": 0}
    _, records = _layout(root)  # rebuilt at the publish (a centre from the first document)
    keys = _entry_keys(root)
    assert records["key"].tolist() == [keys.get(i, i) for i in records["rowid"].tolist()]


def test_every_write_gives_its_records_their_entries_text_keys(tmp_path):
    """Documents written whole, vectors added in a second stage, entries rekeyed: each record
    holds its entry's text key, shared by the copies of a text."""
    store = VectorStore(tmp_path / "vectors.sqlite")
    store.ensure_collection("minilm", "test", 384)
    rng = np.random.default_rng(3)

    def entries(doc: str) -> list[Entry]:
        return [Entry("chunks", "text", f"{doc}:{n}", doc, 1, f"text {n % 3}") for n in range(6)]

    with store.replacing_documents(["a"], entries("a"), {"minilm": clustered(rng, 6)}):
        pass
    with store.replacing_documents(["b"], entries("b"), {}):
        pass
    store.add_vectors("b", "minilm", [i for i, _ in store.entries_of("b")], clustered(rng, 6))
    assert store.rekey("chunks", "a:*", lambda key: key.replace("a:", "c:")) == 6
    keys = dict(store.con.execute("SELECT id, text_key FROM entries").fetchall())
    store.close()
    _, records = sign_file.SignScan.open(store.signs_path("minilm")).layout()
    live = np.isin(records["rowid"], list(keys))
    rowids, record_keys = records["rowid"][live], records["key"][live]
    assert sorted(rowids.tolist()) == sorted(keys)  # b's 6 and the 6 rekeyed from a
    assert record_keys.tolist() == [keys[i] for i in rowids.tolist()]
    assert len(set(record_keys.tolist())) == 3


def test_a_rekey_is_done_once_unless_its_generation_was_never_published(tmp_path):
    store = VectorStore(tmp_path / "vectors.sqlite")
    entries = [Entry("chunks", "text", f"a:{n}", "a", 1, f"text {n}") for n in range(4)]
    with store.replacing_documents(["a"], entries, {}):
        pass  # published as generation 1
    store.generation = 2
    rename = lambda key: key.replace("a:", "c:")  # noqa: E731
    assert store.rekey_once("keys", 1, "chunks", "a:*", rename) == 4  # recorded as of 2
    store.discard_unpublished(1)  # a killed run: generation 2 never published
    assert store.rekey_once("keys", 1, "chunks", "a:*", rename) == 4  # so done again
    store.rekey = None  # published now: the next open reads no entry
    assert store.rekey_once("keys", 2, "chunks", "a:*", rename) == 0
    store.close()


def test_hits_are_exact_cosines_and_match_exact_search(index):
    root, vectors = index
    assert _recall_at_10(root, vectors) >= 0.9


def _recall_at_10(root: Path, vectors: dict) -> float:
    """Top-10 dense hits of 20 queries, each scored exactly, against exact search."""
    queries = clustered(np.random.default_rng(7), 20, centres=50)
    with DirectoryStore(root) as store:
        recall = 0
        for query in queries:
            hits = store.dense("minilm", query, limit=10)
            assert len(hits) == 10
            for i, score in hits:
                assert score == pytest.approx(float(vectors[i] @ query), abs=1e-5)
            recall += len({i for i, _ in hits} & set(exact(vectors, query, 10)))
    return recall / 200


def test_filters_return_limit_hits_inside_the_filter(index):
    root, vectors = index
    query = clustered(np.random.default_rng(8), 1, centres=50)[0]
    with DirectoryStore(root) as store:
        entities = store.dense("minilm", query, "e.table_name = ?", ["entities"], 50)
        one_doc = store.dense("minilm", query, "e.doc_id = ?", ["d4"], 10)
        rows = store.entries([i for i, _ in entities + one_doc])
    assert len(entities) == 50 and {rows[i].table_name for i, _ in entities} == {"entities"}
    assert len(one_doc) == 10 and {rows[i].doc_id for i, _ in one_doc} == {"d4"}
    d4 = {i for i in vectors if rows.get(i) and rows[i].doc_id == "d4"} | {i for i, _ in one_doc}
    assert [i for i, _ in one_doc] == exact(vectors, query, 10, ids=d4)


def test_similarities_read_the_stored_vectors(index):
    root, vectors = index
    query = clustered(np.random.default_rng(9), 1, centres=50)[0]
    ids = np.array([*list(vectors)[:5], 10**9], np.int64)  # the last has no vector
    with DirectoryStore(root) as store:
        got = store.similarities("minilm", query, ids)
    want = [float(vectors[i] @ query) for i in ids[:5]]
    assert got[:5] == pytest.approx(want, abs=1e-5) and got[5] == 0


def test_a_search_reads_the_file_and_keeps_none_of_it_mapped(index):
    """A server reads a search's records into a buffer: the file's pages stay the kernel's
    cache and never count in the server's memory, as a mapping's touched pages did."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("no /proc/self/maps on this system to list the process's mappings")
    root, vectors = index
    path = sign_file.signs_path(root / "vectors.sqlite", "minilm")
    with DirectoryStore(root) as store:
        query = next(iter(vectors.values()))
        assert store.dense("minilm", query, limit=5)
        assert str(path) not in maps.read_text()


def test_a_scan_reads_a_replaced_file_with_that_files_header(index, tmp_path):
    """A file rebuilt under the same name (a new inode) is read with its own header: never
    the old file's lists over the new file's records."""
    root, vectors = index
    path = sign_file.signs_path(root / "vectors.sqlite", "minilm")
    other = write(tmp_path / "other", range(3), seed=7)
    other_path = sign_file.signs_path(tmp_path / "other" / "vectors.sqlite", "minilm")
    moved = tmp_path / "moved.signs"
    moved.write_bytes(path.read_bytes())
    scan = sign_file.SignScan(moved)
    query = next(iter(vectors.values()))
    before, _, _ = scan.distances(query, upto=1.0)
    assert set(before.tolist()) >= set(vectors)
    os.replace(other_path, moved)
    after, _, distances = scan.distances(query, upto=1.0)
    assert sorted(after.tolist()) == sorted(scan.rowids().tolist())
    assert set(after.tolist()) >= set(other) and len(after) < len(before)
    assert len(distances) == len(after)


def test_a_reader_sees_new_vectors_at_the_publish_and_no_removed_ones(tmp_path):
    first = write(tmp_path, range(30), seed=2)
    query = next(iter(first.values()))
    with DirectoryStore(tmp_path) as store:
        before = dict(store.dense("minilm", query, limit=20))
        added = write(tmp_path, range(30, 32), seed=3, remove=("d0",))
        after = dict(store.dense("minilm", query, limit=20))
        rows = store.entries(list(after))
    assert before  # the query's own vector leads
    assert all(rows[i].doc_id != "d0" for i in after)
    assert set(after) <= set(first) | set(added)


def test_an_index_without_sign_files_serves_and_the_next_writer_builds_them(tmp_path):
    vectors = write(tmp_path, range(28), seed=4)
    path = sign_file.signs_path(tmp_path / "vectors.sqlite", "minilm")
    path.unlink()  # as an index written before sign files
    query = next(iter(vectors.values()))
    with DirectoryStore(tmp_path) as store:
        old = store.dense("minilm", query, limit=5)  # the in-memory index
    write(tmp_path, range(0), seed=5)  # a writer's open syncs
    assert path.exists()
    with DirectoryStore(tmp_path) as store:
        new = store.dense("minilm", query, limit=5)
    assert [i for i, _ in new] == [i for i, _ in old]
    assert [s for _, s in new] == pytest.approx([s for _, s in old], abs=1e-5)


def test_old_chunked_collections_are_copied_into_small_chunks(tmp_path):
    path = tmp_path / "vectors.sqlite"
    con = connect(path)
    con.execute("CREATE TABLE collections (name TEXT PRIMARY KEY, kind TEXT, model TEXT, dim INT)")
    con.execute("INSERT INTO collections VALUES ('minilm', 'vec0', 'm', 384)")
    con.execute("CREATE VIRTUAL TABLE vec_minilm USING vec0(embedding float[384])")
    vectors = clustered(np.random.default_rng(6), 50)
    for n, vector in enumerate(vectors, 1):
        con.execute(
            "INSERT INTO vec_minilm (rowid, embedding) VALUES (?, ?)", (n, vector.tobytes())
        )
    con.close()
    store = VectorStore(path)
    (ddl,) = store.con.execute("SELECT sql FROM sqlite_schema WHERE name = 'vec_minilm'").fetchone()
    ids, read = sign_file.float_vectors(store.con, "vec_minilm", np.arange(1, 51))
    store.close()
    assert "chunk_size" in ddl
    assert ids.tolist() == list(range(1, 51)) and np.array_equal(read, vectors)


def test_killed_appends_and_stale_records_cost_nothing(index, tmp_path):
    root, vectors = index
    path = sign_file.signs_path(root / "vectors.sqlite", "minilm")
    copy = _copied(root, tmp_path / "copy")
    copied = sign_file.signs_path(copy / "vectors.sqlite", "minilm")
    # A record for an id with no vector (a rolled-back write), then half a record (a kill).
    writer = sign_file.SignWriter.open(copied)
    writer.append([10**9], [10**9], clustered(np.random.default_rng(1), 1))
    writer.close()
    with copied.open("ab") as f:
        f.write(b"\1" * 20)
    query = next(iter(vectors.values()))
    with DirectoryStore(root) as clean, DirectoryStore(copy) as damaged:
        assert damaged.dense("minilm", query, limit=10) == clean.dense("minilm", query, limit=10)
    assert path.stat().st_size != copied.stat().st_size


def test_a_writer_open_reads_no_vector_of_a_covered_file_and_resyncs_a_short_one(index, tmp_path):
    root, vectors = index
    copy = _copied(root, tmp_path / "copy")
    path = sign_file.signs_path(copy / "vectors.sqlite", "minilm")

    def refused(*args):
        raise AssertionError("a covered file was compared with every vector")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sign_file, "sync", refused)
        write(copy, range(0), seed=7)  # as long as its last commit recorded: no sync
    header, _ = _layout(copy)
    # A crash lost the file's last records, which the vectors' commit had recorded.
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size - 5 * sign_file.RECORD.itemsize)
    with DirectoryStore(copy) as store:
        assert store.sign_gaps() == {"minilm": 5}
    write(copy, range(0), seed=7)
    with DirectoryStore(copy) as store:
        assert store.sign_gaps() == {"minilm": 0}
    assert set(sign_file.SignScan.open(path).rowids().tolist()) >= set(vectors)


def test_documents_awaiting_vectors_are_those_with_live_entries_and_none_recorded(tmp_path):
    store = VectorStore(tmp_path / "vectors.sqlite")
    store.ensure_collection("minilm", "test", 384)
    for doc in ("a", "b", "c"):
        entries = [Entry("chunks", "text", f"{doc}:{n}", doc, 1, f"{n} {doc}") for n in range(3)]
        with store.replacing_documents([doc], entries, {}):
            pass
    ids = [i for i, _ in store.entries_of("a")]
    store.add_vectors("a", "minilm", ids, clustered(np.random.default_rng(2), 3))
    store.generation = 2
    store.remove_documents(["c"])  # retired, not yet purged
    assert store.awaiting_vectors("minilm") == {"b"}
    assert store.doc_ids() == {"a", "b", "c"}  # entries live or retired
    store.close()


# -- the inverted file: a collection past LIST_MIN has its records grouped by list ------------
@pytest.fixture(scope="module")
def listed(tmp_path_factory) -> tuple[Path, dict]:
    """The 12,000 vectors again, with lists from 2,048 vectors on (64 lists of ~190), each
    given its list 1,000 at a time."""
    root = tmp_path_factory.mktemp("listed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sign_file, "LIST_MIN", 2_048)
        patch.setattr(sign_file, "LIST_SIZE", 192)
        patch.setattr(sign_file, "ASSIGN_ROWS", 1_000)
        return root, write(root, range(DOCS), seed=1)


def _layout(root: Path) -> tuple[sign_file.Header, np.ndarray]:
    path = sign_file.signs_path(root / "vectors.sqlite", "minilm")
    scan = sign_file.SignScan.open(path)
    assert scan is not None
    return scan.layout()


def test_a_large_collection_is_written_grouped_by_list(listed):
    root, vectors = listed
    header, records = _layout(root)
    assert len(header.centroids) == 64 and header.grouped == len(records) == len(vectors)
    assert np.all(np.diff(header.starts) >= 0)
    keys = _entry_keys(root)
    assert records["key"].tolist() == [keys[i] for i in records["rowid"].tolist()]
    # Each record stands in the list of its vector's nearest centroid.
    for n in range(len(header.centroids)):
        first, end = header.starts[n], header.starts[n + 1]
        members = np.stack([vectors[i] for i in records["rowid"][first:end].tolist()])
        assert np.all(sign_file.nearest_lists(members, header.centroids, 1)[:, 0] == n)
        keys_in_list = records["key"][first:end]
        assert np.all(keys_in_list[1:] >= keys_in_list[:-1])  # a text's records together


def test_a_search_scans_the_nearest_lists_and_finds_what_the_whole_file_finds(listed):
    root, vectors = listed
    scan = sign_file.SignScan.open(sign_file.signs_path(root / "vectors.sqlite", "minilm"))
    queries = clustered(np.random.default_rng(7), 20, centres=50)
    scanned = [len(scan.distances(q)[0]) for q in queries]
    assert scan.partial() and max(scanned) < len(vectors) / 4
    assert min(scanned) >= sign_file.PROBE_SHARE * len(vectors)
    assert _recall_at_10(root, vectors) >= 0.9


def test_a_scan_writes_into_arrays_kept_for_the_next_one(listed):
    """A search's scan reuses the arrays of one before it (fresh ones cost page faults a
    search), and two scans at once each have arrays of their own."""
    root, _ = listed
    scan = sign_file.SignScan.open(sign_file.signs_path(root / "vectors.sqlite", "minilm"))
    first_query, second_query = clustered(np.random.default_rng(8), 2, centres=50)
    with scan.scanned(first_query) as first:
        for kept, fresh in zip(first, scan.distances(first_query), strict=True):
            assert np.array_equal(kept, fresh)
        with scan.scanned(second_query) as beside:
            assert not np.shares_memory(first[0], beside[0])
    with scan.scanned(second_query) as again:
        assert np.shares_memory(again[0], first[0]) or np.shares_memory(again[0], beside[0])
        for kept, fresh in zip(again, scan.distances(second_query), strict=True):
            assert np.array_equal(kept, fresh)


def test_a_filter_too_rare_for_the_lists_scanned_reads_the_next_lists_until_enough_pass(
    listed, monkeypatch
):
    """The lists nearest the query hold too few of a rare filter's texts: the search reads the
    next-nearest lists, twice as many records each time, not the whole file at once, and finds
    what an exact search of the filter's vectors finds."""
    root, vectors = listed
    query = clustered(np.random.default_rng(8), 1, centres=50)[0]
    where = "e.doc_id IN (?, ?)"  # 800 entries: past the small-filter path, 1 in 15 of all
    widened: list[tuple[float, float]] = []
    distances = sign_file.SignScan.distances

    def recorded(scan, query, upto=None, after=0.0):
        widened.append((after, upto))
        return distances(scan, query, upto, after)

    monkeypatch.setattr(sign_file.SignScan, "distances", recorded)
    with DirectoryStore(root) as store:
        hits = store.dense("minilm", query, where, ["d4", "d5"], 10)
        rows = store.entries(list(vectors))
    inside = {i for i, row in rows.items() if row.doc_id in ("d4", "d5")}
    assert [i for i, _ in hits] == exact(vectors, query, 10, ids=inside)
    share = sign_file.PROBE_SHARE
    assert widened and widened[0] == (share, 2 * share)
    for (_, reached), (after, upto) in itertools.pairwise(widened):
        assert after == reached and upto == min(1.0, 2 * after)


def test_the_lists_read_as_a_search_widens_are_every_record_once(listed):
    root, vectors = listed
    scan = sign_file.SignScan.open(sign_file.signs_path(root / "vectors.sqlite", "minilm"))
    query = clustered(np.random.default_rng(9), 1, centres=50)[0]
    bands = [(0.0, None), (1 / 8, 1 / 4), (1 / 4, 1 / 2), (1 / 2, 1.0)]
    read = [scan.distances(query, upto, after)[0] for after, upto in bands]
    assert all(len(rowids) for rowids in read)
    every = np.concatenate(read)
    assert len(every) == len(vectors) and set(every.tolist()) == set(vectors)


def test_vectors_appended_after_a_build_are_searched_in_the_tail_then_regrouped(listed, tmp_path):
    root, vectors = listed
    copy = _copied(root, tmp_path / "copy")
    before, _ = _layout(copy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sign_file, "LIST_MIN", 2_048)
        patch.setattr(sign_file, "LIST_SIZE", 192)
        added = write(copy, range(DOCS, DOCS + 2), seed=11)
        header, records = _layout(copy)
        assert len(records) - header.grouped == len(added)  # under TAIL_SHARE: a tail
        query = next(iter(added.values()))
        with DirectoryStore(copy) as store:
            assert store.dense("minilm", query, limit=1)[0][0] in added
        patch.setattr(sign_file, "TAIL_SHARE", 0.05)
        # The regroup reads its 800-vector tail and assigns it in batches, as at 10,000 papers.
        patch.setattr(sign_file, "READ_ROWS", 300)
        patch.setattr(sign_file, "ASSIGN_ROWS", 70)
        more = write(copy, range(DOCS + 2, DOCS + 3), seed=12)
    header, records = _layout(copy)
    every = vectors | added | more
    # The writer's publish regrouped the tail it found, and the new document with it (its open
    # checks the file's length only: see test_a_writer_open_reads_no_vector_of_a_covered_file).
    assert header.grouped == len(every) and len(records) == len(every)
    assert np.array_equal(header.centroids, before.centroids)  # the lists kept, not trained
    keys = _entry_keys(copy)  # the keys moved with their records
    assert records["key"].tolist() == [keys[i] for i in records["rowid"].tolist()]
    for n in range(len(header.centroids)):
        first, end = header.starts[n], header.starts[n + 1]
        members = np.stack([every[i] for i in records["rowid"][first:end].tolist()])
        assert np.all(sign_file.nearest_lists(members, header.centroids, 1)[:, 0] == n)
        keys_in_list = records["key"][first:end]
        assert np.all(keys_in_list[1:] >= keys_in_list[:-1])  # the tail's among the rest
    with DirectoryStore(copy) as store:
        assert store.dense("minilm", query, limit=1)[0][0] == next(iter(added))


def test_a_file_of_the_first_layout_is_read_whole_and_rebuilt_with_lists(listed, tmp_path):
    root, vectors = listed
    header, records = _layout(root)
    old = tmp_path / "vectors.minilm.signs"
    head = sign_file.MAGIC_1 + np.int64(header.centre_count).tobytes() + header.centre.tobytes()
    old.write_bytes(head.ljust(sign_file.PAGE, b"\0") + _without_keys(records).tobytes())
    scan = sign_file.SignScan.open(old)
    query = next(iter(vectors.values()))
    rowids, keys, _ = scan.distances(query)
    assert not scan.partial() and len(rowids) == len(vectors)
    assert np.array_equal(keys, rowids)  # each entry its own text until migrated
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sign_file, "LIST_MIN", 2_048)
        assert sign_file.needs_build(old, len(vectors))
        current = sign_file.signs_path(root / "vectors.sqlite", "minilm")
        assert not sign_file.needs_build(current, len(vectors))


# -- older layouts: read as they are, migrated by the next writer's open -----------------------
def test_a_file_of_the_second_layout_is_read_as_it_is_and_migrated_by_the_next_writer(
    listed, tmp_path
):
    """Records without keys serve a read-only server as they are; a writer's open rewrites
    them with their entries' keys (a stale record's: its rowid), keeping the lists."""
    root, _ = listed
    copy = _copied(root, tmp_path / "copy")
    path = sign_file.signs_path(copy / "vectors.sqlite", "minilm")
    header, records = _layout(root)
    with_stale = _with_stale(records)
    head = sign_file._header_bytes(
        header.centre, header.centre_count, header.centroids, header.starts
    )
    path.write_bytes(
        sign_file.MAGIC_2 + head[len(sign_file.MAGIC) :] + _without_keys(with_stale).tobytes()
    )
    assert _searches(copy) == _searches(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sign_file, "LIST_MIN", 2_048)
        patch.setattr(sign_file, "LIST_SIZE", 192)
        VectorStore(copy / "vectors.sqlite").close()
    migrated = _assert_migrated(copy, with_stale)
    assert np.array_equal(migrated.centroids, header.centroids)
    assert np.array_equal(migrated.starts, header.starts)
    assert _searches(copy) == _searches(root)


def test_a_file_of_the_first_layout_without_lists_is_migrated(index, tmp_path):
    root, _ = index
    copy = _copied(root, tmp_path / "copy")
    path = sign_file.signs_path(copy / "vectors.sqlite", "minilm")
    header, records = _layout(root)
    records = _with_stale(records)
    head = sign_file.MAGIC_1 + np.int64(header.centre_count).tobytes() + header.centre.tobytes()
    path.write_bytes(head.ljust(sign_file.PAGE, b"\0") + _without_keys(records).tobytes())
    assert _searches(copy) == _searches(root)
    VectorStore(copy / "vectors.sqlite").close()  # rewritten, not rebuilt: the stale record kept
    migrated = _assert_migrated(copy, records)
    assert not len(migrated.centroids) and np.array_equal(migrated.centre, header.centre)
    assert _searches(copy) == _searches(root)


def _assert_migrated(root: Path, records: np.ndarray) -> sign_file.Header:
    """The file is of the current layout and holds ``records`` in order, each with its
    entry's text key (its rowid where the entry is gone); its header."""
    path = sign_file.signs_path(root / "vectors.sqlite", "minilm")
    assert path.read_bytes()[: len(sign_file.MAGIC)] == sign_file.MAGIC
    header, migrated = _layout(root)
    assert migrated["rowid"].tolist() == records["rowid"].tolist()
    assert np.array_equal(migrated["bits"], records["bits"])
    keys = _entry_keys(root)
    assert migrated["key"].tolist() == [keys.get(i, i) for i in records["rowid"].tolist()]
    return header


def _entry_keys(root: Path) -> dict[int, int]:
    con = connect(root / "vectors.sqlite", readonly=True)
    keys = dict(con.execute("SELECT id, text_key FROM entries").fetchall())
    con.close()
    return keys


def _searches(root: Path) -> list:
    """Dense hits of a few queries, unfiltered and filtered."""
    queries = clustered(np.random.default_rng(7), 5, centres=50)
    with DirectoryStore(root) as store:
        return [
            (store.dense("minilm", q, limit=10), store.dense("minilm", q, "e.doc_id != ?", ["d1"]))
            for q in queries
        ]


def _with_stale(records: np.ndarray) -> np.ndarray:
    """``records`` and one more, for an entry gone since."""
    stale = np.array(records[:1])
    stale["rowid"] = 10**9
    return np.concatenate([records, stale])


def _copied(root: Path, copy: Path) -> Path:
    copy.mkdir()
    for f in root.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    return copy


def _without_keys(records: np.ndarray) -> np.ndarray:
    """Records as the first two layouts wrote them: rowid and bits, 56 bytes."""
    old = np.empty(len(records), sign_file.RECORD_2)
    old["rowid"], old["bits"] = records["rowid"], records["bits"]
    return old


def test_lacking_names_the_vectors_a_file_does_not_hold():
    """A writer's sync and ``docsym check`` find the vectors a sign file lacks through a bitmap
    over the ids (any order, repeats and stale ids in the file)."""
    live = np.array([1, 2, 5, 9, 10], np.int64)
    held = np.array([10, 2, 2, 7, 40, 0], np.int64)
    assert sign_file.lacking(live, held).tolist() == [1, 5, 9]
    assert sign_file.lacking(live, live).size == 0
    assert sign_file.lacking(np.empty(0, np.int64), held).size == 0
