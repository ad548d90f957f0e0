"""A worker's stderr: kept in a file, relayed to the run's stderr, and read for a crash's cause.

A worker that dies without an answer used to be reported as "most often at the memory limit",
whatever killed it: an import that failed, a segmentation fault in a C library, the system's
out-of-memory killer. Its own last words say which: Python's last exception, faulthandler's
"Fatal Python error: Segmentation fault" with the stack it died in, C++'s ``std::bad_alloc``
when an allocation passed the address-space cap. ``crash_cause`` reads them; the memory limit is
named only when the worker's words show an allocation failing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

# How much of a crashed worker's output is read for its cause.
TAIL_BYTES = 65_536  # a Rust panic prints a long backtrace after its message
# What allocation failures print, in Python and in the C and C++ libraries workers run.
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|bad_alloc|out of memory|cannot allocate memory|failed to allocate|"
    r"allocation of \d+ bytes failed|malloc\b.*fail",
    re.IGNORECASE,
)
_FATAL = re.compile(r"Fatal Python error: (?P<what>[^\n]+)")
# A frame line of a Python traceback or of faulthandler's stack dump.
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line \d+(?:,)? in (?P<function>\S+)')


# A run's worker outputs live in ``docsym-workers-<pid>-<random>`` under the temporary folder;
# the pid names the run that owns it, so a later run can remove the folders of runs that were
# killed before they could (a killed run's ``TemporaryDirectory`` finaliser never runs).
_PREFIX = "docsym-workers-"


def outputs_folder() -> tempfile.TemporaryDirectory:
    """A folder for this run's worker outputs, after removing those killed runs left behind."""
    remove_abandoned(Path(tempfile.gettempdir()))
    return tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-")


def remove_abandoned(folder: Path) -> None:
    """Remove the output folders whose run is no longer alive (a pid that is alive again, even
    as another program, keeps its folder: only a dead owner's is certainly abandoned)."""
    for path in folder.glob(f"{_PREFIX}*-*"):
        owner = path.name.removeprefix(_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class WorkerOutput:
    """The file a worker writes its stderr to; what it adds is relayed after each message."""

    def __init__(self, folder: Path, name: str) -> None:
        self.path = folder / f"{name}.stderr"
        self.path.touch()
        self._relayed = 0

    def relay(self) -> None:
        """Copy what the worker wrote since the last call to this process's stderr (where a
        progress display shows it above its bar)."""
        with self.path.open("rb") as stream:
            stream.seek(self._relayed)
            new = stream.read()
        self._relayed += len(new)
        if new:
            sys.stderr.write(new.decode("utf-8", "replace"))
            sys.stderr.flush()

    def tail(self) -> str:
        size = self.path.stat().st_size
        with self.path.open("rb") as stream:
            stream.seek(max(0, size - TAIL_BYTES))
            return stream.read().decode("utf-8", "replace")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def crash_cause(exitcode: int | None, tail: str) -> tuple[str, bool]:
    """(what ended a worker that sent no answer, whether an allocation failed), from its exit
    code and the end of its output."""
    out_of_memory = bool(_OUT_OF_MEMORY.search(tail))
    if exitcode is not None and exitcode < 0:
        how = _signal_name(-exitcode)
        if -exitcode == signal.SIGKILL:
            how += " from outside docsym (most often the system's out-of-memory killer: see dmesg)"
    else:
        how = f"exit {exitcode}"
    fatal = _FATAL.search(tail)
    if fatal:
        how += f": {fatal.group('what').strip()}"
    elif last := _last_error(tail):
        how += f": {last}"
    frame = _innermost_frame(tail[fatal.start() :] if fatal else tail)
    if frame:
        how += f" (in {frame})"
    return how, out_of_memory


def _signal_name(number: int) -> str:
    try:
        return f"signal {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


def _last_error(tail: str) -> str | None:
    """The last line that reads like an error: an exception, or a library's message."""
    for line in reversed(tail.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("File ", "Traceback", "^", "~")):
            return line[:300]
    return None


def _innermost_frame(text: str) -> str | None:
    """The module and function of the first frame faulthandler lists (the innermost) or the
    last frame of a traceback: where the worker was when it died."""
    frames = list(_FRAME.finditer(text))
    if not frames:
        return None
    frame = frames[0] if "Fatal Python error" in text else frames[-1]
    path = Path(frame.group("file"))
    module = f"{path.parent.name}/{path.name}" if path.name == "__init__.py" else path.name
    return f"{module}, {frame.group('function')}"
