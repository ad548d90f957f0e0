"""``docsym demo``: index the bundled sample documents, then answer a question through the MCP
server exactly as a client would (a real MCP client talking to ``docsym serve`` over stdio)."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.markup import escape

from docsym.client_config import serve_command
from docsym.indexer.pipeline import index_paths

SAMPLES = Path(__file__).resolve().parent / "samples"
QUESTION = "What Recall@5 did RRF reach on the Maintenance split of the hybrid retrieval report?"
# The agent's step: find the cell by its header paths in the table view.
ANSWER_SQL = (
    "SELECT c.text AS answer, c.row_path, c.col_path, t.label, t.doc_id, t.page_number, c.bbox "
    "FROM table_cells c JOIN tables t USING (table_id) "
    "WHERE 'RRF' = ANY(c.row_path) AND 'Recall@5' = ANY(c.col_path) "
    "AND 'Maintenance' = ANY(c.col_path) AND t.label = 'Table 1'"
)

console = Console(stderr=True)


def run_demo(index_dir: Path) -> int:
    if not any(SAMPLES.glob("*.pdf")):
        console.print(
            f"[red]no sample documents[/] in {escape(str(SAMPLES))}: they ship with docsym, so "
            "reinstall it; in a checkout, `python -m samples_src.sample_docs` writes them"
        )
        return 1
    report = index_paths([SAMPLES], index_dir)
    console.print(
        f"indexed {len(report.added) + len(report.updated)} new, {len(report.unchanged)} unchanged "
        f"sample documents ({report.pages} pages, {report.tables} tables) into {index_dir}"
    )
    if report.failed:
        for path, reason in report.failed:
            console.print(f"[red]failed[/] {path}: {reason}")
        return 1
    return anyio.run(_ask, index_dir.resolve())


async def _ask(index_dir: Path) -> int:
    # This install's own command: `python -m docsym` run from a checkout would import the
    # checkout's docsym/ folder, which lacks the layers an install maps beneath it.
    command = serve_command(index_dir)
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server) as client:
        tools = await client.list_tools()
        console.print(f"MCP server tools: {', '.join(t.name for t in tools.tools)}")
        documents = await client.call_tool("list_documents", {"limit": 10})
        print(documents.content[0].text)
        print(f"\nQuestion: {QUESTION}")
        answer = await client.call_tool("run_sql", {"sql": ANSWER_SQL, "limit": 5})
        if answer.is_error:
            print(f"run_sql failed: {answer.content[0].text}")
            return 1
        print(answer.content[0].text)
        rows = answer.structured_content["rows"]
        if not rows:
            print("No answer found.")
            return 1
        text, _, _, label, doc_id, page, bbox = rows[0]
        print(f"\nAnswer: {text} ({label}, doc {doc_id}, page {page}, bbox {bbox})")
    return 0
