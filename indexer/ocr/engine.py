"""One page image -> OCR lines with boxes in page points, upright and deskewed.

RapidOCR (Apache-2.0, https://github.com/RapidAI/RapidOCR) ships PaddleOCR's PP-OCRv6 small
detection and recognition models (one multilingual pair: English, Chinese and more) and a 0/180
degree line classifier inside its ``rapidocr`` wheel; they run on ONNX Runtime and are loaded
from the installed package by path, so nothing is downloaded. Around them this module adds what a
page of a scanned document needs: the page's orientation (a page scanned sideways or upside down
is turned before recognition) and its skew (a page scanned a few degrees off is straightened), and
boxes mapped back to the page as docsym shows it. The recogniser, ~80% of a page's time, runs
with int8 weights (``int8.py``) and reads each line squeezed across (REC_SQUEEZE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from importlib.resources import files
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import cv2
import numpy as np

from docsym.indexer.model import BBox
from docsym.indexer.ocr.int8 import int8_model
from docsym.runtime.settings import get_settings

if TYPE_CHECKING:
    from rapidocr.ch_ppocr_cls import TextClassifier
    from rapidocr.ch_ppocr_det import TextDetector
    from rapidocr.ch_ppocr_rec import TextRecognizer
    from rapidocr.ch_ppocr_rec.typings import WordInfo

# Lines read with less confidence than this are noise (specks, stamps, halftone).
MIN_CONFIDENCE = 0.5
# Skew below this many degrees is left as it is: straightening costs a second detection pass.
MIN_SKEW_DEGREES = 0.4
# A page whose text boxes are mostly this much taller than wide is set sideways.
TALL = 1.5
# How far the detector grows a found line's outline into its box. RapidOCR's 1.6 suits
# PP-OCRv4; PP-OCRv6's boxes came out ~1 pt wider and moved the text layer's words (150 dpi:
# words within 3 pt of the printed ones 0.892 at 1.6, 0.903 at 1.45, 0.909 at 1.3; word recall
# 0.991-0.992 at all three). Flatter boxes cost the recogniser wider crops: 7.5 s of CPU a page
# at 1.3, 7.0 at 1.6.
UNCLIP_RATIO = 1.3
# The recogniser reads a line scaled to REC_HEIGHT pixels and squeezed across to this share of
# its width: its cost grows with the width, and at 150 dpi a line is enlarged ~2.2 times to that
# height, wider than the model needs. It emits a letter or a blank every 8 pixels of its input;
# squeezed too far it has too few of those for the letters and misreads (543 lines against their
# unsqueezed reading: 0.16% of characters differ at 0.8, 0.33% at 0.6, 0.9% at 0.5, 3.9% at
# 0.45). The bench's 20 pages at 150 dpi, one process, int8: word recall 0.983 and 5.4 s of CPU a
# page unsqueezed, 0.983 and 4.3 s at 0.7; at 0.6 in float recall fell by 0.5 points. At 0.7 in
# int8 a scanned table's shaded head read "Samplesa" and a comma as a Chinese one: 0.8.
REC_SQUEEZE = 0.8
REC_HEIGHT = 48
# The recogniser was trained on lines padded (gray) to REC_MIN_WIDTH, and RapidOCR pads every
# shorter line's input so: on the bench's pages 48% of the lines, and 21% of all the width it
# read was padding. Lines are read at their own width; only one narrower than REC_PAD_BELOW (a
# lone digit or letter) is padded, as unpadded three lone "1"s of the bench read as the Chinese
# "一". The bench's 20 pages at 150 dpi, one process: recognition 3.00 -> 2.56 s of CPU a page,
# 0.044% of characters changed (none padded: 3.26 -> 2.64, 0.060%).
REC_MIN_WIDTH = 320
REC_PAD_BELOW = 48
PAD_GRAY = 128  # RapidOCR's padding: 0 after scaling 0..255 to -1..1
# Print set tighter than usual (a condensed font) misreads squeezed in one of two ways, and is
# read again unsqueezed: as a few letters and blanks, with less confidence than SURE_SQUEEZED
# (~0.4; a 150-dpi page's lines ~0.99, 0.9% of their width is read twice), or sure but with
# letters left out, more than MAX_LETTERS_PER_STEP a step of 8 pixels (the bench's lines: 0.54
# on median at 0.7, at most 0.73; print condensed to 0.55: 0.97).
SURE_SQUEEZED = 0.9
MAX_LETTERS_PER_STEP = 0.8
# A full-width form (U+FF01-FF5E) lies this far above its ASCII character.
FULL_WIDTH_OFFSET = 0xFEE0
# A ruled line is at most this many pixels thick (a heavier bar is a shaded block or a photo).
RULE_THICKNESS = 6
# ... and at least this many text lines long.
RULE_LINES = 2.5
# Ink is at least this many gray levels darker than the paper (or shading) around it.
MIN_INK_CONTRAST = 40
# A filled area whose tone, strokes aside, spreads wider than this (gray levels, standard
# deviation) is a photo; shading is flat (a scanned shaded table head: 0.5; screenshots in
# papers at 150 dpi: 12 to 31).
FLAT_SPREAD = 8.0


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    bbox: BBox  # in points of the upright page, origin top-left
    confidence: float


@dataclass(frozen=True, slots=True)
class PageOcr:
    lines: tuple[OcrLine, ...]
    # Clockwise quarter turns (0, 90, 180, 270) that make the page's text upright; boxes are
    # given in the turned frame.
    rotation: int
    skew: float  # degrees the scan was turned to straighten it
    # Ruled lines (table borders, rules under headers) as (x0, y0, x1, y1) in points of the
    # upright page: drawn on the page so the table reader finds them as in a born-digital PDF.
    rules: tuple[BBox, ...] = ()

    @property
    def confidence(self) -> float | None:
        """Mean recognition confidence, weighted by characters."""
        chars = sum(len(line.text) for line in self.lines)
        if not chars:
            return None
        return sum(line.confidence * len(line.text) for line in self.lines) / chars


# Raised when this module reads a page differently, so cached pages are read again.
READER_REVISION = 7
# The models inside the rapidocr wheel, by stage. The wheel ships exactly these; any other
# RapidOCR model is fetched from the network on first use, which docsym never does.
MODELS = {
    "Det": "PP-OCRv6_det_small.onnx",
    "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
    "Rec": "PP-OCRv6_rec_small.onnx",
}


def engine_version() -> str:
    """Names the package, its models, this reader and the detector's input size: cached results
    of another version are not reused."""
    models = ", ".join(f"{name} int8" if stage == "Rec" else name for stage, name in MODELS.items())
    return (
        f"rapidocr {version('rapidocr')} ({models}), reader {READER_REVISION}, "
        f"detector {get_settings().ocr_megapixels:g} MP"
    )


class _Stages(NamedTuple):
    """RapidOCR's three models, driven one by one: docsym picks the detector's input size,
    the page's orientation and its skew between them."""

    det: TextDetector  # image -> boxes of its text lines
    cls: TextClassifier  # line crops -> 0/180 labels, and the crops turned by them
    rec: TextRecognizer  # line crops -> texts, scores, where each letter was read


