"""Connections to the PostgreSQL store: the writer's and the servers' pools, and the reader role's.

A store is named by a PostgreSQL URL (``postgresql://user@host/db``). Client SQL runs on a
separate connection authenticated as the read-only role (``storage/postgres/ddl.py``): its
session user has no right to become anyone else, so no statement can take more rights than
SELECT on the views.
"""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from docsym.storage.postgres.ddl import READER_ROLE


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection:
    con = psycopg.connect(url, autocommit=autocommit)
    register_vector(con)
    return con


def reader_url(url: str, password: str | None) -> str:
    """The store's URL with the read-only role as its user."""
    params = conninfo_to_dict(url)
    params["user"] = READER_ROLE
    params.pop("password", None)
    if password:
        params["password"] = password
    return make_conninfo(**params)


def redacted(url: str) -> str:
    """The URL without its password, for messages and status."""
    params = conninfo_to_dict(url)
    if "password" in params:
        params["password"] = "***"
    host = params.get("host", "")
    return f"postgresql://{params.get('user', '')}@{host}/{params.get('dbname', '')}"
