"""The evidence view: an MCP App (SEP-1865) that shows what a tool's result cites.

A host that renders apps reads ``ui://docsym/evidence`` and shows it beside the results of the
evidence tools: the hits as a list and the cited page with each cited box drawn on it. The view
is one HTML document with everything inline: its markup and styles (``evidence.html``), its
script (``evidence.js``), and the official view library (``@modelcontextprotocol/ext-apps``'
``App``, vendored unchanged under ``vendor/``), so its sandboxed iframe loads nothing; page
images come from the server's ``page_image`` tool through the host's bridge. Hosts without
apps never read it, and the tools answer them as before.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import Any

EVIDENCE_URI = "ui://docsym/evidence"
EVIDENCE_NAME = "evidence"
APP_MIME_TYPE = "text/html;profile=mcp-app"
SDK_FILE = "vendor/ext-apps-2.0.4-app-with-deps.js"

# The resource's _meta.ui: no domain of any kind (the view connects, loads and frames nothing),
# and a border, as the view has no frame of its own.
APP_META: dict[str, Any] = {
    "ui": {
        "csp": {
            "connectDomains": [],
            "resourceDomains": [],
            "frameDomains": [],
            "baseUriDomains": [],
        },
        "prefersBorder": True,
    }
}

# The same policy in the document itself, for a host (or a plain browser) that sets none:
# inline script and style only, images from data: and blob: URLs, no connection at all.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; connect-src 'none'"
)

# The bundle ends with one `export{a as B,...}`: its local name for App is read from there.
_EXPORTED_APP = re.compile(r"export\s*\{[^}]*?\b([\w$]+) as App\b[^}]*\}\s*;?\s*$")


@cache
def evidence_app_html() -> str:
    """The view as one HTML5 document: styles and scripts inline, no URL to anything."""
    here = files(__package__)
    page = here.joinpath("evidence.html").read_text(encoding="utf-8")
    parts = {
        "{{csp}}": CONTENT_SECURITY_POLICY,
        "{{ext_apps}}": _library(here.joinpath(SDK_FILE).read_text(encoding="utf-8")),
        "{{evidence_js}}": here.joinpath("evidence.js").read_text(encoding="utf-8"),
    }
    for mark, text in parts.items():
        if page.count(mark) != 1:
            raise RuntimeError(f"evidence.html must hold {mark} once")
        if "</script" in text.lower():  # would end the inline script early
            raise RuntimeError(f"{mark} holds '</script'")
        page = page.replace(mark, text)
    return page


def _library(bundle: str) -> str:
    """The library as an inline module script that hands ``App`` to the view's own script:
    an inline module cannot be imported, so its export becomes a global the view reads."""
    exported = _EXPORTED_APP.search(bundle)
    if exported is None:
        raise RuntimeError(f"{SDK_FILE} no longer ends by exporting App")
    return f"{bundle}\nglobalThis.McpExtApps = {{ App: {exported.group(1)} }};\n"
