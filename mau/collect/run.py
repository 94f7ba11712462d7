"""A collect run: its folder, resuming, shards, parallel workers and the progress bar.

Run folder (format ``mau.collect`` v1, docs/formats.md)::

    <run>/run.json  config.yaml  provenance.json  grid.jsonl
    <run>/matches/<match_id>/     one match folder per finished match (written atomically)
    <run>/summary.json  summary.md  matchups.csv  matchups.png
    <run>/logs/                   worker logs

A match folder appears by one rename when its match is complete, so a killed run leaves whole matches or
none; ``--resume`` plays exactly the matches of the shard that have no folder yet. The folder is a ``RunDir``
(mau/rundir.py), the matches are played by the shared runner (mau/runner.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import Field

from mau import schema as F
from mau.collect.grid import GridConfig, enumerate_grid, seats_for
from mau.config import RunOptions, dump_yaml
from mau.env.config import WorldConfig
from mau.rundir import RunDir
from mau.runner import PlannedMatch, RunConfig, RunProgress, play_shard, print_plan
from mau.wandb_log import WandbLogging


class CollectConfig(RunConfig):
    """``mau collect``: a grid of expert matches."""

    max_fallback_share: float = Field(0.5, ge=0, le=1,
                                      description="Warn at the end when a side's own calls fell back more "
                                                  "than this.")
    grid: GridConfig = Field(description="The pool, the pairings, the ARIA cases, repetitions and seeds.")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The world every match is played in.")
    logging: WandbLogging = Field(default_factory=WandbLogging, description="Where the summary tables also "
                                  "go (wandb, in mau train's project).")

    def identity(self) -> dict[str, Any]:
        """The part that defines the run's content: shards of one run must agree on it. Where a model is
        served and how it is reached is not part of it (``ModelConfig.identity``), so a resumed run may point
        at a server on another node."""
        data = self.model_dump(mode="json", include={"grid", "world"})
        for entry, pool in zip(data["grid"]["pool"], self.grid.pool):
            entry["model"] = pool.model.identity()
        return data


def plan(cfg: CollectConfig) -> list[PlannedMatch]:
    """Every match of the grid, with its seats; the grid line goes into each match header."""
    return [
        PlannedMatch(s.index, s.match_id, s.seed, seats_for(cfg.grid, s), cfg.world, {F.GRID: s.to_dict()})
        for s in enumerate_grid(cfg.grid)
    ]


def _postfix(p: RunProgress) -> dict[str, Any]:
    """Live, from the workers' meters: every call so far (matches in flight included), its rate, the calls in
    flight now, tokens and USD at the configured prices."""
    m = p.meter
    if not m:
        return {"calls": p.total("calls"), "tokens": p.total("tokens"), "fallbacks": p.total("fallbacks"),
                "cost": f"${p.total('cost'):.2f}"}
    return {"calls": m["calls"], "calls/s": f"{m['calls_per_s']:.1f}", "in_flight": m["in_flight"],
            "tokens": m["tokens"], "fallbacks": m["fallbacks"], "cost": f"${m['cost_usd']:.2f}"}


def run_collect(cfg: CollectConfig, out: Path, opts: RunOptions = RunOptions()) -> dict[str, Any] | None:
    """Create (or with --resume join) the run folder, play this shard's missing matches, write the summary."""
    from mau.collect.grid import describe_plan
    from mau.collect.summary import write_summary
    from mau.harness.preflight import preflight_models

    planned = plan(cfg)
    if opts.dry_run:
        # the grid first: the runner's estimate (JSON) stays the last line
        print(describe_plan(cfg.grid, cfg.world))
        print_plan("collect", out, cfg.shard, planned, cfg.workers)
        return None
    # Before the run folder is made: a dead server or a missing adapter stops the run here, in one line.
    preflight_models({f"pool {p.name}": p.model for p in cfg.grid.pool})
    run = RunDir(out, "collect run")
    run.open_run(F.RUN_FORMAT, F.RUN_FORMAT_VERSION, cfg.identity(), cfg.resume,
                 dump_yaml(cfg.model_copy(update={"shard": None, "resume": False})),
                 [pm.header[F.GRID] for pm in planned])
    t0 = time.perf_counter()
    r = play_shard(planned, out, cfg.shard, cfg.workers, opts, "collect", _postfix, cfg.matches_in_flight)
    summary = write_summary(out, planned=len(planned))
    log_collect_summary(cfg, out, summary)
    summary.update(
        shard=f"{r.shard}/{r.n_shards}", played_now=len(r.progress.done), shard_matches=len(r.mine),
        failed_now=len(r.progress.failed), wall_s=round(time.perf_counter() - t0, 2),
        cost_now=round(r.progress.total("cost"), 4), meter=_meter(r.progress),
    )
    return summary


def _meter(p: RunProgress) -> dict[str, Any]:
    """The run's call meter for the summary: calls, tokens, USD, calls per second, calls in flight (peak,
    mean)."""
    m = p.meter
    keep = ("calls", "prompt_tokens", "completion_tokens", "tokens", "cost_usd", "fallbacks", "retries",
            "peak_in_flight", "mean_in_flight", "calls_per_s", "elapsed_s", "loads")
    return {k: (round(m[k], 6) if isinstance(m[k], float) else m[k]) for k in keep if k in m}


def log_collect_summary(cfg: CollectConfig, out: Path, summary: dict[str, Any]) -> str | None:
    """The summary's tables (matchups, win rates per model and role) to wandb when logging.report_to says
    so."""
    from mau.wandb_log import log_tables

    matchups = [
        [
            m[F.IMPOSTER_COLUMN], m["crewmate"], m["crew_wins"], m["n"],
            m["crew_wins"] / m["n"] if m["n"] else None,
        ]
        for m in summary["matchups"]
    ]
    rates = [[model, role, r["wins"], r["n"], r["rate"]] for model, roles in summary["win_rates"].items()
             for role, r in roles.items()]
    return log_tables(cfg.logging, out, "collect", {
        "matchups": ([F.IMPOSTER_COLUMN, "crewmate", "crew_wins", "n", "crew_win_rate"], matchups),
        "win_rates": (["model", "role", "wins", "n", "win_rate"], rates)},
        summary={"matches": summary["matches"], "crew_win_rate": summary["crew_win_rate"]},
        config=cfg.identity())
