"""Entities found by name in SQL, across the library or in one document, with nothing held for
the whole library: the spellings a name could match are narrowed by the engine (a word of the
name inside the spelling; on DuckDB, Jaro-Winkler similarity) and decided here by the same
``normalise_name`` and rapidfuzz scorer the indexer and the tools always used.

Entities of different documents sharing a normalised name or alias are linked as they always
were: along each name's entities in the order the index stores them (a query without ORDER BY
returns them so: DuckDB keeps insertion order, and a segmented index's views have no rowid to
order by), each to the next of another document (``same_name_weights``), so a name in a
thousand papers makes two links an entity, not a thousand.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from docsym.language.names import normalise_name
from docsym.storage.store import Store
from docsym.tools.graph import ENTITY_COLUMNS, EntityInfo, entity_info, name_keys

FUZZY_MIN = 0.86  # Jaro-Winkler similarity of names for a fuzzy match
# The engine's Jaro-Winkler narrows the spellings a little below FUZZY_MIN: DuckDB's agreed with
# rapidfuzz's to 1e-16 on 51,800 name pairs, and the margin keeps a later version's rounding
# from dropping a spelling rapidfuzz would admit.
ENGINE_MARGIN = 0.02
SAME_NAME_WEIGHT = 1.0
_WORDS = re.compile(r"[a-z0-9]+")
_COLUMNS = [column.strip() for column in ENTITY_COLUMNS.split(",")]
_NAME, _ALIASES = _COLUMNS.index("name"), _COLUMNS.index("aliases")
# Spellings the engine scores by Jaro-Winkler, in its scan, aliases only where there are any
# (few entities have them): a correlated subquery per entity, or the aliases unnested into a
# semi join on entity_id, took longer. PostgreSQL has no Jaro-Winkler in core: every spelling of
# the scope reaches the scoring there.
_SIMILAR = {
    "duckdb": (
        "jaro_winkler_similarity(lower(name), ?) >= ? OR (array_length(aliases, 1) > 0 AND "
        "list_max(list_transform(aliases, lambda s: jaro_winkler_similarity(lower(s), ?))) >= ?)"
    ),
    "postgresql": "TRUE",
}


@dataclass(frozen=True)
class NameMatch:
    """An entity matched by its name or an alias: how, and how well."""

    info: EntityInfo
    score: float
    how: str  # exact, alias or fuzzy


@dataclass(frozen=True)
class LibraryRead:
    """The entities a name search read from the whole library, in stored order: every one whose
    name or an alias holds ``word``, and others spelt alike. A same-name chain of a key holding
    ``word`` is among them, so ``same_name_weights`` need not read them again."""

    word: str
    entities: list[EntityInfo]


@dataclass(frozen=True)
class NameSearch:
    matches: list[NameMatch]
    complete: bool  # the exact matches were enough: no fuzzy ones were looked for
    read: LibraryRead | None  # None for a search within one document


def match_names(
    store: Store, query: str, doc_id: str | None, enough: Callable[[list[NameMatch]], bool]
) -> NameSearch:
    """Entities whose normalised name or alias is the query's (exact, alias), then those spelt
    like it or whose name holds it (fuzzy), each group in the order the index stores them,
    unless the first group is ``enough`` (in a large library a common name's exact matches come
    with tens of thousands of names holding it)."""
    key = normalise_name(query)
    candidates = _candidates(store, key, doc_id)
    read = None if doc_id else LibraryRead(_longest_word(key), candidates)
    matches = [_named(info, key) for info in candidates if key in info.name_keys()]
    if enough(matches):
        return NameSearch(matches, True, read)
    named = {m.info.entity_id for m in matches}
    for info, similarity in _fuzzy(candidates, key):
        if info.entity_id not in named:
            matches.append(NameMatch(info, 0.9 * (similarity or FUZZY_MIN), "fuzzy"))
    return NameSearch(matches, False, read)


def _named(info: EntityInfo, key: str) -> NameMatch:
    if normalise_name(info.name) == key:
        return NameMatch(info, 1.0, "exact")
    return NameMatch(info, 0.98, "alias")


def _candidates(store: Store, key: str, doc_id: str | None) -> list[EntityInfo]:
    """The entities that could match ``key``: a name or alias holding its longest word (a
    spelling normalised to ``key`` holds each of its words), or spelt like it."""
    holds, params = _holding([_longest_word(key)])
    similar = _SIMILAR[store.dialect]
    if "?" in similar:
        lowest = FUZZY_MIN - ENGINE_MARGIN
        params += [key, lowest, key, lowest]
    in_doc = "doc_id = ? AND " if doc_id else ""
    sql = f"SELECT {ENTITY_COLUMNS} FROM entities WHERE {in_doc}({holds} OR {similar})"
    rows = store.sql().execute(sql, ([doc_id] if doc_id else []) + params).fetchall()
    return [entity_info(row) for row in rows]


def _fuzzy(candidates: list[EntityInfo], key: str) -> list[tuple[EntityInfo, float]]:
    """Entities whose name or an alias is spelt like ``key`` (Jaro-Winkler), or whose name
    contains it: (entity, best similarity). Every spelling is scored in one rapidfuzz call."""
    names = [info.name.lower() for info in candidates]
    spellings, owners = list(names), list(range(len(candidates)))
    for n, info in enumerate(candidates):
        for alias in info.aliases:
            spellings.append(alias.lower())
            owners.append(n)
    if not spellings:
        return []
    scores = process.cdist([key], spellings, scorer=JaroWinkler.similarity, dtype=np.float64)[0]
    best = np.zeros(len(candidates))
    np.maximum.at(best, np.array(owners), scores)
    return [
        (info, float(best[n]))
        for n, info in enumerate(candidates)
        if best[n] >= FUZZY_MIN or key in names[n]
    ]


def same_name_weights(
    store: Store, entities: list[EntityInfo], read: LibraryRead | None = None
) -> dict[str, dict[str, float]]:
    """entity id -> {entity of another document sharing a key: link weight}: along each key's
    entities in stored order, each is linked to the next when their documents differ. The
    chains of keys holding ``read``'s word are taken from it."""
    keys = {key for info in entities for key in info.name_keys()}
    chains = _chains(store, keys, read)
    weights: dict[str, dict[str, float]] = {info.entity_id: defaultdict(float) for info in entities}
    for info in entities:
        for key in info.name_keys():
            chain = chains.get(key, [])
            at = next(
                (n for n, other in enumerate(chain) if other.entity_id == info.entity_id), None
            )
            if at is None:
                continue
            for n in (at - 1, at + 1):
                if 0 <= n < len(chain) and chain[n].doc_id != info.doc_id:
                    weights[info.entity_id][chain[n].entity_id] += SAME_NAME_WEIGHT
    return {entity_id: dict(found) for entity_id, found in weights.items()}


