"""A library holding its texts many times over: each search returns one entry per text, so its
candidates are distinct passages however many copies there are, and ``Store.copies`` lists the
places a text also stands.

Real sqlite-vec and FTS5 files written by ``VectorStore``, real DuckDB generations published by
an ``IndexWriter``, read by a real ``DirectoryStore``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docsym.storage.directory import sign_search
from docsym.storage.directory.store import DirectoryStore
from docsym.storage.directory.vectors import VectorStore, connect
from docsym.storage.directory.writer import IndexWriter
from docsym.storage.entries import Entry, read_next
from tests.test_vector_index import clustered

COPIES = 6
# 2,700 entries, 450 a document: past the small-filter path (sign_search.MIN_CANDIDATES), so the
# sign scan runs, for a filter on one document too.
PER_DOC = 450
_WORDS = ["basin", "drain", "valve", "tower", "pump", "filter", "gauge", "meter", "log"]


def _texts() -> list[str]:
    rng = np.random.default_rng(5)
    return [f"kestrel survey note {n}: " + " ".join(rng.choice(_WORDS, 6)) for n in range(PER_DOC)]


def _write(root: Path) -> np.ndarray:
    """COPIES documents holding the same texts with the same vectors (as the encoder gives
    them), published; the vectors."""
    vectors = clustered(np.random.default_rng(9), PER_DOC, centres=20)
    with IndexWriter(root) as writer:
        store = VectorStore(root / "vectors.sqlite", generation=writer.generation)
        writer.after_publish = store.published
        store.ensure_collection("minilm", "test", 384)
        for copy in range(COPIES):
            doc = f"d{copy}"
            entries = [
                Entry("chunks", "text", f"{doc}:{n}", doc, 1, text)
                for n, text in enumerate(_texts())
            ]
            with store.replacing_documents([doc], entries, {"minilm": vectors}):
                pass
        writer.publish()
        writer.after_publish = None
        store.settle()
        store.close()
    return vectors


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> tuple[Path, np.ndarray]:
    root = tmp_path_factory.mktemp("copies")
    return root, _write(root)


def _texts_of(store: DirectoryStore, found: list[tuple[int, float]]) -> list[str]:
    entries = store.entries([i for i, _ in found])
    return [entries[i].text for i, _ in found]


def test_dense_search_returns_the_nearest_distinct_texts(library) -> None:
    root, vectors = library
    queries = clustered(np.random.default_rng(2), 10, centres=20)
    with DirectoryStore(root) as store:
        for query in queries:
            found = store.dense("minilm", query, limit=20)
            texts = _texts_of(store, found)
            assert len(texts) == len(set(texts)) == 20
            exact = np.sort(vectors @ (query / np.linalg.norm(query)))[::-1][:20]
            assert np.allclose([s for _, s in found], exact, atol=1e-5)


def test_keyword_search_returns_one_row_per_text(library) -> None:
    root, _ = library
    with DirectoryStore(root) as store:
        found = store.fts("kestrel survey basin", limit=100)
        texts = _texts_of(store, found)
        assert len(texts) == len(set(texts)) == 100
        every = _texts_of(store, store.fts("kestrel survey basin", limit=100, per_text=False))
        assert every.count(texts[0]) == COPIES  # every row, as rank_nodes asks


def test_a_caller_may_ask_for_every_row(library) -> None:
    root, _ = library
    query = clustered(np.random.default_rng(6), 1, centres=20)[0]
    with DirectoryStore(root) as store:
        nearest = store.dense("minilm", query, limit=1)
        every = store.dense("minilm", query, limit=2 * COPIES, per_text=False)
        assert _texts_of(store, every[:COPIES]) == _texts_of(store, nearest) * COPIES
        assert [s for _, s in every[:COPIES]] == pytest.approx([nearest[0][1]] * COPIES)


def test_a_filter_keeps_its_own_copy(library) -> None:
    root, _ = library
    query = clustered(np.random.default_rng(4), 1, centres=20)[0]
    with DirectoryStore(root) as store:
        for found in (
            store.dense("minilm", query, "e.doc_id = ?", ["d3"], limit=10),
            store.fts("kestrel valve", "e.doc_id = ?", ["d3"], limit=10),
        ):
            assert len(found) == 10
            assert {e.doc_id for e in store.entries([i for i, _ in found]).values()} == {"d3"}


def _searched(
    store: DirectoryStore, query: np.ndarray, where: str, params: list, per_text: bool
) -> tuple[list[int], list[float], int]:
    """The sign search as ``DirectoryStore.dense`` runs it, keyed by text either way (without
    ``per_text``, every record is looked up and the copies collapse after, as before the file
    kept keys): ids, scores, and how many ids ``accept`` was asked about."""
    asked = []

    def accept(ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        asked.append(len(ids) if ids is not None else 0)
        return store._matching(where, params, ids, None, "text_key")

    def floats(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store._floats("minilm", ids)

    scan = store._sign_scan("minilm")
    ids, scores = sign_search.search(scan, query, 10, accept, floats, per_text=per_text)
    return ids.tolist(), scores.tolist(), sum(asked)


def test_dense_search_looks_up_one_copy_of_each_text(library) -> None:
    """The sign file's keys collapse the copies before any lookup: the same hits as looking
    every copy up, for about one lookup per text."""
    root, _ = library
    queries = clustered(np.random.default_rng(3), 5, centres=20)
    with DirectoryStore(root) as store:
        for query in queries:
            ids, scores, asked = _searched(store, query, "TRUE", [], per_text=True)
            every_ids, every_scores, every_asked = _searched(store, query, "TRUE", [], False)
            assert (ids, scores) == (every_ids, every_scores)
            assert asked <= PER_DOC < 3 * PER_DOC < every_asked


def test_a_filter_passing_one_copy_looks_up_the_copies_of_texts_it_rejected(library) -> None:
    """A filter on one document rejects the nearest copy of most texts: the ring's other copies
    of those are looked up, and each text's own copy found, as looking every copy up finds."""
    root, _ = library
    query = clustered(np.random.default_rng(4), 1, centres=20)[0]
    with DirectoryStore(root) as store:
        ids, scores, _ = _searched(store, query, "e.doc_id = ?", ["d3"], per_text=True)
        every = _searched(store, query, "e.doc_id = ?", ["d3"], per_text=False)
        assert (ids, scores) == every[:2]
        assert {e.doc_id for e in store.entries(ids).values()} == {"d3"}


