"""The evidence view in a real browser: headless Chromium (the system's, by path, driven by
Playwright) runs a minimal MCP Apps host against a real ``docsym serve`` over stdio.

The host is a page written here: it puts the view's HTML in an iframe sandboxed to scripts only,
answers the view's ``ui/initialize``, sends it the tool's arguments and result, and passes its
``tools/call`` requests to the server through the Python MCP client. The checks read the
screenshot, not the view's DOM: each cited box must be drawn where its bbox (read from the
index) falls on the page image, in the view's colour, and nothing else on the image may be;
choosing the second hit shows its page; no request leaves the host. Screenshots are kept under
test-artifacts/ (git ignores it) for a person to look at.
"""

from __future__ import annotations

import base64
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pymupdf
import pytest
from mcp import Client

from docsym.storage.backends import open_store
from tests.conftest import REPO, needs_corpus
from tests.test_mcp_app import EVIDENCE_URI, first_sentence, serve

playwright_api = pytest.importorskip(
    "playwright.async_api", reason="Playwright is not installed (pip install -e '.[test]')"
)
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install chromium)"
)

ARTIFACTS = REPO / "test-artifacts" / "app-browser"
MARK = (230, 0, 126)  # the view's box colour
NEAR = 4  # px: how far a box's edge may sit from where its bbox falls (rounding, antialiasing)

