"""Table structure against ground truth: ICDAR 2013, AIT-QA and docling's OTSL page 9.

    python bench/table_structure.py [corpus_dir]

1. ICDAR 2013 (us-025, eu-018): our PDF tables (``indexer.pdf.parser.parse_pdf``) against the
   competition's cell structure. Two document-level measures, both over non-empty cells with
   text normalised (NFKC, whitespace removed, dashes unified):
   - *adjacency relations*, the competition's structure measure (Göbel et al. 2013): every cell
     paired with its nearest non-empty neighbour to the right (for each row it spans) and below
     (for each column it spans); precision and recall of the (text, text, direction) multisets;
   - *cell texts*: precision and recall of the multiset of cell texts (segmentation alone).
   All tables of a document are pooled, so split, merged, missed and spurious tables all count.
2. AIT-QA (113 tables, 515 questions): each table's JSON (column header paths, row header paths,
   data) is laid out as the cell grid a spreadsheet or HTML table would have (a shared outer
   label as one spanning cell) and completed by ``finish_table`` with inferred header depths,
   so the figures test the table model, not the JSON. Reported: tables whose inferred depths
   equal the JSON's, data cells whose paths equal the JSON's, and the share of questions whose
   answer cell is *reachable*: the question's words that match the answer cell's row path and
   column path, used as the row and column labels of ``tools.tables.rank_cells`` (the matching
   of ``lookup_cells``), return that cell first. "Blind" picks the cell matching most question
   words on both axes, without knowing the answer.
3. docling ground truth for papers/2305.03393v1-pg9.pdf: rows, columns, header depth, column
   header cells, spanning cells and data texts of our Table 1 against docling's.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsym.indexer.model import Table, TableCell
from docsym.indexer.pdf.parser import parse_pdf
from docsym.indexer.table_model import finish_table
from docsym.tools.tables import rank_cells

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
ICDAR_DOCS = ("eu-018", "us-025")

# --------------------------------------------------------------------------------------------
# Shared


@dataclass(frozen=True)
class GridCell:
    """A cell by grid position, whatever its source (ground truth or ours)."""

    row: int
    col: int
    end_row: int  # inclusive
    end_col: int  # inclusive
    text: str


@dataclass(frozen=True)
class PR:
    correct: int
    predicted: int
    expected: int

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.expected if self.expected else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: PR) -> PR:
        return PR(
            self.correct + other.correct,
            self.predicted + other.predicted,
            self.expected + other.expected,
        )

    def line(self) -> str:
        return (
            f"P {self.precision:.3f}  R {self.recall:.3f}  F1 {self.f1:.3f}  "
            f"({self.correct} correct / {self.predicted} found / {self.expected} expected)"
        )


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "")
    text = re.sub(r"[‐‑‒–—−]", "-", text)
    return re.sub(r"\s+", "", text)


def multiset_pr(found: Counter, expected: Counter) -> PR:
    return PR(sum((found & expected).values()), sum(found.values()), sum(expected.values()))


# --------------------------------------------------------------------------------------------
# 1. ICDAR 2013


def icdar_truth(str_xml: Path) -> list[list[GridCell]]:
    """The ground-truth tables of one document: non-empty cells with their grid extents."""
    tables: list[list[GridCell]] = []
    for table in ET.parse(str_xml).getroot().iter("table"):
        cells: list[GridCell] = []
        for region in table.iter("region"):
            for cell in region.iter("cell"):
                text = normalise(cell.findtext("content") or "")
                if not text:
                    continue
                row, col = int(cell.get("start-row")), int(cell.get("start-col"))
                end_row = int(cell.get("end-row", row))
                end_col = int(cell.get("end-col", col))
                cells.append(GridCell(row, col, end_row, end_col, text))
        tables.append(cells)
    return tables


def grid_cells(table: Table) -> list[GridCell]:
    return [
        GridCell(c.row, c.col, c.row + c.row_span - 1, c.col + c.col_span - 1, normalise(c.text))
        for c in table.cells
        if normalise(c.text)
    ]


def adjacency_relations(cells: list[GridCell]) -> Counter:
    """ICDAR 2013 adjacency relations: each cell and its nearest non-empty neighbour to the
    right (for every row it spans) and below (for every column it spans)."""
    at: dict[tuple[int, int], GridCell] = {}
    for cell in cells:
        for r in range(cell.row, cell.end_row + 1):
            for c in range(cell.col, cell.end_col + 1):
                at[(r, c)] = cell
    if not at:
        return Counter()
    max_row = max(r for r, _ in at)
    max_col = max(c for _, c in at)
    relations: set[tuple[GridCell, GridCell, str]] = set()
    for cell in cells:
        for r in range(cell.row, cell.end_row + 1):
            right = next(
                (at[(r, c)] for c in range(cell.end_col + 1, max_col + 1) if (r, c) in at), None
            )
            if right is not None and right is not cell:
                relations.add((cell, right, "right"))
        for c in range(cell.col, cell.end_col + 1):
            below = next(
                (at[(r, c)] for r in range(cell.end_row + 1, max_row + 1) if (r, c) in at), None
            )
            if below is not None and below is not cell:
                relations.add((cell, below, "below"))
    return Counter((a.text, b.text, direction) for a, b, direction in relations)


@dataclass(frozen=True)
class IcdarScore:
    name: str
    truth_tables: int
    our_tables: int
    relations: PR
    texts: PR


def icdar_scores(corpus: Path) -> list[IcdarScore]:
    scores = []
    for name in ICDAR_DOCS:
        folder = corpus / "tables" / "icdar2013"
        truth = icdar_truth(folder / f"{name}-str.xml")
        ours = [grid_cells(t) for t in parse_pdf(folder / f"{name}.pdf").tables]
        truth_rel = sum((adjacency_relations(t) for t in truth), Counter())
        our_rel = sum((adjacency_relations(t) for t in ours), Counter())
        truth_text = Counter(c.text for t in truth for c in t)
        our_text = Counter(c.text for t in ours for c in t)
        scores.append(
            IcdarScore(
                name,
                len(truth),
                len(ours),
                multiset_pr(our_rel, truth_rel),
                multiset_pr(our_text, truth_text),
            )
        )
    return scores


# --------------------------------------------------------------------------------------------
# 2. AIT-QA


def aitqa_cells(record: dict[str, Any]) -> list[TableCell]:
    """The grid a spreadsheet of this table would have: column header levels as rows and row
    header levels as columns, a label shared by neighbours as one spanning cell, a path shorter
    than the header's depth stretched over the remaining levels."""
    cols: list[list[str]] = [list(p) for p in record["column_header"]]
    rows: list[list[str]] = [list(p) for p in record["row_header"]]
    top = max((len(p) for p in cols), default=0)
    left = max((len(p) for p in rows), default=0)
    cells = [TableCell(row=0, col=0, text="", row_span=max(top, 1), col_span=left)] if left else []
    cells += _header_cells(cols, top, along_rows=False, offset=left)
    cells += _header_cells(rows, left, along_rows=True, offset=top)
    for r, values in enumerate(record["data"]):
        cells += [
            TableCell(row=top + r, col=left + c, text=str(text)) for c, text in enumerate(values)
        ]
    return cells


