"""The passage matcher: which window of a passage answers a question, and how well.

A passage is a list of citable *units*: its sentences, or a table's rows read with their header
labels and caption. A *window* is one unit, or two adjacent units of one group (a chunk's
sentences, a table's rows) on one page. A window is worth the share of the question's term
weight it holds (terms as ``tools.question`` reads them: compounds matched by their parts or
run together, Greek letters by name, plurals by their singular; weights by ``term_weights``
over the units or passages in play). For a question asking for a quantity, the best window
that states a number the question does not state itself (not a citation's year, a footnote
mark or a label such as 'Table 3') beats any that does not. A pair, a box of two units, counts
``PAIR_SHARE`` of its words against a single unit's: one sentence that nearly holds the question
is the unit that answers it. Ties go to the hit's own units, the single unit, then to the table
row holding more of the question's terms in its own cells (every row of a table inherits its
caption and header labels, so rows tie on them: "Card Opens" is the row a question about opened
cards asks for, not "Paper Opens"; terms naming the document tell no two of its rows apart),
then the earlier window.

Citation (``tools.evidence``) picks its box with it; ranking (``tools.fusion``) still scores a
candidate's windows by stems (docs/RESULTS.md has what moving ranking onto it measured).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from docsym.language.numbers import stated_quantities
from docsym.language.terms import words_of
from docsym.tools.question import Term

# What a pair's share of the question's words counts against one unit's: a pair is cited over
# the best single unit only when it holds a ninth more (docs/RESULTS.md: 0.95, 0.9 and 0.85 each
# cited the answer more often than 1.0; 0.9 most).
PAIR_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class Unit:
    """A citable piece of a passage: a sentence or a table row, read once (words and numbers)."""

    key: str  # sentences.sentence_id, or '<table_id>-r<row>'
    text: str
    page_number: int | None
    bbox: list[float] | None
    group: str  # chunk_id or table_id: windows and context stay within it
    words: frozenset[str]  # of its text and, for a table row, its header labels and caption
    cells: frozenset[str] = frozenset()  # a table row's own words: its cells', none inherited

    @property
    def numbers(self) -> frozenset[str]:
        """Quantities it states (not citation years, footnotes, labels); read only for
        questions that ask for a quantity."""
        return stated_quantities(self.text)


def unit(key: str, text: str, page: int | None, bbox: list[float] | None, group: str) -> Unit:
    """A sentence (or any unit read by its own words)."""
    return Unit(key, text, page, bbox, group, words_of(text))


class TermIndex:
    """Which of a question's terms a unit's words meet, worked out once per distinct set of
    words: a page's units are scored for every hit on that page, and most meet no term."""

    def __init__(self, terms: Iterable[Term]) -> None:
        self.by_form: dict[str, list[Term]] = {}
        terms = list(terms)
        for term in terms:
            for form in term.forms:
                self.by_form.setdefault(form, []).append(term)
        self.forms = frozenset(self.by_form)
        self.compounds = [t for t in terms if t.parts]
        self._met: dict[frozenset[str], frozenset[Term]] = {}

    def met(self, words: frozenset[str]) -> frozenset[Term]:
        """The terms ``words`` meet (as ``Term.met_by`` says)."""
        found = self._met.get(words)
        if found is None:
            hits = {t for form in words & self.forms for t in self.by_form[form]}
            hits.update(t for t in self.compounds if t.parts <= words)
            found = self._met[words] = frozenset(hits)
        return found

    def held(self, units: Iterable[Unit]) -> frozenset[Term]:
        """The terms any of the units meets."""
        return frozenset().union(*(self.met(u.words) for u in units))


@dataclass(frozen=True, slots=True)
class Window:
    """The best window of a passage for a question."""

    units: list[Unit]
    words: float  # the share of the question's term weight it holds, 0 to 1
    numbered: bool  # it states a number the question asks for (a quantity question only)


def best_window(
    units: list[Unit] | tuple[Unit, ...],
    weights: dict[Term, float],
    wants_number: bool,
    given: frozenset[str] = frozenset(),
    index: TermIndex | None = None,
    own: str | None = None,
    naming: frozenset[Term] = frozenset(),
) -> Window:
    """The window of ``units`` holding most of the question's term weight; for a quantity
    question, the best of those that state a number (one not ``given`` in the question) when
    any does. Ties go to the hit's own units (those of group ``own``; all units when it is
    None), the single unit, table rows holding more of the terms in their own cells (``naming``
    terms aside), then the earlier window."""
    total = sum(weights.values()) or 1.0
    # The terms each unit meets, once; a pair meets their union, and a compound term whose
    # parts are split between the two units ('tableformer' here, 'large' there).
    index = index or TermIndex(weights)
    met = [index.met(u.words) & weights.keys() for u in units]
    # The terms a table row's own cells hold (none for a sentence), naming terms aside.
    countable = weights.keys() - naming
    in_cells = [index.met(u.cells) & countable for u in units]
    compounds = [t for t in weights if t.parts]

    def share(found: frozenset[Term]) -> float:
        return round(sum(w for t, w in weights.items() if t in found) / total, 9)

    def words_of_window(start: int, size: int) -> float:
        found = frozenset().union(*met[start : start + size])
        split = [t for t in compounds if t not in found] if size > 1 else []
        if split:
            words = frozenset().union(*(u.words for u in units[start : start + size]))
            found |= {t for t in split if t.met_by(words)}
        return share(found)

    # (rank, words, start, size), ranked by words (a pair's counted at PAIR_SHARE), own units,
    # size, terms in own cells, then order
    ranked: list[tuple[tuple[float, bool, int, float, int], float, int, int]] = []
    for n, current in enumerate(units):
        following = units[n + 1] if n + 1 < len(units) else None
        pair = (
            following is not None
            and following.group == current.group
            and following.page_number == current.page_number
        )
        for size in (1, 2) if pair else (1,):
            window = units[n : n + size]
            if not any(met[n : n + size]) and (size == 1 or not compounds):
                continue  # meets no term (most windows)
            in_hit = own is None or all(u.group == own for u in window)
            cells = share(frozenset().union(*in_cells[n : n + size]))
            words = words_of_window(n, size)
            counted = words * PAIR_SHARE if size == 2 else words
            ranked.append(((counted, in_hit, -size, cells, -n), words, n, size))
    if not ranked:
        return Window(list(units[:1]), 0.0, False)
    ranked.sort(key=lambda item: item[0], reverse=True)
    _, words, start, size = ranked[0]
    best = Window(list(units[start : start + size]), words, False)
    if not wants_number:
        return best
    # The best windows first: reading a unit's numbers costs more than its words.
    for _, words, start, size in ranked:
        window = units[start : start + size]
        if any(n not in given for u in window for n in u.numbers):
            return Window(list(window), words, True)
    return best