def test_a_rare_filter_past_the_lookups_bound_reads_its_ids_whole(library, monkeypatch) -> None:
    """Past MAX_CHECKED lookups with fewer texts passed than wanted, the filter's ids are read
    whole (``accept(None)``): the same hits."""
    root, _ = library
    query = clustered(np.random.default_rng(4), 1, centres=20)[0]
    with DirectoryStore(root) as store:
        wanted = store.dense("minilm", query, "e.doc_id = ?", ["d3"], limit=10)
        monkeypatch.setattr(sign_search, "MAX_CHECKED", 50)
        assert store.dense("minilm", query, "e.doc_id = ?", ["d3"], limit=10) == wanted


def test_the_ring_check_finds_what_checking_every_record_finds() -> None:
    """Random files of copies, filters passing some copies, stale records (their entry gone)
    and ids held twice: collapsing on the file's keys before the lookups gives the candidates
    that looking every record up gives."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        rowids, keys, distances, accept = _random_file(rng, reused=0)
        want = int(rng.integers(1, 60))
        found = sign_search._nearest_accepted(rowids, keys, distances, want, accept)[0]
        every = sign_search._nearest_accepted(rowids, rowids, distances, want, accept)[0]
        assert found.tolist() == every.tolist()


def test_a_stale_record_of_a_reused_id_counts_under_the_entrys_key() -> None:
    """An id reused by another text leaves its old record under the old key: accepted, it
    stands for the entry's text, never for the old one's (the candidates may differ from looking
    every record up, which also took such a record at its old vector's place)."""
    rng = np.random.default_rng(12)
    for _ in range(100):
        rowids, keys, distances, accept = _random_file(rng, reused=0.05)
        want = int(rng.integers(1, 60))
        found = sign_search._nearest_accepted(rowids, keys, distances, want, accept)[0]
        ids, entry_keys = accept(found)
        assert sorted(ids.tolist()) == sorted(found.tolist())
        assert len(set(entry_keys.tolist())) == len(found) <= want


def test_runs_of_copies_are_read_as_every_record_reads_them() -> None:
    """Files as a build writes them (each list's records by text key, so a text's copies in a
    list are one run at one distance, a few nudged a bit off it), with ids held twice: reading a
    run's first record, and its others only while its text is unsettled, gives the candidates
    that looking every record up gives."""
    rng = np.random.default_rng(14)
    for _ in range(150):
        rowids, keys, distances, accept = _random_file(rng, reused=0)
        rowids, keys, distances = _in_runs(rng, rowids, keys, distances)
        want = int(rng.integers(1, 60))
        found = sign_search._nearest_accepted(rowids, keys, distances, want, accept)[0]
        every = sign_search._nearest_accepted(rowids, rowids, distances, want, accept)[0]
        assert found.tolist() == every.tolist()


def test_lists_read_after_the_first_add_only_texts_not_found_in_them() -> None:
    """A search reading more lists (a filter too rare for the first) asks them only for the
    texts still missing: no text twice, the first lists' texts kept, and as many texts in all
    as the file's records, read whole, hold up to the number wanted."""
    rng = np.random.default_rng(15)
    for _ in range(100):
        rowids, keys, distances, accept = _random_file(rng, reused=0)
        want = int(rng.integers(1, 60))
        cut = int(rng.integers(1, len(rowids)))
        first, first_keys = sign_search._nearest_accepted(
            rowids[:cut], keys[:cut], distances[:cut], want, accept
        )
        more, more_keys = sign_search._nearest_accepted(
            rowids[cut:], keys[cut:], distances[cut:], want, accept, done=np.unique(first_keys)
        )
        texts = np.concatenate([first_keys, more_keys])
        assert len(np.unique(texts)) == len(texts) <= want
        whole = sign_search._nearest_accepted(rowids, keys, distances, want, accept)[1]
        assert len(texts) == len(whole)
        assert set(accept(np.concatenate([first, more]))[1].tolist()) == set(texts.tolist())


def test_a_run_headed_by_stale_records_looks_up_few_of_its_copies() -> None:
    """A text's 700 copies in one run, headed by stale records of reused ids (their entries now
    hold other texts): the search looks up the heads and the copy after them, not the run."""
    copies, heads = 700, 3
    rowids = np.arange(copies + heads, dtype=np.int64)
    keys = np.full(len(rowids), 10**12, np.int64)
    distances = np.full(len(rowids), 40, np.uint16)
    entry_keys = np.full(len(rowids), 10**12, np.int64)
    entry_keys[:heads] = 10**12 + 1 + rowids[:heads]  # reused by other texts
    asked: list[int] = []

    def accept(ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        ids = np.arange(len(rowids)) if ids is None else ids
        asked.append(len(ids))
        return ids, entry_keys[ids]

    found = sign_search._nearest_accepted(rowids, keys, distances, 10, accept)[0]
    assert found.tolist() == [0, 1, 2, 3]  # the heads stand for their own texts, then the copy
    assert sum(asked) <= heads + sign_search.NEXT_ROUNDS < copies


def _in_runs(rng: np.random.Generator, rowids, keys, distances) -> tuple:
    """The records of a random file ordered as a build writes them: by list (a text's copies
    share a vector, so a list), then by key; a text's records at one distance, a tenth of them
    nudged one bit off it, and some records held twice in a row."""
    lists = keys % int(rng.integers(1, 8))
    order = np.lexsort((keys, lists))
    rowids, keys = rowids[order], keys[order]
    _, text = np.unique(keys, return_inverse=True)
    distances = rng.integers(1, 384, text.max() + 1)[text]
    nudged = rng.random(len(keys)) < 0.1
    distances = (distances + nudged * rng.choice([-1, 1], len(keys))).astype(np.uint16)
    twice = np.repeat(np.arange(len(keys)), 1 + (rng.random(len(keys)) < 0.05))
    return rowids[twice], keys[twice], distances[twice]


def _random_file(rng: np.random.Generator, reused: float) -> tuple:
    """(rowids, file keys, distances, accept) of a random sign file and filter, with a share
    ``reused`` of the ids holding another text than their records say."""
    records = int(rng.integers(50, 3_000))
    texts = int(rng.integers(5, records))
    ids = 2 * records
    rowids = rng.integers(0, ids, records)  # some twice
    entry_keys = 10**12 + rng.integers(0, texts, ids)  # apart from any rowid
    keys = entry_keys[rowids].copy()
    again = rng.random(ids) < reused
    entry_keys[again] = 10**12 + rng.integers(0, texts, int(again.sum()))
    passes = (rng.random(ids) < rng.choice([0.05, 0.5, 0.95])) & (rng.random(ids) > 0.05)
    distances = rng.integers(0, 385, records).astype(np.uint16)

    def accept(asked: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        held = np.flatnonzero(passes) if asked is None else asked[passes[asked]]
        return held, entry_keys[held]

    return rowids, keys, distances, accept


def test_copies_lists_the_other_places_of_a_text(library) -> None:
    root, _ = library
    with DirectoryStore(root) as store:
        (entry_id, _), *_ = store.fts("kestrel survey note 7", limit=1)
        text = store.entries([entry_id])[entry_id].text
        rows, count = store.copies(entry_id, "TRUE", [], 3)
        assert count == COPIES - 1 and len(rows) == 3
        assert all(r.text == text and r.id != entry_id for r in rows)
        rows, count = store.copies(entry_id, "e.doc_id != ?", ["d5"], 10)
        assert count == len(rows) == COPIES - 2


def test_a_file_without_text_keys_is_read_as_it_is_and_keyed_by_the_next_writer(
    tmp_path: Path,
) -> None:
    """A vector file of schema 2 returns every copy to a reader; a writer's open gives every
    entry its key, and searches collapse the copies."""
    _write(tmp_path)
    con = connect(tmp_path / "vectors.sqlite")
    con.execute(
        "DROP INDEX entries_text_key; DROP INDEX entries_lookup; "
        "ALTER TABLE entries DROP COLUMN text_key"
    )
    con.close()
    with DirectoryStore(tmp_path) as store:
        texts = _texts_of(store, store.fts("kestrel survey basin", limit=60))
        assert len(set(texts)) < len(texts) == 60
        hit = store.fts("kestrel", limit=1)[0][0]
        assert store.copies(hit, "TRUE", [], 5) == ([], 0)
    VectorStore(tmp_path / "vectors.sqlite").close()
    with DirectoryStore(tmp_path) as store:
        texts = _texts_of(store, store.fts("kestrel survey basin", limit=60))
        assert len(set(texts)) == len(texts) == 60
        assert store.copies(hit, "TRUE", [], 5)[1] == COPIES - 1


def test_a_search_reads_on_by_the_texts_found_per_candidate() -> None:
    """Copies make few distinct texts per candidate read: the next read holds what that yield
    says the wanted texts need (a quarter to spare), at least twice and at most ``growth``
    times the candidates read, and ``growth`` times while nothing was found."""
    assert read_next(8_000, found=70, wanted=400, growth=8) == 57_142
    assert read_next(800, found=7, wanted=400, growth=8) == 6_400
    assert read_next(800, found=400, wanted=500, growth=8) == 1_600
    assert read_next(800, found=0, wanted=400, growth=8) == 6_400


def test_a_text_of_a_view_not_searched_is_settled_at_once() -> None:
    """A search of some views learns, of a rejected text, that its view is not searched
    (``outside``): the same candidates, its other copies never looked up."""
    rng = np.random.default_rng(13)
    looked_up = np.zeros(2, int)  # with outside, without
    for _ in range(100):
        rowids, keys, distances, accept, outside, asked = _file_of_views(rng)
        want = int(rng.integers(1, 60))
        settled = sign_search._nearest_accepted(rowids, keys, distances, want, accept, outside)[0]
        with_outside = sum(asked)
        asked.clear()
        every = sign_search._nearest_accepted(rowids, keys, distances, want, accept)[0]
        assert settled.tolist() == every.tolist()
        assert with_outside <= sum(asked)
        looked_up += (with_outside, sum(asked))
    assert looked_up[0] < looked_up[1]  # 17,275 against 21,383


def _file_of_views(rng: np.random.Generator) -> tuple:
    """A random sign file whose texts are each of a view searched or not, a filter passing
    most copies of the searched ones, ``outside``, and the ids ``accept`` was asked about."""
    records = int(rng.integers(50, 3_000))
    texts = int(rng.integers(5, records))
    rowids = rng.permutation(records)
    entry_keys = 10**12 + rng.integers(0, texts, records)
    distances = rng.integers(0, 385, records).astype(np.uint16)
    searched = rng.random(texts) < 0.5
    passes = rng.random(records) < rng.choice([0.3, 0.95])
    asked: list[int] = []

    def accept(ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        ids = np.arange(records) if ids is None else ids
        asked.append(len(ids))
        held = ids[passes[ids] & searched[entry_keys[ids] - 10**12]]
        return held, entry_keys[held]

    def outside(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        held = ids[~searched[entry_keys[ids] - 10**12]]
        return held, entry_keys[held]

    return rowids, entry_keys[rowids], distances, accept, outside, asked