@lru_cache(maxsize=1)
def _engine() -> _Stages:
    from rapidocr import RapidOCR

    # One thread per engine (models and image operations): the pool runs one engine per
    # core, which keeps every core busy without two engines' threads fighting over them.
    cv2.setNumThreads(1)
    engine = RapidOCR(params=_params())
    # RapidOCR loads each model on its first page; loaded here, once per process.
    return _Stages(engine._load_det_model(), engine._load_cls_model(), engine._load_rec_model())


def rec_model() -> Path:
    """The recogniser's int8 model, written on first use on this machine (~10 s of CPU)."""
    source = Path(str(files("rapidocr") / "models" / MODELS["Rec"]))
    # Calibrated on lines prepared as they are read: another squeeze, another file.
    variant = f"{REC_SQUEEZE:g}, padded below {REC_PAD_BELOW}"
    return int8_model(source, get_settings().cache.expanduser(), _rec_input, variant)


def _params() -> dict[str, object]:
    models = files("rapidocr") / "models"
    paths = {stage: Path(str(models / name)) for stage, name in MODELS.items()}
    # Recognition is ~80% of a page's time; int8 convolutions and matrix products take ~45% off
    # it (the bench's 20 pages at 150 dpi, unsqueezed, one process: 8.3 -> 5.4 s of CPU a page,
    # word recall 0.986 -> 0.983).
    paths["Rec"] = rec_model()
    return {
        # A path for every model: RapidOCR only looks a model up (and may fetch it) without one.
        **{f"{stage}.model_path": str(path) for stage, path in paths.items()},
        "EngineConfig.onnxruntime.intra_op_num_threads": 1,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        # Lines one at a time: batches are padded to their widest line, which costs more on a
        # page of lines of every length than it saves (measured: 7.5 s vs 9.2 s of CPU a page).
        "Rec.rec_batch_num": 1,
        "Rec.rec_img_shape": [3, REC_HEIGHT, REC_PAD_BELOW],  # the narrow ones padded here
        "Det.unclip_ratio": UNCLIP_RATIO,
        "Global.log_level": "warning",  # not a line per model loaded in every OCR process
    }


