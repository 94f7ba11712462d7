"""The linear detector (issue 43; mau.infer.linear): a logistic reader of per-player evidence counts inside
the exact posterior, read, fitted, explained and planned against like the likelihood model."""

from __future__ import annotations

import json
import math
from itertools import combinations

import pytest

from mau import schema as F
from mau.infer import model as infer
from mau.infer.explain import influence, reasons
from mau.infer.fit import read_params
from mau.infer.linear import LINEAR_FEATURES, Linear, counts, fit_linear

OTHERS = ["Ann", "Bob", "Cy", "Dee", "Eve"]


def _lin(**w: float) -> Linear:
    return Linear(weights=w, bias=-1.0)


def test_the_posterior_is_independent_scores_conditioned_on_k_imposters():
    """P(H) is proportional to exp(sum of s(x) over H): the marginals equal the brute-force sum."""
    lin = _lin(strong_got=1.5, votes_got=0.7, reported=-2.0)
    items = [{"k": "accuse", "p": "Ann", "target": "Bob", "s": "strong"},
             {"k": "vote", "meeting": 1, "p": "Cy", "target": "Bob"},
             {"k": "vote", "meeting": 1, "p": "Bob", "target": "Dee"},
             {"k": "reported", "p": "Eve"}]
    s = lin.scores(items, OTHERS)
    assert s["Bob"] == pytest.approx(-1.0 + 1.5 * math.log(2) + 0.7 * math.log(2))
    assert s["Eve"] == pytest.approx(-1.0 - 2.0 * math.log(2))
    hyps = [frozenset(h) for h in combinations(OTHERS, 2)]
    w = {h: math.exp(sum(s[x] for x in h)) for h in hyps}
    brute = {n: sum(v for h, v in w.items() if n in h) / sum(w.values()) for n in OTHERS}
    got, ok = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, items, lin)
    assert ok and got == pytest.approx(brute, abs=1e-6)
    assert sum(got.values()) == pytest.approx(2.0, abs=1e-5)
    memo = infer.PosteriorMemo()  # the scripted teacher's path gives the same answer
    assert infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, items, lin, memo)[0] == got


def test_hard_facts_rule_hypotheses_out():
    lin = _lin(strong_got=1.0)
    items = [{"k": "dead", "p": "Ann"}, {"k": "ejected", "p": "Bob", "role": F.IMPOSTER},
             {"k": "accuse", "p": "Cy", "target": "Dee", "s": "strong"}]
    bel, ok = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, items, lin)
    assert ok and bel["Ann"] == 0.0 and bel["Bob"] == pytest.approx(1.0)
    assert bel["Dee"] > bel["Cy"] == pytest.approx(bel["Eve"])
    impossible = items + [{"k": "ejected", "p": "Cy", "role": F.IMPOSTER},
                          {"k": "ejected", "p": "Eve", "role": F.IMPOSTER}]
    bel, ok = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, impossible, lin)
    assert not ok and bel["Ann"] == pytest.approx(0.4)  # the uniform prior, as the likelihood model gives


def test_an_accusation_of_a_partner_raises_the_partner_whoever_speaks():
    """The trick that inverts the pairwise model: an imposter accusing its partner. The linear detector reads
    the accusation against its target, whatever the speaker is."""
    lin = _lin(strong_got=1.0)
    before = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, [], lin)[0]
    after = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2,
                          [{"k": "accuse", "p": "Ann", "target": "Bob", "s": "strong"}], lin)[0]
    assert after["Bob"] > before["Bob"] and after["Ann"] < before["Ann"]


