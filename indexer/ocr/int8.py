"""The recogniser's model with int8 convolutions and matrix products, written once per machine.

Convolutions are 78% of the recogniser's time in float. Static int8 quantisation needs the range
of every activation, measured on inputs like those it will read: lines of print rendered here at
the recogniser's height (fonts and sizes of papers and reports), so the file written depends on
nothing but this module, the wheel's model and ONNX Runtime.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort

# Raised when the quantised file would come out differently (calibration print, options).
INT8_REVISION = 1
# Calibration print: the recogniser's crops of 150-dpi lines are 18-26 pixels tall.
FONTS = ("tiro", "helv", "cour", "tibo")
POINT_SIZES = (7.0, 8.5, 10.0)
DPI = 150
CALIBRATION_TEXT = (
    "Dense passage retrieval (DPR) encodes 21,015,324 passages; top-20 accuracy 78.4% vs. 59.1% "
    "for BM25. Table 3: F1 on SQuAD v1.1, TriviaQA and WebQuestions (p < 0.05). The model's "
    "weights [1] were fine-tuned with lr = 2e-5 and a batch of 128, see https://example.org/x. "
    "Figure 7 shows the IBM Db2 Row and Column Access Control (RCAC) rules as of 2019-11-30."
)


def int8_model(
    source: Path, cache_dir: Path, prepare: Callable[[np.ndarray], np.ndarray], variant: str
) -> Path:
    """Path of ``source`` quantised to int8, written on first use. ``prepare`` turns a line's
    gray-on-white BGR crop into the recogniser's input batch of one; ``variant`` names how, so
    that another preparation gets its own file."""
    target = cache_dir / f"{source.stem}-{_cache_key(source, variant)}-int8.onnx"
    if not target.exists():
        from docsym.models.onnx_encoder import write_atomically

        cache_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(lambda tmp: _quantise(source, tmp, prepare), target)
    return target


def _cache_key(source: Path, variant: str) -> str:
    stat = source.stat()
    key = f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{ort.__version__}|{variant}"
    key += f"|{INT8_REVISION}"
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def _quantise(source: Path, target: Path, prepare: Callable[[np.ndarray], np.ndarray]) -> None:
    import onnx
    from onnx import version_converter
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    from docsym.models.onnx_encoder import quiet_root_logger

    class Lines(CalibrationDataReader):
        def __init__(self) -> None:
            self.inputs = ({input_name: prepare(crop)} for crop in _calibration_crops())

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.inputs, None)

    # Per-channel scales (one per filter) need opset 13's DequantizeLinear; the wheel's is 11.
    model = version_converter.convert_version(onnx.load(str(source)), 13)
    input_name = model.graph.input[0].name
    upgraded = target.with_name(f"{target.stem}.fp32.onnx")
    onnx.save(model, str(upgraded))
    try:
        with quiet_root_logger():
            quantize_static(
                str(upgraded),
                str(target),
                Lines(),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["Conv", "MatMul"],
            )
    finally:
        upgraded.unlink(missing_ok=True)


def _calibration_crops() -> Iterator[np.ndarray]:
    """Each printed line of CALIBRATION_TEXT, in each font and size, as a scan shows it: gray
    on white at DPI, cut out with a margin like the detector's boxes."""
    import cv2
    import pymupdf

    doc = pymupdf.open()
    for font in FONTS:
        for size in POINT_SIZES:
            page = doc.new_page(width=260, height=400)  # a column of a two-column paper
            page.insert_textbox(
                page.rect + (10, 10, -10, -10), CALIBRATION_TEXT, fontname=font, fontsize=size
            )
            pix = page.get_pixmap(dpi=DPI, colorspace=pymupdf.csGRAY, alpha=False)
            gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w]
            scale = DPI / 72
            for block in page.get_text("dict")["blocks"]:
                for line in block.get("lines", []):
                    x0, y0, x1, y1 = (round(v * scale) for v in line["bbox"])
                    pad = max(1, round(0.15 * (y1 - y0)))
                    crop = gray[max(0, y0 - pad) : y1 + pad, max(0, x0 - pad) : x1 + pad]
                    yield cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_GRAY2BGR)
    doc.close()
