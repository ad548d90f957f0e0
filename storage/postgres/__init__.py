"""The shared backend: the same views and vector collections in PostgreSQL with pgvector.

Its client libraries are the ``postgres`` extra; any use of a ``postgresql://`` store in a
default install says how to add them (runtime/extras.py).
"""

from docsym.runtime.extras import require

require("a PostgreSQL store", ("psycopg", "psycopg_pool", "pgvector"), "postgres")
