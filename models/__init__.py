"""The models docsym runs against: the embedding model and an optional chat LLM.

- ``encoder.py``: sentence embeddings (``Encoder``, ``query_encoder``), loaded lazily and
  offline, and the vector collection each model fills (``collection_name``).
- ``onnx_encoder.py`` and ``bert_graph.py``: the encoder on ONNX Runtime, its graph written from
  the model's safetensors weights (no torch).
- ``llm.py``: the OpenAI-compatible chat client that writes summaries (indexer) and translates
  questions (``compile_query``).

Beneath ``storage/``, so the indexer, the store and the tools all reach them. It may import
``language/`` and ``runtime/`` only (``tests/test_layers.py``).
"""
