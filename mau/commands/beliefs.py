"""mau beliefs runs/eval/smoke

Detection report of any collect or eval run (or match folder) from its belief probes (``probes.jsonl``): per
arm (or crewmate model) x imposter model, AUROC and Brier score within each probe (chance 0.5) and pooled,
expected calibration error, top-2 hit rate, detection rate, time to detection and detection lead, each with a
95% match-level bootstrap interval, the ideal observer and the knows-nothing (k/n) reference rows, and paired
comparisons (with the baseline arm on the same seeds, and with the ideal observer on the same matches), and
for runs with structured claims their Claims section (docs/claims.md). Writes
beliefs.md, beliefs.json, beliefs.csv, calibration.png and belief_curves.png into --out (default: the first
RUN) and prints the tables. The numbers are the eval's own (``mau.eval.detection``; the report:
``mau.eval.report.write_detection_report``).

``--fit``: fit the ideal observer's likelihoods by maximum likelihood on the runs' recorded evidence instead,
and write observer_fit.json into --out (docs/detection.md, "The fit"); ``--params FIT``: re-score the ideal
observer of the runs from its recorded evidence with a fit (its held-out detection and calibration);
``--ablate contradicted,conflict``: the ideal observer (with ``--params``, or the shipped model) against the
same observer with those kinds of evidence counting for nothing, on the same probes, paired (writes
ablation.json and ablation.md; docs/claims.md, "Detection that uses claims"); ``--fit --without speech``: fit
an observer whose accusation and vote terms (or any log likelihood ratios; groups ``speech``, ``positions``,
``claims``) count for nothing, the base the claims' lift is measured on in docs/claims.md;
``--leave-one-out``: the observer fitted on every imposter model but one and scored on that one
(docs/detection.md, "Against imposters it was not fitted to"). Every report also has the simple baselines'
rows, the figures by moment and the role tell in phrasing.
"""

from __future__ import annotations

import argparse

from mau.commands.common import Flag, check_run_folders, require_matches
from mau.eval.report_configs import BeliefsConfig
from mau.options import RunOptions

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", key="runs", type=list),
    Flag("--out", "where the report files go (default: the first RUN)", key="out"),
    Flag("--baseline", "the row the others are compared with (default: the first arm)", key="baseline"),
    Flag("--resamples", "bootstrap resamples (default 1000)", key="resamples", type=int),
    Flag("--seed", "bootstrap seed (default 0)", key="seed", type=int),
    Flag("--match", "match folder of the belief-curve plot (default: the first with model "
                    "probes)", key="match"),
    Flag("--fit", "fit the ideal observer's likelihoods on the runs (training seeds): writes "
                  "observer_fit.json",
         key="fit", type=bool),
    Flag("--l2", "the fit's L2 penalty (default 0.01 on the log likelihood ratios, 1.0 with --linear)",
         key="l2", type=float),
    Flag("--linear", "with --fit: fit the linear detector (a logistic model of per-player evidence counts; "
                     "docs/detection.md, 'A linear detector') instead of the likelihoods", key="linear",
         type=bool),
    Flag("--params", "an observer_fit.json (or its folder): re-score the ideal observer with its likelihoods",
         key="params"),
    Flag("--ablate", "comma-separated parameters of the model (e.g. contradicted,conflict) or groups "
                     "(speech, positions, claims, unsteerable): compare the observer with the same observer "
                     "without them, paired",
         key="ablate"),
    Flag("--without", "with --fit: log likelihood ratios held at 0, comma-separated, or the groups speech, "
                      "positions, claims, unsteerable (an observer that ignores those kinds of evidence); "
                      "with --linear: features or the group own_acts",
         key="without"),
    Flag("--bc-rows", "a BC dataset (mau dataset): add the 'linear (BC rows)' row, the linear reader of the "
                      "compact VOTE prompt fitted on its training rows", key="bc_rows"),
    Flag("--leave-one-out", "fit the observer on every imposter model but one and score it on that one, for "
                            "each (writes leave_one_out.md/.json and the fits under fits/<imposter>/)",
         key="leave_one_out", type=bool),
]
CONFIG = "mau.eval.report_configs:BeliefsConfig"