def read_image(gray: np.ndarray, points_per_pixel: float) -> PageOcr:
    """OCR a grayscale page image (as rendered, top-left origin)."""
    image = cv2.cvtColor(gray, cv2.COLOR_GRAY2BGR)
    boxes = _boxes(image)
    rotation = _orientation(image, boxes)
    if rotation:
        image = _turn(image, rotation)
        boxes = _boxes(image)
    skew, back = _skew(boxes), None
    if abs(skew) >= MIN_SKEW_DEGREES:
        image, back = _straighten(image, skew)
        boxes = _boxes(image)
    else:
        skew = 0.0
    lines = [
        OcrLine(text, _to_points(box, back, points_per_pixel), score)
        for box, (text, score) in zip(boxes, _recognise(image, boxes), strict=True)
        if text.strip() and score >= MIN_CONFIDENCE
    ]
    rules = tuple(_to_points(rule, back, points_per_pixel) for rule in _ruled_lines(image, boxes))
    return PageOcr(tuple(lines), rotation, skew, rules)


def _boxes(image: np.ndarray) -> list[np.ndarray]:
    """The text lines' boxes on ``image``. The detector needs ~140 MB per megapixel it reads
    (17 MP, a large scanned page at 300 dpi: 2.5 GB and 25 s), so an image larger than
    DOCSYM_OCR_MEGAPIXELS is scaled down to find the lines, and their boxes scaled back to the
    full image, which recognition reads."""
    height, width = image.shape[:2]
    scale = min(1.0, math.sqrt(_detector_pixels() / (height * width)))
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        back = np.array([width / size[0], height / size[1]], dtype=np.float32)
    else:
        small, back = image, None
    boxes = _engine().det(small).boxes
    if boxes is None:
        return []
    return [box * back for box in boxes] if back is not None else list(boxes)


def _detector_pixels() -> float:
    return get_settings().ocr_megapixels * 1e6


def _recognise(image: np.ndarray, boxes: list[np.ndarray]) -> list[tuple[str, float]]:
    """Each box's text and confidence. A line the classifier takes for upside down is read
    both ways and the surer reading kept: on an upright page the classifier is wrong more
    often than a line is really turned (measured: one line in ten of a clean 150-dpi page was
    flipped and read as noise), while a sideways header still needs its turn."""
    if not boxes:
        return []
    crops = _crops(image, boxes)
    classified = _engine().cls(crops)
    turned = list(classified.img_list)
    results = _read(turned)
    flipped = [i for i, (label, _) in enumerate(classified.cls_res) if label == "180"]
    if flipped:
        as_cut = _read([crops[i] for i in flipped])
        for i, other in zip(flipped, as_cut, strict=True):
            if other[1] > results[i][1]:
                results[i], turned[i] = other, crops[i]
    return [
        (_respace(crop, _narrow_marks(text), info), score)
        for crop, (text, score, info) in zip(turned, results, strict=True)
    ]


def _narrow_marks(text: str) -> str:
    """Full-width punctuation (the Chinese comma, colon, brackets) read between letters that are
    not Chinese or Japanese, as the ASCII mark it stands for: the multilingual recogniser reads
    a Latin comma after "%" as a Chinese one now and then (more often in int8, squeezed)."""
    marks = list(text)
    for i, ch in enumerate(marks):
        if "\uff01" <= ch <= "\uff5e" and not ch.isalnum():
            near = text[:i].rstrip()[-1:] + text[i + 1 :].lstrip()[:1]
            if not any(_wide(other) for other in near):
                marks[i] = chr(ord(ch) - FULL_WIDTH_OFFSET)
    return "".join(marks)


