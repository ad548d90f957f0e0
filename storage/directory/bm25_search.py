"""BM25's best rows from the FTS5 collection without scoring every row a common word matches.

FTS5 computes ``bm25()`` for every row its MATCH returns, and a question's OR query matches
nearly every row through its common words ("the", "what", "model"): on the corpus index it
scored 12,400 rows to keep 100, most of a search's time. BM25 is a sum of one part per query
word, and the part of a word that n of the N rows hold is below (k1 + 1) * idf(n) in any row. So a
row holding none of the rarer words scores below ``bound``, the sum of those limits over the
common words. The search first scores only the rows that hold a rarer word (with the same MATCH
expression, so with the same numbers); when the k-th of them beats the bound, no other row can
enter the top k. Otherwise the rows holding only common words are scored as well and the two
lists merged. Either way the answer is the full query's, ties broken by rowid.

Given a searcher of the directory store's keyword index (``keyword_index.py``), the
rows come from it instead: tantivy's best texts (its clauses weighted by FTS5's idf), each
stood for by the first of its rows that the caller's filter keeps, scored here with FTS5's own
formula. The index holds each distinct text once, and its statistics count texts: a word's n
and the N of its idf are the distinct texts holding it and in all, so the scores are FTS5's
wherever no text repeats, and a library's copies of a text do not make its words look common.
Taking the best 2 x k of tantivy's order as candidates gave the same top 100 as FTS5 for all 81
dev and held-out questions on a 1,000-paper library (with k, 80 of 81). A filter that passes
only a few rows (a paper or two) has them scored whole instead, with the same statistics.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from docsym.storage.directory import keyword_index
from docsym.storage.directory.vectors import lookup_hint, text_key_column
from docsym.storage.entries import BM25, K1, B, read_next

# The part of one word in one row is below (K1 + 1) * idf.
# Words held by more than this share of the rows are "common": on the corpus index's questions
# the rarer words' rows then always held the whole top 100 (0.1 missed it for 7 of 81).
RARE_SHARE = 0.2
_ROW_COUNT = "docsym_bm25_rows"  # an FTS5 function: the rows bm25() counts as N
_TOKEN_COUNT = "docsym_bm25_tokens"  # an FTS5 function: the tokens of all rows (avgdl * N)
# Keyword-index candidates: WANT x k (at least LEAST) texts that the filter keeps, read from the
# first FIRST of tantivy's order, then more (as many as the yield says, at most GROWTH times
# more) while too few pass. When the first MOST texts pass too few, FTS5 reads the filter's rows.
# A filter passing at most FEW rows has them scored whole (2,000 rows: ~20 ms).
WANT, LEAST, FIRST, GROWTH, MOST, FEW = 2, 100, 400, 8, 30_000, 2_000


class Bm25Search:
    """BM25 searches on one read-only connection to a vector file (not thread-safe)."""

    def __init__(self, con: apsw.Connection) -> None:
        self.con = con
        con.register_fts5_function(_ROW_COUNT, lambda api, *_: api.row_count)
        con.register_fts5_function(_TOKEN_COUNT, lambda api, *_: api.column_total_size(-1))
        self._row_tokens = keyword_index.tokenizer(con)
        self._query_tokens = keyword_index.tokenizer(con, query=True)
        self._version: int | None = None
        self._totals_read: tuple[int, int] | None = None  # (N, tokens), for this version
        self._holding: dict[str, int] = {}  # word -> rows that hold it, for this version
        columns = {r[1] for r in con.execute("PRAGMA table_info(entries)")}
        self._key = text_key_column(columns)
        self._lookup = lookup_hint(con)

    def search(
        self,
        words: list[str],
        where: str,
        params: list,
        limit: int,
        keywords: keyword_index.Searcher | None = None,
        per_text: bool = True,
        views: Sequence[tuple[str, str]] | None = None,
    ) -> list[tuple[int, float]]:
        """[(rowid, score)] of the ``limit`` best rows holding any of ``words`` and matching
        ``where`` (SQL over ``entries e``), best first; score = -bm25, higher is better. With
        ``per_text``, the best row of each text key only (copies score the same).
        ``keywords``: a keyword-index searcher holding the rows ``where`` can see; ``views``:
        the views ``where`` admits, if known (the index then reads only their texts)."""
        if not words:
            return []
        if keywords is not None:
            found = self._from_keywords(keywords, words, where, params, limit, per_text, views)
            if found is not None:
                return found
        key = self._key if per_text else "id"
        match = _match(words)
        rare, bound = self._split(words)
        if not rare or len(rare) == len(words):
            return self._query(match, where, params, limit, key)
        subquery = f"SELECT rowid FROM {BM25} WHERE {BM25} MATCH ?"
        # '+' keeps SQLite from handing the rowid test to FTS5, which would rerun the whole
        # MATCH once per rowid; as a plain filter it is checked before bm25() is computed.
        found = self._query(
            match,
            f"+{BM25}.rowid IN ({subquery}) AND ({where})",
            [_match(rare), *params],
            limit,
            key,
        )
        if len(found) == limit and found[-1][1] > bound * (1 + 1e-9):
            return found
        rest = self._query(
            match,
            f"+{BM25}.rowid NOT IN ({subquery}) AND ({where})",
            [_match(rare), *params],
            limit,
            key,
        )
        return sorted(found + rest, key=lambda hit: (-hit[1], hit[0]))[:limit]

    def _from_keywords(
        self,
        keywords: keyword_index.Searcher,
        words: list[str],
        where: str,
        params: list,
        limit: int,
        per_text: bool,
        views: Sequence[tuple[str, str]] | None,
    ) -> list[tuple[int, float]] | None:
        """``search`` from the keyword index's candidates; None where the filter is too rare
        among the best texts (FTS5 answers)."""
        phrases = [phrase for phrase in map(self._query_tokens, words) if phrase]
        self._check_version()
        rows, tokens = self._totals()
        texts = keywords.num_docs
        if not phrases or not rows or not texts:
            return []
        held = [keyword_index.texts_holding(keywords, phrase) for phrase in phrases]
        scoring = _Scoring(phrases, [_idf(n, texts) for n in held], tokens / rows)
        few = self._few(where, params, per_text)
        if few is not None:  # a paper or two: their rows scored whole
            return self._best(few, scoring, limit)
        query = keyword_index.weighted_query(keywords, phrases, scoring.idf, views)
        want, size = max(WANT * limit, LEAST), FIRST
        while True:
            keys = keyword_index.best_keys(keywords, query, size)
            passing, passed = self._passing(keys, where, params, per_text, want)
            if len(passing) >= want or len(keys) < size:
                break
            if size >= MOST:  # a filter rare among the best texts: FTS5 reads its rows
                return None
            size = min(read_next(size, passed, want, GROWTH), MOST)
        return self._best(passing[:want], scoring, limit)

    def _few(self, where: str, params: list, per_text: bool) -> list[int] | None:
        """The keyword rows ``where`` keeps, the first of each text key with ``per_text``, if
        it keeps at most FEW; None otherwise (read no further than that)."""
        sql = (
            f"SELECT e.id, e.{self._key} FROM entries e JOIN {BM25}_docsize AS d ON d.id = e.id "
            f"WHERE {where} LIMIT {FEW + 1}"
        )
        found = self.con.execute(sql, params).fetchall()
        if len(found) > FEW:
            return None
        if not per_text:
            return [entry_id for entry_id, _ in found]
        first: dict[int, int] = {}
        for entry_id, key in sorted(found):
            first.setdefault(key, entry_id)
        return list(first.values())

    def _passing(
        self, keys: list[int], where: str, params: list, per_text: bool, most: int
    ) -> tuple[list[int], int]:
        """The rows standing for ``keys`` (in their order) that ``where`` keeps: the first of
        each key with ``per_text``, else all of them (at most ``most``); and how many keys had
        one. Each key's rows are read through its index, in id order, until one passes."""
        found = json.dumps(keys)
        if per_text:
            first = (
                f"SELECT e.id FROM entries e INDEXED BY entries_text_key "
                f"WHERE e.text_key = j.value AND ({where}) ORDER BY e.id LIMIT 1"
            )
            sql = f"SELECT ({first}) FROM json_each(?) AS j ORDER BY j.key"
            rows = self.con.execute(sql, [*params, found])  # the subquery's marks come first
            ids = [entry_id for (entry_id,) in rows if entry_id is not None]
            return ids, len(ids)
        sql = (
            "SELECT e.id, j.key FROM json_each(?) AS j CROSS JOIN entries e INDEXED BY "
            f"entries_text_key ON e.text_key = j.value WHERE {where} ORDER BY j.key, e.id "
            f"LIMIT {int(most)}"
        )
        rows = self.con.execute(sql, [found, *params]).fetchall()
        return [entry_id for entry_id, _ in rows], len({at for _, at in rows})

    def _best(self, ids: list[int], scoring: _Scoring, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best of ``ids`` by their texts' scores (those holding none left out),
        ties by id."""
        scored = [(i, self._score(scoring, text)) for i, text in self._texts(ids)]
        holding = [hit for hit in scored if hit[1] > 0]
        return sorted(holding, key=lambda hit: (-hit[1], hit[0]))[:limit]

    def _texts(self, ids: list[int]) -> list[tuple[int, str]]:
        """(id, text) of ``ids``, in their order."""
        sql = (
            "SELECT e.id, e.text FROM json_each(?) AS j CROSS JOIN entries e ON e.id = j.value "
            "ORDER BY j.key"
        )
        return list(self.con.execute(sql, [json.dumps(ids)]))

    def _score(self, scoring: _Scoring, text: str) -> float:
        """FTS5's bm25() of one row, positive: each phrase's idf times its saturated count."""
        tokens = self._row_tokens(text)
        counts = Counter(tokens)
        norm = K1 * (1 - B + B * len(tokens) / scoring.avgdl)
        score = 0.0
        for phrase, weight in zip(scoring.phrases, scoring.idf, strict=True):
            found = counts[phrase[0]] if len(phrase) == 1 else _occurrences(tokens, phrase)
            if found:
                score += weight * found * (K1 + 1) / (found + norm)
        return score

    def _query(
        self, match: str, where: str, params: list, limit: int, key: str
    ) -> list[tuple[int, float]]:
        """The ``limit`` best rows, the best of each ``key`` only."""
        matched = (
            f"SELECT {BM25}.rowid AS id, bm25({BM25}) AS rank, e.{key} AS key FROM {BM25} "
            f"JOIN entries e ON e.id = {BM25}.rowid WHERE {BM25} MATCH ? AND {where}"
        )
        sql = (
            "SELECT id, -rank FROM (SELECT id, rank, row_number() OVER "
            f"(PARTITION BY key ORDER BY rank, id) AS nth FROM ({matched})) "
            "WHERE nth = 1 ORDER BY rank, id LIMIT ?"
        )
        return [(int(i), float(s)) for i, s in self.con.execute(sql, [match, *params, limit])]

    def _split(self, words: list[str]) -> tuple[list[str], float]:
        """The rarer words, and the most the common words can add to a row's score."""
        self._check_version()
        held = {word: self._rows_holding(word) for word in words}
        rows, _ = self._totals()
        if not rows:
            return [], 0.0
        rare = [w for w in words if held[w] <= RARE_SHARE * rows]
        bound = sum((K1 + 1) * _idf(held[w], rows) for w in words if w not in rare)
        return rare, bound

    def holds(self, word: str) -> bool:
        """Whether any row holds the word (its phrase, as ``search`` matches it)."""
        self._check_version()
        if word in self._holding:
            return self._holding[word] > 0
        sql = f"SELECT 1 FROM {BM25} WHERE {BM25} MATCH ? LIMIT 1"
        return self.con.execute(sql, [_match([word])]).fetchone() is not None

    def _check_version(self) -> None:
        """Forget what was counted once the file changed."""
        version = self.con.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._version, self._totals_read, self._holding = version, None, {}

    def _rows_holding(self, word: str) -> int:
        """How many rows the word's phrase matches: the n of its idf, as bm25() counts it."""
        if word not in self._holding:
            sql = f"SELECT count(*) FROM {BM25} WHERE {BM25} MATCH ?"
            self._holding[word] = self.con.execute(sql, [_match([word])]).fetchone()[0]
        return self._holding[word]

    def _totals(self) -> tuple[int, int]:
        """N and the tokens of all rows, as bm25() counts them (FTS5 keeps both: a contentless
        table has no rows to count); (0, 0) for an empty collection."""
        if self._totals_read is None:
            sql = f"SELECT {_ROW_COUNT}({BM25}), {_TOKEN_COUNT}({BM25}) FROM {BM25} LIMIT 1"
            self._totals_read = self.con.execute(sql).fetchone() or (0, 0)
        return self._totals_read


@dataclass(frozen=True)
class _Scoring:
    """What BM25 scores a row with: the query's phrases (as tokens), each one's idf, and the
    average row length."""

    phrases: list[list[str]]
    idf: list[float]
    avgdl: float


def _match(words: list[str]) -> str:
    """An FTS5 OR query of the words, each quoted so no query syntax reaches MATCH."""
    return " OR ".join(f'"{word}"' for word in words)


def _occurrences(tokens: list[str], phrase: list[str]) -> int:
    """Where the phrase starts in the tokens (overlapping ones too, as FTS5 counts them)."""
    size = len(phrase)
    return sum(1 for at in range(len(tokens) - size + 1) if tokens[at : at + size] == phrase)


def _idf(holding: int, rows: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), and 1e-6 where that is not positive. The
    keyword index's n counts deleted texts until tantivy merges them, its N does not: n is at
    most N."""
    holding = min(holding, rows)
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0 else 1e-6
