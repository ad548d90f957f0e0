"""Parse-only indexing speed and peak memory, one fresh process per file.

    python bench/index_speed.py [PDF ...]

Defaults to the 307-page Uber 10-K and the 13-page SPECTER paper from ../shared/corpus.
Prints pages/s of parse_pdf (layout, sections, tables, figures, equations, references, chunks)
and of the whole `docsym index` run into a fresh index, with each process's peak RSS.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_FILES = [
    CORPUS / "long_docs" / "uber_2021_10k.pdf",
    CORPUS / "papers" / "2020.acl-main.207_specter.pdf",
]

PARSE_ONLY = r"""
import json, resource, sys, time
from pathlib import Path
from indexer.chunking import model_tokenizer
from indexer.pdf.parser import parse_pdf
model_tokenizer()  # load the tokenizer before timing: it is loaded once per run, not per file
path = Path(sys.argv[1])
start = time.perf_counter()
parsed = parse_pdf(path)
elapsed = time.perf_counter() - start
print(json.dumps({
    "pages": len(parsed.pages), "seconds": elapsed,
    "sections": len(parsed.sections), "tables": len(parsed.tables),
    "figures": len(parsed.figures), "equations": len(parsed.equations),
    "references": len(parsed.references), "chunks": len(parsed.chunks),
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""

FULL_INDEX = r"""
import json, resource, sys, time
from pathlib import Path
from indexer.pipeline import index_paths
start = time.perf_counter()
report = index_paths([Path(sys.argv[1])], Path(sys.argv[2]))
print(json.dumps({
    "pages": report.pages, "seconds": time.perf_counter() - start,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def run(script: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    files = [Path(a) for a in sys.argv[1:]] or DEFAULT_FILES
    header = f"{'file':36} {'pages':>5} {'parse s':>8} {'pages/s':>8} {'peak MB':>8} "
    header += f"{'index s':>8} {'pages/s':>8} {'peak MB':>8}  views"
    print(header)
    for path in files:
        parse = run(PARSE_ONLY, str(path))
        with tempfile.TemporaryDirectory() as index_dir:
            full = run(FULL_INDEX, str(path), index_dir)
        views = (
            f"sec={parse['sections']} tab={parse['tables']} fig={parse['figures']} "
            f"eq={parse['equations']} ref={parse['references']} chunks={parse['chunks']}"
        )
        print(
            f"{path.name[:36]:36} {parse['pages']:>5} {parse['seconds']:>8.2f} "
            f"{parse['pages'] / parse['seconds']:>8.1f} {parse['peak_mb']:>8.0f} "
            f"{full['seconds']:>8.2f} {full['pages'] / full['seconds']:>8.1f} "
            f"{full['peak_mb']:>8.0f}  {views}"
        )


if __name__ == "__main__":
    main()
