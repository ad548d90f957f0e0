"""The int8 encoder as a CPU without VNNI computes it, on any CPU: for checking that a test's
margin holds on other machines.

ONNX Runtime multiplies the int8 model's u8 activations by its s8 weights with the instruction
set's own kernel. AVX-512 VNNI (and AVX-VNNI) sum the products exactly; AVX2 (vpmaddubsw, as
on EPYC before Zen 4) first adds each pair of adjacent products into an int16 and saturates it
at +-32767, so vectors differ between CPUs (over the sample documents' text blocks, cosine of
AVX2's vectors to VNNI's: mean 0.991, min 0.983; of VNNI's int8 to fp32: 0.993, 0.986).
This writes a copy of the int8 graph whose every MatMulInteger adds back what saturation takes
away: for each pair (2j, 2j+1) of the inner dimension and each output column n, sat16(P) - P
with P = a[2j] b[2j, n] + a[2j+1] b[2j+1, n] on the raw u8 activations (only pairs with
|b| + |b'| > 128 can pass 32767, as a <= 255). With the saturation bounds
lifted, the copy gives the native vectors bit for bit (``--check``).

    python bench/int8_avx2.py DIR          # write DIR/<the int8 graph's cache name>
    DOCSYM_CACHE=DIR DOCSYM_ENCODER=onnx-int8 python -m pytest tests/test_table_model.py

Indexing with it is slow (the correction is computed outside the int8 kernels): minutes for the
sample documents, hours for the corpus; it is for small indexes and single tests.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from docsym.models.encoder import MAX_TOKENS, default_model_dir
from docsym.models.onnx_encoder import OnnxEncoder, cached_model
from docsym.runtime.settings import get_settings

INT16_MAX = 32767


def saturating(model: onnx.ModelProto, bound: float = INT16_MAX) -> onnx.ModelProto:
    """``model`` with each MatMulInteger's result as AVX2's u8s8 kernel gives it."""
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    nodes, constants = [], []
    for node in model.graph.node:
        if node.op_type != "MatMulInteger":
            nodes.append(node)
            continue
        a, b, a_zero, b_zero = node.input
        assert not weights[b_zero].any(), "symmetric weights expected"
        w = weights[b].astype(np.int64)
        j, n = np.nonzero(np.abs(w[0::2]) + np.abs(w[1::2]) > 128)
        out = node.output[0]

        def name(part: str, out: str = out) -> str:
            return f"{out}_avx2_{part}"

        def constant(part: str, value: np.ndarray) -> str:
            constants.append(numpy_helper.from_array(value, name(part)))
            return name(part)

        zero = helper.make_tensor(name("zero"), TensorProto.FLOAT, [1], [0.0])
        nodes += [
            helper.make_node("MatMulInteger", node.input, [name("exact")]),
            helper.make_node("Cast", [a], [name("a")], to=TensorProto.FLOAT),
            helper.make_node("Gather", [name("a"), constant("k0", 2 * j)], [name("a0")], axis=2),
            helper.make_node(
                "Gather", [name("a"), constant("k1", 2 * j + 1)], [name("a1")], axis=2
            ),
            helper.make_node(
                "Mul", [name("a0"), constant("w0", w[2 * j, n].astype(np.float32))], [name("p0")]
            ),
            helper.make_node(
                "Mul",
                [name("a1"), constant("w1", w[2 * j + 1, n].astype(np.float32))],
                [name("p1")],
            ),
            helper.make_node("Add", [name("p0"), name("p1")], [name("pair")]),
            helper.make_node(
                "Clip",
                [
                    name("pair"),
                    constant("low", np.float32(-bound - 1)),
                    constant("high", np.float32(bound)),
                ],
                [name("clipped")],
            ),
            helper.make_node("Sub", [name("clipped"), name("pair")], [name("lost")]),
            helper.make_node("Shape", [a], [name("rows")], end=2),
            helper.make_node(
                "Concat",
                [name("rows"), constant("n", np.array([w.shape[1]]))],
                [name("shape")],
                axis=0,
            ),
            helper.make_node("ConstantOfShape", [name("shape")], [name("zeros")], value=zero),
            helper.make_node("Shape", [name("lost")], [name("lost_shape")]),
            helper.make_node(
                "Expand", [constant("column", n), name("lost_shape")], [name("columns")]
            ),
            helper.make_node(
                "ScatterElements",
                [name("zeros"), name("columns"), name("lost")],
                [name("correction")],
                axis=2,
                reduction="add",
            ),
            helper.make_node("Cast", [name("correction")], [name("integer")], to=TensorProto.INT32),
            helper.make_node("Add", [name("exact"), name("integer")], [out]),
        ]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(constants)
    return model


def write(target_dir: Path, bound: float = INT16_MAX) -> Path:
    """The saturating copy of the configured cache's int8 graph, under its cache name."""
    native = cached_model(default_model_dir(), get_settings().cache.expanduser(), quantize=True)
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / native.name
    onnx.save(saturating(onnx.load(str(native)), bound), str(target))
    return target


def compare(texts: list[str], emulated_dir: Path) -> dict[str, tuple[float, float]]:
    """Mean and min cosine between the native int8, emulated AVX2 and fp32 vectors."""
    model, cache = default_model_dir(), get_settings().cache.expanduser()

    def vectors(where: Path, quantize: bool) -> np.ndarray:
        return OnnxEncoder(model, where, quantize, MAX_TOKENS).encode(texts, 16)

    native, fp32 = vectors(cache, True), vectors(cache, False)
    avx2 = vectors(emulated_dir, True)
    pairs = {
        "native/fp32": (native, fp32),
        "avx2/fp32": (avx2, fp32),
        "avx2/native": (avx2, native),
    }
    return {
        k: (float((x * y).sum(1).mean()), float((x * y).sum(1).min()))
        for k, (x, y) in pairs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="where to write the graph (a DOCSYM_CACHE)")
    parser.add_argument(
        "--check", action="store_true", help="compare vectors on the sample documents' text"
    )
    args = parser.parse_args()
    print(f"wrote {write(args.dir)}")
    if args.check:
        import pymupdf

        from docsym.demo import SAMPLES

        texts = []
        for pdf in sorted(SAMPLES.glob("*.pdf")):
            with pymupdf.open(pdf) as doc:
                texts += [b[4] for page in doc for b in page.get_text("blocks") if b[4].strip()]
        for pair, (mean, low) in compare(texts, args.dir).items():
            print(f"{pair}: mean cosine {mean:.4f}, min {low:.4f} ({len(texts)} text blocks)")
        exact = args.dir / "unsaturated"
        write(exact, bound=1e9)
        same = compare(texts[:20], exact)["avx2/native"]
        print(f"with saturation lifted, against native: mean {same[0]:.6f}, min {same[1]:.6f}")


if __name__ == "__main__":
    main()
