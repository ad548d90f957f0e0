"""One declaration per tool: the registry drives the server, the CLI, the agent prompt and the
README, and these tests fail when any of them drifts from it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import anyio
import pytest
from pydantic_core import PydanticUndefined

from docsym.cli import main
from docsym.mcp_server.server import build_server
from docsym.storage.backends import open_store
from docsym.tools import guide
from docsym.tools.errors import ToolError
from docsym.tools.registry import TOOLS, tool
from docsym.tools.spec import ToolSpec
from tests.conftest import REPO


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_function_parameters_match_the_arguments_model(spec: ToolSpec) -> None:
    parameters = dict(inspect.signature(spec.function).parameters)
    if spec.needs_store:
        assert next(iter(parameters)) == "store"
        parameters.pop("store")
    fields = spec.arguments.model_fields
    assert set(fields) <= set(parameters), f"{spec.name}: arguments the function does not take"
    for name, parameter in parameters.items():
        if name not in fields:
            assert parameter.default is not inspect.Parameter.empty, (
                f"{spec.name}({name}) is required by the function but not an argument"
            )
            continue
        default = fields[name].default
        if default is PydanticUndefined:
            assert parameter.default is inspect.Parameter.empty, f"{spec.name}({name})"
        else:
            assert parameter.default == default, f"{spec.name}({name}) defaults differ"


def test_tool_names_are_unique_and_every_tool_has_text() -> None:
    names = [spec.name for spec in TOOLS]
    assert len(names) == len(set(names))
    for spec in TOOLS:
        assert spec.summary and spec.description, spec.name
        assert spec.read_only, f"{spec.name}: every docsym tool is read-only"


def test_server_registers_exactly_the_registry(sample_index: Path) -> None:
    async def listed() -> dict[str, tuple[set[str], bool | None]]:
        server = build_server(sample_index)
        return {
            t.name: (set(t.input_schema["properties"]), t.annotations.read_only_hint)
            for t in await server.list_tools()
        }

    registered = anyio.run(listed)
    assert registered == {spec.name: (set(spec.arguments.model_fields), True) for spec in TOOLS}


def test_agent_prompt_lists_every_tool_for_the_model_and_stays_lean() -> None:
    prompt = guide.agent_prompt("How many tables are in section 5?")
    for spec in TOOLS:
        assert (f"- {spec.usage()}: " in prompt) == spec.for_model, spec.name
    assert not tool("page_image").for_model  # the evidence view's, hidden from the model
    assert "docsym://schema" in prompt
    assert len(guide.agent_prompt("")) < 6000


def test_readme_lists_the_registry_tools() -> None:
    readme = (REPO / "README.md").read_text()
    listing = re.search(r"- tools: (.*?)\(all read-only", readme, re.S)
    assert listing, "README lost its tool list"
    assert re.findall(r"`(\w+)`", listing.group(1)) == [spec.name for spec in TOOLS]


def test_unknown_and_bad_arguments_get_a_usable_refusal(sample_index: Path) -> None:
    store = open_store(sample_index)
    search = tool("hybrid_search")
    with pytest.raises(ToolError) as refused:
        search.run(store, {"query": "x", "limits": 3})
    assert "limits" in str(refused.value) and search.usage() in str(refused.value)
    with pytest.raises(ToolError) as refused:
        search.run(store, {"query": "x" * 5000})
    message = str(refused.value)
    assert "at most 2000 characters" in message and len(message) < 600
    with pytest.raises(ToolError, match="no tool 'nope'; the tools are: list_documents"):
        tool("nope")


def test_cli_call_runs_any_tool(sample_index: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["call", "calculate", "expr=round(94.1 - 91.2, 1)"]) == 0
    assert "= 2.9" in capsys.readouterr().out
    assert main(["call", "list_documents", "limit=1", "--index", str(sample_index)]) == 0
    assert "more" in capsys.readouterr().out  # two documents, one shown, the note says so
    query = "query=What is the effect of the RRF constant k?"
    assert main(["call", "hybrid_search", query, "limit=2", "--index", str(sample_index)]) == 0
    assert "| # | score | view |" in capsys.readouterr().out
    assert main(["call", "get_table", "table_id=nope", "--index", str(sample_index)]) == 2
    assert "no table with table_id 'nope'" in capsys.readouterr().err
    assert main(["call", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(spec.usage() in listed for spec in TOOLS)


def test_agent_prompt_states_what_a_hit_box_is() -> None:
    # tools/evidence.py cites a window of one unit or two adjacent units (sentences of one
    # passage, rows of one table); figures, equations and table summaries keep their region.
    prompt = " ".join(guide.agent_prompt("").split())
    assert (
        "A hit's bbox is one sentence, two adjacent ones where the answer spans them, or one or "
        "two adjacent table rows (a figure, equation or table summary: its region); a cell's, "
        "the cell." in prompt
    )
    assert "answering sentence" not in prompt
