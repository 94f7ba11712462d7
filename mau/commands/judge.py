"""mau judge runs/claims/grid --judge-model spot

The paper's 23 deception atoms (its Table 3 letters) on the matches of any collect or eval run (or match
folders), docs/claims.md "The judge": the atoms the logs decide (events, sights, the claim checker's
verdicts, the roles) are labelled deterministically; with ``--judge-model M`` (served OpenAI-compatible at
``--judge-base-url``, or any backend with ``--judge-backend``) an LLM judge labels all of them in two passes
as in the paper (non-verbal over the game log, verbal over the meeting chat and vote reasons), its answers
cached in <out>/judge_cache.jsonl, its cost per match from ``--price-prompt`` and ``--price-completion`` (USD
per million tokens), and its agreement with the deterministic labels on the decidable atoms reported (Cohen's
kappa, F1). ``--judge-model spot`` (or none) labels the decidable atoms only. The speech of free-text matches
(no structured claim in them: LLM seats, ``world.claims.mode`` off or free) is read as claims first, by the
phrasing reader or ``--extract-model M`` and gated on its F1 as in ``mau claims`` (docs/claims.md), so that
their verbal atoms (L, N, O, Q, S, W, M) rest on what was said. Writes judge.json and judge.md into --out
(default: the first RUN).
"""

from __future__ import annotations

import argparse

from mau.claimsread.config import JudgeConfig
from mau.commands.common import EXTRACT_FLAGS, Flag, check_extract, check_run_folders, require_matches
from mau.options import RunOptions

JUDGE_MD, JUDGE_JSON, JUDGE_CACHE = "judge.md", "judge.json", "judge_cache.jsonl"

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", key="runs", type=list),
    Flag("--out", "where judge.md and judge.json go (default: the first RUN)", key="out"),
    Flag("--judge-model", "the LLM judge's model (none or 'spot': the decidable atoms only, from the logs)",
         key="judge_model"),
    Flag("--judge-backend", "backend of --judge-model (default openai)", key="judge_backend"),
    Flag("--judge-base-url", "endpoint of --judge-model, e.g. "
                             "http://127.0.0.1:8000/v1", key="judge_base_url"),
    Flag("--judge-api-key-env", "environment variable holding the key of --judge-model's endpoint",
         key="judge_api_key_env"),
    Flag("--judge-max-tokens", "the judge's completion budget per pass (default "
                               "4096)", key="judge_max_tokens",
         type=int),
    Flag("--price-prompt", "USD per million prompt tokens of the judge (cost per match)", key="price_prompt",
         type=float),
    Flag("--price-completion", "USD per million completion tokens of the judge", key="price_completion",
         type=float),
    Flag("--max-matches", "judge at most N matches (the first N, sorted)", key="max_matches", type=int),
    *EXTRACT_FLAGS,
]
CONFIG = "mau.claimsread.config:JudgeConfig"


def config_from_args(args: argparse.Namespace) -> JudgeConfig:
    from mau.commands.common import load
    from mau.errors import ConfigError

    cfg = load(JudgeConfig, args, FLAGS)
    if (cfg.extract_model or "").lower() == "none":  # free speech not read: structured claims only
        cfg = cfg.model_copy(update={"extract_model": None})
    check_run_folders(cfg.runs)
    check_extract(cfg)
    if cfg.judge_model not in (None, "spot") and cfg.judge_backend == "openai" and not cfg.judge_base_url:
        raise ConfigError("--judge-base-url: needed for --judge-model with the openai backend (the endpoint "
                          "that serves it)")
    if cfg.max_matches is not None and cfg.max_matches < 1:
        raise ConfigError("--max-matches: must be at least 1")
    return cfg


async def _run(cfg: JudgeConfig, folders, out, extracted):
    """The judge's run (``mau.claimsread.judge_report``), with the LLM judge's backend opened and closed
    here."""
    from mau.claimsread import judge as J
    from mau.claimsread.judge_report import judge_matches
    from mau.harness.completion import open_completion

    if not cfg.judge_model or cfg.judge_model == "spot":
        return await judge_matches(cfg, folders, None, extracted)
    async with open_completion(cfg.judge_model, cfg.judge_backend, cfg.judge_base_url, cfg.judge_api_key_env,
                               cfg.judge_max_tokens) as complete:
        llm = J.LLMJudge(cfg.judge_model, complete, out / JUDGE_CACHE, cfg.price_prompt, cfg.price_completion)
        return await judge_matches(cfg, folders, llm, extracted)


def _free_speech(cfg: JudgeConfig, folders, out):
    """The speech of the free-text matches (no structured claim in them) read as claims, the reader's F1 on
    the labelled file first (refused below the gate unless --allow-weak-extractor): ({folder: {event index:
    claims}}, the extraction's report), or ({}, None)."""
    import asyncio

    from mau.claimsread.freetext import GATE, extract_runs
    from mau.claimsread.judge import has_structured_claims
    from mau.claimsread.report import extraction_lines
    from mau.errors import MauError

    free = [f for f in folders if not has_structured_claims(f)]
    if not free or not cfg.extract_model:
        return {}, None
    extracted, extraction = asyncio.run(extract_runs(cfg, free, out))
    if extraction["weak"] and not cfg.allow_weak_extractor and extraction["extracted_utterances"]:
        print("\n".join(extraction_lines(extraction)))
        raise MauError(f"--extract-model {cfg.extract_model}: F1 below {GATE} on {extraction['corpus_name']} "
                       f"({extraction['weak']}): the verbal atoms of free-text matches would rest on claims "
                       "the words did not make; nothing written (pass --allow-weak-extractor to judge "
                       "anyway, or --extract-model none)")
    return extracted, extraction


def main(cfg: JudgeConfig, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.claimsread.judge_report import markdown
    from mau.claimsread.metrics import match_folders

    require_matches(cfg.runs)
    folders = match_folders(cfg.runs)
    if cfg.max_matches:
        folders = folders[: cfg.max_matches]
    out = Path(cfg.out or cfg.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    extracted, extraction = _free_speech(cfg, folders, out)
    res = asyncio.run(_run(cfg, folders, out, extracted))
    res["extraction"] = extraction
    md = markdown(res)
    (out / JUDGE_MD).write_text(md)
    (out / JUDGE_JSON).write_text(json.dumps({"runs": [str(r) for r in cfg.runs], **res}, indent=1))
    print(md)
    print(f"judge: {res['matches']} matches -> {out}/{{{JUDGE_MD},{JUDGE_JSON}}}")
    return 0
