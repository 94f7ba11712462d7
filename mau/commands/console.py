"""A quiet console for a long verb of several stages (``mau quickstart``): the user sees one progress bar per
stage with its ETA and the verb's own result lines; everything else (the stages' own lines, library warnings,
progress bars of transformers and datasets, the spawned workers' output) goes to a log file in the run folder.

Where stdout is a real file descriptor, file descriptors 1 and 2 are pointed at the log (so child processes
and C libraries write there too) and the console is a duplicate of the original stdout; otherwise (a test's
captured stdout) ``sys.stdout`` and ``sys.stderr`` are swapped for the log. ``quiet=False`` keeps everything
on the console (the bars as well). The bars are ``tqdm`` bars drawn from a poll function (done, total) read
every half second, so a stage needs no hook into the code it runs: it counts what that code leaves on disk.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

Poll = Callable[[], tuple[float, float]]  # (units done, units in all; 0 while unknown)


class QuietConsole:
    """``with QuietConsole(log) as c: c.print(...); with c.stage("[1/5] ...", poll, "matches"): ...``"""

    def __init__(self, log: Path, quiet: bool = True, progress: bool = True):
        self.log_path = Path(log)
        self.quiet = quiet
        self.progress = progress
        self.console: TextIO = sys.stdout
        self._saved: tuple[int, int] | None = None
        self._swapped: tuple[Any, Any] | None = None
        self._log: TextIO | None = None

    def __enter__(self) -> QuietConsole:
        if not self.quiet:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "a", buffering=1)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            out_fd = sys.stdout.fileno()
            sys.stderr.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            out_fd = None
        if out_fd is not None:
            self._saved = (os.dup(1), os.dup(2))
            self.console = os.fdopen(os.dup(out_fd), "w", buffering=1)
            os.dup2(self._log.fileno(), 1)
            os.dup2(self._log.fileno(), 2)
        else:  # a captured stdout (tests): Python-level only
            self.console = sys.stdout
            self._swapped = (sys.stdout, sys.stderr)
            sys.stdout = sys.stderr = self._log
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if not self.quiet:
            return
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if self._saved is not None:
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            for fd in self._saved:
                os.close(fd)
            self.console.close()
        if self._swapped is not None:
            sys.stdout, sys.stderr = self._swapped
        # The log stays open in the swapped case: a library handler created meanwhile may still hold it.
        if self._saved is not None and self._log is not None:
            self._log.close()
        if kind is not None and kind is not KeyboardInterrupt:
            print(f"(every line of the run, the error's traceback included: "
                  f"{self.log_path})", file=sys.stderr)

    def print(self, text: str = "") -> None:
        """A line for the user (and the log)."""
        print(text, file=self.console, flush=True)
        if self._log is not None and not self._log.closed:
            print(text, file=self._log, flush=True)

    def stage(self, desc: str, poll: Poll, unit: str) -> Stage:
        return Stage(self, desc, poll, unit)


class Stage:
    """One progress bar, updated from ``poll`` in a thread until the ``with`` block ends. Without progress
    bars (``--no-progress``) one line at the end: what was done and how long it took."""

    def __init__(self, owner: QuietConsole, desc: str, poll: Poll, unit: str):
        self.owner, self.desc, self.poll, self.unit = owner, desc, poll, unit
        self._stop = threading.Event()
        self._bar: Any = None
        self._thread: threading.Thread | None = None
        self.t0 = 0.0
        self.live = bool(getattr(owner.console, "isatty", lambda: False)())

    def _read(self) -> tuple[float, float]:
        try:
            return self.poll()
        except Exception:  # a folder being written: the next poll reads it
            return (0.0, 0.0)

    def _update(self) -> None:
        done, total = self._read()
        if total and self._bar.total != total:
            self._bar.total = total
        self._bar.n = min(done, total) if total else done
        self._bar.refresh()

    def _loop(self) -> None:
        # a log or a pipe gets a redraw every 30 s, a terminal twice a second
        every = 0.5 if self.live else 30.0
        while not self._stop.wait(every):
            self._update()

    def __enter__(self) -> Stage:
        self.t0 = time.perf_counter()
        if self.owner.progress:
            from tqdm import tqdm

            done, total = self._read()
            self._bar = tqdm(
                total=total or None, initial=done, desc=self.desc, unit=self.unit, file=self.owner.console,
                dynamic_ncols=self.live, ncols=None if self.live else 110, mininterval=0.5,
                bar_format="{desc} {percentage:3.0f}%|{bar:20}| {n:.0f}/{total_fmt} {unit} "
                "[{elapsed}<{remaining}]",
            )
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._update()
            if kind is None and self._bar.total:
                self._bar.n = self._bar.total
            self._bar.close()
        elif kind is None:
            done, _ = self._read()
            self.owner.print(f"{self.desc}: {done:.0f} {self.unit} in {time.perf_counter() - self.t0:.0f} s")
        log = self.owner._log
        if log is not None and not log.closed:
            print(f"== {self.desc}: {time.perf_counter() - self.t0:.1f} s", file=log, flush=True)
