"""What both backends call the entries of the vector side: an entry (one encodable cell of a
view, shared by every collection), the keyword collection's name and BM25's parameters, and a
dense collection's table."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def vec_table(collection: str) -> str:
    if not re.fullmatch(r"[a-z0-9_]+", collection):
        raise ValueError(f"bad collection name {collection!r}")
    return f"vec_{collection}"
