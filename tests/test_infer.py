"""The crewmate's inference (mau.infer): evidence from observations, the exact posterior, hearsay, the fit."""

from __future__ import annotations

import math
import random

import pytest

from mau.infer import model as M
from mau.infer.evidence import DEATH, EvidenceLog, dist_bin
from mau.infer.fit import Probe, fit, predict
from mau.infer.hearsay import STRONG, WEAK, accusations

ROSTER = ["Me", "A", "B", "C", "D"]


def _obs(tick: int, players: dict[str, tuple[float, float]], known_dead=(), bodies=(), meeting=None,
         ejections=(), meetings_public=()) -> dict:
    return {"tick": tick, "step": tick // 100, "state_mode": "privileged", "name": "Me", "role": "crewmate",
            "players": [{"name": n, "position": list(xy), "seen_s_ago": 0} for n, xy in players.items()],
            "players_in_view": [], "bodies_in_view": list(bodies), "known_dead": list(known_dead),
            "ejections": list(ejections), "meetings_public": list(meetings_public), "meeting": meeting}


# -- the posterior ------------------------------------------------------------------------------------------
def test_posterior_on_hand_built_evidence_equals_the_hand_computed_one():
    p = M.Params(reported=math.log(0.5), weak_ic=math.log(3.0), weak_ci=0.0, weak_ii=0.0)
    others = ["A", "B", "C", "D"]
    items = [{"k": "dead", "p": "D"}, {"k": "reported", "p": "A"},
             {"k": "accuse", "p": "B", "target": "C", "s": "weak"}]
    post, ok = M.posterior(others, 2, items, p)
    assert ok
    # Hypotheses without D: AB, AC, BC. Weights: AB: 0.5 (A reported) * 3 (B imposter accusing crew C);
    # AC: 0.5 * 1 (crew B accusing imposter C: weak_ci = 0); BC: 1 * exp(weak_ii = 0) = 1.
    w = {frozenset("AB"): 1.5, frozenset("AC"): 0.5, frozenset("BC"): 1.0}
    total = sum(w.values())
    for h, x in w.items():
        assert post[h] == pytest.approx(x / total)
    assert post[frozenset("AD")] == 0.0
    m = M.marginals(post, others)
    assert m["B"] == pytest.approx(2.5 / 3.0) and m["D"] == 0.0


def test_death_factor_is_the_mean_over_the_imposters_that_were_there():
    p = M.Params(near_0=math.log(10.0), kill_decay=0.5)
    item = {"k": DEATH, "victim": "V", "bins": {"A": [0, 3], "B": [3, 3], "C": [3, 0]}}
    # A: (1 * 10 + 0.5 * 1) / 1.5 = 7; B: 1; C: (1 * 1 + 0.5 * 10) / 1.5 = 4
    assert math.exp(M.log_factor(item, frozenset("AB"), p)) == pytest.approx((7 + 1) / 2)
    assert math.exp(M.log_factor(item, frozenset("AC"), p)) == pytest.approx((7 + 4) / 2)
    assert math.exp(M.log_factor(item, frozenset("BD"), p)) == pytest.approx(1.0)  # D was not there: B alone


def test_an_accusation_by_a_revealed_imposter_lowers_its_targets_suspicion():
    # a world where crewmates accuse truthfully (strong_ci > 0) and imposters accuse crewmates (weak_ic > 0)
    p = M.Params(strong_ci=1.5, strong_ic=0.0, strong_ii=-2.0, weak_ci=0.0, weak_ic=1.2, weak_ii=-2.0)
    others = ["A", "B", "C", "D", "E"]
    base = [{"k": "ejected", "p": "A", "role": "imposter"}]
    before = M.marginals(M.posterior(others, 2, base, p)[0], others)
    after = M.marginals(M.posterior(others, 2, base + [{"k": "accuse", "p": "A", "target": "B", "s": "weak"}],
                                    p)[0], others)
    assert after["A"] == pytest.approx(1.0)
    assert after["B"] < before["B"]  # imposters accuse crewmates: the revealed imposter's word clears B
    # and the same accusation by a player not known to be an imposter raises it
    plain = M.marginals(
        M.posterior(others, 2, [{"k": "accuse", "p": "C", "target": "B", "s": "strong"}], p)[0], others
    )
    assert plain["B"] > 2 / 5


def test_evidence_that_rules_out_everything_falls_back_to_the_prior():
    post, ok = M.posterior(["A", "B"], 2, [{"k": "dead", "p": "A"}], M.Params())
    assert not ok and post[frozenset("AB")] == 1.0


