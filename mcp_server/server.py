"""The MCP server: every tool of ``tools.registry`` registered in one loop, plus the resources and
prompts. Nothing here retrieves or formats: the tools' results render their own markdown.

Each registered handler has the signature of its tool's argument model, so the JSON schema a
client sees is that model's (descriptions and ranges included). A tool's refusal (``ToolError``)
or a missing index becomes an MCP tool error whose text says how to fix the call. Nothing here
writes to stdout (the stdio transport owns it): logs go to stderr.
"""

from __future__ import annotations

import atexit
import base64
import gc
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import ValidationError

from docsym.storage.encoder import query_encoder
from docsym.storage.paths import IndexNotFoundError
from docsym.storage.store import Store, open_store
from docsym.storage.values import MAX_MESSAGE_CHARS, echo, scrub
from docsym.tools import documents, guide, outline
from docsym.tools.errors import ToolError
from docsym.tools.registry import TOOLS, tool
from docsym.tools.results import ToolResult
from docsym.tools.spec import ToolSpec, argument_problems

log = logging.getLogger("docsym.mcp")

# A server keeps large caches of small objects (analysed candidates, page units, word forms),
# and CPython's cyclic collector rescans them every few hundred allocations: on the corpus index
# that was 7 ms of an average hybrid_search and up to 90 ms of single calls (bench/query_speed.py).
# Cycles are still collected, only after 50,000 allocations instead of 700.
GC_THRESHOLDS = (50_000, 20, 100)

INSTRUCTIONS = (
    "docsym serves a neuro-symbolic index of documents. Read the schema resource "
    "(docsym://schema) first: every table and column is described there. Use list_documents to "
    "see what is indexed and run_sql for exact lookups (counts, table cells by header path, "
    "sections by number). Cite answers with doc_id, page_number and bbox."
)


class DocsymServer(MCPServer):
    """The SDK's server with refusals a client can act on: every failed call says why, in a
    bounded message. The SDK's own texts would echo a rejected argument whole (a 10 MB label
    comes back as a 10 MB error) and say only "Error executing tool" for a crash."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        _refuse_unknown_arguments(name, arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            raise McpToolError(_crash_text(name, exc.__cause__)) from exc
        except McpToolError as exc:
            raise McpToolError(_refusal_text(name, exc)) from exc


def _refuse_unknown_arguments(name: str, arguments: dict[str, Any]) -> None:
    """The SDK drops arguments its signature lacks; a misspelt name should be refused instead,
    or the client never learns its filter was ignored."""
    known = next((spec.arguments.model_fields for spec in TOOLS if spec.name == name), None)
    unknown = [key for key in arguments if known is not None and key not in known]
    if unknown:
        names = ", ".join(echo(repr(key), 80) for key in unknown[:5])
        raise McpToolError(f"{name}: unknown argument(s) {names}. Call it as {tool(name).usage()}.")


def _refusal_text(name: str, exc: McpToolError) -> str:
    if isinstance(exc.__cause__, ValidationError):
        return argument_problems(tool(name), exc.__cause__)
    return echo(str(exc), MAX_MESSAGE_CHARS)


def _crash_text(name: str, cause: BaseException | None) -> str:
    """A crash still gets a reason: its type and a scrubbed message (no host paths)."""
    log.error("%s crashed", name, exc_info=cause)
    if cause is None:
        return f"{name} could not answer."
    return f"{name} could not answer: {type(cause).__name__}: {scrub(str(cause))}"


def build_server(index: Path | str) -> MCPServer:
    store = open_store(index)
    server = DocsymServer(name="docsym", instructions=INSTRUCTIONS)
    query_encoder().warm_up()  # the first search should not wait for the model
    for spec in TOOLS:
        server.add_tool(
            _handler(spec, store),
            name=spec.name,
            description=spec.description,
            annotations=ToolAnnotations(
                readOnlyHint=spec.read_only, destructiveHint=False, openWorldHint=False
            ),
        )
    _add_resources(server, store)
    _add_prompts(server, store)
    return server


def _handler(spec: ToolSpec, store: Store) -> Callable[..., CallToolResult]:
    """A function the SDK can register: keyword arguments as the spec's model declares them."""

    def call(**arguments: Any) -> CallToolResult:
        with _refusals():
            result = spec.run(store, arguments)
        return _reply(result)

    call.__name__ = spec.name
    call.__signature__ = _signature(spec)  # type: ignore[attr-defined]
    return call


def _signature(spec: ToolSpec) -> inspect.Signature:
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if field.is_required() else field.default,
            annotation=Annotated[field.annotation, field],
        )
        for name, field in spec.arguments.model_fields.items()
    ]
    return inspect.Signature(parameters, return_annotation=CallToolResult)


@contextmanager
def _refusals() -> Iterator[None]:
    """Turn a tool's refusal (bad argument, unknown id, no index yet) into an MCP tool error
    whose text tells the client how to fix the call."""
    try:
        yield
    except (IndexNotFoundError, ToolError) as exc:
        raise McpToolError(str(exc)) from None


def _reply(result: ToolResult) -> CallToolResult:
    """A result twice over: markdown for the model to read (after the picture, if there is
    one) and the structured content for clients that parse it."""
    content: list[TextContent | ImageContent] = []
    png = result.image_png()
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        content.append(ImageContent(type="image", data=data, mime_type="image/png"))
    content.append(TextContent(type="text", text=result.to_markdown()))
    return CallToolResult(content=content, structured_content=result.model_dump())


def _add_resources(server: MCPServer, store: Store) -> None:
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
        return documents.list_documents(store, limit=documents.MAX_DOCUMENTS).to_markdown()

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


def _add_prompts(server: MCPServer, store: Store) -> None:
    @server.prompt(
        name="hybrid_retrieval_agent",
        description=(
            "Answer a question from the indexed documents by retrieving step by step with "
            "docsym's tools (the NeuSym-RAG agent prompt: role, tools, plans, hints and a "
            "compact schema)."
        ),
    )
    def hybrid_retrieval_agent(question: str) -> str:
        return guide.agent_prompt(question, store)

    @server.prompt(
        name="compile_question",
        description=(
            "Rewrite a multi-part or multi-hop question as a query-compiler expression "
            "(QCompiler's grammar: '+' independent parts, '*' dependent parts with "
            "{placeholders}), with worked examples; then compile_query and run_plan."
        ),
    )
    def compile_question(question: str) -> str:
        return guide.compile_prompt(question)

    @server.prompt(
        name="recap",
        description=(
            "Answer a question about table data with RECAP: Restate, Extract (cells with ids), "
            "Compute (with calculate), Answer, Present."
        ),
    )
    def recap(question: str) -> str:
        return guide.recap_prompt(question)


def serve_stdio(index: Path | str) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server = build_server(index)
    tune_garbage_collection()
    server.run("stdio")


def tune_garbage_collection() -> None:
    """Collect cycles rarely, and move everything start-up loaded (modules, the store, the
    model) out of the collector's reach, for the life of a serving process."""
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)  # so the collector can finalise them on the way out
    gc.set_threshold(*GC_THRESHOLDS)
