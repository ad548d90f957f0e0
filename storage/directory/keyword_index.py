"""The keyword rows a second time, in a tantivy index beside ``vectors.sqlite``, for speed.

FTS5 computes ``bm25()`` for every row its MATCH returns: a question's rarer words alone matched
100-150k of the 345k keyword rows of a 1,000-paper library, 440 ms a search (bench/bm25_engines.py),
~4 s at 10,000 papers. tantivy's block-max WAND finds the best rows without scoring them all
(~8 ms at 345k). The FTS5 collection stays the store of record; this index says which texts to
score, and ``bm25_search.py`` scores them with FTS5's formula.

It holds each distinct keyword text once: one document per text key (``entries.text_key``: the
view and the text), the text as FTS5's own tokenizer reads it, tokens joined by spaces, so a word
is the same word on both sides, and its view ("chunks.text"), so a search of some views reads
only their texts (a filter's other conditions are SQL's, copy by copy). A library holding a
text in many papers (a licence, a boilerplate sentence, a paper filed twice) then costs one
document, and a search's best documents are distinct texts: with a document per row, 400 copies
of each text made tantivy return 80,000 rows (130 ms) and SQL look each up (120 ms) to find 200
texts at 10,000 papers.
Its statistics (a word's rows, the rows in all) count distinct texts too, so copies do not make
a word look common. The writer hands it, as each transaction commits, the keys whose first copy
the transaction wrote and those whose last copy it deleted, commits it at each publish, then
writes the published generation to ``STAMP``: a reader uses the index only while that stamp is
the generation it reads, and falls back to FTS5 otherwise (a moment after each publish; an
index written before this one, or of an older layout; a run killed between the two commits,
after which the next run rebuilds it whole).

A reader sees texts of generations after its own (a writer adds between publishes): the caller
looks each key's entries up among those it sees, as dense search does.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import apsw
import tantivy

log = logging.getLogger(__name__)

# The FTS5 collection's tokenizer (vectors.py declares ``tokenize='porter unicode61'``).
TOKENIZER = ("porter", ["unicode61"])
STAMP = "docsym-generation"  # a file in the index folder: LAYOUT and the generation it holds
LAYOUT = "text-keys"  # one document per text key (a new schema needs a new name: readers trust it)
_HEAP = 32_000_000  # tantivy's writer memory (bytes) before it writes a segment; 15 MB minimum

Tokens = Callable[[str], list[str]]
Searcher = tantivy.Searcher
Text = tuple[int, str, str, str]  # (text key, table, column, text)


def view(table: str, column: str) -> str:
    """A view as the index names it."""
    return f"{table}.{column}"


def folder(vectors: Path) -> Path:
    return vectors.with_name(f"{vectors.stem}.keywords")


def tokenizer(con: apsw.Connection, *, query: bool = False) -> Tokens:
    """Text -> tokens, as the FTS5 collection on ``con`` reads a row (or a query's phrase)."""
    name, args = TOKENIZER
    tokenize = con.fts5_tokenizer(name, args)
    reason = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT

    def tokens(text: str) -> list[str]:
        return tokenize(text.encode(), reason, None, include_offsets=False, include_colocated=False)

    return tokens


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # Positions: a word FTS5 reads as several tokens ("v1.1") is a phrase on both sides.
    builder.add_text_field("text", stored=False, tokenizer_name="whitespace")
    builder.add_text_field("view", stored=False, tokenizer_name="raw", index_option="basic")
    # A signed field (text keys are signed 64-bit): tantivy-py turns a Python int into a
    # signed term, so a delete by the key of an unsigned field would match nothing.
    builder.add_integer_field("key", stored=False, indexed=True, fast=True)
    return builder.build()


_SCHEMA = _schema()


def stamp(path: Path) -> int | None:
    """The generation the index holds, or None (none written, or of another layout)."""
    try:
        layout, generation = (path / STAMP).read_text().split()
        return int(generation) if layout == LAYOUT else None
    except (OSError, ValueError):
        return None


class KeywordWriter:
    """The writer's side: texts in as transactions commit, one tantivy commit per publish."""

    def __init__(self, path: Path, tokens: Tokens) -> None:
        self.path = path
        self.tokens = tokens
        path.mkdir(exist_ok=True)
        self._index = _open_or_replace(path)
        self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)

    def apply(self, added: Iterable[Text], removed: Iterable[int]) -> None:
        """One committed transaction's change: the texts it brought in, the keys of those it
        took out; readers see them after ``commit``."""
        for key in removed:
            self._writer.delete_documents_by_term("key", key)
        for key, table, column, text in added:
            document = tantivy.Document()
            document.add_integer("key", key)
            document.add_text("view", view(table, column))
            document.add_text("text", " ".join(self.tokens(text)))
            self._writer.add_document(document)

    def commit(self, generation: int) -> None:
        """Everything applied is in: the index holds the rows of ``generation``."""
        self._writer.commit()
        _write_stamp(self.path, generation)

    def rebuild(self, rows: Iterable[Text], generation: int) -> None:
        """Every text again, from the store of record, each key once."""
        (self.path / STAMP).unlink(missing_ok=True)
        self._writer.rollback()  # rows applied since the last commit are among ``rows``
        self._writer.delete_all_documents()
        self.apply(rows, ())
        self.commit(generation)

    def close(self) -> None:
        self._writer.wait_merging_threads()  # the writer is gone after this