def test_log_weights_normalise_to_a_posterior_and_all_ruled_out_to_the_prior():
    from mau.infer.normalise import normalised

    w, ok = normalised([0.0, math.log(3.0), -math.inf])
    assert ok and w == pytest.approx([0.25, 0.75, 0.0])
    # large log weights do not overflow: only their differences count
    assert normalised([1000.0, 1000.0 + math.log(3.0)])[0] == pytest.approx([0.25, 0.75])
    assert normalised([-math.inf] * 4) == ([0.25] * 4, False)


def test_knows_nothing_is_k_over_n():
    assert M.knows_nothing(["A", "B", "C", "D"], 2) == {"A": 0.5, "B": 0.5, "C": 0.5, "D": 0.5}


# -- evidence from observations ------------------------------------------------------------------------------
def test_evidence_log_keeps_who_was_near_where_the_victim_lay():
    log = EvidenceLog("Me", ROSTER)
    far = (200.0, 200.0)
    log.observe(_obs(100, {"A": (10, 10), "B": (50, 50), "C": far, "D": (30, 30)}))
    # D comes to lie at (31, 30)
    log.observe(_obs(200, {"A": (12, 10), "B": (40, 40), "C": far, "D": (31, 30)}))
    log.observe(_obs(300, {"A": (32, 30), "B": (36, 30), "C": far, "D": (31, 30)}))  # A 1 block, B 5 blocks
    # C comes by: 2 blocks
    log.observe(_obs(400, {"A": (60, 60), "B": (45, 30), "C": (29, 30), "D": (31, 30)}))
    log.observe(_obs(500, {"A": (60, 60), "B": (45, 30), "C": (30.5, 30)}, known_dead=["D"],
                     meeting={"caller": "C", "reason": "report", "body": "D", "transcript": []}))
    death = next(it for it in log.items() if it["k"] == DEATH)
    # The window starts at the first step end D lay there (tick 200) and ends when the death was known (500,
    # the meeting: no sample); C reported the body, so its last two step ends count as its walk to it.
    assert death["victim"] == "D"
    assert death["bins"]["A"] == [dist_bin(19.0), 0, 3]
    assert death["bins"]["B"] == [dist_bin(13.5), 1, 3]
    assert death["bins"]["C"] == [3, 3, 3]
    assert {"k": "reported", "p": "C"} in log.items()
    lines = log.lines()
    assert any("A 1 at 15 s" in x and "B 5 at 15 s" in x for x in lines), lines


def test_evidence_log_reads_accusations_and_public_votes_once():
    log = EvidenceLog("Me", ROSTER)
    meeting = {"caller": "A", "reason": "emergency", "body": None,
               "transcript": [{"speaker": "A", "text": "I saw B kill D in Admin. Vote B.", "round": 1},
                              {"speaker": "B", "text": "I suspect A, they were acting strange.", "round": 1}]}
    log.observe(_obs(100, {}, meeting=meeting))
    log.observe(_obs(100, {}, meeting=meeting))  # the same moment twice
    log.observe(_obs(300, {}, meetings_public=[{"n": 1, "caller": "A", "reason": "emergency", "body": None,
                                                "votes": {"A": "B", "Me": "B", "B": "skip"}, "ejected": "B",
                                                "role": "imposter"}]))
    acc = [it for it in log.items() if it["k"] == "accuse"]
    assert acc == [{"k": "accuse", "p": "A", "target": "B", "s": STRONG},
                   {"k": "accuse", "p": "B", "target": "A", "s": WEAK}]
    votes = [it for it in log.items() if it["k"] == "vote"]
    assert votes == [{"k": "vote", "p": "A", "target": "B"}, {"k": "vote", "p": "Me", "target": "B"}]


@pytest.mark.parametrize("text,expected", [
    ("I saw Noah kill Steve in Admin.", {"Noah": STRONG}),
    ("I saw Noah near where Steve died (2 blocks away at 90 s). Vote Noah.", {"Noah": STRONG}),
    ("I suspect Jason, they were acting strange. I was in Admin.", {"Jason": WEAK}),
    ("Noah was with me in Admin, not Noah.", {}),
    ("I was doing my missions near Electrical. I have not seen anything suspicious.", {}),
])
def test_hearsay_reads_accusations(text, expected):
    assert accusations(text, "Me", ["Noah", "Steve", "Jason", "Me"]) == expected


