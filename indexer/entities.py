"""Entity mentions and explicit relations in a sentence, found deterministically (no LLM).

What counts as an entity mention, in the order the rules are tried:

1. **Acronym definitions** (Schwartz & Hearst, 2003): ``long form (SF)`` where the short form is
   one token of 2-10 characters with a capital letter, and the long form is the shortest run of
   the preceding words whose letters spell the short form in order, the first letter starting a
   word. "Dense Passage Retriever (DPR)" yields both names as one entity (an alias pair).
2. **Identifiers**: tokens that cannot be ordinary words: two or more capitals (BM25, TREC,
   SciDocs), letters mixed with digits (GPT-3, F1, ResNet-50), inner capitals (PyMuPDF).
   Roman numerals and all-capitals headings are skipped.
3. **Capitalised names**: two or more capitalised words, possibly joined by "of", "for", "and",
   "the", "de", "on", "in" ("Natural Questions", "Bank of England"), with leading function
   words dropped ("The", "Our"). A single capitalised word counts only in mid-sentence and only
   when the document writes it capitalised most of the time (``ProperNouns``): "Wikipedia",
   "Uber", not "Results".
4. **Defined terms**: a quoted phrase of one to five words right after "called", "termed",
   "named", "dubbed", "known as", "refer to ... as", "denote ... as", "define ... as".
5. **Labels**: "Table 3", "Figure 2", "Fig. 2" mentions, which link text to table and figure
   entities.
6. **Citations**: author-year citations "(Devlin et al., 2019)", "Lee and Chang (2020)" and
   numbered ones "[12]", "[3, 7]".

Types come from the mention itself or its neighbouring words: an organisation word inside the name
(University, Inc., Agency ...), a head noun right after it ("the SQuAD dataset", "the BM25 model",
"F1 score"), a document author's name (person); otherwise ``name`` (or ``acronym``).

Explicit relations parsed from the sentence: ``is_a`` ("X is a Y" and "X, a Y,"), ``cites`` (the
entity right before a citation). Co-occurrence relations are added by ``indexer.graph``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from docsym.language.terms import surface_words

CONNECTORS = frozenset({"of", "for", "the", "de", "on", "in"})
LEADING_FUNCTION_WORDS = frozenset(
    """a an the our their its this these those that we in on at for of by to from with as and
    or but if when while where which who what how all each every some any no both such another
    other many most more first second third one two three four five table figure fig section
    appendix equation eq chapter part note see also however moreover furthermore thus therefore
    hence here there then after before during since although though because unlike like""".split()  # noqa: SIM905
)
CALENDAR_WORDS = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()  # noqa: SIM905
)
ORGANISATION_WORDS = frozenset(
    """university institute institution inc inc. corp corp. corporation company co. ltd ltd.
    llc plc laboratory laboratories lab labs foundation association agency department ministry
    council bureau commission committee school college center centre group bank office
    organization organisation society academy board""".split()  # noqa: SIM905
)
HEAD_NOUN_TYPES = {
    "dataset": "dataset", "datasets": "dataset", "corpus": "dataset", "corpora": "dataset",
    "benchmark": "dataset", "benchmarks": "dataset", "collection": "dataset",
    "score": "metric", "scores": "metric", "metric": "metric", "metrics": "metric",
    "accuracy": "metric", "measure": "metric",
    "model": "method", "models": "method", "method": "method", "methods": "method",
    "algorithm": "method", "approach": "method", "architecture": "method", "network": "method",
    "encoder": "method", "encoders": "method", "retriever": "method", "system": "method",
    "framework": "method", "technique": "method", "baseline": "method", "baselines": "method",
    "package": "software", "library": "software", "tool": "software", "toolkit": "software",
    "language": "software", "api": "software", "function": "software", "macro": "software",
    "command": "software",
}  # fmt: skip
ROMAN = re.compile(r"^(?=[MDCLXVI])M*(C[MD]|D?C{0,3})(X[CL]|L?X{0,3})(I[XV]|V?I{0,3})$")

_CAPITALISED = re.compile(r"^[A-Z][\w'’-]*$")
_IDENTIFIER = re.compile(
    r"^(?:[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*|[A-Za-z]+[-.]?\d+[A-Za-z0-9]*|"
    r"[a-z]+[A-Z][A-Za-z0-9]*|\d+[A-Za-z]+[A-Za-z0-9]*)(?:[-.+][A-Za-z0-9]+)*\+?$"
)
_SHORT_FORM = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-&./+]{1,9})\s*\)")
_LABEL = re.compile(r"\b(Table|Tab\.|Figure|Fig\.)\s*(\d+|[A-Z]\.?\d+)\b")
_AUTHOR_YEAR = re.compile(
    r"\b([A-Z][A-Za-z'’-]+(?:\s+(?:et\s+al\.|and\s+[A-Z][A-Za-z'’-]+|&\s+[A-Z][A-Za-z'’-]+))?)"
    r"(?:,\s*|\s+\(\s*)((?:19|20)\d\d)[a-z]?\b"
)
_NUMBERED = re.compile(r"\[(\d{1,3}(?:\s*[,–-]\s*\d{1,3})*)\]")
_DEFINED = re.compile(
    r"\b(?:(?:call(?:ed)?|term(?:ed)?|name[ds]?|dub(?:bed)?) (?:\w+ ){0,2}|known as|"
    r"refer(?:red)? to (?:\w+ ){0,3}as|"
    r"denoted? (?:\w+ ){0,3}as|defined? (?:\w+ ){0,3}as)\s*[\"“‘']([^\"”’']{2,60})[\"”’']"
)
_IS_A = re.compile(
    r"^\s*(?:,\s*|\s+is\s+|\s+was\s+|\s+are\s+)(?:a|an)\s+((?:[\w-]+\s+){0,5}?[\w-]+)"
    r"(?=\s*(?:[,.;:()]|\s+(?:that|which|who|for|to|with|in|on|by|from|and|of|where)\b|$))"
)


@dataclass(frozen=True)
class Mention:
    """One entity mention in a sentence. ``start``/``end`` are character offsets in it."""

    name: str
    kind: str  # acronym, name, term, label, citation (how it was found)
    entity_type: str  # method, dataset, metric, organisation, person, software, table, ...
    start: int
    end: int
    alias: str | None = None  # the acronym of a long form defined with it, and vice versa


@dataclass(frozen=True)
class ExplicitRelation:
    source: Mention
    target_name: str
    relation: str  # is_a or cites
    target_type: str


class ProperNouns:
    """Which single words the document writes capitalised in mid-sentence most of the time,
    and which it writes in lower case often (so 'CREDIT' in a capitals heading is no acronym)."""

    def __init__(self, sentences: Iterable[str]) -> None:
        upper: Counter[str] = Counter()
        lower: Counter[str] = Counter()
        for sentence in sentences:
            for n, match in enumerate(surface_words(sentence)):
                word = match.group()
                if n == 0 or not word[0].isalpha():
                    continue
                if word[0].isupper() and word[1:].islower():
                    upper[word] += 1
                elif word.islower():
                    lower[word] += 1
        self._common = {w for w, n in lower.items() if n >= 2}
        self._proper = {
            w
            for w, n in upper.items()
            if n >= 2 and n >= 4 * lower[w.lower()] and w.lower() not in LEADING_FUNCTION_WORDS
        }

    def __contains__(self, word: str) -> bool:
        return word in self._proper

    def is_common_word(self, word: str) -> bool:
        return word.lower() in self._common or word.lower() in LEADING_FUNCTION_WORDS


def extract_mentions(
    sentence: str, proper: ProperNouns, authors: frozenset[str] = frozenset()
) -> list[Mention]:
    """The entity mentions of one sentence, left to right, not overlapping."""
    if _mostly_capitals(sentence):
        return []
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(mention: Mention) -> None:
        span = (mention.start, mention.end)
        if mention.kind == "citation" and span in taken:  # "[3, 7]": one span, two citations
            found.append(mention)
            return
        if any(mention.start < e and s < mention.end for s, e in taken):
            return
        found.append(mention)
        taken.append(span)

    for mention in _acronym_definitions(sentence):
        add(mention)
    for mention in _citations(sentence):
        add(mention)
    for mention in _labels(sentence):
        add(mention)
    for mention in _defined_terms(sentence):
        add(mention)
    for mention in _names(sentence, proper, authors):
        add(mention)
    found.sort(key=lambda m: m.start)
    return found


def explicit_relations(sentence: str, mentions: list[Mention]) -> list[ExplicitRelation]:
    """``X is a Y`` / ``X, a Y,`` and ``X (citation)`` relations among a sentence's mentions."""
    relations: list[ExplicitRelation] = []
    for n, mention in enumerate(mentions):
        if mention.kind in ("citation", "label"):
            continue
        rest = sentence[mention.end :]
        nxt = mentions[n + 1] if n + 1 < len(mentions) else None
        if nxt is not None and nxt.kind == "citation" and nxt.start - mention.end <= 3:
            relations.append(ExplicitRelation(mention, nxt.name, "cites", "citation"))
        match = _IS_A.match(rest)
        if match:
            concept = _strip_leading(match.group(1).split())
            if concept and len(concept) <= 5 and not any(w[0].isdigit() for w in concept):
                relations.append(ExplicitRelation(mention, " ".join(concept), "is_a", "concept"))
    return relations


