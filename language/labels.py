"""Table header labels as lookups compare them: what a person types for a header, not how it
was printed. 'Gross Bookings (2)', 'GROSS BOOKINGS*' and 'gross  bookings' are one label.

Footnote marks are dropped: a parenthesised one- or two-character mark ('(2)', '(a)'), the
symbols * † ‡ § ¶ and superscript digits. Case, spacing and punctuation do not count. Words
that say one thing in several ways are written one way: 'percent' and '%', '2nd' and 'second',
'Q2' and 'second quarter'.

``label_stems``, ``label_core`` and ``acronym_words`` serve ranking: a word meets its plural
and inflections ('Aircraft rent' is what 'renting aircrafts' asks for), a parenthesised aside
('(in millions)', '(RPMs)', '(Decrease)') annotates a label without being what it names, and an
acronym stands for the words it spells ('ASM' for 'Available seat miles').
"""

from __future__ import annotations

import re
from functools import lru_cache

from docsym.language.terms import FUNCTION_WORDS
from docsym.language.terms import stem as plural_stem

# How a header path is written as one label ('Revenue › 2021'), by the indexer's summaries and
# the table tools alike.
HEADER_PATH_SEP = " › "
_FOOTNOTE = re.compile(r"\(\s*[0-9a-z]{1,2}\s*\)|[*†‡§¶]+|[⁰¹²³⁴⁵⁶⁷⁸⁹]+", re.IGNORECASE)
_NOT_WORD = re.compile(r"[^\w%$€£]+")
_ASIDE = re.compile(r"\([^()]*\)")
_ORDINALS = {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth"}
_ORDINALS |= {"5th": "fifth", "6th": "sixth", "7th": "seventh", "8th": "eighth"}
# One spelling per meaning, so a key holds a word the way any other label may print it.
_CANONICAL = {
    "percent": "%",
    "percentage": "%",
    "pct": "%",
    **_ORDINALS,
    **{f"q{n}": f"{word} quarter" for n, word in enumerate(list(_ORDINALS.values())[:4], 1)},
}


@lru_cache(maxsize=65536)
def label_key(label: str) -> str:
    """'Gross Bookings (2)' -> 'gross bookings'; 'Top-100' -> 'top 100'; 'Q2' -> 'second
    quarter'; 'Percent change' -> '% change'."""
    words = _NOT_WORD.sub(" ", _FOOTNOTE.sub(" ", label).lower()).split()
    return " ".join(_CANONICAL.get(w, w) for w in words)


@lru_cache(maxsize=65536)
def label_words(label: str) -> frozenset[str]:
    return frozenset(label_key(label).split())


@lru_cache(maxsize=65536)
def label_stems(label: str) -> frozenset[str]:
    """The label's words, each reduced to a stem its other forms share."""
    return frozenset(stem(w) for w in label_key(label).split())


@lru_cache(maxsize=65536)
def label_core(label: str) -> frozenset[str]:
    """Stems of the words the label names: outside parentheses. 'Revenue passenger miles
    (RPMs) (in millions)' -> {revenu, passenger, mile}; '(In millions)' -> {}."""
    return label_stems(_ASIDE.sub(" ", _FOOTNOTE.sub(" ", label)))


@lru_cache(maxsize=65536)
def acronym_words(word: str, label: str) -> frozenset[str]:
    """Stems of the run of the label's words whose initials spell ``word``, with or without
    its function words ('casm' in 'Operating cost per available seat mile' -> {cost, per,
    availabl, seat, mil}; 'eps' in 'Earnings per share'); empty when no run does. Acronyms of
    three letters or more only, and never a word the label itself holds."""
    acronym = stem(word)
    words = label_key(_ASIDE.sub(" ", _FOOTNOTE.sub(" ", label))).split()
    if len(acronym) < 3 or not acronym.isalpha() or word in words:
        return frozenset()
    for skipped in (FUNCTION_WORDS, frozenset()):  # 'CASM': Cost per Available Seat Mile
        spelled = [i for i, w in enumerate(words) if w not in skipped and w[0].isalpha()]
        start = "".join(words[i][0] for i in spelled).find(acronym)
        if start >= 0:
            run = words[spelled[start] : spelled[start + len(acronym) - 1] + 1]
            return frozenset(stem(w) for w in run)
    return frozenset()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Ranking's plural stripper (``language.terms.stem``), then what labels also inflect:
    '-ing', '-ed' and a final 'e' go ('expenses'/'expense' -> 'expens', 'renting' -> 'rent',
    'leased' -> 'leas'), and a superlative meets its adjective ('highest' -> 'high'). Numbers
    stay as they are."""
    if not word.isalpha():
        return word
    if not word.endswith(("us", "is")):  # 'status', 'basis' are not plurals
        word = plural_stem(word)
    for suffix in ("ing", "est", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word
