"""The labelled corpus of claims in words (docs/claims.md, "The labelled corpus"): sentences an extractor is
scored on, each with its gold claims.

Two files in ``mau/claimsread/data``:

- ``claims_corpus_seed.jsonl``: the **sources**, the claims scripted speakers made (true ones and labelled
  lies) in structured-claims matches, one utterance a line with its match's seed and event index, the
  speaker, the meeting's time and the last meeting's end; a first line holds the roster and the places. Two
  splits from two collect runs of ``configs/collect/claims.yaml`` with other seeds: ``dev``
  (``grid.seed=60000``) and ``held`` (``grid.seed=61000``).
- ``claims_corpus.jsonl``: the **sentences**, made from the sources by ``mau.claims.paraphrase`` (the ``dev``
  phrasings for the dev split; the held split also draws the ``held`` phrasings, never seen in the dev split):
  one to three claims of a source utterance in one sentence, each said with its time, rounded, relative or
  without one, hedged or not, names misspelled at times, negated distractors between; a few sentences say no
  claim at all. Each line keeps its seed (the random stream it was drawn from) and its source, so the file is
  reproduced byte for byte from the sources (a test does).

    python -m mau.claimsread.corpus sources --dev runs/claims/corpus_dev --held runs/claims/corpus_held
    python -m mau.claimsread.corpus sentences

Extractors are built on the dev split and measured on the held split (``mau claims --extract-model``).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.claims.grammar import Scope, validate_all
from mau.claims.paraphrase import CORPUS, say
from mau.schema import TICKS_PER_SECOND

DATA = Path(__file__).parent / "data"
SOURCES = DATA / "claims_corpus_seed.jsonl"
SENTENCES = DATA / "claims_corpus.jsonl"
# the evaluation set of free speech, written and labelled by hand (docs/claims.md): the gate's default
SPEECH = DATA / "claims_speech.jsonl"
SPLITS = ("dev", "held")
PER_SPLIT = {"dev": 600, "held": 600}
SOURCES_PER_SPLIT = 300
NO_CLAIM = 0.04  # the share of sentences that say no claim (negations and fillers only)
VERSION = 1


def _dumps(d: dict[str, Any]) -> str:
    return json.dumps(d, separators=(",", ":"), sort_keys=False)


def source_lines(
    run: str | Path, split: str, limit: int = SOURCES_PER_SPLIT
) -> tuple[dict[str, Any], list[dict]]:
    """(legend, sources) of a structured-claims run: every utterance with claims, in match order, thinned to
    ``limit`` by a seeded draw that keeps every utterance with a rare kind (saw_kill, body, with, task)."""
    from mau.claims.sights import read_lines
    from mau.matchdir import finished_matches, iter_events, read_header

    legend: dict[str, Any] = {}
    out = []
    for m in finished_matches(run):
        header = read_header(m)
        lines = read_lines(m, header)
        if not lines:
            continue
        legend = {
            "version": VERSION, "names": lines[0][F.SIGHT_PLAYERS], "places": lines[0][F.SIGHT_PLACE_NAMES],
        }
        since = 0.0
        for e in iter_events(m):
            if e[F.TYPE] == F.EV_MEETING_END:
                since = e[F.TICK] / TICKS_PER_SECOND
            elif e[F.TYPE] == F.EV_UTTERANCE and e.get(F.CLAIMS):
                out.append(
                    {
                        "split": split, "match_seed": header[F.SEED], "event": e[F.EVENT_INDEX],
                        "speaker": e[F.SPEAKER], "meeting_s": e[F.TICK] / TICKS_PER_SECOND, "since_s": since,
                        "claims": e[F.CLAIMS], "intent": e.get(F.CLAIM_INTENT) or [None] * len(e[F.CLAIMS]),
                    }
                )
    rare = [s for s in out if {c["k"] for c in s["claims"]} & {"saw_kill", "body", "with", "task"}]
    rest = [s for s in out if s not in rare]
    rng = random.Random(f"mau-claims-corpus-sources-{split}")
    keep = rare + rng.sample(rest, max(0, min(len(rest), limit - len(rare))))
    order = {id(s): i for i, s in enumerate(out)}
    return legend, sorted(keep, key=lambda s: order[id(s)])


def _drawn_from(run: str | Path) -> dict[str, Any]:
    """Where a split's sources come from: the run's grid seed and repetitions, the commit that played it."""
    import yaml

    cfg = yaml.safe_load((Path(run) / F.RESOLVED_CONFIG).read_text()) or {}
    prov = (
        json.loads((Path(run) / "provenance.json").read_text())
        if (Path(run) / "provenance.json").is_file()
        else {}
    )
    grid = cfg.get("grid") or {}
    return {"grid_seed": grid.get("seed"), "repetitions": grid.get("repetitions"),
            "claims": (cfg.get("world") or {}).get("claims"), "git_commit": prov.get("git_commit")}


def write_sources(dev: str | Path, held: str | Path, path: Path = SOURCES) -> Path:
    legend, a = source_lines(dev, "dev")
    _, b = source_lines(held, "held")
    legend["drawn_from"] = {"config": "configs/collect/claims.yaml", "dev": _drawn_from(dev),
                            "held": _drawn_from(held)}
    path.write_text("".join(_dumps(x) + "\n" for x in [legend] + a + b))
    return path


def read_sources(path: Path = SOURCES) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return lines[0], lines[1:]


def _weights(sources: list[dict[str, Any]]) -> list[float]:
    """Rare kinds drawn more often, so that every kind has enough gold claims to be scored on its own."""
    freq = Counter(c["k"] for s in sources for c in s["claims"])
    return [max(1.0 / freq[c["k"]] for c in s["claims"]) for s in sources]


def sentence(legend: dict[str, Any], src: dict[str, Any], split: str, j: int) -> dict[str, Any]:
    """The ``j``-th sentence of ``split`` from source ``src`` (its own seeded stream)."""
    seed = f"mau-claims-corpus-{split}-{j}"
    rng = random.Random(seed)
    names, places = legend["names"], legend["places"]
    style = replace(CORPUS, pool="dev" if split == "dev" else "all")
    claims = src["claims"]
    if rng.random() < NO_CLAIM:
        chosen: list[dict[str, Any]] = []
        style = replace(style, negation=1.0, filler=1.0)
    else:
        n = rng.choice([1, 1, 2, 2, 3])
        idx = sorted(rng.sample(range(len(claims)), min(n, len(claims))))
        chosen = [claims[i] for i in idx]
    text, gold = say(chosen, src["speaker"], rng, style, names, places, src["meeting_s"], src["since_s"])
    scope = Scope(tuple(names), src["speaker"], tuple(places), 10 ** 6, src["meeting_s"])
    kept, _, dropped = validate_all(gold, scope, limit=50)
    assert not dropped, (seed, dropped)
    return {"id": f"{split}-{j}", "split": split, "seed": seed, "source": [src["match_seed"], src["event"]],
            "speaker": src["speaker"], "meeting_s": src["meeting_s"], "since_s": src["since_s"], "text": text,
            "claims": kept}


def sentences(legend: dict[str, Any], sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for split in SPLITS:
        mine = [s for s in sources if s["split"] == split]
        weights = _weights(mine)
        for j in range(PER_SPLIT[split]):
            src = random.Random(f"mau-claims-corpus-pick-{split}-{j}").choices(mine, weights=weights)[0]
            out.append(sentence(legend, src, split, j))
    return out


def write_sentences(sources: Path = SOURCES, path: Path = SENTENCES) -> Path:
    legend, src = read_sources(sources)
    head = {"version": VERSION, "names": legend["names"], "places": legend["places"], "sources": sources.name}
    path.write_text("".join(_dumps(x) + "\n" for x in [head] + sentences(legend, src)))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mau.claimsread.corpus", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sources", help="the sources from two structured-claims runs (dev, held)")
    s.add_argument("--dev", required=True)
    s.add_argument("--held", required=True)
    sub.add_parser("sentences", help="the sentences from the sources")
    a = p.parse_args(argv)
    if a.what == "sources":
        print(write_sources(a.dev, a.held))
    else:
        print(write_sentences())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
