"""mau beliefs runs/eval/smoke

Detection report of any collect or eval run (or match folder) from its belief probes (``probes.jsonl``): per
arm (or crewmate model) x imposter model, AUROC, Brier score, expected calibration error, top-2 hit rate,
detection rate, time to detection and detection lead, each with a 95% match-level bootstrap interval, the
ideal observer as the reference row, and paired comparisons (with the baseline arm on the same seeds, and
with the ideal observer on the same matches). Writes beliefs.md, beliefs.json, beliefs.csv, calibration.png
and belief_curves.png into --out (default: the first RUN) and prints the tables.
"""

from __future__ import annotations

import argparse

from mau.commands.common import Flag
from mau.options import RunOptions

BELIEFS_MD, BELIEFS_JSON, BELIEFS_CSV = "beliefs.md", "beliefs.json", "beliefs.csv"
CALIBRATION_PNG, CURVES_PNG = "calibration.png", "belief_curves.png"


FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", type=list),
    Flag("--out", "where the report files go (default: the first RUN)"),
    Flag("--baseline", "the row the others are compared with (default: the first arm)"),
    Flag("--resamples", "bootstrap resamples (default 1000)", type=int, default=1000),
    Flag("--seed", "bootstrap seed (default 0)", type=int, default=0),
    Flag("--match", "match folder of the belief-curve plot (default: the first with model probes)"),
]
CONFIG = None  # no config file: the flags are the whole configuration


def config_from_args(args: argparse.Namespace) -> argparse.Namespace:
    from pathlib import Path

    from mau.errors import ConfigError

    for r in args.runs:
        if not Path(r).is_dir():
            raise ConfigError(f"RUN {r}: no such folder; give a collect or eval run folder or a match folder")
    if args.resamples < 1:
        raise ConfigError("--resamples: must be at least 1")
    return args


def main(args: argparse.Namespace, opts: RunOptions = RunOptions()) -> int:
    import csv
    import io
    import json
    from pathlib import Path

    from mau import schema as F
    from mau.beliefs import report
    from mau.beliefs.metrics import evaluate, load_run, read_probes

    ms = []
    for r in args.runs:
        ms += load_run(r)
    det = evaluate(ms, args.baseline, args.resamples, args.seed)
    out = Path(args.out or args.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    md = report.markdown(det, title="# Detection report", level="##")
    (out / BELIEFS_MD).write_text(md + "\n")
    (out / BELIEFS_JSON).write_text(json.dumps({"runs": args.runs, **det}, indent=1))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", "imposter", "metric", "value", "ci_low", "ci_high", "n", "method"])
    w.writerows(report.csv_rows(det))
    (out / BELIEFS_CSV).write_text(buf.getvalue())
    report.calibration_plot(ms).save(out / CALIBRATION_PNG)
    match = Path(args.match) if args.match else None
    if match is None:
        for r in args.runs:
            base = Path(r)
            cands = [base] if (base / F.MATCH_HEADER).is_file() else \
                sorted(p for p in (base / F.MATCHES_DIR).glob("*") if (p / F.MATCH_HEADER).is_file())
            match = next((c for c in cands if any(x[F.PROBE_SOURCE] == "model" for x in read_probes(c))),
                         cands[0] if cands else None)
            if match is not None:
                break
    if match is not None:
        report.belief_curves(match).save(out / CURVES_PNG)
    print(md)
    print(f"beliefs: {det['matches']} matches -> {out}/{{{BELIEFS_MD},{BELIEFS_JSON},{BELIEFS_CSV},"
          f"{CALIBRATION_PNG}{',' + CURVES_PNG if match is not None else ''}}}")
    return 0
