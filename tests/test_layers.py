"""The layer rule, enforced: data flows one way and no module reaches into another's private names.

    language/  <-  runtime/  <-  models/  <-  storage/  <-  indexer/
                                                      <-  tools/  <-  mcp_server/  <-  docsym/ (CLI)

runtime/ (settings, optional extras, process and client bounds) and models/ (the embedding model
and the LLM client) sit beneath storage/ so the indexer and the tools reach them without going
through the store.

Every import in every module of a package is read from its source (top-level and function-level
alike), so a wrong-way import fails here before it can grow into a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

# What each package may import from the project, besides itself.
ALLOWED: dict[str, set[str]] = {
    "language": set(),
    "runtime": {"language"},
    "models": {"language", "runtime"},
    "storage": {"language", "runtime", "models"},
    "indexer": {"language", "runtime", "models", "storage"},
    "tools": {"language", "runtime", "models", "storage"},
    "mcp_server": {"language", "runtime", "models", "storage", "tools"},
    "docsym": {"language", "runtime", "models", "storage", "indexer", "tools", "mcp_server"},
}


def _modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    """The installed name: every layer lives under ``docsym.`` (pyproject's package-dir)."""
    parts = path.relative_to(REPO).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "docsym" else ("docsym", *parts))


def _layer(module: str) -> str | None:
    """The layer an imported module belongs to (``docsym.storage.x`` -> storage), or None for
    modules outside the project."""
    parts = module.split(".")
    if parts[0] != "docsym":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else "docsym"


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every import statement in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_follow_the_layers(package: str) -> None:
    wrong = []
    for path in _modules(package):
        for line, module, _ in _imports(path):
            top = _layer(module)
            if top is not None and top != package and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not wrong, f"{package}/ may import only {sorted(ALLOWED[package])}: " + "; ".join(wrong)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_private_names_from_other_modules(package: str) -> None:
    wrong = []
    for path in _modules(package):
        here = _module_name(path)
        for line, module, names in _imports(path):
            if _layer(module) is None or module == here:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                wrong.append(f"{path.relative_to(REPO)}:{line} takes {private} from {module}")
    assert not wrong, "; ".join(wrong)


BENEATH_THE_SERVER = ["language", "runtime", "models", "storage", "indexer", "tools"]


@pytest.mark.parametrize("package", BENEATH_THE_SERVER)
def test_only_the_server_speaks_mcp(package: str) -> None:
    """tools/ are plain functions: the CLI, the tests and the server share them without MCP."""
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in _modules(package)
        for line, module, _ in _imports(path)
        if module.split(".")[0] in ("mcp", "mcp_types")
    ]
    assert not wrong, "; ".join(wrong)


def test_the_rule_sees_a_wrong_way_import(tmp_path: Path) -> None:
    """The checker itself: an upward import and a private name are both found."""
    module = tmp_path / "bad.py"
    module.write_text(
        "from docsym.tools.search import hybrid_search\n"
        "def f():\n    from docsym.indexer.pdf.sections import _norm\n"
    )
    assert _imports(module) == [
        (1, "docsym.tools.search", ["hybrid_search"]),
        (3, "docsym.indexer.pdf.sections", ["_norm"]),
    ]
    assert [_layer(m) for _, m, _ in _imports(module)] == ["tools", "indexer"]
    assert _layer("docsym.cli") == "docsym" and _layer("tools") is None


def _import_graph() -> dict[str, set[str]]:
    """Every project module and the project modules it imports (at any level of the file)."""
    paths = {_module_name(p): p for package in ALLOWED for p in _modules(package)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        for _, module, names in _imports(path):
            targets |= {t for t in (module, *(f"{module}.{n}" for n in names)) if t in paths}
        graph[name] = targets - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of the graph, as the modules around it, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return None


def test_no_import_circles() -> None:
    """A module never imports, directly or through others, a module that imports it: a circle
    means a helper sits in the wrong module (function-level imports count too)."""
    circle = _cycle(_import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_rule_sees_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