def _crops(image: np.ndarray, boxes: list[np.ndarray]) -> list[np.ndarray]:
    """Each line cut out straight; the library turns tall crops counter-clockwise."""
    from rapidocr.utils.process_img import get_rotate_crop_image

    return [get_rotate_crop_image(image, np.asarray(box, dtype=np.float32)) for box in boxes]


def _read(crops: list[np.ndarray]) -> list[tuple[str, float, WordInfo]]:
    """Each crop's text, confidence, and where along the line each letter was read (in steps
    across the crop, whatever width the recogniser read it at)."""
    results = _run_rec([_fit(crop, REC_SQUEEZE) for crop in crops])
    unsure = [i for i, result in enumerate(results) if _misread(*result)]
    if unsure:
        again = _run_rec([_fit(crops[i], 1.0) for i in unsure])
        for i, result in zip(unsure, again, strict=True):
            results[i] = result
    return results


def _fit(crop: np.ndarray, squeeze: float) -> np.ndarray:
    """The crop scaled to the recogniser's height and ``squeeze`` times its width."""
    height, width = crop.shape[:2]
    size = (max(1, math.ceil(REC_HEIGHT * width / height * squeeze)), REC_HEIGHT)
    return cv2.resize(crop, size, interpolation=cv2.INTER_AREA if squeeze < 1 else cv2.INTER_LINEAR)


def _rec_input(crop: np.ndarray) -> np.ndarray:
    """A line's crop as the recogniser's input, a batch of one, as RapidOCR prepares it."""
    fitted = _padded(_fit(crop, REC_SQUEEZE))
    return (fitted.transpose(2, 0, 1)[np.newaxis] / 127.5 - 1.0).astype(np.float32)


def _padded(fitted: np.ndarray) -> np.ndarray:
    """A fitted crop narrower than REC_PAD_BELOW on gray to REC_MIN_WIDTH; others as they are."""
    width = fitted.shape[1]
    if width >= REC_PAD_BELOW:
        return fitted
    padded = np.full((fitted.shape[0], REC_MIN_WIDTH, fitted.shape[2]), PAD_GRAY, np.uint8)
    padded[:, :width] = fitted
    return padded


def _misread(text: str, score: float, info: WordInfo) -> bool:
    """Whether a squeezed reading may have lost letters."""
    crowded = bool(info.line_txt_len) and len(text) > MAX_LETTERS_PER_STEP * info.line_txt_len
    return score < SURE_SQUEEZED or crowded


def _run_rec(crops: list[np.ndarray]) -> list[tuple[str, float, WordInfo]]:
    from rapidocr.ch_ppocr_rec import TextRecInput

    out = _engine().rec(TextRecInput(img=[_padded(crop) for crop in crops], return_word_box=True))
    results = []
    for crop, text, score, info in zip(crops, out.txts, out.scores, out.word_results, strict=True):
        if crop.shape[1] < REC_PAD_BELOW:
            info.line_txt_len *= crop.shape[1] / REC_MIN_WIDTH  # the steps across the line only
        results.append((text, float(score), info))
    return results


def _respace(crop: np.ndarray, text: str, info: WordInfo) -> str:
    """Put back the spaces the recogniser drops between words set close together (small print
    at 150 dpi: "theforest"): where the image shows a blank gap between two letters it read
    next to each other. ``info`` holds the decoding step at which each letter other than a space
    was read, and how many steps span the crop."""
    steps = info.line_txt_len
    at = [col for group in info.word_cols for col in group]
    if not text or not steps or len(at) != sum(1 for ch in text if not ch.isspace()):
        return text
    gaps = _blank_runs(crop)
    if not gaps:
        return text
    scale = crop.shape[1] / steps
    columns = iter(at)
    placed = [(ch, None if ch.isspace() else next(columns) * scale) for ch in text]
    out = [text[0]]
    for (before, left), (after, right) in pairwise(placed):
        if left is not None and right is not None and _may_part(before, after):
            # A "1" stands alone in a digit's width, so "2019" and "11,313" show word-wide
            # gaps; between two digits only a gap as wide as the line is tall parts them.
            least = crop.shape[0] if before.isdigit() and after.isdigit() else 0
            if any(left < (a + b) / 2 < right and b - a >= least for a, b in gaps):
                out.append(" ")
        out.append(after)
    return "".join(out)


