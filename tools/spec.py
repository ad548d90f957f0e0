"""How a tool is declared: once, next to its plain function, and read by every front end.

A ``ToolSpec`` names the tool, says what it does (the description clients see), types its
arguments with a pydantic model (ranges included: the JSON schema a client gets is this model's),
and points at the plain function that does the work. The MCP server registers every spec in a
loop, the CLI's ``docsym call`` runs them, and the agent prompt lists them: a new tool is one spec
added to ``tools/registry.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docsym.runtime.bounds import MAX_ECHO_CHARS, echo
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.results import ToolResult

MAX_PROBLEMS = 5  # how many bad arguments a refusal lists
MAX_OFFSET = 1_000_000
MAX_COORDINATE = 100_000.0  # PDF pages are at most 14,400 points a side
MAX_PAGE = 100_000
MAX_NAME_CHARS = 64

# Argument types shared by the tools: every string, list and number a client sends is bounded,
# so a refusal (and the work before it) stays small whatever comes in.
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]  # ids, collections, view and type names
Label = Annotated[str, Field(max_length=200)]  # header labels, titles, placeholder values
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="rows to skip, for paging")]
Coordinate = Annotated[float, Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE, allow_inf_nan=False)]
Box = Annotated[list[Coordinate], Field(min_length=4, max_length=4)]
PageNumber = Annotated[int, Field(ge=1, le=MAX_PAGE, description="1-based PDF page")]


# Who may call a tool (the MCP Apps extension's visibility): the model, a view the host shows
# beside a result (an app), or both. A tool only a view calls (page_image) is left out of the
# agent prompt, and hosts keep it out of the model's tool list.
Caller = Literal["model", "app"]


# How a tool that works in steps says how far it is: (steps done, steps in all, what was just
# done). A plain callable, so the tools need not know who listens: the MCP server turns the calls
# into progress notifications when the client asked for them.
Progress = Callable[[int, int, str], None]


class Arguments(BaseModel):
    """Base of every tool's arguments: unknown names are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    summary: str  # one line for the agent prompt's tool list
    description: str  # what clients read in tools/list
    arguments: type[Arguments]
    # The plain function: called as function(store, **arguments) (without the store when
    # needs_store is False), its parameters named as the argument model's fields
    # (tests/test_tool_registry.py checks they agree), its return annotation the ToolResult
    # subclass it answers with (the output schema clients see is that model's). A function
    # that also takes ``progress: Progress | None = None`` reports its steps through it.
    function: Callable[..., ToolResult]
    needs_store: bool = True  # False for tools that read no index (calculate)
    read_only: bool = True
    # Its result cites places in documents (hits, sentences, cells, a page): hosts that show
    # views draw them with the evidence view (mcp_server/evidence_app).
    evidence: bool = False
    visibility: tuple[Caller, ...] = ("model", "app")

    def run(
        self, store: Store, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> ToolResult:
        """Validate ``arguments`` against the tool's model and call its function; ``progress``
        hears of its steps if it reports any (``reports_progress``)."""
        try:
            args = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError(argument_problems(self, exc)) from None
        values = dict(args)
        if progress is not None and self.reports_progress:
            values["progress"] = progress
        if not self.needs_store:
            return self.function(**values)
        with store.reading():  # the call reads one generation, whatever is published meanwhile
            return self.function(store, **values)

    @property
    def for_model(self) -> bool:
        """Whether the model sees the tool (False: a view's helper, such as page_image)."""
        return "model" in self.visibility

    @property
    def reports_progress(self) -> bool:
        """Whether the function takes a ``progress`` callback (read from its signature, so it
        cannot disagree with it)."""
        return "progress" in inspect.signature(self.function).parameters

    @property
    def result(self) -> type[ToolResult]:
        """The model the tool answers with, read from its function's return annotation."""
        answer = get_type_hints(self.function).get("return")
        if not (isinstance(answer, type) and issubclass(answer, ToolResult)):
            raise TypeError(f"{self.name}: the function must be annotated to return a ToolResult")
        return answer

    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of the structured content the tool sends: its result model as it
        serialises (``model_dump(mode="json")``), so a field left out of the dump (view_page's
        PNG, sent as an image instead) is not in it, and every field the dump writes is."""
        return self.result.model_json_schema(mode="serialization")

    def usage(self) -> str:
        """``hybrid_search(query, filter, limit, views)``: the call as a client writes it."""
        return f"{self.name}({', '.join(self.arguments.model_fields)})"


def argument_problems(spec: ToolSpec, error: ValidationError) -> str:
    """A refusal naming each bad argument, what it must be, and a bounded echo of what came."""
    problems = []
    errors = error.errors(include_url=False)
    for item in errors[:MAX_PROBLEMS]:
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        given = _short_repr(item.get("input"))
        problems.append(f"{where}: {item['msg']} (got {given})")
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"and {len(errors) - MAX_PROBLEMS} more problems")
    return f"{spec.name}: " + "; ".join(problems) + f". Call it as {spec.usage()}."


def _short_repr(value: Any) -> str:
    """repr of a value without building the whole of a huge one."""
    if isinstance(value, str | bytes) and len(value) > MAX_ECHO_CHARS:
        return f"{value[:MAX_ECHO_CHARS]!r}… [{len(value) - MAX_ECHO_CHARS:,} more]"
    if isinstance(value, list | tuple | dict):
        return f"{type(value).__name__} of {len(value)} items"
    return echo(repr(value), MAX_ECHO_CHARS)
