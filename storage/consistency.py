"""Check that the vector store holds exactly one entry per non-empty encodable cell.

Only the entries a reader sees are compared (those of the published generation); entries a
killed index run left past it are counted apart, as ``unpublished``, and are not an error: no
tool shows them, and the next run removes them.
"""

from __future__ import annotations

from pydantic import BaseModel

from storage.schema import encodable_columns, keyword_columns, table
from storage.store import Store
from storage.vectors import vec_table


class Consistency(BaseModel):
    expected: int
    entries: int
    missing_count: int
    orphan_count: int
    missing: list[str]  # sample of "table.column:pk" in the database, not in the vector store
    orphans: list[str]  # sample of entries in the vector store, not in the database
    collections: dict[str, int]  # collection -> entries lacking from it
    unpublished: int = 0  # entries written after the published generation (hidden)

    @property
    def ok(self) -> bool:
        return (
            not self.missing_count and not self.orphan_count and not any(self.collections.values())
        )


def check(store: Store, sample: int = 20) -> Consistency:
    expected: set[tuple[str, str, str]] = set()
    con = store.sql()
    for t, c in encodable_columns():
        key = table(t).primary_key
        non_empty = f"{c} IS NOT NULL AND length(trim(CAST({c} AS VARCHAR))) > 0"
        rows = con.execute(f"SELECT {key} FROM {t} WHERE {non_empty}").fetchall()
        expected.update((t, c, r[0]) for r in rows)
    vectors = store._vectors()  # noqa: SLF001 (the checker is storage's own)
    visible = store.visible()
    found = {
        (t, c, pk): i
        for i, t, c, pk in vectors.execute(
            f"SELECT id, table_name, column_name, primary_key FROM entries e WHERE {visible}"
        )
    }
    (hidden,) = vectors.execute(f"SELECT count(*) FROM entries e WHERE NOT {visible}").fetchone()
    lacking: dict[str, int] = {}
    ids = set(found.values())
    keyword = keyword_columns()
    keyword_ids = {i for (t, c, _), i in found.items() if (t, c) in keyword}
    for name, (kind, _, _) in store.collections().items():
        source = "bm25" if kind == "fts5" else vec_table(name)
        present = {r[0] for r in vectors.execute(f"SELECT rowid FROM {source}")}
        lacking[name] = len((keyword_ids if kind == "fts5" else ids) - present)
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
        unpublished=hidden,
    )
