"""Citable evidence: for a hit and a question, the sentence (or table row) that answers, with its
page, printed page label and bounding box, and an excerpt around it.

A hit names a row (a chunk, a page, a section, a table, ...). Its *scope* is the citable units
around it: for a chunk or a page, the sentences and table rows printed on that page (the
chunk's own first among equals: a chunk hit stands for its page, and the answer is often in the
next chunk or a table beside it); for a section, its sentences; for a table, its rows. A table
row is read with its header labels and its table's caption, which say what its numbers are.

The scope's best window of one or two units is chosen by ``tools.matcher``, with term weights
over the scope's units (terms that name the hit's document weigh less inside it: they say which
document, not where in it). The best window's box is what the client cites; the excerpt is that
window with context, more after it than before (setups precede answers), cut to a budget.

Rows that are regions themselves (figures, equations, table row/column summaries) keep their own
box. Formats without positions (DOCX, HTML, Markdown) get the excerpt and no box; they are cited
by section.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import groupby

from pydantic import BaseModel, Field

from docsym.language.terms import words_of
from docsym.storage.boxes import Box, union
from docsym.storage.ids import doc_id_of, table_row_id
from docsym.storage.schema import table
from docsym.storage.store import Store
from docsym.tools.matcher import TermIndex, Unit, best_window, unit
from docsym.tools.question import Question, Term, term_weights
from docsym.tools.results import PAGE_LABEL_HELP, TRIM_MARK, PageLabels, page_labels
from docsym.tools.threads import in_background

CONTEXT_BEFORE, CONTEXT_AFTER = 1, 2  # neighbours shown around the cited window
MAX_DOCUMENT_UNITS = 5000  # a document-level hit ranks at most this many sentences and rows
MAX_DOCUMENT_TABLES = 20  # ... the rows of at most its first this many tables
NAMED_WEIGHT = 0.2  # share of its weight a question word keeps when it names the document
ROW_SEP = " | "
# Views whose rows are a region of their own: the row's box is the citation.
_OWN_BOX = {"images", "equations", "table_summaries"}


class Evidence(BaseModel):
    """Where a hit's answer is printed."""

    page_number: int | None = None
    page_label: str | None = Field(default=None, description=PAGE_LABEL_HELP)
    bbox: list[float] | None = Field(
        default=None,
        description="[x0, y0, x1, y1] PDF points of the one or two cited sentences or rows",
    )
    cited: list[str] = Field(
        default_factory=list,
        description="sentence ids (or table row ids) the box covers, one or two",
    )
    excerpt: str | None = None
    within: str | None = Field(
        default=None,
        description="id of the row whose text holds the cited units and the excerpt: the chunk "
        "of the sentences, or the table of the rows",
    )


@dataclass(frozen=True)
class Target:
    """The row a hit names."""

    table_name: str
    column_name: str
    primary_key: str
    doc_id: str
    page_number: int | None


def find_evidence(
    store: Store,
    question: Question,
    targets: list[Target],
    budget: int = 700,
) -> list[Evidence]:
    """Evidence for each target, in order. ``budget`` bounds each excerpt (characters)."""
    con = store.sql()
    tables = _Tables(store)
    pages = _page_units(store, tables, {(t.doc_id, t.page_number) for t in targets if _on_page(t)})
    wanted_tables = {t.primary_key for t in targets if t.table_name == "tables"}
    for t in targets:
        if t.table_name == "documents":  # a document's evidence may be a row of its tables
            wanted_tables.update(tables.of_document(t.primary_key))
    rows = _rows_of(con, tables, wanted_tables)
    scopes = [_scope(con, t, pages, rows, tables) for t in targets]
    owns = [_own_group(t) for t in targets]
    index = TermIndex(list(question.terms))
    labels = page_labels(store)
    # A quantity question wants a number it does not state itself ("in 2021" is no answer).
    wants_number = question.asks_quantity
    out = []
    for target, scope, own in zip(targets, scopes, owns, strict=True):
        # Which words tell units apart is a question about this scope only.
        held = [index.met(u.words) for u in scope]
        naming = question.naming(target.doc_id)
        weights = _within(term_weights(question.terms, held), naming)
        window = (
            best_window(scope, weights, wants_number, question.numbers, index, own, naming).units
            if scope
            else []
        )
        out.append(_evidence(con, target, scope, window, labels, budget))
    return out


