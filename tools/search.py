"""``vector_search`` and ``hybrid_search``: retrieval over the search entries, results tied to rows.

Every hit carries table/column/primary key (the row in DuckDB), doc_id, and the evidence for the
question inside that row (``tools.evidence``): the page, its printed label, the bounding box of
the sentence or table row that answers, and an excerpt around it, so a client can cite the box.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr

from docsym.language.terms import STOPWORDS, search_words
from docsym.runtime.formats import has_page_images
from docsym.storage import ids
from docsym.storage.derived import of_documents
from docsym.storage.entries import views_sql
from docsym.storage.schema import POOLED, dense_columns, encodable_columns, table
from docsym.storage.store import EntryRow, Store
from docsym.tools.errors import ToolError
from docsym.tools.evidence import Evidence, Target, find_evidence, table_caption
from docsym.tools.filters import MAX_FILTER_CHARS, OPERATORS_HELP, parse_filter
from docsym.tools.fusion import Fusion, prepare
from docsym.tools.question import Question, read_question
from docsym.tools.results import (
    PAGE_LABEL_HELP,
    TRIM_MARK,
    ToolResult,
    caption_then_rows,
    growth_note,
    markdown_table,
    one_spaced,
    page_citation,
    trimmed,
    with_note,
)
from docsym.tools.spec import Arguments, Name, ToolSpec
from docsym.tools.threads import in_background

MAX_LIMIT = 100
HIT_TEXT_CHARS = 700  # a hit's text is trimmed; fetch the row with run_sql for all of it
RESULT_TEXT_CHARS = 16_000  # all hits together stay well under what MCP clients accept
CANDIDATES = 100
_PASSAGE_TABLES = ("chunks", "sections", "pages", "sentences")  # what read_passage reads
# The rows evidence stands in (``Evidence.within``) and the column a hit on them shows.
_HOLDERS = {"chunks": "text", "tables": "caption"}
# Rows that stand for their page (``tools.evidence``): a hit on one moves to the chunk or table
# on that page holding its evidence. A hit on any other row (a section or document title, an
# entity, a reference) keeps the text it was found by and cites the window.
_CONTAINERS = ("chunks", "pages")
MAX_RANKED = 4 * MAX_LIMIT  # hits ranked at most to find ``limit`` distinct ones
COPIES_LISTED = 10  # of the other rows holding a hit's text, those its ``also`` lists

# The views hybrid_search reads when none are given (see docs/ARCHITECTURE.md for why).
DEFAULT_VIEWS: tuple[tuple[str, str], ...] = (
    ("chunks", "text"),
    ("pages", "text"),
    ("sections", "title"),
    ("tables", "caption"),
    ("tables", "summary"),
    ("images", "caption"),
    ("documents", "title"),
)


class Place(BaseModel):
    """Another row where a hit's passage also stands."""

    table_name: str
    primary_key: str
    doc_id: str
    page_number: int | None = None


class SearchHit(BaseModel):
    rank: int
    score: float = Field(
        description="the score hits are ordered by, best first; hybrid_search lists each page's "
        "best hit before any page's further hits (marked 'again'), each group by score"
    )
    table_name: str
    column_name: str
    primary_key: str
    doc_id: str
    page_number: int | None
    page_label: str | None = Field(default=None, description=PAGE_LABEL_HELP)
    bbox: list[float] | None = Field(
        default=None,
        description="[x0, y0, x1, y1] PDF points of what answers: one sentence, two adjacent ones "
        "where the answer spans them, or one or two adjacent table rows; a figure's, equation's "
        "or table summary's own region",
    )
    cited: list[str] = Field(
        default_factory=list,
        description="ids of the one or two sentences (or table rows) the bbox covers",
    )
    text: str = Field(
        description="the cited sentences or table rows with their neighbours, or the row's text"
    )
    sources: list[str] = Field(default_factory=list, description="collections that found it")
    again: bool = Field(
        default=False,
        description="a further hit from a page a better hit came from: such hits follow every "
        "page's best hit",
    )
    also: list[Place] = Field(
        default_factory=list,
        description="other rows with the same text or citing the same box, folded into this hit",
    )
    copies: int = Field(
        default=0,
        description="how many other rows hold the text this hit was found by (a passage the "
        f"library holds more than once); the first {COPIES_LISTED} are listed in also",
    )
    read_with: str | None = Field(
        default=None, description="for a table hit: the tools that read the table or its cells"
    )
    _found: int | None = PrivateAttr(default=None)  # the entry id ranking found it by


