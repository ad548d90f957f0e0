"""The ground floor: how docsym reads words, used alike by the indexer, storage and the tools.

- ``sentences``: splitting text into sentences (chunks, summaries, entity extraction, fusion);
- ``terms``: query and passage words for ranking: tokens, stemming, stopwords, possessives;
- ``names``: the key entity names are merged and looked up on.

Nothing here imports another docsym package, so every layer can depend on it.
"""