def _may_part(before: str, after: str) -> bool:
    """Whether a gap between these two letters can be a word space: never before a closing
    mark, nor inside a URL or a number ("example.com", "3.5", "79,168", "Top-100"), where
    narrow glyphs leave gaps."""
    if " " in (before, after) or after in ".,:;!?%)]}'\"" or before in "([{/$":
        return False
    if before in ",-" and after.isdigit():
        return False
    if _wide(before) or _wide(after):
        return False  # Chinese and Japanese are written without spaces
    return before not in ".:" or after.isupper()


def _wide(ch: str) -> bool:
    return "\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef"


def _blank_runs(crop: np.ndarray) -> list[tuple[int, int]]:
    """Runs of ink-free columns at least as wide as the narrowest word space (a fifth of the
    line's height; letters of a word stand closer, at most half that at 150 dpi)."""
    gray = crop if crop.ndim == 2 else cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    paper, print_ = np.percentile(gray, 90), np.percentile(gray, 2)
    if paper - print_ < 40:
        return []  # no contrast to tell a gap by
    ink = gray < paper - 0.25 * (paper - print_)
    empty = ~ink.any(axis=0)
    least = max(4, round(0.2 * gray.shape[0]))
    runs, start = [], None
    for x, blank in enumerate(empty):
        if blank and start is None:
            start = x
        elif not blank and start is not None:
            if x - start >= least:
                runs.append((start, x))
            start = None
    return runs


def _ruled_lines(image: np.ndarray, boxes: list[np.ndarray]) -> list[np.ndarray]:
    """Long thin runs of ink, across or down the page: each as the corners of its box.

    Ink is what is much darker than what lies around it; a morphological opening with a long
    flat (or tall) kernel keeps only runs at least that long. Letters' strokes are shorter than
    RULE_LINES text lines are tall, and than a 25th of the page's width. Underlined text yields
    a rule too, as in a born-digital PDF."""
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    ink = _thin_ink(gray)
    # A photo's detail is not rules, nor part of the rules it touches.
    ink = cv2.bitwise_and(ink, cv2.bitwise_not(_photos(gray, ink)))
    height, width = ink.shape
    line = float(np.median([_sides(box)[1] for box in boxes])) if boxes else 20.0
    least = max(20, round(RULE_LINES * line))
    found = []
    for kernel, across in (
        (cv2.getStructuringElement(cv2.MORPH_RECT, (max(width // 25, least), 1)), True),
        (cv2.getStructuringElement(cv2.MORPH_RECT, (1, least)), False),
    ):
        runs = cv2.morphologyEx(ink, cv2.MORPH_OPEN, kernel)
        count, _, stats, _ = cv2.connectedComponentsWithStats(runs, connectivity=8)
        for x, y, w, h, _ in stats[1:count]:
            thin = h <= RULE_THICKNESS if across else w <= RULE_THICKNESS
            if thin:
                found.append(np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]]))
    return found


def _thin_ink(gray: np.ndarray) -> np.ndarray:
    """Strokes and rules: pixels much darker than the lightest within a rule's thickness of
    them (a black-hat transform), as a 0/255 mask. Measured against the surroundings rather
    than the page, a rule drawn over or along a shaded header (a filled table head) is ink
    while the shading is not; with one threshold for the page, the shading was ink and took
    the rules over and around it with it."""
    reach = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * RULE_THICKNESS + 1,) * 2)
    darker = cv2.morphologyEx(gray, cv2.MORPH_BLACKHAT, reach)
    level, _ = cv2.threshold(darker, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    # A blank page's noise splits at some level too; ink stands well clear of the paper.
    _, ink = cv2.threshold(darker, max(level, MIN_INK_CONTRAST), 255, cv2.THRESH_BINARY)
    return ink


def _photos(gray: np.ndarray, ink: np.ndarray) -> np.ndarray:
    """Filled dark areas whose gray varies away from their strokes (photos), as a 0/255 mask
    grown by a rule's thickness. A shaded table head is filled too, but flat: its rules and
    words are ink on an even tone (the corpus table scan's head: 0.5 gray levels of spread)."""
    _, dark = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
    square = cv2.getStructuringElement(cv2.MORPH_RECT, (RULE_THICKNESS + 1,) * 2)
    count, labels = cv2.connectedComponents(cv2.morphologyEx(dark, cv2.MORPH_OPEN, square))
    if count < 2:
        return np.zeros_like(gray)
    # Strokes and their anti-aliased edges left out, the tone of each area is measured.
    away = (labels > 0) & (cv2.dilate(ink, cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))) == 0)
    area, tone = labels[away], gray[away].astype(np.float64)
    pixels = np.maximum(np.bincount(area, minlength=count), 1)
    mean = np.bincount(area, tone, count) / pixels
    spread = np.sqrt(np.maximum(np.bincount(area, tone * tone, count) / pixels - mean**2, 0.0))
    textured = spread > FLAT_SPREAD
    textured[0] = False  # the paper
    return cv2.dilate(textured[labels].astype(np.uint8) * 255, square)