# A minimal host: one sandboxed iframe with the view, a JSON-RPC peer for it, and
# window.callServerTool (bound by the test) for the view's tools/call.
HOST = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>test host</title>
<style>body { margin: 0; background: #ddd; }
iframe { border: 0; display: block; width: 1100px; height: 1200px; background: #fff; }</style>
</head><body><script>
window.hostLog = [];
function startHost(html, args, result) {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.srcdoc = html;
  document.body.append(iframe);
  const send = (message) => iframe.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
  window.addEventListener("message", async (event) => {
    if (event.source !== iframe.contentWindow) return;
    const { id, method, params } = event.data;
    window.hostLog.push(method ?? "reply");
    if (method === "ui/initialize") {
      send({ id, result: {
        protocolVersion: params.protocolVersion,
        hostInfo: { name: "docsym-test-host", version: "1.0.0" },
        hostCapabilities: { serverTools: {} },
        hostContext: { theme: "light", displayMode: "inline", platform: "web" },
      } });
    } else if (method === "ui/notifications/initialized") {
      send({ method: "ui/notifications/tool-input", params: { arguments: args } });
      send({ method: "ui/notifications/tool-result", params: result });
    } else if (method === "tools/call") {
      try {
        send({ id, result: await window.callServerTool(params.name, params.arguments ?? {}) });
      } catch (error) {
        send({ id, error: { code: -32603, message: String(error) } });
      }
    } else if (method === "ui/notifications/size-changed") {
      if (params.height) iframe.style.height = `${Math.max(params.height, 600)}px`;
    } else if (id !== undefined && method) {
      send({ id, error: { code: -32601, message: `${method} is not offered by this host` } });
    }
  });
}
</script></body></html>
"""


@dataclass
class Shown:
    """What the view shows, measured in the host page's CSS pixels (= screenshot pixels)."""

    image: tuple[float, float, float, float]  # the page image's rect
    scale: float  # image px per PDF point
    natural: tuple[int, int]
    label: str
    selected: list[str]  # data-key of the selected list entry
    keys: list[str]  # data-key of every list entry, in order
    boxes: list[str]  # data-id of every drawn box


class Session:
    """The browser, the host page, the view's frame and the MCP client behind them."""

    def __init__(self, page: Any, client: Client, shots: Path) -> None:
        self.page = page
        self.client = client
        self.shots = shots
        self.requests: list[str] = []
        self.page_images: list[dict[str, Any]] = []  # page_image's answers, in order
        self.frame: Any = None

    async def call_server_tool(self, _source: Any, name: str, arguments: dict) -> dict:
        reply = await self.client.call_tool(name, arguments)
        if name == "page_image" and not reply.is_error:
            png = base64.b64decode(reply.content[0].data)
            self.page_images.append({**reply.structured_content, "png": png})
        return reply.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def open(self, html: str, arguments: dict, result: dict) -> None:
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("websocket", lambda socket: self.requests.append(socket.url))
        await self.page.route("**/*", lambda route: route.abort())  # nothing gets out anyway
        # A load the view's own policy refuses never becomes a request: record the refusals.
        await self.page.add_init_script(
            "window.refused = []; document.addEventListener('securitypolicyviolation', "
            "(e) => window.refused.push([e.blockedURI, e.effectiveDirective]));"
        )
        await self.page.expose_binding("callServerTool", self.call_server_tool)
        await self.page.set_content(HOST)
        await self.page.evaluate(
            "([html, args, result]) => startHost(html, args, result)", [html, arguments, result]
        )
        iframe = await self.page.wait_for_selector("iframe")
        self.frame = await iframe.content_frame()

    async def settled(self, label: str, boxes: int) -> Shown:
        """Wait until the view shows a page whose label starts with ``label``, with ``boxes``
        boxes drawn."""
        await self.frame.wait_for_function(
            """([label, boxes]) => {
                const image = document.getElementById("page-image");
                return document.getElementById("page-label").textContent.startsWith(label)
                    && image.complete && image.naturalWidth > 0
                    && document.querySelectorAll("#page-frame .box").length === boxes;
            }""",
            arg=[label, boxes],
            timeout=30_000,
        )
        inside = await self.frame.evaluate(
            """() => {
                const image = document.getElementById("page-image");
                const r = image.getBoundingClientRect();
                const keys = (s) => [...document.querySelectorAll(s)].map((e) => e.dataset.key);
                return {
                    rect: [r.left, r.top, r.right, r.bottom],
                    width: image.clientWidth,
                    natural: [image.naturalWidth, image.naturalHeight],
                    label: document.getElementById("page-label").textContent,
                    selected: keys("li.hit.selected"),
                    keys: keys("li.hit"),
                    boxes: [...document.querySelectorAll(".box")].map((b) => b.dataset.id),
                };
            }"""
        )
        frame_box = await (await self.frame.frame_element()).bounding_box()
        x, y = frame_box["x"], frame_box["y"]
        left, top, right, bottom = inside["rect"]
        width_pt = self.page_images[-1]["width_pt"]
        return Shown(
            image=(left + x, top + y, right + x, bottom + y),
            scale=inside["width"] / width_pt,
            natural=tuple(inside["natural"]),
            label=inside["label"],
            selected=inside["selected"],
            keys=inside["keys"],
            boxes=inside["boxes"],
        )

    async def titled(self, titles: list[str]) -> None:
        """Wait until the hits name their documents by ``titles`` (in order), and the page
        by the first's."""
        await self.frame.wait_for_function(
            """(titles) => {
                const docs = [...document.querySelectorAll("li.hit .doc")];
                return JSON.stringify(docs.map((d) => d.textContent)) === JSON.stringify(titles)
                    && document.getElementById("doc-title").textContent === titles[0];
            }""",
            arg=titles,
            timeout=30_000,
        )

    async def screenshot(self, name: str) -> pymupdf.Pixmap:
        # The view paints in its own frame (a process of its own, its origin being opaque):
        # let it paint twice, so the shot shows what its DOM now holds.
        await self.frame.evaluate(
            "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
        )
        path = self.shots / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        return pymupdf.Pixmap(str(path))


def expected_boxes(index: Path, hits: list[dict], doc_id: str, page: int) -> dict[str, list]:
    """Every box the view must draw on a page: each cited sentence of each hit on it, as the
    index stores its bbox (each hit's box is one sentence or the two its cited ids name)."""
    ids = [i for h in hits if (h["doc_id"], h["page_number"]) == (doc_id, page) for i in h["cited"]]
    store = open_store(index)
    try:
        sql = "SELECT sentence_id, bbox FROM sentences WHERE sentence_id = ANY(?)"
        rows = dict(store.sql().execute(sql, [ids]).fetchall())
    finally:
        store.close()
    assert set(rows) == set(ids), "every cited id of these hits is a sentence"
    return {i: list(rows[i]) for i in ids}


def title_of(index: Path, doc_id: str) -> str:
    """The name a person reads a document by: its title, else its file name."""
    store = open_store(index)
    try:
        sql = "SELECT coalesce(nullif(title, ''), file_name) FROM documents WHERE doc_id = ?"
        return store.sql().execute(sql, [doc_id]).fetchone()[0]
    finally:
        store.close()


def on_screen(shown: Shown, bbox: list[float]) -> tuple[float, float, float, float]:
    left, top = shown.image[:2]
    x0, y0, x1, y1 = (v * shown.scale for v in bbox)
    return (left + x0, top + y0, left + x1, top + y1)


def is_mark(pixmap: pymupdf.Pixmap, x: float, y: float) -> bool:
    r, g, b = pixmap.pixel(int(x), int(y))[:3]
    return all(abs(got - want) <= 40 for got, want in zip((r, g, b), MARK, strict=True))


def check_boxes_drawn(pixmap: pymupdf.Pixmap, shown: Shown, boxes: dict[str, list]) -> None:
    """Each box's 3 px border runs just outside its bbox, all the way round (so it covers
    nothing it cites), and no pixel of the box colour on the page image is anywhere but on
    some box's border."""
    rects = [on_screen(shown, bbox) for bbox in boxes.values()]
    for box_id, (x0, y0, x1, y1) in zip(boxes, rects, strict=True):
        ring = [(x, y0 - 1.5) for x in _steps(x0, x1)]
        ring += [(x, y1 + 1.5) for x in _steps(x0, x1)]
        ring += [(x0 - 1.5, y) for y in _steps(y0, y1)]
        ring += [(x1 + 1.5, y) for y in _steps(y0, y1)]
        drawn = sum(is_mark(pixmap, x, y) for x, y in ring)
        assert drawn >= 0.95 * len(ring), f"{box_id}: {drawn} of {len(ring)} border points drawn"
    left, top, right, bottom = (int(v) for v in shown.image)
    stray = [
        (x, y)
        for x in range(left + 1, right - 1)
        for y in range(top + 1, bottom - 1)
        if is_mark(pixmap, x, y) and not any(_on_border(x, y, rect) for rect in rects)
    ]
    assert not stray, f"{len(stray)} box-coloured pixels off every box, e.g. {stray[:5]}"


def _on_border(x: int, y: int, rect: tuple[float, float, float, float]) -> bool:
    x0, y0, x1, y1 = rect
    outside = x0 - 3 - NEAR <= x <= x1 + 3 + NEAR and y0 - 3 - NEAR <= y <= y1 + 3 + NEAR
    inside = x0 + NEAR <= x <= x1 - NEAR and y0 + NEAR <= y <= y1 - NEAR
    return outside and not inside


def _steps(start: float, stop: float, step: float = 3) -> list[float]:
    count = max(int((stop - start) / step), 0)
    return [start + i * step for i in range(count + 1)]


def check_print_under(page_image: dict, boxes: dict[str, list]) -> None:
    """The page the server sent prints something where each bbox says: the image and the
    boxes share one space (a page drawn rotated, or at another size, would miss)."""
    pixmap = pymupdf.Pixmap(page_image["png"])
    scale = page_image["width_px"] / page_image["width_pt"]
    for box_id, bbox in boxes.items():
        x0, y0, x1, y1 = (int(v * scale) for v in bbox)
        area = [(x, y) for x in range(x0, x1) for y in range(y0, y1)]
        inked = sum(max(pixmap.pixel(x, y)[:3]) < 128 for x, y in area)
        assert inked >= max(5, 0.05 * len(area)), f"{box_id}: nothing printed in its bbox"


def check_page_shown(pixmap: pymupdf.Pixmap, shown: Shown, page_image: dict) -> None:
    """The image is the page page_image sent (its natural size) and shows print."""
    assert shown.natural == (page_image["width_px"], page_image["height_px"])
    left, top, right, bottom = (int(v) for v in shown.image)
    inked = sum(
        max(pixmap.pixel(x, y)[:3]) < 110
        for x in range(left, right, 2)
        for y in range(top, bottom, 2)
    )
    assert inked > 100, "the page image looks blank"


# The one refusal the view meets: zod (inside the library) probes whether `new Function` is
# allowed, in a try block; the policy says no, and the App runs zod without it.
EXPECTED_REFUSALS = [["eval", "script-src"]]


async def check_quiet(session: Session) -> None:
    """No request left the host page, and the view tried to load nothing its policy refused;
    then, to show the recording works, the host asks for a URL (aborted) and it is seen."""
    left = [url for url in session.requests if not url.startswith(("data:", "blob:", "about:"))]
    assert not left, f"requests left the host: {left}"
    refused = await session.frame.evaluate("window.refused")
    assert [r for r in refused if r not in EXPECTED_REFUSALS] == [], refused
    probe = "https://docsym.invalid/probe"
    await session.page.evaluate("(url) => fetch(url).catch(() => null)", probe)
    assert probe in session.requests


async def _browse(index: Path, tool: str, arguments: dict, test: Any, shots: Path) -> None:
    """Call ``tool`` through the client, show its result in the view, then run ``test``."""
    async with Client(serve(index)) as client, playwright_api.async_playwright() as driver:
        view = (await client.read_resource(EVIDENCE_URI)).contents[0].text
        reply = await client.call_tool(tool, arguments)
        assert not reply.is_error, reply.content[-1].text
        result = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        browser = await driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 1300})
            session = Session(page, client, shots)
            await session.open(view, arguments, result)
            await test(session, reply.structured_content)
        finally:
            await browser.close()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    folder = ARTIFACTS / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_view_draws_each_cited_box_on_its_page(evidence_index: Path, shots: Path) -> None:
    async def test(session: Session, result: dict) -> None:
        hits = result["hits"]
        assert len(hits) >= 2 and hits[0]["page_number"] != hits[1]["page_number"]
        first, second = hits[0], hits[1]

        # The first hit is selected and its page shown, with every cited box of the page.
        boxes = expected_boxes(evidence_index, hits, first["doc_id"], first["page_number"])
        shown = await session.settled("page 2 of 2 · printed iv", len(boxes))
        assert shown.label == "page 2 of 2 · printed iv"
        assert shown.keys == [h["primary_key"] for h in hits]
        assert shown.selected == [first["primary_key"]]
        assert sorted(shown.boxes) == sorted(boxes)
        # Each hit, and the page, name their document by its title.
        await session.titled([title_of(evidence_index, h["doc_id"]) for h in hits])
        pixels = await session.screenshot("1-first-hit")
        check_page_shown(pixels, shown, session.page_images[-1])
        check_print_under(session.page_images[-1], boxes)
        check_boxes_drawn(pixels, shown, boxes)

        # Choosing the second hit shows its page and its box.
        await session.frame.click("li.hit:nth-child(2)")
        boxes = expected_boxes(evidence_index, hits, second["doc_id"], second["page_number"])
        shown = await session.settled("page 1 of 2 · printed iii", len(boxes))
        assert shown.label == "page 1 of 2 · printed iii"
        assert shown.selected == [second["primary_key"]]
        assert set(second["cited"]) <= set(shown.boxes)
        pixels = await session.screenshot("2-second-hit")
        check_page_shown(pixels, shown, session.page_images[-1])
        check_print_under(session.page_images[-1], boxes)
        check_boxes_drawn(pixels, shown, boxes)

        # The page buttons turn pages, the cited boxes following.
        await session.frame.click("#next")
        boxes = expected_boxes(evidence_index, hits, first["doc_id"], 2)
        shown = await session.settled("page 2 of 2 · printed iv", len(boxes))
        assert await session.frame.is_disabled("#next")
        check_boxes_drawn(await session.screenshot("3-next-page"), shown, boxes)

        log = await session.page.evaluate("window.hostLog")
        assert log[:2] == ["ui/initialize", "ui/notifications/initialized"]
        # Three pages and one run_sql for the documents' titles, all through the bridge.
        assert len(session.page_images) == 3
        assert log.count("tools/call") == 4
        await check_quiet(session)

    arguments = {"query": "lighthouse", "limit": 5}
    anyio.run(_browse, evidence_index, "hybrid_search", arguments, test, shots)


