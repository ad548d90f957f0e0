"""The docs name only what exists: every path, module, name and setting that README.md and
docs/ARCHITECTURE.md put in backticks is checked against the tree.

What counts as a reference (everything else in backticks is prose: SQL, arguments, views and
columns, other projects' names):

- a path: a word of a code span that holds a '/', ends in a file name with a suffix or in '/'
  (`tools/list`, an MCP method, is no path), and either starts with a top-level folder of the
  repository (`storage/sink.py`, `indexer/ocr/`, `bench/index_speed.py --corpus`) or ends in
  `.py`; a bare file name (`pipeline.py`) must be some file of the repository;
- a name in a file: `path/to/file.py`'s `name`, where the name is a top-level def, class or
  assignment of that file (or listed in its `__all__`), or `Class.member`, a method, a class
  attribute or what a method sets on `self`;
- a dotted name (a whole span, or a word of one) whose first part is a layer, with or without
  the installed `docsym.` prefix (`tools.errors.ToolError`, `docsym.storage.schema`):
  the longest prefix that is a module, then names in it as above;
- `Class.member` with a CamelCase class (`ToolSpec.output_schema()`): a class of that name in a
  layer has that member;
- a constant, a span that is one UPPER_CASE name with an underscore (`RECYCLE_MB`): a top-level
  assignment in some layer's module;
- `DOCSYM_NAME`: a field of runtime/settings.py's `Settings` (or a variable only the tests
  read);
- a markdown link to a relative path (`[the architecture](docs/ARCHITECTURE.md)`): it exists,
  relative to the document.

Fenced blocks are not read, except the architecture's Shape tree: every file and folder name in
it exists under the top-level folder it is listed under. Names are read with ``ast``, nothing is
imported.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_settings import TEST_ONLY

DOCS = ("README.md", "docs/ARCHITECTURE.md")
LAYERS = ("language", "runtime", "models", "storage", "indexer", "tools", "mcp_server", "docsym")
TOP_FOLDERS = (*LAYERS, "bench", "tests", "docs")
FILE_SUFFIXES = {"py", "md", "json", "jsonl", "toml", "txt", "pdf", "sqlite", "duckdb", "html"}

_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
_SPAN = re.compile(r"`([^`]+)`")
_POSSESSIVE = re.compile(r"`([^`\s]+\.py)`['’]s\s+`([^`]+)`")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_SETTING = re.compile(r"\bDOCSYM_[A-Z0-9_]*[A-Z0-9]\b")
_BARE_FILE = re.compile(r"[\w-]+\.py")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


# -- what the tree defines ---------------------------------------------------------------------


@cache
def _repo_files() -> frozenset[str]:
    """Names of every file in the repository's top-level folders (no caches)."""
    return frozenset(
        p.name
        for folder in TOP_FOLDERS
        for p in (REPO / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


@cache
def _definitions(path: Path) -> dict[str, frozenset[str]]:
    """Top-level names of a module -> their members (a class's methods and attributes)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: dict[str, frozenset[str]] = {}
    exported: list[str] = []  # __all__
    literals: dict[str, ast.expr] = {}  # top-level NAME = [...] or {...}, for __all__'s *NAME
    for node in _top_level(tree.body):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in _assigned(node):
                literals[target] = node.value
        if isinstance(node, ast.ClassDef):
            names[node.name] = frozenset(_members(node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = frozenset()
        else:
            for target in _assigned(node):
                names.setdefault(target, frozenset())
                if target == "__all__" and isinstance(node, ast.Assign | ast.AnnAssign):
                    exported[:] = _listed(node.value, literals)
    for name in exported:
        names.setdefault(name, frozenset())
    return names


def _top_level(body: list[ast.stmt]):
    """Statements at module level, looking inside `if` and `try` blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody)


def _assigned(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _listed(value: ast.expr | None, literals: dict[str, ast.expr]) -> list[str]:
    """The strings of a list, tuple or dict literal (a dict's keys), ``*NAME`` of another."""
    if isinstance(value, ast.Dict):
        return [k.value for k in value.keys if isinstance(k, ast.Constant)]
    if not isinstance(value, ast.List | ast.Tuple):
        return []
    names = []
    for item in value.elts:
        if isinstance(item, ast.Constant):
            names.append(item.value)
        elif isinstance(item, ast.Starred) and isinstance(item.value, ast.Name):
            names.extend(_listed(literals.get(item.value.id), literals))
    return names


def _members(cls: ast.ClassDef) -> list[str]:
    """A class's methods, class attributes and fields, and what its methods set on ``self``."""
    found = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.name)
            found.extend(
                target.attr
                for statement in ast.walk(node)
                if isinstance(statement, ast.Assign | ast.AnnAssign)
                for target in getattr(statement, "targets", [getattr(statement, "target", None)])
                if isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            )
        else:
            found.extend(_assigned(node))
    return found


def _module_file(parts: list[str]) -> Path | None:
    """The file of module ``parts`` (a layer's module or package), or None."""
    base = REPO.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


@cache
def _classes() -> dict[str, list[frozenset[str]]]:
    """Every class defined at the top of a layer's module -> its members (per definition)."""
    found: dict[str, list[frozenset[str]]] = {}
    for layer in LAYERS:
        for path in (REPO / layer).rglob("*.py"):
            for name, members in _definitions(path).items():
                if name[:1].isupper() and members:
                    found.setdefault(name, []).append(members)
    return found


@cache
def _constants() -> frozenset[str]:
    """Every UPPER_CASE name assigned at the top of a layer's module."""
    return frozenset(
        name
        for layer in LAYERS
        for path in (REPO / layer).rglob("*.py")
        for name in _definitions(path)
        if _CONSTANT.fullmatch(name)
    )


@cache
def _settings() -> frozenset[str]:
    """DOCSYM_* names of runtime/settings.py's Settings model, read from its fields."""
    tree = ast.parse((REPO / "runtime" / "settings.py").read_text())
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    fields = [
        n.target.id
        for n in model.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    return frozenset(f"DOCSYM_{name.upper()}" for name in fields if name != "model_config")


# -- the checks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    reference: str
    why: str

    def __str__(self) -> str:
        return f"`{self.reference}`: {self.why}"


def _name_in(path: Path, name: str) -> str | None:
    """Why ``name`` (``f``, ``f()``, ``Class.member``) is not defined in ``path``; None if it is."""
    parts = name.removesuffix("()").split(".")
    names = _definitions(path)
    if parts[0] not in names:
        return f"{path.relative_to(REPO)} defines no {parts[0]}"
    if len(parts) == 2 and parts[1] not in names[parts[0]]:
        return f"{parts[0]} in {path.relative_to(REPO)} has no member {parts[1]}"
    if len(parts) > 2:
        return "too many parts to resolve"
    return None


def _dotted(reference: str) -> str | None:
    """Why a dotted reference does not resolve; None if it does or is not a code reference."""
    parts = reference.removesuffix("()").split(".")
    if parts[0] == "docsym" and len(parts) > 1 and parts[1] in LAYERS:
        parts = parts[1:]  # the installed name of a layer: docsym.storage.schema
    if parts[0] in LAYERS:
        for cut in range(len(parts), 0, -1):
            module = _module_file(parts[:cut])
            if module is not None:
                rest = parts[cut:]
                return _name_in(module, ".".join(rest)) if rest else None
        return "no such module"
    if re.fullmatch(r"[A-Z][a-z0-9]\w*", parts[0]) and len(parts) == 2:
        classes = _classes().get(parts[0])
        if not classes:
            return f"no class {parts[0]} in docsym's layers"
        if not any(parts[1] in members for members in classes):
            return f"class {parts[0]} has no member {parts[1]}"
    return None


def _path(word: str) -> str | None:
    """Why a path-like word does not name a file or folder of the repository; None if it does
    or is not a repository path."""
    word = word.strip("()[],;:'\"")
    if "/" not in word:
        if _BARE_FILE.fullmatch(word) and word not in _repo_files():
            return "no file of that name in the repository"
        return None
    if ":" in word or word[0] in "./~$<{" or "*" in word:
        return None
    last = word.rstrip("/").rsplit("/", 1)[-1]
    if not word.endswith("/") and "." not in last:
        return None  # not a file or folder but a name with a slash: tools/list, row/col
    if word.split("/")[0] not in TOP_FOLDERS and not word.endswith(".py"):
        return None
    return None if (REPO / word).exists() else "no such file or folder"


def check_text(text: str, folder: Path = REPO) -> list[Problem]:
    """Every wrong reference in a markdown text (a document in ``folder``), by the rules of this
    module's docstring."""
    problems: list[Problem] = []
    prose = _FENCE.sub("", text)
    for target in _LINK.findall(prose):
        if ":" not in target and not (folder / target).exists():
            problems.append(Problem(target, "the link leads nowhere"))
    for match in _POSSESSIVE.finditer(prose):
        file_name, name = match.group(1), match.group(2)
        path = REPO / file_name
        if not path.is_file():
            problems.append(Problem(file_name, "no such file"))
        elif why := _name_in(path, name):
            problems.append(Problem(f"{file_name}'s {name}", why))
    for match in _SPAN.finditer(prose):
        span = " ".join(match.group(1).split())
        for word in span.split():
            if why := _path(word):
                problems.append(Problem(word, why))
        for word in {span, *span.split()}:
            word = word.strip(",;:'\"").removeprefix("(")
            if word.endswith(")") and not word.endswith("()"):
                word = word[:-1]
            if not _DOTTED.fullmatch(word.removesuffix("()")):
                continue
            if word.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue  # a file name, checked as a path
            if why := _dotted(word):
                problems.append(Problem(word, why))
        constant = _CONSTANT.fullmatch(span) and not span.startswith("DOCSYM_")
        if constant and span not in _constants():
            problems.append(Problem(span, "no module of a layer assigns it"))
        for setting in _SETTING.findall(span):
            if setting not in _settings() and setting not in TEST_ONLY:
                problems.append(Problem(setting, "not a field of runtime/settings.py's Settings"))
    return problems


def check_shape(text: str) -> list[Problem]:
    """The Shape tree (the first fenced block after '## Shape'): every ``name.py`` and ``name/``
    exists under the top-level folder whose line it follows."""
    block = re.search(r"^## Shape\s+```\n(.*?)^```", text, re.S | re.M)
    if block is None:
        return [Problem("## Shape", "the architecture has no Shape tree")]
    problems: list[Problem] = []
    top: Path | None = None
    for line in block.group(1).splitlines():
        head = re.match(r"([\w.-]+)/\s", line + " ")
        if head:
            top = REPO / head.group(1)
            if not top.is_dir():
                problems.append(Problem(f"{head.group(1)}/", "no such top-level folder"))
        if top is None or not top.is_dir():
            continue
        here = {p.name for p in top.rglob("*") if "__pycache__" not in p.parts}
        for name in re.findall(r"(?<![\w/.])([\w-]+\.py)\b", line):
            if name not in here:
                problems.append(Problem(name, f"not under {top.name}/"))
        for name in re.findall(r"(?<![\w/.])([\w-]+)/(?=\s|$)", line):
            if name != top.name and name not in here:
                problems.append(Problem(f"{name}/", f"not under {top.name}/"))
    return problems


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCS)
def test_every_reference_in_the_doc_exists(doc: str) -> None:
    text = (REPO / doc).read_text()
    problems = check_text(text, (REPO / doc).parent)
    if doc == "docs/ARCHITECTURE.md":
        problems += check_shape(text)
    assert not problems, f"{doc} names what does not exist:\n" + "\n".join(map(str, problems))


def test_the_checker_tells_a_good_reference_from_a_bad_one() -> None:
    good = (
        "`runtime/extras.py`'s `MissingExtra` is raised; `tools.errors.ToolError` and "
        "`ToolSpec.output_schema()`, `docsym.storage.schema`, `indexer/ocr/` and "
        "`bench/index_speed.py --corpus`, `DOCSYM_INDEX_MEMORY_MB`, `RECYCLE_MB`; "
        "`documents.path` is a column, `../shared/corpus` lies outside; see "
        "[the architecture](docs/ARCHITECTURE.md) and [MCP](https://modelcontextprotocol.io)."
    )
    assert check_text(good) == []
    bad = {
        "`runtime/extras.py`'s `MissingExtras`": "MissingExtras",
        "`tools.errors.ToolErrors`": "ToolErrors",
        "`ToolSpec.output_schemas()`": "output_schemas",
        "`docsym.storage.schemas`": "schemas",
        "`indexer/orc/`": "indexer/orc/",
        "`bench/index_sped.py --corpus`": "index_sped",
        "`DOCSYM_INDEX_MEMORY`": "DOCSYM_INDEX_MEMORY",
        "`Stores.derived`": "Stores",
        "`pipelines.py`": "pipelines.py",
        "`RECYCLE_MBS`": "RECYCLE_MBS",
        "[the architecture](docs/ARCHITECTUR.md)": "ARCHITECTUR.md",
    }
    for text, wrong in bad.items():
        problems = check_text(f"Good: `storage/directory/writer.py`. Bad: {text}.")
        assert len(problems) == 1 and wrong in str(problems[0]), (text, problems)


def test_the_shape_tree_is_checked_against_its_folders() -> None:
    shape = "## Shape\n\n```\n{}\n```\n"
    good = "indexer/      files\n  pdf/          layout.py reads\n  workers.py    workers"
    assert check_shape(shape.format(good)) == []
    bad = "indexer/      files\n  pdf/          layout.py reads\n  sink.py       where"
    assert [p.reference for p in check_shape(shape.format(bad))] == ["sink.py"]
