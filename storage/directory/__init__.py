"""The index directory backend: DuckDB rows published as one file or in segments, the vector
file (``vectors.sqlite``) with its sign files, the writer an index run feeds (``sink.py``) and
the store servers read (``store.py``)."""
