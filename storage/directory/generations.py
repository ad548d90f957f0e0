"""One generation for both stores: a reader sees a DuckDB file and exactly the vector entries
published with it, whenever the indexer is killed.

``index.duckdb`` is replaced atomically (``writer.py``), but ``vectors.sqlite`` is one
file written in place while the indexer runs. So every vector entry is stamped: ``born`` is the
generation that added it, ``died`` the one that replaced or removed it (NULL while live). Each
publish records its number in the DuckDB file (``docsym_meta.generation``), and a reader that
sees generation P keeps the entries with ``born <= P`` and not ``died <= P``: the entries written
after P are invisible until the DuckDB file that knows their documents is published, and the
entries those documents replace stay visible until then.

After a publish the indexer deletes the entries that died at or before it; at the start of a
run it drops what a killed run left past the published generation (entries born later, deaths
stamped later), so the two files agree again without re-indexing anything.
"""

from __future__ import annotations

import duckdb

from docsym.storage.migrations import read_meta, write_meta

KEY = "generation"


def published(con: duckdb.DuckDBPyConnection) -> int:
    """The generation a DuckDB file was published as (0 for an index older than stamps)."""
    try:
        value = read_meta(con, KEY)
    except duckdb.CatalogException:  # no meta table: an empty or very old index
        return 0
    return int(value) if value is not None else 0


def stamp(con: duckdb.DuckDBPyConnection, generation: int) -> None:
    """Record, in the file about to be published, which generation it is."""
    write_meta(con, KEY, str(generation))


def visible(generation: int, alias: str = "e") -> str:
    """SQL condition on ``entries`` (as ``alias``): the entries a reader of ``generation`` sees."""
    g = int(generation)  # an int, so the literal below cannot carry anything else
    return f"({alias}.born <= {g} AND ({alias}.died IS NULL OR {alias}.died > {g}))"