# -- the fit ------------------------------------------------------------------------------------------------
def _simulated_probes(true: M.Params, n: int, seed: int) -> list[Probe]:
    """Random evidence, then the truth drawn from the model's own posterior under ``true``: the conditional
    likelihood is then exactly the model's, so maximum likelihood must recover ``true``."""
    rng = random.Random(seed)
    others = ["A", "B", "C", "D", "E", "F", "G"]
    out = []
    for _ in range(n):
        items = []
        for _ in range(rng.randint(1, 6)):
            s, t = rng.sample(others, 2)
            items.append({"k": "accuse", "p": s, "target": t, "s": rng.choice(["strong", "weak"])})
        for _ in range(rng.randint(0, 3)):
            s, t = rng.sample(others, 2)
            items.append({"k": "vote", "p": s, "target": t})
        items.append({"k": "reported", "p": rng.choice(others)})
        bins = {o: [rng.choice([0, 1, 2, 3, 3, 3]) for _ in range(rng.randint(1, 4))] for o in others}
        items.append({"k": DEATH, "victim": "X", "bins": bins})
        post, _ = M.posterior(others, 2, items, true)
        hyps = list(post)
        truth = rng.choices(hyps, weights=[post[h] for h in hyps])[0]
        out.append(Probe(items, others, 2, truth, others))
    return out


def test_the_fit_recovers_known_parameters_from_simulated_evidence():
    true = M.Params(
        near_0=2.0, near_1=1.0, near_2=0.3, kill_decay=0.5, strong_ci=1.5, strong_ic=-1.0, strong_ii=-0.5,
        weak_ci=0.5, weak_ic=1.0, weak_ii=-1.0, vote_ci=0.8, vote_ic=0.4, vote_ii=0.0, reported=-1.0,
        called=0.0,
    )
    res = fit(_simulated_probes(true, 3000, seed=1), l2=0.0, iters=80)
    got = res["params"]
    for name in ("near_0", "strong_ci", "strong_ic", "weak_ic", "vote_ci", "reported"):
        assert getattr(got, name) == pytest.approx(getattr(true, name), abs=0.35), name
    assert res["loglik_per_probe"] > res["start_loglik_per_probe"]


def test_vectorised_prediction_equals_the_exact_posterior():
    p = M.Params(near_0=2.0, weak_ic=1.2, reported=-0.7, kill_decay=0.3)
    probes = _simulated_probes(p, 20, seed=2)
    for pr in probes[::2]:  # windows whose start is not the fall (ego state) weigh their step ends alike
        for it in pr.items:
            if it["k"] == DEATH:
                it["uniform"] = True
    for pr, bel in zip(probes, predict(probes, p)):
        exact = M.marginals(M.posterior(pr.others, 2, pr.items, p)[0], pr.candidates)
        for n in pr.candidates:
            assert bel[n] == pytest.approx(exact[n], abs=1e-9)


def test_the_posterior_memo_equals_the_posterior_bit_for_bit():
    """PosteriorMemo (a reader's columns of log factors, kept between calls) answers exactly as posterior,
    whatever the evidence: growing lists read again and again, deaths, hypotheses all ruled out, infinite
    and malformed items (raising where posterior raises, and only there)."""
    rng = random.Random(7)
    others = ["A", "B", "C", "D", "E", "F", "G"]
    p = M.Params(near_0=2.0, weak_ic=1.2, reported=-0.7, kill_decay=0.3)
    memo = M.PosteriorMemo()
    items: list[dict] = []
    consistent = 0
    for _ in range(300):
        s, t = rng.sample(others, 2)
        kind = rng.choices(["accuse", "vote", "reported", "called", "dead", "ejected", "saw_kill", "death",
                            "contradicted", "conflict"], weights=[8, 4, 1, 1, 0.3, 0.3, 1, 1, 1, 1])[0]
        it = {"k": kind, "p": s, "target": t, "s": rng.choice(["strong", "weak"]),
              "role": rng.choice(["imposter", "crewmate"])}
        if kind == DEATH:
            it = {"k": DEATH, "victim": t, "bins": {o: list(rng.choice([[0, 3], [3, 1, 2]])) for o in "AB"}}
            if rng.random() < 0.5:
                it["uniform"] = True
        items.insert(rng.randint(0, len(items)), it)
        if rng.random() < 0.1:
            del items[rng.randrange(len(items))]
        lo = rng.randrange(len(items))  # a stretch of a growing, changing list, as a reader's evidence is
        window = items[lo:lo + rng.randint(1, 20)]
        want = M.posterior(others, 2, window, p)
        assert memo.posterior(others, 2, window, p) == want
        cands = rng.sample(others, 4) + ["Nobody"]  # a candidate in no hypothesis: the int 0, as marginals
        got = M.beliefs("Me", ["Me"] + others, cands, 2, window, p, memo)
        assert repr(got) == repr(M.beliefs("Me", ["Me"] + others, cands, 2, window, p))
        consistent += want[1]
    assert consistent > 100
    # a hypothesis ruled out stays so even under +inf; all ruled out: the prior, not consistent
    inf = M.Params(reported=math.inf)
    ev = [{"k": "dead", "p": "A"}, {"k": "reported", "p": "A"}, {"k": "reported", "p": "B"}]
    assert str(M.PosteriorMemo().posterior(others, 2, ev, inf)) == str(M.posterior(others, 2, ev, inf))
    everyone = [{"k": "dead", "p": o} for o in others]
    assert M.PosteriorMemo().posterior(others, 2, everyone, p) == M.posterior(others, 2, everyone, p)
    # a malformed item raises as posterior does, and is never read once every hypothesis is ruled out
    bad = {"k": "accuse", "p": "A", "target": "B", "s": "loud"}
    with pytest.raises(KeyError):
        M.posterior(others, 2, [bad], p)
    with pytest.raises(KeyError):
        M.PosteriorMemo().posterior(others, 2, [bad], p)
    assert M.PosteriorMemo().posterior(others, 2, everyone + [bad], p) == M.posterior(others, 2,
                                                                                      everyone + [bad], p)
    # a change of the parameters is seen
    q = M.Params(weak_ic=-3.0)
    assert memo.posterior(others, 2, window, q) == M.posterior(others, 2, window, q)