def _open_or_replace(path: Path) -> tantivy.Index:
    """The index in ``path``; one of an older layout (a document per row, keyed by entry id)
    is removed first: the run's first publish rebuilds it, its stamp being of no layout."""
    try:
        return tantivy.Index(_SCHEMA, path=str(path), reuse=True)
    except ValueError as exc:
        if "schema does not match" not in str(exc):
            raise
    log.info("keyword index of an older layout in %s: rebuilt", path)
    discard(path)
    path.mkdir()
    return tantivy.Index(_SCHEMA, path=str(path), reuse=True)


def _write_stamp(path: Path, generation: int) -> None:
    temporary = path / f"{STAMP}.tmp"
    temporary.write_text(f"{LAYOUT} {generation}")
    os.replace(temporary, path / STAMP)


def discard(path: Path) -> None:
    """A keyword index the writer could not keep: readers use FTS5 until the next run."""
    (path / STAMP).unlink(missing_ok=True)
    shutil.rmtree(path, ignore_errors=True)


class KeywordIndex:
    """The reader's side: one open index, reloaded when its stamp changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._index: tantivy.Index | None = None
        self._loaded: int | None = None

    def searcher(self, generation: int) -> tantivy.Searcher | None:
        """A searcher holding the rows of ``generation``, or None (FTS5 answers)."""
        if stamp(self.path) != generation:
            return None
        try:
            if self._index is None:
                self._index = tantivy.Index.open(str(self.path))
            if self._loaded != generation:
                self._index.reload()
                self._loaded = generation
            return self._index.searcher()
        except (OSError, ValueError) as exc:  # a writer replaced it under us: FTS5 answers
            log.debug("keyword index unreadable: %s", exc)
            self._index, self._loaded = None, None
            return None


def phrase_query(phrase: list[str]) -> tantivy.Query:
    if len(phrase) == 1:
        return tantivy.Query.term_query(_SCHEMA, "text", phrase[0])
    return tantivy.Query.phrase_query(_SCHEMA, "text", phrase)


def texts_holding(searcher: tantivy.Searcher, phrase: list[str]) -> int:
    """The n of the phrase's idf: the distinct texts holding it. One token: tantivy's document
    frequency, which counts a deleted text until its segment is merged (as tantivy's own scores
    do); a phrase: counted."""
    if len(phrase) == 1:
        return searcher.doc_freq("text", phrase[0])
    return searcher.search(phrase_query(phrase), 1, count=True).count


def weighted_query(
    searcher: tantivy.Searcher,
    phrases: list[list[str]],
    weights: list[float],
    views: Collection[tuple[str, str]] | None = None,
) -> tantivy.Query:
    """The phrases as one query, each clause boosted from tantivy's idf to ``weights`` (FTS5's
    idf), so tantivy's order follows FTS5's: tantivy's idf, log(1 + (N - n + 0.5) / (n + 0.5)),
    weighs common words far more, and it gives a phrase the sum of its tokens' idf. With
    ``views``, only texts of those views match (the condition adds nothing to the score)."""
    clauses = []
    for phrase, weight in zip(phrases, weights, strict=True):
        own = sum(_tantivy_idf(searcher, token) for token in phrase)
        boost = weight / own if own > 0 else 1.0
        clauses.append(
            (tantivy.Occur.Should, tantivy.Query.boost_query(phrase_query(phrase), boost))
        )
    words = tantivy.Query.boolean_query(clauses)
    if views is None:
        return words
    names = [view(table, column) for table, column in views]
    within = tantivy.Query.const_score_query(
        tantivy.Query.term_set_query(_SCHEMA, "view", names), 0.0
    )
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, words), (tantivy.Occur.Must, within)])


def best_keys(searcher: tantivy.Searcher, query: tantivy.Query, limit: int) -> list[int]:
    """The text keys of tantivy's ``limit`` best texts for ``query``, best first."""
    found = searcher.search(query, limit, count=False)
    return searcher.fast_field_values("key", [address for _, address in found.hits])


def _tantivy_idf(searcher: tantivy.Searcher, token: str) -> float:
    held = searcher.doc_freq("text", token)
    return math.log(1 + (searcher.num_docs - held + 0.5) / (held + 0.5))
