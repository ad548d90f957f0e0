"""What clients read before they act: the full schema ("task prompt" of NeuSym-RAG), the
retrieval agent prompt and the RECAP prompt for table questions. Built from the same sources of
truth the tools use: the tool registry, the schema module, the filter language and the
collections in the store.

The agent prompt stays short (a client pays for it on every use): the tools with one line
each, the plans, the hints and the schema in one line per table. Column descriptions, the
filter grammar and the collections are in the ``docsym://schema`` resource (``schema_text``).
"""

from __future__ import annotations

from docsym.storage import schema
from docsym.storage.store import KEYWORD_KINDS, Store
from docsym.tools.filters import OPERATORS_HELP
from docsym.tools.registry import TOOLS
from docsym.tools.search import DEFAULT_VIEWS

HINTS = """\
Hints:
- Start with hybrid_search; narrow with a filter (doc_id == 'x' and page_number >= 3, or
  primary_key in [...] from run_sql).
- Table numbers: find the table (tables.caption/summary, table_summaries.text), read cells by
  row_path/col_path (lookup_cells), compute with calculate (the recap prompt has the steps).
- Cite facts as (doc_id, page, bbox), "page 26 (printed 24)" where a label differs. A hit's
  bbox is one sentence, two adjacent ones where the answer spans them, or one or two adjacent
  table rows (a figure, equation or table summary: its region); a cell's, the cell. DOCX,
  HTML and Markdown have no pages: cite section_id and title.
- Results are capped; notes say how to get the rest.
"""


PLANS = """\
Plans (BookRAG): first decide what kind of question it is.
- Single-hop (one fact in one place): hybrid_search when the document is unknown; else
  find_entities or get_outline for the section, then rank_nodes(query, doc_id, section).
- Multi-part or multi-hop ("X per Y", "A or B, which is larger", needs an intermediate
  answer): compile_query first (compile_question prompt), then run_plan step by step.
- Global aggregation (how many, list all): filter, do not search: select_subtree(doc_id,
  section, node_types=['table'], pages=[a, b]) counts by type; run_sql counts, sums and groups
  over tree_nodes, tables, entities or table_cells exactly.
"""


def schema_text(store: Store | None = None) -> str:
    """The database schema, the vector collections, the encodable views and the filter syntax."""
    parts = [schema.describe(_dialect(store)), "", "# Search collections", ""]
    if store is not None:
        try:
            collections = store.collections()
        except FileNotFoundError:
            collections = {}
        for name, (kind, model, dim) in sorted(collections.items()):
            engine = KEYWORD_KINDS.get(kind)
            what = f"BM25 keyword search ({engine})" if engine else f"{model}, {dim}-d"
            parts.append(f"- collection {name}: {what}")
    parts.append("")
    parts.append("Encodable (table, column) views, each cell one entry:")
    parts.extend(f"- {t}.{c}" for t, c in schema.encodable_columns())
    parts.append("")
    parts.append("hybrid_search reads: " + ", ".join(f"{t}.{c}" for t, c in DEFAULT_VIEWS))
    parts += ["", "# Filters", "", OPERATORS_HELP]
    return "\n".join(parts)


def tools_overview() -> str:
    """One line per tool the model may call, from the registry: how to call it and what it
    is for (page_image, the evidence view's, is left out)."""
    lines = ["Tools (all read-only):"]
    lines += [f"- {spec.usage()}: {spec.summary}" for spec in TOOLS if spec.for_model]
    return "\n".join(lines) + "\n"


def _dialect(store: Store | None) -> str:
    """The SQL a client writes for ``run_sql`` on this store."""
    return "PostgreSQL" if store is not None and store.dialect == "postgresql" else "DuckDB"


def agent_prompt(question: str, store: Store | None = None) -> str:
    """The retrieval agent prompt; ``store`` names the SQL dialect (nothing else in it depends
    on what is indexed)."""
    return "\n".join(
        [
            "You answer questions about documents indexed by docsym. Retrieve step by step with "
            "the tools, then answer briefly with citations. If the documents do not hold the "
            "answer, say so.",
            "",
            tools_overview(),
            PLANS,
            HINTS,
            f"Schema ({_dialect(store)} SQL; * searchable; [] a list; pages 1-based; bbox [x0, "
            "y0, x1, y1] in PDF points from the top-left; descriptions, collections, filter "
            "language: resource "
            "docsym://schema):",
            schema.compact(),
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
   ('...' = ANY(row_path)). List every value with its cell_id, row_path, col_path,
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
