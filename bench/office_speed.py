"""Parse speed of the office formats (DOCX, HTML, PPTX, XLSX, Markdown).

    python bench/office_speed.py [FILE ...]

Defaults to every file of ../shared/corpus/office. docling and the tokenizer are loaded once
before timing (their import, several seconds, is printed on its own: a run pays it once); each
file is then parsed REPEATS times and the best time is kept. Prints, per file: parse seconds,
pages (slides or sheets; "-" for formats without pages), source paragraphs (w:p elements of a
DOCX), the views produced, and throughput in pages/s, paragraphs/s and KB/s.
"""

from __future__ import annotations

import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.indexer.chunking import model_tokenizer  # noqa: E402
from docsym.indexer.prepare import parser_of  # noqa: E402
from docsym.runtime.formats import FileFormat, format_of  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
REPEATS = 2


def docx_paragraphs(path: Path) -> int | None:
    if path.suffix.lower() != ".docx":
        return None
    with zipfile.ZipFile(path) as archive:
        return archive.read("word/document.xml").count(b"<w:p>") + archive.read(
            "word/document.xml"
        ).count(b"<w:p ")


def best_parse(path: Path, fmt: FileFormat):
    parse = parser_of(fmt)
    best, parsed = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        parsed = parse(path)
        best = min(best, time.perf_counter() - start)
    return best, parsed


def main(argv: list[str]) -> None:
    files = [Path(a) for a in argv] or sorted((CORPUS / "office").iterdir())
    start = time.perf_counter()
    model_tokenizer()
    import docling.datamodel.document  # noqa: F401  (imported on first conversion)

    office = [f for f in map(format_of, files) if f is not None and not f.page_images]
    for fmt in office:
        parser_of(fmt)
        for module in fmt.libraries:
            __import__(module)

    print(f"one-time load (docling import, tokenizer): {time.perf_counter() - start:.1f} s\n")
    header = (
        f"{'file':42} {'KB':>6} {'parse s':>8} {'pages':>5} {'paras':>6} {'sect':>5} "
        f"{'tables':>6} {'imgs':>4} {'chunks':>6} {'pages/s':>8} {'paras/s':>8} {'KB/s':>7}"
    )
    print(header)
    print("-" * len(header))
    for path in files:
        fmt = format_of(path)
        if fmt is None or fmt.page_images:  # office formats only
            continue
        seconds, parsed = best_parse(path, fmt)
        kb = path.stat().st_size / 1024
        pages = len(parsed.pages)
        paragraphs = docx_paragraphs(path)
        print(
            f"{path.name:42} {kb:6.0f} {seconds:8.2f} {pages or '-':>5} {paragraphs or '-':>6} "
            f"{len(parsed.sections):5d} {len(parsed.tables):6d} {len(parsed.figures):4d} "
            f"{len(parsed.chunks):6d} {_rate(pages, seconds):>8} {_rate(paragraphs, seconds):>8} "
            f"{kb / seconds:7.0f}"
        )


def _rate(count: int | None, seconds: float) -> str:
    return f"{count / seconds:.0f}" if count else "-"


if __name__ == "__main__":
    main(sys.argv[1:])
