"""How hybrid_search turns BM25 and dense candidates into one ranking of rows.

Summing reciprocal ranks of BM25 and MiniLM does worse than BM25 alone on this kind of corpus (the
dense model is weak on factoid questions), so fusion re-ranks the union of candidates with what
the index knows about each one:

- ``sparse``: its BM25 score, relative to the best candidate;
- ``dense``: its cosine similarity to the question;
- ``window``: how much of the question's discriminative vocabulary appears close together in it
  (the best two-sentence window), with term weights computed over the candidate set, so a word
  that every candidate shares (the company's name in its own 10-K) counts for little;
- ``phrase``: the share of the question's adjacent word pairs ("gross bookings") found adjacent;
- ``document``: how strongly the candidates of its document as a whole match, so one stray hit
  in an unrelated document does not outrank a document that matches throughout;
- ``named``: how much of the question names the candidate's document, by its title, its
  authors or its file name ("in the Multi-LexSum paper", "Bolejko and Andersson"), relative to
  the best-named document: questions over a corpus of similar papers often say which one they
  mean, and the passage vocabulary alone cannot tell two papers about the same thing apart;
- ``number``: for questions whose answer is a quantity ("how many", "what percentage", "what
  F1", "at what redshift"), whether a number the question does not contain sits next to the
  tightest cluster of the question's words: "field deployment study (N=6)" answers, a passage
  that only discusses the deployment does not. Labels ("Study 2", "Table 3", "[12]") are not
  quantities and do not count.

The weights are few and fixed (see WEIGHTS). The window feature carries the most weight: on the
dev set, BM25 finds the right document but often the wrong passage of it, and what separates the
passage that answers is the question's rarer words appearing together. ``docsym eval`` reports
what the weights achieve (bench/qa/README.md has the figures on the dev set and on the 69
held-out questions of bench/qa/docsym_qa.jsonl); page-level score sharing, section-heading
matches and sentence-level MiniLM re-scoring were measured too and made the ranking worse.
The question comes read once (``tools.question``), the same reading citation uses. Last, the
ranking is spread over pages: each page's best hit comes before any page's second hit:
ten hits show ten places to look, not one page four times.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from functools import lru_cache

from docsym.language.numbers import is_number, quantity_words
from docsym.language.sentences import split_sentences
from docsym.language.terms import STOPWORDS, tokens
from docsym.storage.store import EntryRow
from docsym.tools.question import Question, term_weights

WEIGHTS = {
    "sparse": 0.25,
    "dense": 0.15,
    "window": 0.5,
    "phrase": 0.1,
    "document": 0.1,
    "named": 0.1,
    "number": 0.1,
}
# The number feature looks for a number within NUMBER_MARGIN tokens of the densest SPAN_TOKENS
# stretch of query terms; on the dev set spans of 10-20 and margins of 2-10 rank the same.
SPAN_TOKENS = 20
NUMBER_MARGIN = 5


def fuse(
    question: Question,
    sparse: list[tuple[int, float]],
    dense: list[tuple[int, float]],
    entries: dict[int, EntryRow],
    similarity: dict[int, float] | None = None,
    limit: int | None = None,
) -> list[tuple[int, float, list[str]]]:
    """[(entry id, score, collections that found it)] best first, one entry per row; the first
    ``limit`` of them only, when given (``Fusion``, ranked once)."""
    return Fusion(question, sparse, dense, entries, similarity).ranked(limit)


class Fusion:
    """The candidates' features, computed once; ``ranked`` orders them for any length, so a
    search that asks for more hits (its first ones repeated each other) reads no text again.

    ``similarity`` gives the cosine of candidates the dense search did not return, so every
    candidate's ``dense`` feature is its real similarity."""

    def __init__(
        self,
        question: Question,
        sparse: list[tuple[int, float]],
        dense: list[tuple[int, float]],
        entries: dict[int, EntryRow],
        similarity: dict[int, float] | None = None,
    ) -> None:
        self.question = question
        self.entries = entries
        self.sources: dict[int, list[str]] = defaultdict(list)
        features: dict[int, dict[str, float]] = defaultdict(lambda: dict.fromkeys(WEIGHTS, 0.0))
        top_sparse = max((s for _, s in sparse), default=1.0) or 1.0
        for entry_id, score in sparse:
            features[entry_id]["sparse"] = max(score, 0.0) / top_sparse
            self.sources[entry_id].append("bm25")
        for entry_id, cosine in dense:
            features[entry_id]["dense"] = max(cosine, 0.0)
            self.sources[entry_id].append("dense")
        for entry_id, cosine in (similarity or {}).items():
            features[entry_id]["dense"] = max(cosine, 0.0)
        analysed = {i: analyse(entries[i].text) for i in features}
        self.weights = term_weights(question.stems, [a.vocabulary for a in analysed.values()])
        pairs = question.pairs
        for entry_id, f in features.items():
            f["window"] = window_coverage(analysed[entry_id], self.weights)
            f["phrase"] = len(pairs & analysed[entry_id].pairs) / len(pairs) if pairs else 0.0
        _document_scores(features, entries)
        _named_scores(features, entries, self.weights, question)
        # "number" is the last feature, so adding it later leaves every sum as it was.
        self.scores = {i: sum(WEIGHTS[k] * v for k, v in f.items()) for i, f in features.items()}
        self._numbered: dict[int, bool] = {}  # entry id -> a number near its terms, once read

    def ranked(self, limit: int | None = None) -> list[tuple[int, float, list[str]]]:
        """The first ``limit`` (all when None) as ``fuse`` gives them."""
        scores = dict(self.scores)
        if self.question.opens_with_quantity:
            _add_numbers(scores, self.entries, self._has_number, limit)
        ranked = _spread_pages(_ranked_rows(scores, self.entries), self.entries)[:limit]
        return [(i, scores[i], self.sources[i]) for i in ranked]

    def _has_number(self, entry_id: int) -> bool:
        found = self._numbered.get(entry_id)
        if found is None:
            words = quantity_words(self.entries[entry_id].text)
            found = number_near_terms(words, self.weights, self.question.numbers)
            self._numbered[entry_id] = found
        return found