# -- rules -----------------------------------------------------------------------------------


def _mostly_capitals(sentence: str) -> bool:
    """An all-capitals heading line ('6 STUDY 2: FIELD DEPLOYMENT') names nothing new."""
    words = re.findall(r"[A-Za-z]{3,}", sentence)
    return len(words) >= 2 and sum(w.isupper() for w in words) >= 0.6 * len(words)


def _acronym_definitions(sentence: str) -> Iterable[Mention]:
    for match in _SHORT_FORM.finditer(sentence):
        short = match.group(1).rstrip(".")
        if not any(c.isupper() for c in short) or ROMAN.match(short) or short.isdigit():
            continue
        before = sentence[: match.start()]
        words = list(re.finditer(r"[A-Za-z0-9][\w-]*", before))
        window = words[-min(len(short) + 5, 2 * len(short)) :]
        long_start = _long_form_start(short, before, window)
        if long_start is None:
            continue
        spans = [m for m in re.finditer(r"\S+", before[long_start:])]
        while spans and spans[0].group().lower() in LEADING_FUNCTION_WORDS:
            spans = spans[1:]
        if len(spans) < 2 and not (spans and "-" in spans[0].group()):
            continue
        start = long_start + spans[0].start()
        long_form = " ".join(m.group() for m in spans)
        entity_type = _type_of(long_form, sentence[match.end() :], sentence[:start])
        end = long_start + spans[-1].end()
        yield Mention(long_form, "acronym", entity_type, start, end, short)
        yield Mention(
            short, "acronym", entity_type, match.start(1), match.start(1) + len(short), long_form
        )


