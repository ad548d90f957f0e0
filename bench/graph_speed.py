"""Entity graph figures: what gradient-based resolution does against exact-name merging, one
document's graph's build time and memory, and rank_nodes latency on a long document.

    python bench/graph_speed.py --index DIR [--corpus ../shared/corpus] [--long FILE_NAME]

DIR is an index of the corpus (``docsym index ../shared/corpus --index DIR``). Resolution is
compared by re-parsing the corpus PDFs and building each document's graph both ways.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile  # noqa: E402
from docsym.indexer.entity_resolution import ResolutionSettings  # noqa: E402
from docsym.indexer.graph import build_graph  # noqa: E402
from docsym.indexer.pdf.parser import parse_pdf  # noqa: E402
from docsym.indexer.summaries import summarise_document  # noqa: E402
from docsym.indexer.views import FileFacts, build_rows  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.schema import EntityRow, RelationRow  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.graph import build_document_graph  # noqa: E402
from docsym.tools.rank_nodes import rank_nodes  # noqa: E402

QUESTIONS = [
    "What was Uber's total revenue in 2021 in millions of dollars?",
    "What percentage of Uber's 2021 Gross Bookings was paid by credit or debit card?",
    "What share of Uber's global Mobility Gross Bookings did the UK represent in 2021?",
    "How many drivers and couriers earned on the Uber platform?",
    "What are the risks related to the classification of Drivers as independent contractors?",
    "How much did Uber spend on research and development in 2021?",
    "Which credit facilities does Uber have and with which administrative agent?",
    "What was the net loss attributable to Uber Technologies in 2021?",
]


def resolution_figures(corpus: Path) -> None:
    totals = {"exact": [0, 0, 0, 0], "gradient": [0, 0, 0, 0]}  # entities, edges, comps, docs
    densities: dict[str, list[float]] = {"exact": [], "gradient": []}
    files = sorted(p for p in corpus.rglob("*.pdf") if "scanned" not in p.parts)
    for path in files:
        parsed = parse_pdf(path)
        rows = build_rows(FileFacts("d", path, "x", 1), parsed, summarise_document(parsed))
        for mode in totals:
            built = build_graph("d", rows, ResolutionSettings(mode))
            graph = nx.Graph()
            graph.add_nodes_from(e.entity_id for e in built.rows.of(EntityRow))
            graph.add_edges_from((r.source_id, r.target_id) for r in built.rows.of(RelationRow))
            if graph.number_of_nodes() < 2:
                continue
            totals[mode][0] += graph.number_of_nodes()
            totals[mode][1] += graph.number_of_edges()
            totals[mode][2] += nx.number_connected_components(graph)
            totals[mode][3] += 1
            densities[mode].append(nx.density(graph))
    print(f"resolution over {totals['exact'][3]} documents (per-document graphs, summed):")
    print(f"{'mode':>10} {'entities':>9} {'edges':>8} {'components':>11} {'mean density':>13}")
    for mode, (entities, edges, components, _) in totals.items():
        density = statistics.mean(densities[mode])
        print(f"{mode:>10} {entities:>9} {edges:>8} {components:>11} {density:>13.5f}")
    exact, gradient = totals["exact"], totals["gradient"]
    print(
        f"gradient vs exact: entities {100 * (gradient[0] / exact[0] - 1):+.1f}%, "
        f"mean density {100 * (statistics.mean(densities['gradient']) / statistics.mean(densities['exact']) - 1):+.1f}%, "  # noqa: E501
        f"components {100 * (gradient[2] / exact[2] - 1):+.1f}%"
    )


def graph_figures(store: Store, file_name: str) -> None:
    row = (
        store.sql().execute("SELECT doc_id FROM documents WHERE file_name = ?", [file_name])
    ).fetchone()
    if row is None:
        print(f"{file_name} is not in the index; skipping its graph")
        return
    tracemalloc.start()
    started = time.perf_counter()
    graph = build_document_graph(store, row[0])
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{file_name}'s graph: {len(graph.entities)} entities, {graph.adjacency.nnz} adjacency "
        f"cells, {len(graph.node_rows)} linked tree nodes; built in {seconds:.2f} s, peak "
        f"{peak / 2**20:.1f} MiB allocated while building"
    )


def rank_figures(store: Store, file_name: str) -> None:
    row = (
        store.sql()
        .execute("SELECT doc_id, page_count FROM documents WHERE file_name = ?", [file_name])
        .fetchone()
    )
    if row is None:
        print(f"{file_name} is not in the index; skipping rank_nodes latency")
        return
    doc_id, pages = row
    rank_nodes(store, QUESTIONS[0], doc_id)  # warm: model, graph, vectors
    for criteria in (["graph", "text"], ["graph", "text", "lexical"]):
        times = []
        for _ in range(3):
            for question in QUESTIONS:
                started = time.perf_counter()
                rank_nodes(store, question, doc_id, criteria=criteria)
                times.append((time.perf_counter() - started) * 1000)
        print(
            f"rank_nodes on {file_name} ({pages} pages), criteria {criteria}: "
            f"p50 {statistics.median(times):.1f} ms, p95 {percentile(times, 0.95):.1f} ms "
            f"over {len(times)} calls"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    parser.add_argument("--long", default="uber_2021_10k.pdf")
    parser.add_argument("--skip-resolution", action="store_true")
    args = parser.parse_args()
    store = open_store(args.index)
    graph_figures(store, args.long)
    rank_figures(store, args.long)
    if not args.skip_resolution:
        resolution_figures(args.corpus)


if __name__ == "__main__":
    main()
