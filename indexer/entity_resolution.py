"""Entity resolution (after BookRAG's gradient-based resolution), run as each mention arrives.

A mention whose name is already known (``normalise_name``, a possessive left out) joins that
entity: that alone is *exact-name merging*, the baseline. Otherwise, for the kinds of names that
can be written in several ways (multi-word names and defined terms), the mention's candidates are
the entities one of whose names it includes or is included in, word by word: each content word of
the shorter name is a word of the longer one in some form (stem, singular, a compound's parts or
its run-together form), and its last word may be cut short by a line end. "Levandowski" and
"Anthony Levandowski", "Stoeger W" and "Stoeger", "Zejiang Shenα" and "Zejiang Shen", "Ultra Low
Emissions Zone" and "Ultra Low Emission Zone", "Chandra Bhagavat" and "Chandra Bhagavatula" are
candidates; "Long Papers" and "Short Papers", "Mike Lewis" and "Patrick Lewis", "Austria" and
"Vienna" are not. Candidates are ranked by the cosine of the names' character trigrams, which
stands in for BookRAG's reranker, and its gradient rule decides: the mention joins the best
candidate when the next one scores below ``g`` times it (or there is no other); when several
stand together nothing stands out, and the mention is a new entity ("Wang" beside "Lucy Lu Wang"
and "William Wang").

Word inclusion, not the embedding model: MiniLM cosine merged names that only mean alike
(the list is in docs/RESULTS.md), and no model is loaded to prepare a file. Guards keep apart what
a reranker would: names that carry different numbers, Roman numerals or negations (GPT-2, GPT-3;
Item II, Item III; Non-Employee Director) never merge, nor names whose initials differ (Paul S,
Paul N), nor names whose heads differ ("Preferred Stock" and "Preferred Stock Warrants", the ACL
and its Annual Meeting).
Acronym definitions ("Dense Passage Retriever (DPR)") declare an alias pair: the two entities
become one, whichever was seen first. Aliases (other surface forms) are kept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from docsym.language.names import normalise_name
from docsym.language.terms import STOPWORDS, raw_words, strip_possessives, words_of

GRADIENT = 0.6
MAX_ALIASES = 20
# A word cut short by a line end keeps at least this many letters ("Sel" for "Sellam").
MIN_CUT_WORD = 3
_AFFILIATION_MARK = re.compile(r"(?<=[A-Za-z])[α-ω]+\b")
# Kinds of mention resolved by similarity; the others (identifiers, labels, citations, headers,
# concepts) merge on their exact normalised name only.
FUZZY_KINDS = frozenset({"name", "term"})
# Types a more specific one replaces when two mentions of an entity disagree.
GENERIC_TYPES = frozenset({"name", "acronym", "term", "header", "concept"})


@dataclass
class Entity:
    names: Counter[str] = field(default_factory=Counter)  # surface form -> mentions
    entity_type: str = "name"
    kind: str = "name"
    description: str | None = None
    long_form: str | None = None  # for an acronym entity: its definition

    @property
    def name(self) -> str:
        if self.long_form and self.long_form in self.names:
            return self.long_form
        return max(self.names.items(), key=lambda item: item[1])[0]  # ties: the first seen

    @property
    def aliases(self) -> list[str]:
        name = self.name
        return [n for n, _ in self.names.most_common(MAX_ALIASES + 1) if n != name][:MAX_ALIASES]


@dataclass(frozen=True)
class ResolutionSettings:
    mode: str = "gradient"  # or "exact": exact-name merging only (the baseline)
    g: float = GRADIENT


class Resolver:
    """Entities of one document, resolved mention by mention (a union-find over entity slots)."""

    def __init__(self, settings: ResolutionSettings) -> None:
        self.settings = settings
        self.entities: list[Entity] = []
        self._parent: list[int] = []
        self._by_key: dict[str, int] = {}
        self._by_word: dict[str, set[int]] = {}  # a word form -> entity slots with a name using it
        self.merges = {"exact": 0, "gradient": 0, "alias": 0}
        self.merge_log: list[tuple[str, str, float]] = []  # (mention, entity, score) of merges

    def resolve(self, surface: str, entity_type: str, kind: str, alias: str | None = None) -> int:
        """The entity slot of this mention (call ``root`` for the final entity)."""
        slot = self._resolve_one(surface, entity_type, kind)
        if alias:
            other = self._resolve_one(alias, entity_type, kind)
            if self.settings.mode == "gradient":  # the exact-name baseline keeps them apart
                slot = self._union(slot, other)
                entity = self.entities[slot]
                entity.long_form = entity.long_form or max(surface, alias, key=len)
        return slot

    def root(self, slot: int) -> int:
        while self._parent[slot] != slot:
            self._parent[slot] = self._parent[self._parent[slot]]
            slot = self._parent[slot]
        return slot

    def roots(self) -> list[int]:
        return [s for s in range(len(self.entities)) if self._parent[s] == s]

    # -- one mention ----------------------------------------------------------------------------
    def _resolve_one(self, surface: str, entity_type: str, kind: str) -> int:
        key = _key(surface)
        if key in self._by_key:
            slot = self.root(self._by_key[key])
            self.merges["exact"] += 1
        else:
            slot = self._similar(surface, entity_type, kind)
            if slot is None:
                slot = self._new(entity_type, kind)
            else:
                self.merges["gradient"] += 1
            self._by_key[key] = slot
            if kind in FUZZY_KINDS:
                for form in _forms(surface):
                    self._by_word.setdefault(form, set()).add(slot)
        entity = self.entities[slot]
        entity.names[surface] += 1
        if entity.entity_type in GENERIC_TYPES and entity_type not in GENERIC_TYPES:
            entity.entity_type = entity_type
        return slot

    def _similar(self, surface: str, entity_type: str, kind: str) -> int | None:
        """The entity this new name is another way of writing, or None for a new entity: the
        gradient rule over the candidates that include it or that it includes."""
        if self.settings.mode != "gradient" or kind not in FUZZY_KINDS:
            return None
        ranked = sorted(
            (
                (score, slot)
                for slot in self._candidates(surface, entity_type)
                if (score := _best_score(surface, self.entities[slot].names)) > 0
            ),
            reverse=True,
        )
        if not ranked or (len(ranked) > 1 and ranked[1][0] >= self.settings.g * ranked[0][0]):
            return None  # no candidate, or several that nothing sets apart
        score, slot = ranked[0]
        self.merge_log.append((surface, self.entities[slot].name, score))
        return slot

    def _candidates(self, surface: str, entity_type: str) -> set[int]:
        """Entities sharing a word form with ``surface`` whose type does not rule it out (the
        name guards are applied by ``_best_score``)."""
        slots = {self.root(s) for form in _forms(surface) for s in self._by_word.get(form, ())}
        return {s for s in slots if _types_agree(entity_type, self.entities[s].entity_type)}

    def _new(self, entity_type: str, kind: str) -> int:
        slot = len(self.entities)
        self.entities.append(Entity(entity_type=entity_type, kind=kind))
        self._parent.append(slot)
        return slot

    def _union(self, a: int, b: int) -> int:
        a, b = self.root(a), self.root(b)
        if a == b:
            return a
        keep, gone = min(a, b), max(a, b)  # the entity seen first keeps its slot
        self._parent[gone] = keep
        kept, merged = self.entities[keep], self.entities[gone]
        kept.names.update(merged.names)
        if kept.entity_type in GENERIC_TYPES:
            kept.entity_type = merged.entity_type
        kept.long_form = kept.long_form or merged.long_form
        self.merges["alias"] += 1
        return keep


def _types_agree(first: str, second: str) -> bool:
    return first in GENERIC_TYPES or second in GENERIC_TYPES or first == second


def same_name(surface: str, name: str) -> bool:
    """Whether the new name ``surface`` can be ``name`` written another way: each of its words is
    one of ``name``'s, and no guard keeps them apart (numbers, initials, heads). Only a name as
    specific or less can join: "Liu" may be "Yinhan Liu", but "Yinhan Liu" is not every Liu."""
    words = _content_words(surface)
    return (
        bool(words)
        and _included(words, _content_words(name))
        and _marks(surface) == _marks(name)
        and _same_initials(surface, name)
        and _same_head(surface, name)
    )


def _included(shorter: tuple[str, ...], longer: tuple[str, ...]) -> bool:
    """Each word of ``shorter`` is a word of ``longer`` in some form; its last word may be the
    start of one, cut short by a line end."""
    forms = frozenset().union(*(words_of(word) for word in longer))
    for position, word in enumerate(shorter):
        if words_of(word) & forms:
            continue
        if not (position == len(shorter) - 1 and any(_cut_short(word, o) for o in longer)):
            return False
    return True


def _best_score(surface: str, names: Iterable[str]) -> float:
    """The cosine of character trigrams between ``surface`` and the nearest of ``names`` that
    ``same_name`` accepts (0 when none does)."""
    return max((_trigram_cosine(surface, n) for n in names if same_name(surface, n)), default=0.0)


def _trigram_cosine(a: str, b: str) -> float:
    first, second = _trigrams(a), _trigrams(b)
    shared = sum(count * second[gram] for gram, count in first.items() if gram in second)
    return shared / math.sqrt(_squared_norm(first) * _squared_norm(second))


@lru_cache(maxsize=8192)
def _trigrams(name: str) -> Counter[str]:
    """Character trigrams of the name as merged, word edges included."""
    key = f" {_key(name)} "
    return Counter(key[i : i + 3] for i in range(len(key) - 2))


def _squared_norm(grams: Counter[str]) -> float:
    return float(sum(count * count for count in grams.values())) or 1.0


def _key(surface: str) -> str:
    """The name as merged: ``normalise_name`` of it without its possessive ("Careem’s" is
    Careem)."""
    return normalise_name(strip_possessives(surface))


@lru_cache(maxsize=8192)
def _content_words(name: str) -> tuple[str, ...]:
    """The name's words that say what it is: no stopwords, no initials."""
    return tuple(w for w in raw_words(_unmarked(name)) if len(w) > 1 and w not in STOPWORDS)


