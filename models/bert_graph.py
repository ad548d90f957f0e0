"""The ONNX graph of a BERT encoder, written straight from its safetensors weights (no torch).

The graph is the one ONNX Runtime's BERT optimiser makes of a torch export, written directly:
three Casts (int64 inputs to int32), one ``EmbedLayerNormalization`` (word, position and
token-type embeddings, layer norm, and the mask turned into per-row lengths), then per layer
``Attention`` (packed QKV weight), ``MatMul``, ``SkipLayerNormalization`` (with the dense bias),
``MatMul``, ``BiasGelu`` (exact erf GELU, BERT's "gelu"), ``MatMul``, ``SkipLayerNormalization``.
Its output is ``last_hidden_state`` [batch, seq, hidden].

Why the fused com.microsoft ops are written directly rather than standard ONNX ops handed to
``onnxruntime.transformers.optimizer.optimize_model`` (bench/encoder_build.py measures both, and
the torch export they replace): both end in the torch export's 46 nodes, give bit-identical
last_hidden_state, and ONNX Runtime's session turns each into the same graph with the same weight
bytes, fp32 and int8, so they run at one speed (interleaved passes on the busy 2-core machine:
medians within 2% of the torch export's, either way). What differs is the way there. In a fresh
process the direct graph is built in 0.8 s, standard ops and the optimiser in 3.9 s, the torch
export and the optimiser in 7.8 s. And the optimiser fuses only subgraphs it recognises, so a
writer of standard ops must imitate an exporter node for node (position ids a Slice of a
[1, positions] constant ended by Unsqueeze(Gather(Shape(input_ids), 1)); the mask reaching the
scores by one of the chains the matcher lists), or the fusion silently does not happen. Left
unfused, the standard ops ran 6-9% faster in two runs (onnxruntime 1.32): the fused graph stays
because the int8 model, and the retrieval figures measured with it, come from it (its Attention
keeps fp32 weights; only the MatMuls are quantised).

Only what this graph computes is accepted: a config.json that is not a post-norm BERT with
absolute positions and exact GELU raises UnsupportedModel (a ValueError) naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Part of the ONNX cache key (onnx_encoder.cached_model): bump it whenever the graph written
# here changes, so a cached file from an older builder is never reused. 1 was the torch export.
GRAPH_VERSION = 2
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
MS = "com.microsoft"  # the domain of ONNX Runtime's contrib ops
ONNX_OPSET = 17
# IR 8 (ONNX 1.12) is read by every onnxruntime since 1.12; onnx.helper would stamp its newest.
IR_VERSION = 8


class UnsupportedModel(ValueError):
    """config.json or the weights describe a model this builder cannot write."""


@dataclass(frozen=True)
class BertShape:
    """The dimensions of a BERT encoder, read from its config.json."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    epsilon: float
    positions: int
    vocab: int
    token_types: int


@dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    domain: str = MS
    attributes: dict[str, int | float] = field(default_factory=dict)


@dataclass
class Graph:
    """Nodes in execution order and the weights they read, by name; ``to_onnx`` serialises."""

    nodes: list[Node]
    weights: dict[str, np.ndarray]


# The settings this graph assumes; any other value names a different computation.
REQUIRED_VALUES: dict[str, tuple[object, ...]] = {
    "model_type": ("bert",),
    "hidden_act": ("gelu",),  # exact erf; gelu_new / gelu_pytorch_tanh are the tanh form
    "position_embedding_type": ("absolute",),
    "is_decoder": (False,),
    "add_cross_attention": (False,),
}
DEFAULTS: dict[str, object] = {
    "position_embedding_type": "absolute",
    "is_decoder": False,
    "add_cross_attention": False,
}


