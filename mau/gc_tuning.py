"""The garbage collector's young-generation threshold for a process that plays matches.

A match makes and drops tens of thousands of small containers (observations, their lists and dicts, parsed
model answers), nearly all freed by reference counting the moment they are dropped. CPython's collector still
walks the young generation every 700 container allocations (its default threshold), and at each tenth and
hundredth walk the older generations too, over objects that are still in use. `mau bench env` prints the
collector's time within its 30 matches (``gc_seconds``) and the threshold it ran at: under 0.01 s at 10,000,
against 0.05-0.07 s at CPython's 700 (the same bench without the CLI: ``python -c "from mau.commands.bench
import bench_env; print(bench_env(30, 10, 0))"``), of about 1.3 s. Cyclic garbage is still collected, in
larger batches: a few thousand more objects wait for it at most.

Set once per process by the verbs that play matches (``mau.cli``) and by collect and eval workers
(``mau.inflight.worker_main``); never inside a library call, which would change its caller's process.
"""

from __future__ import annotations

import gc

MATCH_GC_THRESHOLD = 10_000


def collect_young_garbage_less_often(threshold: int = MATCH_GC_THRESHOLD) -> None:
    """Raise the young generation's threshold to ``threshold``; the older generations' are kept. A collector
    that is off (threshold 0) or already less eager is left as it is."""
    young, *older = gc.get_threshold()
    if young and young < threshold:
        gc.set_threshold(threshold, *older)
