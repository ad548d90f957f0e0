"""What both backends call the entries of the vector side: an entry (one encodable cell of a
view, shared by every collection) and its text key, the keyword collection's name and BM25's
parameters, and a dense collection's table."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

BM25 = "bm25"
# BM25's parameters, as FTS5's bm25() has them: both stores score keywords with them.
K1, B = 1.2, 0.75


@dataclass(frozen=True)
class Entry:
    table_name: str
    column_name: str
    primary_key: str
    doc_id: str
    page_number: int | None
    text: str

    @cached_property  # read by the entry's row, its sign record and the keyword index
    def text_key(self) -> int:
        return text_key(self.table_name, self.column_name, self.text)


def text_key(table_name: str, column_name: str, text: str) -> int:
    """One number for the entries of a view that hold the same text (spacing aside): searches
    return one entry per key, so a library holding a paper many times over fills its
    candidates with distinct passages, and the copies are listed with the hit that stands for
    them. A signed 64-bit integer, as both SQLite and PostgreSQL store one."""
    digest = hashlib.blake2b(
        "\0".join((table_name, column_name, " ".join(text.split()))).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def views_sql(views: Sequence[tuple[str, str]]) -> tuple[str, list]:
    """SQL over the entries table (alias ``e``) selecting the given (table, column) views."""
    sql = " OR ".join("(e.table_name = ? AND e.column_name = ?)" for _ in views)
    return f"({sql or 'FALSE'})", [v for pair in views for v in pair]


def read_next(read: int, found: int, wanted: int, growth: int) -> int:
    """How many candidates a search that wants ``wanted`` distinct texts should have read after
    the next read, having found ``found`` in the ``read`` so far: as many as that yield says,
    with a quarter to spare, at least twice and at most ``growth`` times ``read``. A library's
    copies make the yield small (~40 copies a text at 1,000 papers), and growing by ``growth``
    alone read up to that many times more than needed."""
    if found <= 0:
        return read * growth
    return int(min(read * growth, max(2 * read, 1.25 * wanted * read / found)))


def vec_table(collection: str) -> str:
    if not re.fullmatch(r"[a-z0-9_]+", collection):
        raise ValueError(f"bad collection name {collection!r}")
    return f"vec_{collection}"
