"""mau eval --config configs/eval/smoke.yaml --out runs/eval/smoke

Evaluate crewmate arms (a baseline model, fine-tuned adapters, ...) against fixed imposter models: every
(arm, imposter model, seed) is one match in which the six crewmate seats play the arm's model and the two
imposter seats the imposter model, on one list of seeds shared by every arm. Matches run in parallel worker
processes (``--workers``) and appear whole when done, so a killed eval loses nothing: rerun with ``--resume``.
``--shard I/N`` plays one shard (Slurm arrays: slurm/eval.sbatch); ``--report-only`` plays nothing and
recomputes the report from the run folder (after the shards; the config defaults to the run's config.yaml).
Writes results.md (crew win rate, ejection recall and precision, imposters ejected, kills and missions per game,
endings, each with n and a 95% interval; paired comparisons with the baseline), results.csv, results.json,
results.png, and every match folder (collect format: the eval is also data for ``mau dataset``).
"""

from __future__ import annotations

import argparse

from mau.commands.common import add_config_arguments, dated_run_dir


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", help="run folder")
    p.add_argument("--resume", action="store_true", help="continue the eval in --out (plays only missing matches)")
    p.add_argument("--shard", help="I/N: play shard I of N (0-based)")
    p.add_argument("--workers", type=int, help="worker processes")
    p.add_argument("--report-only", action="store_true",
                   help="play nothing: recompute the report of --out (config: --config, else --out/config.yaml)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in batch logs)")


def config_from_args(args: argparse.Namespace):
    from pathlib import Path

    from mau import schema as F
    from mau.config import load_config, parse_overrides
    from mau.errors import ConfigError
    from mau.eval.config import EvalConfig

    over = parse_overrides(args.set)
    for key in ("out", "shard", "workers"):
        if getattr(args, key) is not None:
            over[key] = getattr(args, key)
    for flag in ("resume", "report_only"):
        if getattr(args, flag):
            over[flag] = True
    source = args.config
    if source is None and args.report_only:
        if not args.out:
            raise ConfigError("--report-only needs --out (the eval run folder)")
        source = str(Path(args.out) / F.RESOLVED_CONFIG)  # the run's own resolved config
    if source is None:
        raise ConfigError("--config is required (e.g. configs/eval/smoke.yaml)")
    cfg = load_config(EvalConfig, source, over)
    cfg._progress = not args.no_progress  # a run-time switch, not part of the config
    return cfg


def main(cfg) -> int:
    from pathlib import Path

    from mau import schema as F
    from mau.errors import ConfigError
    from mau.eval.run import run_eval

    if cfg.report_only and not cfg.out:
        raise ConfigError("--report-only needs --out (the eval run folder)")
    name = Path(getattr(cfg, "_source", "eval")).stem
    out = Path(cfg.out or dated_run_dir("eval", name))
    r = run_eval(cfg, out, progress=getattr(cfg, "_progress", True))
    print(r["markdown"])
    what = "report recomputed" if cfg.report_only else \
        f"shard {r['shard']}: {r['played_now']} played now of {r['shard_matches']}"
    print(f"eval: {r['matches']}/{r['planned']} matches ({what}, {r['wall_s']} s) -> {out}/"
          f"{{{F.RESULTS_MD},{F.RESULTS_CSV},{F.RESULTS_JSON},{F.RESULTS_PNG}}} and {out}/{F.MATCHES_DIR}/")
    return 0
