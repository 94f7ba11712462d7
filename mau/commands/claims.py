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
<out>/extract_cache.jsonl. The extractor's F1 is measured first on the held-out split of the labelled corpus
(``--extract-corpus``); below 0.9 (pooled or for any claim kind) no lie rate is printed unless
``--allow-weak-extractor``; the F1 is printed beside every table.
"""

from __future__ import annotations

import argparse

from mau.commands.common import Flag, check_run_folders
from mau.options import RunOptions
from mau.schema import TICKS_PER_SECOND

CLAIMS_MD, CLAIMS_JSON, EXTRACT_CACHE = "claims.md", "claims.json", "extract_cache.jsonl"
GATE = 0.9  # the F1 an extractor needs (pooled and per kind) before its lie rates are printed

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", type=list),
    Flag("--out", "where claims.md and claims.json go (default: the first RUN)"),
    Flag("--resamples", "bootstrap resamples (default 1000)", type=int, default=1000),
    Flag("--seed", "bootstrap seed (default 0)", type=int, default=0),
    Flag("--extract-model", "read utterances without structured claims with this model ('spot': no model; a "
                            "local folder for --extract-backend lm or hf)"),
    Flag("--extract-backend", "backend of --extract-model (default openai)", default="openai"),
    Flag("--extract-base-url", "endpoint of --extract-model, e.g. http://127.0.0.1:8000/v1"),
    Flag("--extract-api-key-env", "environment variable holding the key of --extract-model's endpoint"),
    Flag("--extract-max-tokens", "the extractor's completion budget per utterance (default 512)", type=int,
         default=512),
    Flag("--extract-retries", "asks again after an answer without a claims list (default "
                              "2)", type=int, default=2),
    Flag("--extract-corpus", "labelled corpus the extractor's F1 is measured on (default: the shipped one; "
                             "docs/claims.md)"),
    Flag("--extract-split", "the corpus split it is measured on (default held)", default="held"),
    Flag("--extract-limit", "measure on the first N sentences of the split only (slow local "
                            "models)", type=int),
    Flag("--allow-weak-extractor", "print lie rates even when the extractor's F1 is below 0.9", type=bool),
]
CONFIG = None  # no config file: the flags are the whole configuration


def config_from_args(args: argparse.Namespace) -> argparse.Namespace:
    from pathlib import Path

    from mau.errors import ConfigError

    check_run_folders(args.runs, args.resamples)
    if args.extract_corpus and not Path(args.extract_corpus).is_file():
        raise ConfigError(f"--extract-corpus {args.extract_corpus}: no such file; give a labelled corpus "
                          "(docs/claims.md, 'The labelled corpus')")
    if args.extract_model and args.extract_model != "spot" and args.extract_backend == "openai" \
            and not args.extract_base_url:
        raise ConfigError("--extract-base-url: needed for --extract-model with the openai backend (the "
                          "endpoint that serves it)")
    if args.extract_limit is not None and args.extract_limit < 1:
        raise ConfigError("--extract-limit: must be at least 1")
    if args.extract_retries < 0:
        raise ConfigError("--extract-retries: must be 0 or more")
    return args


def completion_fn(model_cfg, module: str = "extract"):
    """An async ``messages -> (text or None, prompt tokens, completion tokens)`` over any backend, JSON mode,
    temperature 0: what mau.eval's extractor and judge call (they import no backend)."""
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelRequest

    backend = make_backend(model_cfg)

    async def complete(messages):
        r = await backend.complete(
            ModelRequest(
                messages=messages, module=module, json_mode=True, temperature=0.0,
                max_tokens=model_cfg.max_tokens,
            )
        )
        return (r.text if r.error is None else None), r.prompt_tokens or 0, r.completion_tokens or 0

    return complete, backend


def model_config(model: str, backend: str, base_url: str | None, key_env: str | None, max_tokens: int = 512):
    from mau.harness.backends.base import ModelConfig

    return ModelConfig(
        backend=backend, model=model, base_url=base_url, api_key_env=key_env, max_tokens=max_tokens,
        temperature=0.0, concurrency=4,
    )


def weakness(score: dict, gate: float = GATE) -> str | None:
    """Why an extractor's F1 is below the gate (pooled or a kind with gold claims), or None."""
    low = [(k, v["f1"]) for k, v in [("pooled", score["pooled"]), *score["per_kind"].items()]
           if v["gold"] and (v["f1"] or 0.0) < gate]
    return ", ".join(f"{k} {f or 0:.3f}" for k, f in low) or None


