"""Role tells in phrasing: how well the speaker's role can be told from the form of its sentences alone.

A detector should read content (what is true, what was seen), never habits of phrasing that only one role has.
This reader masks every name, place and number of each meeting utterance ("That is not true, I was in Admin."
-> "that is not true, i was in R."), splits it into sentences (the templates), and fits a multinomial naive
Bayes over templates for P(imposter) of each speaker in each meeting (a speaker's templates over the whole
meeting; a speaker who passed every turn has the one template ``<silent>``). It is scored **within each
meeting** (AUROC over the meeting's speakers, the meetings with both roles, averaged; chance 0.5), fitted
either on other runs (``train``) or, without them, leaving one match out at a time. docs/detection.md, "Role
tells in phrasing", gives the figures; the tests bound it on a held-out grid (issue 29: <= 0.60).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from mau import schema as F
from mau.matchdir import finished_matches, iter_events, read_header

SILENT = "<silent>"
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=8)
def _place_pattern(map_name: str) -> re.Pattern[str]:
    from mau.env.map import load_map

    m = load_map(map_name)
    names = {r.name for r in m.regions} | set(m.room_names)
    return re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))


def templates(text: str, names: list[str], map_name: str = "skeld") -> list[str]:
    """The sentence templates of one utterance: names -> P, places -> R, numbers -> N, lower case."""
    t = _place_pattern(map_name).sub("R", text or "")
    if names:
        t = re.sub(
            r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b", "P", t
        )
    t = _NUMBER.sub("N", t)
    out = []
    for s in _SENTENCE.findall(t):
        s = _SPACES.sub(" ", s).strip().lower()
        if s:
            out.append(s)
    return out


@dataclass
class Speaker:
    """One player's speech in one meeting."""

    match: str
    meeting: int
    name: str
    imposter: bool
    templates: Counter = field(default_factory=Counter)


def read_speakers(folder: str | Path) -> list[Speaker]:
    """Every player alive at each meeting of a match folder, with the templates it said (``<silent>``:
    none)."""
    h = read_header(folder)
    return speakers_of(iter_events(folder), h[F.ROLES], str(h.get(F.MATCH_ID) or Path(folder).name),
                       str(h.get(F.MAP) or "skeld"))


def speakers_of(events: Any, roles: dict[str, str], match: str, map_name: str = "skeld") -> list[Speaker]:
    """``read_speakers`` of a match's events (an iterable of event dicts) and roles."""
    names = list(roles)
    out: list[Speaker] = []
    current: dict[str, Speaker] = {}
    meeting = 0
    for e in events:
        if e[F.TYPE] == F.EV_MEETING_START:
            meeting += 1
            current = {n: Speaker(match, meeting, n, roles.get(n) == F.IMPOSTER) for n in e["order"]}
            out += current.values()
        elif e[F.TYPE] == F.EV_UTTERANCE and e.get(F.SPEAKER) in current:
            current[e[F.SPEAKER]].templates.update(templates(e.get(F.UTTERANCE_TEXT) or "", names, map_name))
    for s in out:
        if not s.templates:
            s.templates[SILENT] += 1
    return out


class NaiveBayes:
    """Multinomial naive Bayes over templates, add-one smoothing; ``score`` is the log-odds imposter :
    crewmate (the class prior left out: it is the same for every speaker of a meeting)."""

    def __init__(self, speakers: list[Speaker]):
        self.counts = {True: Counter(), False: Counter()}
        for s in speakers:
            self.counts[s.imposter].update(s.templates)
        self.vocab = set(self.counts[True]) | set(self.counts[False])
        self.totals = {k: sum(c.values()) for k, c in self.counts.items()}

    def score(self, s: Speaker) -> float:
        v = len(self.vocab) + 1
        out = 0.0
        for t, n in s.templates.items():
            pi = (self.counts[True][t] + 1) / (self.totals[True] + v)
            pc = (self.counts[False][t] + 1) / (self.totals[False] + v)
            out += n * math.log(pi / pc)
        return out


def _auroc(scores: list[float], ys: list[bool]) -> float | None:
    from mau.eval.detection import auroc

    y = np.asarray(ys, float)
    return auroc(np.asarray(scores, float), y)


