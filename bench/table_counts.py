"""Print how many "Table N" tables extract_tables finds per corpus PDF, against SOURCES.md.

Usage: python bench/table_counts.py [corpus_dir]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pymupdf

from docsym.indexer.pdf.layout import read_layout
from docsym.indexer.pdf.tables import extract_tables

# Table counts stated in the corpus's SOURCES.md (approximate there for some papers).
EXPECTED = {
    "2020.acl-main.207_specter.pdf": 3,
    "2020.acl-main.447_s2orc.pdf": 9,
    "2004.04906v3_dpr.pdf": 7,
    "2203.00130v1_paperplain.pdf": 4,
    "2206.10883v3_multilexsum.pdf": 9,
    "2302.07302v1_citesee.pdf": 2,
    "papermage_2023.pdf": 3,
    "2023.eacl-main.121_longeval.pdf": 11,
    "N18-3011_literature_graph.pdf": 4,
    "2203.00274v2_tableformer.pdf": 7,
    "jhydrol_2005_flow_duration_curves.pdf": 5,
    "MullenJSSv18i03_timp.pdf": 1,
    "0807.3577_jcap_accelerations.pdf": 0,
    "2305.03393v1-pg9.pdf": 1,
    "uber_2021_10k.pdf": None,
    "mupdf_explored.pdf": 0,
    "redp5110_sampled.pdf": 6,
}


def main(corpus: Path) -> None:
    paths = sorted((corpus / "papers").glob("*.pdf")) + sorted((corpus / "long_docs").glob("*.pdf"))
    print(f"{'file':42} {'pages':>5} {'labelled':>8} {'expected':>8} {'other':>5} {'sec':>6}")
    for path in paths:
        with pymupdf.open(path) as doc:
            layout = read_layout(doc)
            start = time.perf_counter()
            tables = extract_tables(layout)
            seconds = time.perf_counter() - start
            labelled = sum(1 for t in tables if t.label)
            expected = EXPECTED.get(path.name)
            print(
                f"{path.name:42} {doc.page_count:5} {labelled:8} "
                f"{'?' if expected is None else expected:>8} {len(tables) - labelled:5} "
                f"{seconds:6.2f}"
            )


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[2] / "shared" / "corpus"
    )
