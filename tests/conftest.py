"""Shared fixtures. The corpus lives outside the repo (``../shared/corpus``); tests that need it
skip with a clear reason when it is absent, and never copy its files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DOCSYM_CORPUS", REPO.parent / "shared" / "corpus"))
DEV_QA = Path(os.environ.get("DOCSYM_DEV_QA", REPO.parent / "shared" / "dev-qa" / "qa.jsonl"))

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS} (set DOCSYM_CORPUS)"
)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (set DOCSYM_CORPUS)")
    return CORPUS
