"""The shared backend: the same views and vector collections in PostgreSQL with pgvector."""
