"""A collect run: its folder, resuming, shards, parallel workers and the progress bar.

Run folder (format ``mau.collect`` v1, docs/formats.md)::

    <run>/run.json  config.yaml  provenance.json  grid.jsonl
    <run>/matches/<match_id>/     one match folder per finished match (written atomically)
    <run>/summary.json  summary.md  matchups.csv  matchups.png
    <run>/logs/                   worker logs

A match folder appears by one rename when its match is complete, so a killed run leaves whole matches or
none; ``--resume`` plays exactly the matches of the shard that have no folder yet.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from mau import schema as F
from mau.collect.grid import GridConfig, MatchSpec, enumerate_grid, in_shard, parse_shard, seats_for
from mau.config import dump_yaml
from mau.env.config import Model, WorldConfig
from mau.errors import ConfigError, MauError
from mau.rundir import LOCK_FILE, init_lock, run_parallel


OPERATIONAL_MODEL_FIELDS = ("base_url", "api_key_env", "timeout_s", "max_retries", "backoff_s", "concurrency", "device",
                            "price_prompt_per_mtok", "price_completion_per_mtok")


class CollectConfig(Model):
    """``mau collect``: a grid of expert matches."""

    out: str | None = Field(None, description="Run folder; default runs/collect/<date>/<time>_<config name>.")
    resume: bool = Field(False, description="Continue a run in an existing run folder (required for every shard after the first).")
    shard: str | None = Field(None, description="I/N: play only the grid's matches k with k % N == I.")
    workers: int = Field(1, ge=1, description="Matches played at once, each in its own worker process.")
    grid: GridConfig = Field(description="The pool, the pairings, the ARIA cases, repetitions and seeds.")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The world every match is played in.")

    def identity(self) -> dict[str, Any]:
        """The part that defines the run's content: shards of one run must agree on it. Where a model is
        served and how it is reached (endpoint, key variable, timeouts, limits, prices) is not part of it, so a
        resumed run may point at a server on another node."""
        data = self.model_dump(mode="json", include={"grid", "world"})
        for entry in data["grid"]["pool"]:
            for key in OPERATIONAL_MODEL_FIELDS:
                entry["model"].pop(key, None)
        return data


# -- one match (runs in a worker process) ------------------------------------------------------------------
_BACKENDS: dict[str, Any] = {}  # per process: a loaded local model is reused by every match of the worker


def _backend(model_cfg, workers: int):
    from mau.harness.backends import make_backend

    key = model_cfg.model_dump_json()
    if key not in _BACKENDS:
        # The endpoint's concurrency limit is split between the worker processes so that together they
        # never exceed it.
        per_worker = model_cfg.model_copy(update={"concurrency": max(1, model_cfg.concurrency // workers)})
        _BACKENDS[key] = make_backend(per_worker)
    return _BACKENDS[key]


def play_one(spec: dict[str, Any], grid_json: str, world_json: str, run_dir: str, workers: int) -> dict[str, Any]:
    """Play one grid match into ``run_dir/matches/<id>``; return its outcome and counts."""
    from mau.env.backends import make_world
    from mau.env.runner import write_match
    from mau.harness.match import AriaMatch
    from mau.matchdir import MatchWriter
    from mau.provenance import provenance

    grid = GridConfig.model_validate_json(grid_json)
    world_cfg = WorldConfig.model_validate_json(world_json)
    spec_obj = MatchSpec(**spec)
    seats = seats_for(grid, spec_obj)
    backends = {side: _backend(seat.model, workers) for side, seat in seats.items()}
    world = make_world(world_cfg)
    final = Path(run_dir) / F.MATCHES_DIR / spec_obj.match_id
    writer = MatchWriter(final)
    match = AriaMatch(world, seats, backends, writer.staging, spec_obj.match_id)

    async def run():
        try:
            return await match.play(spec_obj.seed)
        finally:
            for b in backends.values():
                await b.aclose()

    try:
        result = asyncio.run(run())
        extra = {**match.header_extra(), F.GRID: spec_obj.to_dict()}
        write_match(writer, world, result, _MatchConfig(seats=seats, world=world_cfg), provenance(), extra)
    except BaseException:
        writer.abort()
        raise
    calls = match.log.summary()
    prices = {side: (s.model.price_prompt_per_mtok, s.model.price_completion_per_mtok) for side, s in seats.items()}
    cost = sum(t["prompt_tokens"] * prices[r][0] / 1e6 + t["completion_tokens"] * prices[r][1] / 1e6
               for r, t in calls["tokens_by_role"].items())
    return {"match_id": spec_obj.match_id, "outcome": result.outcome, "calls": calls["calls"],
            "fallbacks": calls["fallbacks"], "tokens": calls["prompt_tokens"] + calls["completion_tokens"],
            "cost": cost, "wall_s": result.wall_seconds}


class _MatchConfig(Model):
    """What a collected match folder records as its config: its seats and its world."""

    seats: dict[str, Any]
    world: WorldConfig


# -- the run -----------------------------------------------------------------------------------------------
def prepare(cfg: CollectConfig, out: Path) -> list[MatchSpec]:
    """Create the run folder, or check that an existing one is this run (with --resume). Shards that start
    together take turns through a lock, so exactly one creates the folder and the others join it."""
    with init_lock(out):
        return _prepare_locked(cfg, out)


def _prepare_locked(cfg: CollectConfig, out: Path) -> list[MatchSpec]:
    specs = enumerate_grid(cfg.grid)
    header_path = out / F.RUN_HEADER
    if header_path.is_file():
        if not cfg.resume:
            raise MauError(f"--out {out}: already holds a collect run; pass --resume to continue it, or choose another --out")
        header = json.loads(header_path.read_text())
        if header.get(F.FORMAT) != F.RUN_FORMAT or header.get(F.FORMAT_VERSION) != F.RUN_FORMAT_VERSION:
            raise MauError(f"{header_path}: not a {F.RUN_FORMAT} v{F.RUN_FORMAT_VERSION} run folder")
        if header["identity"] != cfg.identity():
            key = _first_difference(header["identity"], cfg.identity())
            raise ConfigError(f"--resume {out}: the config differs from the run's at {key}; use the run's config.yaml")
        return specs
    if any(p for p in out.iterdir() if p.name not in (F.LOGS_DIR, LOCK_FILE)):
        raise MauError(f"--out {out}: exists and is not a collect run; choose an empty or new folder")
    from mau.provenance import provenance

    (out / F.MATCHES_DIR).mkdir(exist_ok=True)
    (out / F.RESOLVED_CONFIG).write_text(dump_yaml(cfg.model_copy(update={"shard": None, "resume": False})))
    (out / F.PROVENANCE_FILE).write_text(json.dumps(provenance(), indent=1))
    with open(out / F.GRID_FILE, "w") as f:
        for s in specs:
            f.write(json.dumps(s.to_dict()) + "\n")
    # The header goes last (atomically): a folder with run.json is a complete, resumable run.
    tmp = out / f".{F.RUN_HEADER}.tmp"
    tmp.write_text(json.dumps({F.FORMAT: F.RUN_FORMAT, F.FORMAT_VERSION: F.RUN_FORMAT_VERSION,
                               "planned_matches": len(specs), "identity": cfg.identity()}, indent=1))
    os.replace(tmp, header_path)
    return specs


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    return path or "(top level)"


def pending(out: Path, mine: list[MatchSpec]) -> list[MatchSpec]:
    """This shard's matches without a finished folder; leftovers of killed attempts are removed."""
    matches = out / F.MATCHES_DIR
    ids = {s.match_id for s in mine}
    for p in matches.iterdir():
        # staging folders are ".<match_id>.partial-XXXX": only this shard's own are touched
        if p.name.startswith(".") and ".partial-" in p.name and p.name[1:].split(".partial-")[0] in ids:
            shutil.rmtree(p, ignore_errors=True)
    return [s for s in mine if not (matches / s.match_id / F.MATCH_HEADER).is_file()]


