"""The eval's numbers, from match folders alone (their headers and ground-truth event logs).

Per arm x imposter model: crew win rate, ejection recall and precision, imposters ejected, kills and missions
completed per game, and the endings; each with n and a 95% interval:

- crew win rate: Wilson score interval (matches are independent Bernoulli trials);
- recall, precision: match-level percentile bootstrap of the ratio of sums (ejections cluster within matches:
  one meeting's vote decides for the whole table, so the imposters of a match are not independent trials);
- per-game means: match-level percentile bootstrap of the mean.

The paired comparison of an arm with the baseline pairs the matches of the same seed (and imposter model): the
difference in crew win rate with a percentile bootstrap over the pairs, the counts of pairs the arm won and
the baseline lost (and the reverse, and ties), and the exact McNemar (two-sided sign test on the discordant
pairs). Bootstraps are seeded: the same folders give the same report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mau import schema as F
from mau.eval.config import POOLED
from mau.matchdir import count_events, finished_matches, iter_events, read_header
from mau.schema import CREW_OUTCOMES, IMPOSTER, OUTCOMES
from mau.stats import Estimate, mean_bootstrap, paired_bootstrap, proportion, ratio_bootstrap

# metric name -> (title, what n counts, interval method); the order of the report's tables
METRICS: dict[str, tuple[str, str, str]] = {
    "crew_win_rate": ("Crew win rate (%)", "matches", "wilson"),
    "ejection_recall": ("Ejection recall (%): imposters ejected / imposters fielded", "imposters "
                                                                                      "fielded", "bootstrap"),
    "ejection_precision": ("Ejection precision (%): imposters ejected / all "
                           "ejections", "ejections", "bootstrap"),
    "vote_precision": ("Crew vote precision (%): crewmate votes naming an imposter / crewmate votes naming "
                       "anyone",
                       "named crewmate votes", "bootstrap"),
    "vote_skip_share": ("Crew skip share (%): crewmate votes that skip / all crewmate votes", "crewmate "
                                                                                              "votes",
                        "bootstrap"),
    # how the imposters played (issue 43: a planner wins by skipping and by accusing its own partner)
    "imposter_skip_share": ("Imposter skip share (%): imposter votes that skip / all imposter votes",
                            "imposter votes", "bootstrap"),
    "imposter_partner_votes": ("Imposter partner votes (%): imposter votes naming the other imposter / "
                               "imposter votes naming anyone", "named imposter votes", "bootstrap"),
    "imposter_partner_accusations": ("Imposter partner accusations (%): imposters' accusations in meeting "
                                     "speech naming the other imposter / all their accusations",
                                     "imposter accusations", "bootstrap"),
    "meetings_per_game": ("Meetings per game", "matches", "bootstrap"),
    "imposters_ejected_per_game": ("Imposters ejected per game", "matches", "bootstrap"),
    "kills_per_game": ("Kills per game", "matches", "bootstrap"),
    "missions_per_game": ("Missions completed per game", "matches", "bootstrap"),
    # diagnostics, not results: a dead server or a model that cannot answer in format shows up here
    "fallback_share": ("Fallback share of the arm's own calls (%): the crewmate calls its model was asked "
                       "(with arm_modules, only those modules), answered by a "
                       "fallback", "calls", "bootstrap"),
    "imposter_fallback_share": ("Fallback share of the imposters' model calls (%)", "calls", "bootstrap"),
}
PERCENT = {"crew_win_rate", "ejection_recall", "ejection_precision", "vote_precision", "vote_skip_share",
           "imposter_skip_share", "imposter_partner_votes", "imposter_partner_accusations", "fallback_share",
           "imposter_fallback_share"}
METHODS = {
    "wilson": "95% Wilson score interval",
    "bootstrap": "95% percentile interval of a match-level bootstrap (matches resampled with replacement)",
    "paired_bootstrap": "95% percentile interval of a paired bootstrap (seed pairs resampled with "
                        "replacement)",
    "count": "count",
}


@dataclass(frozen=True)
class MatchStats:
    """What the eval counts in one match."""

    match_id: str
    arm: str
    imposter: str
    seed: int
    outcome: str
    imposters_fielded: int
    ejections: int  # ejection events that ejected somebody (skips and ties eject nobody)
    imposters_ejected: int
    kills: int
    missions: int  # mission_complete events (real missions: imposters only fake them)
    meetings: int = 0
    crew_votes: int = 0  # votes cast by crewmates (a vote missing at the count is not one)
    crew_skips: int = 0
    crew_votes_on_imposters: int = 0
    imposter_votes: int = 0  # votes cast by imposters (``count_events``)
    imposter_skips: int = 0
    imposter_votes_on_partner: int = 0
    imposter_accusations: int = 0  # accusations in imposters' meeting speech (mau.infer.hearsay)
    imposter_accusations_on_partner: int = 0
    calls: int = 0  # model calls of both sides (the header's count)
    fallbacks: int = 0  # of which answered by the module's fallback
    arm_calls: int = 0  # crewmate calls sent to the arm's own model (not arm_rest_model)
    arm_fallbacks: int = 0
    arm_answered: int = 0  # of which the model gave text (no backend error)
    imposter_calls: int = 0  # imposter calls sent to the imposters' model
    imposter_fallbacks: int = 0

    @property
    def crew_won(self) -> bool:
        return self.outcome in CREW_OUTCOMES


def match_stats(folder: str | Path) -> MatchStats:
    """Count one match folder: roles and outcome from the header, the rest from the event log."""
    h = read_header(folder)
    g = h.get(F.GRID, {})
    roles = h[F.ROLES]
    events = list(iter_events(folder))  # read once: the counts and the imposters' speech
    c = count_events(folder, events)
    return MatchStats(
        match_id=str(h.get(F.MATCH_ID) or Path(folder).name), arm=str(g.get(F.ARM, h.get(F.ARM, "?"))),
        imposter=str(g.get(F.EVAL_IMPOSTER, g.get(F.IMPOSTER_MODEL, "?"))), seed=int(h[F.SEED]),
        outcome=str(h[F.OUTCOME]), imposters_fielded=sum(r == IMPOSTER for r in roles.values()), **c,
        **imposter_accusations(events, roles),
        calls=int(h.get("calls", {}).get("calls", 0)), fallbacks=int(h.get("calls", {}).get("fallbacks", 0)),
        **_side_counts(h.get("calls", {})),
    )


def imposter_accusations(events: list[dict[str, Any]], roles: dict[str, str]) -> dict[str, int]:
    """The accusations in the imposters' meeting speech (read as every crewmate reads speech,
    ``mau.infer.hearsay``) and those naming the other imposter; their votes are ``count_events``'s."""
    from mau.infer.hearsay import accusations

    names = list(roles)
    c = {"imposter_accusations": 0, "imposter_accusations_on_partner": 0}
    for e in events:
        if e[F.TYPE] == F.EV_UTTERANCE and roles.get(e.get("speaker")) == IMPOSTER:
            said = accusations(e.get("text"), e["speaker"], names)
            c["imposter_accusations"] += len(said)
            c["imposter_accusations_on_partner"] += sum(roles.get(x) == IMPOSTER for x in said)
    return c


