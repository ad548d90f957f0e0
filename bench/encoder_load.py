"""What the encoder is asked to encode, per page and by view, for one or more documents.

    python bench/encoder_load.py [PDF ...]

For each (table, column) that goes into the vector store it prints entries, the texts the
embedding step encodes itself (pooled page and section vectors cost nothing), their word pieces,
and how many of those texts are *covered*: every sentence of the text is also a sentence of some
chunk, so the text adds no words the chunks do not have (extractive summaries, for example).
Views without vectors (``Col.dense`` false) are left out. Defaults to the
Multi-LexSum paper and the 307-page Uber 10-K. Counts only: no timing, so it can run anywhere.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.indexer.chunking import count_tokens  # noqa: E402
from docsym.indexer.embedding import build_entries  # noqa: E402
from docsym.indexer.graph import build_graph  # noqa: E402
from docsym.indexer.pdf.parser import parse_pdf  # noqa: E402
from docsym.indexer.summaries import summarise_document  # noqa: E402
from docsym.indexer.views import FileFacts, build_rows  # noqa: E402
from docsym.language.sentences import split_sentences  # noqa: E402
from docsym.models.encoder import MAX_TOKENS  # noqa: E402
from docsym.storage.schema import POOLED, ChunkRow, dense_columns  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_FILES = [
    CORPUS / "papers" / "2206.10883v3_multilexsum.pdf",
    CORPUS / "long_docs" / "uber_2021_10k.pdf",
]


def load(path: Path) -> None:
    parsed = parse_pdf(path)
    facts = FileFacts("bench", path, "0" * 64, path.stat().st_size)
    views = build_rows(facts, parsed, summarise_document(parsed))
    graph = build_graph("bench", views)
    rows = views.merged(graph.rows)
    entries = build_entries(rows)
    chunk_sentences = {
        s.strip() for chunk in rows.of(ChunkRow) for s in split_sentences(chunk.text or "")
    }
    by_view: dict[str, list[str]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    dense = dense_columns()
    for e in entries:
        if (e.table_name, e.column_name) not in dense:
            continue
        view = f"{e.table_name}.{e.column_name}"
        counts[view] += 1
        if (e.table_name, e.column_name) not in POOLED:
            by_view[view].append(e.text)
    pages = len(parsed.pages)
    print(f"\n{path.name}: {pages} pages, {len(entries)} entries")
    print(f"{'view':32} {'entries':>8} {'encoded':>8} {'pieces':>8} {'/page':>7} {'covered':>8}")
    seen: set[str] = set()
    total_texts = total_pieces = repeated = 0
    for view in sorted(by_view, key=lambda v: -sum(count_tokens(by_view[v]))):
        texts = by_view[view]
        pieces = sum(min(n, MAX_TOKENS) for n in count_tokens(texts))
        covered = sum(1 for t in texts if _covered(t, chunk_sentences))
        repeated += sum(1 for t in texts if t in seen)
        seen.update(texts)
        total_texts += len(texts)
        total_pieces += pieces
        print(
            f"{view:32} {counts[view]:8} {len(texts):8} {pieces:8} {pieces / pages:7.0f} "
            f"{covered:8}"
        )
    print(
        f"{'all':32} {sum(counts.values()):8} {total_texts:8} {total_pieces:8} "
        f"{total_pieces / pages:7.0f}   ({repeated} texts repeat an earlier view's)"
    )


def _covered(text: str, sentences: set[str]) -> bool:
    mine = [s.strip() for s in split_sentences(text) if s.strip()]
    return bool(mine) and all(s in sentences for s in mine)


if __name__ == "__main__":
    for arg in sys.argv[1:] or [str(p) for p in DEFAULT_FILES]:
        load(Path(arg))
