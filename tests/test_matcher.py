"""The passage matcher (tools.matcher): which window of a passage answers a question."""

from __future__ import annotations

from docsym.language.terms import words_of
from docsym.tools import matcher
from docsym.tools.matcher import Unit, best_window, unit
from docsym.tools.question import read_question, term_weights


def _units(*texts: str, group: str = "c0") -> list[Unit]:
    return [unit(f"u{n}", text, 1, [0, n, 1, n + 1], group) for n, text in enumerate(texts)]


def _weights(question: str, units: list[Unit]):
    terms = read_question(None, question).terms
    index = matcher.TermIndex(terms)
    return term_weights(terms, [index.met(u.words) for u in units])


def _keys(units: list[Unit], question: str, wants_number: bool, given=frozenset()) -> list[str]:
    window = best_window(units, _weights(question, units), wants_number, given)
    return [u.key for u in window.units]


def test_a_quantity_question_cites_the_window_that_states_a_number() -> None:
    units = _units(
        "The gauge was calibrated against the weir (Smith et al., 2019).",
        "Every day the log keeps the readings of the gauge.",
        "It held 4,096 of them on the first day.",
    )
    question = "How many readings of the gauge does the log keep per day?"
    # By words alone the second sentence is best; the number is in the one after it.
    assert _keys(units, question, False) == ["u1"]
    assert _keys(units, question, True) == ["u1", "u2"]  # not the citation's year in u0
    given = read_question(None, "Did it keep 4,096 readings?").numbers  # one the question states
    assert _keys(units, question, True, given) == ["u1"]


def test_a_citation_year_cut_from_its_parenthesis_is_no_quantity() -> None:
    # A column break split "(Ammar et al., 2017)" after its last line: "2017)." stands alone.
    assert matcher.stated_quantities("2017).") == frozenset()
    assert matcher.stated_quantities("Smith and Jones, 2019b) found 12 of them.") == {"12"}
    assert matcher.stated_quantities("It grew 2019 times.") == {"2019"}
    units = _units(
        "Figure 1: Part of the literature graph.",
        "2017).",
        "The resulting literature graph consists of more than 280M nodes.",
    )
    question = "How many nodes does the literature graph contain in total?"
    assert _keys(units, question, True) == ["u2"]


def test_a_quantity_question_reads_numbers_of_the_best_windows_first(monkeypatch) -> None:
    units = _units(
        "The log keeps the readings of the gauge every day, as the weir's log did.",
        "Each day the gauge log was kept.",
        "The gauge log held 4,096 readings each day.",
        "The gauge was read 12 times.",
    )
    question = "How many readings does the gauge log keep each day?"
    read: list[str] = []
    real = matcher.stated_quantities
    monkeypatch.setattr(matcher, "stated_quantities", lambda text: read.append(text) or real(text))
    # u0 holds the most words but no number; of the windows stating one, u2 holds the most.
    assert _keys(units, question, False) == ["u0"]
    assert read == []
    assert _keys(units, question, True) == ["u2"]
    assert "The gauge was read 12 times." not in read  # a window below u2 is never read


def test_a_window_says_what_it_holds() -> None:
    units = _units("The gauge log was kept.", "Nothing here.", "The log held 12 readings.")
    window = best_window(units, _weights("How many gauge log readings?", units), True)
    assert [u.key for u in window.units] == ["u2"] and window.numbered
    assert 0.0 < window.words < 1.0  # 'log' and 'readings', not 'gauge'
    nothing = best_window(units, _weights("Which weir?", units), False)
    assert [u.key for u in nothing.units] == ["u0"] and nothing.words == 0.0


def test_a_pair_never_crosses_its_group_or_page() -> None:
    units = _units("The gauge log", group="c0") + _units("held 12 readings.", group="c1")
    units[1] = Unit("v0", units[1].text, 1, None, "c1", units[1].words)
    window = best_window(units, _weights("gauge log readings", units), False)
    assert len(window.units) == 1


def _rows(caption: str, *cells: str) -> list[Unit]:
    """Table rows as citation reads them: each with its own cells' words and its caption's."""
    return [
        Unit(
            f"t0-r{n}",
            text,
            1,
            [0, n, 1, n + 1],
            "t0",
            words_of(text) | words_of(caption),
            words_of(text),
        )
        for n, text in enumerate(cells)
    ]


def test_rows_tied_on_their_caption_go_to_the_one_naming_the_term_itself() -> None:
    caption = "Usage of cards and papers during the field study"
    rows = _rows(caption, "Paper Opens | 77 | 48", "Card Opens | 62 | 96", "Days | 8 | 9")
    question = read_question(None, "How many cards did participants open in the field study?")
    index = matcher.TermIndex(question.terms)
    weights = term_weights(question.terms, [index.met(u.words) for u in rows])
    # Both rows hold every term, through the caption: by words alone the first would win.
    assert best_window(rows[:1], weights, True).words == best_window(rows[1:2], weights, True).words
    assert [u.key for u in best_window(rows, weights, True).units] == ["t0-r1"]


def test_a_term_naming_the_document_tells_no_two_rows_apart() -> None:
    caption = "Top-20 retrieval accuracy of DPR and other retrievers"
    rows = _rows(caption, "None | BM25 | 59.1", "Single | BM25 + DPR | 76.6")
    question = read_question(None, "What top-20 retrieval accuracy does BM25 reach in DPR?")
    index = matcher.TermIndex(question.terms)
    weights = term_weights(question.terms, [index.met(u.words) for u in rows])
    assert [u.key for u in best_window(rows, weights, True).units] == ["t0-r1"]
    # 'DPR' names the paper (its title): then both rows hold 'BM25' alone, and the earlier wins.
    naming = frozenset(t for t in question.terms if t.stem == "dpr")
    named = best_window(rows, weights, True, naming=naming)
    assert [u.key for u in named.units] == ["t0-r0"]


def test_a_row_naming_the_term_beats_a_header_row_paired_with_another() -> None:
    caption = "Total background checks by state and territory"
    rows = _rows(
        caption,
        "State / Territory | Permit | Handgun",
        "Alabama | 18,870 | 23,022",
        "Totals | 804,006 | 671,330",
    )
    question = read_question(
        None, "What was the total number of checks across all states and territories?"
    )
    index = matcher.TermIndex(question.terms)
    weights = term_weights(question.terms, [index.met(u.words) for u in rows])
    # Every row holds every term through the caption. The header row names two of them in its
    # own cells and the row below it states numbers: the single row 'Totals' goes first.
    assert [u.key for u in best_window(rows, weights, True).units] == ["t0-r2"]


def test_a_pair_is_cited_only_when_it_holds_clearly_more_than_one_unit() -> None:
    question = read_question(None, "gauge log weir basin drain valve pump meter dam sluice")
    weights = dict.fromkeys(question.terms, 1.0)
    # One sentence holds nine of the ten words: the tenth in the next does not buy a pair box.
    nine = _units("The gauge log of the weir basin drain valve pump meter dam.", "A sluice.")
    assert [u.key for u in best_window(nine, weights, False).units] == ["u0"]
    # Seven and three: the pair holds three sevenths more, and is the box.
    seven = _units("The gauge log of the weir basin drain valve pump.", "A meter dam sluice.")
    assert [u.key for u in best_window(seven, weights, False).units] == ["u0", "u1"]
    assert best_window(seven, weights, False).words == 1.0  # what it holds, not what it counts