def _ranked_rows(scores: dict[int, float], entries: dict[int, EntryRow]) -> list[int]:
    """The best-scoring entry of each row, best first (ties by entry id)."""
    best_per_row: dict[tuple[str, str], int] = {}
    for entry_id, score in scores.items():
        key = (entries[entry_id].table_name, entries[entry_id].primary_key)
        if key not in best_per_row or score > scores[best_per_row[key]]:
            best_per_row[key] = entry_id
    return sorted(best_per_row.values(), key=lambda i: (-scores[i], i))


def _add_numbers(
    scores: dict[int, float],
    entries: dict[int, EntryRow],
    has_number: Callable[[int], bool],
    limit: int | None,
) -> None:
    """Add the number feature to the scores, best candidates first, until the first ``limit``
    places are settled: every candidate left unread would score at most its present score plus
    the feature's weight, and once ``limit`` pages' best hits score more than that, no such
    candidate can enter the first ``limit`` places (reading a candidate's words for numbers is
    the costliest feature; most candidates of a question are far from its top ten)."""
    bonus = WEIGHTS["number"]
    order = sorted(scores, key=lambda i: (-scores[i], i))
    step = limit or len(order)
    for start in range(0, len(order), step):
        for i in order[start : start + step]:
            if has_number(i):
                scores[i] += bonus
        done = start + step
        if done >= len(order):
            return
        ceiling = scores[order[done]] + bonus
        settled = {i: scores[i] for i in order[:done] if scores[i] > ceiling}
        if len(_spread_pages(_ranked_rows(settled, entries), entries, firsts_only=True)) >= step:
            return


def _spread_pages(
    ranked: list[int], entries: dict[int, EntryRow], firsts_only: bool = False
) -> list[int]:
    """Each page's best hit first, then the pages' further hits, each group in score order.

    A page and its chunks are near-duplicates to a reader: a second hit from a page already shown
    tells the agent little, while the next page may be the one that answers (on the dev set this
    lifted recall@10 from 0.92 to 1.0 and recall@5 from 0.83 to 0.92).
    """
    seen: set[tuple[str, int | None]] = set()
    first, later = [], []
    for i in ranked:
        page = (entries[i].doc_id, entries[i].page_number)
        (later if page in seen and page[1] is not None else first).append(i)
        seen.add(page)
    return first if firsts_only else first + later


