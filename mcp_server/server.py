"""The MCP server: every tool of ``tools.registry`` registered in one loop, plus the resources,
prompts and completions. Nothing here retrieves or formats: the tools' results render their own
markdown.

Each registered handler has the signature of its tool's argument model, so the input schema a
client sees is that model's (descriptions and ranges included), and each tool declares the JSON
schema of its result model as its output schema. A tool's refusal (``ToolError``) or a missing
index becomes an MCP tool error whose text says how to fix the call; a bad prompt request is an
invalid-params error naming what is valid. A client that sends a progress token hears when a
call starts and ends, and after each step of a tool that reports steps (run_plan's leaves).
Tools whose results cite places name the evidence view (``mcp_server/evidence_app``, an MCP App)
in their ``_meta.ui``; a host that shows apps draws the cited boxes with it, others see no change.
Nothing here writes to stdout (the stdio transport owns it): logs go to stderr.
"""

from __future__ import annotations

import atexit
import base64
import gc
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    ToolAnnotations,
)
from pydantic import ValidationError
from threadpoolctl import threadpool_limits

from docsym.mcp_server.evidence_app import (
    APP_META,
    APP_MIME_TYPE,
    EVIDENCE_NAME,
    EVIDENCE_URI,
    evidence_app_html,
)
from docsym.models.encoder import query_encoder
from docsym.runtime.bounds import MAX_MESSAGE_CHARS, echo, scrub
from docsym.storage.backends import open_store
from docsym.storage.paths import IndexNotFoundError
from docsym.storage.store import Store
from docsym.tools import documents, guide, outline, query_plans
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

DESCRIPTION = "Documents indexed into tables, sections and vectors, searched and cited by page."
OUTLINE_URI = "docsym://documents/{doc_id}/outline"

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

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """A request the prompt cannot take is the client's mistake: invalid params, in one
        line that says what is valid. (The SDK would answer code 0 and log a traceback.)"""
        prompts = {prompt.name: prompt for prompt in await self.list_prompts()}
        prompt = prompts.get(name)
        if prompt is None:
            raise _invalid_params(
                f"no prompt {echo(repr(name), 80)}; the prompts are: {', '.join(prompts)}"
            )
        takes = [argument.name for argument in prompt.arguments or []]
        usage = f"Get it as {name}({', '.join(takes)})."
        unknown = [key for key in arguments or {} if key not in takes]
        if unknown:
            names = ", ".join(echo(repr(key), 80) for key in unknown[:5])
            raise _invalid_params(f"{name}: unknown argument(s) {names}. {usage}")
        required = [a.name for a in prompt.arguments or [] if a.required]
        missing = [key for key in required if key not in (arguments or {})]
        if missing:
            raise _invalid_params(f"{name}: missing argument(s) {', '.join(missing)}. {usage}")
        return await super().get_prompt(name, arguments, context)


