"""Gradient-based entity resolution (BookRAG, Algorithm 1), run as each mention arrives.

A mention whose normalised name (``indexer.entities.normalise_name``) is already known joins that
entity: that alone is *exact-name merging*, the baseline. Otherwise, for the kinds of names that
can be written in several ways (multi-word names and defined terms), the mention is scored against
the ``top_k`` most similar existing entities; embedding cosine similarity stands in for BookRAG's
reranker. Walking the sorted scores s1 >= s2 >= ..., the candidates are kept while each score stays
above ``g`` times the previous one; the first sharp drop (s_i < g * s_{i-1}) ends the kept set.

- a sharp drop after a few candidates means the mention is another name of those: it merges into
  the best of them (the kept set is at most ``max_kept`` long);
- no drop means nothing stands out from the crowd: a new entity.

Two guards keep embedding similarity from merging what a reranker would keep apart: the best score
must reach ``min_similarity`` (MiniLM cosines of unrelated short names are 0.2-0.6, a drop between
two of those is not evidence of identity), and names that carry different numbers (GPT-2, GPT-3)
never merge. Acronym definitions ("Dense Passage Retriever (DPR)") declare an alias pair: the two
entities become one, whichever was seen first. Aliases (other surface forms) are kept.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from docsym.language.names import normalise_name

GRADIENT = 0.6
TOP_K = 5
MIN_SIMILARITY = 0.8
MAX_KEPT = 3
MAX_ALIASES = 20
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
    top_k: int = TOP_K
    min_similarity: float = MIN_SIMILARITY
    max_kept: int = MAX_KEPT


class Resolver:
    """Entities of one document, resolved mention by mention (a union-find over entity slots)."""

    def __init__(
        self, vectors: dict[str, np.ndarray], dim: int, settings: ResolutionSettings
    ) -> None:
        self.settings = settings
        self.entities: list[Entity] = []
        self._parent: list[int] = []
        self._by_key: dict[str, int] = {}
        self._vectors = vectors
        self._matrix = np.zeros((64, dim), dtype=np.float32)
        self._rows: list[int] = []  # entity slot of each matrix row
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
        key = normalise_name(surface)
        if key in self._by_key:
            slot = self.root(self._by_key[key])
            self.merges["exact"] += 1
        else:
            slot = self._similar(surface, entity_type, kind)
            if slot is None:
                slot = self._new(surface, entity_type, kind)
            else:
                self.merges["gradient"] += 1
            self._by_key[key] = slot
        entity = self.entities[slot]
        entity.names[surface] += 1
        if entity.entity_type in GENERIC_TYPES and entity_type not in GENERIC_TYPES:
            entity.entity_type = entity_type
        return slot

    def _similar(self, surface: str, entity_type: str, kind: str) -> int | None:
        """BookRAG's gradient test over the top-k most similar entities, or None for a new one."""
        vector = self._vectors.get(surface)
        if self.settings.mode != "gradient" or kind not in FUZZY_KINDS or vector is None:
            return None
        if not self._rows:
            return None
        scores = self._matrix[: len(self._rows)] @ vector
        order = np.argsort(-scores)[: self.settings.top_k]
        ranked = [(float(scores[i]), self.root(self._rows[i])) for i in order]
        if ranked[0][0] < self.settings.min_similarity:
            return None
        kept = 1
        while kept < len(ranked) and ranked[kept][0] >= self.settings.g * ranked[kept - 1][0]:
            kept += 1
        sharp_drop = kept < len(ranked) or len(ranked) < self.settings.top_k
        if not sharp_drop or kept > self.settings.max_kept:
            return None
        for score, slot in ranked[:kept]:
            if self._compatible(surface, entity_type, self.entities[slot]):
                self.merge_log.append((surface, self.entities[slot].name, score))
                return slot
        return None

    @staticmethod
    def _compatible(surface: str, entity_type: str, entity: Entity) -> bool:
        if (
            entity_type not in GENERIC_TYPES
            and entity.entity_type not in GENERIC_TYPES
            and entity_type != entity.entity_type
        ):
            return False
        return _numbers(surface) == _numbers(entity.name)

    def _new(self, surface: str, entity_type: str, kind: str) -> int:
        slot = len(self.entities)
        self.entities.append(Entity(entity_type=entity_type, kind=kind))
        self._parent.append(slot)
        vector = self._vectors.get(surface)
        if vector is not None and kind in FUZZY_KINDS:
            if len(self._rows) == len(self._matrix):
                self._matrix = np.vstack([self._matrix, np.zeros_like(self._matrix)])
            self._matrix[len(self._rows)] = vector
            self._rows.append(slot)
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


def _numbers(name: str) -> list[str]:
    return re.findall(r"\d+", name)