def read_bert_shape(config: dict) -> BertShape:
    """The dimensions of ``config`` (a parsed config.json); UnsupportedModel names the first
    field that is missing or describes something this graph does not compute."""
    for name, allowed in REQUIRED_VALUES.items():
        value = config.get(name, DEFAULTS.get(name))
        if value not in allowed:
            raise UnsupportedModel(
                f"config.json: {name} is {value!r}; the ONNX builder supports only "
                f"{' or '.join(map(repr, allowed))} (a BERT encoder with exact GELU)"
            )
    shape = BertShape(
        hidden=_positive_int(config, "hidden_size"),
        heads=_positive_int(config, "num_attention_heads"),
        layers=_positive_int(config, "num_hidden_layers"),
        intermediate=_positive_int(config, "intermediate_size"),
        epsilon=_epsilon(config),
        positions=_positive_int(config, "max_position_embeddings"),
        vocab=_positive_int(config, "vocab_size"),
        token_types=_positive_int(config, "type_vocab_size"),
    )
    if shape.hidden % shape.heads:
        raise UnsupportedModel(
            f"config.json: hidden_size {shape.hidden} is not a multiple of "
            f"num_attention_heads {shape.heads}"
        )
    return shape


def _positive_int(config: dict, name: str) -> int:
    value = config.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UnsupportedModel(f"config.json: {name} must be a positive integer, not {value!r}")
    return value


def _epsilon(config: dict) -> float:
    value = config.get("layer_norm_eps")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise UnsupportedModel(f"config.json: layer_norm_eps must be in (0, 1), not {value!r}")
    return float(value)


def write_bert_graph(model_dir: Path, target: Path) -> None:
    """Write the ONNX model of the BERT in ``model_dir`` (config.json, model.safetensors)."""
    import onnx

    shape = read_bert_shape(json.loads((model_dir / "config.json").read_text()))
    weights = BertWeights(load_weights(model_dir / "model.safetensors"))
    onnx.save_model(to_onnx(bert_graph(shape, weights), shape), str(target))


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file by name, without a ``bert.`` (task model) prefix."""
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    return {name.removeprefix(prefix): value for name, value in tensors.items()}


class BertWeights:
    """Checked, float32 access to a BERT's tensors by their Hugging Face names."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self.tensors = tensors

    def get(self, name: str, *dims: int) -> np.ndarray:
        tensor = self.tensors.get(name)
        if tensor is None:
            raise UnsupportedModel(f"model.safetensors has no tensor {name!r}")
        if tensor.shape != dims:
            raise UnsupportedModel(
                f"model.safetensors: {name} has shape {tensor.shape}, config.json implies {dims}"
            )
        return tensor.astype(np.float32, copy=False)

    def linear(self, name: str, inputs: int, outputs: int) -> tuple[np.ndarray, np.ndarray]:
        """(weight as [inputs, outputs] for MatMul, bias) of a torch Linear ([out, in])."""
        weight = self.get(f"{name}.weight", outputs, inputs)
        return np.ascontiguousarray(weight.T), self.get(f"{name}.bias", outputs)


def bert_graph(shape: BertShape, weights: BertWeights) -> Graph:
    """The fused graph: embeddings, then ``shape.layers`` transformer layers."""
    graph = Graph(nodes=[], weights={})
    hidden = _embeddings(graph, shape, weights)
    for layer in range(shape.layers):
        last = layer == shape.layers - 1
        hidden = _layer(graph, shape, weights, layer, hidden, OUTPUT_NAME if last else None)
    return graph


def _embeddings(graph: Graph, shape: BertShape, weights: BertWeights) -> str:
    """Casts and EmbedLayerNormalization; returns the name of the embedded sequence."""
    for name in INPUT_NAMES:
        graph.nodes.append(Node("Cast", (name,), (f"{name}_int32",), "", {"to": 6}))  # INT32
    h = shape.hidden
    tables = {
        "word": weights.get("embeddings.word_embeddings.weight", shape.vocab, h),
        "position": weights.get("embeddings.position_embeddings.weight", shape.positions, h),
        "token_type": weights.get("embeddings.token_type_embeddings.weight", shape.token_types, h),
        "gamma": weights.get("embeddings.LayerNorm.weight", h),
        "beta": weights.get("embeddings.LayerNorm.bias", h),
    }
    graph.weights |= {f"embeddings.{name}": value for name, value in tables.items()}
    # Inputs in the op's order: ids, segment ids, the three tables, gamma, beta, mask. Its
    # mask_index output holds each row's length, which Attention reads as right padding.
    node = Node(
        "EmbedLayerNormalization",
        ("input_ids_int32", "token_type_ids_int32", *(f"embeddings.{n}" for n in tables))
        + ("attention_mask_int32",),
        ("embeddings", "mask_index"),
        attributes={"epsilon": shape.epsilon},
    )
    graph.nodes.append(node)
    return "embeddings"


