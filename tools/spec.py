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
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from storage.store import Store
from tools.errors import ToolError
from tools.results import ToolResult

MAX_ECHO_CHARS = 120  # how much of a bad argument a refusal quotes back


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
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        given = repr(item.get("input"))
        if len(given) > MAX_ECHO_CHARS:
            given = given[:MAX_ECHO_CHARS] + f"… ({len(given)} characters)"
        problems.append(f"{where}: {item['msg']} (got {given})")
    return f"{spec.name}: " + "; ".join(problems) + f". Call it as {spec.usage()}."