def _header_cells(
    paths: list[list[str]], depth: int, along_rows: bool, offset: int
) -> list[TableCell]:
    """Header cells of one axis: level by level, runs of equal prefixes merged into one cell."""
    cells: list[TableCell] = []
    for level in range(depth):
        i = 0
        while i < len(paths):
            path = paths[i]
            if level >= len(path):
                i += 1
                continue
            j = i + 1
            while (
                j < len(paths)
                and len(paths[j]) > level
                and paths[j][: level + 1] == path[: level + 1]
            ):
                j += 1
            deep = depth - level if level == len(path) - 1 else 1  # stretch a short path
            across, down = (deep, j - i) if along_rows else (j - i, deep)
            position = (offset + i, level) if along_rows else (level, offset + i)
            cells.append(
                TableCell(
                    row=position[0],
                    col=position[1],
                    text=path[level],
                    row_span=down,
                    col_span=across,
                )
            )
            i = j
    return cells


# Question words that name no header: function words and the question's own verbs.
STOPWORDS = {
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "during", "for",
    "from", "had", "has", "have", "how", "in", "is", "it", "its", "of", "on", "or", "over",
    "the", "their", "there", "this", "to", "was", "were", "what", "when", "which", "who", "with",
}  # fmt: skip


def question_words(question: str) -> list[str]:
    words = re.findall(r"[a-z0-9$%]+(?:[.,'][a-z0-9]+)*", question.lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1))


@dataclass
class AitqaScore:
    tables: int
    depth_agreement: int  # tables whose inferred header depths equal the JSON's
    data_cells: int
    path_agreement: int  # data cells whose (row_path, col_path) equal the JSON's
    questions: int
    answer_in_table: int
    reachable: int
    reachable_json_paths: int
    blind: int


