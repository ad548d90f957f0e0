"""An OpenAI-compatible chat endpoint (``/chat/completions``), the one docsym may be given.

Optional everywhere: the indexer asks it for summaries and ``compile_query`` for translations
only when ``DOCSYM_LLM_BASE_URL`` and ``DOCSYM_LLM_MODEL`` are set. It lives in ``models/``
beside the embedding model, the other model docsym runs against, beneath both the indexer and
the tools so either can use it without going through the store. Plain ``urllib``: one POST
needs no client library.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from docsym.runtime.settings import Settings


class LlmError(RuntimeError):
    """The endpoint could not answer; the message says what went wrong."""


@dataclass(frozen=True)
class ChatClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 30.0

    def complete(
        self, messages: list[dict[str, str]], temperature: float = 0.0, max_tokens: int = 200
    ) -> str:
        """The assistant's reply to ``messages``."""
        url = self.base_url.rstrip("/") + "/chat/completions"
        body = {
            "model": self.model,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                payload = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:200].decode(errors="replace")
            raise LlmError(f"LLM endpoint {url} answered HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            raise LlmError(f"LLM request to {url} failed: {error!r}") from None
        try:
            content = json.loads(payload)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LlmError(f"LLM endpoint {url} sent an unexpected answer: {error!r}") from None
        if not isinstance(content, str) or not content.strip():
            raise LlmError(f"LLM endpoint {url} sent an empty answer")
        return content


def chat_client(settings: Settings) -> ChatClient | None:
    """The endpoint configured by the settings, or None when it is not."""
    base_url = (settings.llm_base_url or "").strip()
    model = (settings.llm_model or "").strip()
    if not base_url or not model:
        return None
    key = settings.llm_api_key.get_secret_value().strip() if settings.llm_api_key else ""
    return ChatClient(base_url, model, key or None, settings.llm_timeout)
