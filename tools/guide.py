"""What clients read before they act: the full schema ("task prompt" of NeuSym-RAG), the
retrieval agent prompt and the RECAP prompt for table questions. Built from the same sources of
truth the tools use (the schema module, the filter language, the collections in the store)."""

from __future__ import annotations

from storage import schema
from storage.store import Store
from tools.filters import OPERATORS_HELP
from tools.search import DEFAULT_VIEWS

TOOLS_OVERVIEW = """\
Tools (all read-only):
- list_documents: what is indexed (doc_id, title, pages).
- run_sql(sql, limit): one DuckDB SELECT over the views below; exact facts, counts, table cells by
  header path (list_contains(col_path, 'X')), sections by number, ids for other tools.
- hybrid_search(query, filter, limit): the best first search; BM25 + semantic candidates over
  chunks, pages, section titles, table captions/summaries, figure captions and titles, re-ranked.
- vector_search(query, collection, table_name, column_name, filter, limit): one collection
  ('bm25' or 'minilm') over one encodable view, e.g. tables.summary or sections.title.
- get_outline(doc_id, depth): the section tree; select_subtree(doc_id, section, node_types,
  pages): the nodes under a section, by type and page range, with counts (how many tables...).
- find_entities(query, doc_id): entities (methods, datasets, acronyms, tables, headers ...) by
  name or alias, with the sections they are linked to.
- rank_nodes(query, doc_id, section, criteria): the nodes of a document or section on the
  Pareto frontier of graph (entity PageRank), text (semantic) and lexical (BM25) relevance.
- get_table(table_id, format): a table as markdown, HTML or cells with header paths;
  lookup_cells(table_id, row_path_contains, col_path_contains): the data cells at given headers.
- view_page(doc_id, page_number, bounding_box, dpi, highlights): a PNG of a page or region.
- calculate(expr): arithmetic and percent change without mistakes.
"""

HINTS = """\
Hints:
- Start with hybrid_search for the question; read the hits' doc_id and page_number.
- Narrow with SQL, then search inside the result: run_sql to find primary keys, then a filter
  like primary_key in ['k1', 'k2'] or doc_id == 'x' and page_number >= 3.
- For numbers in tables, find the table (tables.caption / tables.summary), then read the cell by
  its row_path and col_path rather than by position; compute with calculate.
- Cite every fact with doc_id, page_number and bbox; use view_page on a bbox to check a figure,
  a table or an equation visually. DOCX, HTML and Markdown documents have no pages (page_number
  is NULL): cite them by section (section_id and title) instead.
- Results are capped; notes say what was cut and how to get the rest (LIMIT/OFFSET, filters).
"""


PLANS = """\
Plans (BookRAG): first decide what kind of question it is.
- Single-hop (one fact in one place): extract the entity or section the question names ->
  find_entities (Select_by_Entity) or get_outline + the section (Select_by_Section) ->
  rank_nodes(query, doc_id, section) -> read the frontier nodes (run_sql on ref_table/ref_id,
  view_page on their bbox) -> answer with citations. hybrid_search is the shortcut when the
  document is not known yet.
- Multi-hop (needs an intermediate answer): decompose into single-hop sub-questions, answer
  the first, put its answer into the next, and run the single-hop plan for each.
- Global aggregation (how many, list all, compare across sections): filter instead of
  searching: select_subtree(doc_id, section, node_types=['table'], pages=[a, b]) gives counts
  by type; run_sql over tree_nodes, tables, entities or table_cells counts, sums and groups
  exactly (e.g. SELECT count(*) FROM tree_nodes WHERE node_type = 'table' AND ...).
"""


def schema_text(store: Store | None = None) -> str:
    """The database schema, the vector collections, the encodable views and the filter syntax."""
    parts = [schema.describe(), "", "# Vector store", ""]
    if store is not None:
        try:
            collections = store.collections()
        except FileNotFoundError:
            collections = {}
        for name, (kind, model, dim) in sorted(collections.items()):
            what = "BM25 keyword search (SQLite FTS5)" if kind == "fts5" else f"{model}, {dim}-d"
            parts.append(f"- collection {name}: {what}")
    parts.append("")
    parts.append("Encodable (table, column) views, each cell one entry:")
    parts.extend(f"- {t}.{c}" for t, c in schema.encodable_columns())
    parts.append("")
    parts.append("hybrid_search reads: " + ", ".join(f"{t}.{c}" for t, c in DEFAULT_VIEWS))
    parts += ["", "# Filters", "", OPERATORS_HELP]
    return "\n".join(parts)


def agent_prompt(question: str, store: Store | None = None) -> str:
    return "\n".join(
        [
            "You answer questions about a collection of documents indexed by docsym. Retrieve "
            "step by step with the tools until you can answer, then answer briefly and cite each "
            "fact as (doc_id, page_number, bbox). If the documents do not hold the answer, say so.",
            "",
            TOOLS_OVERVIEW,
            PLANS,
            HINTS,
            schema_text(store),
            "",
            f"Question: {question}",
        ]
    )


def recap_prompt(question: str) -> str:
    """RECAP (HD-RAG): Restate, Extract, Compute, Answer, Present, for questions over tables."""
    return f"""\
Answer this question about tables with RECAP (HD-RAG), one step after another:

1. Restate: say what is asked, which table(s) should hold it, and which row and column headers
   the answer lives under (e.g. row path ['Multi', 'BM25 + DPR'], column path ['Top-100', 'TREC']).
   If it needs several values (a change, a ratio, a sum), list each one.
2. Extract: find the table: hybrid_search, or vector_search on table_summaries.text (one summary
   per row and per column path, e.g. "row Revenue › Mobility: 2021 = 6,953; 2020 = 6,089") and
   tables.summary, or run_sql on tables. get_table shows its header trees (col_header_tree,
   row_header_tree): the exact labels of every path. Read each needed cell with lookup_cells
   (row_path_contains / col_path_contains with those labels) or run_sql over table_cells
   (list_contains(row_path, '...')). List every value with its cell_id, row_path, col_path,
   value, unit, doc_id, page_number and bbox. Use the parsed value column, not the text, for
   numbers: it has parentheses as negatives and thousands separators removed.
3. Compute: do all arithmetic with calculate (differences, ratios, pct_change, sums); never by
   hand. Pass the cell values; keep units consistent (a '%' cell is already in percent).
4. Answer: the result with its unit (the cell's unit and the table's "in millions"-style note)
   and the precision the table uses.
5. Present: the answer first, then the cells used (cell ids and paths) and the calculation, with
   citations (doc_id, page_number, bbox).

Question: {question}
"""