def _long_form_start(short: str, before: str, window: list[re.Match]) -> int | None:
    """Schwartz & Hearst: match the short form's letters right to left inside the window."""
    if not window:
        return None
    text = before[window[0].start() :].rstrip()
    letters = [c.lower() for c in short if c.isalnum()]
    s_index, l_index = len(letters) - 1, len(text) - 1
    while s_index >= 0:
        c = letters[s_index]
        while l_index >= 0 and (
            text[l_index].lower() != c
            or (s_index == 0 and l_index > 0 and text[l_index - 1].isalnum())
        ):
            l_index -= 1
        if l_index < 0:
            return None
        s_index -= 1
        l_index -= 1
    first_word = text.rfind(" ", 0, l_index + 2) + 1
    if not text[first_word:].strip() or not text[first_word].isalpha():
        return None
    return window[0].start() + first_word


def _citations(sentence: str) -> Iterable[Mention]:
    for match in _AUTHOR_YEAR.finditer(sentence):
        author = re.sub(r"\s+", " ", match.group(1))
        if author.split()[0].lower() in LEADING_FUNCTION_WORDS:
            continue
        name = f"{author} {match.group(2)}"
        yield Mention(name, "citation", "citation", match.start(), match.end())
    for match in _NUMBERED.finditer(sentence):
        for number in _expand_numbers(match.group(1)):
            yield Mention(f"[{number}]", "citation", "citation", match.start(), match.end())