class SearchResult(ToolResult):
    query: str
    mode: str
    hits: list[SearchHit]
    absent: list[str] = Field(
        default_factory=list,
        description="words of the query no document holds (stopwords aside): the hits match "
        "its other words, so an answer naming these is not in the index as written",
    )
    note: str | None = None

    def to_markdown(self) -> str:
        absent = _absent_line(self.absent)
        if not self.hits:  # the note says so, and what to try
            return "\n".join(n for n in (absent, self.note or "No hits.") if n)
        return "\n".join(n for n in (absent, with_note(hits_markdown(self.hits), self.note)) if n)


def _absent_line(words: list[str]) -> str:
    if not words:
        return ""
    named = ", ".join(f"'{w}'" for w in words)
    return f"No document holds {named} as written."


def _also_at(hit: SearchHit) -> str:
    places = ", ".join(f"{p.table_name}:{p.primary_key}" for p in hit.also)
    unlisted = hit.copies - COPIES_LISTED
    return f"{places} and {unlisted} more with the same text" if unlisted > 0 else places


def hits_markdown(hits: list[SearchHit]) -> str:
    """Hits as one markdown table, and under it the tools that read each table hit: how
    hybrid_search and run_plan's leaves show them."""
    rows = [
        [
            hit.rank,
            f"{hit.score:.4f}" + (" (again)" if hit.again else ""),
            f"{hit.table_name}.{hit.column_name}:{hit.primary_key}",
            hit.doc_id,
            page_citation(hit.page_number, hit.page_label),
            hit.bbox,
            trimmed(hit.text, 400),
            _also_at(hit),
        ]
        for hit in hits
    ]
    headers = ["#", "score", "view", "doc_id", "page", "bbox", "text", "also at"]
    tools = [f"- #{hit.rank}: {hit.read_with}" for hit in hits if hit.read_with]
    return "\n".join([markdown_table(headers, rows), *tools])


def vector_search(
    store: Store,
    query: str,
    collection: str = "minilm",
    table_name: str | None = None,
    column_name: str | None = None,
    filter: str = "",
    limit: int = 10,
) -> SearchResult:
    _check_query(query, limit)
    views = _views(table_name, column_name)
    collections = store.collections()
    if collection not in collections and store.awaiting_vectors():  # no vector written yet
        note = f"{growth_note(store)} Meanwhile use collection='bm25' or hybrid_search."
        return SearchResult(query=query, mode=collection, hits=[], note=note)
    if collection not in collections:
        raise ToolError(
            f"unknown collection {collection!r}; collections are: {', '.join(sorted(collections))}"
        )
    vector = None
    if not store.is_keyword(collection):
        views = _with_vectors(views, collection)
        vector = store.encoder_for(collection).encode_question(query)
    where, params = _where(views, filter)
    size = _text_budget(limit)

    def ranked(wanted: int) -> list[SearchHit]:
        if vector is None:
            found = store.fts(query, where, params, wanted, views=views)
        else:
            found = store.dense(collection, vector, where, params, wanted, views=views)
        entries = store.entries([i for i, _ in found])
        hits = [_hit(n, s, entries[i], [collection], size) for n, (i, s) in enumerate(found, 1)]
        # Equal scores (a section of one chunk has its chunk's vector) in the order of their
        # rows, not of entry ids, which each backend numbers its own way.
        return sorted(hits, key=lambda hit: (-hit.score, hit.table_name, hit.primary_key))

    question = read_question(store, query)
    hits = _first_distinct(ranked, store, question, limit, size)
    _list_copies(store, hits, where, params)
    return _result(store, query, collection, hits, _page_images(store))


