"""Every ``DOCSYM_*`` setting, its default and what it does: read from the environment once.

It lives in ``runtime/``, beneath every layer that needs a setting (the models, the store, the
indexer, the tools, the server and the CLI), so they all read the same object. Command-line
options override these per run (``--index``, ``--model``, ``--token``). The README's
configuration table is printed from this model (``docsym settings``) and a test keeps the two
equal.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from docsym.runtime.formats import FORMATS

ENV_PREFIX = "DOCSYM_"
# Which pages OCR reads: those without a usable text layer, none, or every page.
OcrMode = Literal["auto", "off", "force"]
# Largest file per format, in MB (DOCX, PPTX, XLSX: unpacked), far above the corpus's largest.
DEFAULT_FILE_MB = {f.name: f.max_mb for f in FORMATS}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    index: Path = Field(
        default=Path(".docsym"),
        description="Index directory used when a command gets no --index.",
    )
    postgres: str | None = Field(
        default=None,
        description="A PostgreSQL database (postgresql://user@host/db) that commands use as "
        "their store, instead of an index directory, when given neither --index nor --postgres.",
    )
    store: str | None = Field(
        default=None,
        description="The older name of DOCSYM_POSTGRES, still read (scripts and client configs "
        "set it); DOCSYM_POSTGRES wins when both are set.",
    )
    pg_reader_password: SecretStr | None = Field(
        default=None,
        description="PostgreSQL store: password of the read-only role (docsym_reader) that runs "
        "client SQL; none where the server trusts local connections.",
    )
    publish_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How often a running `docsym index` publishes committed documents to readers.",
    )
    segment_mb: float = Field(
        default=64.0,
        gt=0,
        description="An index's rows are published in segments once larger than this: a "
        "publish copies at most this much, whatever the library's size.",
    )
    consolidate_mb: float = Field(
        default=256.0,
        ge=0,
        description="A run that ends with an index this small leaves it as one file.",
    )
    watch_settle_seconds: float = Field(
        default=1.0,
        ge=0,
        le=600,
        description="`--watch`: how long a changed file must stay untouched before it is read "
        "(a file still being copied or downloaded is waited for).",
    )
    watch_rescan_seconds: float = Field(
        default=900.0,
        ge=1,
        description="`--watch`: how often the watched folders are walked whole, in case a file "
        "event was lost (network drives); files whose size and times are unchanged are not read.",
    )
    model: str = Field(
        default="all-MiniLM-L6-v2",
        description="Embedding model: the packaged all-MiniLM-L6-v2, a local "
        "sentence-transformers folder, or a model already in the Hugging Face cache.",
    )
    encoder: Literal["onnx", "onnx-int8", "torch"] = Field(
        default="onnx-int8",
        description="How the model runs: ONNX Runtime with int8 weights (1.6x faster, hybrid "
        "search as good), in fp32 (sentence-transformers' vectors), or sentence-transformers "
        "on torch.",
    )
    encoder_threads: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Threads `docsym index` encodes vectors on, one model session each (a search "
        "encodes its question on 1).",
    )
    cache: Path = Field(
        default=Path("~/.cache/docsym"),
        description="Where the model's ONNX graph, written once from its weights, is kept.",
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
    read_memory_mb: int = Field(
        default=512,
        ge=128,
        description="Tools but `run_sql`: memory the index's reads may hold (DuckDB's cache of "
        "table blocks, the key indexes it loads, each statement's work); a statement that needs "
        "more fails with an out-of-memory error.",
    )
    ocr: OcrMode = Field(
        default="auto",
        description="`docsym index`: OCR pages whose text layer is missing or covers little "
        "of the page (auto), never (off), or every page, replacing its text layer (force).",
    )
    ocr_workers: int = Field(
        default=0,
        ge=0,
        le=64,
        description="`docsym index`: processes that run OCR at once, per index worker (0: as "
        "many as DOCSYM_INDEX_MEMORY_MB holds at ~700 MB each, at most one per core).",
    )
    index_stall_seconds: float = Field(
        default=300.0,
        ge=1,
        le=86_400,
        description="`docsym index`: a file whose preparation shows no progress for this long "
        "(a stage begun, a page read by OCR, a batch of vectors encoded) is stopped, its worker "
        "process killed, and the file reported; the run goes on.",
    )
    index_memory_mb: int = Field(
        default=768,
        ge=256,
        description="`docsym index`: memory one file may use: the address space its worker "
        "process may map above what it maps once the file's parser is loaded; it also sets how "
        "many OCR processes a worker starts.",
    )
    max_file_mb: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_FILE_MB),
        description="`docsym index`: largest file per format in MB (DOCX, PPTX, XLSX: their "
        "unpacked contents), as JSON; formats not named keep their default.",
    )
    max_sheet_cells: int = Field(
        default=50_000,
        ge=1,
        description="`docsym index`: cells one XLSX sheet may store.",
    )
    max_nesting: int = Field(
        default=256,
        ge=8,
        le=256,
        description="`docsym index`: how deep HTML elements and Office XML elements may nest "
        "(at most 256, the depth libxml2's HTML reader checks to).",
    )
    max_page_points: float = Field(
        default=14_400.0,
        gt=0,
        description="`docsym index`: longest side of a PDF page, in points (14,400 is the PDF "
        "format's own maximum).",
    )
    ocr_megapixels: float = Field(
        default=1.5,
        ge=0.5,
        le=50,
        description="`docsym index`: the largest image OCR's text detector reads at once, in "
        "megapixels; a larger page image is scaled down to find its lines, which are then read "
        "at full resolution (the detector needs ~140 MB per megapixel).",
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
    render_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="`view_page`: wall time of drawing one page, reading the file included; the "
        "worker process drawing it is killed when it passes.",
    )
    render_memory_mb: int = Field(
        default=1024,
        ge=64,
        description="`view_page`: memory drawing one page may use (the worker's address-space "
        "cap above what it maps at start); a page needing more is drawn at a lower dpi, else "
        "refused.",
    )
    render_workers: int = Field(
        default=2, ge=1, le=64, description="`view_page`: pages that may be drawn at once."
    )
    render_wait_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="`view_page`: how long a call waits for a free worker before the client is "
        "told the server is busy.",
    )

    @field_validator("max_file_mb")
    @classmethod
    def _merge_file_limits(cls, given: dict[str, float]) -> dict[str, float]:
        """Formats the user names replace their defaults; the others keep theirs."""
        unknown = set(given) - set(DEFAULT_FILE_MB)
        if unknown:
            raise ValueError(
                f"unknown format(s) {sorted(unknown)}; formats are {sorted(DEFAULT_FILE_MB)}"
            )
        if any(not mb > 0 for mb in given.values()):
            raise ValueError("every limit must be a number of MB above 0")
        return {**DEFAULT_FILE_MB, **given}


class SettingsError(ValueError):
    """A DOCSYM_* variable holds a value docsym cannot use; the message names it."""


def postgres_url(settings: Settings) -> str | None:
    """The PostgreSQL URL the settings name: ``DOCSYM_POSTGRES``, else its older name
    ``DOCSYM_STORE``, else None."""
    return settings.postgres or settings.store


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
        default = field.get_default(call_default_factory=True)
        if isinstance(default, dict):
            default = json.dumps(default, separators=(",", ":"))
        shown = "unset" if default is None else f"`{default}`"
        lines.append(f"| `{ENV_PREFIX}{name.upper()}` | {shown} | {field.description} |")
    return "\n".join(lines)
