"""README command 1, exactly as written, in a fresh virtual environment: what users install.

    python bench/fresh_install.py [--python 3.13 3.11 ...] [--formats] [--keep DIR]

For each interpreter (pyenv's ``~/.pyenv/versions/X.Y*``, else ``pythonX.Y`` on PATH) it copies
the working tree to a new folder, makes a new virtual environment, and runs README command 1 as
the README prints it (fresh resolution: no constraints file, no extras; today's releases of
every dependency) with the environment's ``bin`` first on PATH and the model hub switched off.
That command installs docsym, indexes the bundled samples and answers a question through the
MCP server. It prints the install's wall time, the environment's size, whether torch,
transformers or sentence-transformers got in, and whether the command succeeded.

``--formats`` then indexes, with that environment's ``docsym``, one file of every supported
format and a scanned PDF (from ``../shared/corpus``, or ``$DOCSYM_CORPUS``; a Markdown file is
written here) and finds each by a search: every file must index and be found, or the run fails.
``.ci/run`` runs it on Python 3.13, so CI installs what users install, not the test extras.

Needs the package registry (pip downloads what its cache lacks). A Python not found is
reported and fails the run, never silently.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "sentence-transformers", "nvidia-cublas-cu12")
MB = 2**20
# One file of every format and a scan, each with words a search for it must find it by.
CORPUS_FILES = {
    "office/word_sample.docx": "calories per portion food table",
    "office/wiki_duck.html": "duck waterfowl Anatidae",
    "office/powerpoint_sample.pptx": "powerpoint sample table Class1",
    "office/2023-half-year-analyses-by-segment.xlsx": "Nestle analyses by segment sales",
    "papers/2004.04906v3_dpr.pdf": "dense passage retrieval",
    "scanned/table-multi-row-column-cells.pdf": "accuracy time to complete results",
}
MARKDOWN = ("field-notes.md", "# Field notes\n\nThe kestrels hover above the dunes at dawn.\n")
MARKDOWN_QUERY = "kestrels hover above the dunes"


@dataclass
class Outcome:
    python: str
    version: str = "-"
    install_s: float = 0.0
    size_mb: float = 0.0
    heavy: tuple[str, ...] = ()
    command: str = "-"
    formats: dict[str, str] = field(default_factory=dict)  # file -> "found" or why not

    @property
    def ok(self) -> bool:
        found = all(v == "found" for v in self.formats.values())
        return self.command == "answered" and not self.heavy and found


def readme_command(number: int) -> str:
    """Set-up command ``number`` as README.md prints it (the line after its ``# N.``
    comment)."""
    lines = (REPO / "README.md").read_text().splitlines()
    for n, line in enumerate(lines):
        if line.startswith(f"# {number}. "):
            return lines[n + 1].strip()
    raise SystemExit(f"README.md has no set-up command {number}")


def find_python(version: str) -> str | None:
    """An interpreter for ``version`` (3.13): pyenv's first, then ``python3.13`` on PATH."""
    home = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in sorted(glob.glob(str(home / "versions" / f"{version}*" / "bin" / "python"))):
        return candidate
    return shutil.which(f"python{version}")


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]


def size_mb(path: Path) -> float:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return total / MB


def installed(python: Path) -> set[str]:
    listing = run([str(python), "-m", "pip", "list", "--format=freeze"]).stdout
    return {line.split("==")[0].lower() for line in listing.splitlines() if "==" in line}


def copy_tree(target: Path) -> None:
    """The working tree's files (tracked, and new ones not ignored) copied to ``target``, as
    a user's clone would hold them."""
    listed = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True)
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["-"])[-1]


