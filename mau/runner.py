"""The match runner shared by every run of matches (collect's grid, eval's arms): one planned-match type, one
coroutine that plays it into a match folder, one owner of backends, and the run loop with its progress bar:
each worker (this process, or ``workers`` spawned processes) plays up to ``matches_in_flight`` matches at
once in one event loop (mau/inflight.py), in an order that keeps matches of one model together (a worker
loads a local model once, docs/collect.md).

How it stops (docs/formats.md, "Stopping and resuming"): Ctrl-C cancels the queued matches at once and ends
the matches in flight (their staging folders are removed by the next ``--resume``); every finished match
folder is kept. A match that raises counts as failed: the run stops early once more than ``max_failures``
matches failed, and ``--resume`` plays the failed ones again.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, NamedTuple

from pydantic import Field, field_validator, model_validator

from mau import schema as F
from mau.config import Model
from mau.env.config import WorldConfig
from mau.errors import MauError
from mau.harness.config import SeatConfig


@dataclass(frozen=True)
class PlannedMatch:
    """One match of a run: who sits where, on which world and seed, and the fields its header adds (the grid
    line, the eval arm). Sent to worker processes as it is (pydantic models pickle)."""

    index: int
    match_id: str
    seed: int
    seats: dict[str, SeatConfig]
    world: WorldConfig
    header: dict[str, Any] = field(default_factory=dict)


class RunConfig(Model):
    """The fields every run of matches has (collect, eval): where, resume, which shard, how many workers."""

    out: str | None = Field(None, description="Run folder; default runs/<verb>/<date>/<time>_<config name>.")
    resume: bool = Field(False, description="Continue a run in an existing run folder (plays only the "
                                            "missing matches; required for every shard after the first).")
    shard: str | None = Field(None, description="I/N: play only the matches k with k % N == I.")
    workers: int = Field(1, ge=1, description="Worker processes (1: this process). For CPU-bound matches: "
                                              "local models, frames; model servers are better served by "
                                              "matches_in_flight.")
    matches_in_flight: int = Field(1, ge=1, description="Matches each worker plays at once in one event loop "
                                                        "(their calls overlap, under each endpoint's "
                                                        "concurrency limit): tens to hundreds for API or "
                                                        "vLLM experts (docs/collect.md); 1 for local models.")


class MatchDone(NamedTuple):
    """What a played match reports back to the run."""

    match_id: str
    outcome: str
    calls: int
    fallbacks: int
    tokens: int
    cost: float
    wall_s: float


class MatchConfig(Model):
    """What a match folder of a run records as its config: its seats and its world."""

    seats: dict[str, Any]
    world: WorldConfig


# -- one match of `mau play` --------------------------------------------------------------------------------
def _default_seats() -> dict[str, SeatConfig]:
    return {F.CREWMATE: SeatConfig(), F.IMPOSTER: SeatConfig()}


class PlayConfig(Model):
    """``mau play``: one match."""

    seed: int = Field(0, description="Match seed: roles, missions and every scripted choice follow from it.")
    out: str | None = Field(None, description="Match folder; default runs/play/<date>/<time>_seed<N>.")
    resume: bool = Field(False, description="Allow --out to be a finished match folder (it is kept as it "
                                            "is).")
    policy: Literal["scripted", "aria"] = Field(
        "scripted", description="scripted: the scripted policy, no harness; aria: ARIA agents calling each "
                                "seat's model.")
    state_mode: Literal["ego", "privileged"] = Field("ego", description="scripted policy: observation state "
                                                                        "mode.")
    seats: dict[str, SeatConfig] = Field(
        default_factory=_default_seats,
        description="aria: the model and harness of each side ('crewmate', 'imposter'), or of one player by "
                    "name.")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The world: backend, map, rules, "
                                                                        "frames.")

    @field_validator("seats")
    @classmethod
    def _both_sides(cls, v: dict[str, SeatConfig]) -> dict[str, SeatConfig]:
        missing = [k for k in F.ROLE_NAMES if k not in v]
        if missing:
            raise ValueError(f"seats needs a '{missing[0]}' entry (the model of that side)")
        return v

    @model_validator(mode="after")
    def _known_seats(self) -> "PlayConfig":
        names = {p.name for p in self.world.game.players}
        unknown = [k for k in self.seats if k not in F.ROLE_NAMES and k not in names]
        if unknown:
            raise ValueError(f"seats.{unknown[0]}: not a side (crewmate, imposter) nor a player's name; fix "
                             f"the key")
        return self


# -- backends: one owner -------------------------------------------------------------------------------------
BACKENDS: dict[str, Any] = {}  # per process: a loaded local model is reused by every match of the worker
_IN_USE: dict[str, int] = {}  # backend key -> matches in flight that use it


def backend_for(model_cfg: Any, workers: int = 1) -> Any:
    """The worker's backend for ``model_cfg`` (made once per process, shared by the matches in flight). The
    endpoint's concurrency limit is split between the worker processes so that together they never exceed
    it."""
    from mau.harness.backends import make_backend

    key = model_cfg.model_dump_json()
    if key not in BACKENDS:
        per_worker = model_cfg.model_copy(update={"concurrency": max(1, model_cfg.concurrency // workers)})
        BACKENDS[key] = make_backend(per_worker)
    return BACKENDS[key]


def release_unused(model_cfgs: Iterable[Any]) -> None:
    """Free the worker's cached backends that neither the next match nor a match in flight uses (their local
    weights): a worker keeps loaded only what its matches share."""
    keep = {m.model_dump_json() for m in model_cfgs} | {k for k, n in _IN_USE.items() if n > 0}
    for key, backend in BACKENDS.items():
        if key not in keep:
            backend.release()


def seat_models(seats: dict[str, SeatConfig]) -> list[Any]:
    """Every model a match's seats may call: each seat's model, and its rest_model where it answers only
    some."""
    out = [s.model for s in seats.values()]
    out += [s.rest_model for s in seats.values() if s.modules is not None]
    return out


def model_order(pm: PlannedMatch) -> list[tuple[str, str]]:
    """Sort key of a run's matches: the local base models they load (hf, lm). Sorted by it (stably), a worker
    meets each base in one stretch and loads it once; its adapters share that load (mau.harness.backends.hf),
    so
    an eval's arms on one base keep their plan order (seed-major), and runs without local models keep
    theirs."""
    return sorted({(m.backend, m.model) for m in seat_models(pm.seats) if m.backend in LOCAL_BACKENDS})


LOCAL_BACKENDS = ("hf", "lm")  # backends that load weights into the worker


async def play_and_close(match: Any, seed: int, backends: Iterable[Any]) -> Any:
    """Play ``match``, then close the backends in the same event loop (their HTTP clients belong to it)."""
    try:
        return await match.play(seed)
    finally:
        for b in backends:
            await b.aclose()


def scripted_policies(cfg: PlayConfig, game_map: Any) -> dict[str, Any]:
    """``mau play``'s scripted policy for every seat: each player's temperament (or imposter rung) from the
    scripted model of its seat (its name, else its side's: ``seats.imposter.model.model: scripted-quiet``)."""
    from mau.env.rules import imposters_of
    from mau.env.scripted import ScriptedPolicy, read_likelihood, temperament_of

    imposters = set(imposters_of(cfg.world.game, cfg.seed))
    out = {}
    for p in cfg.world.game.players:
        seat = cfg.seats.get(p.name) or cfg.seats[F.IMPOSTER if p.name in imposters else F.CREWMATE]
        scripted = seat.model.backend == "scripted"
        m = seat.model
        out[p.name] = ScriptedPolicy(p.name, game_map, cfg.seed,
                                     temperament_of(m.model) if scripted else "expert",
                                     params=read_likelihood(m.likelihood, "likelihood"),
                                     claims=cfg.world.claims,
                                     plans_against=read_likelihood(m.plans_against, "plans_against"))
    return out


class Played(NamedTuple):
    """What ``play_one`` played: the result, the match folder, and a summary for one printed line."""

    result: Any  # mau.env.runner.MatchResult
    folder: Path
    summary: dict[str, Any]


def play_one(cfg: PlayConfig, out: Path, progress: bool = False) -> Played:
    """Play the match of ``cfg`` into the match folder ``out`` (it appears whole, by one rename): ARIA agents
    in every seat (``policy: aria``, each seat's backend made for this match and closed after it) or the
    scripted policy. ``mau play`` and every bench that needs a match call this, never the verb."""
    from mau.env.backends import make_world
    from mau.env.runner import play_match, write_match
    from mau.matchdir import MatchWriter
    from mau.provenance import provenance

    world = make_world(cfg.world)
    writer = MatchWriter(out)
    extra: dict[str, Any] = {}
    try:
        if cfg.policy == "aria":
            from mau.harness.backends import make_backend
            from mau.harness.match import AriaMatch

            backends = {k: make_backend(s.model) for k, s in cfg.seats.items()}
            match = AriaMatch(world, cfg.seats, backends, writer.staging, out.name, progress=progress)
            result = asyncio.run(play_and_close(match, cfg.seed, backends.values()))
            extra = match.header_extra()
        else:
            policies = scripted_policies(cfg, world.map)
            result = play_match(
                world, policies, cfg.seed, cfg.state_mode, writer, frames=cfg.world.frames.save,
                topdown=cfg.world.frames.topdown,
            )
        folder = write_match(writer, world, result, cfg, provenance(), extra)
    except BaseException:
        writer.abort()
        getattr(world, "close", lambda: None)()  # a backend with a process (minecraft) ends it now
        raise
    st = world.state
    summary = {
        "ejections": len(st.ejections), "kills": sum(1 for p in st.players if p.death_tick is not None),
        "meetings": st.meetings_held,
    }
    if extra:
        summary.update(calls=extra["calls"]["calls"], fallbacks=extra["calls"]["fallbacks"])
    return Played(result, folder, summary)


class Job(NamedTuple):
    """One match for a worker: the plan, where its folder goes, how many workers share the endpoints."""

    pm: PlannedMatch
    matches_dir: str
    workers: int = 1


_PROVENANCE: dict[str, Any] = {}


def worker_provenance() -> dict[str, Any]:
    """The provenance of a match of this worker: git and package versions read once per process (two git
    processes and the package metadata per match cost more CPU than a match's calls), the time now."""
    import datetime as dt

    from mau.provenance import provenance

    if not _PROVENANCE:
        _PROVENANCE.update(provenance())
    return {**_PROVENANCE, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


async def play_async(job: Job) -> MatchDone:
    """Play one planned ARIA match into ``matches_dir/<match_id>`` (it appears whole, by one rename) in the
    running event loop, beside the worker's other matches in flight; the backends are the worker's (closed by
    ``close_async`` when the loop ends)."""
    pm = job.pm
    models = seat_models(pm.seats)
    release_unused(models)
    keys = [m.model_dump_json() for m in models]
    for k in keys:
        _IN_USE[k] = _IN_USE.get(k, 0) + 1
    try:
        return await _play_job(job)
    finally:
        for k in keys:
            _IN_USE[k] -= 1


async def _play_job(job: Job) -> MatchDone:
    from mau.env.backends import make_world
    from mau.env.runner import write_match
    from mau.harness.match import AriaMatch
    from mau.matchdir import MatchWriter

    pm = job.pm
    backends = {side: backend_for(seat.model, job.workers) for side, seat in pm.seats.items()}
    rest = {side: backend_for(seat.rest_model, job.workers) for side, seat in pm.seats.items()
            if seat.modules is not None}
    world = make_world(pm.world)
    writer = MatchWriter(Path(job.matches_dir) / pm.match_id)
    match = AriaMatch(world, pm.seats, backends, writer.staging, pm.match_id, rest_backends=rest)
    try:
        result = await match.play(pm.seed)
        write_match(writer, world, result, MatchConfig(seats=pm.seats, world=pm.world), worker_provenance(),
                    {**match.header_extra(), **pm.header})
    except BaseException:
        writer.abort()
        match.end_backends()
        getattr(world, "close", lambda: None)()  # a backend with a process (minecraft) ends it now
        raise
    calls = match.log.summary()
    return MatchDone(
        pm.match_id, result.outcome, calls["calls"], calls["fallbacks"],
        calls["prompt_tokens"] + calls["completion_tokens"], calls["cost_usd"], result.wall_seconds,
    )


async def close_async() -> None:
    """The end of a worker's event loop: every cached backend closes what belongs to the loop (HTTP clients);
    local weights stay loaded for the next loop of the process."""
    for b in BACKENDS.values():
        await b.aclose()


def meter_totals() -> dict[str, Any]:
    """The worker's running totals of calls (mau.harness.calls.METER), with the local loads it made."""
    from mau.harness.backends.base import LOADS
    from mau.harness.calls import METER

    return {**METER.totals(), "loads": len(LOADS)}


def play_planned(pm: PlannedMatch, matches_dir: str, workers: int = 1) -> MatchDone:
    """Play one planned match in an event loop of its own (then close the worker's backends)."""
    async def one() -> MatchDone:
        try:
            return await play_async(Job(pm, matches_dir, workers))
        finally:
            await close_async()

    return asyncio.run(one())


def pending(matches_dir: Path, mine: list[Any]) -> list[Any]:
    """The matches of ``mine`` (anything with a ``match_id``) without a finished folder; leftovers of killed
    attempts (``.<match_id>.partial-XXXX``) of these matches are removed, those of other shards left alone."""
    ids = {m.match_id for m in mine}
    if matches_dir.is_dir():
        for p in matches_dir.iterdir():
            if p.name.startswith(".") and ".partial-" in p.name and p.name[1:].split(".partial-")[0] in ids:
                shutil.rmtree(p, ignore_errors=True)
    return pending_readonly(matches_dir, mine)


# -- the run -------------------------------------------------------------------------------------------------
@dataclass
class RunProgress:
    """Totals of the matches played now, and the failures."""

    done: list[MatchDone] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (match_id, error)
    meter: dict[str, Any] = field(default_factory=dict)  # the workers' call totals now (mau.inflight.Flight)
    spawned: int = 0  # worker processes started (0: the matches ran in this process)

    def total(self, key: str) -> float:
        return sum(getattr(d, key) for d in self.done)


def error_text(error: BaseException) -> str:
    from mau.inflight import WorkerError

    return str(error) if isinstance(error, WorkerError) else f"{type(error).__name__}: {error}"


def run_matches(todo: list[PlannedMatch], matches_dir: Path, *, workers: int = 1, max_failures: int = 0,
                bar: Any = None, postfix: Callable[[RunProgress], dict[str, Any]] | None = None,
                in_flight: int = 1) -> RunProgress:
    """Play ``todo`` (in this process with one worker, else in ``workers`` spawned processes), each worker up
    to ``in_flight`` matches at once, in model order (``model_order``), updating ``bar`` as matches finish
    and its meter every second. Ctrl-C (KeyboardInterrupt) cancels the queued matches, ends the running ones
    and
    propagates; once more than ``max_failures`` matches failed no match is started, those in flight end (each
    failure its line), and the run stops with a MauError naming the first failure."""
    from mau.inflight import Engine, run_here, run_workers

    prog = RunProgress()

    def finished(job: Job, result: MatchDone | None, error: BaseException | None) -> None:
        pm = job.pm
        if error is not None:
            text = error_text(error)
            prog.failed.append((pm.match_id, text))
            print(f"match {pm.match_id} failed: {text}", file=sys.stderr, flush=True)
            if len(prog.failed) > max_failures:  # no new match; those in flight end, each with its line
                from mau.inflight import StopTaking

                raise StopTaking(TooManyFailures())
            return
        prog.done.append(result)
        if bar is not None:
            if postfix is not None:
                bar.set_postfix(**postfix(prog), refresh=False)
            bar.update(1)

    def metered(totals: dict[str, Any]) -> None:
        prog.meter = totals
        if bar is not None and postfix is not None:
            bar.set_postfix(**postfix(prog))

    ordered = sorted(todo, key=model_order)
    workers = max(1, min(workers, len(todo)))
    jobs = [Job(pm, str(matches_dir), workers) for pm in ordered]
    engine = Engine("mau.runner")
    try:
        if workers == 1:
            from mau.harness.calls import METER

            METER.peak_in_flight = METER.in_flight  # this run's peak (a test or a bench may run several)
            run_here(jobs, in_flight, engine, finished, metered)
        else:
            prog.spawned = workers
            run_workers(jobs, workers, in_flight, engine, finished, metered)
    except TooManyFailures:
        first = prog.failed[0]
        raise MauError(f"{len(prog.failed)} matches failed (--max-failures {max_failures}); the first: "
                       f"{first[0]}: {first[1]}. Finished matches are kept; fix the cause and rerun with "
                       "--resume") from None
    return prog


class TooManyFailures(Exception):
    """More matches failed than ``max_failures``: the run takes no new match and stops once those in flight
    end."""


def parse_shard(text: str | None) -> tuple[int, int]:
    """'I/N' -> (I, N); None -> (0, 1)."""
    import re

    if text is None:
        return 0, 1
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"shard {text!r}: write it as I/N with 0 <= I < N, e.g. 0/8")
    return int(m.group(1)), int(m.group(2))


class ShardRun(NamedTuple):
    """What one shard of a run played now."""

    shard: int
    n_shards: int
    mine: list[PlannedMatch]
    todo: list[PlannedMatch]
    progress: RunProgress


def shard_of(planned: list[PlannedMatch], shard_text: str | None) -> tuple[int, int, list[PlannedMatch]]:
    """This shard's matches: match k belongs to shard k % N (every match in exactly one shard, balanced)."""
    from mau.errors import ConfigError

    try:
        shard, n_shards = parse_shard(shard_text)
    except ValueError as e:
        raise ConfigError(f"--shard: {e}") from None
    return shard, n_shards, [pm for pm in planned if pm.index % n_shards == shard]


def play_shard(planned: list[PlannedMatch], run_dir: Path, shard_text: str | None, workers: int, opts: Any,
               desc: str, postfix: Callable[[RunProgress], dict[str, Any]], in_flight: int = 1) -> ShardRun:
    """Play this shard's matches that have no folder yet under ``run_dir/matches``, with a progress bar."""
    from tqdm import tqdm

    shard, n_shards, mine = shard_of(planned, shard_text)
    matches_dir = run_dir / F.MATCHES_DIR
    todo = pending(matches_dir, mine)
    bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=f"{desc} shard {shard}/{n_shards}",
               unit="match", disable=not opts.progress, dynamic_ncols=True)
    try:
        prog = run_matches(todo, matches_dir, workers=workers, max_failures=opts.max_failures, bar=bar,
                           postfix=postfix, in_flight=in_flight)
    except KeyboardInterrupt:
        bar.close()
        print(f"{desc}: interrupted; the finished matches are kept in {matches_dir}; rerun with --resume to "
              "play the rest", file=sys.stderr, flush=True)
        raise
    finally:
        bar.close()
    if prog.failed:
        print(f"{desc}: {len(prog.failed)} matches failed (within --max-failures {opts.max_failures}); rerun "
              "with --resume to play them again", file=sys.stderr, flush=True)
    return ShardRun(shard, n_shards, mine, todo, prog)


