"""An OpenAI-compatible endpoint that never answers about one document: a file whose preparation
blocks for as long as the test wants, on any machine, however fast. Every other request gets a
short summary at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Put this word in a document to have its summary request hang.
STALL_MARKER = "stallwort"


def write_stalling(path: Path) -> None:
    """A Markdown document whose summary request hangs (two sections, so it has a tldr)."""
    path.write_text(
        f"# Part one\n\nThis document names the {STALL_MARKER}.\n\n# Part two\n\nIt hangs.\n"
    )


@dataclass
class StallingLlm:
    env: dict[str, str]  # the DOCSYM_* variables that point the indexer at it
    stalled: threading.Event  # set once a request about the marked document has come in


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event
    stalled: threading.Event

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if STALL_MARKER.encode() in body:
            self.stalled.set()
            self.release.wait()  # until the server shuts down
            return
        answer = {"choices": [{"message": {"role": "assistant", "content": "A short summary."}}]}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def stalling_llm() -> Iterator[StallingLlm]:
    """Runs the endpoint while the block runs."""
    release, stalled = threading.Event(), threading.Event()
    handler = type("Handler", (_Handler,), {"release": release, "stalled": stalled})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            "DOCSYM_LLM_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
            "DOCSYM_LLM_MODEL": "stalling",
            "DOCSYM_LLM_TIMEOUT": "3600",
        }
        yield StallingLlm(env, stalled)
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