def try_python(version: str, workdir: Path, formats: Path | None) -> Outcome:
    outcome = Outcome(version)
    interpreter = find_python(version)
    if interpreter is None:
        outcome.command = f"no Python {version} here"
        return outcome
    venv, tree = workdir / f"venv-{version}", workdir / f"docsym-{version}"
    run([interpreter, "-m", "venv", str(venv)], check=True)
    copy_tree(tree)
    python = venv / "bin" / "python"
    outcome.version = run([str(python), "--version"]).stdout.strip()
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "HF_HUB_OFFLINE": "1",
        "DOCSYM_CACHE": str(workdir / f"cache-{version}"),
    }
    env.pop("PYTHONPATH", None)
    start = time.perf_counter()
    done = run(["bash", "-c", readme_command(1)], cwd=tree, env=env, timeout=3600)
    outcome.install_s = time.perf_counter() - start
    outcome.size_mb = size_mb(venv)
    outcome.heavy = tuple(name for name in HEAVY if name in installed(python))
    if done.returncode:
        outcome.command = f"failed ({done.returncode}): {last_line(done)[:300]}"
        return outcome
    outcome.command = "answered"
    if formats is not None:
        outcome.formats = check_formats(venv / "bin" / "docsym", formats, workdir, env)
    return outcome


def check_formats(docsym: Path, corpus: Path, workdir: Path, env: dict) -> dict[str, str]:
    """Index one file of every format and a scan; search for each: file -> found, or why not."""
    folder, index = workdir / "formats", workdir / "formats-index"
    folder.mkdir(exist_ok=True)
    queries = {}
    for name, query in CORPUS_FILES.items():
        shutil.copy2(corpus / name, folder / Path(name).name)
        queries[Path(name).name] = query
    (folder / MARKDOWN[0]).write_text(MARKDOWN[1])
    queries[MARKDOWN[0]] = MARKDOWN_QUERY
    indexed = run([str(docsym), "index", str(folder), "--index", str(index), "--quiet"], env=env)
    failed = {
        Path(line.split(":")[0].removeprefix("failed ")).name: line
        for line in indexed.stderr.splitlines()
        if line.startswith("failed ")
    }
    listed = run(
        [
            str(docsym),
            "sql",
            "SELECT doc_id, file_name FROM documents",
            "--index",
            str(index),
            "--json",
        ],
        env=env,
    )
    names = {row[0]: row[1] for row in json.loads(listed.stdout or '{"rows": []}')["rows"]}
    found = {}
    for name, query in queries.items():
        if name in failed:
            found[name] = failed[name]
            continue
        search = run(
            [str(docsym), "search", query, "--index", str(index), "--limit", "5", "--json"], env=env
        )
        hits = json.loads(search.stdout)["hits"] if search.returncode == 0 else []
        top = [names.get(hit["doc_id"]) for hit in hits]
        found[name] = "found" if name in top else f"not in the top 5 for {query!r}: {top}"
    if indexed.returncode and not failed:
        found["docsym index"] = f"exit {indexed.returncode}: {last_line(indexed)[:300]}"
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", nargs="+", default=["3.11", "3.13"])
    parser.add_argument("--formats", action="store_true", help="index and find every format")
    parser.add_argument("--keep", type=Path, help="make the environments here and keep them")
    args = parser.parse_args()
    corpus = Path(os.environ.get("DOCSYM_CORPUS", REPO.parent / "shared" / "corpus"))
    if args.formats and not corpus.is_dir():
        print(f"--formats needs the corpus at {corpus} (or $DOCSYM_CORPUS)", file=sys.stderr)
        return 2
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="docsym-fresh-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        outcomes = [try_python(v, workdir, corpus if args.formats else None) for v in args.python]
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"README command 1: {readme_command(1)}\n")
    print("| Python | install + demo s | venv MB | torch & co. | README command 1 |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        heavy = ", ".join(o.heavy) or "none"
        print(f"| {o.version} | {o.install_s:.0f} | {o.size_mb:,.0f} | {heavy} | {o.command} |")
        for name, what in o.formats.items():
            print(f"  {o.version} {name}: {what}")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
