"""Check that a store holds exactly one search entry per non-empty encodable cell.

Only the entries a reader sees are compared (those of the published generation); entries a
killed index run left past it are counted apart, as ``unpublished``, and are not an error: no
tool shows them, and the next run removes them. Documents whose vectors are still to be written
(``indexer/dense_stage.py``) are counted apart too, as ``awaiting_vectors``: their entries lack
from the dense collections by design until a run finishes them. A dense collection's sign file
(``storage/directory/sign_file.py``) must hold every vector of the collection: ``signs`` counts
those it lacks, which dense search would never find. A directory's keyword index
(``storage/directory/keyword_index.py``) must hold the keyword collection's rows when it is
stamped with the published generation; one that is absent or stale only slows keyword search.
"""

from __future__ import annotations

from pydantic import BaseModel

from docsym.storage.schema import dense_columns, encodable_columns, keyword_columns, table
from docsym.storage.store import Store


class Consistency(BaseModel):
    expected: int
    entries: int
    missing_count: int
    orphan_count: int
    missing: list[str]  # sample of "table.column:pk" in the database, not among the entries
    orphans: list[str]  # sample of entries not in the database
    collections: dict[str, int]  # collection -> entries lacking from it
    unpublished: int = 0  # entries written after the published generation (hidden)
    awaiting_vectors: int = 0  # documents searchable by keyword only, their vectors to come
    signs: dict[str, int] = {}  # collection -> vectors lacking from its sign file
    keyword_index: str | None = None  # Store.keyword_index: 'current', 'stale', ...

    @property
    def ok(self) -> bool:
        return (
            not self.missing_count
            and not self.orphan_count
            and not any(self.collections.values())
            and not any(self.signs.values())
            and not (self.keyword_index or "").startswith("differs")
        )


def check(store: Store, sample: int = 20) -> Consistency:
    expected: set[tuple[str, str, str]] = set()
    con = store.sql()
    for t, c in encodable_columns():
        key = table(t).primary_key
        non_empty = f"{c} IS NOT NULL AND length(trim(CAST({c} AS VARCHAR))) > 0"
        rows = con.execute(f"SELECT {key} FROM {t} WHERE {non_empty}").fetchall()
        expected.update((t, c, r[0]) for r in rows)
    found = {key: i for i, key in store.entry_keys(store.visible(), []).items()}
    lacking: dict[str, int] = {}
    keyword = keyword_columns()
    keyword_ids = {i for (t, c, _), i in found.items() if (t, c) in keyword}
    dense = dense_columns()
    dense_ids = {i for (t, c, _), i in found.items() if (t, c) in dense}
    awaiting = store.awaiting_vectors()
    if awaiting:
        rows = store.entries(list(dense_ids))
        dense_ids = {i for i in dense_ids if rows[i].doc_id not in awaiting}
    for name in store.collections():
        wanted = dense_ids if not store.is_keyword(name) else keyword_ids
        lacking[name] = len(wanted - store.collection_ids(name))
    missing = sorted(f"{t}.{c}:{pk}" for t, c, pk in expected - found.keys())
    orphans = sorted(f"{t}.{c}:{pk}" for t, c, pk in found.keys() - expected)
    return Consistency(
        expected=len(expected),
        entries=len(found),
        missing_count=len(missing),
        orphan_count=len(orphans),
        missing=missing[:sample],
        orphans=orphans[:sample],
        collections=lacking,
        unpublished=store.hidden_entries(),
        awaiting_vectors=len(awaiting),
        signs=store.sign_gaps(),
        keyword_index=store.keyword_index(),
    )
