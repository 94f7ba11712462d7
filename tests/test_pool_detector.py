"""A pool of detectors (issue 43; mau.infer.model.Pool): members' exact posteriors averaged (linear) or
multiplied (log) with fixed weights, read from a file that names its members, explained by leave-one-out."""

from __future__ import annotations

import json
import math

import pytest

from mau import schema as F
from mau.infer import model as infer
from mau.infer.explain import influence
from mau.infer.fit import Probe, predict, read_params
from mau.infer.linear import Linear
from mau.infer.model import Params, Pool

OTHERS = ["Ann", "Bob", "Cy", "Dee", "Eve"]
ITEMS = [{"k": "dead", "p": "Ann"},
         {"k": "accuse", "p": "Cy", "target": "Dee", "s": "strong"},
         {"k": "vote", "meeting": 1, "p": "Bob", "target": "Eve"},
         {"k": "reported", "p": "Bob"}]
LIN = Linear(weights={"strong_got": 1.5, "votes_got": 0.8, "reported": -1.0}, bias=-1.0)


def _pool(w: float, rule: str = "linear") -> Pool:
    return Pool(members={"habit": Params(), "planner": LIN}, weights={"habit": w, "planner": 1 - w},
                rule=rule)


def _post(p):
    return infer.posterior(OTHERS, 2, ITEMS, p)[0]


def test_the_linear_pool_is_the_weighted_mean_of_its_members_posteriors():
    a, b, pooled = _post(Params()), _post(LIN), _post(_pool(0.3))
    assert set(pooled) == set(a) == set(b)
    for h in pooled:
        assert pooled[h] == pytest.approx(0.3 * a[h] + 0.7 * b[h], abs=1e-12)
    assert sum(pooled.values()) == pytest.approx(1.0)
    assert all(v == 0.0 for h, v in pooled.items() if "Ann" in h)  # the dead rule hypotheses out in both


def test_the_log_pool_is_the_renormalised_weighted_geometric_mean():
    a, b, pooled = _post(Params()), _post(LIN), _post(_pool(0.3, "log"))
    live = [h for h in pooled if a[h] > 0]
    z = sum(a[h] ** 0.3 * b[h] ** 0.7 for h in live)
    for h in live:
        assert pooled[h] == pytest.approx(a[h] ** 0.3 * b[h] ** 0.7 / z, rel=1e-9)


def test_the_memo_predict_and_beliefs_agree_with_the_posterior():
    pool = _pool(0.4)
    plain, ok = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, ITEMS, pool)
    memo = infer.PosteriorMemo()
    assert ok and infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, ITEMS, pool, memo)[0] == plain
    probe = Probe(others=OTHERS, candidates=OTHERS, k=2, items=ITEMS, truth=frozenset({"Dee", "Eve"}))
    got = predict([probe], pool)[0]
    assert got == pytest.approx(plain, abs=1e-6)


def test_a_weight_of_one_member_moves_the_pool_toward_it():
    """The pool of a detector that clears Dee (the likelihood model: a crewmate's accusation) and one that
    reads the accusation against her: Dee's belief moves monotonically from one to the other."""
    dee = [infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, ITEMS, _pool(w))[0]["Dee"]
           for w in (0.1, 0.5, 0.9)]
    lin_dee = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, ITEMS, LIN)[0]["Dee"]
    par_dee = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, ITEMS, Params())[0]["Dee"]
    assert lin_dee != pytest.approx(par_dee, abs=0.01)
    assert (dee[0] - dee[1]) * (dee[1] - dee[2]) > 0
    assert abs(dee[0] - lin_dee) < abs(dee[2] - lin_dee)


def test_zeroed_weighs_and_components_reach_every_member():
    quiet = infer.zeroed(_pool(0.5), infer.GROUPS["speech"])
    assert not infer.weighs(quiet, "strong_ci") and infer.weighs(_pool(0.5), "strong_ci")
    assert quiet.members["planner"].weights["strong_got"] == 0.0
    with pytest.raises(TypeError, match="no likelihood kinds"):
        infer.components(_pool(0.5))