class Analysed:
    """A candidate text as the features need it: stemmed words per sentence, computed once."""

    __slots__ = ("sentences", "vocabulary", "pairs", "words")

    def __init__(self, text: str) -> None:
        # Sentences split at white space only, so their words in order are the text's words.
        per_sentence = [tokens(s) for s in split_sentences(text)]
        self.sentences = [frozenset(words) for words in per_sentence] or [frozenset()]
        self.vocabulary = frozenset().union(*self.sentences)
        self.words = [word for words in per_sentence for word in words]
        words = [w for w in self.words if w not in STOPWORDS]
        self.pairs = frozenset(zip(words, words[1:], strict=False))


@lru_cache(maxsize=2048)
def analyse(text: str) -> Analysed:
    """Cached: the same passages come back as candidates for many questions. An analysed
    passage takes ~17 KB, so a few questions' candidates are kept, not a library's."""
    return Analysed(text)


def prepare(entries: Iterable[EntryRow]) -> None:
    """Analyse candidates ahead of ``fuse`` (which then finds them cached), e.g. the dense
    search's while the keyword search still runs in another thread."""
    for entry in entries:
        analyse(entry.text)


def window_coverage(text: Analysed, weights: dict[str, float]) -> float:
    """Share of the query's term weight found within the best window of two sentences."""
    total = sum(weights.values())
    if not total:
        return 0.0
    # The query terms each sentence holds (a few), rather than unions of whole sentences.
    terms = frozenset(weights)
    held = [sentence & terms for sentence in text.sentences]
    windows = set()  # distinct windows only: most hold the same few terms, or none
    for i, found in enumerate(held):
        following = held[i + 1] if i + 1 < len(held) else None
        window = found | following if following else found
        if window:
            windows.add(window)
    # Sums in the weights' fixed order, so equal windows always score alike.
    scores = (sum(w for t, w in weights.items() if t in window) for window in windows)
    return max(scores, default=0.0) / total


def number_near_terms(words: list[str], weights: dict[str, float], stated: frozenset[str]) -> float:
    """1.0 if a number the question does not state lies beside the densest span of its terms,
    else 0.0."""
    span = densest_span(words, weights)
    if span is None:
        return 0.0
    start, end = max(0, span[0] - NUMBER_MARGIN), span[1] + NUMBER_MARGIN + 1
    return float(any(is_number(w) and w not in stated for w in words[start:end]))


def densest_span(words: list[str], weights: dict[str, float]) -> tuple[int, int] | None:
    """(first, last) token positions of the SPAN_TOKENS stretch holding the most query weight."""
    hits = [(position, w) for position, w in enumerate(words) if w in weights]
    best, best_span = 0.0, None
    inside: Counter[str] = Counter()
    first = 0
    for position, word in hits:
        inside[word] += 1
        while hits[first][0] < position - SPAN_TOKENS:
            leaving = hits[first][1]
            inside[leaving] -= 1
            if not inside[leaving]:
                del inside[leaving]
            first += 1
        covered = sum(weights[w] for w in inside)
        if covered > best:
            best, best_span = covered, (hits[first][0], position)
    return best_span


def _document_scores(features: dict[int, dict[str, float]], entries: dict[int, EntryRow]) -> None:
    """Each candidate's document strength: the mean of its document's three best candidates."""
    per_doc: dict[str, list[float]] = defaultdict(list)
    for entry_id, f in features.items():
        per_doc[entries[entry_id].doc_id].append(f["sparse"] + f["window"])
    strength = {d: sum(sorted(v, reverse=True)[:3]) / 3 for d, v in per_doc.items()}
    top = max(strength.values(), default=1.0) or 1.0
    for entry_id, f in features.items():
        f["document"] = strength[entries[entry_id].doc_id] / top


def _named_scores(
    features: dict[int, dict[str, float]],
    entries: dict[int, EntryRow],
    weights: dict[str, float],
    question: Question,
) -> None:
    """Each candidate's question term weight that names its document, relative to the
    best-named document among the candidates (left at 0 for all when none is named)."""
    named: dict[str, float] = {}
    for doc_id in {entries[entry_id].doc_id for entry_id in features}:
        naming = {t.stem for t in question.naming(doc_id)}
        named[doc_id] = sum(w for t, w in weights.items() if t in naming)
    top = max(named.values(), default=0.0)
    if not top:
        return
    for entry_id, f in features.items():
        f["named"] = named[entries[entry_id].doc_id] / top
