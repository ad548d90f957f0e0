"""Extractive summaries of pages, sections, tables, figures and documents, and the optional LLM
summariser (tested against a local fake of the OpenAI API, never the network)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from docsym.indexer.model import (
    DocumentMeta,
    Figure,
    Page,
    ParsedDocument,
    Section,
    Table,
    TableCell,
)
from docsym.indexer.pdf.parser import parse_pdf
from docsym.indexer.summaries import (
    TABLE_CHARS,
    DocumentSummaries,
    LlmError,
    LlmSummariser,
    TermStats,
    summarise_document,
    summarise_figure,
    summarise_table,
    summarise_text,
    summariser_from_settings,
    trim_to,
)
from docsym.runtime.settings import Settings

DPR = "papers/2004.04906v3_dpr.pdf"
SPECTER = "papers/2020.acl-main.207_specter.pdf"
UBER = "long_docs/uber_2021_10k.pdf"

PARAGRAPH = (
    "Dense retrieval encodes questions and passages as vectors with two BERT encoders. "
    "The passages closest to the question vector are retrieved with a maximum inner product "
    "search. 12 14 16 18 20 22. "
    "Training uses in-batch negatives so every passage in the batch serves as a negative. "
    "The weather was pleasant that day in the city. "
    "Dense passage retrieval beats BM25 on most open-domain question answering datasets. "
    "Table 3."
)


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parsed_docs(corpus: Path) -> dict[str, ParsedDocument]:
    return {name: parse_pdf(corpus / name) for name in (DPR, SPECTER)}


@pytest.fixture(scope="module")
def dpr_summaries(parsed_docs) -> DocumentSummaries:
    return summarise_document(parsed_docs[DPR])


@pytest.fixture(scope="module")
def specter_summaries(parsed_docs) -> DocumentSummaries:
    return summarise_document(parsed_docs[SPECTER])


class _FakeOpenAi(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions like the OpenAI API; records the requests it saw."""

    requests: list[dict] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if self.status != 200 or self.path != "/v1/chat/completions":
            self.send_response(self.status if self.status != 200 else 404)
            self.end_headers()
            self.wfile.write(b'{"error": "boom"}')
            return
        words = body["messages"][-1]["content"].split()
        answer = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": "LLM SUMMARY " + " ".join(words[6:12]),
                    }
                }
            ]
        }
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


