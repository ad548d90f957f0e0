"""A 10,000-paper library by a shortcut: the documents of a built library written again under new
doc_ids, their rows and vectors copied instead of parsed and encoded.

    python bench/library_clone.py --source DIR/index --target DIR10/index --times 10

The first index of 10,000 papers takes ~6.5 h on two cores (bench/library_scale.py's rate at
1,000 papers); the serving figures (start, memory, latency) and the evals depend on what the index
holds, not on how it was made. So the target starts as a copy of the source, and each document
of the source's library (``--library``: a path fragment, by default the copies' folder) is
written ``--times - 1`` times more through the index run's own sink (``DirectorySink``: DuckDB
rows, entries, the keyword index, vectors, sign file, publishes), with every id and path holding
its doc_id rewritten. The clones repeat their source's text, as the copies library's papers
repeat the corpus papers. The clones have no files, and their paths lie under the source's
library (DIR/library/clone-N/): bench/library_scale.py's watch phase on DIR10 watches DIR10/library,
which holds none of them, so its passes remove nothing but its own probes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.models.encoder import DEFAULT_MODEL  # noqa: E402
from docsym.storage import schema  # noqa: E402
from docsym.storage.directory import sign_file  # noqa: E402
from docsym.storage.directory.sink import DirectorySink  # noqa: E402
from docsym.storage.entries import Entry, vec_table  # noqa: E402
from docsym.storage.rows import DocumentRows  # noqa: E402


def clone_id(doc_id: str, n: int) -> str:
    """A new doc_id of the same length for the ``n``-th clone of ``doc_id``."""
    return hashlib.sha256(f"{doc_id}/clone {n}".encode()).hexdigest()[: len(doc_id)]


def _rewrite(value, old: str, new: str):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_rewrite(v, old, new) for v in value]
    return value


def document_rows(sink: DirectorySink, doc_id: str, new: str, n: int) -> DocumentRows:
    """The document's rows of every view, with ``doc_id`` rewritten as ``new`` and its path moved
    into a folder of clone ``n``."""
    rows = []
    con = sink.writer.con
    for table in schema.TABLES:
        names = [c.name for c in table.columns]
        found = con.execute(
            f"SELECT {', '.join(names)} FROM {table.name} WHERE doc_id = ?", [doc_id]
        ).fetchall()
        for values in found:
            fields = {name: _rewrite(v, doc_id, new) for name, v in zip(names, values, strict=True)}
            if table.name == "documents":
                path = Path(fields["path"])
                fields["path"] = str(path.parent / f"clone-{n}" / path.name)
                fields["path_bytes"] = None
            rows.append(table.row_type(**fields))
    return DocumentRows(rows)


def clone(sink: DirectorySink, doc_id: str, n: int) -> None:
    new = clone_id(doc_id, n)
    source = sink.entries_of(doc_id)
    entries = [
        Entry(e.table_name, e.column_name, e.primary_key.replace(doc_id, new), new,
              e.page_number, e.text)
        for _, e in source
    ]  # fmt: skip
    sink.write(document_rows(sink, doc_id, new, n), new, [], entries)
    table = vec_table(sink.collection)
    source_ids = np.array([i for i, _ in source], np.int64)
    found, matrix = sign_file.float_vectors(sink.vectors.con, table, source_ids)
    position = {int(i): p for p, i in enumerate(source_ids)}
    written = [i for i, _ in sink.entries_of(new)]
    sink.write_vectors(new, [written[position[int(i)]] for i in found], matrix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--library", default="/library/", help="path fragment of the copies")
    args = parser.parse_args()
    if not args.target.exists():
        shutil.copytree(args.source, args.target)
    start = time.monotonic()
    sink = DirectorySink(args.target, DEFAULT_MODEL)
    failed = True
    try:
        sink.stale()
        docs = sink.writer.con.execute(
            "SELECT doc_id FROM documents WHERE path LIKE ? AND path NOT LIKE '%/clone-%' "
            "ORDER BY path",
            [f"%{args.library}%"],
        ).fetchall()
        have = {d for (d,) in sink.writer.con.execute("SELECT doc_id FROM documents").fetchall()}
        done = 0
        for n in range(1, args.times):
            for (doc_id,) in docs:
                if clone_id(doc_id, n) not in have:  # a run stopped midway goes on
                    clone(sink, doc_id, n)
                done += 1
                if done % 100 == 0:
                    rate = done / (time.monotonic() - start)
                    print(f"{done} of {len(docs) * (args.times - 1)} ({rate:.1f}/s)", flush=True)
        failed = False
    finally:
        sink.close(failed)
    seconds = time.monotonic() - start
    print(f"cloned in {seconds:.0f} s")
    _record(args.source, args.target, args.times, seconds)


def _record(source: Path, target: Path, times: int, seconds: float) -> None:
    """The target's work folder's results.json, as bench/library_scale.py reads it: its index
    phase says how the library was made, so its serve and eval phases run on it."""
    from docsym.storage.directory.store import DirectoryStore

    with DirectoryStore(target) as store:
        papers, pages = store.sql().execute(
            "SELECT count(*), sum(page_count) FROM documents WHERE path LIKE '%/library/%'"
        ).fetchone()
    disk = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    results = target.parent / "results.json"
    recorded = json.loads(results.read_text()) if results.exists() else {}
    recorded["papers"] = papers
    recorded["index"] = {
        "papers": papers,
        "pages": int(pages),
        "shortcut": f"{source}'s library written {times} times over under new doc_ids",
        "clone_s": seconds,
        "disk_bytes": disk,
        "disk_per_page_kb": disk / pages / 1024,
    }
    results.write_text(json.dumps(recorded, indent=2))


if __name__ == "__main__":
    main()
