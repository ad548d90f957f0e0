"""The MCP server over streamable HTTP, at ``/mcp``, guarded for a local machine.

Three guards of who may call, outermost first:

* an optional static bearer token (a small ASGI middleware: the SDK's ``TokenVerifier`` hook
  needs OAuth ``AuthSettings`` with an issuer URL, which a shared secret does not have);
* the SDK's ``TransportSecuritySettings``: the Host header must name this server (421 otherwise)
  and a browser's Origin header must be an allowed origin (403 otherwise), which defeats DNS
  rebinding pages that would otherwise reach a server bound to 127.0.0.1;
* binding to 127.0.0.1 unless told otherwise, with a loud warning when a non-loopback address
  is served without a token.

Then limits that keep one client from crowding out the others (``http_limits``): sessions per
client address beside the total, idle sessions closed after minutes, a deadline on reading each
request and a bound on open connections, all from the settings (the ``http_*`` fields).

``GET /view`` is the same evidence view for a plain browser (``browser_view``): a static page,
served ahead of the token guard, whose every data call goes to ``/mcp`` with the token.

Every log line goes to stderr (uvicorn's access log defaults to stdout; it is redirected).
"""

from __future__ import annotations

import copy
import hmac
import ipaddress
import logging
import sys
from pathlib import Path
from urllib.parse import urlsplit

import uvicorn
import uvicorn.config
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from docsym.mcp_server.browser_view import BrowserViewRoutes, view_url
from docsym.mcp_server.http_limits import (
    DropAbandonedRequests,
    SessionShareMiddleware,
    open_session_ids,
    request_deadline_protocol,
)
from docsym.mcp_server.server import build_server, tune_serving_process
from docsym.runtime.settings import get_settings

log = logging.getLogger("docsym.mcp.http")

MCP_PATH = "/mcp"
# The largest valid call is under 100 kB (a 20,000-character SQL statement); refuse bigger
# bodies with 413 before anything parses them.
MAX_BODY_BYTES = 1 << 20
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def http_app(
    index: Path | str,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    allowed_origins: list[str] | None = None,
) -> ASGIApp:
    """The ASGI app serving ``index`` at ``/mcp``; run it with its lifespan (uvicorn does)."""
    if token is not None and not token.strip():
        raise ValueError("the bearer token is empty; pass a real secret or none at all")
    warn_if_exposed(host, token)
    settings = get_settings()
    server = build_server(index)
    security = security_settings(host, port, allowed_origins)
    sdk_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        max_request_body_size=MAX_BODY_BYTES,
        max_sessions=settings.http_sessions,
        session_idle_timeout=settings.http_idle_seconds,
        transport_security=security,
        host=host,
    )
    app = SessionShareMiddleware(
        DropAbandonedRequests(sdk_app),
        open_session_ids(server.session_manager),
        share=settings.http_sessions_per_client,
        idle_seconds=settings.http_idle_seconds,
        path=MCP_PATH,
    )
    guarded = BearerTokenMiddleware(app, token) if token else app
    return BrowserViewRoutes(guarded, security)


