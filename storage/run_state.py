"""While an index run goes on: how many of its files are not yet searchable.

A client searching an index that is still being built gets the best of what is there; this lets
the tools add that more is coming. The run records "<process id> <files>" in the index's
bookkeeping (``docsym_meta``) each time it publishes (the directory) or as files are written
(PostgreSQL, one key per run, named by its session's backend process id); a reader counts a
record only while its process is alive, so a killed run leaves no claim that files are coming.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

KEY = "run_waiting"


def value(pid: int, files: int) -> str:
    return f"{pid} {files}"


@dataclass(frozen=True)
class Indexing:
    """What readers know of index runs: whether one is alive, and the files it has not yet
    made searchable."""

    alive: bool = False
    files_waiting: int = 0


def of_record(recorded: str | None) -> Indexing:
    """The run a record names, if it is alive (on this machine)."""
    pid, files = parse(recorded)
    return Indexing(True, files) if _alive(pid) else Indexing()


def parse(recorded: str | None) -> tuple[int, int]:
    """(process id, files) of a record; (0, 0) if there is none."""
    try:
        pid, files = (recorded or "").split()
        return int(pid), int(files)
    except ValueError:
        return 0, 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
