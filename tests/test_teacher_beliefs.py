"""The teacher says what it believes and why (docs/detection.md, "The teacher's reasons"): its VOTE answer
carries its exact posterior and the evidence that moved it, the harness keeps a usable belief set and drops a
bad one without costing the vote, and every BC row keeps the belief as a distribution over the candidates and
skip (docs/datasets.md, "Beliefs")."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main
from mau.datasets.beliefs import distribution, row_beliefs
from mau.env.scripted import ScriptedBrain
from mau.harness.modules import Context, parse_vote, vote_beliefs
from mau.infer import explain
from mau.infer import model as infer
from mau.infer.evidence import EvidenceLog, _Death

ARIA = "configs/play/aria_scripted.yaml"
NO_FRAMES = ["--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false"]


@pytest.fixture(scope="module")
def recomputed(tmp_path_factory) -> tuple[Path, list[tuple[dict, dict]]]:
    """A scripted ARIA match (ego state) whose every crewmate VOTE answer is paired with the posterior
    recomputed at that moment from the brain's evidence by the plain model (no memo, no cache)."""
    pairs: list[tuple[dict, dict]] = []
    orig = ScriptedBrain.vote_answer

    def spy(self, obs):
        out = orig(self, obs)
        if obs["role"] != F.IMPOSTER:
            alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
            fresh, _ = infer.beliefs(self.name, self.ev.roster, alive, self.n_imposters, self._taken_in(),
                                     self.params)
            pairs.append((out, fresh))
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(ScriptedBrain, "vote_answer", spy)
    out = tmp_path_factory.mktemp("teacher") / "run" / F.MATCHES_DIR / "m3"
    try:
        assert main(["play", "--config", ARIA, "--seed", "3", "--out", str(out), *NO_FRAMES,
                     "--set", "seats.crewmate.aria.state=ego",
                     "--set", "seats.crewmate.model.model=scripted-cautious",
                     "--set", "seats.crewmate.aria.prompt_profile={vote: compact}"]) == 0
    finally:
        mp.undo()
    return out, pairs


def test_the_vote_answer_carries_the_posterior_at_that_moment(recomputed):
    folder, pairs = recomputed
    assert len(pairs) >= 4
    for answer, fresh in pairs:
        assert set(answer[F.VOTE_BELIEFS]) == set(fresh)
        for n, p in fresh.items():
            assert answer[F.VOTE_BELIEFS][n] == pytest.approx(p, abs=5e-4)
        assert answer["reasoning"] not in ("", "the evidence")
        top = max(sorted(fresh), key=lambda n: fresh[n])  # ties: the first name, as the brain breaks them
        focus = answer[F.VOTE_TARGET] if answer[F.VOTE_TARGET] != F.SKIP else top
        assert f"{focus}, P(imposter) {fresh[focus]:.2f}" in answer["reasoning"]
    # the harness records them as the answer gave them (parsed and raw), and every VOTE record carries them
    votes = [json.loads(x) for x in (folder / F.CALLS_FILE).read_text().splitlines()]
    votes = [c for c in votes if c[F.MODULE] == "vote" and c[F.ROLE] == F.CREWMATE]
    assert len(votes) == len(pairs)
    for c, (answer, _) in zip(votes, pairs):
        assert c[F.PARSED][F.VOTE_BELIEFS] == answer[F.VOTE_BELIEFS]
        assert json.loads(c[F.RAW_OUTPUT])[F.VOTE_BELIEFS] == answer[F.VOTE_BELIEFS]


def test_meeting_and_belief_answers_say_why(recomputed):
    folder, _ = recomputed
    calls = [json.loads(x) for x in (folder / F.CALLS_FILE).read_text().splitlines()]
    crew = [c for c in calls if c[F.ROLE] == F.CREWMATE and c[F.MODULE] in ("meeting", "belief")]
    assert crew and all("P(imposter)" in c[F.PARSED]["reasoning"] for c in crew)


def test_every_bc_row_keeps_the_belief_over_candidates_and_skip(recomputed, tmp_path):
    folder, _ = recomputed
    from datasets import load_from_disk

    out = tmp_path / "ds"
    assert main(["dataset", "--runs", str(folder.parent.parent), "--filter", "all", "--out", str(out)]) == 0
    dd = load_from_disk(str(out))
    rows = [r for s in dd for r in dd[s]]
    votes = [r for r in rows if r[F.MODULE] == "vote"]
    assert votes and all(r[F.DS_BELIEFS_JSON] is None for r in rows if r[F.MODULE] != "vote")
    for r in votes:
        bel = json.loads(r[F.DS_BELIEFS_JSON])
        text = r[F.DS_MESSAGES][1][F.DS_CONTENT][0][F.DS_CONTENT_TEXT]
        cands = text.rsplit("Candidates: ", 1)[1].split(".")[0].split(", ")
        assert set(bel) == set(cands) and F.SKIP in bel
        assert sum(bel.values()) == pytest.approx(1.0, abs=1e-5)
    card = (out / F.DATASET_CARD).read_text()
    assert f"(total {len(votes)})" in card and "beliefs_json" in card
    assert json.loads((out / F.DATASET_HEADER).read_text())["with_beliefs"]["train"] <= len(votes)