def within_meeting_auroc(scored: list[tuple[Speaker, float]]) -> tuple[float | None, int]:
    """Mean over meetings with both roles of the AUROC of the scores among that meeting's speakers; (value,
    n)."""
    by: dict[tuple[str, int], list[tuple[Speaker, float]]] = {}
    for s, x in scored:
        by.setdefault((s.match, s.meeting), []).append((s, x))
    vals = [
        a
        for rows in by.values()
        if (a := _auroc([x for _, x in rows], [s.imposter for s, _ in rows])) is not None
    ]
    return (float(np.mean(vals)) if vals else None), len(vals)


def run_speakers(runs: list[str | Path]) -> list[Speaker]:
    return [s for r in runs for f in finished_matches(r) for s in read_speakers(f)]


def phrasing_report(test_runs: list[str | Path], train_runs: list[str | Path] | None = None,
                    top: int = 8) -> dict[str, Any]:
    """The phrasing-only classifier's within-meeting AUROC on ``test_runs``: fitted on ``train_runs``, or
    leaving one match out at a time without them; with the templates that tell most (counts per role)."""
    test = run_speakers(test_runs)
    if train_runs:
        nb = NaiveBayes(run_speakers(train_runs))
        scored = [(s, nb.score(s)) for s in test]
        how = "fitted on other runs"
    else:
        by_match: dict[str, list[Speaker]] = {}
        for s in test:
            by_match.setdefault(s.match, []).append(s)
        scored = []
        for m, ss in by_match.items():
            nb = NaiveBayes([s for s in test if s.match != m])
            scored += [(s, nb.score(s)) for s in ss]
        how = "leave one match out"
    value, n = within_meeting_auroc(scored)
    roles = {True: Counter(), False: Counter()}
    for s in test:
        roles[s.imposter].update(s.templates)
    ni, nc = max(1, sum(1 for s in test if s.imposter)), max(1, sum(1 for s in test if not s.imposter))
    skew = sorted(
        set(roles[True]) | set(roles[False]),
        key=lambda t: -abs(math.log((roles[True][t] + 1) / ni) - math.log((roles[False][t] + 1) / nc)),
    )
    tells = [{"template": t, F.IMPOSTER: roles[True][t], F.CREWMATE: roles[False][t]} for t in skew[:top]]
    return {"auroc_within_meeting": value, "meetings": n, "speakers": len(test), "fit": how,
            "imposter_speakers": sum(1 for s in test if s.imposter),
            "crewmate_speakers": sum(1 for s in test if not s.imposter), "tells": tells}


def phrasing_markdown(rep: dict[str, Any], level: str = "##") -> str:
    v = rep["auroc_within_meeting"]
    lines = [f"{level} Role tells in phrasing", "",
             "A naive Bayes over each speaker's sentence templates in a meeting (names, places and numbers "
             "masked; "
             f"{rep['fit']}), scored within each meeting (chance 0.5): how much of the role the form of "
             f"speech "
             "gives away, whatever is true. docs/detection.md, \"Role tells in phrasing\".", "",
             f"Within-meeting AUROC: **{'n/a' if v is None else f'{v:.3f}'}** over {rep['meetings']} "
             f"meetings ({rep['imposter_speakers']} imposter and {rep['crewmate_speakers']} crewmate "
             f"speakers).", "",
             "| template | imposter uses | crewmate uses |", "|---|---|---|"]
    lines += [f"| {t['template']} | {t['imposter']} | {t['crewmate']} |" for t in rep["tells"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m mau.eval.phrasing TEST_RUN... [--train TRAIN_RUN...]``: the phrasing-only classifier
    fitted on the train runs (else leaving one match out) and scored within each meeting of the test runs, as
    markdown."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m mau.eval.phrasing", description=main.__doc__)
    ap.add_argument("runs", nargs="+", help="runs (or match folders) to score")
    ap.add_argument("--train", nargs="+", default=None, help="runs to fit on (default: leave one match out)")
    args = ap.parse_args(argv)
    print(phrasing_markdown(phrasing_report(args.runs, args.train)))


if __name__ == "__main__":
    main()
