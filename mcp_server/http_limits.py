"""Limits that keep one HTTP client from crowding out the others.

* ``SessionShareMiddleware``: sessions per client, beside the SDK's bound on all of them;
* ``DropAbandonedRequests``: a request whose client left before sending it whole is not served;
* ``request_deadline_protocol``: uvicorn's HTTP/1.1 protocol with a deadline on reading each
  request, and a bound on open connections.

Idle sessions are the SDK's to expire (``session_idle_timeout``): it counts a session idle only
while it has no request in flight and no open GET event stream.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections import Counter
from collections.abc import Callable, Container
from typing import ClassVar

import anyio
import anyio.lowlevel
import h11
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("docsym.mcp.http")

# A host given IPv6 usually holds a whole /64 and can pick any address in it.
IPV6_CLIENT_PREFIX = 64


def client_key(scope: Scope) -> str:
    """Who is asking, as the connection itself vouches for it: the peer's IP address.

    Not the bearer token: docsym has one token, shared by every client of a server, so it names
    the server, not a client. Not a header (X-Forwarded-For, the initialize's clientInfo):
    a client writes those and could take a new name for every session. The price: every
    process on the server's machine is 127.0.0.1, and every client behind one NAT or proxy
    has its address, so each such group shares one share.
    """
    peer = scope.get("client")
    if not peer:
        return "unknown"  # no address (a Unix socket)
    try:
        address = ipaddress.ip_address(peer[0])
    except ValueError:
        return str(peer[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    if isinstance(address, ipaddress.IPv6Address) and not address.is_loopback:
        return str(ipaddress.ip_network(f"{address}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(address)


def open_session_ids(manager: StreamableHTTPSessionManager) -> Callable[[], Container[str]]:
    """The ids of the sessions the SDK holds open right now.

    Read from its private table: the SDK has no public list, and a copy kept here would drift
    from it (idle expiry, DELETE, crashes all end a session inside the SDK). The limit tests
    fail loudly if the table goes away.
    """
    return lambda: manager._server_instances


class SessionShareMiddleware:
    """Refuse a client a new session while it holds its share of them, with 429.

    The SDK bounds sessions only in total (503 past it), so one client opening sessions without
    closing them locked every other client out. Here each opening request (a POST without
    Mcp-Session-Id) is counted against its client: the sessions it opened that are still open,
    plus its opening requests not yet answered (so concurrent ones cannot overshoot).
    """

    def __init__(
        self,
        app: ASGIApp,
        open_sessions: Callable[[], Container[str]],
        share: int,
        idle_seconds: float,
        path: str,
    ) -> None:
        self.app = app
        self._open_sessions = open_sessions
        self._share = share
        self._idle_seconds = idle_seconds
        self._path = path
        self._owners: dict[str, str] = {}  # session id -> the client that opened it
        self._opening: Counter[str] = Counter()  # client -> opening requests not yet answered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._opens_session(scope):
            await self.app(scope, receive, send)
            return
        client = client_key(scope)
        held = self._held(client)
        if held >= self._share:
            log.warning(
                "refused %s a new session: it holds %d of its %d", client, held, self._share
            )
            await self._refusal(held)(scope, receive, send)
            return
        self._opening[client] += 1
        answered = False

        async def note_owner(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                self._release(client)
                session_id = Headers(raw=message.get("headers", [])).get(MCP_SESSION_ID_HEADER)
                if message["status"] < 400 and session_id:
                    self._owners[session_id] = client
            await send(message)

        try:
            await self.app(scope, receive, note_owner)
        finally:
            if not answered:
                self._release(client)

    def _opens_session(self, scope: Scope) -> bool:
        """What the SDK would answer by opening a session: a POST to the endpoint without a
        session id, in a protocol version that has sessions."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self._path:
            return False
        headers = Headers(scope=scope)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        has_sessions = version is None or version in HANDSHAKE_PROTOCOL_VERSIONS
        return has_sessions and MCP_SESSION_ID_HEADER not in headers

    def _held(self, client: str) -> int:
        """Sessions ``client`` has open or is opening; forgets the sessions that have ended."""
        open_now = self._open_sessions()
        self._owners = {sid: owner for sid, owner in self._owners.items() if sid in open_now}
        return sum(owner == client for owner in self._owners.values()) + self._opening[client]

    def _release(self, client: str) -> None:
        self._opening[client] -= 1
        if self._opening[client] <= 0:
            del self._opening[client]

    def _refusal(self, held: int) -> Response:
        message = (
            f"Too many open sessions from your address ({held} of {self._share}). Close the "
            f"sessions you no longer use (DELETE {self._path} with their Mcp-Session-Id header) "
            f"or wait: a session with no request and no open stream closes after "
            f"{self._idle_seconds:g} s."
        )
        body = JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message)
        )
        return Response(
            body.model_dump_json(by_alias=True, exclude_unset=True),
            status_code=429,
            media_type="application/json",
        )


