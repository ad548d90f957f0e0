"""Line-end hyphens: which ones a printer added to break a word, and which belong to a compound.

A word broken at a line end ("distribu-" then "tion") is joined whole ("distribution"); a
compound broken at its own hyphen ("long-" then "form", "self-" then "attention") keeps it
("long-form"). Which is which is read from the document itself: the hyphen stays when the joined
word is printed nowhere else in it while both halves are, each as a whole word. The halves of
other breaks are no whole words ("demon-" then "strate" joins: "demon" is printed nowhere whole).
Without a document's words, every such hyphen is a break.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"\w+")
_BROKEN = re.compile(r"(\w+)-$")  # a line ending in a word and a hyphen
_TAIL = 64  # characters of a line's end read for that word


class PrintedWords:
    """The words a document prints whole, in lower case: every word of its lines but the halves
    of words broken across a line end."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.words: set[str] = set()
        broke = False  # the line before ended in a hyphen
        for line in lines:
            words = _WORD.findall(line.lower())
            first = 1 if broke and line[:1].islower() else 0
            broke = _BROKEN.search(line) is not None
            self.words.update(words[first : len(words) - broke])

    def is_compound(self, left: str, right: str) -> bool:
        """Whether ``left-`` at a line end and ``right`` on the next are one compound (a number
        is never broken: '75-' then 'dimensional')."""
        left, right = left.lower(), right.lower()
        if left[-1].isdigit():
            return True
        return left + right not in self.words and left in self.words and right in self.words


def join_lines(upper: str, lower: str, printed: PrintedWords | None = None) -> str:
    """Two lines as one text: a line-end hyphen before a lower-case word dropped where it broke a
    word, kept where ``printed`` says it joins a compound; otherwise a space between."""
    # ``upper`` is a paragraph read so far: only its end is looked at, however long it grows.
    broken = _BROKEN.search(upper[-_TAIL:]) if upper.endswith("-") else None
    if broken is None or not lower[:1].islower():
        return f"{upper} {lower}"
    following = _WORD.match(lower)
    if printed is not None and following and printed.is_compound(broken[1], following[0]):
        return upper + lower
    return upper[:-1] + lower


def join_all(lines: Iterable[str], printed: PrintedWords | None = None) -> str:
    """Lines as one text, each stripped and joined to the text before as ``join_lines`` joins
    two (a caption's lines, an abstract's)."""
    out = ""
    for line in lines:
        line = line.strip()
        if line:
            out = join_lines(out, line, printed) if out else line
    return out
