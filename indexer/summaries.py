"""Summaries of every unit of a parsed document (pages, sections, tables, figures, the document).

Summaries feed retrieval (BM25 and embeddings), so they must keep the salient content words of
their unit. Without an LLM they are extractive and deterministic: sentences are scored by their
TF-IDF centroid centrality (the mean cosine similarity to the other sentences of the unit), with
IDF computed once over the whole document's sentences, and the most central informative ones are
returned in their original order. Table summaries are built from the caption and header paths,
figure summaries from the caption and the sentences that mention the figure.

An LLM summariser is optional (``summariser_from_settings``); when given, it writes the tldr and the
section summaries, and any failure falls back to the extractive summary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from docsym.indexer.model import Figure, ParsedDocument, Table
from docsym.language.labels import HEADER_PATH_SEP
from docsym.language.sentences import split_sentences
from docsym.language.terms import content_words
from docsym.models.llm import ChatClient, LlmError, chat_client
from docsym.runtime.settings import Settings

PAGE_SENTENCES, PAGE_CHARS = 3, 600
SECTION_SENTENCES, SECTION_CHARS = 3, 600
TLDR_SENTENCES, TLDR_CHARS = 3, 600
FIGURE_CHARS = 800
FIGURE_MENTIONS = 2
TABLE_CHARS = 1500
TABLE_MAX_COLUMNS = 24
TABLE_MAX_ROWS = 30
TABLE_LABEL_CHARS = 60
TLDR_SOURCE_CHARS = 8000  # how much of the opening text a tldr is drawn from without an abstract

_LETTER = re.compile(r"[^\W\d_]")
_TOKEN_WITH_LETTER = re.compile(r"(?<!\S)\S*?[^\W\d_]")  # one match per such token
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_LINE_HYPHEN = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
_LEADERS = re.compile(r"[_.…·\-=]{4,}")  # dot leaders of contents pages, rules drawn with '_'
# "... Results of Operations 48 Item 7A": a heading followed by its page number, as in a printed
# table of contents.
_CONTENTS_ENTRY = re.compile(r"[a-z)] \d{1,3} [A-Z]")
# Page furniture and front-matter lines that are never what a unit is about. Plain substrings of
# the lower-cased sentence: one regex alternation over them is several times slower.
_BOILERPLATE = (
    "all rights reserved",
    "copyright",
    "©",
    "proceedings of",
    "table of contents",
    "licensed under",
    "http://",
    "https://",
    "www.",
    "arxiv:",
    "doi:",
    "equal contribution",
)
_PAGE_OF = re.compile(r"\bpage \d+ of \d+")
_MIN_WORDS = 5  # shorter "sentences" are headings, labels or fragments
_MIN_LETTER_SHARE = 0.5  # tokens with letters; table rows and number lists fall below
_LONG_WORDS = 60  # beyond this a "sentence" is usually run-together lines; prefer shorter


# --- text helpers ---------------------------------------------------------------------------


def normalise_text(text: str) -> str:
    """One line of text: end-of-line hyphens before a lower-case continuation undone, spaces
    collapsed."""
    if "-\n" in text:
        text = _LINE_HYPHEN.sub("", text)
    return " ".join(_LEADERS.sub(" ", text).split())


def sentences_of(text: str, cache: dict[str, list[str]] | None = None) -> list[str]:
    """Sentences of ``text``, paragraph by paragraph so headings and table rows that end without
    punctuation do not glue onto the next paragraph's first sentence. ``cache`` maps paragraphs
    already split (pages and sections share them) to their sentences."""
    out: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        known = None if cache is None else cache.get(paragraph)
        if known is None:
            flat = normalise_text(paragraph)
            known = split_sentences(flat) if flat else []
            if cache is not None:
                cache[paragraph] = known
        out.extend(known)
    return out


def trim_to(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters at a word boundary, marked with '…'."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    head = text[: max_chars - 1]
    cut = head.rfind(" ")
    if cut > 0:
        head = head[:cut]
    return head.rstrip(" ,;:–—-") + "…"


def is_informative(sentence: str) -> bool:
    """A real sentence rather than a heading, a row of numbers or page furniture."""
    tokens = sentence.split()
    if len(tokens) < _MIN_WORDS:
        return False
    with_letters = len(_TOKEN_WITH_LETTER.findall(sentence))
    if with_letters < _MIN_WORDS or with_letters < _MIN_LETTER_SHARE * len(tokens):
        return False
    lowered = sentence.lower()
    if any(marker in lowered for marker in _BOILERPLATE):
        return False
    return "page " not in lowered or not _PAGE_OF.search(lowered)


# --- term statistics --------------------------------------------------------------------------


class TermStats:
    """Vocabulary and sentence-level IDF of one document, plus a cache of tokenised sentences.

    Pages and sections hold the same sentences, so each distinct sentence is tokenised once.
    """

    def __init__(
        self, sentences: Iterable[str] = (), paragraphs: dict[str, list[str]] | None = None
    ) -> None:
        self._ids: dict[str, int] = {}
        self._cache: dict[str, np.ndarray] = {}
        self._informative: dict[str, bool] = {}
        # The document's paragraphs already split into sentences (see sentences_of).
        self.paragraphs: dict[str, list[str]] = {} if paragraphs is None else paragraphs
        doc_freq: list[int] = []
        n_sentences = 0
        for sentence in sentences:
            ids = self.token_ids(sentence)
            n_sentences += 1
            for term in np.unique(ids).tolist():
                while term >= len(doc_freq):
                    doc_freq.append(0)
                doc_freq[term] += 1
        self._known = len(doc_freq)
        df = np.asarray(doc_freq, dtype=np.float64)
        self._idf = np.log((n_sentences + 1.0) / (df + 1.0)) + 1.0
        # A term the document never used is as rare as a term seen once.
        self._unseen_idf = math.log((n_sentences + 1.0) / 2.0) + 1.0

    def token_ids(self, sentence: str) -> np.ndarray:
        cached = self._cache.get(sentence)
        if cached is None:
            ids = self._ids
            cached = np.fromiter(
                (ids.setdefault(w, len(ids)) for w in content_words(sentence)), dtype=np.int64
            )
            self._cache[sentence] = cached
        return cached

    def informative(self, sentence: str) -> bool:
        known = self._informative.get(sentence)
        if known is None:
            known = self._informative[sentence] = is_informative(sentence)
        return known

    def idf(self, term_ids: np.ndarray) -> np.ndarray:
        known = term_ids < self._known
        out = np.full(term_ids.shape, self._unseen_idf, dtype=np.float64)
        out[known] = self._idf[term_ids[known]]
        return out


def centrality(sentences: list[str], stats: TermStats) -> np.ndarray:
    """Mean TF-IDF cosine similarity of each sentence to the other sentences of the unit.

    Computed through the centroid on flat (sentence, term, weight) arrays, so the cost is linear
    in the number of tokens even for a thirty-page section.
    """
    n = len(sentences)
    token_lists = [stats.token_ids(s) for s in sentences]
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=n)
    if n < 2 or lengths.sum() == 0:
        return np.zeros(n)
    terms = np.concatenate(token_lists)
    owner = np.repeat(np.arange(n), lengths)
    width = int(terms.max()) + 1
    keys, counts = np.unique(owner * width + terms, return_counts=True)
    row, term = keys // width, keys % width
    weight = (1.0 + np.log(counts)) * stats.idf(term)  # sublinear tf: repeats say little more
    norms = np.sqrt(np.bincount(row, weights=weight * weight, minlength=n))
    weight = weight / norms[row]
    centroid = np.bincount(term, weights=weight, minlength=width)
    self_similarity = (norms > 0).astype(np.float64)
    to_centroid = np.bincount(row, weights=weight * centroid[term], minlength=n)
    return (to_centroid - self_similarity) / (n - 1)


_PARTIAL_PENALTY = 0.6


def _shape_factor(sentence: str) -> float:
    """Prefers sentences of a readable length that are whole: a lower-case start or a missing
    end mark is a piece cut at a page or column break."""
    words = len(sentence.split())
    if words > _LONG_WORDS:
        factor = math.sqrt(_LONG_WORDS / words)
    else:
        factor = min(1.0, words / 12.0)
    if sentence[0].islower():
        factor *= _PARTIAL_PENALTY
    if not sentence.rstrip("\"')]”’").endswith((".", "!", "?", ":")):
        factor *= _PARTIAL_PENALTY
    if _CONTENTS_ENTRY.search(sentence):
        factor *= _PARTIAL_PENALTY
    return factor


def rank_sentences(sentences: list[str], stats: TermStats) -> list[int]:
    """Indices of the informative sentences, best first; ties go to the earlier sentence.

    When no sentence is informative (a page of figures, a table dump), every sentence with a word
    in it competes instead, so the unit still gets a summary that names its content.
    """
    candidates = [i for i, s in enumerate(sentences) if stats.informative(s)]
    if not candidates:
        candidates = [i for i, s in enumerate(sentences) if len(stats.token_ids(s))]
    if not candidates:
        return []
    scores = centrality(sentences, stats)
    # Rounding makes ties exact, so the position decides them on every platform.
    keyed = [(-round(scores[i] * _shape_factor(sentences[i]), 9), i) for i in candidates]
    return [i for _, i in sorted(keyed)]


def pick_sentences(
    sentences: list[str], order: list[int], max_sentences: int, max_chars: int
) -> str:
    """The best sentences that fit the budget, in their original order."""
    chosen: list[int] = []
    used = 0
    for i in order:
        if len(chosen) == max_sentences:
            break
        cost = len(sentences[i]) + (1 if chosen else 0)
        if used + cost <= max_chars:
            chosen.append(i)
            used += cost
    if not chosen:  # even the best sentence is too long: keep its opening words
        return trim_to(sentences[order[0]], max_chars)
    return " ".join(sentences[i] for i in sorted(chosen))


def summarise_text(
    text: str,
    max_sentences: int = 3,
    max_chars: int = 600,
    stats: TermStats | None = None,
) -> str:
    """An extractive summary: the ``max_sentences`` most central informative sentences of
    ``text`` in their original order, at most ``max_chars`` long. ``stats`` carries the
    document-wide IDF; without it, IDF comes from the text's own sentences. Texts of at most
    ``max_sentences`` sentences come back whole (flattened and trimmed). Returns "" when the text
    has no words."""
    sentences = sentences_of(text, None if stats is None else stats.paragraphs)
    if not sentences:
        return ""
    if len(sentences) <= max_sentences:
        return trim_to(" ".join(sentences), max_chars)
    if stats is None:
        stats = TermStats(sentences)
    order = rank_sentences(sentences, stats)
    if not order:
        return ""
    return pick_sentences(sentences, order, max_sentences, max_chars)


# --- tables -----------------------------------------------------------------------------------

_YEAR = re.compile(r"(?:19|20)\d\d")


def _path_label(path: list[str]) -> str:
    """A header path as one label, without numeric parts (data values that the table parser took
    for headers), except years, which are what period columns are searched by."""
    parts: list[str] = []
    for part in path:
        part = " ".join(part.split())
        if not part or (parts and parts[-1] == part):
            continue
        if _LETTER.search(part) or _YEAR.fullmatch(part):
            parts.append(trim_to(part, TABLE_LABEL_CHARS))
    return HEADER_PATH_SEP.join(parts)


def _header_labels(table: Table, axis: str) -> list[str]:
    """One label per column (``axis="col"``) or row (``axis="row"``) from its deepest header path,
    de-duplicated in table order."""
    deepest: dict[int, list[str]] = {}
    for cell in table.cells:
        index, path = (cell.col, cell.col_path) if axis == "col" else (cell.row, cell.row_path)
        if len(path) > len(deepest.get(index, [])):
            deepest[index] = path
    start = table.header_cols if axis == "col" else table.header_rows
    labels: list[str] = []
    seen: set[str] = set()
    for index in sorted(deepest):
        if index < start:
            continue
        label = _path_label(deepest[index])
        if label and label not in seen:
            seen.add(label)
            labels.append(label)
    return labels


def _fitted_list(name: str, labels: list[str], cap: int, budget: int) -> str:
    """'Name: a, b, c (and K more).' with at most ``cap`` labels and about ``budget`` characters,
    so a 300-row table cannot crowd out the rest of its summary."""
    if not labels:
        return ""
    shown: list[str] = []
    used = len(name) + len(" (and 9999 more).") + 2
    for label in labels[:cap]:
        if shown and used + len(label) + 2 > budget:
            break
        shown.append(label)
        used += len(label) + 2
    text = f"{name}: " + ", ".join(shown).rstrip(".")
    hidden = len(labels) - len(shown)
    return f"{text} (and {hidden} more)." if hidden > 0 else f"{text}."


def summarise_table(table: Table, max_chars: int = TABLE_CHARS) -> str | None:
    """Caption, column header paths, row labels and the table's size: what people search by."""
    head: list[str] = []
    caption = normalise_text(table.caption or "")
    if caption:
        if table.label and not caption.lower().startswith(table.label.lower()):
            caption = f"{table.label}: {caption}"
        head.append(trim_to(caption, max_chars // 3).rstrip(".") + ".")
    elif table.label:
        head.append(f"{table.label}.")
    corner = _path_label(
        [c.text for c in table.cells if c.row < table.header_rows and c.col < table.header_cols]
    )
    if corner:
        head.append(f"Row headers: {corner}.")
    columns = _header_labels(table, "col")
    rows = _header_labels(table, "row")
    if not head and not columns and not rows:
        return None
    size = f"{table.n_rows} rows × {table.n_cols} columns."
    budget = max_chars - len(" ".join([*head, size])) - 2
    column_text = _fitted_list("Columns", columns, TABLE_MAX_COLUMNS, budget // 2)
    row_text = _fitted_list("Rows", rows, TABLE_MAX_ROWS, budget - len(column_text) - 1)
    parts = [*head, column_text, row_text, size]
    return trim_to(" ".join(p for p in parts if p), max_chars)


# --- figures ----------------------------------------------------------------------------------


def _mention_pattern(label: str) -> re.Pattern[str] | None:
    """'Figure 3', 'Fig. 3', 'Figs. 2 and 3' style mentions of the figure labelled ``label``."""
    pieces = label.split(maxsplit=1)
    if len(pieces) != 2:
        return None
    number = re.escape(pieces[1].rstrip(".:"))
    return re.compile(
        rf"\bfig(?:ure)?s?\.?\s+(?:[\w.]+\s*(?:,|and|&)\s*)*{number}(?![\w]|\.\w)", re.I
    )


def _is_caption_sentence(sentence: str, label: str, caption: str) -> bool:
    head = sentence[: len(label) + 1].lower()
    if head.startswith(label.lower()) and head[len(label) :][:1] in (":", ".", "|"):
        return True
    return bool(caption) and sentence in caption


def summarise_figure(
    figure: Figure,
    document_sentences: list[str],
    stats: TermStats,
    max_chars: int = FIGURE_CHARS,
) -> str | None:
    """The caption plus the one or two most central sentences of the document that mention the
    figure by its label."""
    caption = normalise_text(figure.caption or "")
    mentions: list[str] = []
    pattern = _mention_pattern(figure.label) if figure.label else None
    if pattern is not None:
        seen: set[str] = set()
        for sentence in document_sentences:
            if sentence in seen or not pattern.search(sentence):
                continue
            if _is_caption_sentence(sentence, figure.label or "", caption):
                continue
            seen.add(sentence)
            mentions.append(sentence)
    if not caption and not mentions:
        return None
    text = trim_to(caption, max_chars // 2) if caption else ""
    if mentions:
        # The caption takes part in the vote, so mentions close to it win.
        pool = [caption, *mentions] if caption else mentions
        scores = centrality(pool, stats)[len(pool) - len(mentions) :]
        order = [i for _, i in sorted((-round(s, 9), i) for i, s in enumerate(scores))]
        budget = max_chars - len(text) - (1 if text else 0)
        picked = pick_sentences(mentions, order, FIGURE_MENTIONS, max(budget, 0))
        if budget > 0 and picked and len(picked) <= budget:
            text = f"{text} {picked}" if text else picked
    return text or None


# --- LLM summariser ---------------------------------------------------------------------------


_SYSTEM_PROMPT = (
    "You write short factual summaries for a document search index. Keep the key terms, names, "
    "methods and numbers of the text. Answer with the summary only, in plain prose."
)
_LLM_INPUT_CHARS = 12000  # keeps a long section within small models' context windows


@dataclass
class LlmSummariser:
    """Summaries from an OpenAI-compatible ``/chat/completions`` endpoint."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 30.0
    max_tokens: int = 200

    def summarise(self, text: str, max_sentences: int = 3, max_chars: int = 600) -> str:
        client = ChatClient(self.base_url, self.model, self.api_key, self.timeout)
        messages = [
            {"role": "system", "content": _SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"Summarise in at most {max_sentences} sentences:\n\n"
                + trim_to(text, _LLM_INPUT_CHARS),
            },
        ]
        summary = normalise_text(client.complete(messages, 0.0, self.max_tokens))
        if not summary:
            raise LlmError(f"LLM endpoint {self.base_url} sent an empty summary")
        return trim_to(summary, max_chars)


def summariser_from_settings(settings: Settings) -> LlmSummariser | None:
    """The LLM summariser configured by ``DOCSYM_LLM_BASE_URL`` and ``DOCSYM_LLM_MODEL`` (plus
    the optional ``DOCSYM_LLM_API_KEY`` and ``DOCSYM_LLM_TIMEOUT`` seconds), or None."""
    client = chat_client(settings)
    if client is None:
        return None
    return LlmSummariser(client.base_url, client.model, client.api_key, client.timeout)


class _LlmWithFallback:
    """Calls the LLM until it fails too often in a row, so a dead endpoint costs a few timeouts
    per document, not one per section."""

    def __init__(self, llm: LlmSummariser | None, max_failures: int = 2) -> None:
        self._llm = llm
        self._failures = 0
        self._max_failures = max_failures
        self.errors: list[str] = []

    def __call__(self, text: str, max_sentences: int, max_chars: int) -> str | None:
        if self._llm is None or self._failures >= self._max_failures:
            return None
        try:
            summary = self._llm.summarise(text, max_sentences, max_chars)
        except LlmError as error:
            self._failures += 1
            self.errors.append(str(error))
            return None
        self._failures = 0
        return summary


# --- whole documents --------------------------------------------------------------------------


@dataclass
class DocumentSummaries:
    tldr: str | None = None
    pages: dict[int, str] = field(default_factory=dict)  # page number -> summary
    sections: dict[int, str] = field(default_factory=dict)  # section ordinal -> summary
    tables: dict[int, str] = field(default_factory=dict)  # table ordinal -> summary
    figures: dict[int, str] = field(default_factory=dict)  # figure ordinal -> summary
    llm_errors: list[str] = field(default_factory=list)  # why the LLM was skipped, if it was


def _document_sentences(parsed: ParsedDocument, cache: dict[str, list[str]]) -> list[str]:
    """All sentences of the document, once: from the pages, or the sections when pages are
    empty (formats without a page text)."""
    texts = [p.text for p in parsed.pages if p.text.strip()]
    if not texts:
        texts = [s.content for s in parsed.sections if s.content.strip()]
    return [s for text in texts for s in sentences_of(text, cache)]


_OVERVIEW_TITLE = re.compile(
    r"(?:[\dIVX]+\.?\s+)?(?:abstract|summary|executive summary|overview|business overview|"
    r"introduction)",
    re.I,
)


def _tldr_source(parsed: ParsedDocument) -> str:
    """The abstract, else a section that says what the document is about (Summary, Overview,
    Introduction), else the opening sections' content, else the opening pages. Reports open with
    cover pages and legal notices, hence the preference for an overview."""
    if parsed.meta.abstract and parsed.meta.abstract.strip():
        return parsed.meta.abstract
    for section in parsed.sections:
        if section.content.strip() and _OVERVIEW_TITLE.fullmatch(section.title.strip()):
            return section.content
    for texts in (
        [s.content for s in parsed.sections if s.content.strip()],
        [p.text for p in parsed.pages if p.text.strip()],
    ):
        picked: list[str] = []
        used = 0
        for text in texts:
            if used >= TLDR_SOURCE_CHARS:
                break
            picked.append(text)
            used += len(text)
        if picked:
            return "\n\n".join(picked)
    return ""


def summarise_document(
    parsed: ParsedDocument, llm: LlmSummariser | None = None
) -> DocumentSummaries:
    """Summaries of every page, section, table and figure of ``parsed`` and its tldr. The IDF is
    computed once over the document's sentences. With ``llm``, the tldr and the section summaries
    come from it, falling back to the extractive summary on any error."""
    paragraphs: dict[str, list[str]] = {}
    sentences = _document_sentences(parsed, paragraphs)
    stats = TermStats(sentences, paragraphs)
    ask_llm = _LlmWithFallback(llm)
    out = DocumentSummaries()

    tldr_source = _tldr_source(parsed)
    if tldr_source:
        out.tldr = ask_llm(tldr_source, TLDR_SENTENCES, TLDR_CHARS) or (
            summarise_text(tldr_source, TLDR_SENTENCES, TLDR_CHARS, stats) or None
        )
    for page in parsed.pages:
        if page.text.strip():
            summary = summarise_text(page.text, PAGE_SENTENCES, PAGE_CHARS, stats)
            if summary:
                out.pages[page.number] = summary
    for section in parsed.sections:
        if not section.content.strip():
            continue
        summary = summarise_text(section.content, SECTION_SENTENCES, SECTION_CHARS, stats)
        # Short sections come back whole from the extractive path; the LLM adds nothing there.
        if llm is not None and summary and len(sentences_of(section.content)) > SECTION_SENTENCES:
            summary = ask_llm(section.content, SECTION_SENTENCES, SECTION_CHARS) or summary
        if summary:
            out.sections[section.ordinal] = summary
    for table in parsed.tables:
        summary = summarise_table(table)
        if summary:
            out.tables[table.ordinal] = summary
    for figure in parsed.figures:
        summary = summarise_figure(figure, sentences, stats)
        if summary:
            out.figures[figure.ordinal] = summary
    out.llm_errors = ask_llm.errors
    return out
