"""Every ``DOCSYM_*`` setting, its default and what it does: read from the environment once.

It lives in ``storage/``, the lowest layer that needs a setting, so the indexer, the tools, the
server and the CLI all read the same object. Command-line options override these per run
(``--index``, ``--model``, ``--token``). The README's configuration table is printed from this
model (``docsym settings``) and a test keeps the two equal.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "DOCSYM_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    index: Path = Field(
        default=Path(".docsym"),
        description="Index directory used when a command gets no --index.",
    )
    store: str | None = Field(
        default=None,
        description="A shared PostgreSQL store (postgresql://user@host/db) that `docsym index` "
        "and `docsym serve` use instead of the index directory when they get no --store.",
    )
    pg_reader_password: SecretStr | None = Field(
        default=None,
        description="Shared store: password of the read-only role (docsym_reader) that runs "
        "client SQL; none where the server trusts local connections.",
    )
    publish_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How often a running `docsym index` publishes committed documents to readers.",
    )
    model: str = Field(
        default="all-MiniLM-L6-v2",
        description="Embedding model: the packaged all-MiniLM-L6-v2, a local "
        "sentence-transformers folder, or a model already in the Hugging Face cache.",
    )
    encoder: Literal["onnx", "onnx-int8", "torch"] = Field(
        default="onnx",
        description="How the model runs: ONNX Runtime (fp32), its int8 model, or "
        "sentence-transformers on torch.",
    )
    encoder_threads: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Threads one encoder runs on (each `docsym index --workers` process uses 1).",
    )
    cache: Path = Field(
        default=Path("~/.cache/docsym"),
        description="Where the model's one-time ONNX export is kept.",
    )
    token: SecretStr | None = Field(
        default=None,
        description="`docsym serve --transport http`: require `Authorization: Bearer TOKEN`.",
    )
    http_sessions: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="HTTP: sessions open at once, all clients together; a client asking for "
        "one more is answered 503.",
    )
    http_sessions_per_client: int = Field(
        default=32,
        ge=1,
        le=100_000,
        description="HTTP: sessions one client (one IP address; one /64 for IPv6) may hold at "
        "once; past it the client is answered 429 and told to close the ones it no longer uses.",
    )
    http_idle_seconds: float = Field(
        default=300.0,
        ge=1,
        le=86_400,
        description="HTTP: a session with no request in flight and no open event stream for "
        "this long is closed (its id then answers 404).",
    )
    http_read_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="HTTP: time a client has to send a whole request, headers and body, from "
        "its first byte (from connecting, for the first request); the connection is closed "
        "when it passes.",
    )
    http_connections: int = Field(
        default=512,
        ge=1,
        le=100_000,
        description="HTTP: connections open at once; past it, the one waiting longest for its "
        "request is closed to make room (or the new one, when all others are being answered).",
    )
    llm_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1) that writes "
        "the tldr and section summaries; extractive summaries without it.",
    )
    llm_model: str | None = Field(
        default=None, description="Model name sent to that endpoint (needed with the URL)."
    )
    llm_api_key: SecretStr | None = Field(
        default=None, description="Bearer key for that endpoint, if it needs one."
    )
    llm_timeout: float = Field(
        default=30.0, gt=0, description="Seconds to wait for each answer of that endpoint."
    )
    sql_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="`run_sql`: wall time of one statement, parse included; the worker "
        "process running it is killed when it passes.",
    )
    sql_memory_mb: int = Field(
        default=1024,
        ge=64,
        description="`run_sql`: memory one statement may use (the worker's address-space cap "
        "above what it maps at start).",
    )
    ocr: Literal["auto", "off", "force"] = Field(
        default="auto",
        description="`docsym index`: OCR pages whose text layer is missing or covers little "
        "of the page (auto), never (off), or every page, replacing its text layer (force).",
    )
    ocr_workers: int = Field(
        default=0,
        ge=0,
        le=64,
        description="`docsym index`: processes that run OCR at once (0: one per core).",
    )
    sql_workers: int = Field(
        default=2, ge=1, le=64, description="`run_sql`: statements that may run at once."
    )
    sql_wait_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="`run_sql`: how long a statement waits for a free worker before the "
        "client is told the server is busy.",
    )


class SettingsError(ValueError):
    """A DOCSYM_* variable holds a value docsym cannot use; the message names it."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process, read from the environment on first use."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{ENV_PREFIX}{'.'.join(map(str, e['loc'])).upper()}: {e['msg']} (got {e['input']!r})"
            for e in exc.errors(include_url=False)
        )
        raise SettingsError(problems) from None


def reload_settings() -> Settings:
    """Read the environment again: each CLI command starts from what it finds there."""
    get_settings.cache_clear()
    return get_settings()


def settings_table() -> str:
    """The settings as the markdown table the README shows."""
    lines = ["| variable | default | what it does |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.get_default()
        shown = "unset" if default is None else f"`{default}`"
        lines.append(f"| `{ENV_PREFIX}{name.upper()}` | {shown} | {field.description} |")
    return "\n".join(lines)
