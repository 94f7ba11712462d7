"""Helpers importable by tests (conftest holds the fixtures)."""

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from mau import schema as F
from tests.conftest import events_of, make_world, park_everyone, place, roles  # noqa: F401


def finished_matches(run: Path) -> list[str]:
    """The finished match folders of a run (those with a header), sorted."""
    return sorted(p.parent.name for p in (run / F.MATCHES_DIR).glob(f"*/{F.MATCH_HEADER}"))


def kill_group_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float,
                    why: Callable[[], str] = lambda: "") -> None:
    """Wait until ``ready()`` (the process must still run meanwhile), then SIGKILL its whole process group: a
    run killed mid-way, as by a scheduler or the OOM killer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, why()
        if ready():
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
