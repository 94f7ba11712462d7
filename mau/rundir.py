"""Run folders shared by several processes (the shards of one run), and playing their matches in parallel."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

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


def run_parallel(fn: Callable[..., Any], args: list[tuple], workers: int, done: Callable[[Any], None]) -> None:
    """Call ``fn(*a)`` for every ``a``: in this process with one worker, else in ``workers`` spawned processes
    (clean starts: no copied threads, no inherited CUDA state); ``done`` gets each result as it arrives."""
    if workers == 1 or len(args) <= 1:
        for a in args:
            done(fn(*a))
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(min(workers, len(args)), mp_context=mp.get_context("spawn")) as pool:
        running = {pool.submit(fn, *a) for a in args}
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                done(f.result())
