"""Numbers as questions ask for them and passages state them.

A question asks for a quantity when it opens with (or, read anywhere, holds) "how many", "what
share", "what F1", "at what redshift". A passage states one when a number is among its words
that is not a label ('Table 3', 'Study 2', '[12]'), and, for citing, not an author-year citation
or a footnote mark either.
"""

from __future__ import annotations

import re
from functools import lru_cache

from docsym.language.terms import tokens

NUMBER = re.compile(r"\d[\d.,]*")
# What a question asking for a quantity names: "what [...] F1", "at what redshift", "what share".
_MEASURES = (
    "percentage|percent|share|proportion|fraction|number|amount|count|total|average|mean|median|"
    "year|score|rate|ratio|accuracy|precision|recall|f1|auc|bleu|rouge|index|weight|coefficient|"
    "threshold|cost|price|revenue|revenues|income|expense|expenses|size|speed|time|duration|"
    "length|distance|redshift|temperature|probability|difference|growth|margin"
)
_QUANTITY_ASK = (
    r"(how (many|much|long|old|often|large|fast|far|big)\b|when\b|"
    rf"(what|which|at what|in what|by how much)\b(\s+[\w@'’-]+){{0,6}}?\s+({_MEASURES})\b)"
)
_ASKS_FIRST = re.compile(rf"^\s*{_QUANTITY_ASK}", re.IGNORECASE)
# The same ask after an opening phrase ("In the ablation table, what average score ...").
_ASKS_ANYWHERE = re.compile(rf"(^|[\s,;:(]){_QUANTITY_ASK}", re.IGNORECASE)
# Numbers that name something rather than count it: "Study 2", "Table 3", "Eq. (4)", "[12, 15]".
# Matched in lower-cased text: IGNORECASE makes this alternation about 3x slower.
_LABEL_NUMBER = re.compile(
    r"\b(?:table|figure|fig|section|sec|study|step|eq|equation|chapter|appendix|part|item|note|"
    r"page|p|pp|version|v|phase|experiment|task|round|line|model|algorithm|theorem|lemma)s?\.?"
    r"\s*\(?\d[\d.]*\)?|\[\d+(?:\s*[,–-]\s*\d+)*\]"
)
# Author-year citations and footnote marks after a bracket ("(RNNs).2"): numbers, but not the
# quantities a question asks for.
_NOT_QUANTITIES = re.compile(
    r"\([^()]*\b(?:1[89]|20)\d\d[a-z]?\)"  # (Smith et al., 2019)
    r"|\bet al\.?,?\s*(?:1[89]|20)\d\d[a-z]?"  # Smith et al. 2019
    r"|\b(?:1[89]|20)\d\d[a-z]?\)"  # 2019), its "(" left in the sentence before a break
    r"|(?<=[)\]])\.?\d{1,2}\b"  # (RNNs).2
)


def is_number(word: str) -> bool:
    return NUMBER.fullmatch(word) is not None


def asks_for_quantity(question: str, anywhere: bool = False) -> bool:
    """Whether the question asks for a number: how many, what share, what F1, at what redshift;
    by how it opens, or ``anywhere`` in it."""
    return bool((_ASKS_ANYWHERE if anywhere else _ASKS_FIRST).search(question))


@lru_cache(maxsize=8192)
def quantity_words(text: str) -> list[str]:
    """The text's words (as ``tokens`` reads them) with labels ("Table 3", "[12]") taken out:
    their numbers are names."""
    return tokens(_LABEL_NUMBER.sub(" ", text.lower()))


@lru_cache(maxsize=16384)
def stated_quantities(text: str) -> frozenset[str]:
    """The numbers a text states, not counting a citation's year, a footnote mark or a label
    ('Table 3', '[12]')."""
    return frozenset(w for w in quantity_words(_NOT_QUANTITIES.sub(" ", text)) if is_number(w))