async def _extract(args: argparse.Namespace, folders, out):
    """{match folder: {event index: claims}} of the utterances without structured claims, and the extraction's
    report (its F1 on the labelled corpus first)."""
    from pathlib import Path

    from mau import schema as F
    from mau.claims.sights import read_lines
    from mau.eval import claims_extract as X
    from mau.eval.claims_corpus import SENTENCES
    from mau.matchdir import iter_events

    corpus = Path(args.extract_corpus) if args.extract_corpus else SENTENCES
    sample = X.load_labelled(corpus, args.extract_split)[: args.extract_limit]
    backend, ex = None, None
    if args.extract_model == "spot":
        async def read(text, ctx):
            return X.spot(text, ctx)
        name = "the template parser and phrasing reader (spot, no model)"
    else:
        complete, backend = completion_fn(model_config(args.extract_model, args.extract_backend,
                                                       args.extract_base_url, args.extract_api_key_env,
                                                       args.extract_max_tokens))
        ex = X.Extractor(args.extract_model, complete, out / EXTRACT_CACHE, retries=args.extract_retries)
        read, name = ex.read, f"model {args.extract_model} ({args.extract_backend})"
    try:
        pred = [await read(text, ctx) for text, ctx, _ in sample]
        gold = [g for _, _, g in sample]
        score, loose = X.score(pred, gold), X.score(pred, gold, X.loose_key)["pooled"]
        found: dict = {}
        speech_pred, speech_gold = [], []
        for folder in folders:
            lines = read_lines(folder)
            if not lines:
                continue
            names, places = tuple(lines[0][F.SIGHT_PLAYERS]), tuple(lines[0][F.SIGHT_PLACE_NAMES])
            since, per = 0.0, {}
            for e in iter_events(folder):
                if e[F.TYPE] == F.EV_MEETING_END:
                    since = e[F.TICK] / TICKS_PER_SECOND
                elif e[F.TYPE] == F.EV_UTTERANCE and not e.get(F.CLAIMS):
                    ctx = X.Context(e[F.SPEAKER], names, places, e[F.TICK] / TICKS_PER_SECOND, since)
                    per[e[F.EVENT_INDEX]] = await read(e[F.UTTERANCE_TEXT], ctx)
                    if F.CLAIMS_GOLD in e:  # free mode: what the words said
                        speech_pred.append(per[e[F.EVENT_INDEX]])
                        speech_gold.append(e.get(F.CLAIMS_GOLD) or [])
            if per:
                found[folder] = per
    finally:
        if backend is not None:
            await backend.aclose()
    report = {
        "extractor": name, "model": args.extract_model, "prompt_version": X.PROMPT_VERSION,
        "corpus": str(corpus), "corpus_name": corpus.name, "split": args.extract_split, "n": len(sample),
        "score": score, "loose": loose, "stats": dict(ex.stats) if ex else {}, "gate": GATE,
        "weak": weakness(score), "allowed_weak": bool(args.allow_weak_extractor),
        "extracted_utterances": sum(len(v) for v in found.values()),
        "speech": X.score(speech_pred, speech_gold) if speech_gold else None,
    }
    return found, report


def main(args: argparse.Namespace, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.errors import MauError
    from mau.eval import claims_metrics as metrics
    from mau.eval import claims_report as report

    folders = metrics.match_folders(args.runs)
    out = Path(args.out or args.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    extracted, extraction = {}, None
    if args.extract_model:
        extracted, extraction = asyncio.run(_extract(args, folders, out))
        if extraction["weak"] and not args.allow_weak_extractor:
            print("\n".join(report.extraction_lines(extraction)))
            raise MauError(f"--extract-model {args.extract_model}: F1 below {GATE} on the "
                           f"{args.extract_split} split ({extraction['weak']}): its lie rates would not mean "
                           f"what they say; no report written "
                           "(pass --allow-weak-extractor to print them anyway)")
    ms = [metrics.load(f, extracted.get(f)) for f in folders]
    ev = metrics.evaluate(ms, args.resamples, args.seed)
    mismatched = [m.match_id for m in ms if m.identical is False]
    md = report.markdown(ev, [str(r) for r in args.runs], extraction)
    (out / CLAIMS_MD).write_text(md)
    (out / CLAIMS_JSON).write_text(json.dumps({"runs": [str(r) for r in args.runs], "extraction": extraction,
                                               "mismatched_matches": mismatched, **ev}, indent=1))
    print(md)
    if mismatched:
        print(f"claims: {len(mismatched)} matches' verdicts differ from their match-end claims.jsonl (first: "
              f"{mismatched[0]}); the files were written by another checker version")
    print(f"claims: {len(ms)} matches -> {out}/{{{CLAIMS_MD},{CLAIMS_JSON}}}")
    return 0