def _ego(tick: int, in_view: dict[str, tuple[float, float]], bodies=(), room: str = "Admin") -> dict:
    obs = _obs(tick, {}, bodies=bodies)
    obs.update(
        state_mode="ego", players_in_view=[{"name": n, "position": list(xy)} for n, xy in in_view.items()]
    )
    del obs["players"]
    return {**obs, "room": room, "alive": True}


def test_in_ego_state_a_body_i_find_gives_a_window_weighed_alike():
    """Ego state shows no body as a player: the window is the step ends after my last sight of the victim
    alive until I found it, each as likely the kill's (``uniform``), and the prompt says so."""
    from mau.infer.learnability import parse_items

    log = EvidenceLog("Me", ROSTER)
    log.observe(_ego(100, {"D": (10, 10), "A": (12, 10)}))  # D alive, elsewhere
    log.observe(_ego(200, {"A": (31, 30)}))  # A by the spot where D will be found
    log.observe(_ego(300, {"B": (36, 30)}))
    log.observe(_ego(400, {"C": (60, 60)}, bodies=[{"victim": "D", "position": [31, 30], "room": "Storage"}]))
    death = next(it for it in log.items() if it["k"] == DEATH)
    assert death["uniform"] is True and death["bins"]["A"] == [0, 3, 3] and death["bins"]["B"] == [3, 1, 3]
    p = M.Params(kill_decay=0.02)
    # uniform weights: A's factor is (e^near_0 + 1 + 1) / 3, B's (1 + e^near_1 + 1) / 3
    assert M.death_lr(death["bins"]["A"], p, True) == pytest.approx((math.exp(p.near_0) + 2) / 3)
    lines = log.lines()
    prompt = "Evidence:\n" + "\n".join(f"- {x}" for x in lines)
    assert "a time I do not know" in prompt
    got = next(it for it in parse_items(prompt, "Me", ROSTER) if it["k"] == DEATH)
    assert got["uniform"] is True and got["bins"]["A"] == death["bins"]["A"]


# -- vote learnability ---------------------------------------------------------------------------------------
DEATH_LINE = ("- D is dead in Storage. Within 12 blocks of where D lay, from 20 s to 35 s (blocks at step "
              "ends): A 2.5 at 20 s, 8 at 25 s; C 10 at 35 s.")
PROMPT = """Beliefs about the others:
- A: last seen step 3 in Admin
Evidence:
- At 40 s I flagged B: I saw B kill D in Storage.
DEATH_LINE
- C was ejected: a Crewmate.
- Meeting 1: A reported the body of D; A accused C (strong); B accused A (weak); votes: A->C, B->C, Me->skip.
Meeting: B pressed the emergency button. Round 1 of 3. Speaking order: B, A.
B: "I suspect A, they were acting strange."
Vote now.
Answer: {"vote_target": "<one of: A, B, skip>", "reasoning": "<one sentence>"}""".replace(
    "DEATH_LINE", DEATH_LINE
)