def config_from_args(args: argparse.Namespace) -> BeliefsConfig:
    from pathlib import Path

    from mau.commands.common import load
    from mau.errors import ConfigError
    from mau.infer.model import Params

    try:  # names or groups -> the model's parameter names (a linear fit's --without: its feature names)
        if getattr(args, "linear", False) and args.without is not None:
            from mau.infer.linear import expand

            args.without = expand([w.strip() for w in args.without.split(",") if w.strip()], "--without")
        for flag in ("ablate", "without"):
            if flag == "without" and getattr(args, "linear", False):
                continue
            if getattr(args, flag) is not None:
                setattr(args, flag, Params.expand(getattr(args, flag), f"--{flag}"))
                if not getattr(args, flag):
                    raise ValueError(f"--{flag}: name at least one log likelihood ratio or group")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    cfg = load(BeliefsConfig, args, FLAGS)
    check_run_folders(cfg.runs, cfg.resamples)
    if cfg.ablate is not None and cfg.fit:
        raise ConfigError("--ablate and --fit: fit first, then --ablate with --params FIT on held-out runs")
    if cfg.leave_one_out and (cfg.fit or cfg.params or cfg.ablate):
        raise ConfigError("--leave-one-out fits and scores by itself: give it without --fit, --params or "
                          "--ablate")
    if cfg.fit and cfg.params:
        raise ConfigError("--fit and --params: fit on training runs, then report held-out runs with --params")
    if cfg.without is not None and not cfg.fit:
        raise ConfigError("--without: only with --fit (the fit writes the held parameters as 0; --params "
                          "and --ablate then read them from the fit)")
    if cfg.l2 is not None and cfg.l2 < 0:
        raise ConfigError("--l2: must be 0 or more")
    if cfg.linear and not cfg.fit:
        raise ConfigError("--linear: only with --fit (give a linear fit's file to --params to re-score)")
    if cfg.params and not Path(cfg.params).exists():
        raise ConfigError(f"--params {cfg.params}: no such file; give the observer_fit.json of mau beliefs "
                          f"--fit")
    return cfg


def main(cfg: BeliefsConfig, opts: RunOptions = RunOptions()) -> int:
    from pathlib import Path

    from mau.eval.report import write_detection_report

    require_matches(cfg.runs)
    out = Path(cfg.out or cfg.runs[0])
    if cfg.leave_one_out:
        from mau.eval.observer_fit import leave_one_out, loo_markdown

        doc = leave_one_out(cfg.runs, out, 0.01 if cfg.l2 is None else cfg.l2, cfg.resamples, cfg.seed)
        print(loo_markdown(doc))
        print(f"leave one out: {len(doc['imposters'])} imposter models -> {out}/leave_one_out.{{md,json}} "
              f"and {out}/fits/<imposter>/observer_fit.json")
        return 0
    if cfg.fit and cfg.linear:
        from mau.eval.observer_fit import fit_linear_runs

        doc = fit_linear_runs(cfg.runs, out, 1.0 if cfg.l2 is None else cfg.l2, cfg.without)
        print("linear:", " ".join(f"{k}={v:g}" for k, v in doc["linear"]["weights"].items()),
              f"bias={doc['linear']['bias']:g}")
        print(f"linear fit: {doc['candidates']} candidates at {doc['probes']} probes of {doc['matches']} "
              f"matches, log-likelihood per candidate {doc['loglik_per_candidate']:.4f} -> "
              f"{out}/observer_fit.json")
        return 0
    if cfg.fit:
        from mau.eval.observer_fit import fit_runs

        doc = fit_runs(cfg.runs, out, 0.01 if cfg.l2 is None else cfg.l2, cfg.without)
        print("likelihood:", " ".join(f"{k}={v:g}" for k, v in doc["params"].items()))
        print(f"observer fit: {doc['probes']} probes of {doc['matches']} matches, log-likelihood per probe "
              f"{doc['start_loglik_per_probe']:.4f} -> {doc['loglik_per_probe']:.4f} -> "
              f"{out}/observer_fit.json")
        return 0
    if cfg.ablate:
        import json

        from mau.eval.observer_fit import ablation, ablation_markdown, read_fit
        from mau.infer.model import Params
        from mau.rundir import atomic_write

        params = read_fit(cfg.params) if cfg.params else Params()
        doc = ablation(cfg.runs, params, cfg.ablate, cfg.resamples, cfg.seed)
        md = ablation_markdown(doc)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "ablation.json", (json.dumps(doc, indent=1) + "\n").encode())
        atomic_write(out / "ablation.md", (md + "\n").encode())
        print(md)
        return 0
    bc = None
    if cfg.bc_rows:
        from mau.eval.config import BCRowsSection

        bc = BCRowsSection(dataset=cfg.bc_rows)
    r = write_detection_report(cfg.runs, out, cfg.baseline, cfg.resamples, cfg.seed,
                               Path(cfg.match) if cfg.match else None, cfg.params, bc)
    print(r["markdown"])
    print(f"beliefs: {r['matches']} matches -> {out}/{{{','.join(r['files'])}}}")
    return 0
