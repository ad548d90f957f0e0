"""The key under which entity names are merged (indexing) and looked up (find_entities,
rank_nodes): the same function on both sides, or a name found at indexing is never found again."""

from __future__ import annotations

import re
from functools import lru_cache


# find_entities keys every candidate's spellings, and a library repeats names ("BERT" in
# thousands of papers).
@lru_cache(maxsize=65_536)
def normalise_name(name: str) -> str:
    """Case, spacing, hyphens and a plural 's' do not matter: 'Dense-Passage  Retrievers' and
    'dense passage retriever' get the same key."""
    key = re.sub(r"[\s\-‐–_]+", " ", name.replace("’", "'")).strip().lower()
    key = re.sub(r"\s*\.\s*$", "", key)
    if len(key) > 4 and key.endswith("s") and not key.endswith(("ss", "us", "is")):
        key = key[:-1]
    return key