@pytest.mark.parametrize("tool", ["read_passage", "view_page", "run_plan"])
def test_each_evidence_tool_shows_the_lamp_sentence(
    evidence_index: Path, shots: Path, tool: str
) -> None:
    """The other shapes of result the view reads: a passage's sentences, a page with the ids to
    highlight (in the tool's arguments), a plan's leaves with their hits."""
    lamp, doc_id, page, lamp_box = first_sentence(evidence_index, "lighthouse lamp")
    arguments = {
        "read_passage": {"id": lamp},
        "view_page": {"doc_id": doc_id, "page_number": page, "dpi": 40, "highlight_ids": [lamp]},
        "run_plan": {"expression": "Where can the lighthouse lamp be seen from?", "limit": 3},
    }[tool]

    async def test(session: Session, result: dict) -> None:
        if tool == "run_plan":
            hits = [hit for leaf in result["leaves"] for hit in leaf["hits"]]
            assert (hits[0]["doc_id"], hits[0]["page_number"]) == (doc_id, page)
            boxes = expected_boxes(evidence_index, hits, doc_id, page)
        else:
            boxes = {lamp: lamp_box}
        assert lamp in boxes
        shown = await session.settled(f"page {page} of 2", len(boxes))
        pixels = await session.screenshot(tool)
        check_print_under(session.page_images[-1], boxes)
        check_boxes_drawn(pixels, shown, boxes)
        await check_quiet(session)

    anyio.run(_browse, evidence_index, tool, arguments, test, shots)