def test_vote_features_are_parsed_from_the_prompt_text():
    from mau.infer.learnability import features

    f = features(PROMPT, ["A", "B"], ["Me", "A", "B", "C", "D"])
    assert f["B"]["flag_kill"] == 1 and f["A"]["flag_kill"] == 0
    assert f["A"]["near3"] == 1 and f["A"]["near3_first"] == 1 and f["A"]["near_deaths"] == 1
    assert f["A"]["reported"] == 1
    assert f["A"]["accuses_strong"] == 1 and f["A"]["accuses_ejected_crew"] == 1
    assert f["A"]["acc_weak"] == 1 and f["A"]["now_weak"] == 1  # B's word, last meeting and now
    assert f["B"]["votes_got"] == 0 and f["B"]["accuses_weak"] == 1


def test_learnability_finds_a_rule_the_votes_follow_and_none_in_random_votes():
    from mau.infer.learnability import FEATURES, cross_validated_accuracy

    rng = random.Random(0)

    def row(i: int, rule: bool) -> dict:
        cands = ["A", "B", "C", "D"]
        feats = {c: dict.fromkeys(FEATURES, 0.0) for c in cands}
        near = rng.choice(cands + [None])
        if near:
            feats[near]["near3"] = 1.0
        vote = (near or "skip") if rule else rng.choice(cands + ["skip"])
        return {"match": f"m{i // 5}", "candidates": cands, "features": feats, "vote": vote}

    assert cross_validated_accuracy([row(i, True) for i in range(300)])["accuracy"] > 0.95
    assert cross_validated_accuracy([row(i, False) for i in range(300)])["accuracy"] < 0.5


def test_the_evidence_block_reads_back_into_the_same_posterior():
    """parse_items(lines()) gives the model what items() gives it: the prompt holds the evidence, not a
    summary."""
    from mau.infer.learnability import parse_items

    log = EvidenceLog("Me", ROSTER)
    far = (200.0, 200.0)
    log.observe(_obs(100, {"A": (10, 10), "B": (50, 50), "C": far, "D": (30, 30)}))
    log.observe(_obs(200, {"A": (12, 10), "B": (40, 40), "C": far, "D": (31, 30)}))
    log.observe(_obs(300, {"A": (32, 30), "B": (36, 30), "C": far, "D": (31, 30)}))
    meeting = {"caller": "C", "reason": "report", "body": "D",
               "transcript": [{"speaker": "C", "text": "I saw A near where D died (1 blocks away at 15 s).",
                               "round": 1},
                              {"speaker": "A", "text": "I suspect C, they were acting strange.", "round": 1}]}
    log.observe(_obs(400, {}, known_dead=["D"], meeting=meeting))
    log.observe(
        _obs(
            500, {"A": (60, 60)},
            meetings_public=[
                {
                    "n": 1, "caller": "C", "reason": "report", "body": "D",
                    "votes": {"A": "C", "B": "A", "Me": "A", "C": "skip"}, "ejected": "A",
                }
            ],
            ejections=[{"name": "A", "role": "imposter"}],
        )
    )
    log.flag(250, "A", "I saw A kill D in Admin.")
    prompt = "Evidence:\n" + "\n".join(f"- {x}" for x in log.lines())
    items = log.items() + [{"k": "saw_kill", "p": "A", "victim": "D"}]  # the flag stands for the sighting
    cands = ["B", "C"]
    want = M.beliefs("Me", ROSTER, cands, 2, items, M.Params())[0]
    got = M.beliefs("Me", ROSTER, cands, 2, parse_items(prompt, "Me", ROSTER), M.Params())[0]
    assert got == pytest.approx(want, abs=1e-6)
    assert {it["k"] for it in parse_items(prompt, "Me", ROSTER)} >= {
        "dead", "death", "accuse", "vote", "ejected", "reported", "saw_kill", "skipped",
    }


# -- claims as evidence (issue 21) --------------------------------------------------------------------------
def test_posterior_with_a_contradiction_and_a_conflict_equals_the_hand_computed_one():
    p = M.Params(contradicted=math.log(0.1), conflict=math.log(0.25))
    others = ["A", "B", "C", "D"]
    post, ok = M.posterior(others, 1, [{"k": "contradicted", "p": "A"}], p)
    # H = {A}: 1; {B}, {C}, {D}: 0.1 each (a crewmate's claim my eyes contradict is unlikely)
    assert (
        ok
        and post[frozenset("A")] == pytest.approx(1 / 1.3)
        and post[frozenset("B")] == pytest.approx(0.1 / 1.3)
    )
    post, _ = M.posterior(others, 1, [{"k": "conflict", "p": "A", "target": "B"}], p)
    # {A}, {B}: 1 (one of the two lies); {C}, {D}: 0.25 (two crewmates' claims clash)
    assert post[frozenset("A")] == pytest.approx(1 / 2.5) and post[frozenset("C")] == pytest.approx(
        0.25 / 2.5
    )
    got = predict(
        [
            Probe(
                [{"k": "contradicted", "p": "A"}, {"k": "conflict", "p": "A", "target": "B"}], others, 1,
                frozenset("A"), others,
            )
        ],
        p,
    )[0]
    want = M.marginals(M.posterior(others, 1, [{"k": "contradicted", "p": "A"},
                                               {"k": "conflict", "p": "A", "target": "B"}], p)[0], others)
    assert got == pytest.approx(want)


