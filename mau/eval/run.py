"""An eval run: its folder, resuming, shards, parallel workers, the progress bar, and the report.

Run folder (format ``mau.eval`` v1, docs/formats.md)::

    <run>/run.json  config.yaml  provenance.json  grid.jsonl
    <run>/matches/<match_id>/     one match folder (mau.match v1, policy aria) per finished match
    <run>/results.md  results.csv  results.json  results.png

The match folders are collect-format match folders (written atomically by the same ``MatchWriter`` pattern),
so an eval is also data: ``mau dataset --runs <run>`` reads it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.config import RunOptions, dump_yaml
from mau.eval.config import EvalConfig, plan, seats_for
from mau.rundir import RunDir
from mau.runner import PlannedMatch, RunProgress, play_shard, print_plan, shard_of


def planned_matches(cfg: EvalConfig) -> list[PlannedMatch]:
    """Every eval match with its seats; the grid line and the arm go into each match header."""
    return [
        PlannedMatch(
            m.index, m.match_id, m.seed, seats_for(cfg, m), cfg.world, {F.GRID: m.to_dict(), F.ARM: m.arm}
        )
        for m in plan(cfg)
    ]


def _postfix(p: RunProgress) -> dict[str, Any]:
    return {"crew_wins": sum(d.outcome in F.CREW_OUTCOMES for d in p.done), "fallbacks": p.total("fallbacks")}


def run_eval(cfg: EvalConfig, out: Path, opts: RunOptions = RunOptions()) -> dict[str, Any] | None:
    """Play this shard's missing matches (unless report_only), then write the report of every finished
    match."""
    from mau.eval.report import write_report
    from mau.harness.backends.base import LOADS

    planned = planned_matches(cfg)
    loads_before = len(LOADS)  # this process's local model loads (the adapter guard's, in-process matches')
    run = RunDir(out, "eval run")
    if opts.dry_run and not cfg.report_only:
        print_plan("eval", out, cfg.shard, planned, cfg.workers)
        return None
    t0 = time.perf_counter()
    if cfg.report_only:
        run.check_header(F.EVAL_FORMAT, F.EVAL_FORMAT_VERSION, cfg.identity())
        shard, n_shards, _ = shard_of(planned, cfg.shard)
        mine, played, failed = [], 0, 0
        loads = None
    else:
        from mau.harness.preflight import preflight_models

        models = {**{f"arm {k}": v for k, v in cfg.arms.items()},
                  **{f"imposter {k}": v for k, v in cfg.imposters.items()}}
        if cfg.arm_modules is not None:
            models["arm_rest_model"] = cfg.arm_rest_model
        # before the run folder: a dead server or a missing adapter stops it in one line
        preflight_models(models)
        guard = []
        if cfg.adapter_guard:  # before anything is written or played: a dead adapter must not cost a run
            from mau.eval.guard import check_adapter_arms

            guard = check_adapter_arms(cfg)
        run.open_run(F.EVAL_FORMAT, F.EVAL_FORMAT_VERSION, cfg.identity(), cfg.resume,
                     dump_yaml(cfg.model_copy(update={"shard": None, "resume": False, "report_only": False})),
                     [pm.header[F.GRID] for pm in planned])
        if guard:
            import json

            (out / "adapter_guard.json").write_text(json.dumps([g.__dict__ for g in guard], indent=1) + "\n")
        r = play_shard(planned, out, cfg.shard, cfg.workers, opts, "eval", _postfix, cfg.matches_in_flight)
        shard, n_shards, mine = r.shard, r.n_shards, r.mine
        played, failed = len(r.progress.done), len(r.progress.failed)
        loads = len(LOADS) - loads_before + (r.progress.meter.get("loads", 0) if r.progress.spawned else 0)
    results = write_report(cfg, out, planned=len(planned))
    log_eval_results(cfg, out, results)
    results.update(shard=f"{shard}/{n_shards}", played_now=played, shard_matches=len(mine), failed_now=failed,
                   wall_s=round(time.perf_counter() - t0, 2))
    if loads is not None:
        results["loads"] = loads  # local model loads of this run's workers (hf, lm)
    return results


def log_eval_results(cfg: EvalConfig, out: Path, results: dict[str, Any]) -> str | None:
    """The report's long table (results.csv: arm, imposter, metric, value, interval, n, method) to wandb when
    logging.report_to says so."""
    import csv
    import io

    from mau.eval.report import rows_csv
    from mau.wandb_log import log_tables

    rows = list(csv.reader(io.StringIO(rows_csv(results))))
    return log_tables(cfg.logging, out, "eval", {"results": (rows[0], rows[1:])},
                      summary={"matches": results.get("matches"), "planned": results.get("planned")},
                      config=cfg.identity())
