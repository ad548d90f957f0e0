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
rows come from it instead: tantivy's best rows (its clauses weighted by FTS5's idf), those the
caller's filter keeps, scored here with FTS5's own formula from FTS5's row count and token total,
so the scores are FTS5's. Taking the best 2 x k of tantivy's order as candidates gave the same top
100 as FTS5 for all 81 dev and held-out questions on a 1,000-paper library (with k, 80 of 81).
"""

from __future__ import annotations

import json
import math
from collections import Counter

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
# Keyword-index candidates: WANT x k (at least LEAST) distinct texts that the filter keeps, read
# from the first FIRST of tantivy's order, then more (as many as the yield says, at most GROWTH
# times more) while too few pass. When MOST pass too few rows, the filter is rare enough for
# FTS5; when they pass many rows but too few texts, copies filled them and the texts found do.
WANT, LEAST, FIRST, GROWTH, MOST = 2, 100, 400, 8, 30_000


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
    ) -> list[tuple[int, float]]:
        """[(rowid, score)] of the ``limit`` best rows holding any of ``words`` and matching
        ``where`` (SQL over ``entries e``), best first; score = -bm25, higher is better. With
        ``per_text``, the best row of each text key only (copies score the same).
        ``keywords``: a keyword-index searcher holding the rows ``where`` can see."""
        if not words:
            return []
        key = self._key if per_text else "id"
        if keywords is not None:
            found = self._from_keywords(keywords, words, where, params, limit, key)
            if found is not None:
                return found
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
        key: str,
    ) -> list[tuple[int, float]] | None:
        """``search`` from the keyword index's candidates; None where the filter is too rare."""
        phrases = [phrase for phrase in map(self._query_tokens, words) if phrase]
        self._check_version()
        rows, tokens = self._totals()
        if not phrases or not rows:
            return []
        idf = [_idf(keyword_index.rows_holding(keywords, phrase), rows) for phrase in phrases]
        query = keyword_index.weighted_query(keywords, phrases, idf)
        want, size = max(WANT * limit, LEAST), FIRST
        while True:
            ids = keyword_index.best_ids(keywords, query, size)
            passing, passed = self._passing(ids, where, params, key)
            if len(passing) >= want or len(ids) < size:
                break
            if size >= MOST and passed < want:  # a rare filter: FTS5 reads its rows
                return None
            if size >= MOST:  # copies fill the candidates: the texts found are all there are
                break
            # A rare filter, or many copies of the best texts: read on, sized by the yield.
            size = min(read_next(size, len(passing), want, GROWTH), MOST)
        length = tokens / rows  # FTS5's avgdl
        scored = [
            (entry_id, self._score(phrases, idf, text, length))
            for entry_id, text in self._texts(passing[:want])
        ]
        return sorted(scored, key=lambda hit: (-hit[1], hit[0]))[:limit]

    def _passing(
        self, ids: list[int], where: str, params: list, key: str
    ) -> tuple[list[int], int]:
        """The ``ids`` matching ``where``, in their order, the first of each ``key`` only (a
        text key: the others' texts, and scores, are the same), and how many matched. Texts
        are read afterwards, for the few kept: a library's copies can make these thousands."""
        # CROSS JOIN: each id looked up, rather than entries scanned by the filter's index.
        sql = (
            f"SELECT e.id, e.{key} FROM json_each(?) AS j "
            f"CROSS JOIN entries e {self._lookup} ON e.id = j.value WHERE {where} ORDER BY j.key"
        )
        first: dict[int, int] = {}
        passed = 0
        for entry_id, text_key in self.con.execute(sql, [json.dumps(ids), *params]):
            first.setdefault(text_key, entry_id)
            passed += 1
        return list(first.values()), passed

    def _texts(self, ids: list[int]) -> list[tuple[int, str]]:
        """(id, text) of ``ids``, in their order."""
        sql = (
            "SELECT e.id, e.text FROM json_each(?) AS j CROSS JOIN entries e ON e.id = j.value "
            "ORDER BY j.key"
        )
        return list(self.con.execute(sql, [json.dumps(ids)]))

    def _score(self, phrases: list[list[str]], idf: list[float], text: str, avgdl: float) -> float:
        """FTS5's bm25() of one row, positive: each phrase's idf times its saturated count."""
        tokens = self._row_tokens(text)
        counts = Counter(tokens)
        norm = K1 * (1 - B + B * len(tokens) / avgdl)
        score = 0.0
        for phrase, weight in zip(phrases, idf, strict=True):
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


def _match(words: list[str]) -> str:
    """An FTS5 OR query of the words, each quoted so no query syntax reaches MATCH."""
    return " OR ".join(f'"{word}"' for word in words)


def _occurrences(tokens: list[str], phrase: list[str]) -> int:
    """Where the phrase starts in the tokens (overlapping ones too, as FTS5 counts them)."""
    size = len(phrase)
    return sum(1 for at in range(len(tokens) - size + 1) if tokens[at : at + size] == phrase)


def _idf(holding: int, rows: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), and 1e-6 where that is not positive."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0 else 1e-6
