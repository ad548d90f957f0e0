"""The evidence view (an MCP App) as a host meets it over stdio: the evidence tools name it, the
resource is one quiet HTML document, page_image answers the view, and a host without apps gets
exactly what it got before."""

from __future__ import annotations

import base64
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pymupdf
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from docsym.mcp_server.evidence_app import SDK_FILE, evidence_app_html
from docsym.storage.backends import open_store
from docsym.tools.pages import page_image
from docsym.tools.registry import tool
from tests.conftest import REPO

EVIDENCE_URI = "ui://docsym/evidence"
EVIDENCE_TOOLS = {
    "hybrid_search",
    "vector_search",
    "read_passage",
    "view_page",
    "lookup_cells",
    "get_table",
    "run_plan",
}
NO_DOMAINS = {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}
POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; connect-src 'none'"
)

# Absolute URLs the vendored library holds as plain strings, none of them fetched: JSON Schema
# dialect identifiers (compared with a schema's "$schema"), the base @cfworker/json-schema
# resolves relative "$ref"s against where a page has no location of its own, an IPv6 literal
# that zod checks by parsing it as a URL, and a description string of the CSP schema.
INERT_URLS = {
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-04/schema#",
    "https://github.com/cfworker",
    "http://[${$}]",
    "https://*.example.com",
}
_ANY_URL = re.compile(r"\bhttps?://[^\s\"'`)<>]+", re.I)
# A URL in a place that would load it: an attribute, CSS url() (not JavaScript's `new URL(...)`:
# the library's `new URL("https://github.com/cfworker")` builds a base and loads nothing), an
# import, a fetch, a worker, a socket.
_LOADING = re.compile(
    r"""(?:\b(?:src|href|action|srcset|poster|data)\s*=\s*["']?"""
    r"""|(?<!new )url\(\s*["']?|@import\s*["']?|\bimport\s*\(\s*["'`]|\bfrom\s*["'`]"""
    r"""|\bfetch\s*\(\s*["'`]|\b(?:Worker|EventSource|WebSocket)\s*\(\s*["'`])"""
    r"""\s*(?:[a-z][a-z0-9+.-]*:)?//""",
    re.I,
)


