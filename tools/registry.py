"""Every tool docsym offers, in the order clients see them. Adding a tool is adding its spec
here (the spec lives next to its function); the server, the CLI's ``docsym call``, the agent
prompt and the README's list all follow."""

from __future__ import annotations

from docsym.tools import (
    calculator,
    documents,
    entities,
    outline,
    pages,
    passages,
    query_plans,
    rank_nodes,
    search,
    sql,
    subtree,
    tables,
)
from docsym.tools.errors import ToolError
from docsym.tools.spec import ToolSpec

TOOLS: tuple[ToolSpec, ...] = (
    documents.LIST_DOCUMENTS,
    sql.RUN_SQL,
    search.HYBRID_SEARCH,
    search.VECTOR_SEARCH,
    passages.READ_PASSAGE,
    outline.GET_OUTLINE,
    subtree.SELECT_SUBTREE,
    entities.FIND_ENTITIES,
    rank_nodes.RANK_NODES,
    tables.GET_TABLE,
    tables.LOOKUP_CELLS,
    pages.VIEW_PAGE,
    pages.PAGE_IMAGE,
    calculator.CALCULATE,
    query_plans.COMPILE_QUERY,
    query_plans.RUN_PLAN,
)


def tool(name: str) -> ToolSpec:
    for spec in TOOLS:
        if spec.name == name:
            return spec
    raise ToolError(f"no tool {name!r}; the tools are: {', '.join(s.name for s in TOOLS)}")
