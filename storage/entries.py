"""What both backends call the entries of the vector side: an entry (one encodable cell of a
view, shared by every collection), the keyword collection's name and a dense collection's table."""

from __future__ import annotations

import re
from dataclasses import dataclass

BM25 = "bm25"


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
