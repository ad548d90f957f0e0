"""Sentence splitting: at . ! ? followed by space and a capital, digit, bullet or opening
quote/bracket, unless the period ends a common abbreviation ("e.g.", "et al.", "Fig.") or an
initial; after a footnote mark that follows a word's full stop ("study.3 We"); and where a
caller knows a new sentence starts without a full stop: a list item or a heading line
(``opens_item`` tells a list item's first line)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

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
    "st",  # "St. Louis"
    # Months, as dates print them ("Dec. 20, 2018").
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
)
# Signs that open a list item wherever they start a line (a Symbol font's bullets included).
BULLETS = "•◦▪▫●○■□‣⁃∙►▸▹➢➤✓✔❖\uf0a7\uf0b7\uf0d8"
# The mark that ends a sentence, then space before a capital, digit, bullet or opening
# quote/bracket. The match starts at the mark (rather than looking behind for it): about 30%
# faster to find. A footnote mark may follow a word's full stop ("study.3 We discuss"): it ends
# that sentence (``_footnote_end`` tells it from a number, "2.3 Many", or "Fig.3 Shows").
_SENTENCE_END = re.compile(
    rf"[.!?](?P<mark>\d{{1,2}}(?=\s+[A-Z]))?[\"')\]]?\s+(?=[A-Z0-9\"'(\[{BULLETS}])"
)
# Item markers that running text also holds (a dash, an asterisk, "2." or "(a)" wrapped to the
# start of a line): they open an item only where the line before allows it (``opens_item``).
_BULLET = re.compile(rf"^[{BULLETS}]")
_MARKER_TEXT = r"(?:[-–—*]|\(?(?:\d{1,3}|[A-Za-z]|[ivxlcIVXLC]{2,5})[.)])"
_MARKER = re.compile(rf"^{_MARKER_TEXT}\s")
# A piece that is a marker alone ("3." before "We contain ...") belongs to the item it opens.
_LONE_MARKER = re.compile(rf"^(?:[{BULLETS}]|{_MARKER_TEXT})$")
_CLAUSE_END = tuple(".,:;!?")
_ABBREV_ALTERNATIVES = "|".join(re.escape(a) for a in ABBREVIATIONS)
_ABBREV_TAIL = re.compile(rf"(?:\b(?:{_ABBREV_ALTERNATIVES})|\b[A-Z])\.$", re.I)
# The tail is searched from this many characters before the end (the longest abbreviation and
# its period fit), not from the start of the sentence: most of sentence splitting's time
# went to scanning every sentence from its first character.
_TAIL_CHARS = max(len(a) for a in ABBREVIATIONS) + 2


def opens_item(line: str, previous: str | None = None, previous_opens: bool = False) -> bool:
    """Whether the printed ``line`` begins a list item. A bullet always does; a dash or a number
    or letter marker ("1.", "(a)", "iv)") does at a paragraph's start (no ``previous`` line),
    after a line that ends a clause, or after a line that opened an item itself (short items
    end without punctuation), never inside a sentence ("... questions: (1) can models ... and
    (2) can ...")."""
    line = line.lstrip()
    if _BULLET.match(line):
        return True
    if not _MARKER.match(line):
        return False
    return previous is None or previous_opens or previous.rstrip().endswith(_CLAUSE_END)


_ENDS_SENTENCE = re.compile(r"[.!?:;][\"'”’)\]]*$")


def carries_on(last: str, following: str) -> bool:
    """Whether ``following`` (the next block or paragraph) carries on the sentence ``last``
    left unfinished: ``last`` ends with no full stop, colon or semicolon, and ``following``
    starts with a lower-case word, not an item marker ("f. Any upward ...")."""
    last, following = last.rstrip(), following.lstrip()
    return (
        bool(last)
        and not _ENDS_SENTENCE.search(last)
        and following[:1].islower()
        and not _MARKER.match(following)
    )


def split_sentences(text: str, breaks: Sequence[int] = ()) -> list[str]:
    """The sentences of ``text``, stripped, in order; empty pieces dropped. A sentence also
    starts at each offset in ``breaks`` (ascending): a list item or a heading line, which no
    full stop announces."""
    if not breaks:
        return _sentences(text)
    bounds = [0, *breaks, len(text)]
    return [s for start, end in pairwise(bounds) for s in _sentences(text[start:end])]


def _sentences(text: str) -> list[str]:
    """``split_sentences`` within a stretch that no break cuts."""
    sentences: list[str] = []
    for piece in _pieces(text):
        piece = piece.strip()
        if not piece:
            continue
        last = sentences[-1] if sentences else ""
        tail = max(0, len(last) - _TAIL_CHARS)
        if last and (_ABBREV_TAIL.search(last, tail) or _LONE_MARKER.match(last)):
            sentences[-1] = f"{last} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _pieces(text: str) -> list[str]:
    """``text`` cut after each sentence end (the mark stays, the quote and space go)."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        mark = end.group("mark")
        if mark and not _footnote_end(text, end.start()):
            continue
        pieces.append(text[start : end.start() + 1 + len(mark or "")])
        start = end.end()
    pieces.append(text[start:])
    return pieces


def _footnote_end(text: str, stop: int) -> bool:
    """Whether the digits after the full stop at ``stop`` are a footnote mark ending a
    sentence: the stop ends a lower-case word that is no abbreviation."""
    if stop == 0 or not text[stop - 1].islower():
        return False
    return _ABBREV_TAIL.search(text, max(0, stop - _TAIL_CHARS), stop + 1) is None
