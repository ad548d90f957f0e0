"""Real file systems for the tests that need one: a small tmpfs (a disk that fills up) and a
read-only bind mount (a shared drive). Both need root (CAP_SYS_ADMIN); a test that cannot mount
is skipped, saying why."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount {' '.join(args)} was refused: {done.stderr.strip()}")


def _unmount(path: Path) -> None:
    subprocess.run(["umount", "--lazy", str(path)], capture_output=True)


@contextmanager
def tmpfs(path: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` at ``path`` (created), unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path))
    try:
        yield path
    finally:
        _unmount(path)


@contextmanager
def read_only_view(source: Path, path: Path) -> Iterator[Path]:
    """``source`` seen read-only at ``path``: a read-only bind mount as root, else (an
    unprivileged user, whom permissions bind) ``source`` itself with write permission taken
    away."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [source, *source.rglob("*")]}
        for p, mode in modes.items():
            p.chmod(mode & ~0o222)
        try:
            yield source
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    path.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(path))
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, text=True
        )
        if remounted.returncode != 0:
            pytest.skip(f"remounting a bind mount read-only was refused: {remounted.stderr}")
        yield path
    finally:
        _unmount(path)


def fill(disk: Path, leave: int) -> Path:
    """A file taking all of ``disk``'s free space but ``leave`` bytes."""
    st = os.statvfs(disk)
    ballast = disk / "ballast"
    size = st.f_bavail * st.f_frsize - leave
    assert size > 0, f"{disk} has less than {leave} bytes free"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
    return ballast