def _orientation(image: np.ndarray, boxes: list[np.ndarray]) -> int:
    """Clockwise turns that make the text upright: sideways text from the shape of the text
    boxes, and which way up from the line classifier's vote on a sample of lines."""
    if not boxes:
        return 0
    sides = [_sides(box) for box in boxes]
    tall = sum(1 for w, h in sides if h > TALL * w)
    wide = sum(1 for w, h in sides if w > TALL * h)
    sideways = tall > wide
    sample = sorted(boxes, key=lambda b: -max(_sides(b)))[:12]
    # The library's crops turn tall boxes counter-clockwise, as for recognition.
    results = _engine().cls(_crops(image, sample)).cls_res
    flipped = sum(1 for label, score in results if label == "180" and score > 0.9)
    upside_down = flipped > len(results) / 2
    if sideways:
        # A crop turned counter-clockwise (as the recogniser turns tall crops) reads upright
        # when the text runs down the page, which a counter-clockwise turn of the page fixes;
        # upside-down crops mean it runs up the page.
        return 90 if upside_down else 270
    return 180 if upside_down else 0


def _sides(box: np.ndarray) -> tuple[float, float]:
    return float(np.linalg.norm(box[0] - box[1])), float(np.linalg.norm(box[0] - box[3]))


def _turn(image: np.ndarray, rotation: int) -> np.ndarray:
    codes = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    return cv2.rotate(image, codes[rotation]) if rotation else image


def _skew(boxes: list[np.ndarray]) -> float:
    """The median slope, in degrees, of the long text lines (positive: falling to the right)."""
    angles = []
    for box in boxes:
        width, height = _sides(box)
        if width > 4 * height:
            dx, dy = box[1] - box[0]
            angles.append(math.degrees(math.atan2(dy, dx)))
    return float(np.median(angles)) if len(angles) >= 3 else 0.0


def _straighten(image: np.ndarray, skew: float) -> tuple[np.ndarray, np.ndarray]:
    """The image turned by ``-skew`` about its centre, and the matrix that maps back."""
    height, width = image.shape[:2]
    centre = (width / 2, height / 2)
    forward = cv2.getRotationMatrix2D(centre, skew, 1.0)
    turned = cv2.warpAffine(
        image, forward, (width, height), flags=cv2.INTER_LINEAR, borderValue=(255, 255, 255)
    )
    return turned, cv2.invertAffineTransform(forward)


def _to_points(quad, back: np.ndarray | None, points_per_pixel: float) -> BBox:
    """An axis-aligned box in points. On a straightened image the box keeps its size and moves
    with its centre, so it stays the box of one line on the original page."""
    pts = np.asarray(quad, dtype=np.float64)
    x0, y0 = pts.min(axis=0)
    x1, y1 = pts.max(axis=0)
    if back is not None:
        cx, cy = back @ np.array([(x0 + x1) / 2, (y0 + y1) / 2, 1.0])
        half_w, half_h = (x1 - x0) / 2, (y1 - y0) / 2
        x0, x1, y0, y1 = cx - half_w, cx + half_w, cy - half_h, cy + half_h
    s = points_per_pixel
    return (float(x0 * s), float(y0 * s), float(x1 * s), float(y1 * s))
