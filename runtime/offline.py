"""No network from docsym: the libraries it loads are told, before any of them loads, not to
report usage anywhere.

ONNX Runtime (the encoder, OCR) sends usage events on Linux from 1.32 on: an idle ``docsym
serve`` looked up ``mobile.events.data.microsoft.com`` ten times in two minutes, an index run
sixteen times, and each wrote a device id and queued events under
``~/.cache/Microsoft/DeveloperTools/.onnxruntime``. It reads ``ORT_DISABLE_TELEMETRY`` when it is
imported: set afterwards, or with ``onnxruntime.disable_telemetry_events()`` after the import,
the lookups went on (6 in 40 s either way, against none when it was set first). So
``docsym/__init__.py``, which runs before any module of docsym and so before anything docsym
imports, calls ``no_telemetry``; every process docsym starts (index and OCR workers, client SQL
workers) inherits the environment, and imports docsym first as well.

Hugging Face Hub (a model named by hub id, read from its local cache only) honours its own
switch and ``DO_NOT_TRACK``; tokenizers, docling, RapidOCR, DuckDB, apsw and the MCP SDK (its
OpenTelemetry spans go nowhere without an SDK installed) send nothing; ``tests/test_offline.py``
watches every socket of an index run and a serving server to keep it so.
"""

from __future__ import annotations

import os

# Each variable, and who reads it. Set whatever the caller's environment says: docsym never
# wants these reports, and they change nothing else in a program that imports docsym.
NO_TELEMETRY = {
    "ORT_DISABLE_TELEMETRY": "1",  # ONNX Runtime
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub (sentence-transformers, transformers)
    "DO_NOT_TRACK": "1",  # the common switch (https://donottrack.sh), huggingface_hub included
}


def no_telemetry() -> None:
    """Turn every known usage report off in this process and those it starts."""
    os.environ.update(NO_TELEMETRY)