def _placed(tick: int, where: dict[str, str], me_room: str = "Cafeteria") -> dict:
    obs = _obs(tick, {n: (float(i), 0.0) for i, n in enumerate(where)})
    for q in obs["players"]:
        q["room"] = where[q["name"]]
    return {**obs, "room": me_room, "alive": True}


def _claims_meeting(lines: list[tuple[str, list[dict]]]) -> dict:
    return {"caller": "B", "reason": "emergency", "body": None,
            "transcript": [{"speaker": s, "text": "...", "round": 1, "claims": cs} for s, cs in lines]}


def test_a_claim_my_own_sightings_contradict_counts_against_its_speaker_and_reads_back():
    from mau.infer.learnability import parse_items

    log = EvidenceLog("Me", ROSTER)
    for t in range(2000, 2400, 100):  # A in Storage 100-120 s; I am in Cafeteria
        log.observe(_placed(t, {"A": "Storage", "B": "Admin"}))
    claims = [("A", [{"k": "at", "who": "me", "room": "Admin", "from_s": 95.0, "to_s": 125.0}]),  # a lie
              ("B", [{"k": "at", "who": "me", "room": "Admin", "from_s": 95.0, "to_s": 125.0}]),  # true
              ("C", [{"k": "saw", "who": "Me", "room": "Admin", "at_s": 110.0}]),  # I was in Cafeteria
              ("D", [{"k": "saw", "who": "A", "room": "Storage", "at_s": 110.0}])]  # true
    log.observe({**_obs(2500, {}, meeting=_claims_meeting(claims)), "room": "Cafeteria"})
    items = log.items()
    assert sorted(it["p"] for it in items if it["k"] == "contradicted") == ["A", "C"]
    lines = log.lines()
    assert any("A placed themself in Admin from 95 s to 125 s; I saw A in Storage at 100 "
               "s" in x for x in lines)
    assert any("C placed me in Admin" in x and "I was in Cafeteria at 110 s" in x for x in lines)
    # A's own "at Admin" against D's sighting of A in Storage: a public conflict between A and D
    assert [(it["p"], it["target"]) for it in items if it["k"] == "conflict"] == [("A", "D")]
    prompt = "Evidence:\n" + "\n".join(f"- {x}" for x in lines)
    p = M.Params(contradicted=-2.0, conflict=-1.0)
    cands = ["A", "B", "C", "D"]
    assert M.beliefs("Me", ROSTER, cands, 2, parse_items(prompt, "Me", ROSTER), p)[0] == pytest.approx(
        M.beliefs("Me", ROSTER, cands, 2, items, p)[0], abs=1e-6)


def test_claims_i_could_not_check_and_malformed_claims_count_for_nothing():
    log = EvidenceLog("Me", ROSTER)
    log.observe(_placed(2000, {"A": "Storage"}))
    # not seen then
    claims = [("A", [{"k": "at", "who": "me", "room": "Admin", "from_s": 300.0, "to_s": 320.0}]),
              ("B", [{"k": "at", "who": "me", "room": "Admin"}, "not a claim", {"k": "vouch", "who": "A"}])]
    log.observe({**_obs(2500, {}, meeting=_claims_meeting(claims)), "room": "Cafeteria"})
    assert not [it for it in log.items() if it["k"] in ("contradicted", "conflict")]