# -- --dry-run: the plan and what it will cost ---------------------------------------------------------------
# Per-call figures measured on one ARIA match of the scripted expert (configs/play/aria_scripted.yaml, seed 1:
# 47 steps, 547 calls, 493 frames, 6.3 MB on disk); docs/formats.md says how the estimate is made.
CALLS_PER_PLAYER_STEP = 1.45
PROMPT_CHARS_PER_CALL = 2460  # about 4 characters a token
IMAGES_PER_CALL = 1.26
BYTES_PER_CALL_640X360 = 11_500


def local_loads(todo: list[PlannedMatch], workers: int) -> int:
    """Local model loads (hf, lm) the run makes at most: each worker loads each base it meets once (matches in
    model order, adapters sharing their base), and no more workers than matches of a base meet it."""
    per_base: dict[tuple[str, str], int] = {}
    for pm in todo:
        for base in model_order(pm):
            per_base[base] = per_base.get(base, 0) + 1
    return sum(min(max(1, workers), n) for n in per_base.values())


def estimate(todo: list[PlannedMatch], workers: int = 1) -> dict[str, Any]:
    """Upper bounds for ``todo``: every match runs its whole step budget and every answer uses the seat's
    max_tokens; calls and disk from the per-call figures above, image tokens at one per 32x32 pixels; local
    model loads by ``local_loads``."""
    calls = prompt = completion = cost = disk = 0.0
    for pm in todo:
        g, fr = pm.world.game, pm.world.frames
        n_calls = CALLS_PER_PLAYER_STEP * g.num_players * g.max_steps
        image_tokens = (fr.width // 32) * (fr.height // 32)
        per_call_prompt = PROMPT_CHARS_PER_CALL / 4 + IMAGES_PER_CALL * image_tokens
        for side, share in ((F.CREWMATE, g.num_crewmates / g.num_players),
                            (F.IMPOSTER, g.num_imposters / g.num_players)):
            m = pm.seats[side].model
            c = n_calls * share
            prompt += c * per_call_prompt
            completion += c * m.max_tokens
            cost += (
                c
                * (per_call_prompt * m.price_prompt_per_mtok + m.max_tokens * m.price_completion_per_mtok)
                / 1e6
            )
        calls += n_calls
        disk += n_calls * BYTES_PER_CALL_640X360 * (fr.width * fr.height) / (640 * 360)
    return {"matches": len(todo), "calls_at_most": int(calls), "prompt_tokens_at_most": int(prompt),
            "completion_tokens_at_most": int(completion), "cost_usd_at_most": round(cost, 2),
            "disk_gb_at_most": round(disk / 1e9, 3), "local_model_loads_at_most": local_loads(todo, workers)}


def print_plan(
    verb: str, out: Path, shard_text: str | None, planned: list[PlannedMatch], workers: int = 1
) -> None:
    """--dry-run: this shard's matches still to play (a resumed run's finished ones excluded), and the
    estimate."""
    import json

    shard, n_shards, mine = shard_of(planned, shard_text)
    todo = pending_readonly(out / F.MATCHES_DIR, mine)
    print(f"mau {verb} --dry-run: {len(planned)} planned matches, shard {shard}/{n_shards}: {len(mine)}, "
          f"{len(todo)} to play -> {out} (nothing written)")
    for pm in todo[:5]:
        print(f"  {pm.match_id} seed={pm.seed}")
    if len(todo) > 5:
        print(f"  ... {len(todo) - 5} more")
    print(json.dumps(estimate(todo, workers)))


def pending_readonly(matches_dir: Path, mine: list[Any]) -> list[Any]:
    """``pending`` without removing anything (for --dry-run)."""
    return [m for m in mine if not (matches_dir / m.match_id / F.MATCH_HEADER).is_file()]