def _layer(
    graph: Graph,
    shape: BertShape,
    weights: BertWeights,
    layer: int,
    source: str,
    output: str | None,
) -> str:
    """One post-norm transformer layer; returns the name of its output."""
    p = f"encoder.layer.{layer}"
    h, inner = shape.hidden, shape.intermediate
    w = graph.weights
    qkv = [weights.linear(f"{p}.attention.self.{part}", h, h) for part in ("query", "key", "value")]
    w[f"{p}.qkv.weight"] = np.concatenate([m for m, _ in qkv], axis=1)
    w[f"{p}.qkv.bias"] = np.concatenate([b for _, b in qkv])
    w[f"{p}.attention.output.weight"], w[f"{p}.attention.output.bias"] = weights.linear(
        f"{p}.attention.output.dense", h, h
    )
    w[f"{p}.intermediate.weight"], w[f"{p}.intermediate.bias"] = weights.linear(
        f"{p}.intermediate.dense", h, inner
    )
    w[f"{p}.output.weight"], w[f"{p}.output.bias"] = weights.linear(f"{p}.output.dense", inner, h)
    for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
        w[f"{p}.{norm}.weight"] = weights.get(f"{p}.{norm}.weight", h)
        w[f"{p}.{norm}.bias"] = weights.get(f"{p}.{norm}.bias", h)
    eps = {"epsilon": shape.epsilon}
    attended, normed = f"{p}.attention", f"{p}.attention.normed"
    out = output or f"{p}.output"
    graph.nodes += [
        Node(
            "Attention",
            (source, f"{p}.qkv.weight", f"{p}.qkv.bias", "mask_index"),
            (attended,),
            attributes={"num_heads": shape.heads},
        ),
        Node("MatMul", (attended, f"{p}.attention.output.weight"), (f"{p}.dense",), ""),
        _skip_norm(f"{p}.dense", source, f"{p}.attention.output", normed, eps),
        Node("MatMul", (normed, f"{p}.intermediate.weight"), (f"{p}.up",), ""),
        Node("BiasGelu", (f"{p}.up", f"{p}.intermediate.bias"), (f"{p}.gelu",)),
        Node("MatMul", (f"{p}.gelu", f"{p}.output.weight"), (f"{p}.down",), ""),
        _skip_norm(f"{p}.down", normed, f"{p}.output", out, eps),
    ]
    return out


def _skip_norm(source: str, skip: str, prefix: str, output: str, eps: dict) -> Node:
    """LayerNorm(source + skip + bias), the dense layer's bias folded in."""
    inputs = (source, skip, f"{prefix}.LayerNorm.weight", f"{prefix}.LayerNorm.bias")
    return Node("SkipLayerNormalization", (*inputs, f"{prefix}.bias"), (output,), attributes=eps)


def to_onnx(graph: Graph, shape: BertShape):  # noqa: ANN201 - onnx is imported lazily
    """The graph as an onnx ModelProto with dynamic batch and sequence axes."""
    from onnx import TensorProto, helper, numpy_helper

    dims = ["batch", "seq"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in INPUT_NAMES]
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [*dims, shape.hidden])
    nodes = [
        helper.make_node(
            n.op, n.inputs, n.outputs, name=f"{n.op}_{i}", domain=n.domain, **n.attributes
        )
        for i, n in enumerate(graph.nodes)
    ]
    initializers = [numpy_helper.from_array(v, name) for name, v in graph.weights.items()]
    body = helper.make_graph(nodes, "bert", inputs, [output], initializers)
    opsets = [helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid(MS, 1)]
    return helper.make_model(
        body, opset_imports=opsets, ir_version=IR_VERSION, producer_name="docsym"
    )
