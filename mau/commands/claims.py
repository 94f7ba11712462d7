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
from mau.commands.common import Flag, check_run_folders
from mau.options import RunOptions

CLAIMS_MD, CLAIMS_JSON = "claims.md", "claims.json"

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", key="runs", type=list),
    Flag("--out", "where claims.md and claims.json go (default: the first RUN)", key="out"),
    Flag("--resamples", "bootstrap resamples (default 1000)", key="resamples", type=int),
    Flag("--seed", "bootstrap seed (default 0)", key="seed", type=int),
    Flag("--extract-model", "read utterances without structured claims with this model ('spot': no model; a "
                            "local folder for --extract-backend lm or hf)", key="extract_model"),
    Flag("--extract-backend", "backend of --extract-model (default openai)", key="extract_backend"),
    Flag("--extract-base-url", "endpoint of --extract-model, e.g. http://127.0.0.1:8000/v1",
         key="extract_base_url"),
    Flag("--extract-api-key-env", "environment variable holding the key of --extract-model's endpoint",
         key="extract_api_key_env"),
    Flag("--extract-max-tokens", "the extractor's completion budget per utterance (default 512)",
         key="extract_max_tokens", type=int),
    Flag("--extract-retries", "asks again after an answer without a claims list (default 2)",
         key="extract_retries", type=int),
    Flag("--extract-corpus", "labelled file the extractor's F1 is measured on (default: the evaluation set "
                             "of free speech, mau/claimsread/data/claims_speech.jsonl; docs/claims.md)",
         key="extract_corpus"),
    Flag("--extract-split", "the split of that file it is measured on (default: every line; the synthetic "
                            "corpus mau/claimsread/data/claims_corpus.jsonl has dev and held)",
         key="extract_split"),
    Flag("--extract-limit", "measure on the first N sentences of the split only (slow local models)",
         key="extract_limit", type=int),
    Flag("--allow-weak-extractor", "print lie rates even when the extractor's F1 is below 0.9",
         key="allow_weak_extractor", type=bool),
]
CONFIG = "mau.claimsread.config:ClaimsConfig"


def config_from_args(args: argparse.Namespace) -> ClaimsConfig:
    from pathlib import Path

    from mau.commands.common import load
    from mau.errors import ConfigError

    cfg = load(ClaimsConfig, args, FLAGS)
    check_run_folders(cfg.runs, cfg.resamples)
    if cfg.extract_corpus and not Path(cfg.extract_corpus).is_file():
        raise ConfigError(f"--extract-corpus {cfg.extract_corpus}: no such file; give a labelled corpus "
                          "(docs/claims.md, 'The labelled corpus')")
    if cfg.extract_model and cfg.extract_model != "spot" and cfg.extract_backend == "openai" \
            and not cfg.extract_base_url:
        raise ConfigError("--extract-base-url: needed for --extract-model with the openai backend (the "
                          "endpoint that serves it)")
    if cfg.extract_limit is not None and cfg.extract_limit < 1:
        raise ConfigError("--extract-limit: must be at least 1")
    if cfg.extract_retries < 0:
        raise ConfigError("--extract-retries: must be 0 or more")
    return cfg


async def _extract(cfg: ClaimsConfig, folders, out):
    """The runs' free text read as claims (``mau.claimsread.freetext``), with the model's backend opened and
    closed here."""
    from mau.claimsread.freetext import read_runs
    from mau.harness.completion import open_completion

    if cfg.extract_model == "spot":
        return await read_runs(cfg, folders, out)
    async with open_completion(cfg.extract_model, cfg.extract_backend, cfg.extract_base_url,
                               cfg.extract_api_key_env, cfg.extract_max_tokens) as complete:
        return await read_runs(cfg, folders, out, complete)


def main(cfg: ClaimsConfig, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.claimsread import metrics, report
    from mau.claimsread.freetext import GATE
    from mau.errors import MauError

    folders = metrics.match_folders(cfg.runs)
    out = Path(cfg.out or cfg.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    extracted, extraction = {}, None
    if cfg.extract_model:
        extracted, extraction = asyncio.run(_extract(cfg, folders, out))
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
