"""A library kept current while it is served: ``docsym serve --watch FOLDER`` in a subprocess,
driven by the mcp SDK's real client, while the test saves, writes slowly, moves and deletes
real files. Waits are for the outcome (polled, with a deadline far beyond any machine's
speed), never for a time."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from docsym.demo import SAMPLES
from tests.bad_files import write_control

DEADLINE = 300.0  # seconds an outcome may take on the slowest machine before the test fails
REPORT = "hybrid-retrieval-report.pdf"


def _server(index: Path, folder: Path) -> StdioServerParameters:
    env = {
        **os.environ,
        "DOCSYM_WATCH_SETTLE_SECONDS": "2",  # the slow writer below pauses 0.3 s at most
        "DOCSYM_PUBLISH_SECONDS": "1",
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(index), "--watch", str(folder)],
        env=env,
    )


async def _until(what: str, check: Callable[[], Awaitable[object]]) -> object:
    """Poll ``check`` until it returns something true; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await anyio.sleep(0.5)
    raise AssertionError(f"not within {DEADLINE:.0f} s: {what}")


def test_a_watched_library_follows_its_folder_while_it_is_served(tmp_path: Path) -> None:
    library, index = tmp_path / "library", tmp_path / "index"
    library.mkdir()
    write_control(library / "wombats.md", "The wombat digs burrows at night.")
    errors = tmp_path / "server.stderr"

    async def scenario() -> None:
        with errors.open("w") as errlog:
            async with Client(stdio_client(_server(index, library), errlog=errlog)) as client:

                async def rows() -> dict[str, list]:
                    result = await client.call_tool("list_documents", {})
                    if result.is_error:  # no index yet: the first pass has not published
                        return {}
                    content = result.structured_content
                    name = content["columns"].index("file_name")
                    return {row[name]: row for row in content["rows"]}

                async def sql(query: str) -> list[list]:
                    result = await client.call_tool("run_sql", {"sql": query})
                    assert not result.is_error, result.content[0].text
                    return result.structured_content["rows"]

                async def found(query: str) -> set[str]:
                    result = await client.call_tool("hybrid_search", {"query": query})
                    if result.is_error:
                        return set()
                    ids = {hit["doc_id"] for hit in result.structured_content["hits"]}
                    names = await sql("SELECT doc_id, file_name FROM documents")
                    return {name for doc_id, name in names if doc_id in ids}

                await _until("the folder's first file", lambda: _has(rows, "wombats.md"))

                # A paper saved into the folder: searchable, then complete (its vectors).
                shutil.copy(SAMPLES / REPORT, library / REPORT)
                query = "Evaluating Hybrid Retrieval for Technical Manuals"
                await _until("the saved paper found", lambda: _in(found(query), REPORT))
                await _until("its vectors written", lambda: _stage(rows, REPORT, "complete"))
                ((doc_id, indexed_at),) = await sql(
                    f"SELECT doc_id, indexed_at FROM documents WHERE file_name = '{REPORT}'"
                )

                # A file written slowly is read once it is whole.
                slow = library / "quolls.md"
                text = "# Quolls\n\n" + "".join(
                    f"Quolls hunt at night, sentence {n}.\n" for n in range(20)
                )
                with slow.open("w") as stream:
                    for start in range(0, len(text), len(text) // 5):
                        stream.write(text[start : start + len(text) // 5])
                        stream.flush()
                        time.sleep(0.3)
                whole = hashlib.sha256(slow.read_bytes()).hexdigest()
                await _until("the slowly written file", lambda: _has(rows, "quolls.md"))
                (sha,) = (await sql("SELECT sha256 FROM documents WHERE file_name='quolls.md'"))[0]
                assert sha == whole  # the first version indexed is the whole file

                # Moved into a subfolder and renamed: the same document, not read again.
                (library / "papers").mkdir()
                moved = library / "papers" / "report.pdf"
                shutil.move(library / REPORT, moved)
                await _until("the move applied", lambda: _has(rows, "report.pdf"))
                after = await sql(
                    "SELECT doc_id, indexed_at, path FROM documents WHERE file_name='report.pdf'"
                )
                assert after == [[doc_id, indexed_at, str(moved)]]
                assert REPORT not in await rows()

                # Deleted: its hits are gone.
                (library / "wombats.md").unlink()
                await _until("the deleted file gone", lambda: _lacks(rows, "wombats.md"))
                assert "wombats.md" not in await found("wombat digs burrows")

                # A second writer is refused, naming the process that writes.
                second = subprocess.run(
                    [sys.executable, "-m", "docsym", "index", str(library), "--watch",
                     "--index", str(index)],
                    capture_output=True,
                    text=True,
                    timeout=DEADLINE,
                )
                assert second.returncode == 2
                assert "another docsym index run (process " in second.stderr
                assert len(second.stderr.strip().splitlines()) == 1

                # The watched folder disappears (an unmounted drive): nothing is removed.
                shutil.rmtree(library)
                gone = f"watched folder {library} is gone"
                await _until("the watcher sees it gone", lambda: _said(errors, gone))
                assert {"report.pdf", "quolls.md"} <= set(await rows())

    anyio.run(scenario)
    assert "Traceback" not in errors.read_text()


async def _has(rows: Callable[[], Awaitable[dict]], name: str) -> bool:
    return name in await rows()


async def _lacks(rows: Callable[[], Awaitable[dict]], name: str) -> bool:
    return name not in await rows()


async def _in(names: Awaitable[set[str]], name: str) -> bool:
    return name in await names


async def _stage(rows: Callable[[], Awaitable[dict]], name: str, stage: str) -> bool:
    row = (await rows()).get(name)
    return row is not None and row[-1] == stage


async def _said(errors: Path, text: str) -> bool:
    return text in errors.read_text()
