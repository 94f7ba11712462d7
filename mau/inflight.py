"""Matches in flight: a worker plays up to ``matches_in_flight`` matches at once in one event loop, and a run
is one such loop in this process (``workers: 1``) or one in each of ``workers`` spawned processes fed from
one queue.

A match with model experts waits on its calls; the sim and the harness need little CPU between them (a step of
a match that needs the CPU runs between two awaits). So one process keeps hundreds of calls in flight,
bounded by each endpoint's ``concurrency`` (shared by all the matches of the loop), and processes are left
for CPU-bound work (local models, frames) and Slurm shards. What a match does depends only on its seed and
its own calls' answers, never on what else is in flight: its files are the same alone or among 200
(tests/test_inflight.py).

The work is generic: ``play(item)`` is a coroutine that plays one item and returns its result; ``close()``
runs at the end of each loop (backends close their HTTP clients in the loop that made them). Each worker
sends its results and, every second, its ``Meter`` totals (calls, calls in flight, tokens, USD) to the
parent, which shows them in the progress bar. Worker processes are spawned (clean starts: no copied threads
or CUDA state) and leave Ctrl-C to the parent, which ends them.
"""

from __future__ import annotations

import asyncio
import importlib
import queue as queue_mod
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

METER_EVERY_S = 1.0


@dataclass(frozen=True)
class Engine:
    """Where a worker finds its work, by import path (a spawned process imports it): ``play(item)`` (a
    coroutine function), ``close()`` (a coroutine function run as the loop ends) and ``meter()`` (the
    process's running totals, a dict)."""

    module: str
    play: str = "play_async"
    close: str = "close_async"
    meter: str = "meter_totals"

    def get(self, name: str) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), getattr(self, name))


@dataclass
class Flight:
    """What the parent knows while the run goes on: each worker's latest meter totals."""

    meters: dict[int, dict[str, Any]] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)

    def total(self) -> dict[str, Any]:
        """Summed over workers; ``calls_per_s`` since the run began; ``mean_in_flight`` time-weighted."""
        out: dict[str, Any] = {}
        for m in self.meters.values():
            for k, v in m.items():
                out[k] = out.get(k, 0) + v
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        out["elapsed_s"] = elapsed
        out["calls_per_s"] = out.get("calls", 0) / elapsed
        out["mean_in_flight"] = out.get("in_flight_s", 0.0) / elapsed
        return out


OnDone = Callable[[Any, Any, BaseException | None], None]