def test_the_belief_distribution_keeps_the_ranking_and_sums_to_one():
    bel = distribution({"A": 0.9, "B": 0.6, "C": 0.3, "D": 0.2})
    assert sum(bel.values()) == pytest.approx(1.0)
    assert bel[F.SKIP] == pytest.approx(0.1)  # the chance that the top suspect is a crewmate
    assert bel["A"] > bel["B"] > bel["C"] > bel["D"]
    assert bel["A"] / bel["B"] == pytest.approx(0.9 / 0.6)
    assert distribution({"A": 0.0, "B": 0.0}) == {"A": 0.0, "B": 0.0, F.SKIP: 1.0}
    assert row_beliefs({F.MODULE: "meeting", F.PARSED: {F.VOTE_BELIEFS: {"A": 1.0}}}) is None
    assert row_beliefs({F.MODULE: "vote", F.PARSED: {F.VOTE_TARGET: "A"}}) is None


def test_a_bad_belief_set_never_costs_the_vote():
    obs = {"name": "Me", "role": "crewmate", "meeting": {"alive_players": ["Me", "A", "B"]}}
    c = Context(obs, [])
    good = parse_vote({"vote_target": "A", "reasoning": "r", "beliefs": {"a": 0.7, "B": 0.2}}, c)
    assert good[F.VOTE_BELIEFS] == {"A": 0.7, "B": 0.2}  # names matched without case
    for bad in ({"A": 0.7}, {"A": 1.5, "B": 0.1}, {"A": True, "B": 0.1}, {"A": "x", "B": 0.1}, [0.7, 0.2],
                {"A": math.nan, "B": 0.1}, None):
        out = parse_vote({"vote_target": "A", "beliefs": bad}, c)
        assert out[F.VOTE_TARGET] == "A" and F.VOTE_BELIEFS not in out
    assert vote_beliefs({"A": 0.5}, []) is None


def _log() -> EvidenceLog:
    log = EvidenceLog("Me", ["Me", "A", "B", "C", "D"])
    d = _Death("C", 400, (10.0, 10.0), "Admin", ticks=[100, 200, 300], dists={"A": [2.0, 9.0, None],
                                                                               "B": [None, None, 14.0]})
    log.deaths["C"] = d
    log.ejected["D"] = "imposter"
    return log


def test_reasons_are_the_items_that_moved_the_posterior_most():
    """Leave-one-out pulls on hand-built evidence: each equals the log-odds with and without the item under
    the plain posterior; the strongest come first, in words from the evidence log; hard facts are no
    reasons."""
    roster = ["Me", "A", "B", "C", "D"]
    items = [
        {"k": "dead", "p": "C"}, {"k": "ejected", "p": "D", "role": "imposter"},
        {"k": "death", "victim": "C", "bins": {"A": [0, 2, 3], "B": [3, 3, 3]}},
        {"k": "accuse", "p": "D", "target": "B", "s": "strong"},
        {"k": "vote", "p": "B", "target": "A"},
    ]
    p = infer.Params()

    def logodds(its):
        post, _ = infer.posterior(["A", "B", "C", "D"], 2, its, p)
        q = infer.marginals(post, ["A"])["A"]
        return math.log(q / (1 - q))

    pulls = dict(explain.influence("Me", roster, 2, items, p, "A"))
    assert set(pulls) == {2, 3, 4}  # dead and ejected are constraints, not reasons
    for i, x in pulls.items():
        assert x == pytest.approx(logodds(items) - logodds(items[:i] + items[i + 1:]), abs=1e-9)
    assert pulls[2] > 0  # A stood by the body
    memo = infer.PosteriorMemo()
    assert dict(explain.influence("Me", roster, 2, items, p, "A", memo)) == pytest.approx(pulls)
    said = explain.reasons("Me", roster, 2, items, p, "A", _log())
    order = sorted(pulls, key=lambda i: -abs(pulls[i]))
    assert said == [explain.describe(items[i], _log(), "A") for i in order]
    assert set(said) == {"A was 2 blocks from where C lay at 5 s", "D, an ejected imposter, said they saw B",
                         "B voted for A"}


def test_describe_says_each_kind_in_words():
    log = _log()
    assert explain.describe({"k": "saw_kill", "p": "A", "victim": "C"}, log, "A") == "I saw A kill C"
    assert explain.describe({"k": "death", "victim": "C", "bins": {}}, log, "B") == (
        "B was not seen near where C lay; A was 2 blocks from it at 5 s")
    assert explain.describe({"k": "vote", "p": "D", "target": "A"}, log, "A") == (
        "D, an ejected imposter, voted for A")
    weak = {"k": "accuse", "p": "B", "target": "A", "s": "weak"}
    assert explain.describe(weak, log, "A") == "B suspected A"
    assert explain.describe({"k": "reported", "p": "B"}, log, "A") == "B reported a body"