def _evidence(
    con,
    target: Target,
    scope: list[Unit],
    window: list[Unit],
    labels: PageLabels,
    budget: int,
) -> Evidence:
    if target.table_name in _OWN_BOX or not window:
        return _own_box(con, target, labels)
    page = window[0].page_number if window[0].page_number is not None else target.page_number
    return Evidence(
        page_number=page,
        page_label=labels.get((target.doc_id, page)) if page is not None else None,
        bbox=_box(union(u.bbox for u in window)),
        cited=[u.key for u in window],
        excerpt=_excerpt(scope, window, budget),
        within=window[0].group,  # windows and their context never leave one group
    )


def _excerpt(scope: list[Unit], window: list[Unit], budget: int) -> str:
    """The window with up to CONTEXT_BEFORE and CONTEXT_AFTER neighbours of its group, within
    ``budget`` characters (the window itself comes first; context is dropped before it is cut)."""
    group = [u for u in scope if u.group == window[0].group]
    at = next(i for i, u in enumerate(group) if u is window[0])
    text = " ".join(u.text for u in window)
    if len(text) > budget:
        return text[:budget].rsplit(" ", 1)[0] + TRIM_MARK
    after = group[at + len(window) : at + len(window) + CONTEXT_AFTER]
    before = group[max(0, at - CONTEXT_BEFORE) : at]
    for neighbour in after:
        if len(text) + len(neighbour.text) + 1 > budget:
            break
        text = f"{text} {neighbour.text}"
    for neighbour in reversed(before):
        if len(text) + len(neighbour.text) + 1 > budget:
            break
        text = f"{neighbour.text} {text}"
    return text


def _box(box: Box | None) -> list[float] | None:
    return None if box is None else list(box)


def _own_box(con, target: Target, labels: PageLabels) -> Evidence:
    """A region row (figure, equation, table summary) or a row with nothing finer inside."""
    view = table(target.table_name)
    bbox = None
    if "bbox" in {c.name for c in view.columns}:
        found = con.execute(
            f"SELECT bbox FROM {view.name} WHERE {view.primary_key} = ?", [target.primary_key]
        ).fetchone()
        bbox = found[0] if found else None
    page = target.page_number
    return Evidence(
        page_number=page,
        page_label=labels.get((target.doc_id, page)) if page is not None else None,
        bbox=bbox,
        cited=[target.primary_key] if bbox else [],
    )


# -- scopes ---------------------------------------------------------------------------------
_SENTENCES = "SELECT sentence_id, text, page_number, bbox, chunk_id, doc_id FROM sentences"
# Pages whose units are kept between queries: a page's units with their words take ~150 KB, and
# a server's memory must not grow with the library it reads (docs/RESULTS.md).
_PAGE_CACHE = 512


def _on_page(target: Target) -> bool:
    """Whether the target's scope is what is printed on its page."""
    return target.page_number is not None and target.table_name not in (
        "sections",
        "documents",
        "tables",
        *_OWN_BOX,
    )


def table_caption(store: Store, table_id: str) -> str | None:
    """A table's caption, from its document's table list the scopes read too."""
    info = _Tables(store).get(table_id)
    return info.caption if info else None


def _scope(
    con,
    target: Target,
    pages: dict[tuple[str, int], list[Unit]],
    table_rows: dict[str, list[Unit]],
    tables: _Tables,
) -> list[Unit]:
    """The citable units around the target's row, in document order."""
    name, key = target.table_name, target.primary_key
    if name == "sections":
        return _sentences(con, f"{_SENTENCES} WHERE section_id = ? ORDER BY ordinal", [key])
    if name == "documents":  # its sentences, then its tables' rows
        sentences = _sentences(
            con,
            f"{_SENTENCES} WHERE doc_id = ? ORDER BY ordinal LIMIT {MAX_DOCUMENT_UNITS}",
            [key],
        )
        rows = [row for table in tables.of_document(key) for row in table_rows.get(table, [])]
        return sentences + rows[: max(0, MAX_DOCUMENT_UNITS - len(sentences))]
    if name in _OWN_BOX:
        return []
    if name == "tables":  # a table's evidence is one of its rows: a table hit leads to the table
        return table_rows.get(key, [])
    if target.page_number is None:  # formats without pages: the row's own units
        if name == "chunks":
            return _sentences(con, f"{_SENTENCES} WHERE chunk_id = ? ORDER BY ordinal", [key])
        return []
    # chunks, pages, references, entities: what is printed on that page; a chunk's own units
    # first among equals
    return pages[(target.doc_id, target.page_number)]


