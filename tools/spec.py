"""How a tool is declared: once, next to its plain function, and read by every front end.

A ``ToolSpec`` names the tool, says what it does (the description clients see), types its
arguments with a pydantic model (ranges included: the JSON schema a client gets is this model's),
and points at the plain function that does the work. The MCP server registers every spec in a
loop, the CLI's ``docsym call`` runs them, and the agent prompt lists them: a new tool is one spec
added to ``tools/registry.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docsym.storage.store import Store
from docsym.storage.values import echo
from docsym.tools.errors import ToolError
from docsym.tools.results import ToolResult

MAX_ECHO_CHARS = 120  # how much of a bad argument a refusal quotes back
MAX_PROBLEMS = 5  # how many bad arguments a refusal lists
MAX_OFFSET = 1_000_000
MAX_COORDINATE = 100_000.0  # PDF pages are at most 14,400 points a side
MAX_FILTER_CHARS = 2_000
MAX_PAGE = 100_000

# Argument types shared by the tools: every string, list and number a client sends is bounded,
# so a refusal (and the work before it) stays small whatever comes in.
Name = Annotated[str, Field(max_length=64)]  # ids, collections, view and type names
Label = Annotated[str, Field(max_length=200)]  # header labels, titles, placeholder values
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="rows to skip, for paging")]
Coordinate = Annotated[float, Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE, allow_inf_nan=False)]
Box = Annotated[list[Coordinate], Field(min_length=4, max_length=4)]
PageNumber = Annotated[int, Field(ge=1, le=MAX_PAGE, description="1-based PDF page")]


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
    # (tests/test_tool_registry.py checks they agree).
    function: Callable[..., ToolResult]
    needs_store: bool = True  # False for tools that read no index (calculate)
    read_only: bool = True

    def run(self, store: Store, arguments: Mapping[str, Any]) -> ToolResult:
        """Validate ``arguments`` against the tool's model and call its function."""
        try:
            args = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError(argument_problems(self, exc)) from None
        values = dict(args)
        return self.function(store, **values) if self.needs_store else self.function(**values)

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