class StopTaking(Exception):
    """Raised by ``on_done`` to end a run without cutting it short: no item is started any more, the items in
    flight end (each reported to ``on_done``: a dead server fails them at once, each with its line), then
    ``error`` is raised."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


async def play_many(
    items: Any, in_flight: int, play: Callable[[Any], Awaitable[Any]], on_done: OnDone
) -> None:
    """Play the items of the async iterable ``items`` in order, at most ``in_flight`` at once (the next item
    is pulled only when a slot is free, so other workers get the rest of a shared queue), calling
    ``on_done(item, result, error)`` as each ends. ``StopTaking`` from ``on_done`` (too many failures) starts
    no more items, lets those in flight end, then raises its error; any other exception from ``on_done`` or a
    cancellation (Ctrl-C) cancels the matches still running (each removes its staging folder) and
    propagates."""
    source = items.__aiter__()
    running: dict[asyncio.Task, Any] = {}
    exhausted = False
    stop: StopTaking | None = None
    try:
        while True:
            while stop is None and not exhausted and len(running) < in_flight:
                try:
                    item = await source.__anext__()
                except StopAsyncIteration:
                    exhausted = True
                    break
                running[asyncio.ensure_future(play(item))] = item
            if not running:
                if stop is not None:
                    raise stop.error
                return
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in [t for t in running if t in done]:  # in the order they started
                item = running.pop(task)
                error = task.exception()
                try:
                    on_done(item, None if error else task.result(), error)
                except StopTaking as e:
                    stop = stop or e
    finally:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)


async def _aiter(items: Iterable[Any]) -> Any:
    for item in items:
        yield item


def run_here(items: list[Any], in_flight: int, engine: Engine, on_done: OnDone,
             on_meter: Callable[[dict[str, Any]], None] | None = None) -> None:
    """One event loop in this process (``workers: 1``)."""
    play, close, meter = engine.get("play"), engine.get("close"), engine.get("meter")
    start, flight = meter(), Flight()

    def report() -> None:
        # this run's share of the process's totals (several runs may share a process)
        if on_meter is not None:
            now = meter()
            flight.meters[0] = {k: v if k in LEVELS else v - start.get(k, 0) for k, v in now.items()}
            on_meter(flight.total())

    async def main() -> None:
        ticker = asyncio.ensure_future(_tick(report))
        try:
            await play_many(_aiter(items), in_flight, play, on_done)
        finally:
            ticker.cancel()
            await close()
        report()

    asyncio.run(main())


LEVELS = ("in_flight", "peak_in_flight")  # meter entries that are levels, not running totals


async def _tick(fn: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(METER_EVERY_S)
        fn()


# -- worker processes ----------------------------------------------------------------------------------------
def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the parent, which ends them (a worker that caught it would go on)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def worker_main(wid: int, tasks: Any, results: Any, in_flight: int, engine: Engine) -> None:
    """A worker process: pull (k, item) from ``tasks`` (None: no more) while fewer than ``in_flight`` are
    running, play them in one event loop, send ("done", wid, k, result, error text) and ("meter", wid,
    totals)."""
    from mau.gc_tuning import collect_young_garbage_less_often

    _ignore_sigint()
    collect_young_garbage_less_often()  # a spawned process starts with CPython's default
    play, close, meter = engine.get("play"), engine.get("close"), engine.get("meter")

    async def play_pair(pair: tuple[int, Any]) -> Any:
        return await play(pair[1])

    def done(pair: tuple[int, Any], result: Any, error: BaseException | None) -> None:
        results.put(("done", wid, pair[0], result, None if error is None else f"{type(error).__name__}: "
                                                                              f"{error}"))

    async def pulled() -> Any:
        loop = asyncio.get_running_loop()
        while True:  # a short blocking get in a thread, so the loop is never blocked for long
            try:
                return await loop.run_in_executor(None, tasks.get, True, 0.5)
            except queue_mod.Empty:
                continue

    async def items() -> Any:
        while True:
            item = await pulled()
            if item is None:
                return
            yield item

    async def main() -> None:
        ticker = asyncio.ensure_future(_tick(lambda: results.put(("meter", wid, meter()))))
        try:
            await play_many(items(), in_flight, play_pair, done)
        finally:
            ticker.cancel()
            await close()
            results.put(("meter", wid, meter()))
            results.put(("exit", wid))

    asyncio.run(main())


def run_workers(items: list[Any], workers: int, in_flight: int, engine: Engine, on_done: OnDone,
                on_meter: Callable[[dict[str, Any]], None] | None = None) -> None:
    """``workers`` spawned processes, each its own loop of up to ``in_flight`` matches, fed in the order of
    ``items`` from one queue. ``StopTaking`` from ``on_done`` (too many failures) empties the queue, lets the
    workers end the items they hold (each reported), then raises its error; any other exception from
    ``on_done`` or Ctrl-C ends the workers at once (not after their matches)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for k, item in enumerate(items):
        tasks.put((k, item))
    for _ in range(workers):
        tasks.put(None)
    procs = [ctx.Process(target=worker_main, args=(w, tasks, results, in_flight, engine), daemon=True)
             for w in range(workers)]
    for p in procs:
        p.start()
    flight = Flight()
    alive = set(range(workers))
    stop: StopTaking | None = None
    try:
        while alive:
            try:
                msg = results.get(timeout=1.0)
            except queue_mod.Empty:
                dead = [w for w in alive if not procs[w].is_alive()]
                if dead and results.empty():
                    from mau.errors import MauError

                    raise MauError(f"worker process {dead[0]} died (exit code {procs[dead[0]].exitcode}) "
                                   f"with its "
                                   "matches in flight; finished matches are kept: rerun with "
                                   "--resume") from None
                continue
            if msg[0] == "done":
                _, _, k, result, error = msg
                try:
                    on_done(items[k], result, None if error is None else WorkerError(error))
                except StopTaking as e:
                    if stop is None:
                        stop = e
                        _drain(tasks, workers)
            elif msg[0] == "meter":
                flight.meters[msg[1]] = msg[2]
                if on_meter is not None:
                    on_meter(flight.total())
            elif msg[0] == "exit":
                alive.discard(msg[1])
        if stop is not None:
            raise stop.error
    except BaseException:
        for p in procs:
            if p.is_alive():
                p.terminate()
        raise
    finally:
        for p in procs:
            p.join(timeout=10)
        tasks.cancel_join_thread()
        results.cancel_join_thread()


def _drain(tasks: Any, workers: int) -> None:
    """Take every queued item back, and tell each worker there are no more (it ends those it holds)."""
    while True:
        try:
            tasks.get_nowait()
        except queue_mod.Empty:
            break
    for _ in range(workers):
        tasks.put(None)


class WorkerError(Exception):
    """A match that failed in a worker process: the worker's "Type: message"."""

    def __str__(self) -> str:
        return str(self.args[0])
