"""Turn a document's view rows into search entries (in its worker), and its entries into vectors
with one encoder pass (in the dense stage, ``indexer/dense_stage.py``).

What is embedded, and how (the encoder is the slowest part of indexing, ~30 chunks/s here):
- chunk text, titles, captions, table and figure summaries, equations and references are
  encoded directly, each distinct text once; a text longer than the model's window is split into
  window-sized pieces whose vectors are averaged, so nothing is cut off;
- page and section summaries get no vectors (``Col.dense``): the pooled page text and section
  content they sum up, which cost nothing, did better in vector search;
- page text and section content are *pooled*: the mean of the vectors of the chunks on that page
  or in that section (they hold the same words), which costs nothing extra. A page or section
  without chunks (e.g. a page that is all table) is encoded from its first pieces.
BM25 indexes every entry's full text regardless.
"""

from __future__ import annotations

import numpy as np

from docsym.indexer.chunking import TextUnit, chunk_units, count_tokens
from docsym.models.encoder import MAX_TOKENS, Encoder
from docsym.storage.entries import Entry
from docsym.storage.rows import DocumentRows, Table
from docsym.storage.schema import POOLED, PoolMembers, encodable_columns, table

MAX_PIECES_UNPOOLED = 3  # pieces encoded for a page/section with no chunks (BM25 has the rest)


def build_entries(rows: DocumentRows) -> list[Entry]:
    """One entry per non-empty encodable cell, in schema order."""
    entries: list[Entry] = []
    for table_name, column_name in encodable_columns():
        view = table(table_name)
        key = view.primary_key
        page_column = _page_column(view)
        for row in rows.of_table(view):
            text = row.value(column_name)
            if not text or not str(text).strip():
                continue
            entries.append(
                Entry(
                    table_name,
                    column_name,
                    row.value(key),
                    row.value("doc_id"),
                    row.value(page_column) if page_column else None,
                    str(text).strip(),
                )
            )
    return entries


def _page_column(view: Table) -> str | None:
    """Where a row of ``view`` says its page: page_number, else page_start (sections)."""
    names = {c.name for c in view.columns}
    return next((name for name in ("page_number", "page_start") if name in names), None)


def embed_entries(entries: list[Entry], members: PoolMembers, encoder: Encoder) -> np.ndarray:
    """A (len(entries), dim) matrix of L2-normalised vectors; a pooled entry (page text,
    section content) is the mean of its ``members``' chunk vectors."""
    vectors: dict[int, np.ndarray] = {}
    direct = [i for i, e in enumerate(entries) if (e.table_name, e.column_name) not in POOLED]
    for i, vector in zip(
        direct, encode_texts([entries[i].text for i in direct], encoder), strict=True
    ):
        vectors[i] = vector
    chunk_vectors = {
        entries[i].primary_key: vector
        for i, vector in vectors.items()
        if (entries[i].table_name, entries[i].column_name) == ("chunks", "text")
    }
    pools = {
        key: [chunk_vectors[c] for c in chunks if c in chunk_vectors]
        for key, chunks in members.items()
    }
    missing = [i for i, e in enumerate(entries) if i not in vectors and not pools.get(_key(e))]
    fallback = encode_texts(
        [entries[i].text for i in missing], encoder, max_pieces=MAX_PIECES_UNPOOLED
    )
    vectors.update(zip(missing, fallback, strict=True))
    for i, e in enumerate(entries):
        if i not in vectors:
            vectors[i] = _normalise(np.mean(pools[_key(e)], axis=0))
    dim = encoder.dim
    matrix = np.zeros((len(entries), dim), dtype=np.float32)
    for i, vector in vectors.items():
        matrix[i] = vector
    return matrix


def encode_texts(texts: list[str], encoder: Encoder, max_pieces: int | None = None) -> np.ndarray:
    """Encode texts of any length: window-sized pieces, each distinct piece once, averaged."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    pieces_of: list[list[str]] = []
    lengths = count_tokens(texts)
    for text, n_tokens in zip(texts, lengths, strict=True):
        if n_tokens <= MAX_TOKENS:
            pieces_of.append([text])
        else:
            pieces = [c.text for c in chunk_units([TextUnit(text, 0)])]
            pieces_of.append(pieces[:max_pieces] if max_pieces else pieces)
    distinct = list(dict.fromkeys(p for pieces in pieces_of for p in pieces))
    index = {p: n for n, p in enumerate(distinct)}
    encoded = encoder.encode(distinct)
    out = np.zeros((len(texts), encoded.shape[1]), dtype=np.float32)
    for n, pieces in enumerate(pieces_of):
        out[n] = _normalise(encoded[[index[p] for p in pieces]].mean(axis=0))
    return out


def _key(entry: Entry) -> tuple[str, str]:
    return entry.table_name, entry.primary_key


def _normalise(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else vector.astype(np.float32)
