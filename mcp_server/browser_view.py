"""The evidence view in a plain browser, for people whose MCP client shows no MCP Apps.

``GET /view`` serves one static page (``browser_view.html``): a search box and a minimal MCP Apps
host. The page calls this server's own ``/mcp`` with ``fetch``, exactly as any MCP client does
(bearer token included), reads the app its search tool names (``_meta.ui.resourceUri``) and
shows it in a sandboxed iframe, answering it over postMessage as the MCP Apps spec says.

The page itself is served without the token: it holds no index data, only code, and every call
that reads the index goes to ``/mcp``, behind the token. The token travels in the URL's fragment
(``/view#token=...``), which a browser never sends to a server, so it shows up in no access log
and no Referer; the page keeps it in memory and takes it out of the address bar. The Host check
still applies (421), so a rebinding domain is not served even this page.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from urllib.parse import quote

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

VIEW_PATH = "/view"

# The app renders inside the page as an iframe ``srcdoc`` document, which inherits this policy
# (and adds the stricter one the page writes into it): hence 'unsafe-inline' for scripts, the
# app being one inline document. Nothing is loaded from anywhere but this server, which the
# page reaches only with fetch; images are data: or blob: URLs the app makes.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'unsafe-inline'",
        "style-src 'unsafe-inline'",
        "img-src data: blob:",
        "connect-src 'self'",
        # The app's frame is a srcdoc document, which is not fetched: frame-src does not apply.
        "frame-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Static, but nothing gains from a cached copy that outlives an upgrade of the server.
    "Cache-Control": "no-store",
}


@cache
def view_page() -> str:
    return files("docsym.mcp_server").joinpath("browser_view.html").read_text(encoding="utf-8")


def view_url(base: str, token: str | None) -> str:
    """The URL to open: ``base`` (``http://host:port``) and the page, the token in the
    fragment."""
    fragment = f"#token={quote(token, safe='')}" if token else ""
    return f"{base}{VIEW_PATH}{fragment}"


class BrowserViewRoutes:
    """``GET /view`` (and ``/``, redirected to it) answered here, ahead of the token guard;
    every other request goes on to ``app``."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self._security = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/", VIEW_PATH):
            await self.app(scope, receive, send)
            return
        response = await self._answer(Request(scope))
        await response(scope, receive, send)

    async def _answer(self, request: Request) -> Response:
        refused = await self._security.validate_request(request)
        if refused is not None:
            return refused
        if request.method not in ("GET", "HEAD"):
            return PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET, HEAD"})
        if request.url.path == "/":
            return RedirectResponse(VIEW_PATH, status_code=307)
        return HTMLResponse(view_page(), headers=HEADERS)
