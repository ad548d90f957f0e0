"""Sentence-aware chunks that fit the embedding model's window.

all-MiniLM-L6-v2 reads at most 256 word pieces (special tokens included) and silently drops the
rest, so chunk sizes are measured with the model's own tokenizer (the fast ``tokenizers`` library,
no torch). Sentences are packed greedily up to ``target`` word pieces; a sentence longer than the
window is split at word boundaries so that nothing is ever truncated.

Every sentence (a ``Piece``) keeps where it came from: its character span in its unit's text and
in its chunk's text, so ``indexer.sentences`` can give it the page box of its lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tokenizers import Tokenizer

from docsym.indexer.model import BBox
from docsym.language.sentences import split_sentences
from docsym.models.encoder import default_model_dir

TARGET_TOKENS = 200  # leave room so a chunk is a few sentences, not a wall
SPECIAL_TOKENS = 2


@dataclass(frozen=True, slots=True)
class LineSpan:
    """Where one printed line of a unit is: its characters in the unit's text, and its box."""

    start: int
    end: int
    page: int
    bbox: BBox


@dataclass(slots=True)
class TextUnit:
    """A paragraph (or any run of text) and the page it starts on; PDFs add its lines."""

    text: str
    page: int
    lines: tuple[LineSpan, ...] = ()
    # Offsets in ``text`` where a sentence starts though no full stop says so (a list item, a
    # heading line), ascending: a sentence's box then never covers two items.
    breaks: tuple[int, ...] = ()


@dataclass(slots=True)
class Piece:
    """A sentence, or a window-sized part of an over-long one, and where it sits: ``start`` and
    ``end`` in its unit's text, ``chunk_start`` and ``chunk_end`` in its chunk's text."""

    text: str
    unit: int  # position of its unit in the list given to chunk_units
    start: int
    end: int
    tokens: int  # word pieces without the special tokens
    chunk_start: int = 0
    chunk_end: int = 0


@dataclass(slots=True)
class ChunkText:
    text: str
    page_start: int
    page_end: int
    token_count: int
    pieces: list[Piece]


@lru_cache(maxsize=1)
def model_tokenizer() -> Tokenizer:
    """The word-piece tokenizer shipped with the packaged all-MiniLM-L6-v2 model."""
    path = default_model_dir() / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(texts: list[str]) -> list[int]:
    """Word pieces per text, special tokens included (what the model will see)."""
    if not texts:
        return []
    encodings = model_tokenizer().encode_batch(texts, add_special_tokens=True)
    return [len(e.ids) for e in encodings]


def chunk_units(units: list[TextUnit], target: int = TARGET_TOKENS) -> list[ChunkText]:
    """Pack the sentences of ``units`` into chunks of at most ``target`` word pieces."""
    sentences = [
        (text, n, start)
        for n, unit in enumerate(units)
        for text, start in locate(unit.text, unit.breaks)
    ]
    if not sentences:
        return []
    costs = count_tokens([text for text, _, _ in sentences])
    pieces: list[Piece] = []
    for (sentence, unit, start), cost in zip(sentences, costs, strict=True):
        if cost > target:
            for part, part_start, n in _split_long(sentence, target):
                at = start + part_start
                pieces.append(Piece(part, unit, at, at + len(part), n))
        else:
            pieces.append(
                Piece(sentence, unit, start, start + len(sentence), cost - SPECIAL_TOKENS)
            )
    return _pack(pieces, [unit.page for unit in units], target)


def locate(text: str, breaks: tuple[int, ...] = ()) -> list[tuple[str, int]]:
    """The sentences of ``text`` (a new one at each of ``breaks``) with the offset each starts
    at. Sentences are substrings of the text (the splitter only drops the whitespace between
    them)."""
    located: list[tuple[str, int]] = []
    cursor = 0
    for sentence in split_sentences(text, breaks):
        at = text.find(sentence, cursor)
        if at < 0:  # joined abbreviation pieces with other spacing: keep the running position
            at = cursor
        located.append((sentence, at))
        cursor = at + len(sentence)
    return located


def _pack(pieces: list[Piece], pages: list[int], target: int) -> list[ChunkText]:
    chunks: list[ChunkText] = []
    current: list[Piece] = []
    budget = target - SPECIAL_TOKENS
    used = 0
    for piece in pieces:
        # A chunk stays on one page (a sentence running over a page break ends it), so every
        # chunk cites exactly one page.
        if current and (
            used + piece.tokens > budget or pages[piece.unit] != pages[current[0].unit]
        ):
            chunks.append(_finish(current, pages))
            current, used = [], 0
        current.append(piece)
        used += piece.tokens
    if current:
        chunks.append(_finish(current, pages))
    return chunks


def _finish(pieces: list[Piece], pages: list[int]) -> ChunkText:
    offset = 0
    for piece in pieces:
        piece.chunk_start, piece.chunk_end = offset, offset + len(piece.text)
        offset = piece.chunk_end + 1
    text = " ".join(p.text for p in pieces)
    # Joining can merge word pieces across boundaries; count the real text so the number is exact.
    (tokens,) = count_tokens([text])
    return ChunkText(text, pages[pieces[0].unit], pages[pieces[-1].unit], tokens, pieces)


def _split_long(sentence: str, target: int) -> list[tuple[str, int, int]]:
    """Split an over-long sentence at word boundaries into parts of at most ``target`` pieces:
    (part, offset of the part in the sentence, word pieces)."""
    words = sentence.split()
    costs = count_tokens(words)
    parts: list[tuple[str, int]] = []
    current: list[str] = []
    used = 0
    budget = target - SPECIAL_TOKENS
    for word, cost in zip(words, costs, strict=True):
        cost -= SPECIAL_TOKENS
        if current and used + cost > budget:
            parts.append((" ".join(current), used))
            current, used = [], 0
        if cost > budget:  # a single absurd "word" (e.g. a long URL or base64): cut it by pieces
            parts.extend(_split_word(word, budget))
            continue
        current.append(word)
        used += cost
    if current:
        parts.append((" ".join(current), used))
    located = []
    cursor = 0
    for part, n in parts:
        at = sentence.find(part, cursor)
        at = cursor if at < 0 else at  # words were rejoined by single spaces
        located.append((part, at, n))
        cursor = at + len(part)
    return located


def _split_word(word: str, budget: int) -> list[tuple[str, int]]:
    encoding = model_tokenizer().encode(word, add_special_tokens=False)
    parts = []
    for start in range(0, len(encoding.ids), budget):
        offsets = encoding.offsets[start : start + budget]
        parts.append((word[offsets[0][0] : offsets[-1][1]], len(offsets)))
    return parts
