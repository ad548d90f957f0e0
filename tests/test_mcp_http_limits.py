"""HTTP fairness: one client cannot crowd the others out. Real ``docsym serve --transport http``
subprocesses with small limits, driven by the SDK's client and by raw sockets for slow clients.

Each test provokes one limit. A second client is another loopback address (127.0.0.2): the
server tells clients apart by their address. Times are asserted with wide margins only (a 1 s
read deadline must close a connection within 15 s), so a loaded machine passes too.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.test_mcp_http import (
    INITIALIZE,
    JSON_RPC_HEADERS,
    TOKEN,
    RunningServer,
    served_over_http,
)

SHARE = 2  # sessions per client
READ_SECONDS = 1.0
IDLE_SECONDS = 3.0
CONNECTIONS = 8
CLOSED_WITHIN = 15.0  # the read deadline is 1 s: anything short of this is a pass
TRICKLE_SECONDS = 0.25  # a slow client sends a byte this often
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROTOCOL = {"mcp-protocol-version": "2025-06-18"}
OTHER_CLIENT = "127.0.0.2"


@pytest.fixture(scope="module")
def guarded_server(
    sample_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """A small share per client and a short read deadline; sessions never idle out here."""
    settings = {
        "DOCSYM_HTTP_SESSIONS_PER_CLIENT": str(SHARE),
        "DOCSYM_HTTP_READ_SECONDS": str(READ_SECONDS),
    }
    with served_over_http(sample_index, tmp_path_factory.mktemp("guarded"), settings) as server:
        yield server


@pytest.fixture(scope="module")
def small_server(
    sample_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """Sessions idle out after a few seconds and few connections fit; requests may take their
    time here (a long read deadline), so only the cap closes stalled connections."""
    settings = {
        "DOCSYM_HTTP_IDLE_SECONDS": str(IDLE_SECONDS),
        "DOCSYM_HTTP_CONNECTIONS": str(CONNECTIONS),
        "DOCSYM_HTTP_READ_SECONDS": "300",
    }
    with served_over_http(sample_index, tmp_path_factory.mktemp("small"), settings) as server:
        yield server


def _http(local_address: str | None = None, timeout: float = 30) -> httpx2.Client:
    transport = httpx2.HTTPTransport(local_address=local_address)
    headers = {**AUTH, **JSON_RPC_HEADERS}
    return httpx2.Client(transport=transport, headers=headers, timeout=timeout)


def _initialize(server: RunningServer, local_address: str | None = None) -> httpx2.Response:
    with _http(local_address) as http:
        return http.post(server.url, json=INITIALIZE)


def _open_session(server: RunningServer) -> str:
    answer = _initialize(server)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def _in_session(server: RunningServer, method: str, session: str) -> httpx2.Response:
    headers = {"mcp-session-id": session, **PROTOCOL}
    with _http() as http:
        if method == "DELETE":
            return http.delete(server.url, headers=headers)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        return http.post(server.url, json=ping, headers=headers)


def _session_ends(server: RunningServer, session: str) -> bool:
    """Whether the session closes when left alone. Each look that finds it open restarts its
    idle time, so a slow machine simply gets another, longer try."""
    for _ in range(5):
        time.sleep(2 * IDLE_SECONDS)
        if _in_session(server, "POST", session).status_code == 404:
            return True
    return False


def test_a_client_past_its_share_is_refused_while_others_get_in(
    guarded_server: RunningServer,
) -> None:
    held = [_open_session(guarded_server) for _ in range(SHARE)]

    refused = _initialize(guarded_server)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert f"{SHARE} of {SHARE}" in error["message"]
    assert "DELETE /mcp" in error["message"] and "Mcp-Session-Id" in error["message"]

    async def other_client() -> None:
        transport = httpx2.AsyncHTTPTransport(local_address=OTHER_CLIENT)
        async with (
            httpx2.AsyncClient(transport=transport, headers=AUTH, timeout=60) as http,
            Client(streamable_http_client(guarded_server.url, http_client=http)) as client,
        ):
            docs = await client.call_tool("list_documents", {})
            assert not docs.is_error

    anyio.run(other_client)

    # Closing a session it no longer uses gives the first client room again.
    assert _in_session(guarded_server, "DELETE", held[0]).status_code == 200
    again = _initialize(guarded_server)
    assert again.status_code == 200
    for session in [*held[1:], again.headers["mcp-session-id"]]:
        _in_session(guarded_server, "DELETE", session)


def test_an_idle_session_is_closed(small_server: RunningServer) -> None:
    session = _open_session(small_server)
    assert _in_session(small_server, "POST", session).status_code == 200
    assert _session_ends(small_server, session)


def test_a_session_with_an_open_stream_is_not_idle(small_server: RunningServer) -> None:
    session = _open_session(small_server)
    headers = {"mcp-session-id": session, "Accept": "text/event-stream", **PROTOCOL}
    with _http() as http, http.stream("GET", small_server.url, headers=headers) as stream:
        assert stream.status_code == 200
        time.sleep(3 * IDLE_SECONDS)
        assert _in_session(small_server, "POST", session).status_code == 200
    assert _session_ends(small_server, session)  # once the stream is closed


def _request_head(port: int) -> bytes:
    return f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()


def _whole_head(port: int) -> bytes:
    fields = {
        **AUTH,
        **JSON_RPC_HEADERS,
        "Content-Type": "application/json",
        "Content-Length": "1000",
    }
    lines = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return _request_head(port) + lines.encode() + b"\r\n"


# What a slow client sends at once, then a byte of at a time.
SLOW_CLIENTS = {
    "silent": (lambda port: b"", b""),
    "headers never finished": (_request_head, b"X-Slow: 1\r\n"),
    "body never finished": (lambda port: _whole_head(port) + b'{"jsonrpc": ', b" "),
}


def _seconds_until_closed(port: int, opening: bytes, trickle: bytes) -> float | None:
    """Send ``opening``, then ``trickle`` every TRICKLE_SECONDS, until the server closes the
    connection (seconds from connecting) or CLOSED_WITHIN passes (None)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=TRICKLE_SECONDS) as sock:
        sock.sendall(opening)
        while time.monotonic() - start < CLOSED_WITHIN:
            try:
                if sock.recv(4096) == b"":
                    return time.monotonic() - start
            except TimeoutError:
                try:
                    sock.sendall(trickle)
                except OSError:
                    return time.monotonic() - start
            except OSError:  # reset by the server
                return time.monotonic() - start
    return None


