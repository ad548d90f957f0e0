"""``docsym index --watch``: an index kept current with folders while files are saved, moved,
renamed and deleted, by one indexing session (``indexer/session.py``) that lives as long.

The folders are watched with ``watchfiles`` (the operating system's file events, through Rust's
notify), and read whole again every ``DOCSYM_WATCH_RESCAN_SECONDS`` in case an event was lost (a
network drive, an overflowing queue); that rescan reads again only the files whose size or times
changed since they were last read, while a path's event always reads it. A changed path waits
until nothing has touched it for ``DOCSYM_WATCH_SETTLE_SECONDS``, so a file still being copied
or downloaded is read once it is whole; a file that changes while it is read is read again by
the pass itself. In each batch the paths still there are indexed first, so a moved or renamed
file is found by its content and only its path is rewritten; then documents whose files are gone
are removed, but only under a watched folder that is still there: a folder that disappears (an
unmounted drive) removes nothing, and is watched again, and read, when it comes back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docsym.indexer.report import IndexReport, Progress
from docsym.indexer.session import IndexSession
from docsym.runtime.formats import format_of
from docsym.storage.file_names import readable

log = logging.getLogger(__name__)

TICK_MS = 1_000  # how often the watch loop wakes without events (publish, vectors, settling)


@dataclass
class _Pending:
    """Paths that changed, each with when it last did."""

    changed: dict[Path, float] = field(default_factory=dict)

    def add(self, path: Path, now: float) -> None:
        self.changed[path] = now

    def settled(self, now: float, seconds: float) -> list[Path]:
        """The paths untouched for ``seconds``, taken out of the pending set."""
        ready = [p for p, when in self.changed.items() if now - when >= seconds]
        for path in ready:
            del self.changed[path]
        return ready


class Watcher:
    """Keeps ``session``'s store current with ``roots`` until ``stop`` is set; ``on_pass``
    hears each pass's report."""

    def __init__(
        self,
        session: IndexSession,
        roots: list[Path],
        *,
        settle_seconds: float,
        rescan_seconds: float,
        progress: Progress | None = None,
        on_pass: Callable[[IndexReport], None] = lambda report: None,
        say: Callable[[str], None] = log.warning,
        stop: threading.Event | None = None,
    ) -> None:
        """``say`` hears what the user should know: a watched folder gone, or back."""
        self.session = session
        self.roots = [root.expanduser().absolute() for root in roots]
        self.settle_seconds = settle_seconds
        self.rescan_seconds = rescan_seconds
        self.progress = progress
        self.on_pass = on_pass
        self.say = say
        self.stop = stop or threading.Event()
        self._pending = _Pending()
        self._last_scan = 0.0

    def run(self) -> None:
        """Index the folders, then follow them: each time the folders present change (one
        went away, or came back), the watch starts again on those present."""
        watched = list(self.roots)
        while not self.stop.is_set():
            present = self._present()
            self._tell_changes(watched, present)
            watched = present
            if not present:
                self._rescan(present)
                self.stop.wait(TICK_MS / 1000)
                continue
            events = self._events(present)
            # The watch is set once it first wakes: a file saved while the folders are read
            # whole is then an event, not left for the next rescan.
            next(events, None)
            self._rescan(present)
            for changes in events:
                now = time.monotonic()
                for path in changes:
                    self._pending.add(path, now)
                self.session.idle()
                self._apply(self._pending.settled(now, self.settle_seconds), present)
                if now - self._last_scan >= self.rescan_seconds:
                    self._rescan(present)
                if self._present() != present:
                    break  # a folder went away or came back: watch those present now

    def _events(self, present: list[Path]) -> Iterator[set[Path]]:
        """Sets of changed paths, and an empty set each tick without any."""
        import watchfiles

        for changes in watchfiles.watch(
            *present,
            stop_event=self.stop,
            yield_on_timeout=True,
            rust_timeout=TICK_MS,
            debounce=TICK_MS,
            ignore_permission_denied=True,
            raise_interrupt=False,
        ):
            yield {Path(path) for _, path in changes}

    def _tell_changes(self, before: list[Path], now: list[Path]) -> None:
        for root in before:
            if root not in now:
                self.say(f"watched folder {readable(root)} is gone: its documents are kept")
        for root in now:
            if root not in before:
                self.say(f"watched folder {readable(root)} is back: reading it again")

    def _present(self) -> list[Path]:
        return [root for root in self.roots if root.is_dir()]

    def _rescan(self, present: list[Path]) -> None:
        """Read every present folder whole: what the events missed is indexed, what went
        away removed. A file whose size and times are as when it was last read is not read
        again (a changed path's event is what reads it), so a rescan of a large library costs
        a walk and a stat per file, not its bytes."""
        self._last_scan = time.monotonic()
        if present:
            self._pass(present)

    def _apply(self, changed: list[Path], present: list[Path]) -> None:
        """Index the changed paths still there (folders whole, files docsym reads), then
        remove what is gone under the folders present."""
        if not changed:
            return
        there = [p for p in changed if _readable_change(p, present)]
        gone = [p for p in changed if not p.exists()]
        # The files named are read again; a folder named (its times or mode changed) is walked
        # trusting its files' stat: a file that changed there has an event of its own.
        self.session.forget_hashes(changed)
        if there or gone:
            self._pass(there, prune=bool(gone), present=present)

    def _pass(
        self, paths: list[Path], prune: bool = True, present: list[Path] | None = None
    ) -> None:
        """A pass over ``paths``, reading only the files whose stat changed since the session
        read them (``_apply`` has those named by events forgotten first)."""
        roots = present if present is not None else paths
        try:
            report = self.session.index(
                paths,
                prune=prune,
                roots=roots,
                progress=self.progress,
                trust_unchanged=True,
            )
        except FileNotFoundError as exc:  # went away between the event and the pass
            log.debug("a watched path went away: %s", exc)
            return
        self.on_pass(report)


def _readable_change(path: Path, roots: list[Path]) -> bool:
    """A changed path worth a pass: a folder (its files are walked), or a file docsym reads,
    not hidden below its watched folder (editors' and downloads' temporary files are)."""
    root = next((r for r in roots if path.is_relative_to(r)), None)
    inside = path.relative_to(root).parts if root is not None else path.parts
    if any(part.startswith(".") for part in inside):
        return False
    if path.is_dir():
        return True
    return path.is_file() and format_of(path) is not None