def serve(index: Path) -> StdioServerParameters:
    """``docsym serve`` over stdio, run from this checkout."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docsym", "serve", "--index", str(index)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def first_sentence(index: Path, contains: str) -> tuple[str, str, int, list[float]]:
    """(sentence_id, doc_id, page_number, bbox) of the sentence holding ``contains``."""
    store = open_store(index)
    try:
        sql = "SELECT sentence_id, doc_id, page_number, bbox FROM sentences WHERE text LIKE ?"
        sentence_id, doc_id, page, bbox = store.sql().execute(sql, [f"%{contains}%"]).fetchone()
    finally:
        store.close()
    return sentence_id, doc_id, page, list(bbox)


def test_the_evidence_tools_name_the_view_and_page_image_is_the_apps(evidence_index: Path):
    async def scenario() -> dict[str, Any]:
        async with Client(serve(evidence_index)) as client:
            tools = {t.name: (t.meta or {}).get("ui") for t in (await client.list_tools()).tools}
            resources = {r.uri: r for r in (await client.list_resources()).resources}
        return {"tools": tools, "resources": resources}

    listed = anyio.run(scenario)
    tools = listed["tools"]
    linked = {name for name, ui in tools.items() if ui and ui.get("resourceUri")}
    assert linked == EVIDENCE_TOOLS
    assert all(tools[name] == {"resourceUri": EVIDENCE_URI} for name in EVIDENCE_TOOLS)
    assert tools["page_image"] == {"visibility": ["app"]}
    assert all(ui is None for name, ui in tools.items() if name not in {*linked, "page_image"})
    view = listed["resources"][EVIDENCE_URI]
    assert (view.name, view.mime_type) == ("evidence", "text/html;profile=mcp-app")


def test_the_view_is_one_document_that_loads_nothing(evidence_index: Path):
    async def scenario():
        async with Client(serve(evidence_index)) as client:
            return await client.read_resource(EVIDENCE_URI)

    (content,) = anyio.run(scenario).contents
    assert content.mime_type == "text/html;profile=mcp-app"
    assert content.meta == {"ui": {"csp": NO_DOMAINS, "prefersBorder": True}}
    html = content.text
    assert html == evidence_app_html()  # what the HTTP view serves as well
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">' in html
    library = REPO / "mcp_server" / "evidence_app" / SDK_FILE
    assert library.read_text(encoding="utf-8") in html  # the official App library, unchanged
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module">'] * 2
    assert not re.search(r"<(?:link|iframe|object|embed|base)\b", html, re.I)
    assert not _LOADING.findall(html), "the view names something to load"
    assert set(_ANY_URL.findall(html)) <= INERT_URLS


def test_the_url_checks_catch_what_would_load() -> None:
    for loads in (
        '<img src="https://x.test/a.png">',
        "<script src=//cdn.test/x.js></script>",
        "body { background: url('http://x.test/b.png') }",
        'import("https://esm.test/m.js")',
        "fetch(`https://api.test/`)",
        "div { background: URL(//x.test/c.png) }",
        'import { App } from "https://esm.sh/@modelcontextprotocol/ext-apps"',
    ):
        assert _LOADING.search(loads), loads
    assert not _LOADING.search('const schema = "https://json-schema.org/draft/2020-12/schema"')
    assert not _LOADING.search('base = new URL("https://github.com/cfworker")')
    assert set(_ANY_URL.findall('x = "https://evil.test/p"')) - INERT_URLS


def test_page_image_sends_the_page_and_the_boxes_to_draw(evidence_index: Path):
    lamp, doc_id, page, lamp_box = first_sentence(evidence_index, "lighthouse lamp")
    keeper, _, other_page, _ = first_sentence(evidence_index, "lighthouse keeper")
    assert page != other_page

    async def scenario() -> CallToolResult:
        async with Client(serve(evidence_index)) as client:
            arguments = {"doc_id": doc_id, "page_number": page, "width_px": 600}
            return await client.call_tool(
                "page_image", {**arguments, "highlight_ids": [lamp, keeper]}
            )

    result = anyio.run(scenario)
    assert not result.is_error, result.content[-1].text
    image, text = result.content
    assert (image.type, image.mime_type, text.type) == ("image", "image/png", "text")
    data = result.structured_content
    assert data["boxes"] == [{"id": lamp, "bbox": lamp_box}]
    assert keeper in data["note"]
    assert (data["page_number"], data["page_count"], data["page_label"]) == (2, 2, "printed iv")
    assert (data["width_pt"], data["height_pt"]) == (595.0, 842.0)  # A4, as pymupdf makes it
    pixmap = pymupdf.Pixmap(base64.b64decode(image.data))
    assert (pixmap.width, pixmap.height) == (data["width_px"], data["height_px"])
    assert abs(data["width_px"] - 600) <= 600 / 72  # whole dpi: within one dpi step
    assert not _marked(pixmap), "page_image draws no marks: the view does"


def _marked(pixmap: pymupdf.Pixmap) -> bool:
    """Whether any pixel is coloured (the text is black on white)."""
    samples = pixmap.samples
    step = pixmap.n
    return any(
        max(samples[i : i + 3]) - min(samples[i : i + 3]) > 60
        for i in range(0, len(samples), step * 7)
    )


def test_page_image_refuses_documents_without_page_images(evidence_index: Path):
    store = open_store(evidence_index)
    try:
        sheet = store.sql().execute("SELECT doc_id FROM documents WHERE format = 'xlsx'").fetchone()
        try:
            page_image(store, sheet[0], 1)
        except Exception as refused:
            assert "has no page images" in str(refused) and "get_table" in str(refused)
        else:
            raise AssertionError("a spreadsheet has no page image to send")
    finally:
        store.close()


def test_hosts_without_apps_get_what_they_got_before(evidence_index: Path):
    """The evidence tools' replies are their results as ever: the page (view_page only), then
    the markdown, and the result model as the structured content, with nothing added (the SDK
    names the server in every result's _meta)."""
    lamp, doc_id, page, _ = first_sentence(evidence_index, "lighthouse lamp")
    calls = {
        "hybrid_search": {"query": "lighthouse", "limit": 3},
        "read_passage": {"id": lamp},
        "view_page": {"doc_id": doc_id, "page_number": page, "dpi": 40, "highlight_ids": [lamp]},
    }

    async def scenario() -> dict[str, CallToolResult]:
        async with Client(serve(evidence_index)) as client:
            return {name: await client.call_tool(name, args) for name, args in calls.items()}

    replies = anyio.run(scenario)
    store = open_store(evidence_index)
    try:
        for name, arguments in calls.items():
            reply, expected = replies[name], tool(name).run(store, arguments)
            assert set(reply.meta or {}) <= {"io.modelcontextprotocol/serverInfo"}, (
                name
            )  # the SDK's
            kinds = [block.type for block in reply.content]
            assert kinds == (["image", "text"] if name == "view_page" else ["text"]), name
            assert reply.content[-1].text == expected.to_markdown(), name
            assert reply.structured_content == expected.model_dump(mode="json"), name
    finally:
        store.close()
