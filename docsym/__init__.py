"""docsym: folders of documents turned into a neuro-symbolic index, served to LLM clients over MCP.

The Python API, which the CLI and the MCP server are built on::

    from pathlib import Path
    import docsym

    docsym.index_paths([Path("papers")], Path("my-index"))     # build or update an index
    store = docsym.open_store("my-index")                       # open it for reading
    result = docsym.hybrid_search(store, "What is SPECTER trained on?")
    for hit in result.hits:                                     # pydantic models
        print(hit.doc_id, hit.page_number, hit.bbox, hit.text)
    print(result.to_markdown())                                 # what an MCP client reads

Every tool an MCP client sees is here as a plain function over a store (``run_sql``,
``hybrid_search``, ``vector_search``, ``read_passage``, ``get_outline``, ``select_subtree``,
``find_entities``, ``rank_nodes``, ``get_table``, ``lookup_cells``, ``view_page``,
``list_documents``, ``compile_query``, ``run_plan``; ``calculate`` takes no store), and
``page_image``, which the evidence view calls.

Names load on first use, so ``import docsym`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from docsym.runtime.offline import no_telemetry

# Before anything docsym imports loads: ONNX Runtime reads its switch once, at import.
no_telemetry()

try:
    __version__ = version("docsym")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0"

# Public name -> the module that defines it.
_API: dict[str, str] = {
    "index_paths": "docsym.indexer.pipeline",
    "open_store": "docsym.storage.backends",
    "Store": "docsym.storage.store",
    "ToolError": "docsym.tools.errors",
    "TOOLS": "docsym.tools.registry",
    "list_documents": "docsym.tools.documents",
    "run_sql": "docsym.tools.sql",
    "hybrid_search": "docsym.tools.search",
    "vector_search": "docsym.tools.search",
    "read_passage": "docsym.tools.passages",
    "get_outline": "docsym.tools.outline",
    "select_subtree": "docsym.tools.subtree",
    "find_entities": "docsym.tools.entities",
    "rank_nodes": "docsym.tools.rank_nodes",
    "get_table": "docsym.tools.tables",
    "lookup_cells": "docsym.tools.tables",
    "view_page": "docsym.tools.pages",
    "page_image": "docsym.tools.pages",
    "calculate": "docsym.tools.calculator",
    "compile_query": "docsym.tools.query_plans",
    "run_plan": "docsym.tools.query_plans",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'docsym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
