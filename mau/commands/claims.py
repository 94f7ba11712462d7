"""mau claims runs/claims/grid

The claims of any collect or eval run (or match folders) checked against what happened, role-blind
(docs/claims.md): every claim's verdict recomputed from events.jsonl and sights.jsonl (and compared with the
match-end claims.jsonl), per role the verdicts and ``false_share``, claim accuracy, lie rates, crew spatial errors,
liar votes and accusations with 95 % match-bootstrap intervals, by imposter model and by crewmate model (or arm),
and the checks of a scripted run (render -> parse, unlabelled facts TRUE, lies FALSE or UNSUPPORTED, checker time,
sights size). Writes claims.json and claims.md into --out (default: the first RUN) and prints the report.

With ``--extract-model M`` (a model served OpenAI-compatible at ``--extract-base-url``, or any backend with
``--extract-backend``) the utterances without structured claims are read as claims by that model in JSON mode
(cached in <out>/extract_cache.jsonl by prompt version, model and prompt), after its F1 is measured on the labelled
sample (``--extract-sample``, default mau/claims/data/extract_sample.jsonl); ``--extract-model spot`` uses the
template parser and word spotting instead (no model).
"""

from __future__ import annotations

import argparse

from mau.commands.common import Flag, check_run_folders
from mau.options import RunOptions

CLAIMS_MD, CLAIMS_JSON, EXTRACT_CACHE = "claims.md", "claims.json", "extract_cache.jsonl"

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", type=list),
    Flag("--out", "where claims.md and claims.json go (default: the first RUN)"),
    Flag("--resamples", "bootstrap resamples (default 1000)", type=int, default=1000),
    Flag("--seed", "bootstrap seed (default 0)", type=int, default=0),
    Flag("--extract-model", "read utterances without structured claims with this model ('spot': no model)"),
    Flag("--extract-backend", "backend of --extract-model (default openai)", default="openai"),
    Flag("--extract-base-url", "endpoint of --extract-model, e.g. http://127.0.0.1:8000/v1"),
    Flag("--extract-api-key-env", "environment variable holding the key of --extract-model's endpoint"),
    Flag("--extract-sample", "labelled sample the extractor's F1 is measured on (JSON lines; docs/claims.md)"),
]
CONFIG = None  # no config file: the flags are the whole configuration


def config_from_args(args: argparse.Namespace) -> argparse.Namespace:
    from pathlib import Path

    from mau.errors import ConfigError

    check_run_folders(args.runs, args.resamples)
    if args.extract_sample and not Path(args.extract_sample).is_file():
        raise ConfigError(f"--extract-sample {args.extract_sample}: no such file")
    if args.extract_model and args.extract_model != "spot" and args.extract_backend == "openai" \
            and not args.extract_base_url:
        raise ConfigError("--extract-base-url: needed for --extract-model with the openai backend (the endpoint "
                          "that serves it)")
    return args


def completion_fn(model_cfg):
    """An async ``messages -> (text or None, prompt tokens, completion tokens)`` over any backend, JSON mode,
    temperature 0: what mau.claims' extractor and judge call (they import no backend)."""
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelRequest

    backend = make_backend(model_cfg)

    async def complete(messages):
        r = await backend.complete(ModelRequest(messages=messages, module="extract", json_mode=True, temperature=0.0,
                                                max_tokens=model_cfg.max_tokens))
        return (r.text if r.error is None else None), r.prompt_tokens or 0, r.completion_tokens or 0

    return complete, backend


def model_config(model: str, backend: str, base_url: str | None, key_env: str | None, max_tokens: int = 512):
    from mau.harness.backends.base import ModelConfig

    return ModelConfig(backend=backend, model=model, base_url=base_url, api_key_env=key_env, max_tokens=max_tokens,
                       temperature=0.0, concurrency=4)


async def _extract(args: argparse.Namespace, folders, out):
    """{match folder: {event index: claims}} of the utterances without structured claims, and the extraction's
    report (its F1 on the labelled sample first)."""
    from pathlib import Path

    from mau import schema as F
    from mau.claims import extract as X
    from mau.claims.sights import read_lines
    from mau.matchdir import iter_events

    sample = X.load_sample(Path(args.extract_sample) if args.extract_sample else X.SAMPLE)
    backend = None
    if args.extract_model == "spot":
        async def read(text, ctx):
            return X.spot(text, ctx)
        stats: dict = {}
        name = "the template parser and word spotting (no model)"
    else:
        complete, backend = completion_fn(model_config(args.extract_model, args.extract_backend,
                                                       args.extract_base_url, args.extract_api_key_env))
        ex = X.Extractor(args.extract_model, complete, out / EXTRACT_CACHE)
        read, stats, name = ex.read, ex.stats, f"model {args.extract_model} ({args.extract_backend})"
    try:
        pred = [await read(text, ctx) for text, ctx, _ in sample]
        f1 = X.f1(pred, [g for _, _, g in sample])
        found: dict = {}
        n = 0
        for folder in folders:
            lines = read_lines(folder)
            if not lines:
                continue
            names, places = tuple(lines[0][F.SIGHT_PLAYERS]), tuple(lines[0][F.SIGHT_PLACE_NAMES])
            since, per = 0.0, {}
            for e in iter_events(folder):
                if e[F.TYPE] == F.EV_MEETING_END:
                    since = e[F.TICK] / 20
                elif e[F.TYPE] == F.EV_UTTERANCE and not e.get(F.CLAIMS):
                    ctx = X.Context(e[F.SPEAKER], names, places, e[F.TICK] / 20, since)
                    per[e[F.EVENT_INDEX]] = await read(e[F.UTTERANCE_TEXT], ctx)
                    n += 1
            if per:
                found[folder] = per
    finally:
        if backend is not None:
            await backend.aclose()
    report = {"extractor": name, "prompt_version": X.PROMPT_VERSION, "sample": str(args.extract_sample or X.SAMPLE),
              "sample_n": len(sample), "f1": f1, "extracted_utterances": n, "cached": stats.get("cached", 0),
              "calls": stats.get("calls", 0), "fallbacks": stats.get("fallbacks", 0)}
    return found, report


def main(args: argparse.Namespace, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.claims import metrics, report

    folders = metrics.match_folders(args.runs)
    out = Path(args.out or args.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    extracted, extraction = {}, None
    if args.extract_model:
        extracted, extraction = asyncio.run(_extract(args, folders, out))
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
