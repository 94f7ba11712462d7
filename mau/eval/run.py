"""An eval run: its folder, resuming, shards, parallel workers, the progress bar, and the report.

Run folder (format ``mau.eval`` v1, docs/formats.md)::

    <run>/run.json  config.yaml  provenance.json  grid.jsonl
    <run>/matches/<match_id>/     one match folder (mau.match v1, policy aria) per finished match
    <run>/results.md  results.csv  results.json  results.png

The match folders are collect-format match folders (written atomically by the same ``MatchWriter`` pattern),
so an eval is also data: ``mau dataset --runs <run>`` reads it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.collect.grid import parse_shard
from mau.collect.run import _backend, _first_difference, pending
from mau.config import dump_yaml
from mau.env.config import Model, WorldConfig
from mau.env.state import CREW_OUTCOMES
from mau.errors import ConfigError, MauError
from mau.eval.config import EvalConfig, EvalMatch, plan, seats_for
from mau.rundir import LOCK_FILE, init_lock, run_parallel


class _MatchConfig(Model):
    """What an eval match folder records as its config: its seats and its world (as collect's)."""

    seats: dict[str, Any]
    world: WorldConfig


def play_one(spec: dict[str, Any], cfg_json: str, run_dir: str, workers: int) -> dict[str, Any]:
    """Play one eval match into ``run_dir/matches/<id>``; return its outcome and counts (runs in a worker)."""
    from mau.env.backends import make_world
    from mau.env.runner import write_match
    from mau.harness.match import AriaMatch
    from mau.matchdir import MatchWriter
    from mau.provenance import provenance

    cfg = EvalConfig.model_validate_json(cfg_json)
    m = EvalMatch.from_dict(spec)
    seats = seats_for(cfg, m)
    # collect's per-process cache: a local model loads once per worker and serves every match of its arm
    backends = {side: _backend(seat.model, workers) for side, seat in seats.items()}
    world = make_world(cfg.world)
    writer = MatchWriter(Path(run_dir) / F.MATCHES_DIR / m.match_id)
    match = AriaMatch(world, seats, backends, writer.staging, m.match_id)

    async def run():
        try:
            return await match.play(m.seed)
        finally:  # the HTTP clients belong to this event loop
            for b in backends.values():
                await b.aclose()

    try:
        result = asyncio.run(run())
        extra = {**match.header_extra(), F.GRID: m.to_dict(), F.ARM: m.arm}
        write_match(writer, world, result, _MatchConfig(seats=seats, world=cfg.world), provenance(), extra)
    except BaseException:
        writer.abort()
        raise
    calls = match.log.summary()
    return {"match_id": m.match_id, "outcome": result.outcome, "calls": calls["calls"],
            "fallbacks": calls["fallbacks"], "wall_s": result.wall_seconds}


def _header(cfg: EvalConfig, planned: int) -> dict[str, Any]:
    return {F.FORMAT: F.EVAL_FORMAT, F.FORMAT_VERSION: F.EVAL_FORMAT_VERSION, "planned_matches": planned,
            "identity": cfg.identity()}


def check_run(cfg: EvalConfig, out: Path) -> dict[str, Any]:
    """Read the run folder's header and check that ``cfg`` defines the same matches."""
    path = out / F.RUN_HEADER
    header = json.loads(path.read_text())
    if header.get(F.FORMAT) != F.EVAL_FORMAT or header.get(F.FORMAT_VERSION) != F.EVAL_FORMAT_VERSION:
        raise MauError(f"{path}: not a {F.EVAL_FORMAT} v{F.EVAL_FORMAT_VERSION} run folder "
                       f"(format {header.get(F.FORMAT)!r} v{header.get(F.FORMAT_VERSION)})")
    if header["identity"] != cfg.identity():
        key = _first_difference(header["identity"], cfg.identity())
        raise ConfigError(f"{out}: the config differs from the run's at {key}; use the run's config.yaml")
    return header


def prepare(cfg: EvalConfig, out: Path) -> list[EvalMatch]:
    """Create the run folder, or check that an existing one is this eval (with --resume); shards that start
    together create it once."""
    with init_lock(out):
        return _prepare_locked(cfg, out)


def _prepare_locked(cfg: EvalConfig, out: Path) -> list[EvalMatch]:
    matches = plan(cfg)
    if (out / F.RUN_HEADER).is_file():
        if not cfg.resume:
            raise MauError(f"--out {out}: already holds an eval run; pass --resume to continue it, or choose another --out")
        check_run(cfg, out)
        return matches
    if any(p for p in out.iterdir() if p.name not in (F.LOGS_DIR, LOCK_FILE)):
        raise MauError(f"--out {out}: exists and is not an eval run; choose an empty or new folder")
    from mau.provenance import provenance

    (out / F.MATCHES_DIR).mkdir(parents=True, exist_ok=True)
    _write(out / F.RESOLVED_CONFIG, dump_yaml(cfg.model_copy(update={"shard": None, "resume": False,
                                                                     "report_only": False})))
    _write(out / F.PROVENANCE_FILE, json.dumps(provenance(), indent=1))
    _write(out / F.GRID_FILE, "".join(json.dumps(m.to_dict()) + "\n" for m in matches))
    # The header goes last: a folder with run.json is a complete, resumable run.
    _write(out / F.RUN_HEADER, json.dumps(_header(cfg, len(matches)), indent=1))
    return matches


def _write(path: Path, text: str) -> None:
    """Write atomically: shards of one run may write the same file at the same time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_eval(cfg: EvalConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    """Play this shard's missing matches (unless report_only), then write the report of every finished match."""
    from tqdm import tqdm

    from mau.eval.report import write_report

    try:
        shard, n_shards = parse_shard(cfg.shard)
    except ValueError as e:
        raise ConfigError(f"--shard: {e}") from None
    t0 = time.perf_counter()
    if cfg.report_only:
        if not (out / F.RUN_HEADER).is_file():
            raise MauError(f"--out {out}: holds no eval run (no {F.RUN_HEADER}); play it first (without --report-only)")
        check_run(cfg, out)
        planned, mine, todo = plan(cfg), [], []
    else:
        planned = prepare(cfg, out)
        mine = [m for m in planned if m.index % n_shards == shard]
        todo = pending(out, mine)  # also removes this shard's leftover staging folders
        cfg_json = cfg.model_dump_json()
        wins = 0
        bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=f"eval shard {shard}/{n_shards}",
                   unit="match", disable=not progress, dynamic_ncols=True)

        def done(r: dict[str, Any]) -> None:
            nonlocal wins
            wins += r["outcome"] in CREW_OUTCOMES
            bar.set_postfix(crew_wins=wins, fallbacks=r["fallbacks"], refresh=False)
            bar.update(1)

        args = [(m.to_dict(), cfg_json, str(out), cfg.workers) for m in todo]
        try:
            run_parallel(play_one, args, cfg.workers, done)
        finally:
            bar.close()
    results = write_report(cfg, out, planned=len(planned))
    results.update(shard=f"{shard}/{n_shards}", played_now=len(todo), shard_matches=len(mine),
                   wall_s=round(time.perf_counter() - t0, 2))
    return results
