"""How citable are hybrid_search's hits? Measured over QA sets on a real index, through the same
code the MCP tool runs.

    python bench/citations.py --index DIR [QA.jsonl ...] [--corpus ../shared/corpus]

QA files default to bench/qa/docsym_qa.jsonl, ../shared/dev-qa/qa.jsonl and the multi-hop set
bench/qa/multihop.jsonl, whose questions are scored by their leaves: each leaf is a question about
one document, with its file, pages and evidence as the other sets give them, asked with its
placeholders filled by the earlier leaves' answers as ``run_plan`` asks it. For each question
the top 5 hits of ``hybrid_search`` are read, and printed per set and in all:

- bbox coverage: the share of top-5 hits from PDFs that carry a non-empty bbox;
- answer in the cited box: of the questions whose gold page is in the top 5, the share where
  the answer appears in the text PyMuPDF reads inside the first gold hit's bbox, on that page
  of the PDF itself (not from the index);
- answer in the excerpt: the same, in the hit's excerpt;
- median box area: the median share of its page that a top-5 PDF hit's bbox covers.

"The answer appears" uses one rule for every question: either the item's ``evidence_regex`` (the
passage that states the answer, as the QA sets record it) matches the text read, whitespace
folded as for the QA sets' pages; or the answer itself is there: its lead (its text before a
parenthesis, a semicolon or ' vs') is cut into words and numbers, stopwords and one-letter words
aside, and when it holds a number its first number (the value asked for; what follows is units
and context) must occur among the words of the text read, otherwise at least 80% of its words
must (lower case, line-end hyphenation folded). Answers are paraphrases, not quotes, hence the
evidence and the share for words.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docsym.language.terms import STOPWORDS  # noqa: E402
from docsym.storage.backends import open_store  # noqa: E402
from docsym.storage.store import Store  # noqa: E402
from docsym.tools.query_plans import fill_placeholders  # noqa: E402
from docsym.tools.search import hybrid_search  # noqa: E402

DEFAULT_QA = [
    REPO / "bench" / "qa" / "docsym_qa.jsonl",
    REPO.parent / "shared" / "dev-qa" / "qa.jsonl",
    REPO / "bench" / "qa" / "multihop.jsonl",
]
_LEAD_END = re.compile(r"\s\(|;|\svs\.?\s|\s—\s")
_TOKEN = re.compile(r"[a-z0-9$€£*#][\w.,%$€£*#'’-]*")
TOP = 5


@dataclass
class Tally:
    pdf_hits: int = 0
    boxed_hits: int = 0
    gold_in_top: int = 0
    answer_in_box: int = 0
    answer_in_excerpt: int = 0
    areas: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.pdf_hits += other.pdf_hits
        self.boxed_hits += other.boxed_hits
        self.gold_in_top += other.gold_in_top
        self.answer_in_box += other.answer_in_box
        self.answer_in_excerpt += other.answer_in_excerpt
        self.areas += other.areas
        self.misses += other.misses


WORD_SHARE = 0.8


def answer_words(answer: str) -> set[str]:
    lead = _LEAD_END.split(answer, maxsplit=1)[0]
    return {w for w in _words(lead) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())}


def _words(text: str) -> set[str]:
    return set(_ordered_words(text)) - {""}


def contains_answer(text: str, answer: str) -> bool:
    wanted = answer_words(answer)
    if not wanted:
        return False
    found = _words(text)
    lead = _LEAD_END.split(answer, maxsplit=1)[0]
    first_number = next((w for w in _ordered_words(lead) if any(c.isdigit() for c in w)), None)
    if first_number is not None:
        return first_number in found
    return len(wanted & found) / len(wanted) >= WORD_SHARE


def states_answer(text: str, item: dict) -> bool:
    folded = " ".join(text.split())
    evidence = item.get("evidence_regex")
    return bool(evidence and re.search(evidence, folded)) or contains_answer(text, item["answer"])


def _ordered_words(text: str) -> list[str]:
    """Lower-case words and numbers; line-end hyphenation undone, currency and % signs dropped
    ('$2,132' and '4.7 %' as printed in tables are the answers '2,132' and '4.7%')."""
    folded = re.sub(r"-\s+", "", text.lower())
    return [w.rstrip(".,;:'’%").lstrip("$€£") for w in _TOKEN.findall(folded)]


def measure(store: Store, corpus: Path, path: Path) -> Tally:
    con = store.sql()
    formats = dict(con.execute("SELECT doc_id, format FROM documents").fetchall())
    files = dict(con.execute("SELECT doc_id, path FROM documents").fetchall())
    tally = Tally()
    documents: dict[str, pymupdf.Document] = {}
    for item in _items(path):
        hits = hybrid_search(store, item["question"], limit=TOP).hits
        gold = None
        for hit in hits:
            if formats.get(hit.doc_id) != "pdf":
                continue
            tally.pdf_hits += 1
            if hit.bbox:
                tally.boxed_hits += 1
                doc = documents.setdefault(hit.doc_id, pymupdf.open(files[hit.doc_id]))
                page = doc[hit.page_number - 1]
                rect = pymupdf.Rect(hit.bbox)
                tally.areas.append(rect.get_area() / page.rect.get_area())
            if gold is None and _is_gold(hit, item, files, corpus):
                gold = hit
        if gold is None:
            continue
        tally.gold_in_top += 1
        in_excerpt = states_answer(gold.text, item)
        tally.answer_in_excerpt += in_excerpt
        in_box = False
        if gold.bbox:
            doc = documents.setdefault(gold.doc_id, pymupdf.open(files[gold.doc_id]))
            clip = pymupdf.Rect(gold.bbox)
            in_box = states_answer(doc[gold.page_number - 1].get_text("text", clip=clip), item)
        tally.answer_in_box += in_box
        if not (in_box and in_excerpt):
            tally.misses.append(
                f"{item['id']}: box {'ok' if in_box else 'MISS'}, excerpt "
                f"{'ok' if in_excerpt else 'MISS'} ({gold.table_name}.{gold.column_name}, "
                f"page {gold.page_number})"
            )
    for doc in documents.values():
        doc.close()
    return tally


def _items(path: Path) -> list[dict]:
    """A set's questions, a multi-hop question's leaves in its place (each named after it and
    asked as its compiled plan asks it: a placeholder filled with the earlier leaf's answer)."""
    items = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        leaves = item.get("leaves") or [item]
        for n, leaf in enumerate(leaves, 1):
            if leaf is item:
                items.append(item)
                continue
            question = fill_placeholders(leaf["question"], item.get("answers", {}))
            items.append({**leaf, "id": f"{item['id']}/{n}", "question": question})
    return items


def _is_gold(hit, item: dict, files: dict[str, str], corpus: Path) -> bool:
    wanted = (corpus / item["file"]).resolve()
    return Path(files[hit.doc_id]).resolve() == wanted and hit.page_number in item["pages"]


def _row(name: str, t: Tally) -> str:
    boxed = t.boxed_hits / t.pdf_hits if t.pdf_hits else 0.0
    box = t.answer_in_box / t.gold_in_top if t.gold_in_top else 0.0
    excerpt = t.answer_in_excerpt / t.gold_in_top if t.gold_in_top else 0.0
    area = statistics.median(t.areas) if t.areas else 0.0
    return (
        f"| {name} | {t.pdf_hits} | {boxed:.1%} | {t.gold_in_top} | {box:.2f} | {excerpt:.2f} "
        f"| {area:.2%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qa", nargs="*", type=Path, default=DEFAULT_QA)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--misses", action="store_true", help="list each question that fails")
    args = parser.parse_args()
    store = open_store(args.index)
    print(
        "| set | PDF hits in top 5 | with bbox | gold page in top 5 | answer in cited box "
        "| answer in excerpt | median box area / page |"
    )
    print("|---|---|---|---|---|---|---|")
    total = Tally()
    for path in args.qa:
        tally = measure(store, args.corpus, path)
        total.add(tally)
        print(_row(path.name, tally))
    print(_row("all", total))
    if args.misses:
        print("\n".join(total.misses))


if __name__ == "__main__":
    main()