def _invalid_params(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


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
    server = DocsymServer(
        name="docsym",
        title="docsym",
        description=DESCRIPTION,
        version=package_version(),
        instructions=INSTRUCTIONS,
        tools=[_tool(spec, store) for spec in TOOLS],
    )
    query_encoder().warm_up()  # the first search should not wait for the model
    _add_resources(server, store)
    _add_prompts(server, store)
    _add_completions(server, store)
    return server


def package_version() -> str:
    """docsym's installed version (read from the distribution: the layer rule keeps this module
    from importing the top-level package)."""
    try:
        return version("docsym")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.0.0"


def _tool(spec: ToolSpec, store: Store) -> Tool:
    """The SDK's tool for a spec, declaring the result model's schema as its output schema.

    The schema is set on the tool rather than derived by the SDK from a return annotation: the
    SDK would describe the model as it validates (view_page's PNG field, which the dump leaves
    out, required) and validate every result again, though a tool's result is a model that has
    been validated once already. tests/test_mcp_protocol.py checks what is sent against it."""
    registered = Tool.from_function(
        _handler(spec, store),
        name=spec.name,
        description=spec.description,
        annotations=ToolAnnotations(
            readOnlyHint=spec.read_only, destructiveHint=False, openWorldHint=False
        ),
        context_kwarg="context",
        structured_output=False,
        meta=_ui_meta(spec),
    )
    registered.fn_metadata.output_schema = spec.output_schema()
    return registered


def _ui_meta(spec: ToolSpec) -> dict[str, Any] | None:
    """The tool's ``_meta.ui`` (MCP Apps): the evidence view for a tool whose result cites
    places, and who may call it where not everyone may. Hosts without apps ignore it."""
    ui: dict[str, Any] = {}
    if spec.evidence:
        ui["resourceUri"] = EVIDENCE_URI
    if not spec.for_model:
        ui["visibility"] = list(spec.visibility)
    return {"ui": ui} if ui else None


def _handler(spec: ToolSpec, store: Store) -> Callable[..., Awaitable[CallToolResult]]:
    """A function the SDK can register: keyword arguments as the spec's model declares them,
    plus the request's context (which the SDK leaves out of the input schema)."""

    async def call(context: Context, **arguments: Any) -> CallToolResult:
        progress = CallProgress.of(context, spec.name)
        await progress.started()
        with _refusals():
            step = progress.step if progress.wanted else None
            result = await anyio.to_thread.run_sync(partial(spec.run, store, arguments, step))
        await progress.finished()
        return _reply(result)

    call.__name__ = spec.name
    call.__signature__ = _signature(spec)  # type: ignore[attr-defined]
    return call


class CallProgress:
    """Progress notifications for one tool call, sent only if the client gave a progress token:
    0 at the start, each step the tool reports as n of N (sent as n of N+1), and the end as
    N+1 of N+1, so the values only ever grow (the protocol's rule) and the last one is 100%."""

    def __init__(self, context: Context, name: str, wanted: bool) -> None:
        self.context = context
        self.name = name
        self.wanted = wanted
        self.steps = 0  # the tool's step count, once it has reported one
        self.loop = anyio.lowlevel.current_token()  # for steps reported from worker threads

    @classmethod
    def of(cls, context: Context, name: str) -> CallProgress:
        try:
            meta = context.request_context.meta
        except ValueError:  # called in-process, outside any request
            meta = None
        return cls(context, name, wanted=bool(meta) and meta.get("progress_token") is not None)

    async def started(self) -> None:
        await self._send(0, None, f"{self.name} started")

    def step(self, done: int, steps: int, message: str) -> None:
        """The tools' ``Progress`` callback; called from the tool's threads."""
        self.steps = steps
        anyio.from_thread.run(self._send, done, steps + 1, message, token=self.loop)

    async def finished(self) -> None:
        await self._send(self.steps + 1, self.steps + 1, f"{self.name} done")

    async def _send(self, progress: float, total: float | None, message: str) -> None:
        if not self.wanted:
            return
        try:
            await self.context.report_progress(progress, total, message)
        except Exception as exc:  # a lost notification must not fail the call it reports on
            log.warning("progress for %s not sent: %s: %s", self.name, type(exc).__name__, exc)


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
    context = inspect.Parameter("context", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    return inspect.Signature([context, *parameters], return_annotation=CallToolResult)


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
    # JSON mode: the structured content is the serialisation the output schema describes.
    return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))


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
        EVIDENCE_URI,
        name=EVIDENCE_NAME,
        title="Evidence",
        description=(
            "The evidence view (an MCP App) that hosts show beside search hits, passages, "
            "cells, tables and pages: the cited page with every cited box drawn on it."
        ),
        mime_type=APP_MIME_TYPE,
        meta=APP_META,
    )
    def evidence_resource() -> str:
        return evidence_app_html()

    @server.resource(
        OUTLINE_URI,
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
        return query_plans.compile_prompt(question)

    @server.prompt(
        name="recap",
        description=(
            "Answer a question about table data with RECAP: Restate, Extract (cells with ids), "
            "Compute (with calculate), Answer, Present."
        ),
    )
    def recap(question: str) -> str:
        return guide.recap_prompt(question)


def _add_completions(server: MCPServer, store: Store) -> None:
    """Complete the outline template's doc_id from the index's documents, prefix first. No
    prompt takes a doc_id (each takes a free question), so prompts get no values."""

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        wants_doc_id = isinstance(ref, ResourceTemplateReference) and ref.uri == OUTLINE_URI
        if not wants_doc_id or argument.name != "doc_id":
            return None
        found = partial(documents.doc_ids_starting, store, argument.value)
        values, total = await anyio.to_thread.run_sync(found)
        return Completion(values=values, total=total, has_more=total > len(values))


def serve_stdio(index: Path | str) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server = build_server(index)
    tune_serving_process()
    server.run("stdio")


def tune_serving_process() -> None:
    """What a serving process sets once, before its first answer."""
    tune_garbage_collection()
    one_blas_thread()


def one_blas_thread() -> None:
    """Matrix products in this thread only. A call's products are small (a question against the
    sign file's list centroids, or against a few hundred candidates), and OpenBLAS's threads
    spin for a while after each one: in a server, a core's worth of spinning took the core that
    BM25's thread and other calls were running on (docs/RESULTS.md). Only serving processes
    do this: an index run's k-means over millions of vectors is faster on both cores."""
    threadpool_limits(limits=1, user_api="blas")


def tune_garbage_collection() -> None:
    """Collect cycles rarely, and move everything start-up loaded (modules, the store, the
    model) out of the collector's reach, for the life of a serving process."""
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)  # so the collector can finalise them on the way out
    gc.set_threshold(*GC_THRESHOLDS)