def _side_counts(calls: dict[str, Any]) -> dict[str, int]:
    """The arm's own calls (crewmate, source model) and the imposters' (source model) from the header's
    counts."""
    sides = calls.get("by_side", {})
    crew = sides.get("crewmate", {}).get("model", {})
    imp = sides.get(IMPOSTER, {}).get("model", {})
    return {"arm_calls": int(crew.get("calls", 0)), "arm_fallbacks": int(crew.get("fallbacks", 0)),
            "arm_answered": int(crew.get("answered", 0)), "imposter_calls": int(imp.get("calls", 0)),
            "imposter_fallbacks": int(imp.get("fallbacks", 0))}


def load_matches(run: str | Path) -> list[MatchStats]:
    """Every finished match of a run folder."""
    return [match_stats(p) for p in finished_matches(run)]


# -- estimates: mau.stats (proportion, ratio_bootstrap, mean_bootstrap) -----------------------------------
def cell_metrics(ms: list[MatchStats], resamples: int = 2000, seed: int = 0) -> dict[str, Estimate]:
    """Every metric of one arm x imposter cell."""
    return {
        "crew_win_rate": proportion(sum(m.crew_won for m in ms), len(ms)),
        "ejection_recall": ratio_bootstrap(
            [m.imposters_ejected for m in ms], [m.imposters_fielded for m in ms], resamples, seed
        ),
        "ejection_precision": ratio_bootstrap(
            [m.imposters_ejected for m in ms], [m.ejections for m in ms], resamples, seed
        ),
        "vote_precision": ratio_bootstrap(
            [m.crew_votes_on_imposters for m in ms], [m.crew_votes - m.crew_skips for m in ms], resamples,
            seed,
        ),
        "vote_skip_share": ratio_bootstrap(
            [m.crew_skips for m in ms], [m.crew_votes for m in ms], resamples, seed
        ),
        "imposter_skip_share": ratio_bootstrap(
            [m.imposter_skips for m in ms], [m.imposter_votes for m in ms], resamples, seed
        ),
        "imposter_partner_votes": ratio_bootstrap(
            [m.imposter_votes_on_partner for m in ms], [m.imposter_votes - m.imposter_skips for m in ms],
            resamples, seed,
        ),
        "imposter_partner_accusations": ratio_bootstrap(
            [m.imposter_accusations_on_partner for m in ms], [m.imposter_accusations for m in ms], resamples,
            seed,
        ),
        "meetings_per_game": mean_bootstrap([m.meetings for m in ms], resamples, seed),
        "imposters_ejected_per_game": mean_bootstrap([m.imposters_ejected for m in ms], resamples, seed),
        "kills_per_game": mean_bootstrap([m.kills for m in ms], resamples, seed),
        "missions_per_game": mean_bootstrap([m.missions for m in ms], resamples, seed),
        "fallback_share": ratio_bootstrap(
            [m.arm_fallbacks for m in ms], [m.arm_calls for m in ms], resamples, seed
        ),
        "imposter_fallback_share": ratio_bootstrap(
            [m.imposter_fallbacks for m in ms], [m.imposter_calls for m in ms], resamples, seed
        ),
    }