def test_counts_read_skips_alibis_deaths_and_revealed_roles():
    items = [{"k": "skipped", "p": "Ann"}, {"k": "alibi", "p": "Ann", "victim": "Zed"},
             {"k": "death", "victim": "Zed", "bins": {"Bob": [0, 0, 2, 3], "Cy": [3]}},
             {"k": "ejected", "p": "Dee", "role": F.IMPOSTER},
             {"k": "accuse", "p": "Eve", "target": "Dee", "s": "weak"},
             {"k": "accuse", "p": "Dee", "target": "Cy", "s": "strong"}]
    c = counts(items, OTHERS)
    assert c["Ann"]["skipped"] == 1 and c["Ann"]["alibi"] == 1
    assert c["Bob"]["near0"] == 2 and c["Bob"]["near2"] == 1 and c["Cy"]["near0"] == 0
    assert c["Eve"]["accused_imposter"] == 1 and c["Cy"]["accused_by_imposter"] == 1
    assert set(c["Ann"]) == set(LINEAR_FEATURES)


def test_the_fit_recovers_a_planted_weight():
    """Imposters get more strong accusations than crewmates: the fitted weight of strong_got is positive,
    and the fitted detector ranks an accused player above the others."""
    rows = []
    for i in range(60):
        truth = frozenset(OTHERS[j] for j in ((i % 5), (i + 2) % 5))
        items = [{"k": "accuse", "p": "Me", "target": t, "s": "strong"} for t in sorted(truth)]
        if i % 3 == 0:  # a crewmate is accused now and then
            items.append({"k": "accuse", "p": "Me", "target": OTHERS[(i + 1) % 5], "s": "strong"})
        rows.append((items, OTHERS, truth))
    lin = fit_linear(rows, l2=1.0)
    assert lin.weights["strong_got"] > 1.0
    held = fit_linear(rows, l2=1.0, hold=("strong_got",))  # a held feature: weight 0, the rest refitted
    assert held.weights["strong_got"] == 0.0 and held.bias != lin.bias
    with pytest.raises(ValueError, match="both roles"):
        fit_linear([(rows[0][0], OTHERS, frozenset())])


def test_a_linear_fit_file_reads_back_and_a_damaged_one_is_refused(tmp_path):
    lin = _lin(strong_got=2.0, skipped=-0.5)
    path = tmp_path / F.OBSERVER_FIT
    path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_LINEAR_VERSION,
                                "linear": lin.to_dict()}))
    back = read_params(str(tmp_path))
    assert isinstance(back, Linear) and back.weights["strong_got"] == 2.0 and back.bias == -1.0
    path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_LINEAR_VERSION,
                                "linear": {"weights": {"nope": 1.0}, "bias": 0.0}}))
    with pytest.raises(ValueError, match="a damaged observer fit .*nope"):
        read_params(str(path))


def test_the_reasons_of_a_linear_teacher_are_its_leave_one_out_pulls():
    lin = _lin(strong_got=2.0, reported=-1.0)
    items = [{"k": "dead", "p": "Ann"}, {"k": "reported", "p": "Bob"},
             {"k": "accuse", "p": "Cy", "target": "Dee", "s": "strong"}]
    pulls = dict(influence("Me", ["Me"] + OTHERS, 2, items, lin, "Dee"))
    assert 0 not in pulls  # a hard fact is never a reason
    assert pulls[2] > 0.5 and abs(pulls[1]) < pulls[2]

    def logodds(its):
        p = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, its, lin)[0]["Dee"]
        return math.log(p / (1 - p))

    assert pulls[2] == pytest.approx(logodds(items) - logodds(items[:2]), abs=1e-4)
    assert reasons("Me", ["Me"] + OTHERS, 2, items, lin, "Dee", None)[0] == "Cy said they saw Dee"


def test_zeroing_a_group_of_ratios_zeroes_the_features_that_read_its_evidence():
    lin = _lin(strong_got=2.0, weak_got=1.0, accused_crew=0.5, votes_got=0.3, near0=1.0, skipped=0.4)
    quiet = infer.zeroed(lin, infer.GROUPS["speech"])
    assert {n for n, w in quiet.weights.items() if w} == {"near0", "skipped"}
    assert infer.weighs(lin, "strong_ci") and not infer.weighs(quiet, "vote_ic")
    assert infer.weighs(lin, "skipped") and not infer.weighs(lin, "alibi")
    with pytest.raises(TypeError, match="no likelihood kinds"):
        infer.components(lin)
