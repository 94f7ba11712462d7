"""mau claims runs/claims/grid

The claims of any collect or eval run (or match folders) checked against what happened, role-blind
(docs/claims.md): every claim's verdict recomputed from events.jsonl and sights.jsonl (and compared with the
match-end claims.jsonl), per role the verdicts and ``false_share``, claim accuracy, lie rates, crew spatial
errors, liar votes and accusations with 95 % match-bootstrap intervals, by imposter model and by crewmate
model (or arm), the checks of a scripted run (render -> parse, unlabelled facts TRUE, lies FALSE or
UNSUPPORTED, the window exploit, checker time, sights size). Writes claims.json and claims.md into --out
(default: the first RUN) and prints the report.

With ``--extract-model M`` the utterances without structured claims are read as claims: ``spot`` (the template
parser and the phrasing reader, no model), or a model through any harness backend (``--extract-backend``:
openai at ``--extract-base-url``, or ``lm`` / ``hf`` with M a local folder) in JSON mode, answers cached in
<out>/extract_cache.jsonl. The extractor's F1 is measured first on the evaluation set of free speech
written and labelled by hand (mau/claimsread/data/claims_speech.jsonl; ``--extract-corpus`` and
``--extract-split`` name another labelled file, e.g. the synthetic corpus's held split); below 0.9 (pooled or
for any claim kind) no lie rate is printed unless ``--allow-weak-extractor``; the F1 is printed beside every
table.
"""

from __future__ import annotations

import argparse

from mau.claimsread.config import ClaimsConfig
from mau.commands.common import EXTRACT_FLAGS, Flag, check_extract, check_run_folders, require_matches
from mau.options import RunOptions

CLAIMS_MD, CLAIMS_JSON = "claims.md", "claims.json"

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", key="runs", type=list),
    Flag("--out", "where claims.md and claims.json go (default: the first RUN)", key="out"),
    Flag("--resamples", "bootstrap resamples (default 1000)", key="resamples", type=int),
    Flag("--seed", "bootstrap seed (default 0)", key="seed", type=int),
    *EXTRACT_FLAGS,
]
CONFIG = "mau.claimsread.config:ClaimsConfig"


def config_from_args(args: argparse.Namespace) -> ClaimsConfig:
    from mau.commands.common import load

    cfg = load(ClaimsConfig, args, FLAGS)
    check_run_folders(cfg.runs, cfg.resamples)
    check_extract(cfg)
    return cfg


def main(cfg: ClaimsConfig, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.claimsread import metrics, report
    from mau.claimsread.freetext import GATE, extract_runs
    from mau.errors import MauError

    require_matches(cfg.runs)
    folders = metrics.match_folders(cfg.runs)
    out = Path(cfg.out or cfg.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    extracted, extraction = {}, None
    if cfg.extract_model:
        extracted, extraction = asyncio.run(extract_runs(cfg, folders, out))
        if extraction["weak"] and not cfg.allow_weak_extractor:
            print("\n".join(report.extraction_lines(extraction)))
            where = extraction["corpus_name"] + (f", split {cfg.extract_split}" if cfg.extract_split else "")
            raise MauError(f"--extract-model {cfg.extract_model}: F1 below {GATE} on {where} "
                           f"({extraction['weak']}): its lie rates would not mean "
                           f"what they say; no report written "
                           "(pass --allow-weak-extractor to print them anyway)")
    ms = [metrics.load(f, extracted.get(f)) for f in folders]
    ev = metrics.evaluate(ms, cfg.resamples, cfg.seed)
    mismatched = [m.match_id for m in ms if m.identical is False]
    md = report.markdown(ev, [str(r) for r in cfg.runs], extraction)
    (out / CLAIMS_MD).write_text(md)
    (out / CLAIMS_JSON).write_text(json.dumps({"runs": [str(r) for r in cfg.runs], "extraction": extraction,
                                               "mismatched_matches": mismatched, **ev}, indent=1))
    print(md)
    if mismatched:
        print(f"claims: {len(mismatched)} matches' verdicts differ from their match-end claims.jsonl (first: "
              f"{mismatched[0]}); the files were written by another checker version")
    print(f"claims: {len(ms)} matches -> {out}/{{{CLAIMS_MD},{CLAIMS_JSON}}}")
    return 0
