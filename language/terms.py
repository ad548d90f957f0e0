"""The words of questions and passages: one word pattern, one stemmer, one stop-word list.

Every reader of words in docsym takes them from here:
- ``raw_words``: the lower-case words of a text, Greek letters spelled out ('λ' is 'lambda', as
  questions write it), possessive 's dropped ("MuPDF's" is about mupdf; a bare "s" would match
  every possessive), compounds kept whole ('tableformer-large', 'u.s'). Ranking, citation and
  question analysis read these; ``tokens`` stems them, ``word_forms`` adds plain singulars and
  ``words_of`` a compound's parts and its run-together form;
- ``content_words``: the words that carry a topic (no stopwords, no numbers, no single letters),
  for the extractive summaries;
- ``search_words``: what goes to a BM25 collection, split as FTS5's unicode61 tokenizer splits
  (any letter of any script), each word quoted by the caller so no query syntax reaches MATCH;
- ``surface_words``: words as printed, case and inner punctuation kept ('C++', 'GPT-4',
  'arXiv.org'), for spotting names and identifiers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

MAX_SEARCH_WORDS = 64

_WORD = re.compile(r"\w+", re.UNICODE)
# Possessive quantifiers: the same words as r"[a-z0-9]+(?:[._-][a-z0-9]+)*", found 18% faster
# (no backtracking into a run of letters that cannot be followed by anything else).
_TOKEN = re.compile(r"[a-z0-9]++(?:[._-][a-z0-9]++)*+")
_SURFACE = re.compile(r"[A-Za-z0-9][\w'’.@+-]*[\w+]|[A-Za-z0-9]")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
_COMPOUND = re.compile(r"[._-]")

# Words that say nothing of a topic: dropped from questions (ranking and citation) and from the
# sentences summaries are drawn by.
STOPWORDS = frozenset(
    """a about above after again against all also although am an and any are as at be because
    been before being below between both but by can could did do does doing down during each
    either et al few for from further had has have having he her here hers him his how however
    i if in into is it its itself just many may me might more most much must my neither no nor
    not now of off on once only or other our ours out over own per same she should so some such
    than that the their theirs them then there these they this those through thus to too under
    until up upon us very via was we were what when where whether which while who whom whose
    why will with within without would yet you your""".split()  # noqa: SIM905
)

# Words that name nothing in a label or an acronym: 'Cost per Available Seat Mile' is CASM, and
# 'Number of Employees' is all explained by 'number employees'.
FUNCTION_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "per", "the", "to"}
)


_GREEK_NAMES = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega",
)  # fmt: skip
_GREEK = str.maketrans(
    {
        letter: f" {name} "
        for lower, name in zip("αβγδεζηθικλμνξοπρστυφχψω", _GREEK_NAMES, strict=True)
        for letter in (lower, lower.upper())
    }
)


def spell_greek(text: str) -> str:
    """'λ = 1.1' -> ' lambda  = 1.1': papers print the letter, questions spell its name."""
    if text.isascii():  # most texts: translate() looks every character up in the table
        return text
    return text.translate(_GREEK)


def strip_possessives(text: str) -> str:
    """'MuPDF's' -> 'MuPDF': the 's would otherwise be a search term of its own."""
    if "'" not in text and "’" not in text:  # most texts: skip the regex pass
        return text
    return _POSSESSIVE.sub("", text)


def raw_words(text: str) -> list[str]:
    """The lower-case words of ``text`` before stemming, Greek letters spelled out."""
    return _TOKEN.findall(strip_possessives(spell_greek(text).lower()))


def tokens(text: str) -> list[str]:
    """Every word of ``text``, lower-cased and stemmed, in order (stopwords kept)."""
    return list(map(_STEMS.__getitem__, raw_words(text)))


def word_forms(text: str) -> set[str]:
    """Every word of ``text`` as ``tokens`` stems it and as its plain singular ('titles' ->
    'titl' and 'title'), so that either form of a word meets the other."""
    raw = raw_words(text)
    return {stem(w) for w in raw} | {_singular(w) for w in raw}


@lru_cache(maxsize=16384)  # ~3 KB a sentence's: a few hundred pages' units
def words_of(text: str) -> frozenset[str]:
    """Every form of every word of ``text`` (``word_forms``), with the parts and the run-together
    form of its compounds: what a question term's forms and parts are matched against."""
    return frozenset(form for word in set(raw_words(text)) for form in _forms_of_word(word))


@lru_cache(maxsize=65536)
def _forms_of_word(word: str) -> frozenset[str]:
    """One word's share of ``words_of``, computed once per distinct word: a page's units
    repeat most of their words."""
    forms = word_forms(word)
    for form in list(forms):
        parts = compound_parts(form)
        if parts:
            forms.update(parts)
            forms.add("".join(parts))
    return frozenset(forms)


def compound_parts(word: str) -> list[str]:
    """'tableformer-large' -> ['tableformer', 'large']; [] for a word that is not a compound."""
    parts = [p for p in _COMPOUND.split(word) if p]
    return parts if len(parts) > 1 else []


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry a topic: no stopwords, numbers or single letters."""
    return [w for w in raw_words(text) if len(w) > 1 and w[0].isalpha() and w not in STOPWORDS]


def search_words(query: str) -> list[str]:
    """Distinct lower-case words of a free-text query, in order, at most MAX_SEARCH_WORDS."""
    words = _WORD.findall(strip_possessives(query))
    return list(dict.fromkeys(w.lower() for w in words))[:MAX_SEARCH_WORDS]


def surface_words(text: str) -> Iterator[re.Match[str]]:
    """Each word as printed, with its position: case and inner marks kept ('C++', 'GPT-4')."""
    return _SURFACE.finditer(text)


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def stem(word: str) -> str:
    """A light, symmetric suffix stripper: enough to match 'encoders'/'encoder', 'tasks'/'task'.
    Cached per word."""
    return _STEMS[word]


class _Stems(dict):
    """word -> its stem, filled on first use: ``tokens`` maps every word of every candidate
    through it, and a dict lookup costs less than a call through lru_cache."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _MAX_STEMS:  # bounded like any cache: start again
            self.clear()
        found = self[word] = _strip_suffix(word)
        return found


_MAX_STEMS = 65536
_STEMS = _Stems()


def _strip_suffix(word: str) -> str:
    for suffix in ("'s", "ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word
