"""Threads a tool call hands a database query to while it goes on with other work.

SQLite, DuckDB, PostgreSQL's client and ONNX Runtime all release the GIL while they work, so a
query run here takes the second core while the calling thread encodes a question, searches
vectors or runs another query: hybrid_search runs BM25 beside the dense search, and the evidence
finder reads a page's table rows beside its sentences.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# A few calls at once (the MCP server runs tool calls in threads); more just queue.
QUERY_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="docsym-query")


def in_background(function: Callable[..., T], *args: object) -> Future[T]:
    """``function(*args)`` on a query thread, in the caller's context: it reads the generation
    the call pinned (``Store.reading``)."""
    return QUERY_THREADS.submit(contextvars.copy_context().run, function, *args)
