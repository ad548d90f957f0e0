"""bench/qa/docsym_qa.jsonl is well formed and its gold pages are exactly the evidence pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest

from tests.conftest import CORPUS, DEV_QA, needs_corpus

QA_SET = Path(__file__).resolve().parents[1] / "bench" / "qa" / "docsym_qa.jsonl"
KEYS = {"id", "file", "question", "answer", "kind", "evidence_regex", "pages"}


def _items() -> list[dict]:
    return [json.loads(line) for line in QA_SET.read_text().splitlines() if line.strip()]


def test_every_item_has_the_dev_set_fields_and_a_unique_id() -> None:
    items = _items()
    assert len(items) >= 60
    for item in items:
        assert set(item) == KEYS, item["id"]
        assert item["kind"] in ("text", "table"), item["id"]
        assert item["pages"] and all(p >= 1 for p in item["pages"]), item["id"]
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids))


def test_no_question_repeats_a_dev_set_question() -> None:
    if not DEV_QA.is_file():
        pytest.skip(f"dev QA set not found at {DEV_QA}")
    dev = {json.loads(line)["question"] for line in DEV_QA.read_text().splitlines() if line}
    assert not dev & {item["question"] for item in _items()}


@needs_corpus
def test_gold_pages_are_the_pages_whose_text_matches_the_evidence() -> None:
    by_file: dict[str, list[dict]] = {}
    for item in _items():
        by_file.setdefault(item["file"], []).append(item)
    for file, items in by_file.items():
        with pymupdf.open(CORPUS / file) as doc:
            texts = [" ".join(page.get_text().split()) for page in doc]
        for item in items:
            evidence = re.compile(item["evidence_regex"])
            matching = [n for n, text in enumerate(texts, 1) if evidence.search(text)]
            assert matching == sorted(item["pages"]), item["id"]


MULTIHOP = QA_SET.parent / "multihop.jsonl"
MULTIHOP_KINDS = {"comparison", "two_part", "dependent", "table_calculate"}


def _multihop() -> list[dict]:
    return [json.loads(line) for line in MULTIHOP.read_text().splitlines() if line.strip()]


def test_multihop_items_compile_to_their_leaves() -> None:
    from docsym.tools.query_plans import compile_expression

    items = _multihop()
    assert len(items) >= 30
    assert {item["kind"] for item in items} == MULTIHOP_KINDS
    for item in items:
        compiled = compile_expression(item["expression"])
        assert [leaf.question for leaf in compiled.leaves] == [
            leaf["question"] for leaf in item["leaves"]
        ], item["id"]
        needed = {name for leaf in compiled.leaves for name in leaf.needs}
        assert needed == set(item["answers"]), item["id"]
        assert item["kind"] != "dependent" or needed, item["id"]


@needs_corpus
def test_multihop_gold_pages_are_the_pages_whose_text_matches_the_evidence() -> None:
    texts: dict[str, list[str]] = {}
    for item in _multihop():
        for leaf in item["leaves"]:
            if leaf["file"] not in texts:
                with pymupdf.open(CORPUS / leaf["file"]) as doc:
                    texts[leaf["file"]] = [" ".join(page.get_text().split()) for page in doc]
            evidence = re.compile(leaf["evidence_regex"])
            matching = [n for n, t in enumerate(texts[leaf["file"]], 1) if evidence.search(t)]
            assert matching == sorted(leaf["pages"]), (item["id"], leaf["question"])
