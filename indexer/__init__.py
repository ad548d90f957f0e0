"""Documents in, view rows and search entries out (see docs/ARCHITECTURE.md)."""

import sys

# PyMuPDF imports its optional layout-analysis add-on (``pymupdf.layout``, installed with it) on
# every ``import pymupdf``: 0.25 s of each indexing run's start-up, for a feature docsym never
# calls. A None entry in sys.modules makes that import fail, which PyMuPDF takes as "not
# installed". (``setdefault``: a process that already imported it keeps it.)
sys.modules.setdefault("pymupdf.layout", None)
