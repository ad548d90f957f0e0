// docsym's evidence view: the places a tool's result cites, listed, and the cited page with
// every cited box drawn on it. It renders from the result's structuredContent as the tool sent
// it (no second format) and asks the server for page images through the host's bridge
// (page_image, an app-only tool). It loads nothing itself: the policy in <head> forbids it.

const { App } = globalThis.McpExtApps;

const MAX_IDS = 50; // page_image takes at most 50 highlight_ids
const MIN_WIDTH_PX = 400;
const MAX_WIDTH_PX = 2400; // page_image's bound
const MAX_TITLES = 100; // documents named per result
const BORDER_PX = 3; // a box's border width, as evidence.html's .box draws it

const $ = (id) => document.getElementById(id);
const hitsList = $("hits");
const frame = $("page-frame");
const image = $("page-image");
const passage = $("passage");

const state = {
  input: {}, // the tool's arguments (view_page's highlight_ids are only there)
  items: [], // what the result cites, one per list entry
  selected: -1,
  page: null, // the page shown: page_image's structured content and the items on it
  asked: 0, // the latest page asked for: a slower, older answer is dropped
  titles: new Map(), // doc_id -> the document's title (or file name), read once per result
};

// -- what a result cites -----------------------------------------------------------------------

// One entry per cited place: {key, doc_id, page_number, page_label, bbox, ids, heading, text}
// plus what the office view needs (address, table_id, cell_id, table). ids are what page_image
// resolves to boxes: a hit's cited sentences or rows, else its own row.
function itemsOf(data, input) {
  if (Array.isArray(data.hits)) return data.hits.map((hit) => fromHit(hit, ""));
  if (Array.isArray(data.leaves)) {
    return data.leaves.flatMap((leaf) => (leaf.hits ?? []).map((h) => fromHit(h, `leaf ${leaf.leaf} · `)));
  }
  if (Array.isArray(data.sentences)) return data.sentences.map((s) => fromSentence(s, data.doc_id));
  if (data.table_id && typeof data.content === "string") return [fromTable(data)];
  if (data.table_id && Array.isArray(data.cells)) return data.cells.map(fromCell);
  if (data.doc_id && data.page_number && "dpi" in data) return [fromPage(data, input)];
  return [];
}

function fromHit(hit, prefix) {
  return {
    key: hit.primary_key,
    doc_id: hit.doc_id,
    page_number: hit.page_number,
    page_label: hit.page_label,
    bbox: hit.bbox,
    ids: hit.cited?.length ? hit.cited : [hit.primary_key],
    heading: `${prefix}#${hit.rank} ${hit.table_name}.${hit.column_name}`,
    text: hit.text,
    table_id: hit.table_name === "tables" ? hit.primary_key : null,
  };
}

function fromSentence(sentence, docId) {
  return {
    key: sentence.sentence_id,
    doc_id: docId,
    page_number: sentence.page_number,
    page_label: sentence.page_label,
    bbox: sentence.bbox,
    ids: [sentence.sentence_id],
    heading: sentence.sentence_id,
    text: sentence.text,
  };
}

function fromCell(cell) {
  const path = (labels) => (labels ?? []).join(" › ");
  return {
    key: cell.cell_id,
    doc_id: cell.doc_id ?? cell.cell_id.split("-")[0], // a doc_id never holds '-'
    page_number: cell.page_number,
    page_label: cell.page_label,
    bbox: cell.bbox,
    ids: [cell.cell_id],
    heading: `${path(cell.row_path)} × ${path(cell.col_path)}`,
    text: cell.text ?? "",
    address: cell.address,
    table_id: cell.table_id,
    cell_id: cell.cell_id,
  };
}

function fromTable(table) {
  return {
    key: table.table_id,
    doc_id: table.doc_id,
    page_number: table.page_number,
    page_label: table.page_label,
    bbox: table.bbox,
    ids: [table.table_id],
    heading: table.label || table.table_id,
    text: table.caption ?? "",
    table_id: table.table_id,
    table,
  };
}

function fromPage(page, input) {
  const ids = input.highlight_ids ?? [];
  return {
    key: `${page.doc_id}-p${page.page_number}`,
    doc_id: page.doc_id,
    page_number: page.page_number,
    page_label: null,
    bbox: ids.length ? null : (input.bounding_box ?? null),
    ids,
    heading: `page ${page.page_number}`,
    text: page.note ?? "",
  };
}

// -- the list ----------------------------------------------------------------------------------

function renderList() {
  hitsList.replaceChildren(
    ...state.items.map((item, i) => {
      const li = document.createElement("li");
      li.className = "hit";
      li.tabIndex = 0;
      li.dataset.key = item.key;
      const doc = document.createElement("div");
      doc.className = "doc";
      doc.dataset.docId = item.doc_id ?? "";
      doc.textContent = state.titles.get(item.doc_id) ?? item.doc_id ?? "";
      const where = document.createElement("div");
      where.className = "where";
      where.textContent = `${item.heading} · ${citation(item)}`;
      const text = document.createElement("div");
      text.className = "text";
      text.textContent = item.text;
      li.append(doc, where, text);
      li.addEventListener("click", () => select(i));
      li.addEventListener("keydown", (event) => event.key === "Enter" && select(i));
      return li;
    }),
  );
}