def run_collect(cfg: CollectConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    from tqdm import tqdm

    from mau.collect.summary import write_summary

    try:
        shard, n_shards = parse_shard(cfg.shard)
    except ValueError as e:
        raise ConfigError(f"--shard: {e}") from None
    specs = prepare(cfg, out)
    mine = list(in_shard(specs, shard, n_shards))
    todo = pending(out, mine)
    grid_json, world_json = cfg.grid.model_dump_json(), cfg.world.model_dump_json()
    totals = {"calls": 0, "fallbacks": 0, "tokens": 0, "cost": 0.0}
    bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=f"collect shard {shard}/{n_shards}",
               unit="match", disable=not progress, dynamic_ncols=True)

    def done(r: dict[str, Any]) -> None:
        for k in totals:
            totals[k] += r[k]
        bar.set_postfix(calls=totals["calls"], tokens=totals["tokens"], fallbacks=totals["fallbacks"],
                        cost=f"${totals['cost']:.2f}", refresh=False)
        bar.update(1)

    t0 = time.perf_counter()
    args = [(s.to_dict(), grid_json, world_json, str(out), cfg.workers) for s in todo]
    try:
        run_parallel(play_one, args, cfg.workers, done)
    finally:
        bar.close()
    summary = write_summary(out, planned=len(specs))
    summary.update(shard=f"{shard}/{n_shards}", played_now=len(todo), shard_matches=len(mine),
                   wall_s=round(time.perf_counter() - t0, 2), cost_now=round(totals["cost"], 4))
    return summary