def test_a_pool_reasons_by_leave_one_out():
    pool = _pool(0.5)
    pulls = dict(influence("Me", ["Me"] + OTHERS, 2, ITEMS, pool, "Dee"))
    assert 0 not in pulls  # a hard fact is never a reason

    def logodds(its):
        p = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, its, pool)[0]["Dee"]
        return math.log(p / (1 - p))

    assert pulls[1] == pytest.approx(logodds(ITEMS) - logodds(ITEMS[:1] + ITEMS[2:]), abs=1e-4)


def _fit_file(path, version, key, body):
    path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: version, key: body}))


def test_a_pool_file_names_its_members_by_path_and_bad_ones_are_refused(tmp_path):
    _fit_file(tmp_path / "habit.json", F.FIT_VERSION, "params", Params().to_dict())
    _fit_file(tmp_path / "planner.json", F.FIT_LINEAR_VERSION, "linear", LIN.to_dict())
    pool_doc = {"members": {"habit": "habit.json", "planner": "planner.json"},
                "weights": {"habit": 0.3, "planner": 0.7}, "rule": "log"}
    _fit_file(tmp_path / "pool.json", F.FIT_POOL_VERSION, "pool", pool_doc)
    back = read_params(str(tmp_path / "pool.json"))
    assert isinstance(back, Pool) and back.rule == "log" and back.weights == {"habit": 0.3, "planner": 0.7}
    planner = back.members["planner"]
    assert isinstance(planner, Linear) and planner.weights["strong_got"] == 1.5
    bad = {**pool_doc, "weights": {"habit": 0.3, "planner": 0.3}}
    _fit_file(tmp_path / "pool.json", F.FIT_POOL_VERSION, "pool", bad)
    with pytest.raises(ValueError, match="damaged observer fit .*sum to 1"):
        read_params(str(tmp_path / "pool.json"))
    _fit_file(tmp_path / "pool.json", F.FIT_POOL_VERSION, "pool", {**pool_doc, "members": {
        "habit": "habit.json", "planner": "missing.json"}})
    with pytest.raises(ValueError, match="member planner.*cannot read"):
        read_params(str(tmp_path / "pool.json"))
    _fit_file(tmp_path / "nested.json", F.FIT_POOL_VERSION, "pool", {**pool_doc, "members": {
        "habit": "habit.json", "planner": "pool.json"}})
    _fit_file(tmp_path / "pool.json", F.FIT_POOL_VERSION, "pool", pool_doc)
    with pytest.raises(ValueError, match="itself a pool"):
        read_params(str(tmp_path / "nested.json"))


@pytest.mark.parametrize("name,planner", [("pool_r1", "linear_r1"), ("pool_r2", "linear_pool_r2"),
                                          ("pool_r3", "linear_pool_r3")])
def test_the_shipped_pools_read(name, planner):
    pool = read_params(f"configs/observer/{name}.json")
    assert isinstance(pool, Pool) and set(pool.members) == {"habit", "planner"} and not pool.learn
    assert pool.weights == {"habit": 0.3, "planner": 0.7}
    assert pool.members["habit"] == read_params("configs/observer/issue29.json")
    assert pool.members["planner"] == read_params(f"configs/observer/{planner}.json")


def test_a_learning_pool_weighs_each_member_by_how_it_foretold_the_revealed_facts():
    """``learn``: each member's weight times its P(fact | every other item) of each revealed fact. A member
    that read an accusation as guilt foretold the accused's ejection as an imposter; one that read it as
    innocence did not, and loses its say."""
    guilt = Linear(weights={"strong_got": 3.0}, bias=-1.0)
    innocence = Linear(weights={"strong_got": -3.0}, bias=-1.0)
    items = [{"k": "accuse", "p": "Cy", "target": "Dee", "s": "strong"},
             {"k": "ejected", "p": "Dee", "role": F.IMPOSTER}]
    pool = Pool(members={"guilt": guilt, "innocence": innocence}, weights={"guilt": 0.5, "innocence": 0.5},
                learn=True)
    learned = pool.learned(items, lambda m, its: infer.posterior(OTHERS, 2, its, m))

    def foretold(m):
        return infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, items[:1], m)[0]["Dee"]

    a, b = foretold(guilt), foretold(innocence)
    assert a > 0.8 > 0.2 > b
    assert learned["guilt"] == pytest.approx(a / (a + b), abs=1e-5)
    fixed = Pool(members=pool.members, weights=pool.weights)
    later = items + [{"k": "accuse", "p": "Ann", "target": "Eve", "s": "strong"}]
    with_learn = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, later, pool)[0]["Eve"]
    without = infer.beliefs("Me", ["Me"] + OTHERS, OTHERS, 2, later, fixed)[0]["Eve"]
    assert with_learn > without  # the member that was right now says more: Eve, accused, is read as guilty


