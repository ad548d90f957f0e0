"""Sentence splitting: at . ! ? followed by space and a capital, digit or opening quote/bracket,
unless the period ends a common abbreviation ("e.g.", "et al.", "Fig.") or an initial."""

from __future__ import annotations

import re

ABBREVIATIONS = (
    "e.g",
    "i.e",
    "et al",
    "etc",
    "vs",
    "cf",
    "fig",
    "figs",
    "eq",
    "eqs",
    "sec",
    "tab",
    "no",
    "dr",
    "mr",
    "mrs",
    "ms",
    "prof",
    "inc",
    "ltd",
    "co",
    "corp",
    "approx",
    "resp",
    "vol",
    "pp",
)
# The mark that ends a sentence, then space before a capital, digit or opening quote/bracket. The
# match starts at the mark (rather than looking behind for it): about 30% faster to find.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?\s+(?=[A-Z0-9\"'(\[])")
_ABBREV_ALTERNATIVES = "|".join(re.escape(a) for a in ABBREVIATIONS)
_ABBREV_TAIL = re.compile(rf"(?:\b(?:{_ABBREV_ALTERNATIVES})|\b[A-Z])\.$", re.I)
# The tail is searched from this many characters before the end (the longest abbreviation and
# its period fit), not from the start of the sentence: most of sentence splitting's time
# went to scanning every sentence from its first character.
_TAIL_CHARS = max(len(a) for a in ABBREVIATIONS) + 2


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; empty pieces dropped."""
    sentences: list[str] = []
    for piece in _pieces(text):
        piece = piece.strip()
        if not piece:
            continue
        last = sentences[-1] if sentences else ""
        if last and _ABBREV_TAIL.search(last, max(0, len(last) - _TAIL_CHARS)):
            sentences[-1] = f"{last} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _pieces(text: str) -> list[str]:
    """``text`` cut after each sentence end (the mark stays, the quote and space go)."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        pieces.append(text[start : end.start() + 1])
        start = end.end()
    pieces.append(text[start:])
    return pieces