def _rows_of(con, tables: _Tables, table_ids: set[str]) -> dict[str, list[Unit]]:
    """The rows of each wanted table, read in one query for all of them."""
    infos = [info for key in sorted(table_ids) if (info := tables.get(key)) is not None]
    found: dict[str, list[Unit]] = {}
    for info, row in _table_rows(con, infos) if infos else []:
        found.setdefault(info.table_id, []).append(row)
    return found


def _own_group(target: Target) -> str | None:
    """The group of the target's own units, which win ties within its scope: a chunk's
    sentences, a table's rows; None where the whole scope is the hit's own."""
    return target.primary_key if target.table_name in ("chunks", "tables") else None


@dataclass(frozen=True, slots=True)
class _Table:
    table_id: str
    doc_id: str
    page_number: int | None
    caption: str | None


@dataclass(frozen=True)
class _DocumentTables:
    """One document's tables: by id, and by page."""

    by_id: dict[str, _Table]
    on_page: dict[int, list[_Table]]


def _read_tables(store: Store, doc_id: str) -> _DocumentTables:
    sql = (
        "SELECT table_id, doc_id, page_number, caption FROM tables WHERE doc_id = ? "
        "ORDER BY ordinal"
    )
    rows = store.sql().execute(sql, [doc_id]).fetchall()
    by_id = {row[0]: _Table(*row) for row in rows}
    on_page: dict[int, list[_Table]] = {}
    for info in by_id.values():
        if info.page_number is not None:
            on_page.setdefault(info.page_number, []).append(info)
    return _DocumentTables(by_id, on_page)


class _Tables:
    """The tables' pages and captions of the documents a call meets, each document's kept while
    it is unchanged: a page's table rows are read by table id (a plain filter), and the many
    pages without a table cost no query at all."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def _of(self, doc_id: str) -> _DocumentTables:
        return self._store.per_document("evidence-tables", doc_id, _read_tables)

    def on_page(self, doc_id: str, page_number: int) -> list[_Table]:
        return self._of(doc_id).on_page.get(page_number, [])

    def of_document(self, doc_id: str) -> list[str]:
        """The document's first MAX_DOCUMENT_TABLES table ids, in its order."""
        return list(self._of(doc_id).by_id)[:MAX_DOCUMENT_TABLES]

    def get(self, table_id: str) -> _Table | None:
        doc_id = doc_id_of(table_id)
        return None if doc_id is None else self._of(doc_id).by_id.get(table_id)


class _PageUnits:
    """The units printed on recently used pages, by (doc_id, page_number, indexed_at): kept
    across publishes while their document is unchanged."""

    def __init__(self) -> None:
        self.pages: OrderedDict[tuple[str, int, object], list[Unit]] = OrderedDict()
        self.lock = threading.Lock()


def _page_units(
    store: Store, tables: _Tables, wanted: set[tuple[str, int]]
) -> dict[tuple[str, int], list[Unit]]:
    """Sentences and table rows of each wanted (doc_id, page), from the cache or in two
    queries for all the missing pages (one where none of them holds a table)."""
    cache = store.lasting("evidence-page-units", _PageUnits)
    versions = store.document_versions()
    keys = {k: (*k, versions.get(k[0])) for k in wanted}
    with cache.lock:
        found = {k: cache.pages[keys[k]] for k in wanted if keys[k] in cache.pages}
        for k in found:
            cache.pages.move_to_end(keys[k])
    missing = sorted(wanted - set(found))
    if missing:
        loaded: dict[tuple[str, int], list[Unit]] = {k: [] for k in missing}
        on_pages = [t for k in missing for t in tables.on_page(*k)]
        # The table rows are read in another thread on a cursor of their own: both queries
        # spend most of their time in the database engine, outside the GIL.
        rows = in_background(_table_rows, store.sql(), on_pages) if on_pages else None
        sentences = store.sql().execute(*_sentences_query(missing))
        for key, text, page, bbox, chunk, doc_id in sentences.fetchall():
            loaded[(doc_id, page)].append(unit(key, text, page, bbox, chunk))
        for info, item in rows.result() if rows else []:
            loaded[(info.doc_id, item.page_number)].append(item)
        with cache.lock:
            for k, units in loaded.items():
                cache.pages[keys[k]] = units
            while len(cache.pages) > _PAGE_CACHE:
                cache.pages.popitem(last=False)
        found.update(loaded)
    return found


