"""Bounds a worker process sets on itself: the memory it may map, and dying with its parent.

Client SQL (``storage/sql_worker.py``) and document parsing (``indexer/workers.py``) run in
worker processes because a thread cannot be stopped inside a C call and ``MemoryError`` is not
raised for memory a library maps itself; the kernel bounds a process for sure.
"""

from __future__ import annotations

import contextlib
import ctypes
import resource
import signal
import sys

MB = 2**20
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def mapped_mb() -> int:
    """Address space mapped by this process now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize() // MB


def resident_mb() -> int:
    """Resident memory now: a library may keep what one big call used, so pools recycle."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // MB


def cap_address_space(budget_mb: int, *, final: bool = True) -> int:
    """Allow what is mapped now (interpreter, libraries, models) plus ``budget_mb``; past it,
    allocations fail in this process (``MemoryError``, or the library's own error). A ``final``
    cap cannot be raised again; otherwise the process may set a new one later (after loading
    a library it needs, say). Returns the cap in MB."""
    cap = (mapped_mb() + budget_mb) * MB
    hard = cap if final else resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap // MB


def lift_address_cap() -> None:
    """Undo a cap that was not final (to load a library the next task needs)."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def give_back_free_memory() -> None:
    """Return the heap's free pages to the system (glibc keeps them after a large document's
    objects are freed: a worker stayed at 580 MB after the 10-K until its next file)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # not glibc
            ctypes.CDLL(None).malloc_trim(0)


def die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (Linux), so a killed run leaves
    no worker behind. Elsewhere a worker notices when its pipe to the parent closes."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