def serve_http(
    index: Path | str,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    allowed_origins: list[str] | None = None,
) -> None:
    """Serve until interrupted."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    app = http_app(index, host, port, token, allowed_origins)
    tune_serving_process()
    auth = "bearer token required" if token else "no token"
    print(f"docsym MCP at http://{_host_port(host, port)}{MCP_PATH} ({auth})", file=sys.stderr)
    # The token is printed once, as the fragment of the URL to open (what Jupyter does): the
    # person who started the server is the one to open it, and a fragment reaches no server log.
    print(f"docsym view at {view_url(browser_base(host, port), token)}", file=sys.stderr)
    uvicorn.Server(uvicorn_config(app, host, port)).run()


def uvicorn_config(app: ASGIApp, host: str, port: int) -> uvicorn.Config:
    """How uvicorn serves ``app``: the settings' connection limits, h11 with a read deadline."""
    settings = get_settings()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # Pinned to h11 (not httptools, should it be installed): the read deadline is an h11
        # protocol of ours. No WebSocket route exists, so no upgrade is offered.
        http=request_deadline_protocol(settings.http_read_seconds, settings.http_connections),
        ws="none",
        # uvicorn answers 503 once connections or requests in flight reach this. The protocol
        # keeps connections within the cap, so this bounds requests still running for clients
        # that left (a disconnect does not stop a tool call).
        limit_concurrency=settings.http_connections + 1,
        # The peer address names the client (per-client session shares, logs); uvicorn would
        # otherwise take X-Forwarded-For from any local process as the client's address.
        proxy_headers=False,
        log_config=_stderr_log_config(),
        server_header=False,
        # An open SSE stream would otherwise hold Ctrl-C until the client goes away.
        timeout_graceful_shutdown=3,
    )


def security_settings(
    host: str, port: int, allowed_origins: list[str] | None = None
) -> TransportSecuritySettings:
    """Host and Origin allow-lists: this server's loopback names plus the given origins.

    The loopback origins of this port are always allowed: they are this server's own, as is the
    origin of a specific address it is bound to (the browser view calls /mcp from it). Each extra
    origin's host:port is also accepted as a Host header, so ``--allow-origin http://box:8765``
    is how a server bound to a wildcard address admits clients that reach it as ``box``.
    """
    extra_origins = [origin.rstrip("/") for origin in allowed_origins or []]
    origins = [f"http://{name}:{port}" for name in LOOPBACK_NAMES] + extra_origins
    hosts = [f"{name}:{port}" for name in LOOPBACK_NAMES]
    if host not in WILDCARD_HOSTS and not is_loopback(host):
        hosts.append(_host_port(host, port))
        # The address it is bound to is also its own: the browser view served from it calls
        # /mcp with that origin.
        origins.append(f"http://{_host_port(host, port)}")
    hosts += [urlsplit(origin).netloc for origin in extra_origins if urlsplit(origin).netloc]
    if port == 80:  # clients leave the default port out of the Host header
        hosts += list(LOOPBACK_NAMES)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def warn_if_exposed(host: str, token: str | None) -> None:
    if is_loopback(host) or token:
        return
    log.warning(
        "!!! docsym is serving its index on %s WITHOUT a bearer token: anyone who can reach "
        "this address can read every indexed document. Bind to 127.0.0.1 or set --token / "
        "DOCSYM_TOKEN. !!!",
        host or "all interfaces",
    )


class BearerTokenMiddleware:
    """Refuse every HTTP request whose ``Authorization`` is not ``Bearer <token>`` with 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            presented = _authorization(scope) is not None
            await _unauthorized(presented)(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        value = _authorization(scope)
        if value is None:
            return False
        scheme, _, credentials = value.strip().partition(b" ")
        # compare_digest so the time taken does not reveal how much of a guess was right.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)


def _authorization(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return value
    return None


def _unauthorized(presented: bool) -> JSONResponse:
    error = "invalid_token" if presented else "missing_token"
    challenge = 'Bearer realm="docsym"' + (', error="invalid_token"' if presented else "")
    return JSONResponse(
        {"error": error, "error_description": "Authorization: Bearer <token> is required."},
        status_code=401,
        headers={"WWW-Authenticate": challenge},
    )


def browser_base(host: str, port: int) -> str:
    """Where a browser on this machine reaches the server: loopback for a wildcard bind."""
    reachable = "127.0.0.1" if host in WILDCARD_HOSTS else host
    return f"http://{_host_port(reachable, port)}"


def _host_port(host: str, port: int) -> str:
    is_ipv6 = ":" in host and not host.startswith("[")
    return f"[{host}]:{port}" if is_ipv6 else f"{host}:{port}"


def _stderr_log_config() -> dict:
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"  # stdout is not ours to use
    return config
