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
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[])")
_ABBREV_ALTERNATIVES = "|".join(re.escape(a) for a in ABBREVIATIONS)
_ABBREV_TAIL = re.compile(rf"(?:\b(?:{_ABBREV_ALTERNATIVES})|\b[A-Z])\.$", re.I)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; empty pieces dropped."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _ABBREV_TAIL.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences
