"""``compile_query`` and ``run_plan``: a complex question as a validated plan of atomic
retrievals (QCompiler), run step by step by any client.

A plan numbers the expression's questions (leaves) left to right and puts each in a stage: a
leaf without placeholders runs at once; a leaf with placeholders waits until the leaves that
answer them (the left side of its '*') have run and the client has given the values. Nothing is
kept between calls: ``run_plan`` takes the expression and the answers so far, runs every leaf it
can that still matters, with the same retrieval as ``hybrid_search``, and says which leaves wait
for which names. The client reads the evidence, answers, and calls again.

``compile_query`` also translates a question in natural language when an OpenAI-compatible
endpoint is configured (``DOCSYM_LLM_BASE_URL``/``DOCSYM_LLM_MODEL``): it asks at several
temperatures and keeps the first expression that validates, as QCompiler samples until its AST
is valid. Without an endpoint the client's own model translates, with the ``compile_question``
prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field

from docsym.models.llm import ChatClient, LlmError, chat_client
from docsym.runtime.settings import get_settings
from docsym.storage.store import Store
from docsym.tools.errors import ToolError
from docsym.tools.filters import MAX_FILTER_CHARS
from docsym.tools.query_grammar import (
    MAX_EXPRESSION_CHARS,
    Atomic,
    Dependent,
    Node,
    QueryError,
    leaves,
    parse,
    render,
    validate,
)
from docsym.tools.results import ToolResult, trimmed, with_note
from docsym.tools.search import MAX_LIMIT, SearchHit, hits_markdown, hybrid_search
from docsym.tools.spec import Arguments, Label, Name, Progress, ToolSpec

MAX_ANSWER_CHARS = 300
MAX_CONCURRENT_LEAVES = 4
TEMPERATURES = (0.0, 0.4, 0.8)


class LeafPlan(BaseModel):
    leaf: int
    question: str
    needs: list[str] = Field(description="placeholders it waits for")
    gives: list[str] = Field(description="placeholders its answer fills (for later leaves)")
    stage: int = Field(description="1 runs at once; n runs after stage n-1 is answered")


class Stage(BaseModel):
    stage: int
    leaves: list[int]
    waits_for: dict[str, list[int]] = Field(
        default_factory=dict, description="placeholder -> the leaves whose answers fill it"
    )


class CompiledQuery(ToolResult):
    expression: str = Field(description="the expression, rendered with minimal parentheses")
    tree: Node
    leaves: list[LeafPlan]
    stages: list[Stage]
    translated_from: str | None = Field(
        default=None, description="the natural-language question it was translated from"
    )
    note: str | None = None

    def to_markdown(self) -> str:
        lines = [f"Expression: {self.expression}", "", "Tree:", *_outline(self.tree), "", "Plan:"]
        for stage in self.stages:
            waits = "; ".join(
                f"{{{n}}} from leaf {_leaves(ids)}" for n, ids in stage.waits_for.items()
            )
            lines.append(
                f"- stage {stage.stage}: leaves {_leaves(stage.leaves)}"
                + (f" (after {waits})" if waits else " (now, in parallel)")
            )
        for leaf in self.leaves:
            lines.append(f"  {leaf.leaf}. {leaf.question}")
        return with_note("\n".join(lines), self.note)


class LeafRun(BaseModel):
    leaf: int
    question: str = Field(description="the question as run, placeholders filled")
    status: str = Field(description="ran, answered (its placeholders are given) or waiting")
    waits_for: list[str] = Field(default_factory=list)
    hits: list[SearchHit] = Field(default_factory=list)


class PlanRun(ToolResult):
    expression: str
    answers: dict[str, str]
    leaves: list[LeafRun]
    to_answer: dict[str, list[int]] = Field(
        default_factory=dict,
        description="placeholders the client can answer now -> the leaves whose evidence does",
    )
    complete: bool = Field(description="every leaf has run or been answered")
    note: str | None = None

    def to_markdown(self) -> str:
        lines = [f"Plan: {self.expression}"]
        for leaf in self.leaves:
            lines += ["", f"## leaf {leaf.leaf} ({leaf.status}): {leaf.question}"]
            if leaf.waits_for:
                lines.append(f"waits for {', '.join('{' + n + '}' for n in leaf.waits_for)}")
            if leaf.hits:  # shown as hybrid_search shows them
                lines.append(hits_markdown(leaf.hits))
        return with_note("\n".join(lines), self.note)


def _leaves(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _outline(node: Node, depth: int = 0) -> list[str]:
    pad = "  " * depth
    if isinstance(node, Atomic):
        return [f"{pad}- leaf {node.leaf}: {node.question}"]
    if isinstance(node, Dependent):
        return [
            f"{pad}- dependent (right side waits for the left side's answer):",
            *_outline(node.left, depth + 1),
            *_outline(node.right, depth + 1),
        ]
    return [f"{pad}- parallel:", *(line for p in node.parts for line in _outline(p, depth + 1))]


# -- compiling -------------------------------------------------------------------------------
def compile_expression(expression: str) -> CompiledQuery:
    """Parse, validate and plan ``expression``, or refuse with a ``QueryError``."""
    tree = parse(expression)
    fills = validate(tree)
    plans, stages = plan(tree, fills)
    return CompiledQuery(expression=render(tree), tree=tree, leaves=plans, stages=stages)


def plan(tree: Node, fills: dict[str, Dependent]) -> tuple[list[LeafPlan], list[Stage]]:
    """Each leaf's placeholders, what it fills, its stage; and the leaves of each stage."""
    found = leaves(tree)
    givers = {name: [leaf.leaf for leaf in leaves(op.left)] for name, op in fills.items()}
    stage_of: dict[int, int] = {}
    for leaf in found:  # givers stand left of what they fill, so they are staged first
        needs = list(dict.fromkeys(leaf.placeholders))
        stage_of[leaf.leaf] = 1 + max(
            (stage_of[g] for name in needs for g in givers[name]), default=0
        )
    plans = [
        LeafPlan(
            leaf=leaf.leaf,
            question=leaf.question,
            needs=list(dict.fromkeys(leaf.placeholders)),
            gives=[name for name, ids in givers.items() if leaf.leaf in ids],
            stage=stage_of[leaf.leaf],
        )
        for leaf in found
    ]
    stages = []
    for number in sorted(set(stage_of.values())):
        members = [p for p in plans if p.stage == number]
        waits = {name: givers[name] for p in members for name in p.needs}
        stages.append(Stage(stage=number, leaves=[p.leaf for p in members], waits_for=waits))
    return plans, stages


def compile_query(expression: str | None = None, question: str | None = None) -> CompiledQuery:
    """Compile an expression; or translate a question first, when an LLM endpoint is set."""
    if expression and question:
        raise ToolError("give expression or question, not both")
    if expression:
        return compile_expression(expression)
    if not question or not question.strip():
        raise ToolError(
            "give expression (e.g. 'Which company ... * What was {company}'s revenue') or "
            "question (natural language, translated when an LLM endpoint is configured)"
        )
    client = chat_client(get_settings())
    if client is None:
        raise ToolError(
            "no LLM endpoint is configured on the server (DOCSYM_LLM_BASE_URL and "
            "DOCSYM_LLM_MODEL), so it cannot translate the question: write the expression "
            "yourself with the compile_question prompt and pass it as expression"
        )
    return translate(question, client)


def compile_prompt(question: str) -> str:
    """How to write a question as a query-compiler expression (QCompiler's G[q]), with worked
    examples; for the client's own model, and for the server's LLM endpoint when it has one."""
    return f"""\
Rewrite the question as an expression of atomic questions, each answerable from one place in
the documents. Grammar:

    Complex   ::= List
    List      ::= Dependent | List '+' Dependent      independent parts, run in parallel
    Dependent ::= Atomic | Dependent '*' Atomic       the right side needs the left's answer
    Atomic    ::= question | '(' List ')'

- '+' joins parts that do not need each other: comparisons, two facts asked together, the
  values a calculation needs. '*' binds tighter than '+'; parentheses group.
- 'A * B' means B can only be asked once A is answered. B names what it takes from A's answer
  with a placeholder in braces: {{company}}, {{dataset}}, {{year}}. Every part after '*' has a
  placeholder, and a placeholder appears only after a '*'. One name per dependency.
- Each atomic question stands on its own: name the document or subject in it (not "it"), keep
  it short, ask for one fact. Do the arithmetic afterwards with calculate.
- A question may hold any character but + * × ( ) {{ }}: write \\+ or \\( for a literal one, and
  \\x for a lone letter x between spaces (it would read as ×).

Examples:
- "Which reports more participants, the CiteSee lab study or the Paper Plain usability study?"
  How many participants took part in the CiteSee lab study + How many participants took part
  in the Paper Plain usability study
- "What were the Gross Bookings of the company whose 10-K reports about 29,300 employees?"
  Which company's 10-K reports about 29,300 employees * What were {{company}}'s Gross Bookings
  in 2021
- "By how much did Uber's revenue grow from 2020 to 2021, in percent?"
  What was Uber's total revenue in 2020 + What was Uber's total revenue in 2021
  (then calculate pct_change(old, new))
- "Which encoder does the retriever that LongEval used for alignment build on, and how large
  is its training set?"
  Which retriever does LongEval use for alignment * (Which encoder does {{retriever}} build on +
  How many training questions does {{retriever}} use)

Then: compile_query(expression) to check it, run_plan(expression) to get each ready part's
evidence; answer the placeholders run_plan lists and call it again with answers={{...}}.

Question: {question}
"""


def translate(
    question: str, client: ChatClient, temperatures: tuple[float, ...] = TEMPERATURES
) -> CompiledQuery:
    """Ask the endpoint for an expression at each temperature; keep the first that validates."""
    problems = []
    messages = [{"role": "user", "content": compile_prompt(question) + TRANSLATE_TAIL}]
    for temperature in temperatures:
        try:
            reply = client.complete(messages, temperature=temperature, max_tokens=400)
        except LlmError as exc:
            raise ToolError(f"the LLM endpoint failed: {exc}") from None
        candidate = _expression_in(reply)
        try:
            compiled = compile_expression(candidate)
        except QueryError as exc:
            problems.append(f"at temperature {temperature}: {candidate[:200]!r}: {exc}")
            continue
        compiled.translated_from = question
        return compiled
    raise ToolError(
        "the LLM endpoint gave no valid expression (" + "; ".join(problems) + "). Write the "
        "expression yourself with the compile_question prompt."
    )


TRANSLATE_TAIL = "\n\nReply with the expression only, on one line, nothing else."


def _expression_in(reply: str) -> str:
    """The expression in a model's reply: the last non-empty line, code fences stripped."""
    lines = [line.strip().strip("`") for line in reply.strip().splitlines()]
    lines = [line for line in lines if line and not line.lower().startswith(("expression:", "```"))]
    return lines[-1] if lines else ""


# -- running ---------------------------------------------------------------------------------
def run_plan(
    store: Store,
    expression: str,
    answers: dict[str, str] | None = None,
    limit: int = 5,
    views: list[str] | None = None,
    filter: str = "",
    progress: Progress | None = None,
) -> PlanRun:
    """Run every leaf whose placeholders are answered and whose evidence is still needed; say
    which leaves wait for which names. ``progress`` hears of each leaf as its search ends."""
    compiled = compile_expression(expression)
    given = _check_answers(answers or {}, compiled)
    runs: list[LeafRun] = []
    runnable: list[LeafRun] = []
    for leaf in compiled.leaves:
        question = fill_placeholders(leaf.question, given)
        missing = [name for name in leaf.needs if name not in given]
        if missing:
            runs.append(
                LeafRun(leaf=leaf.leaf, question=question, status="waiting", waits_for=missing)
            )
        elif leaf.gives and all(name in given for name in leaf.gives):
            runs.append(LeafRun(leaf=leaf.leaf, question=question, status="answered"))
        else:
            run = LeafRun(leaf=leaf.leaf, question=question, status="ran")
            runs.append(run)
            runnable.append(run)
    searches = [
        (lambda run=run: hybrid_search(store, run.question, filter, limit, views))
        for run in runnable
    ]
    finished = _leaf_reporter(runnable, progress)
    for run, result in zip(runnable, run_concurrently(searches, finished), strict=True):
        run.hits = result.hits
    done = {r.leaf for r in runs if r.status != "waiting"}
    givers = {n: ids for stage in compiled.stages for n, ids in stage.waits_for.items()}
    to_answer = {
        name: ids
        for name, ids in givers.items()
        if name not in given and all(i in done for i in ids)
    }
    complete = all(r.status != "waiting" for r in runs)
    return PlanRun(
        expression=compiled.expression,
        answers=given,
        leaves=runs,
        to_answer=to_answer,
        complete=complete,
        note=_next_step(to_answer, complete),
    )


def _leaf_reporter(
    runnable: list[LeafRun], progress: Progress | None
) -> Callable[[int], None] | None:
    """A callback for run_concurrently that tells ``progress`` how many leaves have run."""
    if progress is None:
        return None
    done = 0

    def finished(n: int) -> None:
        nonlocal done  # only the calling thread runs it (run_concurrently's event loop)
        done += 1
        run = runnable[n]
        progress(done, len(runnable), f"leaf {run.leaf} searched: {trimmed(run.question, 80)}")

    return finished