def test_claims_of_earlier_meetings_read_as_said_in_memory_only_when_asked():
    from mau.harness.memory import SemanticMemory

    log = EvidenceLog("Me", ROSTER)
    first = [("A", [{"k": "at", "who": "me", "room": "Admin", "from_s": 95.0, "to_s": 125.0}]),
             ("B", [{"k": "saw", "who": "C", "room": "Storage", "at_s": 110.0}])]
    log.observe({**_obs(2500, {}, meeting=_claims_meeting(first)), "room": "Cafeteria"})
    assert log.claim_lines(12) == []  # the current meeting's claims are in its transcript already
    log.observe({**_obs(2600, {}), "room": "Cafeteria"})
    second = {
        **_claims_meeting([("C", [{"k": "at", "who": "me", "room": "Medbay", "from_s": 130, "to_s": 140}])]),
        "caller": "C",
    }
    log.observe({**_obs(3000, {}, meeting=second), "room": "Cafeteria"})
    said = log.claim_lines(12)
    assert said == ["Meeting 1: A placed themself in Admin from 95 s to 125 s.",
                    "Meeting 1: B placed C in Storage from 105 s to 115 s."]
    assert log.claim_lines(1) == said[-1:]
    mem = SemanticMemory("Me", ROSTER, 5)
    mem.evidence = log
    assert "Claims heard in earlier meetings" not in mem.render()
    mem.claims_memory = True
    assert "Claims heard in earlier meetings:\n- " + said[0] in mem.render()
    assert not any(w in mem.render() for w in ("FALSE", "UNSUPPORTED", "UNVERIFIABLE", "verdict"))


def test_the_evidence_items_with_kept_bins_equal_freshly_binned_ones():
    """EvidenceLog keeps each death's bins until its window is filled again (a report names the reporter):
    over played matches, every crewmate's items equal those of a copy binned afresh, and changing the items
    read changes none read later."""
    import copy

    from mau.env.scripted import ScriptedPolicy
    from mau.env.sim import SimWorld

    w = SimWorld()
    checked = 0
    for seed in (1, 2):
        w.reset(seed)
        pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
        while w.state.phase != "ended":
            for pol in pols.values():
                if pol.ev is None or not pol.ev.deaths:
                    continue
                fresh = copy.deepcopy(pol.ev)
                for d in fresh.deaths.values():
                    d.binned = None
                got = pol.ev.items()
                assert got == fresh.items()
                for it in got:
                    if it["k"] == DEATH:
                        checked += 1
                        for row in it["bins"].values():
                            row.append(99)
                assert pol.ev.items() == fresh.items()
            acts = {}
            for p in w.state.players:
                if p.active:
                    pols[p.name].perceive(p.witnessed)
                    acts[p.name] = pols[p.name].act(w.observe(p.name))
            w.step(acts)
    assert checked > 20
    # a death known before its meeting, whose reporter was by the body at the last step ends: the report fills
    # the window again (the reporter's walk to the body counts for nothing), and the items follow
    log = EvidenceLog("Me", ROSTER)
    far = (200.0, 200.0)
    log.observe(_obs(100, {"A": (10, 10), "B": (50, 50), "C": far, "D": (30, 30)}))
    log.observe(_obs(200, {"A": (12, 10), "B": (40, 40), "C": far, "D": (31, 30)}))
    log.observe(_obs(300, {"A": (32, 30), "B": (36, 30), "C": far, "D": (31, 30)}))
    log.observe(_obs(400, {"A": (60, 60), "B": (45, 30), "C": (29, 30), "D": (31, 30)}, known_dead=["D"]))
    assert next(it for it in log.items() if it["k"] == DEATH)["bins"]["C"] == [3, 3, 0]
    log.observe(_obs(500, {}, known_dead=["D"],
                     meeting={"caller": "C", "reason": "report", "body": "D", "transcript": []}))
    assert next(it for it in log.items() if it["k"] == DEATH)["bins"]["C"] == [3, 3, 3]