def _chains(
    store: Store, keys: set[str], read: LibraryRead | None
) -> dict[str, list[EntityInfo]]:
    """key -> every entity of the library it names, in stored order: from ``read`` for the keys
    holding its word (every spelling normalised to a key holds the key's longest word), the
    others in one query."""
    chains: dict[str, list[EntityInfo]] = defaultdict(list)
    if read is not None:
        known = {key for key in keys if _longest_word(key) == read.word}
        for info in read.entities if known else ():
            for key in info.name_keys() & known:
                chains[key].append(info)
        keys = keys - known
    if not keys:
        return chains
    holds, params = _holding([_longest_word(key) for key in keys])
    rows = store.sql().execute(f"SELECT {ENTITY_COLUMNS} FROM entities WHERE {holds}", params)
    for row in rows.fetchall():
        # Keyed from the row first: most rows only hold the word (a library's "BERT" chain
        # comes with every "RoBERTa"), and need no EntityInfo.
        named = name_keys(row[_NAME], row[_ALIASES] or ()) & keys
        if named:
            info = entity_info(row)
            for key in named:
                chains[key].append(info)
    return chains


def _longest_word(key: str) -> str:
    """The key's longest run of ASCII letters and digits: every spelling normalised to the key
    holds it, lower-cased."""
    return max(_WORDS.findall(key), key=len, default="")


def _holding(words: list[str]) -> tuple[str, list]:
    """SQL: an entity's name or one of its aliases holds one of ``words`` (TRUE where one is
    empty: a key of no ASCII letter or digit is decided here, over every spelling)."""
    if not words or not all(words):
        return "TRUE", []
    in_names = " OR ".join("strpos(lower(name), ?) > 0" for _ in words)
    # Aliases joined into one string only where there are any: few entities have them.
    joined = "lower(array_to_string(aliases, ' '))"
    in_aliases = " OR ".join(f"strpos({joined}, ?) > 0" for _ in words)
    sql = f"({in_names}) OR (array_length(aliases, 1) > 0 AND ({in_aliases}))"
    return sql, [*words, *words]
