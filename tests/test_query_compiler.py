"""The query compiler: grammar, validation, plans, run_plan over a real index, translation by a
local OpenAI-compatible endpoint, and a dependent plan driven over MCP in two calls."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from docsym.models.llm import ChatClient
from docsym.storage.backends import open_store
from docsym.tools.errors import ToolError
from docsym.tools.query_grammar import (
    MAX_LEAVES,
    Atomic,
    Dependent,
    Node,
    Parallel,
    QueryError,
    parse,
    render,
    validate,
)
from docsym.tools.query_plans import compile_expression, compile_query, run_plan, translate
from docsym.tools.search import hybrid_search
from tests.conftest import REPO
from tests.test_ids_match_text import assert_hit_holds


def shape(node: Node) -> tuple:
    """The tree without positions: two expressions mean the same when their shapes are equal."""
    if isinstance(node, Atomic):
        return ("atomic", node.question)
    if isinstance(node, Dependent):
        return ("dependent", shape(node.left), shape(node.right))
    return ("list", *(shape(p) for p in node.parts))


# -- grammar ---------------------------------------------------------------------------------
def test_every_production_parses_with_positions() -> None:
    atomic = parse("What is BM25")
    assert isinstance(atomic, Atomic) and (atomic.start, atomic.end, atomic.leaf) == (0, 12, 1)
    parallel = parse("What is A + What is B")
    assert isinstance(parallel, Parallel) and [p.question for p in parallel.parts] == [
        "What is A",
        "What is B",
    ]
    dependent = parse("Which X * What is {x}")
    assert isinstance(dependent, Dependent) and dependent.operator == 8
    assert dependent.right.placeholders == ["x"] and dependent.right.start == 10
    grouped = parse("(A + B) * C {v}")
    assert isinstance(grouped, Dependent) and isinstance(grouped.left, Parallel)


def test_times_binds_tighter_than_plus_and_chains_to_the_left() -> None:
    assert shape(parse("A + B * C {x}")) == (
        "list",
        ("atomic", "A"),
        ("dependent", ("atomic", "B"), ("atomic", "C {x}")),
    )
    assert shape(parse("A * B {a} * C {b}")) == (
        "dependent",
        ("dependent", ("atomic", "A"), ("atomic", "B {a}")),
        ("atomic", "C {b}"),
    )
    assert shape(parse("A × B {a}")) == shape(parse("A * B {a}")) == shape(parse("A x B {a}"))


def test_escapes_keep_operators_inside_a_question() -> None:
    node = parse(r"What does BM25 \+ DPR \(hybrid\) score + Is 2 \x 2 a design")
    assert [leaf.question for leaf in node.parts] == [
        "What does BM25 + DPR (hybrid) score",
        "Is 2 x 2 a design",
    ]
    assert shape(parse(render(node))) == shape(node)


@pytest.mark.parametrize(
    ("expression", "position", "words"),
    [
        ("", 0, "empty"),
        ("A + + B", 4, "an empty part"),
        ("(A + B", 6, "never closed"),
        ("A) + B", 1, "closes no '('"),
        ("A *", 3, "ends where"),
        ("A \\q", 2, "backslash escapes"),
        ("What is {company", 8, "never closed"),
        ("What } is", 5, "closes no placeholder"),
        ("A * B {bad name}", 6, "short name"),
        ("A * {x}", 4, "only a placeholder"),
        ("A * B", 2, "uses no placeholder"),
        ("What is {x}'s revenue", 8, "nothing to depend on"),
        ("A {x} * B {y}", 2, "nothing to depend on"),
        ("A * B {x} + C * D {x}", 18, "filled by two"),
        ("(" * 9 + "A" + ")" * 9, 8, "nest deeper"),
        (" + ".join(["Q"] * (MAX_LEAVES + 1)), 4 * MAX_LEAVES, "at most"),
    ],
)
def test_refusals_name_the_position_and_the_fix(expression: str, position: int, words: str) -> None:
    with pytest.raises(QueryError) as refused:
        validate(parse(expression))
    assert refused.value.position == position and words in str(refused.value)
    assert str(refused.value).startswith(f"at position {position}: ")


_WORDS = st.text(alphabet="abcdefx0123456789 ?',.-+*×()\\", min_size=1, max_size=18)


@st.composite
def _questions(draw) -> str:
    text = " ".join(draw(_WORDS).split())
    if not text or text.replace("\\", "").strip() == "":
        text = "what"
    if draw(st.booleans()):
        text += " {" + draw(st.sampled_from(["a", "b_1", "company"])) + "}"
    return text


@st.composite
def _trees(draw, depth: int = 0) -> Node:
    kind = draw(
        st.sampled_from(["atomic", "atomic", "list", "dependent"] if depth < 3 else ["atomic"])
    )
    if kind == "atomic":
        return Atomic(question=draw(_questions()), start=0, end=0)
    if kind == "list":
        parts = draw(st.lists(_trees(depth + 1), min_size=2, max_size=3))
        return Parallel(parts=parts, start=0, end=0)
    return Dependent(
        left=draw(_trees(depth + 1)), right=draw(_trees(depth + 1)), start=0, end=0, operator=0
    )


@given(_trees())
@settings(max_examples=300, deadline=None)
def test_rendered_trees_parse_back_to_the_same_tree(tree: Node) -> None:
    expression = render(tree)
    try:
        parsed = parse(expression)
    except QueryError as exc:  # only the bounds may refuse a generated tree
        assert "at most" in str(exc) or "nest deeper" in str(exc), (expression, exc)
        return
    assert shape(parsed) == shape(tree), expression
    assert shape(parse(render(parsed))) == shape(parsed)


@given(st.text(max_size=200))
@settings(max_examples=500, deadline=None)
def test_junk_gets_only_the_compilers_refusal(text: str) -> None:
    try:
        compiled = compile_expression(text)
    except QueryError as exc:  # and nothing else: no crash reaches a client
        assert 0 <= exc.position <= len(text) and str(exc).startswith("at position")
    else:
        assert compiled.leaves and shape(parse(compiled.expression)) == shape(compiled.tree)


# -- plans -----------------------------------------------------------------------------------
def test_plan_stages_and_what_each_leaf_waits_for() -> None:
    compiled = compile_expression("A * (B {x} + C * D {y}) + E")
    assert [(leaf.leaf, leaf.stage, leaf.needs, leaf.gives) for leaf in compiled.leaves] == [
        (1, 1, [], ["x"]),
        (2, 2, ["x"], []),
        (3, 1, [], ["y"]),
        (4, 2, ["y"], []),
        (5, 1, [], []),
    ]
    assert [(s.stage, s.leaves, s.waits_for) for s in compiled.stages] == [
        (1, [1, 3, 5], {}),
        (2, [2, 4], {"x": [1], "y": [3]}),
    ]
    chained = compile_expression("A * B {a} * C {b}")
    assert [leaf.stage for leaf in chained.leaves] == [1, 2, 3]
    assert chained.stages[2].waits_for == {"b": [1, 2]}  # the answer of the whole left side


def test_run_plan_runs_what_is_ready_and_fills_placeholders(sample_index: Path) -> None:
    store = open_store(sample_index)
    expression = (
        "Which fusion method adds min-max normalised scores * "
        "How does {method} fusion compare with RRF on the Maintenance split"
    )
    first = run_plan(store, expression, limit=3)
    assert [leaf.status for leaf in first.leaves] == ["ran", "waiting"]
    assert first.leaves[0].hits and all(h.bbox for h in first.leaves[0].hits)
    assert first.leaves[1].waits_for == ["method"] and first.to_answer == {"method": [1]}
    assert not first.complete and "answers=" in first.note
    second = run_plan(store, expression, {"method": "Linear"}, limit=3)
    assert [leaf.status for leaf in second.leaves] == ["answered", "ran"]
    assert second.leaves[1].question.startswith("How does Linear fusion compare")
    assert second.leaves[1].hits and second.complete
    both = run_plan(store, "What is RRF + What is BM25 + What is MiniLM", limit=2)
    assert [len(leaf.hits) for leaf in both.leaves] == [2, 2, 2]
    with pytest.raises(ToolError, match="does not use"):
        run_plan(store, expression, {"company": "x"})


def test_run_plan_hits_are_hybrid_searchs_and_a_table_leaf_leads_to_the_table(
    corpus: Path, tmp_path: Path
) -> None:
    """A leaf about a table's numbers gets the table's id and the tools that read it, not the
    page or chunk printed beside it; every leaf's hits are hybrid_search's, field for field."""
    from docsym.indexer.pipeline import index_paths

    assert index_paths([corpus / "papers" / "2305.03393v1-pg9.pdf"], tmp_path / "ix").ok
    store = open_store(tmp_path / "ix")
    table_leaf = "What TEDS score does OTSL reach on complex tables"
    plan = run_plan(store, f"{table_leaf} + What is OTSL", limit=4)
    for leaf in plan.leaves:
        alone = hybrid_search(store, leaf.question, limit=4).hits
        assert [h.model_dump() for h in leaf.hits] == [h.model_dump() for h in alone]
    top = plan.leaves[0].hits[0]
    (table_id,) = store.sql().execute("SELECT table_id FROM tables").fetchone()
    assert (top.table_name, top.primary_key) == ("tables", table_id)
    assert top.cited and all(c.startswith(f"{table_id}-r") for c in top.cited) and top.bbox
    assert f"get_table(table_id='{table_id}')" in top.read_with and "lookup_cells" in top.read_with
    shown = plan.to_markdown()
    assert f"tables.caption:{table_id}" in shown and f"get_table(table_id='{table_id}')" in shown
    for leaf in plan.leaves:
        for hit in leaf.hits:
            assert_hit_holds(store, hit, leaf.question)
    store.close()


# -- translation -----------------------------------------------------------------------------
@pytest.fixture
def chat_endpoint() -> Iterator[tuple[str, list[str], list[dict]]]:
    """A local server speaking the chat-completions API: answers from a queue, records bodies."""
    replies: list[str] = []
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            answer = {"choices": [{"message": {"role": "assistant", "content": replies.pop(0)}}]}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", replies, requests
    server.shutdown()


def test_translation_samples_again_until_the_expression_validates(chat_endpoint) -> None:
    url, replies, requests = chat_endpoint
    replies += [
        "Which company * What revenue",
        "```\nWhich company * What was {company}'s revenue\n```",
    ]
    compiled = translate("What was the revenue of that company?", ChatClient(url, "tiny"))
    assert compiled.expression == "Which company * What was {company}'s revenue"
    assert compiled.translated_from == "What was the revenue of that company?"
    assert [r["temperature"] for r in requests] == [0.0, 0.4]
    assert (
        "Question: What was the revenue of that company?" in requests[0]["messages"][0]["content"]
    )
    replies += ["A * B", "A * B", "A * B"]
    with pytest.raises(ToolError, match="no valid expression"):
        translate("Anything?", ChatClient(url, "tiny"))


def test_without_an_endpoint_the_client_is_told_to_translate(monkeypatch) -> None:
    from docsym.runtime.settings import reload_settings

    monkeypatch.delenv("DOCSYM_LLM_BASE_URL", raising=False)
    reload_settings()
    with pytest.raises(ToolError, match="compile_question prompt"):
        compile_query(question="What was Uber's revenue per employee?")


# -- over MCP ----------------------------------------------------------------------------------
def test_a_dependent_plan_over_stdio_in_two_calls(sample_index: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(sample_index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    expression = (
        "Which retriever family fuses BM25 and MiniLM * Which constant does {family} RRF use"
    )

    async def scenario() -> None:
        async with Client(server) as client:
            compiled = await client.call_tool("compile_query", {"expression": expression})
            assert compiled.structured_content["stages"][1]["waits_for"] == {"family": [1]}
            first = await client.call_tool("run_plan", {"expression": expression, "limit": 3})
            leaves = first.structured_content["leaves"]
            assert leaves[0]["hits"] and leaves[1]["status"] == "waiting"
            second = await client.call_tool(
                "run_plan",
                {"expression": expression, "answers": {"family": "hybrid"}, "limit": 3},
            )
            leaves = second.structured_content["leaves"]
            assert leaves[1]["question"] == "Which constant does hybrid RRF use"
            assert any("k = 60" in hit["text"] for hit in leaves[1]["hits"])
            bad = await client.call_tool("compile_query", {"expression": "A * B"})
            assert bad.is_error and "position 2" in bad.content[0].text

    anyio.run(scenario)
