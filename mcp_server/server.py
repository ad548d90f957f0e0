"""The MCP server: registers the plain functions of ``tools/`` as MCP tools and resources.

This module only registers, validates and formats; the work happens in ``tools/``. Nothing here
writes to stdout (the stdio transport owns it): logs go to stderr.
"""

from __future__ import annotations

import base64
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from storage.encoder import get_encoder
from storage.reader import IndexNotFoundError
from storage.store import Store
from tools import calculator, documents, entities, guide, outline, pages, search, subtree, tables
from tools import rank_nodes as rank
from tools import sql as sql_tool
from tools.errors import ToolError
from tools.filters import OPERATORS_HELP
from tools.results import TableResult, markdown_cell

log = logging.getLogger("docsym.mcp")

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)

INSTRUCTIONS = (
    "docsym serves a neuro-symbolic index of documents. Read the schema resource "
    "(docsym://schema) first: every table and column is described there. Use list_documents to "
    "see what is indexed and run_sql for exact lookups (counts, table cells by header path, "
    "sections by number). Cite answers with doc_id, page_number and bbox."
)


def build_server(index_dir: Path) -> MCPServer:
    store = Store(index_dir)
    reader = store.reader
    server = MCPServer(name="docsym", instructions=INSTRUCTIONS)
    get_encoder().warm_up()  # the first search should not wait for the model

    @server.tool(
        name="run_sql",
        annotations=READ_ONLY,
        description=(
            "Run ONE read-only DuckDB SELECT against the index and get rows back as a table. "
            "The schema resource docsym://schema describes every table and column. Files, "
            "extensions, settings and writes are refused. Results are capped (rows and ~5k "
            "tokens); the note says when rows were cut. Tip: table cells are in table_cells "
            "with row_path/col_path lists, e.g. WHERE list_contains(col_path, 'TREC')."
        ),
    )
    def run_sql(
        sql: Annotated[str, Field(description="One DuckDB SELECT statement.")],
        limit: Annotated[
            int, Field(ge=1, le=sql_tool.MAX_ROWS, description="Maximum rows to return.")
        ] = sql_tool.DEFAULT_ROWS,
    ) -> CallToolResult:
        return _table(lambda: sql_tool.run_sql(reader, sql, limit=limit))

    @server.tool(
        name="list_documents",
        annotations=READ_ONLY,
        description=(
            "List indexed documents: doc_id, title, file name, format, page count, year. Use the "
            "doc_id in run_sql WHERE clauses and in other tools."
        ),
    )
    def list_documents(
        filter: Annotated[
            str, Field(description="Substring of title, file name or format; empty for all")
        ] = "",
        limit: Annotated[int, Field(ge=1, le=documents.MAX_DOCUMENTS)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:
        return _table(lambda: documents.list_documents(reader, filter, limit, offset))

    @server.tool(
        name="vector_search",
        annotations=READ_ONLY,
        description=(
            "Search ONE collection of the vector store: 'bm25' (keywords, FTS5) or 'minilm' "
            "(semantic, all-MiniLM-L6-v2), optionally only one encodable view (table_name + "
            "column_name, e.g. chunks.text, tables.caption) and a filter such as "
            "doc_id == 'x' and page_number >= 3, or primary_key in ['a', 'b'] with keys found "
            "by run_sql. Each hit gives table/column/primary key, doc_id, page_number and bbox.\n"
            + OPERATORS_HELP
        ),
    )
    def vector_search(
        query: Annotated[str, Field(description="What to search for.", max_length=2000)],
        collection: Annotated[str, Field(description="bm25 or minilm")] = "minilm",
        table_name: Annotated[str | None, Field(description="Encodable view's table")] = None,
        column_name: Annotated[str | None, Field(description="Encodable view's column")] = None,
        filter: Annotated[str, Field(description="Filter expression; empty for none")] = "",
        limit: Annotated[int, Field(ge=1, le=search.MAX_LIMIT)] = 10,
    ) -> CallToolResult:
        return _search(
            lambda: search.vector_search(
                store, query, collection, table_name, column_name, filter, limit
            )
        )

    @server.tool(
        name="hybrid_search",
        annotations=READ_ONLY,
        description=(
            "The best first search: BM25 and semantic candidates over chunks, pages, section "
            "titles, table captions/summaries, figure captions and titles, re-ranked into one "
            "list of rows. Same filter language as vector_search. views picks other encodable "
            "views, e.g. ['table_summaries.text'] to land on one row or column of a large table "
            "(HD-RAG's row/column summaries). Follow up with run_sql on the hit's table and "
            "primary key for the full row."
        ),
    )
    def hybrid_search(
        query: Annotated[str, Field(description="Question or keywords.", max_length=2000)],
        filter: Annotated[str, Field(description="Filter expression; empty for none")] = "",
        limit: Annotated[int, Field(ge=1, le=search.MAX_LIMIT)] = 10,
        views: Annotated[
            list[str] | None,
            Field(
                description="'table.column' encodable views; default: the usual ones", max_length=20
            ),
        ] = None,
    ) -> CallToolResult:
        return _search(
            lambda: search.hybrid_search(store, query, search.parse_views(views), filter, limit)
        )

    @server.tool(
        name="get_outline",
        annotations=READ_ONLY,
        description=(
            "A document's section tree: section ids, numbers, titles, page ranges and how many "
            "tables, figures and equations sit under each section. Use the section_id or page "
            "range to narrow run_sql or search filters (page_number >= a and page_number <= b)."
        ),
    )
    def get_outline(
        doc_id: Annotated[str, Field(description="From list_documents.", max_length=64)],
        depth: Annotated[int, Field(ge=1, le=outline.MAX_DEPTH)] = 3,
    ) -> CallToolResult:
        with _refusals():
            result = outline.get_outline(store, doc_id, depth)
        return _reply(result.to_markdown(), result)

    @server.tool(
        name="view_page",
        annotations=READ_ONLY,
        description=(
            "A PNG of a PDF page, or of a region of it, to read a figure, table or equation as "
            "printed. " + pages.BBOX_HELP + " Pass the bbox of a search hit, table or figure as "
            "bounding_box to crop, and boxes in highlights to mark them. dpi 36-300; images are "
            "capped at 4 megapixels (dpi is lowered to fit, and the note says so)."
        ),
    )
    def view_page(
        doc_id: Annotated[str, Field(description="From list_documents.", max_length=64)],
        page_number: Annotated[int, Field(ge=1, le=100_000)],
        bounding_box: Annotated[
            list[float] | None, Field(description="[x0, y0, x1, y1] in PDF points")
        ] = None,
        dpi: Annotated[int, Field(ge=pages.MIN_DPI, le=pages.MAX_DPI)] = 110,
        highlights: Annotated[
            list[list[float]] | None, Field(description="boxes to draw", max_length=50)
        ] = None,
    ) -> CallToolResult:
        with _refusals():
            image = pages.view_page(store, doc_id, page_number, bounding_box, dpi, highlights)
        summary = (
            f"doc {image.doc_id} page {image.page_number}, region {image.bbox}, "
            f"{image.width_px}x{image.height_px} px at {image.dpi} dpi"
            + (f". {image.note}" if image.note else "")
        )
        return CallToolResult(
            content=[
                ImageContent(
                    type="image",
                    data=base64.b64encode(image.png).decode("ascii"),
                    mime_type="image/png",
                ),
                TextContent(type="text", text=summary),
            ],
            structured_content=image.model_dump(),
        )

    @server.tool(
        name="get_table",
        annotations=READ_ONLY,
        description=(
            "A table by table_id (from hybrid_search hits on tables.* or run_sql on tables): as "
            "markdown (multi-level headers joined with ' › '), html, or cells with row_path and "
            "col_path. Large tables are cut by whole rows; the note gives the SQL for the rest."
        ),
    )
    def get_table(
        table_id: Annotated[str, Field(max_length=100)],
        format: Annotated[str, Field(description="markdown, html or cells")] = "markdown",
        max_cells: Annotated[int, Field(ge=1, le=tables.MAX_CELLS)] = 2000,
    ) -> CallToolResult:
        with _refusals():
            view = tables.get_table(store, table_id, format, max_cells)
        head = f"{view.label or view.table_id} (doc {view.doc_id}, page {view.page_number}, "
        head += f"bbox {view.bbox}): {view.caption or ''}"
        body = view.content or f"{len(view.cells)} cells in structured content"
        text = "\n\n".join(part for part in (head, body, view.note or "") if part)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=view.model_dump()
        )

    @server.tool(
        name="lookup_cells",
        annotations=READ_ONLY,
        description=(
            "The data cells of a table under given headers: every label in row_path_contains "
            "must occur in the cell's row path and every label in col_path_contains in its "
            "column path (case-insensitive substrings), e.g. row ['Multi', 'BM25 + DPR'], col "
            "['Top-100', 'TREC']. Returns value, unit, paths, page and bbox of each cell."
        ),
    )
    def lookup_cells(
        table_id: Annotated[str, Field(max_length=100)],
        row_path_contains: Annotated[list[str] | None, Field(max_length=10)] = None,
        col_path_contains: Annotated[list[str] | None, Field(max_length=10)] = None,
        limit: Annotated[int, Field(ge=1, le=tables.MAX_LOOKUP)] = 50,
    ) -> CallToolResult:
        with _refusals():
            cells = tables.lookup_cells(
                store, table_id, row_path_contains, col_path_contains, limit
            )
        lines = [
            "| cell_id | row_path | col_path | text | value | unit |",
            "|---|---|---|---|---|---|",
        ]
        for c in cells:
            lines.append(
                f"| {c['cell_id']} | {' › '.join(c['row_path'])} | "
                f"{' › '.join(c['col_path'])} | {c['text']} | {c['value']} | {c['unit'] or ''} |"
            )
        return CallToolResult(
            content=[TextContent(type="text", text="\n".join(lines))],
            structured_content={"cells": cells},
        )

    @server.tool(
        name="calculate",
        annotations=READ_ONLY,
        description=(
            "Evaluate arithmetic exactly instead of by hand: differences, ratios, percent change "
            "between table cells, sums over lists. " + calculator.FUNCTIONS_HELP
        ),
    )
    def calculate(
        expr: Annotated[str, Field(description="e.g. pct_change(91.2, 94.1)", max_length=2000)],
    ) -> CallToolResult:
        with _refusals():
            result = calculator.calculate(expr)
        return _reply(f"{result.expression} = {result.text}", result)

    @server.tool(
        name="select_subtree",
        annotations=READ_ONLY,
        description=(
            "The tree nodes under one section of a document (by number like '5' or '3.2', "
            "section_id, or words of its title) or under a node_id, optionally only some "
            "node_types (section, text, table, image, equation) and pages [from, to]. Returns "
            "the nodes in document order with bounded text, bbox and ref_table/ref_id (use "
            "get_table on a table's ref_id), plus counts by type of all matching nodes: "
            "'how many tables in section 5' is one call."
        ),
    )
    def select_subtree(
        doc_id: Annotated[str, Field(max_length=64)],
        section: Annotated[str | None, Field(max_length=200)] = None,
        node_id: Annotated[str | None, Field(max_length=100)] = None,
        node_types: Annotated[list[str] | None, Field(max_length=5)] = None,
        pages: Annotated[list[int] | None, Field(min_length=2, max_length=2)] = None,
        limit: Annotated[int, Field(ge=1, le=subtree.MAX_NODES)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:
        with _refusals():
            result = subtree.select_subtree(
                store, doc_id, section, node_id, node_types, pages, limit, offset
            )
        lines = [
            f"Under {result.root.title or result.root.node_id} ({result.root.node_id}): "
            + ", ".join(f"{n} {t}" for t, n in sorted(result.counts.items())),
            "",
            "| node_id | type | page | ref | bbox | text |",
            "|---|---|---|---|---|---|",
        ]
        for n in result.nodes:
            text = _cell(n.text or n.title)
            lines.append(
                f"| {n.node_id} | {n.node_type} | {n.page_start or ''} | "
                f"{n.ref_table}:{n.ref_id} | "
                f"{n.bbox or ''} | {text} |"
            )
        return _reply("\n".join(lines), result, result.note)

    @server.tool(
        name="find_entities",
        annotations=READ_ONLY,
        description=(
            "Entities (methods, datasets, metrics, organisations, people, acronyms, defined "
            "terms, tables, figures, table headers, citations) by name or alias: exact, fuzzy "
            "and semantic matches, each with the sections it is linked to (node_id, title, "
            "pages) and its strongest neighbours in the entity graph. Use it to find where a "
            "thing is discussed, then select_subtree or rank_nodes on those sections."
        ),
    )
    def find_entities(
        query: Annotated[str, Field(description="An entity name, e.g. 'DPR'", max_length=200)],
        doc_id: Annotated[str | None, Field(max_length=64)] = None,
        entity_types: Annotated[list[str] | None, Field(max_length=14)] = None,
        limit: Annotated[int, Field(ge=1, le=entities.MAX_LIMIT)] = 10,
    ) -> CallToolResult:
        with _refusals():
            result = entities.find_entities(store, query, doc_id, entity_types, limit)
        lines = ["| entity | type | aliases | doc_id | mentions | sections (node: pages) |"]
        lines.append("|---|---|---|---|---|---|")
        for hit in result.hits:
            sections = "; ".join(
                f"{s.title or s.node_id} ({s.node_id}"
                + (f": p{s.page_start}-{s.page_end})" if s.page_start else ")")
                for s in hit.sections
            )
            lines.append(
                f"| {hit.name} ({hit.entity_id}, {hit.matched}) | {hit.entity_type} | "
                f"{', '.join(hit.aliases[:5])} | {hit.doc_id} | {hit.mention_count} | "
                f"{markdown_cell(sections)} |"
            )
        return _reply("\n".join(lines), result, result.note)

    @server.tool(
        name="rank_nodes",
        annotations=READ_ONLY,
        description=(
            "Rank the nodes of a document, or of one section (by number, id or title words) or "
            "node, for a question: graph (personalized PageRank from the question's entities "
            "over the entity graph, mapped to nodes), text (semantic similarity) and optionally "
            "lexical (BM25). Returns the Pareto frontier (skyline) over the chosen criteria, "
            "not a fixed top-k; layers=2 adds the next frontier. Each node says which scores "
            "put it there. Then view_page or run_sql on the nodes you need."
        ),
    )
    def rank_nodes(
        query: Annotated[str, Field(description="The question.", max_length=2000)],
        doc_id: Annotated[str, Field(max_length=64)],
        section: Annotated[str | None, Field(max_length=200)] = None,
        node_id: Annotated[str | None, Field(max_length=100)] = None,
        criteria: Annotated[
            list[str] | None, Field(description="graph, text, lexical", max_length=3)
        ] = None,
        node_types: Annotated[list[str] | None, Field(max_length=5)] = None,
        layers: Annotated[int, Field(ge=1, le=rank.MAX_LAYERS)] = 1,
        limit: Annotated[int, Field(ge=1, le=rank.MAX_LIMIT)] = 10,
    ) -> CallToolResult:
        with _refusals():
            result = rank.rank_nodes(
                store, query, doc_id, section, node_id, criteria, node_types, layers, limit
            )
        lines = [
            f"{len(result.nodes)} of {result.scope_nodes} nodes under {result.scope_node_id}; "
            f"seeds: {', '.join(result.seeds[:8]) or 'none'}",
            "",
            "| node_id | type | page | ref | scores | why | text |",
            "|---|---|---|---|---|---|---|",
        ]
        for n in result.nodes:
            text = _cell(n.text or n.title)
            scores = ", ".join(f"{k} {v:.3f}" for k, v in n.scores.items())
            lines.append(
                f"| {n.node_id} | {n.node_type} | {n.page_start or ''} | "
                f"{n.ref_table}:{n.ref_id} | "
                f"{scores} | {n.why} | {text} |"
            )
        return _reply("\n".join(lines), result, result.note)

    @server.resource(
        "docsym://schema",
        name="schema",
        description=(
            "Every table and column of the index with its description, the vector collections, "
            "the encodable views and the filter language."
        ),
        mime_type="text/markdown",
    )
    def schema_resource() -> str:
        return guide.schema_text(store)

    @server.resource(
        "docsym://documents",
        name="documents",
        description="The indexed documents: doc_id, title, file, format, pages, year.",
        mime_type="text/markdown",
    )
    def documents_resource() -> str:
        return documents.list_documents(reader, limit=documents.MAX_DOCUMENTS).to_markdown()

    @server.resource(
        "docsym://documents/{doc_id}/outline",
        name="outline",
        description="A document's section tree with page ranges and table/figure/equation counts.",
        mime_type="text/markdown",
    )
    def outline_resource(doc_id: str) -> str:
        try:
            return outline.get_outline(store, doc_id, depth=outline.MAX_DEPTH).to_markdown()
        except ToolError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @server.prompt(
        name="hybrid_retrieval_agent",
        description=(
            "Answer a question from the indexed documents by retrieving step by step with "
            "docsym's tools (the NeuSym-RAG agent prompt: role, tools, hints and the schema)."
        ),
    )
    def hybrid_retrieval_agent(question: str) -> str:
        return guide.agent_prompt(question, store)

    @server.prompt(
        name="recap",
        description=(
            "Answer a question about table data with RECAP: Restate, Extract (cells with ids), "
            "Compute (with calculate), Answer, Present."
        ),
    )
    def recap(question: str) -> str:
        return guide.recap_prompt(question)

    return server


@contextmanager
def _refusals() -> Iterator[None]:
    """Turn a tool's refusal (bad argument, unknown id, no index yet) into an MCP tool error
    whose text tells the client how to fix the call."""
    try:
        yield
    except (IndexNotFoundError, ToolError) as exc:
        raise McpToolError(str(exc)) from None


def _reply(text: str, result: BaseModel, note: str | None = None) -> CallToolResult:
    """A tool result twice over: markdown text (with the tool's note, if any) for the model to
    read, and the structured content for clients that parse it."""
    if note:
        text += "\n\n" + note
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=result.model_dump()
    )


def _cell(text: str | None, size: int = 200) -> str:
    """Text made safe for one markdown table cell, trimmed to ``size`` characters."""
    return markdown_cell(text)[:size]


def _table(call) -> CallToolResult:
    """Run a tool function; render its TableResult as markdown plus structured content."""
    with _refusals():
        result: TableResult = call()
    return _reply(result.to_markdown(), result)


def _search(call) -> CallToolResult:
    with _refusals():
        result: search.SearchResult = call()
    lines = ["| # | score | view | doc_id | page | bbox | text |", "|---|---|---|---|---|---|---|"]
    for hit in result.hits:
        text = _cell(hit.text, 300)
        lines.append(
            f"| {hit.rank} | {hit.score:.4f} | {hit.table_name}.{hit.column_name}:"
            f"{hit.primary_key} | {hit.doc_id} | {hit.page_number or ''} | {hit.bbox or ''} | "
            f"{text} |"
        )
    return _reply("\n".join(lines), result, result.note)


def serve_stdio(index_dir: Path) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    build_server(index_dir).run("stdio")
