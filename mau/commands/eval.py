"""mau eval --config configs/eval/smoke.yaml --out runs/eval/smoke

Evaluate crewmate arms (a baseline model, fine-tuned adapters, ...) against fixed imposter models: every
(arm, imposter model, seed) is one match in which the six crewmate seats play the arm's model and the two
imposter seats the imposter model, on one list of seeds shared by every arm. Matches run in parallel worker
processes (``--workers``) and appear whole when done, so a killed eval loses nothing: rerun with ``--resume``.
``--shard I/N`` plays one shard (Slurm arrays: slurm/eval.sbatch); ``--report-only`` plays nothing and
recomputes the report from the run folder (after the shards; the config defaults to the run's config.yaml).
Writes results.md (crew win rate, ejection recall and precision, imposters ejected, kills and missions per
game, endings, each with n and a 95% interval; paired comparisons with the baseline; detection metrics from
the belief probes with the ideal observer's row, as ``mau beliefs``), results.csv, results.json,
results.png, and every match folder (collect format: the eval is also data for ``mau dataset``).
Failures are loud: before the first match every arm's and imposter's model answers one preflight request (a
dead server, a missing adapter or a misnamed model stops the eval in one line); an arm whose own calls fell
back more than ``max_fallback_share`` (default 50 %), or whose model never answered, is reported as failed
and the eval exits 1 (``--allow-fallbacks``: exit 0 anyway).
"""

from __future__ import annotations

import argparse

from mau.commands.common import (
    DRY_RUN,
    IN_FLIGHT,
    MAX_FAILURES,
    NO_PROGRESS,
    OUT,
    SHARD,
    WORKERS,
    Flag,
    config_flags,
    load,
)
from mau.options import RunOptions

FLAGS = [*config_flags("seeds=[1,2,3]"), OUT,
         Flag("--resume", "continue the eval in --out (plays only missing matches)", key="resume", type=bool),
         SHARD, WORKERS, IN_FLIGHT,
         Flag("--report-only", "play nothing: recompute the report of --out (config: --config, else "
              "--out/config.yaml)", key="report_only", type=bool),
         NO_PROGRESS, DRY_RUN, MAX_FAILURES,
         Flag("--allow-fallbacks", "exit 0 even when an arm's own calls fell back more than "
                                   "max_fallback_share",
              key="allow_fallbacks", type=bool)]


def config_from_args(args: argparse.Namespace):
    from pathlib import Path

    from mau import schema as F
    from mau.errors import ConfigError
    from mau.eval.config import EvalConfig

    source = args.config
    if args.report_only and not args.out:
        raise ConfigError("--report-only needs --out (the eval run folder)")
    if source is None and args.report_only:
        source = str(Path(args.out) / F.RESOLVED_CONFIG)  # the run's own resolved config
    if source is None:
        raise ConfigError("--config is required (e.g. configs/eval/smoke.yaml)")
    return load(EvalConfig, args, FLAGS, source)


def main(cfg, opts: RunOptions = RunOptions()) -> int:
    import sys

    from mau import schema as F
    from mau.errors import ConfigError
    from mau.eval.run import run_eval
    from mau.rundir import RunDir

    if cfg.report_only and not cfg.out:
        raise ConfigError("--report-only needs --out (the eval run folder)")
    out = RunDir.choose(cfg.out, "eval", opts.tag("eval"), "eval run").path
    r = run_eval(cfg, out, opts)
    if r is None:  # --dry-run
        return 0
    print(r["markdown"])
    what = "report recomputed" if cfg.report_only else \
        f"shard {r['shard']}: {r['played_now']} played now of {r['shard_matches']}"
    print(f"eval: {r['matches']}/{r['planned']} matches ({what}, {r['wall_s']} s) -> {out}/"
          f"{{{F.RESULTS_MD},{F.RESULTS_CSV},{F.RESULTS_JSON},{F.RESULTS_PNG}}} and {out}/{F.MATCHES_DIR}/")
    if "loads" in r:  # local models (hf, lm): a worker loads each base once, however its matches alternate
        print(f"local model loads: {r['loads']} ({cfg.workers} worker{'s' if cfg.workers > 1 else ''})")
    c = r["probe_cost"]
    print(f"probes: {c['probes']} model probe calls in {c['matches']} matches ({c['probes_per_match']:.1f} "
          f"per match, {c['fallbacks']} fallbacks, {c['tokens']} tokens)")
    from mau.eval.report import failure_reason

    bad = {a: h for a, h in r.get("arm_health", {}).items() if h["over"]}
    for arm, h in bad.items():
        why = failure_reason(h) if h["failed"] else f"{100 * h['share']:.1f} % of its own calls fell back"
        print(f"mau eval: warning: arm {arm} failed: {why} (max_fallback_share "
              f"{100 * cfg.max_fallback_share:.0f} %)", file=sys.stderr)
    return 1 if bad and not cfg.allow_fallbacks else 0