def _sentences_query(pages: list[tuple[str, int]]) -> tuple[str, list]:
    """The statement reading the sentences of some (doc_id, page) pairs, with its parameters.
    DuckDB tests a comparison with one document inside its scan (at 6.7M sentences, ~4 ms);
    several documents, as a list it joins on, it also tests there, before it reads a row's text
    and box (~8 ms); the (document, page) pairs alone it tests after reading every row's. A
    written-out IN list of two documents it also tested after (at 6.6M sentences: 190-330 ms
    against 8-10 ms; from three, 7-13 ms either way)."""
    documents = sorted({doc_id for doc_id, _ in pages})
    if len(documents) == 1:
        numbers = ", ".join("?" * len(pages))
        where = f"doc_id = ? AND page_number IN ({numbers})"
        return f"{_SENTENCES} WHERE {where} ORDER BY ordinal", [*documents, *(p for _, p in pages)]
    pairs = " OR ".join("(doc_id = ? AND page_number = ?)" for _ in pages)
    where = f"doc_id = ANY(?::VARCHAR[]) AND ({pairs})"
    params = [documents, *(value for page in pages for value in page)]
    return f"{_SENTENCES} WHERE {where} ORDER BY ordinal", params


def _sentences(con, sql: str, params: list) -> list[Unit]:
    rows = con.execute(sql, params).fetchall()
    return [unit(key, text, page, bbox, chunk) for key, text, page, bbox, chunk, _ in rows]


def _table_rows(con, tables: list[_Table]) -> list[tuple[_Table, Unit]]:
    """(table, unit) for each grid row of the tables, in their order: its cells' texts and their
    box, read with the header labels of its cells and the table's caption."""
    # A cell's header path comes as one string per axis (only its words are read), and the
    # words of each distinct string are read once: a column's path and the caption are shared
    # by every row. Lists of strings are the slowest values to fetch.
    marks = ", ".join("?" * len(tables))
    cells = con.execute(
        f"""
        SELECT table_id, row, text, bbox, coalesce(array_to_string(row_path, ' '), ''),
               coalesce(array_to_string(col_path, ' '), '')
        FROM table_cells WHERE table_id IN ({marks}) AND text <> ''
        ORDER BY table_id, row, col
        """,
        [t.table_id for t in tables],
    ).fetchall()
    rows: dict[str, list[Unit]] = {}
    captions = {t.table_id: words_of(t.caption or "") for t in tables}
    pages = {t.table_id: t.page_number for t in tables}
    for (table_id, row), group in groupby(cells, key=lambda cell: (cell[0], cell[1])):
        group = list(group)
        box = union(cell[3] for cell in group)
        text = ROW_SEP.join(cell[2] for cell in group)
        labels = {path for cell in group for path in cell[4:6]}
        in_cells = words_of(text)
        words = in_cells.union(captions[table_id], *map(words_of, labels))
        bbox = list(box) if box else None
        key = table_row_id(table_id, row)
        found = Unit(key, text, pages[table_id], bbox, table_id, words, in_cells)
        rows.setdefault(table_id, []).append(found)
    return [(t, u) for t in tables for u in rows.get(t.table_id, [])]


# -- terms, weights and labels ----------------------------------------------------------------
def _within(weights: dict[Term, float], naming: frozenset[Term]) -> dict[Term, float]:
    """Weights for finding the answer inside one document: the terms that name the document
    ("Uber", "NICS firearm checks") say which document, not where in it."""
    return {t: w * NAMED_WEIGHT if t in naming else w for t, w in weights.items()}