def test_a_spreadsheet_cell_is_shown_in_its_table(evidence_index: Path, shots: Path) -> None:
    """A document without page images: the view shows the table, the cited cell outlined and
    its address given."""
    store = open_store(evidence_index)
    try:
        (table_id,) = store.sql().execute("SELECT table_id FROM tables").fetchone()
    finally:
        store.close()

    async def test(session: Session, result: dict) -> None:
        (cell,) = result["cells"]
        await session.frame.wait_for_selector("#passage td.cited", timeout=30_000)
        cited = await session.frame.eval_on_selector(
            "#passage td.cited", "td => [td.dataset.id, td.textContent]"
        )
        assert cited == [cell["cell_id"], "6.3"]
        address = await session.frame.text_content("#passage .address")
        assert address == "cell B3 · sheet Tides"
        assert await session.frame.is_hidden("#page-frame")
        await session.screenshot("cell-in-table")
        await check_quiet(session)

    arguments = {
        "table_id": table_id,
        "row_path_contains": ["Calais"],
        "col_path_contains": ["High"],
    }
    anyio.run(_browse, evidence_index, "lookup_cells", arguments, test, shots)


@pytest.fixture(scope="module")
def dpr_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from docsym.indexer.pipeline import index_paths
    from tests.conftest import CORPUS

    index_dir = tmp_path_factory.mktemp("dpr-index")
    report = index_paths([CORPUS / "papers" / "2004.04906v3_dpr.pdf"], index_dir, ocr="off")
    assert report.ok
    return index_dir