def hybrid_search(
    store: Store,
    query: str,
    filter: str = "",
    limit: int = 10,
    views: list[str] | None = None,
    dense_collection: str = "minilm",
) -> SearchResult:
    """BM25 and dense candidates over the chosen views ('table.column'), fused and re-ranked
    (tools.fusion)."""
    _check_query(query, limit)
    chosen = parse_views(views) or list(DEFAULT_VIEWS)
    for t, c in chosen:
        _views(t, c)
    where, params = _where(chosen, filter)
    # BM25 in another thread, beside the question's encoding and the dense search.
    bm25 = in_background(store.fts, query, where, params, CANDIDATES, True, chosen)
    dense: list[tuple[int, float]] = []
    similarity: dict[int, float] = {}
    entries: dict[int, EntryRow] = {}
    if dense_collection in store.collections():
        vector = store.encoder_for(dense_collection).encode_question(query)
        dense = store.dense(dense_collection, vector, where, params, CANDIDATES, views=chosen)
        # BM25 usually takes longer: read the dense candidates for fusion meanwhile.
        entries = store.entries([i for i, _ in dense])
        prepare(entries.values())
        sparse = bm25.result()
        similarity = _similarity_of_the_rest(store, dense_collection, vector, sparse, dense)
    else:
        sparse = bm25.result()
    entries |= store.entries(list({i for i, _ in sparse} - set(entries)))
    dense = _as_found_by_keywords(dense, sparse, entries)
    question = read_question(store, query)
    size = _text_budget(limit)

    fusion = Fusion(question, sparse, dense, entries, similarity)

    def ranked(wanted: int) -> list[SearchHit]:
        fused = fusion.ranked(wanted)
        hits = [
            _hit(n, s, entries[i], found_by, size) for n, (i, s, found_by) in enumerate(fused, 1)
        ]
        _mark_again(hits)
        return hits

    hits = _first_distinct(ranked, store, question, limit, size)
    _list_copies(store, hits, where, params)
    return _result(store, query, "hybrid", hits, _page_images(store))


def _as_found_by_keywords(
    dense: list[tuple[int, float]], sparse: list[tuple[int, float]], entries: Mapping[int, EntryRow]
) -> list[tuple[int, float]]:
    """Each search returns one entry per text, but not always the same copy's: a text both
    found takes BM25's entry, so fusion scores it as one candidate found twice."""
    by_text = {entries[i].text_key: i for i, _ in sparse}
    return [(by_text.get(entries[i].text_key, i), score) for i, score in dense]


def _similarity_of_the_rest(
    store: Store, collection: str, vector, sparse: list, dense: list
) -> dict[int, float]:
    """The cosine of every BM25-only candidate, so fusion compares each candidate's real
    similarity instead of 0 for the ones outside the dense top list (dev set: recall@5
    0.92 -> 1.0)."""
    missing = sorted({i for i, _ in sparse} - {i for i, _ in dense})
    if not missing:
        return {}
    similarities = store.similarities(collection, vector, np.array(missing, dtype=np.int64))
    return {i: float(s) for i, s in zip(missing, similarities, strict=True)}


def parse_views(views: list[str] | None) -> list[tuple[str, str]]:
    """['table_summaries.text'] -> [('table_summaries', 'text')], with a helpful refusal."""
    if not views:
        return []
    parsed = []
    for view in views:
        table_name, dot, column_name = view.partition(".")
        if not dot or not table_name or not column_name:
            raise ToolError(f"view {view!r} must be 'table.column', e.g. 'table_summaries.text'")
        parsed.append((table_name, column_name))
    return parsed


