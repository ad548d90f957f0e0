"""One reading of a question, made once per call and shared by ranking (``tools.fusion``) and
citation (``tools.evidence``), so the two never disagree about what was asked.

A question is read into:
- its terms: each word that is not a stopword (Greek letters spelled out, as ``language.terms``
  reads every text), with the forms that meet it (its stem, its plain singular, a compound run
  together) and a compound's parts ('tableformer-large' is met by itself, by 'tableformerlarge'
  or by 'tableformer' and 'large' together);
- its stems in order and their adjacent pairs, the vocabulary ranking compares passages with;
- whether it asks for a quantity, by how it opens (ranking: measured better than anywhere) or
  anywhere in it (citation: "In the ablation table, what average score ..."), and the numbers
  it states itself ("in 2021" is no answer to it);
- which of its terms name each document (title, authors, file name), the words that say which
  document rather than where in it.

``term_weights`` is the one IDF both consumers weigh terms by, each over its own units.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from docsym.language.numbers import asks_for_quantity, is_number
from docsym.language.terms import (
    STOPWORDS,
    compound_parts,
    raw_words,
    stem,
    tokens,
    word_forms,
    words_of,
)
from docsym.storage.derived import of_documents
from docsym.storage.store import Store

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, eq=False)  # hashed by identity: a question's terms are distinct
class Term:
    """A question word, the forms that satisfy it and, for a compound, its parts."""

    stem: str
    forms: frozenset[str]
    parts: frozenset[str]

    def met_by(self, words: frozenset[str]) -> bool:
        """Whether a text of these words (``words_of``) holds the term."""
        return bool(self.forms & words) or (bool(self.parts) and self.parts <= words)

    def names(self, name: frozenset[str]) -> bool:
        """Whether the term is one of a document's name words: one of its forms is, or one of
        its parts that names anything ('tableformer-large' names TableFormer; the 'for' of
        'verify_group_for_user' does not name 'DB2 for i')."""
        return bool(self.forms & name) or any(
            len(p) >= 3 and not p.isdigit() and p not in STOPWORDS and p in name for p in self.parts
        )


@dataclass(frozen=True)
class Question:
    text: str
    terms: tuple[Term, ...]
    stems: tuple[str, ...]  # the terms' distinct stems, in the question's order
    pairs: frozenset[tuple[str, str]]  # adjacent stems: "gross bookings"
    opens_with_quantity: bool
    asks_quantity: bool
    numbers: frozenset[str]  # the numbers it states
    names: Mapping[str, frozenset[str]] = field(repr=False)  # doc_id -> its name words
    _naming: dict[str, frozenset[Term]] = field(default_factory=dict, repr=False)

    def naming(self, doc_id: str) -> frozenset[Term]:
        """The terms that name the document (none for an unknown one); worked out for the
        documents a call meets, not for every document of the index."""
        found = self._naming.get(doc_id)
        if found is None:
            name = self.names.get(doc_id, frozenset())
            found = self._naming[doc_id] = frozenset(t for t in self.terms if t.names(name))
        return found


def read_question(store: Store | None, text: str) -> Question:
    """The question read once; ``store`` gives the documents' names (None: no names)."""
    terms = _terms(text)
    stems = tuple(dict.fromkeys(t.stem for t in terms))
    return Question(
        text=text,
        terms=terms,
        stems=stems,
        pairs=frozenset(zip(stems, stems[1:], strict=False)),
        opens_with_quantity=asks_for_quantity(text),
        asks_quantity=asks_for_quantity(text, anywhere=True),
        numbers=frozenset(w for w in tokens(text) if is_number(w)),
        names=document_names(store) if store is not None else {},
    )


def term_weights(keys: Iterable[K], units: list[frozenset[K]]) -> dict[K, float]:
    """IDF of each key over the units, each given by the keys it holds (keys held by none weigh
    nothing and are left out)."""
    keys = list(keys)
    df = Counter(k for held in units for k in keys if k in held)
    return {k: math.log(1 + len(units) / df[k]) for k in keys if df[k]}


def _terms(text: str) -> tuple[Term, ...]:
    """The question's words that are not stopwords, each with the forms that meet it."""
    seen: set[frozenset[str]] = set()
    terms = []
    for word in raw_words(text):
        forms = frozenset(word_forms(word)) - STOPWORDS
        if word in STOPWORDS or not forms or forms in seen:
            continue
        seen.add(forms)
        parts = compound_parts(word)
        if parts:
            forms |= {"".join(parts)}
        terms.append(Term(stem(word), forms, frozenset(parts)))
    return tuple(terms)


def document_names(store: Store) -> dict[str, frozenset[str]]:
    """doc_id -> the words that name it: its title, its authors and its file name (one query
    per index version, for the documents added or changed since the last)."""
    return store.library("document-names", _read_document_names, frozenset())


def _read_document_names(store: Store, doc_ids: list[str] | None) -> dict[str, frozenset[str]]:
    where, params = of_documents(doc_ids)
    rows = (
        store.sql()
        .execute(f"SELECT doc_id, title, authors, file_name FROM documents WHERE {where}", params)
        .fetchall()
    )
    names = {}
    for doc_id, title, authors, file_name in rows:
        file_stem = (file_name or "").rsplit(".", 1)[0].replace("_", " ")
        names[doc_id] = words_of(" ".join([title or "", " ".join(authors or []), file_stem]))
    return names