@needs_corpus
def test_dpr_table_2_trec_cell_is_boxed_on_its_cell(dpr_index: Path, shots: Path) -> None:
    """One corpus question: DPR's Table 2, Top-100 accuracy on TREC of BM25 + DPR trained on
    every dataset, looked up by its headers: its box is drawn on the cell printing 94.1."""
    store = open_store(dpr_index)
    try:
        sql = "SELECT table_id, path FROM tables JOIN documents USING (doc_id) WHERE label = ?"
        table_id, pdf = store.sql().execute(sql, ["Table 2"]).fetchone()
    finally:
        store.close()

    async def test(session: Session, result: dict) -> None:
        cell = result["cells"][0]
        assert (cell["text"], cell["page_number"]) == ("94.1", 5)
        with pymupdf.open(pdf) as doc:  # where the PDF prints 94.1, read apart from the index
            printed = doc[4].search_for("94.1")
        x0, y0, x1, y1 = cell["bbox"]
        assert any(x0 <= (r.x0 + r.x1) / 2 <= x1 and y0 <= (r.y0 + r.y1) / 2 <= y1 for r in printed)
        shown = await session.settled("page 5 of ", 1)
        pixels = await session.screenshot("dpr-table-2-trec")
        boxes = {cell["cell_id"]: cell["bbox"]}
        check_page_shown(pixels, shown, session.page_images[-1])
        check_print_under(session.page_images[-1], boxes)
        check_boxes_drawn(pixels, shown, boxes)
        await check_quiet(session)

    arguments = {
        "table_id": table_id,
        "row_path_contains": ["Multi", "BM25 + DPR"],
        "col_path_contains": ["Top-100", "TREC"],
        "limit": 1,
    }
    anyio.run(_browse, dpr_index, "lookup_cells", arguments, test, shots)


def test_the_pixel_checks_tell_a_right_box_from_a_misplaced_one() -> None:
    """The checks are not blind: a box drawn on its bbox passes, the same box 12 px to the
    right fails, and so does a right box beside a stray one."""
    bbox = [100.0, 100.0, 300.0, 140.0]
    shown = Shown((0, 0, 400, 300), 1.0, (400, 300), "", [], [], [])
    assert _checked(shown, bbox, [(0, 0)])
    assert not _checked(shown, bbox, [(12, 0)])
    assert not _checked(shown, bbox, [(0, 0), (0, 60)])


def _checked(shown: Shown, bbox: list[float], shifts: list[tuple[int, int]]) -> bool:
    """Whether check_boxes_drawn accepts a screenshot with a 3 px border drawn just outside
    ``bbox`` moved by each of ``shifts``."""
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 400, 300), 0)
    pixmap.clear_with(255)
    x0, y0, x1, y1 = (int(v) for v in bbox)
    for dx, dy in shifts:
        for x in range(x0 + dx - 3, x1 + dx + 3):
            for y in range(y0 + dy - 3, y1 + dy + 3):
                if not (x0 + dx <= x < x1 + dx and y0 + dy <= y < y1 + dy):
                    pixmap.set_pixel(x, y, MARK)
    try:
        check_boxes_drawn(pixmap, shown, {"x1": bbox})
    except AssertionError:
        return False
    return True
