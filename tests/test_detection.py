"""Detection metrics and their report from probe files (mau/eval/detection.py, mau/eval/report.py; ``mau
beliefs``; docs/evaluation.md, "Detection")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mau import schema as F
from mau.eval import detection as B
from mau.eval.report import detection_markdown as markdown


def ap(x: float):
    return pytest.approx(x, abs=1e-6)  # beliefs are written with 6 decimals


# -- metrics on a hand-made probe file -----------------------------------------------------------------------
def _probe(seq: int, tick: int, beliefs: dict[str, float] | None, top2: list[str] | None,
           source: str = "model") -> dict[str, Any]:
    return {
        F.PROBES_VERSION_FIELD: 1, F.MATCH: "m", F.STEP: 0, F.TICK: tick, F.PROBE_MOMENT: "meeting_start",
        F.PROBE_SEQ: seq, F.AGENT: "X", F.ROLE: "crewmate", F.PROBE_SOURCE: source,
        F.PROBE_CANDIDATES: sorted(beliefs) if beliefs else ["A", "B", "C", "D"], F.PROBE_BELIEFS: beliefs,
        F.PROBE_TOP2: top2, F.FALLBACK: beliefs is None,
    }


def _hand_match(folder: Path, probes: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    roles = {"X": "crewmate", "A": "imposter", "B": "imposter", "C": "crewmate", "D": "crewmate"}
    (folder / F.MATCH_HEADER).write_text(json.dumps({F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: 1, F.SEED: 1,
                                                     F.ROLES: roles, F.TICKS: 1000}))
    (folder / F.EVENTS_FILE).write_text(
        json.dumps(
            {
                F.EVENT_INDEX: 0, F.TICK: 500, F.STEP: 5, F.TYPE: F.EV_EJECTION, "ejected": "A",
                "role": "imposter",
            }
        )
        + "\n"
    )
    (folder / F.PROBES_FILE).write_text("".join(json.dumps(p) + "\n" for p in probes))
    return folder


def test_metrics_on_a_hand_made_probe_file(tmp_path):
    d = _hand_match(tmp_path / "m", [
        _probe(1, 100, {"A": 0.8, "B": 0.2, "C": 0.6, "D": 0.4}, ["A", "C"]),
        _probe(2, 400, {"A": 0.9, "B": 0.6, "C": 0.3, "D": 0.2}, ["A", "B"]),
        _probe(3, 700, None, None),  # a fallback: no beliefs, not scored
        _probe(4, 800, {"B": 0.7, "C": 0.2, "D": 0.1}, ["C", "D"]),  # A was ejected at tick 500
    ])
    c = B.cell(B.load_run(d), resamples=50)
    v = {k: e.value for k, e in c.items()}
    assert v["auroc"] == ap(25.5 / 30)  # 5 imposter and 6 crewmate scores, ties count half
    assert v["brier"] == ap(1.64 / 11)
    assert v["ece"] == ap(2.0 / 11)
    assert c["auroc"].n == 11  # the fallback adds nothing (never a silent 0.5)
    # within each probe: 2/4, 4/4 and 2/2 of the (imposter, crewmate) pairs ranked right; the Brier of each
    assert v["auroc_within"] == ap((0.5 + 1.0 + 1.0) / 3) and c["auroc_within"].n == 3
    assert v["brier_within"] == ap((1.2 / 4 + 0.3 / 4 + 0.14 / 3) / 3)
    assert v["top2_hit_rate"] == ap(2 / 3)
    assert v["detection_rate"] == ap(0.5)  # A detected from the first probe; B's last probe misses
    assert v["time_to_detection"] == ap(0.1)
    assert v["detection_lead"] == ap(0.1 - 0.5)
    assert v["probe_fallback_share"] == ap(0.25)
    # the report says how each row's beliefs were read (records without the field were asked)
    det = B.evaluate(B.load_run(d), resamples=50)
    assert det["readouts"] == {"match": ["answer"]}
    assert "Probe read-out: match: answer (" in markdown(det)


def test_the_knows_nothing_row_is_chance_within_each_probe_but_not_pooled(tmp_path):
    """k/n for every candidate: within each probe every pair ties (AUROC exactly 0.5) and the expected top-2
    hit is the combinatorial chance; pooled over probes, later probes with fewer candidates and a larger
    imposter share lift its AUROC above 0.5: the pooled figure's chance level is not 0.5."""
    d = _hand_match(tmp_path / "m", [
        {**_probe(1, 100, {"A": 0.5, "B": 0.5, "C": 0.5, "D": 0.5}, ["A", "B"], "ideal"), "n_imposters": 2},
        {**_probe(2, 800, {"B": 0.9, "C": 0.05, "D": 0.05}, ["B", "C"], "ideal"), "n_imposters": 1},
    ])
    c = B.cell([m for m in B.load_run(d) if m.row == B.KNOWS_NOTHING_ROW], resamples=50)
    assert c["auroc_within"].value == ap(0.5) and c["auroc_within"].n == 2
    # k/n is 0.5 in the first probe, 1/3 in the second (imposter share 1/3 there)
    assert c["auroc"].value > 0.5
    # top-2 with ties at random: probe 1: 1 - C(2,2)/C(4,2) = 5/6; probe 2: 1 - C(2,2)/C(3,2) = 2/3
    assert c["top2_hit_rate"].value == ap((5 / 6 + 2 / 3) / 2)
    det = B.evaluate(B.load_run(d), resamples=20)
    assert det["rows"] == [B.IDEAL_ROW, B.KNOWS_NOTHING_ROW]
    assert B.KNOWS_NOTHING_ROW in markdown(det) and "chance 0.5" in markdown(det)


