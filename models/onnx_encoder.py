"""all-MiniLM-L6-v2 sentence embeddings with ONNX Runtime instead of torch.

On the 2-core indexing machine the torch encoder is the bottleneck of indexing. The same
transformer as an ONNX graph of ONNX Runtime's fused BERT ops (attention, layer norms and GELU)
is about 2.5x faster with identical embeddings; dynamic int8 weights make it about 4x faster at a
mean cosine of 0.994 to fp32 (see bench/encoder_speed.py for the figures).

The graph is written from the safetensors weights once per model (models/bert_graph.py) and
cached; writing it needs onnx and safetensors, encoding only onnxruntime, tokenizers and numpy,
and neither needs torch. Pooling and normalisation match the model's sentence-transformers
pipeline: mean over the attention mask, then L2 normalisation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from queue import SimpleQueue

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from docsym.models.bert_graph import GRAPH_VERSION, UnsupportedModel, write_bert_graph

MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# Word pieces one model call reads, padding included: long texts go one or two at a time, short
# ones up to the caller's batch size. Small activations stay in the CPU's cache: a paper's
# entries (Multi-LexSum, int8, one thread) encode in 7.4 s of CPU against 8.2 s in batches of 16
# texts whatever their length (docs/RESULTS.md).
BATCH_TOKENS = 256


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of the weights; activations are quantised per batch at run time."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-tensor scales lose too much (mean cosine 0.956 to fp32); per-channel scales on the
    # MatMuls only (the fused Attention keeps fp32 weights) give 0.994.
    with quiet_root_logger():
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            # Fused contrib ops defeat ONNX shape inference; their outputs are float.
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )


@contextmanager
def quiet_root_logger() -> Iterator[None]:
    """The quantiser logs advice on the root logger ("consider pre-processing", measured and
    not needed here), which would print on a user's terminal and, as the root logger's first
    record, leave a stderr handler on it; a handler of its own at ERROR keeps both away."""
    root = logging.getLogger()
    handler, level = logging.NullHandler(), root.level
    root.addHandler(handler)
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def cached_model(model_dir: Path, cache_dir: Path, quantize: bool) -> Path:
    """Path of the fused (and optionally int8) ONNX model, written on first use."""
    digest = cache_key(model_dir)
    fused = cache_dir / f"{model_dir.name}-{digest}-fp32.onnx"
    target = cache_dir / f"{model_dir.name}-{digest}-int8.onnx" if quantize else fused
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    if not fused.exists():
        write_atomically(lambda tmp: write_bert_graph(model_dir, tmp), fused)
    if quantize:
        write_atomically(lambda tmp: quantize_int8(fused, tmp), target)
    return target


def cache_key(model_dir: Path) -> str:
    """What the cached files depend on: the weights, onnxruntime and the graph builder."""
    stat = (model_dir / "model.safetensors").stat()
    key = f"{model_dir.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{ort.__version__}"
    # The graph's version keeps files another builder wrote (the torch export) out of use.
    return hashlib.sha1(f"{key}|{GRAPH_VERSION}".encode()).hexdigest()[:12]


def write_atomically(write: Callable[[Path], None], target: Path) -> None:
    """Write ``target`` via a per-process temp file and rename, so processes that start at once
    (indexers, OCR processes) never read another's half-written model."""
    tmp = target.with_name(f"{target.stem}.{os.getpid()}.tmp.onnx")
    try:
        write(tmp)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def inference_session(model_path: Path, threads: int) -> ort.InferenceSession:
    """A CPU session of the model on ``threads`` intra-op threads."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Worker threads that sleep between parallel sections instead of spinning: batches are
    # 3% faster, and a query's encoding no longer fights the BM25 search running beside it
    # (hybrid_search) for the second core.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


class OnnxEncoder:
    """Normalised mean-pooled embeddings of all-MiniLM-L6-v2 computed with ONNX Runtime.

    ``threads`` sessions of one thread each take the batches of a call in turn, rather than one
    session splitting each batch's ops across threads: a paper's entries encode on two cores in
    3.9 s, against 5.0-5.6 s for one two-threaded session with the same small batches (too
    little work per op for two threads) and 4.4 s with batches of 16 texts (docs/RESULTS.md)."""

    def __init__(
        self, model_dir: Path, cache_dir: Path, quantize: bool, max_tokens: int, threads: int = 2
    ) -> None:
        """``max_tokens``: the model's window (``encoder.MAX_TOKENS``) where its
        sentence_bert_config.json does not say."""
        model_dir = Path(model_dir)
        _require_files(model_dir)
        self.model_path = cached_model(model_dir, Path(cache_dir), quantize)
        self.tokenizer = _load_tokenizer(model_dir, max_tokens)
        self.threads = max(1, threads)
        self._pool = ThreadPoolExecutor(self.threads, "docsym-onnx") if self.threads > 1 else None
        self.use_model(self.model_path)
        self.dimension = int(json.loads((model_dir / "config.json").read_text())["hidden_size"])

    def use_model(self, model_path: Path) -> None:
        """Run this ONNX graph of the model from now on (the benches compare graphs)."""
        self._sessions: SimpleQueue[ort.InferenceSession] = SimpleQueue()
        for _ in range(self.threads):
            self._sessions.put(inference_session(model_path, 1))
        session = self._sessions.get()
        self.input_names = {i.name for i in session.get_inputs()}
        self._sessions.put(session)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Embeddings in input order, float32 of shape (len(texts), dimension), unit length.
        At most ``batch_size`` texts go to the model at once (the caller's choice:
        encoder.BATCH), and fewer when they are long (BATCH_TOKENS)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        widths = np.array([len(e.ids) for e in encodings])
        # Length-sorted batches pad little, as sentence-transformers does.
        order = np.argsort(-widths, kind="stable")
        batches = list(_batches(order, widths, batch_size))

        def encode_rows(rows: np.ndarray) -> np.ndarray:
            return self._encode_batch([encodings[i] for i in rows])

        run = self._pool.map if self._pool and len(batches) > 1 else map
        for rows, vectors in zip(batches, run(encode_rows, batches), strict=True):
            out[rows] = vectors
        return out

    def _encode_batch(self, encodings: list) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = {name: value for name, value in feed.items() if name in self.input_names}
        session = self._sessions.get()  # one batch at a time on a session
        try:
            hidden = session.run(None, feed)[0]
        finally:
            self._sessions.put(session)
        return mean_pool_normalise(hidden, mask)


def _batches(order: np.ndarray, widths: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """Consecutive runs of ``order`` (longest text first) that go to the model at once: at most
    ``batch_size`` texts, and at most BATCH_TOKENS word pieces once padded to the run's first."""
    start = 0
    while start < len(order):
        count = max(1, min(batch_size, BATCH_TOKENS // int(widths[order[start]])))
        yield order[start : start + count]
        start += count


def _require_files(model_dir: Path) -> None:
    """Refuse, naming the file, a model folder the ONNX encoder cannot run."""
    for name in MODEL_FILES:
        if not (model_dir / name).is_file():
            raise UnsupportedModel(
                f"{model_dir} has no {name}: the ONNX encoder needs a BERT folder with "
                f"{', '.join(MODEL_FILES)} (DOCSYM_ENCODER=torch runs other models)"
            )


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling followed by its Normalize module, in numpy."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _load_tokenizer(model_dir: Path, max_tokens: int) -> Tokenizer:
    """The model's fast tokenizer, truncating at the model's window and never padding."""
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        max_tokens = int(json.loads(config.read_text()).get("max_seq_length", max_tokens))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()  # batches are padded to their own longest text in _encode_batch
    return tokenizer