def test_the_pair_file_closes_the_partner_trick():
    """configs/observer/issue29_pair.json is issue 29's likelihoods with each *_ii ratio raised to the larger
    of *_ci and *_ic (nothing else changed), so that an imposter accusing its partner no longer clears
    the pair: under issue 29 the accused pair falls below its prior, under the pair file it ties the most
    likely."""
    base = read_params("configs/observer/issue29.json")
    pair = read_params("configs/observer/issue29_pair.json")
    b, p = base.to_dict(), pair.to_dict()
    raised = {f"{s}_ii": max(b[f"{s}_ci"], b[f"{s}_ic"]) for s in ("strong", "weak", "vote")}
    assert p == {**b, **raised} and any(b[k] < v for k, v in raised.items())
    accusation = [{"k": "accuse", "p": "Cy", "target": "Dee", "s": "strong"}]
    pair_h = frozenset({"Cy", "Dee"})
    before = infer.posterior(OTHERS, 2, accusation, base)[0]
    after = infer.posterior(OTHERS, 2, accusation, pair)[0]
    assert before[pair_h] < 1 / len(before) < max(before.values())
    assert after[pair_h] == pytest.approx(max(after.values()))
    pool = read_params("configs/observer/pool_pair.json")
    assert isinstance(pool, Pool) and pool.members["habit"].to_dict() == p


def _draw_pool(w: float) -> Pool:
    return Pool(members={"habit": Params(), "planner": LIN}, weights={"habit": w, "planner": 1 - w},
                rule="draw")


def test_a_drawn_pool_reads_as_the_expectation_of_its_draw():
    """rule draw: every reader of the pool's own posterior (the adversary planning against it, --params) gets
    the weighted mean of its members' posteriors, the expected posterior of the seat it faces."""
    lin, draw = _post(_pool(0.3)), _post(_draw_pool(0.3))
    assert draw == pytest.approx(lin, abs=1e-12)
    assert _post(_draw_pool(0.3)) != pytest.approx(_post(_draw_pool(0.7)), abs=1e-3)
    with pytest.raises(ValueError, match="learn"):
        Pool(members={"habit": Params(), "planner": LIN}, weights={"habit": 0.5, "planner": 0.5}, rule="draw",
             learn=True)


def test_each_seat_reasons_with_one_member_drawn_by_the_weights():
    """A scripted seat given a drawn pool reasons with one member (the same for the same match seed and seat),
    drawn with P(member) its weight; it plans against the pool as a whole; any other detector is kept."""
    import random

    from mau.env.map import load_map
    from mau.env.scripted import ScriptedBrain

    pool, skeld = _draw_pool(0.3), load_map("skeld")
    picks = [infer.drawn(pool, random.Random(i)) for i in range(2000)]
    assert all(p is pool.members["habit"] or p is pool.members["planner"] for p in picks)
    assert sum(p is pool.members["habit"] for p in picks) / len(picks) == pytest.approx(0.3, abs=0.04)
    assert infer.drawn(_pool(0.3), random.Random(0)) == _pool(0.3)
    assert infer.drawn(LIN, random.Random(0)) is LIN
    seats = [ScriptedBrain(name, skeld, seed, params=pool) for seed in range(40) for name in ("Ann", "Bob")]
    assert all(b.plans_against is pool for b in seats)
    got = {id(b.params) for b in seats}
    assert got == {id(pool.members["habit"]), id(pool.members["planner"])}
    again = ScriptedBrain("Bob", skeld, 7, params=pool)
    assert again.params is next(b.params for b in seats[14:16] if b.name == "Bob")