def test_beliefs_verb_writes_the_report(tmp_path, capsys):
    from mau.cli import main

    run = tmp_path / "run" / F.MATCHES_DIR
    _hand_match(run / "m1", [_probe(1, 100, {"A": 0.8, "B": 0.2, "C": 0.6, "D": 0.4}, ["A", "C"]),
                             _probe(1, 100, {"A": 0.5, "B": 0.5, "C": 0.5, "D": 0.5}, ["A", "B"], "ideal")])
    assert main(["beliefs", str(tmp_path / "run"), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "ideal observer" in out and "AUROC" in out
    for name in ("beliefs.md", "beliefs.json", "beliefs.csv", "calibration.png", "belief_curves.png"):
        assert (tmp_path / "run" / name).is_file()
    assert main(["beliefs", str(tmp_path / "nope")]) == 2


def test_unknown_probe_version_is_refused(tmp_path):
    from mau.errors import MauError

    p = _probe(1, 100, {"A": 0.8, "B": 0.2, "C": 0.6, "D": 0.4}, ["A", "C"])
    p[F.PROBES_VERSION_FIELD] = 99
    d = _hand_match(tmp_path / "m", [p])
    with pytest.raises(MauError, match="format_version"):
        B.read_probes(d)


def test_summary_table_puts_detection_next_to_win_rate_with_the_observer_row():
    from mau.eval.report import summary_table

    e = {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 4, "method": "x"}
    none = {"value": None, "ci_low": None, "ci_high": None, "n": 0, "method": "x"}
    vote = {"crew_win_rate": e, "ejection_precision": none, "fallback_share": e}
    det = {"auroc_within": e, "brier_within": e, "top2_hit_rate": e, "probe_fallback_share": e}
    rows = ("a", B.IDEAL_ROW, B.KNOWS_NOTHING_ROW)
    res = {
        "arms": ["a"], "columns": ["imp"], "cells": [{"arm": "a", "imposter": "imp", "metrics": vote}],
        "detection": {
            "rows": list(rows), "cells": [{"row": r, "imposter": "imp", "metrics": det} for r in rows],
        },
    }
    lines = summary_table(res).splitlines()
    assert (
        lines[2] == "| a | 50 [25, 75] | n/a (n=0) | 50 [25, 75] | 0.50 [0.25, 0.75] | 0.50 [0.25, 0.75] | "
        "50 [25, 75] | 50 [25, 75] |"
    )
    assert lines[3].startswith(f"| {B.IDEAL_ROW} | - | - | - | 0.50")
    assert lines[4].startswith(f"| {B.KNOWS_NOTHING_ROW} | - | - | - | 0.50")  # the chance reference row
    # An arm without a usable answer is marked failed, not scored (its fallback share stays visible).
    res["arm_health"] = {"a": {"failed": True, "over": True}}
    assert summary_table(res).splitlines()[2].startswith("| a | FAILED | FAILED | 50 [25, 75] |")
    res["detection"]["readouts"] = {"a": ["vote"]}
    assert summary_table(res).splitlines()[-1].startswith("Probe read-out: a: vote (")


def test_every_probe_version_is_read_and_the_fit_takes_versions_2_and_3(tmp_path):
    from mau.errors import MauError
    from mau.eval.observer_fit import _ideal_records

    for v in (1, 2, 3):
        p = _probe(1, 100, {"A": 0.8, "B": 0.2, "C": 0.6, "D": 0.4}, ["A", "C"], source="ideal")
        p[F.PROBES_VERSION_FIELD] = v
        d = _hand_match(tmp_path / f"v{v}", [p])
        assert len(B.read_probes(d)) == 1
        if v == 1:
            with pytest.raises(MauError, match="need version 2 or 3"):
                _ideal_records(d)
        else:
            assert len(_ideal_records(d)) == 1
    assert F.PROBES_FORMAT_VERSION == 3


# -- the baselines, the figures by moment, leave one imposter out (issue 29) ---------------------------------
def _ideal(seq: int, meeting: int, moment: str, evidence: list[dict[str, Any]], beliefs: dict[str, float]):
    return {**_probe(seq, 100 * seq, beliefs, None, source="ideal"), F.PROBES_VERSION_FIELD: 3,
            "meeting": meeting, F.PROBE_MOMENT: moment, "evidence": evidence, "n_imposters": 2}


def test_baselines_read_the_recorded_evidence_at_the_observers_probes(tmp_path):
    """Public only ignores what the crewmate saw (a death window), most accused counts accusations and votes
    received, no speech ignores them; every baseline row is scored at the observer's probes, beside k/n."""
    from mau.eval.baselines import (
        ACCUSED_ROW,
        NO_SPEECH_ROW,
        PUBLIC_ROW,
        most_accused,
        no_speech,
        public_only,
    )
    from mau.infer.model import Params, beliefs

    flat = {"A": 0.5, "B": 0.5, "C": 0.5, "D": 0.5}
    near_a = {"k": "death", "victim": "E", "bins": {"A": [0, 0], "B": [3, 3], "C": [3, 3], "D": [3, 3]}}
    c_accuses_b = {"k": "accuse", "p": "C", "target": "B", "s": "strong"}
    d_votes_b = {"k": "vote", "p": "D", "target": "B"}
    rec = _ideal(1, 1, "before_vote", [near_a, c_accuses_b, d_votes_b], flat)
    roster = ["X", "A", "B", "C", "D"]
    pub, quiet = public_only(rec, roster, Params()), no_speech(rec, roster, Params())
    cands = sorted(flat)
    # the window is private
    assert pub == beliefs("X", roster, cands, 2, [c_accuses_b, d_votes_b], Params())[0]
    assert quiet == beliefs("X", roster, cands, 2, [near_a], Params())[0]  # speech counts for nothing
    assert quiet["A"] > quiet["B"] == quiet["C"] and pub != quiet
    # a withheld vote is public: a detector that weighs it reads it in the public-only row too
    c_skips = {"k": "skipped", "p": "C"}
    skip_rec = _ideal(1, 1, "before_vote", [near_a, c_accuses_b, d_votes_b, c_skips], flat)
    weighs = Params(skipped=1.5)
    heard = beliefs("X", roster, cands, 2, [c_accuses_b, d_votes_b, c_skips], weighs)[0]
    assert public_only(skip_rec, roster, weighs) == heard != public_only(rec, roster, weighs)
    acc = most_accused(rec)
    assert acc["B"] == 1.0 > acc["A"] == acc["C"] == acc["D"] and sum(acc.values()) <= 2.0
    m = _hand_match(tmp_path / "m", [rec])
    got = B.match_beliefs(m)
    assert {PUBLIC_ROW, ACCUSED_ROW, NO_SPEECH_ROW, B.KNOWS_NOTHING} <= set(got)
    assert got[ACCUSED_ROW].probe_auroc == [pytest.approx(0.75)]  # B (imposter) first; A (imposter) ties C, D


def test_the_linear_baseline_never_scores_a_match_with_a_fit_that_saw_it(monkeypatch):
    from mau.eval import baselines

    seen: list[set[float]] = []
    orig = baselines.fit_logistic

    def spy(x, y, **kw):
        seen.append({round(float(v), 9) for v in x[:, 0]})
        return orig(x, y, **kw)

    monkeypatch.setattr(baselines, "fit_logistic", spy)
    mk, seeds = {}, {}
    for i in range(12):  # each match's strong accusations of A a distinct count, to tell the rows apart
        ev = [{"k": "accuse", "p": "C", "target": "A", "s": "strong"}] * (i + 1)
        mk[f"m{i}"] = ([_ideal(1, 1, "before_vote", ev, {"A": 0.5, "B": 0.5, "C": 0.5, "D": 0.5})],
                       {"X": "crewmate", "A": "imposter", "B": "imposter", "C": "crewmate", "D": "crewmate"})
        seeds[f"m{i}"] = 100 + i // 2  # twin matches: two arms played each seed
    out = baselines.linear_rows(mk, seeds)
    assert set(out) == set(mk) and len(seen) == 2
    import math
    assert {baselines.fold_of(s) for s in seeds.values()} == {0, 1}
    for mid in mk:  # the fit that scores a fold-f match (the f-th fit) trained on the other fold's rows only
        mine, twin = (round(math.log1p(j + 1), 9) for j in (int(mid[1:]), int(mid[1:]) ^ 1))
        f = baselines.fold_of(seeds[mid])
        assert mine not in seen[f] and mine in seen[1 - f]
        assert twin not in seen[f]  # nor its twin: the other arm's match on the same seed


def test_by_moment_groups_probes_by_meeting_and_moment(tmp_path):
    good = {"A": 0.9, "B": 0.8, "C": 0.1, "D": 0.2}
    bad = {"A": 0.1, "B": 0.2, "C": 0.9, "D": 0.8}
    m = _hand_match(
        tmp_path / "m",
        [
            _ideal(1, 1, "meeting_start", [], bad), _ideal(2, 1, "before_vote", [], good),
            _ideal(3, 2, "meeting_start", [], good), _ideal(4, 2, "before_vote", [], good),
        ],
    )
    det = B.evaluate(B.load_run(m), resamples=50)
    mo = det["by_moment"][B.IDEAL_ROW]
    assert mo[B.MOMENTS[0]]["value"] == 0.0 and mo[B.MOMENTS[1]]["value"] == 1.0
    assert mo[B.MOMENTS[2]]["value"] == mo[B.MOMENTS[3]]["value"] == 1.0
    assert "by moment" in markdown(det)


def test_leave_one_out_never_fits_on_the_imposter_model_it_scores(tmp_path, monkeypatch):
    from mau.eval import observer_fit

    roles = {"a": {"X": "crewmate", "A": "imposter", "B": "imposter", "C": "crewmate", "D": "crewmate"},
             "b": {"X": "crewmate", "A": "crewmate", "B": "crewmate", "C": "imposter", "D": "imposter"},
             "c": {"X": "crewmate", "A": "imposter", "B": "crewmate", "C": "imposter", "D": "crewmate"}}
    run = tmp_path / "run" / F.MATCHES_DIR
    for g, r in roles.items():
        for i in range(3):
            f = run / f"{g}{i}"
            f.mkdir(parents=True)
            (f / F.MATCH_HEADER).write_text(
                json.dumps(
                    {
                        F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: 1, F.SEED: i, F.ROLES: r, F.TICKS: 1000,
                        F.GRID: {F.EVAL_IMPOSTER: g},
                    }
                )
            )
            (f / F.EVENTS_FILE).write_text("")
            imp = [n for n, x in r.items() if x == "imposter"]
            ev = [{"k": "accuse", "p": "X", "target": imp[0], "s": "weak"}]
            (f / F.PROBES_FILE).write_text(
                json.dumps(_ideal(1, 1, "before_vote", ev, {n: 0.5 for n in "ABCD"})) + "\n"
            )
    fits: list[set[frozenset]] = []
    orig = observer_fit.fit

    def spy(probes, **kw):
        fits.append({p.truth for p in probes})
        return orig(probes, **kw)

    monkeypatch.setattr(observer_fit, "fit", spy)
    doc = observer_fit.leave_one_out([str(tmp_path / "run")], tmp_path / "loo", resamples=20)
    truth = {g: frozenset(n for n, x in r.items() if x == "imposter") for g, r in roles.items()}
    assert fits[0] == set(truth.values())  # the first fit is on everything (in sample)
    for g, fitted in zip(sorted(roles), fits[1:]):
        assert truth[g] not in fitted and fitted == {t for h, t in truth.items() if h != g}
        assert doc["imposters"][g]["fitted_on"] == sorted(h for h in roles if h != g)
        held = json.loads((tmp_path / "loo" / "fits" / g / F.OBSERVER_FIT).read_text())
        assert held["held_out"] == g and g not in held["fitted_on"]
    assert "leave one imposter model out" in (tmp_path / "loo" / "leave_one_out.md").read_text()


@pytest.mark.parametrize("pair_matrix", [True, False])
def test_the_vectorised_bootstrap_equals_the_definition_resample_by_resample(monkeypatch, pair_matrix):
    """``Weighted.values_many`` (every resample at once) equals ``values`` (the metrics' definition) at each
    resample, None as NaN: matches with no probes, ties, one-role matches and the large-run path."""
    import numpy as np

    if not pair_matrix:
        monkeypatch.setattr(B, "PAIR_MATRIX_MAX_MATCHES", 3)
    rng = np.random.default_rng(5)
    ms = []
    for i in range(9):
        n = [0, 1, 7, 12][i % 4]
        p = np.round(rng.random(n), 1)  # rounded: ties within and across matches
        y = (rng.random(n) < (0.0 if i == 5 else 0.3)).astype(float)  # match 5 holds no imposter
        ms.append(B.MatchBeliefs(
            f"m{i}", "r", "imp", i, p, y, probe_auroc=list(rng.random(i % 3)),
            probe_moment=["before_vote"] * (i % 3), probe_brier=list(rng.random(i % 2)),
            top2_hits=float(i % 2), top2_n=i % 3, ttd=[None, 0.5][: i % 3],
            leads=[0.1] * (i % 2), asked=i, fallbacks=i % 2))
    wd = B.Weighted(ms)
    idx = B.bootstrap_indices(len(ms), 300, 1)
    many = wd.resampled(idx)
    for r, row in enumerate(idx):
        one = wd.values(np.bincount(row, minlength=len(ms)).astype(float))
        for k, v in one.items():
            got = many[k][r]
            assert (v is None and np.isnan(got)) or got == pytest.approx(v, abs=1e-12), (k, r)
    assert not np.isnan(many["auroc"]).all()
    assert np.isnan(B.Weighted(ms[5:6]).resampled(idx[:, :1] * 0)["auroc"]).all()  # no imposter: undefined
    for k in ("auroc", "brier", "ece"):
        assert many[k] == pytest.approx(wd.resampled(idx, k)[k], nan_ok=True)