class DropAbandonedRequests:
    """Stop serving a request whose client disconnected before its body was whole.

    The SDK would parse the partial body, fail, log a traceback and open (then discard) a
    session for it. That happens to every request the read deadline cuts, and to any client that
    gives up mid-upload. Cancelling the request while it still reads its body touches no
    session: the SDK reads the whole body before it looks at sessions.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_whole = False
        with anyio.CancelScope() as request_scope:

            async def receive_or_drop() -> Message:
                nonlocal body_whole
                message = await receive()
                if message["type"] == "http.request":
                    body_whole = not message.get("more_body", False)
                elif not body_whole:  # http.disconnect with the body still incomplete
                    request_scope.cancel()
                    await anyio.lowlevel.checkpoint()  # the cancellation lands here
                return message

            await self.app(scope, receive_or_drop, send)


class RequestDeadlineProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on reading each request and a connection cap.

    uvicorn bounds only the wait between requests (``timeout_keep_alive``) and stops that clock
    at the next request's first byte, so a client sending headers or a body slowly, or never
    finishing, held its connection as long as it liked (slowloris: 2,000 held for over 120 s).
    Here each request, headers and body, must arrive whole within ``read_seconds`` of its first
    byte (of the connection, for the first request), or the connection is closed. The clock
    stops once the request is whole, so long tool calls and event streams are not limited.

    At most ``max_connections`` are open: uvicorn's ``limit_concurrency`` does not bound them
    (it answers 503 to requests once the count is reached, stalled sockets included, which let a
    flood of them keep every new client out until they time out).
    """

    read_seconds: ClassVar[float] = 10.0
    max_connections: ClassVar[int] = 512
    # This server's connections whose request is still arriving, the longest waiting first.
    reading: ClassVar[dict[RequestDeadlineProtocol, None]] = {}
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._make_room()
        self._start_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # IDLE: the request's head is incomplete; SEND_BODY: its body is.
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._start_deadline()
        else:
            self._stop_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def _make_room(self) -> None:
        """Close the connection that has waited longest for its request, or this new one when
        every other is being answered: stalled sockets make room for new clients, and no
        answer is cut."""
        oldest = next(iter(self.reading), self)
        log.info("closed a connection from %s: %d are open", oldest._peer(), self.max_connections)
        oldest._close()

    def _start_deadline(self) -> None:
        """Start the clock for the request being read, unless it already runs: bytes trickled
        in do not buy more time."""
        if self._deadline is None and not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.read_seconds, self._too_slow)
            self.reading[self] = None

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
            self.reading.pop(self, None)

    def _too_slow(self) -> None:
        log.info(
            "closed a connection from %s: no whole request within %g s",
            self._peer(),
            self.read_seconds,
        )
        self._close()

    def _close(self) -> None:
        self._stop_deadline()
        # Counted out now, not when the event loop gets round to connection_lost.
        self.connections.discard(self)
        self.transport.close()

    def _peer(self) -> str:
        return self.client[0] if self.client else "a local socket"


def request_deadline_protocol(
    read_seconds: float, max_connections: int
) -> type[RequestDeadlineProtocol]:
    """The protocol class for uvicorn's ``http`` option: this deadline, this cap, and its own
    record of the connections still reading."""
    limits = {"read_seconds": read_seconds, "max_connections": max_connections, "reading": {}}
    return type("RequestDeadlineProtocol", (RequestDeadlineProtocol,), limits)