def arm_health(ms: list[MatchStats], max_share: float) -> dict[str, dict[str, Any]]:
    """Per arm: its own calls, fallbacks, answers, share; ``failed`` when its model gave no usable answer (it
    never answered, or every answer fell back: its games then measure the fallback rule, not the model),
    ``over`` when failed or its fallback share exceeds ``max_share`` (the eval then warns and exits
    non-zero)."""
    out: dict[str, dict[str, Any]] = {}
    for m in ms:
        a = out.setdefault(m.arm, {"calls": 0, "fallbacks": 0, "answered": 0})
        a["calls"] += m.arm_calls
        a["fallbacks"] += m.arm_fallbacks
        a["answered"] += m.arm_answered
    for a in out.values():
        a["share"] = a["fallbacks"] / a["calls"] if a["calls"] else None
        a["failed"] = a["calls"] > 0 and (a["answered"] == 0 or a["fallbacks"] == a["calls"])
        a["over"] = a["failed"] or (a["share"] is not None and a["share"] > max_share)
    return out


def endings(ms: list[MatchStats]) -> dict[str, int]:
    out = {o: 0 for o in OUTCOMES}
    for m in ms:
        out[m.outcome] = out.get(m.outcome, 0) + 1
    return out


# -- paired comparison ---------------------------------------------------------------------------------------
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test (a sign test on the b + c discordant pairs): P(as extreme | p = 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(arm_wins: dict[Any, bool], base_wins: dict[Any, bool], resamples: int = 2000,
           seed: int = 0) -> dict[str, Any]:
    """Compare an arm with the baseline on the pairs (keys: seed, or (imposter, seed)) both have played.

    ``diff`` is the arm's crew win rate minus the baseline's on those pairs (mean of the per-pair differences,
    each -1, 0 or +1), with a percentile bootstrap interval over pairs."""
    def diff(arm: list[bool], base: list[bool]) -> float:
        return float(np.mean([int(x) - int(y) for x, y in zip(arm, base)]))

    keys, d, lo, hi = paired_bootstrap(arm_wins, base_wins, diff, resamples, seed)
    better = sum(arm_wins[k] and not base_wins[k] for k in keys)
    worse = sum(base_wins[k] and not arm_wins[k] for k in keys)
    return {"n_pairs": len(keys), "arm_wins": int(sum(arm_wins[k] for k in keys)),
            "baseline_wins": int(sum(base_wins[k] for k in keys)), "arm_better": better,
            "baseline_better": worse, "ties": len(keys) - better - worse,
            "diff": d, "ci_low": lo, "ci_high": hi, "method": "paired_bootstrap",
            "p_mcnemar": mcnemar_exact(better, worse)}


# -- the whole evaluation ------------------------------------------------------------------------------------
def evaluate(ms: list[MatchStats], arms: list[str], imposters: list[str], baseline: str,
             resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Every cell (arm x imposter model, plus the pooled column when there are several imposter models) and
    the paired comparison of every other arm with the baseline."""
    columns = imposters + ([POOLED] if len(imposters) > 1 else [])

    def of(arm: str, imp: str) -> list[MatchStats]:
        return [m for m in ms if m.arm == arm and (imp == POOLED or m.imposter == imp)]

    cells = []
    for arm in arms:
        for imp in columns:
            sel = of(arm, imp)
            cells.append({"arm": arm, F.IMPOSTER_COLUMN: imp, "matches": len(sel),
                          "metrics": {k: v.to_dict() for k, v in cell_metrics(sel, resamples, seed).items()},
                          "endings": endings(sel)})
    comparisons = []
    for arm in arms:
        if arm == baseline:
            continue
        for imp in columns:
            # pooled: a pair is (imposter model, seed), so every pair still shares its seed and its imposters
            wins = {(m.imposter, m.seed): m.crew_won for m in of(arm, imp)}
            base = {(m.imposter, m.seed): m.crew_won for m in of(baseline, imp)}
            comparisons.append({"arm": arm, "baseline": baseline, F.IMPOSTER_COLUMN: imp,
                                **paired(wins, base, resamples, seed)})
    return {"arms": arms, "imposters": imposters, "columns": columns, "baseline": baseline,
            "matches": len(ms), "cells": cells, "paired": comparisons, "methods": METHODS,
            "bootstrap": {"resamples": resamples, "seed": seed}}
