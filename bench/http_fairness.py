"""HTTP fairness against a real server: one client cannot crowd out the others.

    python bench/http_fairness.py --index DIR [--sessions 300] [--held 500]

Starts ``docsym serve --transport http`` on a loopback port over DIR (bench/hostile.py's
launcher, with the settings of this environment) and prints:

1. one address (127.0.0.1) asks for ``--sessions`` sessions without closing any: how many it
   got (goal: its share, DOCSYM_HTTP_SESSIONS_PER_CLIENT) and how many were answered 429 (goal:
   the rest); then another address (127.0.0.2) opens a session and lists the documents (goal:
   answered);
2. ``--held`` connections each send half a request head and stop: seconds until the server has
   closed the last (goal: DOCSYM_HTTP_READ_SECONDS + 5), a call from another client while they
   are held (goal: answered), and the server's RSS.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.hostile import Server, mb, start_server  # noqa: E402
from docsym.runtime.settings import get_settings  # noqa: E402
from tests.test_mcp_http import INITIALIZE, JSON_RPC_HEADERS  # noqa: E402

OTHER_CLIENT = "127.0.0.2"


async def listed_by(url: str, local_address: str) -> bool:
    """Whether a client from ``local_address`` opens a session and lists the documents."""
    transport = httpx2.AsyncHTTPTransport(local_address=local_address)
    try:
        async with (
            httpx2.AsyncClient(transport=transport, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return not (await client.call_tool("list_documents", {})).is_error
    except Exception as exc:  # refused or cut: the figure to print, not a crash of the bench
        print(f"   {local_address}: {type(exc).__name__}: {str(exc)[:100]}")
        return False


def session_share(server: Server, asked: int) -> bool:
    share = get_settings().http_sessions_per_client
    answers: Counter[int] = Counter()
    opened = []
    with httpx2.Client(headers=JSON_RPC_HEADERS, timeout=30) as http:
        for _ in range(asked):
            answer = http.post(server.url, json=INITIALIZE)
            answers[answer.status_code] += 1
            if answer.status_code == 200:
                opened.append(answer.headers["mcp-session-id"])
        started = time.perf_counter()
        other = anyio.run(listed_by, server.url, OTHER_CLIENT)
        other_seconds = time.perf_counter() - started
        for session in opened:
            http.delete(server.url, headers={"mcp-session-id": session})
    passed = answers[200] == share and answers[429] == asked - share and other
    print(f"\n1. one address asks for {asked} sessions (share {share})")
    print(
        f"   answered 200: {answers[200]}, 429: {answers[429]}, other: "
        f"{answers.total() - answers[200] - answers[429]}; another address listed the "
        f"documents: {other} in {other_seconds:.2f} s  {'ok' if passed else 'FAIL'}"
    )
    return passed


def held_connections(server: Server, count: int) -> bool:
    read_seconds = get_settings().http_read_seconds
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Half: ".encode()
    selector = selectors.DefaultSelector()
    started = time.perf_counter()
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    call_started = time.perf_counter()
    other = anyio.run(listed_by, server.url, OTHER_CLIENT)
    call_seconds = time.perf_counter() - call_started
    rss = server.watch.now()[0]
    last_closed = _wait_all_closed(selector, timeout=read_seconds + 60)
    seconds = (last_closed or float("inf")) - started
    passed = seconds <= read_seconds + 5 and other
    print(f"\n2. {count} connections send half a request head (read deadline {read_seconds:g} s)")
    print(
        f"   all closed after {seconds:.1f} s; a call from another client meanwhile: {other} in "
        f"{call_seconds:.2f} s; server RSS while held {mb(rss)}  {'ok' if passed else 'FAIL'}"
    )
    return passed


def _wait_all_closed(selector: selectors.BaseSelector, timeout: float) -> float | None:
    """perf_counter time at which the server had closed every registered socket, or None."""
    deadline = time.perf_counter() + timeout
    while selector.get_map() and time.perf_counter() < deadline:
        for key, _ in selector.select(timeout=1):
            sock = key.fileobj
            try:
                closed = sock.recv(4096) == b""
            except ConnectionError:
                closed = True
            if closed:
                selector.unregister(sock)
                sock.close()
    return None if selector.get_map() else time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--held", type=int, default=500)
    args = parser.parse_args()
    settings = get_settings()
    print(
        f"HTTP limits: {settings.http_sessions} sessions, {settings.http_sessions_per_client} "
        f"per client, idle {settings.http_idle_seconds:g} s, read {settings.http_read_seconds:g} "
        f"s, {settings.http_connections} connections"
    )
    server = start_server(args.index)
    # Its stderr is a pipe: read it, or hundreds of log lines fill it and stall the server.
    threading.Thread(target=server.process.stderr.read, daemon=True).start()
    try:
        results = [session_share(server, args.sessions), held_connections(server, args.held)]
    finally:
        server.watch.stop()
        server.process.terminate()
        server.process.wait(timeout=15)
    print("\nall goals met" if all(results) else "\nsome goals were NOT met")


if __name__ == "__main__":
    main()
