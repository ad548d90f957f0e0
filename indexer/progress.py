"""Progress a file's preparation reports while it runs: its stages, OCR pages, encoded vectors.

The worker pool (``indexer/workers.py``) stops a file that reports nothing for too long, and the
command line shows the pages read, so every step that can take seconds says so: ``prepare``
names its stages, OCR counts pages, and the wrappers below count encoder batches and LLM calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from docsym.storage.encoder import BATCH, Encoder

# Texts encoded between two reports: 16 batches, about a second of encoding.
TEXTS_PER_STEP = 16 * BATCH

Report = Callable[[str, int, int], None]


class Beat:
    """One call per step: ``beat("encode", 256, 2000)``; silent without a ``report``."""

    def __init__(self, report: Report | None = None) -> None:
        self._report = report

    def __call__(self, what: str, done: int = 0, total: int = 0) -> None:
        if self._report is not None:
            self._report(what, done, total)


class ReportingEncoder:
    """An encoder that reports after every ``TEXTS_PER_STEP`` texts it encodes."""

    def __init__(self, encoder: Encoder, beat: Beat) -> None:
        self._encoder = encoder
        self._beat = beat
        self.model_name = encoder.model_name

    @property
    def dim(self) -> int:
        return self._encoder.dim

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        if len(texts) <= TEXTS_PER_STEP:
            return self._encoder.encode(texts, batch_size)
        # Longest first, as the encoder orders each call's batches: steps of similar lengths
        # pad as little as one call would (steps in document order made the 10-K 5% slower).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), TEXTS_PER_STEP):
            rows = order[start : start + TEXTS_PER_STEP]
            out[rows] = self._encoder.encode([texts[i] for i in rows], batch_size)
            self._beat("encode", min(start + TEXTS_PER_STEP, len(texts)), len(texts))
        return out


class ReportingSummariser:
    """An LLM summariser that reports each summary it writes (each is a network call)."""

    def __init__(self, llm, beat: Beat) -> None:
        self._llm = llm
        self._beat = beat
        self._written = 0

    def summarise(self, *args, **kwargs) -> str:
        try:
            return self._llm.summarise(*args, **kwargs)
        finally:
            self._written += 1
            self._beat("summaries", self._written, 0)
