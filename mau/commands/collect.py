"""mau collect --config configs/collect/smoke.yaml --out runs/collect/smoke

Play a grid of expert matches (the paper's RQ2 design): every model of the pool as imposter against every
model as crewmate, under each ARIA case, with repetitions. Matches run in parallel worker processes
(``--workers``); each match folder appears whole when its match is done, so a killed run loses nothing:
rerun with ``--resume``. ``--shard I/N`` plays one shard of the grid (Slurm arrays: slurm/collect_array.sbatch).
Writes the resolved config, provenance, the grid, the match folders and a summary (outcomes, win rates per
model and role, the imposter x crewmate matchup matrix as a table and a plot).
"""

from __future__ import annotations

import argparse

from mau.commands.common import add_config_arguments, dated_run_dir


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", help="run folder")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--shard", help="I/N: play shard I of N (0-based)")
    p.add_argument("--workers", type=int, help="worker processes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in batch logs)")


def config_from_args(args: argparse.Namespace):
    from mau.collect.run import CollectConfig
    from mau.config import load_config, parse_overrides

    over = parse_overrides(args.set)
    for key in ("out", "shard", "workers"):
        if getattr(args, key) is not None:
            over[key] = getattr(args, key)
    if args.resume:
        over["resume"] = True
    cfg = load_config(CollectConfig, args.config, over)
    cfg._progress = not args.no_progress  # a run-time switch, not part of the config
    return cfg


def main(cfg) -> int:
    import json
    from pathlib import Path

    from mau.collect.run import run_collect

    name = Path(getattr(cfg, "_source", "collect")).stem
    out = Path(cfg.out or dated_run_dir("collect", name))
    s = run_collect(cfg, out, progress=getattr(cfg, "_progress", True))
    print(f"collected {s['matches']}/{s['planned']} matches (shard {s['shard']}: {s['played_now']} played now, "
          f"{s['wall_s']} s) outcomes={json.dumps(s['outcomes'])} crew_win_rate="
          f"{s['crew_win_rate'] if s['crew_win_rate'] is None else round(s['crew_win_rate'], 3)} -> {out}")
    return 0
