"""The words of queries and passages as ranking sees them.

Two tokenisers, for two consumers:
- ``search_words``: what goes to the BM25 collection (FTS5 with the porter stemmer does the
  stemming), each word quoted by the caller so no query syntax reaches MATCH;
- ``tokens`` / ``query_terms``: lower-case, lightly stemmed words for the fusion features, where
  the same stemmer must treat a question and a passage alike.

Both drop a possessive 's first: "MuPDF's" is about mupdf, and a bare "s" would match every
possessive in the index.
"""

from __future__ import annotations

import re

MAX_SEARCH_WORDS = 64

_WORD = re.compile(r"\w+", re.UNICODE)
# Possessive quantifiers: the same words as r"[a-z0-9]+(?:[._-][a-z0-9]+)*", found 18% faster
# (no backtracking into a run of letters that cannot be followed by anything else).
_TOKEN = re.compile(r"[a-z0-9]++(?:[._-][a-z0-9]++)*+")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")

STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most my no nor
    not now of off on once only or other our out over own same she should so some such than that
    the their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your many much""".split()  # noqa: SIM905
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


def search_words(query: str) -> list[str]:
    """Distinct lower-case words of a free-text query, in order, at most MAX_SEARCH_WORDS."""
    words = _WORD.findall(strip_possessives(query))
    return list(dict.fromkeys(w.lower() for w in words))[:MAX_SEARCH_WORDS]


def tokens(text: str) -> list[str]:
    """Every word of ``text``, lower-cased and stemmed, in order (stopwords kept)."""
    return list(map(_STEMS.__getitem__, raw_words(text)))


def word_forms(text: str) -> set[str]:
    """Every word of ``text`` as ``tokens`` stems it and as its plain singular ('titles' ->
    'titl' and 'title'), so that either form of a word meets the other."""
    raw = raw_words(text)
    return {stem(w) for w in raw} | {_singular(w) for w in raw}


def raw_words(text: str) -> list[str]:
    """The lower-case words of ``text`` before stemming (``tokens`` stems these)."""
    return _TOKEN.findall(strip_possessives(text.lower()))


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def query_terms(query: str) -> list[str]:
    """The distinct stemmed words of a question that are not stopwords, in order."""
    words = [w for w in _TOKEN.findall(strip_possessives(query.lower())) if w not in STOPWORDS]
    return list(dict.fromkeys(stem(w) for w in words))


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