// The documents' titles, in one run_sql call for the whole result: a person reads a hit by the
// document it comes from, and the tools' results name documents by doc_id only.
async function loadTitles() {
  const ids = [...new Set(state.items.map((item) => item.doc_id).filter(Boolean))]
    .filter((id) => !state.titles.has(id))
    .slice(0, MAX_TITLES);
  if (!ids.length) return;
  const quoted = ids.map((id) => `'${String(id).replaceAll("'", "''")}'`).join(", ");
  const sql = `SELECT doc_id, coalesce(nullif(title, ''), file_name) FROM documents WHERE doc_id IN (${quoted})`;
  const found = await callTool("run_sql", { sql });
  for (const [docId, title] of found?.rows ?? []) state.titles.set(docId, title);
  hitsList.querySelectorAll(".doc").forEach((doc) => {
    doc.textContent = state.titles.get(doc.dataset.docId) ?? doc.textContent;
  });
  if (state.page) showPageLabel(state.page);
}

function citation(item) {
  if (item.page_number == null) return item.doc_id;
  const label = item.page_label ? ` (${item.page_label})` : "";
  return `page ${item.page_number}${label}`;
}

function select(i) {
  state.selected = i;
  hitsList.querySelectorAll("li.hit").forEach((li, j) => li.classList.toggle("selected", i === j));
  const item = state.items[i];
  const page = state.page;
  if (item.page_number == null || pageless(item)) showPassage(item, "");
  else if (page && !frame.hidden && page.doc_id === item.doc_id && page.page_number === item.page_number) {
    state.asked++; // a page still on its way for an earlier choice is not wanted any more
    drawBoxes(); // the page is shown already: only which boxes are current changes
  } else showPage(item.doc_id, item.page_number);
}

// What the result itself says has no page image: a spreadsheet cell (it has an address, not a
// box) or a table of an office document. Other entries ask page_image, which refuses the rest.
function pageless(item) {
  return (item.address && !item.bbox) || item.table?.has_page_image === false;
}

// -- the page ----------------------------------------------------------------------------------

async function showPage(docId, pageNumber) {
  const asked = ++state.asked;
  const onPage = state.items.filter((it) => it.doc_id === docId && it.page_number === pageNumber);
  const ids = [...new Set(onPage.flatMap((it) => it.ids))].slice(0, MAX_IDS);
  status(`Loading page ${pageNumber}…`);
  let result;
  try {
    result = await app.callServerTool({
      name: "page_image",
      arguments: { doc_id: docId, page_number: pageNumber, highlight_ids: ids, width_px: widthWanted() },
    });
  } catch (error) {
    if (asked === state.asked) status(`The page could not be fetched: ${error.message ?? error}`);
    return;
  }
  if (asked !== state.asked) return;
  const picture = (result.content ?? []).find((c) => c.type === "image");
  if (result.isError || !picture) {
    // Office documents have no page images: show the passage or the table instead.
    showPassage(state.items[state.selected], textOf(result));
    return;
  }
  state.page = { ...result.structuredContent, onPage };
  passage.hidden = true;
  frame.hidden = false;
  frame.querySelectorAll(".box").forEach((box) => box.remove()); // the last page's
  image.onload = () => {
    drawBoxes();
    status(""); // page_image's note names ids it found no box for: drawBoxes drew their own
  };
  image.src = `data:${picture.mimeType};base64,${picture.data}`;
  showPageLabel(state.page);
}

function widthWanted() {
  const room = frame.parentElement.clientWidth || 800;
  const wanted = Math.round(room * Math.min(2, window.devicePixelRatio || 1));
  return Math.min(MAX_WIDTH_PX, Math.max(MIN_WIDTH_PX, wanted));
}

// Every cited box on the shown page: each id page_image found (a sentence, a row, a cell), and
// the box of an entry none of whose ids it found (a page or figure hit keeps its own region).
function drawBoxes() {
  frame.querySelectorAll(".box").forEach((box) => box.remove());
  const page = state.page;
  if (!page || !image.clientWidth) return;
  const scale = image.clientWidth / page.width_pt;
  const found = new Set(page.boxes.map((b) => b.id));
  const boxes = [...page.boxes];
  for (const item of page.onPage) {
    if (item.bbox && !item.ids.some((id) => found.has(id))) boxes.push({ id: item.key, bbox: item.bbox });
  }
  const current = state.items[state.selected];
  const mine = new Set(current ? [current.key, ...current.ids] : []);
  for (const { id, bbox } of boxes) {
    const [x0, y0, x1, y1] = bbox;
    const box = document.createElement("div");
    box.className = mine.has(id) ? "box current" : "box";
    box.dataset.id = id;
    // The border is drawn just outside the bbox, so it never covers what it cites (a small
    // cell's digits); the box's inner edge is the bbox.
    box.style.left = `${x0 * scale - BORDER_PX}px`;
    box.style.top = `${y0 * scale - BORDER_PX}px`;
    box.style.width = `${(x1 - x0) * scale + 2 * BORDER_PX}px`; // border-box: both borders in
    box.style.height = `${(y1 - y0) * scale + 2 * BORDER_PX}px`;
    frame.append(box);
  }
}

