"""What a docsym process runs with, beneath the models, the store and everything above them.

- ``settings.py``: every ``DOCSYM_*`` variable, read once (``get_settings``).
- ``extras.py``: which optional extras are installed (``require``, ``MissingExtra``).
- ``process_limits.py``: the memory cap and parent watch a worker process sets on itself (client
  SQL workers in ``storage/``, parsing and OCR workers in ``indexer/``).
- ``bounds.py``: how much of a value or a message travels to a client.

It may import ``language/`` only (``tests/test_layers.py``); nothing here knows of documents,
indexes or models.
"""
