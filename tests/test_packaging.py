"""What an installed docsym puts in site-packages: one name, ``docsym``, holding every layer.

The wheel is built as pip builds it (setuptools from this environment, no download) from a
copy of the checkout, since an in-tree build leaves a build/ folder behind, then read as a zip.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

import docsym
from tests.conftest import REPO

LAYERS = ("language", "runtime", "models", "storage", "indexer", "tools", "mcp_server")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"
    skip = shutil.ignore_patterns(".*", "build", "tests", "bench", "*.egg-info", "__pycache__")
    shutil.copytree(REPO, source, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(out), str(source)],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (path,) = out.glob("docsym-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_installs_one_top_level_name(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"docsym"}


def test_every_layer_module_is_in_the_wheel_under_docsym(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    expected = {
        "docsym/" + path.relative_to(REPO).as_posix()
        for layer in LAYERS
        for path in (REPO / layer).rglob("*.py")
    }
    assert expected, "no layer modules found in the checkout"
    assert expected <= names, f"missing from the wheel: {sorted(expected - names)[:5]}"
    assert {n for n in names if n.startswith("docsym/samples/") and n.endswith(".pdf")}
    assert "docsym/mcp_server/browser_view.html" in names  # the browser view's page


def test_the_python_api_names_the_tools_and_the_indexer() -> None:
    from docsym.tools.registry import TOOLS

    for spec in TOOLS:
        assert getattr(docsym, spec.name) is spec.function
    assert callable(docsym.index_paths) and callable(docsym.open_store)
    assert docsym.__version__ not in ("", "0.0.0")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = docsym.nope


def test_the_evidence_view_ships_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    """Its page, script and vendored library are data files, not modules: package-data."""
    names = set(wheel.namelist())
    app = "docsym/mcp_server/evidence_app/"
    for name in ("evidence.html", "evidence.js", "vendor/ext-apps-2.0.4-app-with-deps.js"):
        assert app + name in names, f"{name} is missing from the wheel"
