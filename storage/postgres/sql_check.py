"""Which client SQL may run on the PostgreSQL store: a query, and nothing else.

The read-only role confines what a statement may touch (``storage/postgres/ddl.py``); this check
closes the one thing no privilege can: ``SHOW`` (and ``EXPLAIN (SETTINGS)``) print the server's
settings to any role. A statement must start with a query's first word. The server's own
lexer decides what a statement is, so the first word is found as it finds it: past white space,
line comments and nested block comments.
"""

from __future__ import annotations

import re

from docsym.storage.sql_pool import SqlFailed

# What client SQL may start with: a query. The other statements are writes, which the read-only
# role refuses anyway, or SHOW, EXPLAIN and the like, which show the server.
QUERY_KEYWORDS = {"select", "with", "values", "table", "("}
_LINE_COMMENT = re.compile(r"--[^\n\r]*")
# An identifier as PostgreSQL reads one: any byte past ASCII is a letter to it.
_WORD = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*")


def check_query(sql: str) -> None:
    """Refuse client SQL that is not a query, naming the statement it is."""
    word = first_token(sql)
    if word not in QUERY_KEYWORDS:
        raise SqlFailed(
            f"run_sql is read-only and runs queries only, and this statement starts with "
            f"{word[:40].upper() or 'nothing'}: write a SELECT (or WITH, VALUES, TABLE)"
        )


def first_token(sql: str) -> str:
    """The statement's first token as PostgreSQL reads it, past white space and comments (block
    comments nest): a word in lower case, or one character; empty if there is none."""
    at = 0
    while at < len(sql):
        if sql[at] in " \t\n\r\f\v":
            at += 1
        elif sql.startswith("--", at):
            at = _LINE_COMMENT.match(sql, at).end()
        elif sql.startswith("/*", at):
            at = _block_comment_end(sql, at)
        else:
            break
    word = _WORD.match(sql, at)
    return word.group(0).lower() if word else sql[at : at + 1]


def _block_comment_end(sql: str, at: int) -> int:
    depth = 0
    while at < len(sql):
        if sql.startswith("/*", at):
            depth, at = depth + 1, at + 2
        elif sql.startswith("*/", at):
            depth, at = depth - 1, at + 2
            if depth == 0:
                return at
        else:
            at += 1
    return at
