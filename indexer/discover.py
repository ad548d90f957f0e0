"""Find the files to index under the paths a user gives."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from docsym.runtime.formats import format_of
from docsym.storage.file_names import readable


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (readable path, why)


def discover(paths: Iterable[Path], *, follow_links: bool = False) -> Discovery:
    """Supported files under ``paths`` (recursively), sorted, hidden files and folders skipped.

    A file named explicitly is taken whatever its suffix says, so that a bad file gets a clear
    error instead of being silently ignored.

    Links, to files and to folders alike, are read under their own name (its suffix says the
    format) when they lead inside the folders given; one that leads outside them is skipped and
    reported unless ``follow_links``, and one that leads nowhere is reported. A file reached
    both directly and through links is read once, under its own path; a folder reached twice (a
    loop of links) is read once.
    """
    given = given_paths(paths)
    roots = [path.resolve() for path in given if path.is_dir()]
    walk = _Walk(roots, follow_links)
    for path in given:
        if path.is_dir():
            walk.folder(path.resolve())
        else:
            walk.found[path.resolve()] = Path(os.path.abspath(path))  # named: read as named
    return Discovery(sorted(walk.found.values()), walk.skipped)


def given_paths(paths: Iterable[Path]) -> list[Path]:
    """The paths a user gave, ``~`` expanded; ``FileNotFoundError`` for one that is not there."""
    given = [path.expanduser() for path in paths]
    for path in given:
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {readable(path)}")
    return given


class _Walk:
    def __init__(self, roots: list[Path], follow_links: bool) -> None:
        self.roots = roots
        self.follow_links = follow_links
        self.found: dict[Path, Path] = {}  # real path -> the path to index it under
        self.skipped: list[tuple[str, str]] = []
        self._seen: set[Path] = set()  # folders read, by their real path

    def folder(self, top: Path) -> None:
        stack = [(top, top)]  # (the folder as reached, its real path)
        while stack:
            folder, real = stack.pop()
            if real in self._seen:
                continue
            self._seen.add(real)
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                self.skipped.append((readable(folder), f"cannot read folder: {exc.strerror}"))
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                path = folder / entry.name
                target = self._target(path) if entry.is_symlink() else real / entry.name
                if target is None:
                    continue
                if target.is_dir():
                    stack.append((path, target))
                elif _supported(path) and target.is_file():
                    self._add(target, path, direct=target == path)

    def _add(self, real: Path, path: Path, direct: bool) -> None:
        if direct or real not in self.found:  # a file's own path wins over links to it
            self.found[real] = path

    def _target(self, link: Path) -> Path | None:
        """Where a link leads, if it may be followed; else None, with the reason recorded."""
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):  # a missing target, or a loop of links
            self.skipped.append((readable(link), f"a link that leads nowhere ({_leads(link)})"))
            return None
        if not target.is_dir() and not _supported(link):
            return None  # not a file docsym reads, wherever it leads
        if not self.follow_links and not any(target.is_relative_to(r) for r in self.roots):
            where = f"a link to {readable(target)}, outside the folders given"
            self.skipped.append((readable(link), f"{where}: --follow-links reads it"))
            return None
        return target


def _supported(path: Path) -> bool:
    return format_of(path) is not None


def _leads(link: Path) -> str:
    try:
        return f"to {readable(os.readlink(link))}"
    except OSError as exc:
        return exc.strerror or "unreadable"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def doc_id_for(sha256: str) -> str:
    """Stable id from content: the same bytes always get the same id, wherever they live."""
    return sha256[:16]