def run_concurrently(
    calls: list[Callable[[], object]], finished: Callable[[int], None] | None = None
) -> list:
    """Call each in a worker thread, at most MAX_CONCURRENT_LEAVES at once; results in order.
    ``finished(n)`` is called as call n returns, always from the calling thread."""
    results: list[object] = [None] * len(calls)
    if len(calls) <= 1:  # one search needs no event loop
        for n, call in enumerate(calls):
            results[n] = call()
            if finished is not None:
                finished(n)
        return results

    async def all_of_them() -> None:
        limiter = anyio.CapacityLimiter(MAX_CONCURRENT_LEAVES)
        async with anyio.create_task_group() as group:
            for n, call in enumerate(calls):
                group.start_soon(_one, n, call, limiter)

    async def _one(n: int, call: Callable[[], object], limiter: anyio.CapacityLimiter) -> None:
        results[n] = await anyio.to_thread.run_sync(call, limiter=limiter)
        if finished is not None:
            finished(n)

    anyio.run(all_of_them)
    return results


def _check_answers(answers: dict[str, str], compiled: CompiledQuery) -> dict[str, str]:
    known = {name for leaf in compiled.leaves for name in leaf.needs}
    given = {}
    for name, value in answers.items():
        if name not in known:
            raise ToolError(
                f"answers has {name!r}, which the expression does not use; its placeholders are: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        value = str(value).strip()
        if not value or len(value) > MAX_ANSWER_CHARS or any(ch in value for ch in "{}"):
            raise ToolError(
                f"answers[{name!r}] must be a short value (1-{MAX_ANSWER_CHARS} characters, no "
                "braces), such as a name or a number read from the evidence"
            )
        given[name] = value
    return given


def fill_placeholders(question: str, given: dict[str, str]) -> str:
    """A leaf question with each {name} it holds replaced by the answer given for it."""
    for name, value in given.items():
        question = question.replace(f"{{{name}}}", value)
    return question


def _next_step(to_answer: dict[str, list[int]], complete: bool) -> str:
    if to_answer:
        asks = "; ".join(f"{{{n}}} from leaf {_leaves(ids)}" for n, ids in to_answer.items())
        return (
            f"Next: read the evidence and answer {asks}, then call run_plan again with the same "
            "expression and answers={...} including them."
        )
    if complete:
        return "Every leaf has run or been answered: answer the question from the evidence."
    return None


class CompileQueryArgs(Arguments):
    expression: Annotated[
        str | None,
        Field(
            description="An expression, e.g. 'A + B' or 'Which X ... * What ... {x} ...'",
            max_length=MAX_EXPRESSION_CHARS,
        ),
    ] = None
    question: Annotated[
        str | None,
        Field(description="A natural-language question to translate (needs the server's LLM "
              "endpoint); give this or expression", max_length=2000),
    ] = None  # fmt: skip


class RunPlanArgs(Arguments):
    expression: Annotated[
        str, Field(description="The compiled expression", max_length=MAX_EXPRESSION_CHARS)
    ]
    answers: Annotated[
        dict[Name, Label] | None,
        Field(description="placeholder -> value you read from earlier leaves' evidence",
              max_length=16),
    ] = None  # fmt: skip
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="hits per leaf")] = 5
    views: Annotated[
        list[Name] | None,
        Field(description="'table.column' encodable views; default: hybrid_search's",
              max_length=20),
    ] = None  # fmt: skip
    filter: Annotated[
        str,
        Field(description="Filter expression applied to every leaf", max_length=MAX_FILTER_CHARS),
    ] = ""


COMPILE_QUERY = ToolSpec(
    name="compile_query",
    summary="a multi-part or multi-hop question as a checked plan ('+' parallel, '*' "
    "dependent, {placeholders}).",
    description=(
        "Compile a complex question into a plan of atomic retrievals (QCompiler). Grammar: "
        "A + B = independent parts (run in parallel); A * B = B needs A's answer, named by a "
        "placeholder in B such as {company}; '*' binds tighter than '+'; parentheses group. "
        "Returns the syntax tree, the leaves in order and the stages (what runs now, what "
        "waits for which placeholder), or a refusal naming the position and the fix. Give "
        "expression, or question to have the server's LLM endpoint translate it (when one is "
        "configured). Then run it with run_plan. The compile_question prompt explains how to "
        "write expressions."
    ),
    arguments=CompileQueryArgs,
    function=compile_query,
    needs_store=False,
)

RUN_PLAN = ToolSpec(
    name="run_plan",
    summary="run a plan: hits for each ready leaf; call again with answers={name: value}.",
    description=(
        "Run a compiled expression (see compile_query) step by step: every leaf whose "
        "placeholders are answered gets its own hybrid_search hits (doc, page, bbox, excerpt), "
        "independent leaves concurrently; leaves that wait say for which placeholders. Read "
        "the evidence, answer the placeholders the reply lists under to_answer, and call again "
        "with the same expression and answers={name: value}. Stateless: any client can drive "
        "it over stdio or HTTP."
    ),
    arguments=RunPlanArgs,
    function=run_plan,
    evidence=True,
)