function showPageLabel(page) {
  const printed = page.page_label ? ` · ${page.page_label}` : "";
  $("doc-title").textContent = state.titles.get(page.doc_id) ?? "";
  $("page-label").textContent = `page ${page.page_number} of ${page.page_count}${printed}`;
  $("prev").disabled = page.page_number <= 1;
  $("next").disabled = page.page_number >= page.page_count;
}

function turn(step) {
  const page = state.page;
  if (!page || frame.hidden) return;
  const target = page.page_number + step;
  if (target >= 1 && target <= page.page_count) showPage(page.doc_id, target);
}

// -- documents without page images (DOCX, XLSX, PPTX, HTML, Markdown) ---------------------------

async function showPassage(item, why) {
  const asked = ++state.asked;
  frame.hidden = true;
  passage.hidden = false;
  $("prev").disabled = $("next").disabled = true;
  $("page-label").textContent = item.page_label ?? citation(item);
  const parts = [];
  if (item.address) parts.push(line("address", `cell ${item.address}${item.page_label ? ` · ${item.page_label}` : ""}`));
  let table = item.table ? tableOf(item.table, null) : null;
  if (!table && item.table_id) { // a cell's or a table hit's table, read whole
    const whole = await callTool("get_table", { table_id: item.table_id, format: "cells" });
    if (asked !== state.asked) return;
    table = whole ? tableOf(whole, item.cell_id) : null;
  }
  parts.push(table ?? line("text", item.text));
  passage.replaceChildren(...parts);
  status(why);
}

async function callTool(name, args) {
  try {
    const result = await app.callServerTool({ name, arguments: args });
    return result.isError ? null : result.structuredContent;
  } catch {
    return null;
  }
}

// A table from get_table's cells (the cited cell outlined), or its HTML rebuilt from text only.
function tableOf(view, citedId) {
  if (view.cells?.length) return gridOf(view.cells, citedId);
  if (view.format === "html" && view.content) return htmlTable(view.content);
  return view.content ? line("text", view.content) : null;
}

function gridOf(cells, citedId) {
  const table = document.createElement("table");
  const rows = new Map();
  for (const cell of [...cells].sort((a, b) => a.row - b.row || a.col - b.col)) {
    if (!rows.has(cell.row)) rows.set(cell.row, table.insertRow());
    const header = cell.is_col_header || cell.is_row_header;
    const td = document.createElement(header ? "th" : "td");
    td.textContent = cell.text ?? "";
    td.rowSpan = cell.row_span || 1;
    td.colSpan = cell.col_span || 1;
    td.dataset.id = cell.cell_id;
    if (cell.address) td.title = cell.address;
    if (cell.cell_id === citedId) td.className = "cited";
    rows.get(cell.row).append(td);
  }
  return table;
}

// get_table's HTML is parsed inert (DOMParser runs and loads nothing) and copied as text.
function htmlTable(html) {
  const parsed = new DOMParser().parseFromString(html, "text/html");
  const table = document.createElement("table");
  for (const tr of parsed.querySelectorAll("tr")) {
    const row = table.insertRow();
    for (const cell of tr.querySelectorAll("th, td")) {
      const copy = document.createElement(cell.tagName.toLowerCase());
      copy.textContent = cell.textContent;
      copy.rowSpan = cell.rowSpan;
      copy.colSpan = cell.colSpan;
      row.append(copy);
    }
  }
  return table;
}

function line(className, text) {
  const div = document.createElement("div");
  div.className = className;
  div.textContent = text;
  return div;
}

// -- the host ----------------------------------------------------------------------------------

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

function status(text) {
  $("status").textContent = text;
}

function showResult(result) {
  state.page = null;
  state.items = result.isError ? [] : itemsOf(result.structuredContent ?? {}, state.input);
  renderList();
  loadTitles();
  if (state.items.length) select(0);
  else status(result.isError ? textOf(result) : "Nothing in this result cites a place.");
}

function applyContext(context) {
  if (!context) return;
  if (context.theme) document.documentElement.style.colorScheme = context.theme;
  for (const [name, value] of Object.entries(context.styles?.variables ?? {})) {
    if (value) document.documentElement.style.setProperty(name, value);
  }
}

// Its layout follows the room it is given, so a host may show it inline or full screen.
const capabilities = { availableDisplayModes: ["inline", "fullscreen"] };
const app = new App({ name: "docsym-evidence", version: "1.0.0" }, capabilities);
app.addEventListener("toolinput", (params) => {
  state.input = params.arguments ?? {};
});
app.addEventListener("toolresult", showResult);
app.addEventListener("hostcontextchanged", applyContext);
$("prev").addEventListener("click", () => turn(-1));
$("next").addEventListener("click", () => turn(1));
new ResizeObserver(drawBoxes).observe(image);
await app.connect();
applyContext(app.getHostContext());
