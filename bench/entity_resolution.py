"""Entity resolution against judged name pairs: which pairs a resolver puts in one entity.

    python bench/entity_resolution.py [--corpus ../shared/corpus] [--list]

``bench/qa/entity_pairs.tsv`` holds name pairs of the corpus PDFs (scans aside), each judged
"same entity" or not. Each listed document is parsed, its entity graph built, and every pair
counted: joined rightly, joined wrongly, kept apart wrongly, kept apart rightly. Precision is
of the pairs joined, recall of the pairs that name one entity. ``--list`` prints the pairs
judged wrongly. The exact-name baseline (``ResolutionSettings(mode="exact")``) is printed beside.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import docsym.indexer.graph as graph_module  # noqa: E402
from docsym.indexer.entity_resolution import ResolutionSettings, Resolver  # noqa: E402
from docsym.indexer.pdf.parser import parse_pdf  # noqa: E402
from docsym.indexer.summaries import summarise_document  # noqa: E402
from docsym.indexer.views import FileFacts, build_rows  # noqa: E402

PAIRS = REPO / "bench" / "qa" / "entity_pairs.tsv"
Pair = tuple[str, str, bool]


def judged_pairs() -> dict[str, list[Pair]]:
    pairs: dict[str, list[Pair]] = defaultdict(list)
    for line in PAIRS.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        file, name, other, same = line.split("\t")
        pairs[file].append((name, other, same == "y"))
    return pairs


def entity_of_each_name(path: Path, mode: str) -> dict[str, int]:
    """Surface name -> the entity it was resolved into, for one document."""
    made: list[Resolver] = []

    class Recording(Resolver):
        def __init__(self, settings: ResolutionSettings) -> None:
            super().__init__(settings)
            made.append(self)

    parsed = parse_pdf(path)
    rows = build_rows(FileFacts("d", path, "x", 1), parsed, summarise_document(parsed))
    graph_module.Resolver = Recording  # type: ignore[misc]
    try:
        graph_module.build_graph("d", rows, ResolutionSettings(mode=mode))
    finally:
        graph_module.Resolver = Resolver  # type: ignore[misc]
    resolver = made[0]
    return {name: slot for slot in resolver.roots() for name in resolver.entities[slot].names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--list", action="store_true", help="print the pairs judged wrongly")
    args = parser.parse_args()
    pairs = judged_pairs()
    for mode in ("exact", "gradient"):
        counts = {"joined rightly": 0, "joined wrongly": 0, "apart wrongly": 0, "apart rightly": 0}
        for file, listed in sorted(pairs.items()):
            where = entity_of_each_name(args.corpus / file, mode)
            for name, other, same in listed:
                joined = name in where and other in where and where[name] == where[other]
                key = ("joined " if joined else "apart ") + (
                    "rightly" if joined == same else "wrongly"
                )
                counts[key] += 1
                if args.list and mode == "gradient" and joined != same:
                    print(f"  {key}: {name!r} / {other!r} ({file})")
        right, wrong = counts["joined rightly"], counts["joined wrongly"]
        missed = counts["apart wrongly"]
        print(
            f"{mode:>8}: {counts}  precision {right / max(1, right + wrong):.3f}  "
            f"recall {right / max(1, right + missed):.3f}"
        )


if __name__ == "__main__":
    main()