def _unmarked(name: str) -> str:
    """The name without the Greek letters glued to a word's end, which mark an author's
    affiliation ("Zejiang Shenα")."""
    return _AFFILIATION_MARK.sub("", name)


@lru_cache(maxsize=8192)
def _forms(name: str) -> frozenset[str]:
    """Every form of the name's content words, for finding candidates."""
    return frozenset().union(*(words_of(word) for word in _content_words(name)))


def _same_head(a: str, b: str) -> bool:
    """Whether two names are about the same thing: their heads agree, or one is the other cut
    short by a line end ("Bhagavat", "Bhagavatula")."""
    first, second = _head(a), _head(b)
    return bool(words_of(first) & words_of(second)) or _cut_short(*sorted((first, second), key=len))


def _cut_short(word: str, whole: str) -> bool:
    """Whether ``word`` is ``whole`` cut short by a line end: its start, of at least
    ``MIN_CUT_WORD`` letters, two or more letters short ("Peter" is no cut "Peters")."""
    return len(word) >= MIN_CUT_WORD and len(whole) >= len(word) + 2 and whole.startswith(word)


def _head(name: str) -> str:
    """The word a name is about: its last word before the first stopword that follows one
    ("Annual Meeting of the ACL" is a meeting, "Borrower By" a borrower), initials left out."""
    head = ""
    for word in raw_words(_unmarked(name)):
        if word in STOPWORDS:
            if head:
                break
        elif len(word) > 1:
            head = word
    return head


def _marks(name: str) -> list[str]:
    """The numbers, Roman numerals and negations a name carries, in order (a lone I, V or X is
    read as an initial, as in "Quoc V Le"; "Non-Employee Director" is no Employee Director)."""
    return [m.lower() for m in re.findall(r"\d+|\b[IVX]{2,}\b|\b[Nn]on(?=-)", name)]


def _same_initials(a: str, b: str) -> bool:
    """Names that both carry initials must carry the same ones ("Dragomir R" is "Dragomir R
    Radev", "Paul S" is not "Paul N"); a name without initials may be either."""
    first, second = _initials(a), _initials(b)
    return not first or not second or first == second


def _initials(name: str) -> set[str]:
    return {token.upper() for token in re.findall(r"\b[^\W\d_]\b", strip_possessives(name))}
