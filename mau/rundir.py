"""Run folders shared by several processes (the shards of one run)."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

LOCK_FILE = ".init.lock"


@contextmanager
def init_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out`` while its run folder is created or checked: shards that start together
    take turns, so exactly one creates the folder and the others join it."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
