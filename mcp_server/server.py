"""The MCP server: registers the plain functions of ``tools/`` as MCP tools and resources.

This module only registers, validates and formats; the work happens in ``tools/``. Nothing here
writes to stdout (the stdio transport owns it): logs go to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from storage import schema
from storage.reader import IndexNotFoundError, IndexReader
from tools import documents
from tools import sql as sql_tool
from tools.errors import ToolError
from tools.results import TableResult

log = logging.getLogger("docsym.mcp")

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)

INSTRUCTIONS = (
    "docsym serves a neuro-symbolic index of documents. Read the schema resource "
    "(docsym://schema) first: every table and column is described there. Use list_documents to "
    "see what is indexed and run_sql for exact lookups (counts, table cells by header path, "
    "sections by number). Cite answers with doc_id, page_number and bbox."
)


def build_server(index_dir: Path) -> MCPServer:
    reader = IndexReader(index_dir)
    server = MCPServer(name="docsym", instructions=INSTRUCTIONS)

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
        limit: Annotated[int, Field(ge=1, le=documents.MAX_DOCUMENTS)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:
        return _table(lambda: documents.list_documents(reader, limit=limit, offset=offset))

    @server.resource(
        "docsym://schema",
        name="schema",
        description="Every table and column of the index with its description.",
        mime_type="text/markdown",
    )
    def schema_resource() -> str:
        return schema.describe()

    return server


def _table(call) -> CallToolResult:
    """Run a tool function; render its TableResult as markdown plus structured content."""
    try:
        result: TableResult = call()
    except IndexNotFoundError as exc:
        raise McpToolError(str(exc)) from None
    except ToolError as exc:
        raise McpToolError(str(exc)) from None
    return CallToolResult(
        content=[TextContent(type="text", text=result.to_markdown())],
        structured_content=result.model_dump(),
    )


def serve_stdio(index_dir: Path) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    build_server(index_dir).run("stdio")