def _expand_numbers(listing: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*,\s*", listing):
        bounds = re.split(r"\s*[–-]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            low, high = int(bounds[0]), int(bounds[1])
            numbers.extend(range(low, min(high, low + 20) + 1))
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


def _labels(sentence: str) -> Iterable[Mention]:
    for match in _LABEL.finditer(sentence):
        kind = "table" if match.group(1).lower().startswith("tab") else "figure"
        name = f"{kind.capitalize()} {match.group(2)}"
        yield Mention(name, "label", kind, match.start(), match.end())


def _defined_terms(sentence: str) -> Iterable[Mention]:
    for match in _DEFINED.finditer(sentence):
        term = match.group(1).strip()
        if 1 <= len(term.split()) <= 5:
            yield Mention(term, "term", "term", match.start(1), match.end(1))


def _names(sentence: str, proper: ProperNouns, authors: frozenset[str]) -> Iterable[Mention]:
    words = list(surface_words(sentence))
    n = 0
    while n < len(words):
        word = words[n].group()
        if _is_identifier(word) and not (word.isalpha() and proper.is_common_word(word)):
            after = sentence[words[n].end() :]
            yield Mention(
                word.rstrip("."),
                "acronym",
                _type_of(word, after, sentence[: words[n].start()], "acronym"),
                words[n].start(),
                words[n].start() + len(word.rstrip(".")),
            )
            n += 1
            continue
        run_end = _capitalised_run(words, n)
        if run_end > n:
            yield from _name_from_run(sentence, words, n, run_end, proper, authors)
            n = run_end
            continue
        n += 1


def _is_identifier(word: str) -> bool:
    core = word.rstrip(".")
    if len(core) < 2 or ROMAN.match(core) or core.isdigit():
        return False
    if re.fullmatch(r"\d+(?:\.\d+)?(?:[a-z]{1,3}|%)", core):  # 10ms, 3rd, 2nd, 5x
        return False
    return bool(_IDENTIFIER.match(core)) and any(c.isalpha() for c in core)


def _capitalised_run(words: list[re.Match], start: int) -> int:
    """End (exclusive) of the run of capitalised words (with inner connectors) from ``start``."""
    end = start
    n = start
    while n < len(words):
        word = words[n].group()
        if _CAPITALISED.match(word) and not _is_identifier(word):
            end = n + 1
            n += 1
        elif word.lower() in CONNECTORS and end > start and n + 1 < len(words):
            n += 1
        else:
            break
        if n > start and n < len(words) and _gap(words, n - 1, n):
            break
    return end


def _gap(words: list[re.Match], left: int, right: int) -> bool:
    """Punctuation between two words ends a name: 'Paris, France' is two names."""
    between = words[left].string[words[left].end() : words[right].start()]
    return bool(between.strip())


def _name_from_run(
    sentence: str,
    words: list[re.Match],
    start: int,
    end: int,
    proper: ProperNouns,
    authors: frozenset[str],
) -> Iterable[Mention]:
    run = [w.group() for w in words[start:end]]
    first = start
    while run and run[0].lower() in LEADING_FUNCTION_WORDS:
        run, first = run[1:], first + 1
    while run and run[-1].lower() in CONNECTORS:
        run = run[:-1]
    if not run:
        return
    if len(run) == 1 and (first == 0 or run[0] not in proper or run[0].lower() in CALENDAR_WORDS):
        return
    if first == 0 and len(run) == 2 and run[1] not in proper and run[0] not in proper:
        return  # "Results show" at the start of a sentence is not a name
    begin = words[first].start()
    finish = words[first + len(run) - 1].end()
    name = sentence[begin:finish]
    if name in authors or any(name == a.split()[-1] for a in authors if len(name) > 3):
        entity_type = "person"
    else:
        entity_type = _type_of(name, sentence[finish:], sentence[:begin])
    yield Mention(name, "name", entity_type, begin, finish)


def _type_of(name: str, after: str, before: str, default: str = "name") -> str:
    lowered = name.lower().split()
    if any(w.strip(".,") in ORGANISATION_WORDS for w in lowered):
        return "organisation"
    head = re.match(r"\s*([A-Za-z]+)", after)
    if head and head.group(1).lower() in HEAD_NOUN_TYPES:
        return HEAD_NOUN_TYPES[head.group(1).lower()]
    if lowered and lowered[-1] in HEAD_NOUN_TYPES:
        return HEAD_NOUN_TYPES[lowered[-1]]
    return default


def _strip_leading(words: list[str]) -> list[str]:
    while words and words[0].lower() in LEADING_FUNCTION_WORDS:
        words = words[1:]
    return words