# -- evidence a planner cannot cheaply steer, and hypotheses over the imposters' kind (issue 43) -------------
def test_a_withheld_vote_and_an_alibi_are_evidence_items():
    log = EvidenceLog("Me", ROSTER)
    far = (200.0, 200.0)
    log.observe(_obs(100, {"A": (10, 10), "B": (50, 50), "C": far, "D": (30, 30)}))
    log.observe(_obs(200, {"A": (31, 31), "B": (45, 50), "C": far, "D": (31, 30)}))  # D lies at (31, 30)
    log.observe(_obs(300, {"A": (40, 30), "B": (48, 50), "C": (190, 190), "D": (31, 30)}))
    log.observe(_obs(400, {"A": (45, 30), "B": (48, 52), "C": (150, 150), "D": (31, 30)}))
    log.observe(_obs(500, {}, known_dead=["D"], meeting={"caller": "C", "reason": "report", "body": "D",
                                                         "transcript": []}))
    votes = {"A": "B", "B": "skip", "C": "skip", "Me": "skip"}
    log.observe(_obs(600, {}, meetings_public=[{"n": 1, "caller": "C", "reason": "report", "body": "D",
                                                "votes": votes}]))
    items = log.items()
    # B was 20+ blocks away at every step end I saw it, C 200+ (its last two, its walk to the body, unread):
    # both accounted for; A stood by the spot at 10 s
    assert sorted(it["p"] for it in items if it["k"] == "alibi") == ["B", "C"]
    assert all(it["victim"] == "D" for it in items if it["k"] == "alibi")
    assert sorted(it["p"] for it in items if it["k"] == "skipped") == ["B", "C", "Me"]
    # the prompt's Evidence block says both, and reads back into the same items
    from mau.infer.learnability import parse_items

    back = parse_items("\n".join(f"- {x}" for x in log.lines()), "Me", ROSTER)
    for kind in ("alibi", "skipped"):
        assert [it for it in back if it["k"] == kind] == [it for it in items if it["k"] == kind]
    others = [n for n in ROSTER if n != "Me"]
    cands = [n for n in others if n != "D"]
    skip = M.beliefs("Me", ROSTER, cands, 2, [it for it in items if it["k"] in ("dead", "skipped")],
                     M.Params(skipped=2.0))[0]
    assert skip["B"] == skip["C"] > skip["A"]  # B and C skipped, A voted
    alibi = M.beliefs("Me", ROSTER, cands, 2, [it for it in items if it["k"] in ("dead", "alibi")],
                      M.Params(alibi=-2.0))[0]
    assert alibi["A"] > alibi["B"] == alibi["C"]
    # 0 (the issue-29 fit) makes both count for nothing
    assert M.beliefs("Me", ROSTER, cands, 2, items, M.Params(skipped=0, alibi=0))[0] == M.beliefs(
        "Me", ROSTER, cands, 2, [it for it in items if it["k"] not in ("skipped", "alibi")], M.Params())[0]


def _mixture() -> M.Mixture:
    planner = M.Params(strong_ii=2.5, skipped=2.0, near_0=0.0)
    return M.Mixture(kinds={"habit": M.Params(), "planner_0": planner},
                     prior={"habit": 0.6, "planner_0": 0.4})


def test_a_mixture_over_kinds_sums_each_hypothesis_over_its_kinds():
    others = ["A", "B", "C", "D"]
    items = [{"k": "accuse", "p": "A", "target": "B", "s": "strong"}, {"k": "skipped", "p": "A"},
             {"k": "vote", "p": "C", "target": "D"}]
    mix = _mixture()
    post, ok = M.posterior(others, 2, items, mix)
    assert ok
    want = {}
    for h in M.hypotheses(others, 2):
        want[h] = sum(pr * math.exp(sum(M.log_factor(it, h, mix.kinds[n]) for it in items))
                      for n, pr in mix.prior.items())
    total = sum(want.values())
    for h in want:
        assert post[h] == pytest.approx(want[h] / total, abs=1e-12)
    # the planner kind reads an accusation of a partner as a sign of the pair: {A, B} gains on habit alone
    habit = M.posterior(others, 2, items, M.Params())[0]
    assert post[frozenset("AB")] > habit[frozenset("AB")]
    # one kind is that kind's Params; the memo and the vectorised prediction agree with the posterior
    one = M.Mixture(kinds={"habit": M.Params(weak_ic=0.7)}, prior={"habit": 1.0})
    assert M.posterior(others, 2, items, one) == M.posterior(others, 2, items, M.Params(weak_ic=0.7))
    memo = M.PosteriorMemo()
    for _ in range(2):
        assert memo.posterior(others, 2, items, mix) == (post, True)
    pr = Probe(items, others, 2, frozenset("AB"), ["A", "B", "C"])
    assert predict([pr], mix)[0] == pytest.approx(M.marginals(post, ["A", "B", "C"]), abs=1e-9)
    with pytest.raises(ValueError, match="name the same kinds"):
        M.Mixture(kinds={"habit": M.Params()}, prior={"planner": 1.0})
    with pytest.raises(ValueError, match="sum to 1"):
        M.Mixture(kinds={"habit": M.Params()}, prior={"habit": 0.5})


def test_a_mixture_explains_its_belief_by_the_items_that_moved_it():
    from mau.infer.explain import influence

    roster = ["Me", "A", "B", "C", "D"]
    items = [{"k": "skipped", "p": "A"}, {"k": "vote", "p": "C", "target": "D"}]
    pulls = dict(influence("Me", roster, 2, items, _mixture(), "A"))
    assert pulls[0] > 0.1  # the withheld vote moved A under the planner kind
    assert dict(influence("Me", roster, 2, items, M.Params(), "A")).get(0, 0.0) == pytest.approx(0.0)
