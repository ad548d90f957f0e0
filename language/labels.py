"""Table header labels as lookups compare them: what a person types for a header, not how it
was printed. 'Gross Bookings (2)', 'GROSS BOOKINGS*' and 'gross  bookings' are one label.

Footnote marks are dropped: a parenthesised one- or two-character mark ('(2)', '(a)'), the
symbols * † ‡ § ¶ and superscript digits. Case, spacing and punctuation do not count.
"""

from __future__ import annotations

import re
from functools import lru_cache

_FOOTNOTE = re.compile(r"\(\s*[0-9a-z]{1,2}\s*\)|[*†‡§¶]+|[⁰¹²³⁴⁵⁶⁷⁸⁹]+", re.IGNORECASE)
_NOT_WORD = re.compile(r"[^\w%$€£]+")


@lru_cache(maxsize=65536)
def label_key(label: str) -> str:
    """'Gross Bookings (2)' -> 'gross bookings'; 'Top-100' -> 'top 100'."""
    return " ".join(_NOT_WORD.sub(" ", _FOOTNOTE.sub(" ", label).lower()).split())


@lru_cache(maxsize=65536)
def label_words(label: str) -> frozenset[str]:
    return frozenset(label_key(label).split())