@pytest.mark.parametrize("case", list(SLOW_CLIENTS))
def test_a_request_not_sent_whole_in_time_is_closed(
    guarded_server: RunningServer, case: str
) -> None:
    opening, trickle = SLOW_CLIENTS[case]
    closed_after = _seconds_until_closed(guarded_server.port, opening(guarded_server.port), trickle)
    assert closed_after is not None, f"still open after {CLOSED_WITHIN} s"
    assert closed_after >= READ_SECONDS / 2  # the deadline closed it, not a refusal at once
    # The server still answers, and the cut request left no traceback behind.
    with httpx2.Client(timeout=30) as http:
        assert http.post(guarded_server.url, json=INITIALIZE).status_code == 401
    assert "Traceback" not in guarded_server.stderr.read_text()


def test_the_read_deadline_leaves_answers_and_streams_alone(
    guarded_server: RunningServer,
) -> None:
    answer = _initialize(guarded_server, OTHER_CLIENT)
    assert answer.status_code == 200
    session = answer.headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "Accept": "text/event-stream", **PROTOCOL}
    with (
        _http(OTHER_CLIENT, timeout=3 * READ_SECONDS) as http,
        http.stream("GET", guarded_server.url, headers=headers) as stream,
    ):
        assert stream.status_code == 200
        # Silent for 3 read deadlines, but open: the request was whole, the answer is not over.
        with pytest.raises(httpx2.ReadTimeout):
            for _ in stream.iter_raw():
                pass
    with _http(OTHER_CLIENT) as http:
        http.delete(guarded_server.url, headers={"mcp-session-id": session, **PROTOCOL})


def test_stalled_connections_make_room_for_a_new_client(small_server: RunningServer) -> None:
    stalled = []
    for _ in range(3 * CONNECTIONS):
        sock = socket.create_connection(("127.0.0.1", small_server.port), timeout=CLOSED_WITHIN)
        sock.sendall(_request_head(small_server.port))
        stalled.append(sock)
    try:
        # A new client is answered although the cap is full of stalled connections...
        with httpx2.Client(timeout=30) as http:
            assert http.post(small_server.url, json=INITIALIZE).status_code == 401
        # ...because the longest-waiting stalled ones were closed: all but the cap's worth.
        assert len(_open_after_closes(stalled)) < CONNECTIONS
    finally:
        for sock in stalled:
            sock.close()


def _open_after_closes(sockets: list[socket.socket]) -> list[socket.socket]:
    """The sockets the server has not closed, once fewer than CONNECTIONS are left or
    CLOSED_WITHIN has passed."""
    deadline = time.monotonic() + CLOSED_WITHIN
    still_open = list(sockets)
    while len(still_open) >= CONNECTIONS and time.monotonic() < deadline:
        readable, _, _ = select.select(still_open, [], [], deadline - time.monotonic())
        still_open = [sock for sock in still_open if sock not in readable or not _ended(sock)]
    return still_open


def _ended(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except OSError:  # reset by the server
        return True
