"""``docsym config CLIENT``: the snippet that adds docsym to an MCP client's configuration.

Desktop clients start a stdio server without the shell's PATH (a virtualenv's ``bin`` is not on
it) and from a working directory of their own, so a stdio snippet names this install's docsym
executable and the index by absolute paths. An HTTP snippet names the server's URL and sends the
bearer token in an ``Authorization`` header.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

CLIENTS = ("claude-desktop", "vscode", "cursor", "claude-code")
DEFAULT_URL = "http://127.0.0.1:8765/mcp"  # docsym serve --transport http's defaults

# Where each client reads the snippet: said on stderr, so stdout is the snippet alone.
WHERE = {
    "claude-desktop": "add it to claude_desktop_config.json (Settings › Developer › Edit Config), "
    "beside any servers already there, and restart Claude Desktop",
    "vscode": "add it to .vscode/mcp.json in the workspace, or to your user mcp.json "
    "(command: MCP: Open User Configuration)",
    "cursor": "add it to ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
    "claude-code": "run it in the project's folder (add --scope user before the name for every "
    "project)",
}


class ConfigError(ValueError):
    """The client cannot take the server as asked; the message says what it can take."""


@dataclass(frozen=True)
class Server:
    """The server a snippet names: a stdio command line, or an HTTP URL with its token."""

    name: str
    command: list[str] | None = None  # stdio: absolute executable first
    url: str | None = None  # http
    token: str | None = None  # http: sent as Authorization: Bearer TOKEN


def docsym_command() -> list[str]:
    """The absolute command line that starts this install's docsym: the console script it was
    run as, else the one installed beside this interpreter, else ``python -P -m docsym``. Never
    whatever ``docsym`` comes first on PATH: that may be another install or a version
    manager's shim, which chooses a Python from the caller's environment."""
    invoked = Path(sys.argv[0])
    if invoked.stem == "docsym" and invoked.suffix in ("", ".exe") and invoked.is_file():
        return [os.path.abspath(invoked)]
    scripts = {sysconfig.get_path("scripts"), os.path.dirname(os.path.abspath(sys.executable))}
    beside = shutil.which("docsym", path=os.pathsep.join(sorted(scripts)))
    if beside is not None:
        return [os.path.abspath(beside)]
    # The interpreter's path as it is, not resolved: a virtualenv's python is a link, and
    # following it would leave the virtualenv. -P: a checkout in the working directory must
    # not shadow the installed package.
    return [os.path.abspath(sys.executable), "-P", "-m", "docsym"]


def serve_command(target: Path | str) -> list[str]:
    """``docsym serve`` over stdio for an index directory or a PostgreSQL database's URL."""
    where = ["--index", str(target)] if isinstance(target, Path) else ["--postgres", target]
    return [*docsym_command(), "serve", *where]


def snippet(client: str, server: Server) -> str:
    """What to add to ``client``'s configuration: JSON, or a command line for claude-code."""
    if client == "claude-code":
        return _claude_code(server)
    if client == "claude-desktop" and server.command is None:
        raise ConfigError(
            "Claude Desktop's config file starts local (stdio) servers only: leave out "
            "--transport http, or add the HTTP server as a custom connector (Settings › "
            "Connectors)"
        )
    key = "servers" if client == "vscode" else "mcpServers"
    entry = _stdio_entry(client, server) if server.command else _http_entry(client, server)
    return _json({key: {server.name: entry}})


def _stdio_entry(client: str, server: Server) -> dict:
    assert server.command is not None
    entry: dict = {"type": "stdio"} if client == "vscode" else {}
    return entry | {"command": server.command[0], "args": server.command[1:]}


def _http_entry(client: str, server: Server) -> dict:
    entry: dict = {"type": "http"} if client == "vscode" else {}
    entry["url"] = server.url
    if server.token:
        entry["headers"] = {"Authorization": f"Bearer {server.token}"}
    return entry


def _json(value: object, depth: int = 0) -> str:
    """JSON as people write these files: an object's members one per line, a list of strings
    on one line (json.dumps(indent=2) would give every argument a line of its own)."""
    if not isinstance(value, dict) or not value:
        return json.dumps(value, ensure_ascii=False)
    inner = "  " * (depth + 1)
    members = [f"{inner}{_json(k)}: {_json(v, depth + 1)}" for k, v in value.items()]
    return "{\n" + ",\n".join(members) + "\n" + "  " * depth + "}"


def _claude_code(server: Server) -> str:
    if server.command is not None:
        return shlex.join(["claude", "mcp", "add", server.name, "--", *server.command])
    assert server.url is not None
    header = ["--header", f"Authorization: Bearer {server.token}"] if server.token else []
    add = ["claude", "mcp", "add", "--transport", "http", *header]  # options before the name
    return shlex.join([*add, server.name, server.url])