def aitqa_score(corpus: Path) -> AitqaScore:
    folder = corpus / "tables" / "aitqa"
    records = [json.loads(line) for line in (folder / "aitqa_tables.jsonl").open()]
    questions = [json.loads(line) for line in (folder / "aitqa_questions.jsonl").open()]
    score = AitqaScore(len(records), 0, 0, 0, len(questions), 0, 0, 0, 0)
    ours: dict[str, list[dict[str, Any]]] = {}
    truth: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        table = finish_table(aitqa_cells(record), ordinal=0, page_number=1, bbox=(0, 0, 1, 1))
        top = max((len(p) for p in record["column_header"]), default=0)
        left = max((len(p) for p in record["row_header"]), default=0)
        score.depth_agreement += (table.header_rows, table.header_cols) == (top, left)
        ours[record["id"]], truth[record["id"]] = _data_cells(table, record)
        score.data_cells += len(truth[record["id"]])
        score.path_agreement += sum(
            (o["row_path"], o["col_path"]) == (t["row_path"], t["col_path"])
            for o, t in zip(ours[record["id"]], truth[record["id"]], strict=True)
        )
    for question in questions:
        answers = {normalise(a).lower() for a in question["answers"]}
        cells = ours[question["table_id"]]
        if not any(c["key"] in answers for c in cells):
            continue
        score.answer_in_table += 1
        words = question_words(question["question"])
        score.reachable += _reachable(cells, words, answers)
        score.reachable_json_paths += _reachable(truth[question["table_id"]], words, answers)
        score.blind += _blind(cells, words, answers)
    return score


