"""Free text of finished matches read as claims (``mau claims --extract-model``): the reader's F1 on the
labelled corpus first, then every utterance without structured claims of the runs' matches, read with the
meeting's context. The reader is ``spot`` (the template parser and the phrasing reader, no model) or a model
through a
completion function the caller passes in (``mau.harness.completion``): this module imports no backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mau import schema as F
from mau.claimsread.config import ExtractFields

GATE = 0.9  # the F1 an extractor needs (pooled and per kind) before its lie rates are printed
EXTRACT_CACHE = "extract_cache.jsonl"


def weakness(score: dict, gate: float = GATE) -> str | None:
    """Why an extractor's F1 is below the gate (pooled or a kind with gold claims), or None."""
    low = [(k, v["f1"]) for k, v in [("pooled", score["pooled"]), *score["per_kind"].items()]
           if v["gold"] and (v["f1"] or 0.0) < gate]
    return ", ".join(f"{k} {f or 0:.3f}" for k, f in low) or None


async def read_runs(cfg: ExtractFields, folders: list[Path], out: Path,
                    complete: Any = None) -> tuple[dict[Path, dict[int, Any]], dict[str, Any]]:
    """{match folder: {event index: claims}} of the utterances without structured claims, and the extraction's
    report (its F1 on the labelled corpus first). ``complete``: the model's completion function (None for
    ``spot``)."""
    from mau.claims.sights import read_lines
    from mau.claimsread import extract as X
    from mau.claimsread.corpus import SPEECH
    from mau.matchdir import iter_events

    corpus = Path(cfg.extract_corpus) if cfg.extract_corpus else SPEECH
    sample = X.load_labelled(corpus, cfg.extract_split)[: cfg.extract_limit]
    ex = None
    if complete is None:
        async def read(text, ctx):
            return X.spot(text, ctx)
        name = "the template parser and phrasing reader (spot, no model)"
    else:
        ex = X.Extractor(cfg.extract_model, complete, out / EXTRACT_CACHE, retries=cfg.extract_retries)
        read, name = ex.read, f"model {cfg.extract_model} ({cfg.extract_backend})"
    pred = [await read(text, ctx) for text, ctx, _ in sample]
    gold = [g for _, _, g in sample]
    score, loose = X.score(pred, gold), X.score(pred, gold, X.loose_key)["pooled"]
    # speech that states no claim of the speaker (reported speech, questions, plans): how often one is read
    silent = [p for p, g in zip(pred, gold) if not g]
    no_claim = {"sentences": len(silent), "yield_a_claim": sum(1 for p in silent if p)}
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
                since = e[F.TICK] / F.TICKS_PER_SECOND
            elif e[F.TYPE] == F.EV_UTTERANCE and not e.get(F.CLAIMS):
                ctx = X.Context(e[F.SPEAKER], names, places, e[F.TICK] / F.TICKS_PER_SECOND, since)
                per[e[F.EVENT_INDEX]] = await read(e[F.UTTERANCE_TEXT], ctx)
                if F.CLAIMS_GOLD in e:  # free mode: what the words said
                    speech_pred.append(per[e[F.EVENT_INDEX]])
                    speech_gold.append(e.get(F.CLAIMS_GOLD) or [])
        if per:
            found[folder] = per
    report = {
        "extractor": name, "model": cfg.extract_model, "prompt_version": X.PROMPT_VERSION,
        "corpus": str(corpus), "corpus_name": corpus.name, "split": cfg.extract_split, "n": len(sample),
        "score": score, "loose": loose, "no_claim": no_claim, "stats": dict(ex.stats) if ex else {},
        "gate": GATE,
        "weak": weakness(score), "allowed_weak": bool(cfg.allow_weak_extractor),
        "extracted_utterances": sum(len(v) for v in found.values()),
        "speech": X.score(speech_pred, speech_gold) if speech_gold else None,
    }
    return found, report


Extracted = tuple[dict[Path, dict[int, Any]], dict[str, Any]]  # {folder: {event index: claims}}, the report


async def extract_runs(cfg: ExtractFields, folders: list[Path], out: Path) -> Extracted:
    """``read_runs`` with ``cfg.extract_model``: the phrasing reader, or a model whose backend is opened and
    closed here (``mau.harness.completion``)."""
    from mau.harness.completion import open_completion

    if cfg.extract_model == "spot":
        return await read_runs(cfg, folders, out)
    async with open_completion(cfg.extract_model, cfg.extract_backend, cfg.extract_base_url,
                               cfg.extract_api_key_env, cfg.extract_max_tokens) as complete:
        return await read_runs(cfg, folders, out, complete)