def _text_budget(limit: int) -> int:
    return max(120, min(HIT_TEXT_CHARS, RESULT_TEXT_CHARS // limit))


def _result(
    store: Store, query: str, mode: str, hits: list[SearchHit], imaged: Mapping[str, bool]
) -> SearchResult:
    """The hits, the next step after the best one and what the index still lacks;
    ``imaged``: the documents whose pages view_page can show."""
    keyword = mode in store.collections() and store.is_keyword(mode)
    growing = growth_note(store, dense=not keyword)
    absent = store.absent_words([w for w in search_words(query) if w not in STOPWORDS])
    if not hits:  # what happened first, in one line
        note = " ".join(n for n in (_nothing_found(store, mode), growing) if n)
        return SearchResult(query=query, mode=mode, hits=hits, absent=absent, note=note)
    top = hits[0]
    key = table(top.table_name).primary_key
    row = f"run_sql(\"SELECT * FROM {top.table_name} WHERE {key} = '{top.primary_key}'\")"
    note = (
        f"Next: {row} for the whole row; {_where_to_read(top, imaged)}; a filter such as "
        "doc_id == '...' narrows the next search."
    )
    if growing:
        note = f"{growing}\n{note}"
    return SearchResult(query=query, mode=mode, hits=hits, absent=absent, note=note)


def _nothing_found(store: Store, mode: str) -> str:
    """An empty result in one line: why, and what to try."""
    (documents,) = store.sql().execute("SELECT count(*) FROM documents").fetchone()
    if not documents:
        return "No hits: the index holds no documents yet (docsym index PATH... adds them)."
    other = "" if mode == "hybrid" else ", or hybrid_search"
    return (
        f"No hits among {documents} document(s): try other or fewer words, a wider filter or "
        f"none{other}; list_documents shows what is indexed."
    )


def _where_to_read(hit: SearchHit, imaged: Mapping[str, bool]) -> str:
    """The tool that shows a hit in place: a table's own tools; its page where view_page can
    show it (a PDF's), else the passage around it or the document's outline (DOCX, HTML,
    Markdown, XLSX and PPTX have no page images: a sheet or slide is a page, but not a
    picture of one)."""
    if hit.read_with:  # a table: its own tools read it
        return hit.read_with
    if hit.page_number is not None and imaged.get(hit.doc_id, False):
        box = f", bounding_box={hit.bbox}" if hit.bbox else ""
        return f"view_page(doc_id='{hit.doc_id}', page_number={hit.page_number}{box}) to see it"
    table = _table_of(hit.primary_key)
    if table is not None:
        return f"get_table(table_id='{table}') for the whole table"
    if hit.table_name in _PASSAGE_TABLES:
        return f"read_passage(id='{hit.primary_key}', before=1, after=1) for the text around it"
    return f"get_outline(doc_id='{hit.doc_id}') for where it stands (this format has no pages)"


def _table_of(primary_key: str) -> str | None:
    """The table a table, cell or row/column summary id belongs to; None for other ids."""
    found = ids.parse(primary_key)
    if found is None:
        return None
    if found.kind.name == "table":
        return primary_key
    return found.parent if found.kind.parent == "table" else None


def _page_images(store: Store) -> dict[str, bool]:
    """doc_id -> whether view_page renders its pages (PDFs)."""
    return store.library("page-image-documents", _read_page_image_documents, False)


def _read_page_image_documents(store: Store, doc_ids: list[str] | None) -> dict[str, bool]:
    where, params = of_documents(doc_ids)
    rows = store.sql().execute(f"SELECT doc_id, format FROM documents WHERE {where}", params)
    return {doc_id: has_page_images(format_name) for doc_id, format_name in rows.fetchall()}


def _check_query(query: str, limit: int) -> None:
    if not query or not query.strip():
        raise ToolError("query is empty: give the words or question to search for")
    if len(query) > 2000:
        raise ToolError(f"query is {len(query)} characters; keep it under 2000")
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _views(table_name: str | None, column_name: str | None) -> list[tuple[str, str]]:
    allowed = encodable_columns()
    if table_name is None and column_name is None:
        return allowed
    chosen = [
        (t, c)
        for t, c in allowed
        if (table_name is None or t == table_name) and (column_name is None or c == column_name)
    ]
    if not chosen:
        listing = ", ".join(f"{t}.{c}" for t, c in allowed)
        raise ToolError(
            f"no encodable view {table_name or '*'}.{column_name or '*'}; the views are: {listing}"
        )
    return chosen


def _with_vectors(views: list[tuple[str, str]], collection: str) -> list[tuple[str, str]]:
    """The views that have vectors; a view searched by keyword only is refused with the view
    to use instead (a summary's pooled page or section: measured better, docs/RESULTS.md)."""
    dense = dense_columns()
    kept = [view for view in views if view in dense]
    if not kept:
        names = ", ".join(f"{t}.{c}" for t, c in views)
        instead = [f"{t}.{c}" for t, c in sorted(POOLED) if t == views[0][0]]
        better = f"vector_search on {instead[0]}, or " if instead else ""
        raise ToolError(
            f"{names} has no vectors in {collection!r} (it is searched by keyword only): use "
            f"{better}collection='bm25' for this view, or hybrid_search"
        )
    return kept


def _where(views: list[tuple[str, str]], filter_text: str) -> tuple[str, list]:
    view_sql, params = views_sql(views)
    condition, filter_params = parse_filter(filter_text).compile("e")
    return f"{view_sql} AND ({condition})", params + filter_params


def _trim(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size].rsplit(" ", 1)[0] + TRIM_MARK


def _hit(
    rank: int, score: float, entry: EntryRow, sources: list[str], size: int = HIT_TEXT_CHARS
) -> SearchHit:
    text = _trim(entry.text, size // 2 if entry.table_name == "tables" else size)
    hit = SearchHit(
        rank=rank,
        score=round(score, 6),
        table_name=entry.table_name,
        column_name=entry.column_name,
        primary_key=entry.primary_key,
        doc_id=entry.doc_id,
        page_number=entry.page_number,
        text=text,
        sources=sources,
    )
    hit._found = entry.id
    return hit


def _first_distinct(
    ranked: Callable[[int], list[SearchHit]],
    store: Store,
    question: Question,
    limit: int,
    size: int,
) -> list[SearchHit]:
    """The first ``limit`` distinct hits of a ranking (``_distinct_cited``), asking ``ranked``
    for twice as many as wanted, and for more only when repeats used up that room. Each hit's
    evidence is read once however often the ranking is asked again."""
    cite = _Citer(store, question, size)
    wanted = 2 * limit
    while True:
        hits = ranked(wanted)
        distinct = _distinct_cited(cite, hits, limit)
        if len(distinct) >= limit or len(hits) < wanted or wanted >= MAX_RANKED:
            return distinct
        wanted = min(2 * wanted, MAX_RANKED)


def _mark_again(hits: list[SearchHit]) -> None:
    """Mark the hits fusion ranked among the pages' further hits: each from a page that a
    better hit came from, all after every page's best."""
    seen: set[tuple[str, int]] = set()
    for hit in hits:
        if hit.page_number is not None:
            page = (hit.doc_id, hit.page_number)
            hit.again = page in seen
            seen.add(page)


def _distinct_cited(
    cite: Callable[[list[SearchHit]], list[SearchHit]], ranked: list[SearchHit], limit: int
) -> list[SearchHit]:
    """The first ``limit`` distinct hits, each cited (``cite``). A hit whose text, or whose
    cited box, an earlier hit already shows is folded into that hit's ``also``: a chunk, the
    next chunk and their page citing one sentence, or a passage a document repeats, are one
    place to read. A hit found by the same text as an earlier one is folded before it is cited:
    a library holding a paper many times over costs one citation for all its copies. Evidence
    is read for as many hits as are still missing, so a result without repeats costs no more."""
    kept: list[SearchHit] = []
    first_with: dict[tuple, SearchHit] = {}
    shown_in: dict[tuple, SearchHit] = {}  # the kept hit each found text went into
    repeats: list[tuple[SearchHit, tuple]] = []
    pending = iter(ranked)
    while len(kept) < limit:
        batch, found_by = _next_batch(pending, limit - len(kept), shown_in, repeats)
        if not batch:
            break
        for hit, found in zip(cite(batch), found_by, strict=True):
            keys = _sameness(hit)
            earlier = next((first_with[k] for k in keys if k in first_with), None)
            if earlier is not None:
                _fold(earlier, _place(hit))
                shown_in[found] = earlier
                continue
            first_with.update(dict.fromkeys(keys, hit))
            shown_in[found] = hit
            kept.append(hit)
    for repeat, found in repeats:
        _fold(shown_in[found], _place(repeat))
    for rank, hit in enumerate(kept, 1):
        hit.rank = rank
    return kept


def _next_batch(
    pending: Iterator[SearchHit],
    size: int,
    seen: Mapping[tuple, SearchHit],
    repeats: list[tuple[SearchHit, tuple]],
) -> tuple[list[SearchHit], list[tuple]]:
    """The next ``size`` hits found by a text no earlier hit was found by (``seen``), with
    those texts; the hits passed over go to ``repeats`` with the text they repeat."""
    batch: list[SearchHit] = []
    found_by: list[tuple] = []
    for hit in pending:
        found = (hit.table_name, hit.column_name, one_spaced(hit.text))
        if found in seen or found in found_by:
            repeats.append((hit, found))
        else:
            batch.append(hit)
            found_by.append(found)
        if len(batch) == size:
            break
    return batch, found_by


def _fold(kept: SearchHit, place: Place) -> None:
    """List the place among those the kept hit also stands (once; another column of the kept
    hit's own row is no other place)."""
    rows = {(kept.table_name, kept.primary_key)} | {
        (p.table_name, p.primary_key) for p in kept.also
    }
    if (place.table_name, place.primary_key) not in rows:
        kept.also.append(place)


def _place(row: SearchHit | EntryRow) -> Place:
    return Place(
        table_name=row.table_name,
        primary_key=row.primary_key,
        doc_id=row.doc_id,
        page_number=row.page_number,
    )


def _list_copies(store: Store, hits: list[SearchHit], where: str, params: list) -> None:
    """Fold into each hit the other rows holding the text it was found by. Searches return one
    entry per text (``Store.copies``), so the copies a library holds of a passage fill no
    ranking room: they are listed here, after it."""
    for hit in hits:
        if hit._found is None:
            continue
        rows, hit.copies = store.copies(hit._found, where, params, COPIES_LISTED)
        for row in rows:
            _fold(hit, _place(row))


def _sameness(hit: SearchHit) -> list[tuple]:
    """What makes two hits one: the same text shown, or the same sentences cited on one page."""
    keys: list[tuple] = [("text", one_spaced(hit.text))]
    if hit.cited:
        keys.append(("box", hit.doc_id, hit.page_number, tuple(hit.cited)))
    return keys


class _Citer:
    """Cites one search's hits by the sentence or table row that answers its question, and
    shows each where the hit's row holds it (``_move``); each row's evidence is read once."""

    def __init__(self, store: Store, question: Question, size: int) -> None:
        self.store, self.question, self.size = store, question, size
        self._read: dict[Target, Evidence] = {}

    def __call__(self, hits: list[SearchHit]) -> list[SearchHit]:
        targets = [
            Target(h.table_name, h.column_name, h.primary_key, h.doc_id, h.page_number)
            for h in hits
        ]
        unread = [t for t in dict.fromkeys(targets) if t not in self._read]
        if unread:
            found = find_evidence(self.store, self.question, unread, self.size)
            self._read.update(zip(unread, found, strict=True))
        for hit, target in zip(hits, targets, strict=True):
            _cite(self.store, hit, self._read[target], self.size)
        return hits


def _cite(store: Store, hit: SearchHit, evidence: Evidence, size: int) -> None:
    """Give the hit its evidence's box and page, and show the evidence where its row holds it."""
    hit.bbox = list(evidence.bbox) if evidence.bbox else evidence.bbox
    hit.cited = list(evidence.cited)
    hit.page_number = evidence.page_number
    hit.page_label = evidence.page_label
    elsewhere = evidence.within is not None and evidence.within != hit.primary_key
    if elsewhere and hit.table_name in _CONTAINERS:
        _move(store, hit, evidence.within, size)
    elif elsewhere:  # the box and cited ids say where the answer is printed
        if evidence.excerpt:
            _show_if_held(store, hit, evidence.excerpt)
        return
    if evidence.excerpt and hit.table_name == "tables" and hit.text:
        hit.text = _trim(caption_then_rows(hit.text, evidence.excerpt), size)
    elif evidence.excerpt:
        hit.text = evidence.excerpt
    hit.read_with = _table_tools(hit)


def _move(store: Store, hit: SearchHit, row_id: str, size: int) -> None:
    """Name the row that prints the hit's evidence instead of the row that was found (a chunk,
    page, section or document whose answer stands in another chunk or in a table): the id a
    hit shows always holds the text it shows."""
    kind = ids.parse(row_id)
    if kind is None or kind.kind.view not in _HOLDERS:
        raise ValueError(f"evidence within {row_id!r}, which is no chunk or table")
    hit.table_name = kind.kind.view
    hit.column_name = _HOLDERS[hit.table_name]
    hit.primary_key = row_id
    # A table hit shows its caption before the cited rows, as when the table itself was found.
    caption = table_caption(store, row_id) if hit.table_name == "tables" else None
    hit.text = _trim(caption, size // 2) if caption else ""


def _show_if_held(store: Store, hit: SearchHit, excerpt: str) -> None:
    """Show the excerpt on a hit that keeps its row (a section, a document, an entity, a
    reference) where one of the row's searchable columns holds it, the hit's own column first;
    else the hit keeps the text it was found by. A PDF section's text keeps its line-end
    hyphens, which its sentences drop, so it often does not."""
    view = table(hit.table_name)
    own = [c for t, c in encodable_columns() if t == hit.table_name]
    columns = sorted(own, key=lambda c: c != hit.column_name)
    sql = f"SELECT {', '.join(columns)} FROM {view.name} WHERE {view.primary_key} = ?"
    row = store.sql().execute(sql, [hit.primary_key]).fetchone() or ()
    wanted = one_spaced(excerpt.removesuffix(TRIM_MARK))
    for column, text in zip(columns, row, strict=False):
        if isinstance(text, str) and wanted in one_spaced(text):
            hit.column_name, hit.text = column, excerpt
            return


def _table_tools(hit: SearchHit) -> str | None:
    """For a table hit, the tools that read the table: all of it, or the cells of one value."""
    if hit.table_name != "tables":
        return None
    key = hit.primary_key
    return (
        f"get_table(table_id='{key}') for the whole table; lookup_cells(table_id='{key}', "
        "row_path_contains=[...], col_path_contains=[...]) for one value"
    )


# -- the tools as clients see them --------------------------------------------------------------
Query = Annotated[str, Field(description="Question or keywords.", max_length=2000)]
Filter = Annotated[
    str,
    Field(
        description="Filter expression (see the tool description); empty for none",
        max_length=MAX_FILTER_CHARS,
    ),
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Hits to return.")]


class VectorSearchArgs(Arguments):
    query: Query
    collection: Annotated[Name, Field(description="bm25 or minilm")] = "minilm"
    table_name: Annotated[Name | None, Field(description="Encodable view's table")] = None
    column_name: Annotated[Name | None, Field(description="Encodable view's column")] = None
    filter: Filter = ""
    limit: Limit = 10


class HybridSearchArgs(Arguments):
    query: Query
    filter: Filter = ""
    limit: Limit = 10
    views: Annotated[
        list[Name] | None,
        Field(description="'table.column' encodable views; default: the usual ones", max_length=20),
    ] = None


VECTOR_SEARCH = ToolSpec(
    name="vector_search",
    summary="one collection ('bm25' or 'minilm') over one encodable view.",
    description=(
        "Search ONE collection of search entries: 'bm25' (keywords, FTS5) or 'minilm' "
        "(semantic, all-MiniLM-L6-v2), optionally only one encodable view (table_name + "
        "column_name, e.g. chunks.text, tables.caption) and a filter such as "
        "doc_id == 'x' and page_number >= 3, or primary_key in ['a', 'b'] with keys found "
        "by run_sql. Each hit gives table/column/primary key, doc_id, page_number and bbox.\n"
        + OPERATORS_HELP
    ),
    arguments=VectorSearchArgs,
    function=vector_search,
    evidence=True,
)

HYBRID_SEARCH = ToolSpec(
    name="hybrid_search",
    summary="the best first search: BM25 + semantic, re-ranked; views picks others, e.g. "
    "['table_summaries.text'].",
    description=(
        "The best first search: BM25 and semantic candidates over chunks, pages, section "
        "titles, table captions/summaries, figure captions and titles, re-ranked into one "
        "list of rows. Same filter language as vector_search. views picks other encodable "
        "views, e.g. ['table_summaries.text'] to land on one row or column of a large table "
        "(HD-RAG's row/column summaries). Follow up with run_sql on the hit's table and "
        "primary key for the full row."
    ),
    arguments=HybridSearchArgs,
    function=hybrid_search,
    evidence=True,
)