def _data_cells(
    table: Table, record: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Data cells by their position in the JSON's data grid: ours (paths from finish_table) and
    the truth (paths from the JSON)."""
    top = max((len(p) for p in record["column_header"]), default=0)
    left = max((len(p) for p in record["row_header"]), default=0)
    by_pos = {(c.row, c.col): c for c in table.cells}
    ours, truth = [], []
    for r, values in enumerate(record["data"]):
        for c, text in enumerate(values):
            cell = by_pos[(top + r, left + c)]
            base = {"row": r, "col": c, "key": normalise(str(text)).lower()}
            ours.append({**base, "row_path": cell.row_path, "col_path": cell.col_path})
            row_path = record["row_header"][r] if r < len(record["row_header"]) else []
            col_path = record["column_header"][c] if c < len(record["column_header"]) else []
            truth.append({**base, "row_path": _clean(row_path), "col_path": _clean(col_path)})
    return ours, truth


def _clean(path: list[str]) -> list[str]:
    return [" ".join(p.split()) for p in path if p.strip()]


def _matching(words: list[str], path: list[str]) -> list[str]:
    return [w for w in words if rank_cells([_probe(path)], [w], [])]


def _probe(path: list[str]) -> dict[str, Any]:
    return {"row": 0, "col": 0, "row_path": path, "col_path": []}


def _reachable(cells: list[dict[str, Any]], words: list[str], answers: set[str]) -> bool:
    """Some answer cell comes first when the question's words that match its row path and its
    column path are given as the row and column labels of a lookup."""
    for cell in cells:
        if cell["key"] not in answers:
            continue
        row_labels = _matching(words, cell["row_path"])
        col_labels = _matching(words, cell["col_path"])
        found = rank_cells(cells, row_labels, col_labels)
        if found and found[0]["key"] in answers:
            return True
    return False


def _blind(cells: list[dict[str, Any]], words: list[str], answers: set[str]) -> bool:
    """The cell matching most question words over both paths (each non-empty path matched by
    at least one word) is an answer cell."""
    best, best_score = None, 0
    for cell in cells:
        row_hits = len(_matching(words, cell["row_path"]))
        col_hits = len(_matching(words, cell["col_path"]))
        if (cell["row_path"] and not row_hits) or (cell["col_path"] and not col_hits):
            continue
        if row_hits + col_hits > best_score:
            best, best_score = cell, row_hits + col_hits
    return best is not None and best["key"] in answers


# --------------------------------------------------------------------------------------------
# 3. docling ground truth for OTSL page 9


@dataclass(frozen=True)
class DoclingComparison:
    truth_shape: tuple[int, int]
    our_shape: tuple[int, int]
    truth_header_rows: int
    our_header_rows: int
    truth_header_cells: int
    our_header_cells: int
    truth_spans: list[tuple[str, int, int, int, int]]  # text, row, col, row_span, col_span
    our_spans: list[tuple[str, int, int, int, int]]
    header_columns_matching: int  # columns whose joined header text equals docling's
    data_tokens: PR  # data cell text tokens per column


def docling_comparison(corpus: Path) -> DoclingComparison:
    truth = json.loads((corpus / "groundtruth/docling/2305.03393v1-pg9.json").read_text())
    grid = truth["tables"][0]["data"]
    gt_cells = grid["table_cells"]
    (table,) = parse_pdf(corpus / "papers/2305.03393v1-pg9.pdf").tables
    gt_header = [c for c in gt_cells if c["column_header"]]
    gt_header_rows = max(c["end_row_offset_idx"] for c in gt_header)
    gt_spans = [
        (
            c["text"],
            c["start_row_offset_idx"],
            c["start_col_offset_idx"],
            c["row_span"],
            c["col_span"],
        )
        for c in gt_cells
        if c["row_span"] > 1 or c["col_span"] > 1
    ]
    our_spans = [
        (c.text, c.row, c.col, c.row_span, c.col_span)
        for c in table.cells
        if c.row_span > 1 or c.col_span > 1
    ]
    header_match = 0
    for col in range(grid["num_cols"]):
        gt_text = " ".join(
            dict.fromkeys(
                c["text"]
                for c in gt_header
                if c["start_col_offset_idx"] <= col < c["end_col_offset_idx"]
            )
        )
        ours = next((c for c in table.cells if c.col == col and not c.is_col_header), None)
        header_match += ours is not None and normalise(" ".join(ours.col_path)) == normalise(
            gt_text
        )
    gt_tokens = Counter(
        (c["start_col_offset_idx"], token)
        for c in gt_cells
        if not c["column_header"]
        for token in c["text"].split()
    )
    our_tokens = Counter(
        (c.col, token) for c in table.cells if not c.is_col_header for token in c.text.split()
    )
    return DoclingComparison(
        (grid["num_rows"], grid["num_cols"]),
        (table.n_rows, table.n_cols),
        gt_header_rows,
        table.header_rows,
        len(gt_header),
        sum(c.is_col_header for c in table.cells),
        gt_spans,
        our_spans,
        header_match,
        multiset_pr(our_tokens, gt_tokens),
    )


# --------------------------------------------------------------------------------------------


def main(corpus: Path) -> None:
    print("ICDAR 2013 (document level, all tables pooled)")
    total_rel, total_text = PR(0, 0, 0), PR(0, 0, 0)
    for s in icdar_scores(corpus):
        print(f"  {s.name}: {s.our_tables} tables found, {s.truth_tables} in the ground truth")
        print(f"    adjacency relations {s.relations.line()}")
        print(f"    cell texts          {s.texts.line()}")
        total_rel, total_text = total_rel + s.relations, total_text + s.texts
    print(f"  both: adjacency relations {total_rel.line()}")
    print(f"        cell texts          {total_text.line()}")
    a = aitqa_score(corpus)
    print("AIT-QA (tables through finish_table with inferred header depths)")
    print(f"  header depths as in the JSON: {a.depth_agreement}/{a.tables} tables")
    print(
        f"  data cells with the JSON's row and column paths: {a.path_agreement}/{a.data_cells} "
        f"({a.path_agreement / a.data_cells:.1%})"
    )
    print(f"  questions whose answer text is a data cell: {a.answer_in_table}/{a.questions}")
    for name, count in (
        ("reachable by a row/col path lookup with question words", a.reachable),
        ("same, over the JSON's own paths", a.reachable_json_paths),
        ("blind (best match of question words, answer unknown)", a.blind),
    ):
        print(f"  {name}: {count}/{a.questions} ({count / a.questions:.1%})")
    d = docling_comparison(corpus)
    print("docling ground truth, 2305.03393v1-pg9 Table 1")
    print(f"  rows × cols: ours {d.our_shape}, docling {d.truth_shape}")
    print(f"  header rows: ours {d.our_header_rows}, docling {d.truth_header_rows}")
    print(f"  column header cells: ours {d.our_header_cells}, docling {d.truth_header_cells}")
    print(f"  spanning cells: ours {len(d.our_spans)}, docling {len(d.truth_spans)}")
    print(f"    ours:    {d.our_spans}")
    print(f"    docling: {d.truth_spans}")
    print(f"  columns whose header path reads as docling's: {d.header_columns_matching}/8")
    print(f"  data text tokens per column: {d.data_tokens.line()}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS)