@pytest.fixture
def fake_llm() -> Iterator[tuple[str, type[_FakeOpenAi]]]:
    handler = type("Handler", (_FakeOpenAi,), {"requests": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _doc(pages: list[Page], sections: list[Section] | None = None, **fields) -> ParsedDocument:
    return ParsedDocument(
        format="pdf", meta=DocumentMeta(), pages=pages, sections=sections or [], **fields
    )


# --- summarise_text ---------------------------------------------------------------------------


def test_summary_is_deterministic_bounded_and_in_original_order() -> None:
    first = summarise_text(PARAGRAPH, max_sentences=2, max_chars=200)
    assert first == summarise_text(PARAGRAPH, max_sentences=2, max_chars=200)
    assert 0 < len(first) <= 200
    # The two sentences about dense retrieval are the most central; the digression is not.
    assert "Dense" in first and "weather" not in first
    positions = [PARAGRAPH.index(s) for s in first.split(". ") if s]
    assert positions == sorted(positions)


def test_summary_skips_numbers_and_fragments() -> None:
    summary = summarise_text(PARAGRAPH, max_sentences=3, max_chars=1000)
    assert "12 14 16" not in summary
    assert "Table 3." not in summary


def test_short_text_comes_back_whole_but_trimmed_at_a_word() -> None:
    short = "Sparse retrieval uses inverted indexes.\nIt is\nfast."
    assert summarise_text(short) == "Sparse retrieval uses inverted indexes. It is fast."
    trimmed = summarise_text(short, max_chars=25)
    assert len(trimmed) <= 25 and trimmed.endswith("…")
    assert trimmed[:-1].split()[-1] in short.split()  # no word cut in half
    assert summarise_text("") == "" and summarise_text(" \n\n ") == ""


def test_one_long_sentence_is_cut_at_a_word_boundary() -> None:
    words = " ".join(f"word{i}" for i in range(300)) + "."
    text = f"{words} {words} {words} {words}"
    summary = summarise_text(text, max_sentences=3, max_chars=120)
    assert len(summary) <= 120
    assert all(w.startswith("word") and w[4:].isdigit() for w in summary.rstrip("…").split())


def test_end_of_line_hyphens_are_joined() -> None:
    text = "A new method for learn-\ning general-purpose repre-\nsentations of papers."
    assert summarise_text(text) == (
        "A new method for learning general-purpose representations of papers."
    )


def test_trim_to_respects_the_limit() -> None:
    assert trim_to("alpha beta gamma", 100) == "alpha beta gamma"
    assert trim_to("alpha beta gamma", 12) == "alpha beta…"
    assert len(trim_to("alpha beta gamma", 12)) <= 12


def test_document_idf_changes_what_is_central() -> None:
    # "retrieval" is everywhere in the document, so sentences carried only by it lose weight.
    stats = TermStats(
        [f"retrieval sentence number {i} about retrieval." for i in range(50)]
        + ["Encoders map questions to vectors."]
    )
    text = (
        "Retrieval retrieval retrieval is discussed here at length. "
        "Encoders map questions to vectors and passages to vectors. "
        "Encoders and vectors make dense search possible for questions. "
        "Retrieval appears again in this retrieval sentence."
    )
    summary = summarise_text(text, max_sentences=1, max_chars=300, stats=stats)
    assert summary.startswith("Encoders")


# --- tables -----------------------------------------------------------------------------------


def test_dpr_table_2_summary_names_its_headers(parsed_docs, dpr_summaries) -> None:
    table = next(t for t in parsed_docs[DPR].tables if t.label == "Table 2")
    summary = dpr_summaries.tables[table.ordinal]
    assert summary.startswith("Table 2: Top-20 & Top-100 retrieval accuracy")
    assert "Top-100" in summary and "BM25 + DPR" in summary
    assert "Top-20 › NQ" in summary
    assert "59.1" not in summary  # data values stay out
    assert f"{table.n_rows} rows × {table.n_cols} columns" in summary


def test_big_table_summary_is_bounded() -> None:
    cells = [TableCell(row=0, col=0, text="Item", is_col_header=True, col_path=["Item"])]
    cells += [
        TableCell(row=0, col=c, text=f"Quarter {c}", is_col_header=True, col_path=[f"Quarter {c}"])
        for c in range(1, 60)
    ]
    for r in range(1, 301):
        label = f"Line item number {r} of the consolidated statement of operations"
        cells.append(TableCell(row=r, col=0, text=label, is_row_header=True, row_path=[label]))
        cells += [
            TableCell(row=r, col=c, text="1,234", row_path=[label], col_path=[f"Quarter {c}"])
            for c in range(1, 60)
        ]
    table = Table(
        ordinal=0,
        page_number=1,
        bbox=(0, 0, 1, 1),
        caption="Consolidated statements of operations",
        n_rows=301,
        n_cols=60,
        header_rows=1,
        header_cols=1,
        cells=cells,
    )
    summary = summarise_table(table)
    assert summary is not None and len(summary) <= TABLE_CHARS
    assert summary.startswith("Consolidated statements of operations.")
    assert "Quarter 1," in summary and "Line item number 1 " in summary
    # The lists are capped and say how much they left out; the size line always survives.
    assert "(and 35 more)" in summary and "(and 280 more)" in summary
    assert summary.endswith("301 rows × 60 columns.")


def test_table_without_caption_or_labels_gets_no_summary() -> None:
    cells = [TableCell(row=0, col=0, text="1"), TableCell(row=0, col=1, text="2")]
    table = Table(
        ordinal=0,
        page_number=1,
        bbox=(0, 0, 1, 1),
        n_rows=1,
        n_cols=2,
        header_rows=0,
        header_cols=0,
        cells=cells,
    )
    assert summarise_table(table) is None


# --- figures ----------------------------------------------------------------------------------


def test_figure_summary_has_caption_and_a_mention(parsed_docs, dpr_summaries) -> None:
    figure = parsed_docs[DPR].figures[0]
    assert figure.label == "Figure 1" and figure.caption
    summary = dpr_summaries.figures[figure.ordinal]
    assert summary.startswith(figure.caption)
    # The sentence of the body text that refers to the figure follows the caption.
    assert "Figure 1 illustrates" in summary[len(figure.caption) :]


def test_figure_mentions_match_the_label_exactly() -> None:
    sentences = [
        "As Fig. 3 shows, accuracy grows with more training data.",
        "Figure 30 is about something else entirely.",
        "Figure 3.1 is a sub-figure reference elsewhere.",
        "Figure 3: the caption itself, repeated in the page text.",
    ]
    figure = Figure(
        ordinal=0, page_number=1, bbox=(0, 0, 1, 1), label="Figure 3", caption="Figure 3: Accuracy."
    )
    summary = summarise_figure(figure, sentences, TermStats(sentences))
    assert summary == "Figure 3: Accuracy. As Fig. 3 shows, accuracy grows with more training data."


def test_figure_without_caption_or_mention_gets_no_summary() -> None:
    figure = Figure(ordinal=0, page_number=1, bbox=(0, 0, 1, 1), label="Figure 9")
    assert summarise_figure(figure, ["Nothing refers to it here."], TermStats()) is None


# --- whole documents --------------------------------------------------------------------------


def test_specter_tldr_comes_from_the_abstract(parsed_docs, specter_summaries) -> None:
    tldr = specter_summaries.tldr
    assert tldr is not None and len(tldr) <= 600
    assert "citation" in tldr and "document" in tldr
    abstract = " ".join(parsed_docs[SPECTER].meta.abstract.split())
    assert all(sentence in abstract for sentence in tldr.rstrip("…").split(". ")[:2])


def test_document_summaries_cover_units_and_are_deterministic(parsed_docs) -> None:
    parsed = parsed_docs[SPECTER]
    first, second = summarise_document(parsed), summarise_document(parsed)
    assert first == second
    assert set(first.pages) == {p.number for p in parsed.pages if p.text.strip()}
    with_content = {s.ordinal for s in parsed.sections if s.content.strip()}
    assert set(first.sections) == with_content
    assert with_content != {s.ordinal for s in parsed.sections}  # some headings have no text
    assert all(0 < len(s) <= 600 for s in [*first.pages.values(), *first.sections.values()])
    assert set(first.tables) == {t.ordinal for t in parsed.tables}
    assert "Figure 1: Overview of SPECTER." in first.figures[0]


def test_pages_without_text_get_no_summary() -> None:
    pages = [
        Page(number=1, width=600, height=800, text="", has_text=False),
        Page(number=2, width=600, height=800, text=PARAGRAPH, has_text=True),
        Page(number=3, width=600, height=800, text="  \n ", has_text=False),
    ]
    sections = [
        Section(ordinal=0, level=1, title="Empty", page_start=1, page_end=1),
        Section(ordinal=1, level=1, title="Body", page_start=2, page_end=2, content=PARAGRAPH),
    ]
    summaries = summarise_document(_doc(pages, sections))
    assert list(summaries.pages) == [2]
    assert list(summaries.sections) == [1]
    assert summaries.tldr == summaries.sections[1]  # no abstract: the first section's content


def test_scanned_document_gets_no_summaries(corpus: Path) -> None:
    parsed = parse_pdf(corpus / "scanned" / "small_ocr_zh_scan.pdf")
    summaries = summarise_document(parsed)
    assert summaries.tldr is None and not summaries.pages and not summaries.sections


def test_uber_10k_is_summarised_fast(corpus: Path) -> None:
    parsed = parse_pdf(corpus / UBER)
    start = time.perf_counter()
    summaries = summarise_document(parsed)
    elapsed = time.perf_counter() - start
    print(f"\nuber 10-K: {len(parsed.pages)} pages summarised in {elapsed:.2f} s")
    assert elapsed < 3.0
    assert len(summaries.pages) > 290
    assert all(len(s) <= TABLE_CHARS for s in summaries.tables.values())
    # The 10-K has no abstract: its Overview section says what the company does.
    assert summaries.tldr is not None and "ridesharing" in summaries.tldr


# --- LLM summariser ---------------------------------------------------------------------------


def test_summariser_from_settings_needs_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment variables, read through the settings model."""
    for name in ("BASE_URL", "MODEL", "API_KEY", "TIMEOUT"):
        monkeypatch.delenv(f"DOCSYM_LLM_{name}", raising=False)
    assert summariser_from_settings(Settings()) is None
    monkeypatch.setenv("DOCSYM_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    assert summariser_from_settings(Settings()) is None
    monkeypatch.setenv("DOCSYM_LLM_MODEL", "tiny")
    monkeypatch.setenv("DOCSYM_LLM_API_KEY", "secret")
    monkeypatch.setenv("DOCSYM_LLM_TIMEOUT", "2.5")
    llm = summariser_from_settings(Settings())
    assert llm == LlmSummariser("http://127.0.0.1:1/v1", "tiny", api_key="secret", timeout=2.5)


def test_llm_summarises_tldr_and_long_sections(fake_llm, parsed_docs) -> None:
    base_url, handler = fake_llm
    llm = LlmSummariser(base_url=base_url, model="tiny", api_key="secret", timeout=5)
    parsed = parsed_docs[SPECTER]
    summaries = summarise_document(parsed, llm=llm)
    assert summaries.tldr is not None and summaries.tldr.startswith("LLM SUMMARY")
    intro = next(s for s in parsed.sections if s.title == "Introduction")
    assert summaries.sections[intro.ordinal].startswith("LLM SUMMARY")
    assert not any(s.startswith("LLM SUMMARY") for s in summaries.pages.values())
    request = handler.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer secret"
    assert request["body"]["model"] == "tiny"
    assert summaries.llm_errors == []


def test_llm_errors_fall_back_to_extractive(fake_llm, parsed_docs) -> None:
    base_url, handler = fake_llm
    handler.status = 500
    llm = LlmSummariser(base_url=base_url, model="tiny", timeout=5)
    with pytest.raises(LlmError, match="HTTP 500"):
        llm.summarise("Some text to summarise.")
    parsed = parsed_docs[SPECTER]
    summaries = summarise_document(parsed, llm=llm)
    assert replace(summaries, llm_errors=[]) == summarise_document(parsed)
    # A failing endpoint is given up on after a couple of errors, not asked once per section.
    assert 1 <= len(summaries.llm_errors) <= 2
    assert len(handler.requests) <= 3


def test_unreachable_llm_raises_a_clear_error() -> None:
    llm = LlmSummariser(base_url="http://127.0.0.1:9/v1", model="tiny", timeout=2)
    with pytest.raises(LlmError, match="failed"):
        llm.summarise("Some text to summarise.")
