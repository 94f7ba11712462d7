"""Belief probes, the ideal observer and the detection metrics (docs/evaluation.md, "Detection")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mau import schema as F
from mau.beliefs import metrics as B
from mau.beliefs.config import ObserverConfig
from mau.beliefs.observer import DEAD, EJECTED, NEAR_BODY, WITNESSED_KILL, Evidence, beliefs
from mau.beliefs.perceive import Perception
from mau.beliefs.probe import QUESTION, VOTE_PREFIX, normalise, parse_probe
from mau.beliefs.report import markdown
from mau.env.backends import make_world
from mau.env.config import WorldConfig
from mau.harness.backends import make_backend
from mau.harness.backends.base import ModelBackend, ModelRequest, ModelResponse, ScoreResponse
from mau.harness.config import SeatConfig
from mau.harness.match import AriaMatch
from mau.harness.modules import ParseError
from tests.helpers import park_everyone, place

ROSTER = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin"]
ME = "Steve"
CFG = ObserverConfig()


def ap(x: float):
    return pytest.approx(x, abs=1e-6)  # beliefs are written with 6 decimals


def _bel(evidence: list[Evidence], dead: tuple[str, ...] = ()) -> dict[str, float]:
    cands = [n for n in ROSTER if n != ME and n not in dead]
    return beliefs(ME, ROSTER, cands, 2, evidence, CFG)[0]


# -- the ideal observer against hand computation -----------------------------------------------------------------
def test_observer_prior_is_uniform_over_the_21_pairs():
    b = _bel([])
    assert set(b) == set(ROSTER) - {ME}
    assert all(v == ap(2 / 7) for v in b.values())  # each player is in 6 of the 21 pairs


def test_observer_witnessed_kill_by_hand():
    # Noah is dead (a crewmate): 15 pairs of the 6 others remain; the kill seen by me keeps the 5 with James
    b = _bel([Evidence(WITNESSED_KILL, player="James"), Evidence(DEAD, player="Noah")], dead=("Noah",))
    assert b["James"] == ap(1.0)
    for n in ("Jason", "Michael", "Olivia", "Ethan", "Martin"):
        assert b[n] == ap(1 / 5)


def test_observer_body_next_to_one_player_by_hand():
    # 15 pairs; the 5 with Michael weigh 2 (near_body_lr): total 20; P(Michael) = 10/20; another: (2 + 4)/20
    b = _bel([Evidence(DEAD, player="Noah"), Evidence(NEAR_BODY, players=["Michael"])], dead=("Noah",))
    assert b["Michael"] == ap(0.5)
    for n in ("James", "Jason", "Olivia", "Ethan", "Martin"):
        assert b[n] == ap(0.3)
    assert sum(b.values()) == ap(2.0)


def test_observer_ejection_reveal_by_hand():
    imp = _bel([Evidence(EJECTED, player="Jason", role="imposter")])
    assert imp["Jason"] == ap(1.0) and imp["Olivia"] == ap(1 / 6)
    crew = _bel([Evidence(EJECTED, player="Jason", role="crewmate")], dead=("Jason",))
    assert all(v == ap(2 / 6) for v in crew.values())  # C(6, 2) = 15 pairs, 5 per player


# -- perception from the world: hand-built event sequences -------------------------------------------------------
@pytest.fixture
def w():
    world = make_world(WorldConfig.model_validate({"game": {"roles": "paper"}}))
    world.reset(0)
    park_everyone(world)
    return world


def test_perception_of_a_witnessed_kill_and_of_a_body_with_a_player_next_to_it(w):
    st = w.state
    per = Perception(w, CFG)
    st.emit(F.EV_KILL, killer="James", victim="Noah", x=80.0, z=70.0, room="Cafeteria", witnesses=["Jason"])
    # Steve finds Martin's body with Olivia (an imposter) standing next to it, in his view; nobody else near
    place(w, "Steve", 84.0, 76.0, yaw_deg=180)
    place(w, "Olivia", 81.0, 76.5)
    assert w.vision.sees(st.player("Steve"), 81.0, 76.5)
    st.emit(F.EV_KILL, killer="Olivia", victim="Martin", x=80.0, z=76.0, room="Cafeteria", witnesses=[])
    st.player("Martin").alive = st.player("Noah").alive = False
    st.emit(F.EV_BODY_SEEN, player="Steve", body="Martin", room="Cafeteria")
    per.update()
    jason = beliefs("Jason", ROSTER, [n for n in ROSTER if n not in ("Jason", "Noah")], 2,
                    per.evidence["Jason"], CFG)[0]
    assert jason["James"] == ap(1.0) and jason["Olivia"] == ap(0.2)
    kinds = [(e.kind, e.player, e.players) for e in per.evidence["Steve"]]
    assert kinds == [(DEAD, "Martin", []), (NEAR_BODY, None, ["Olivia"])]
    steve = beliefs("Steve", ROSTER, [n for n in ROSTER if n not in ("Steve", "Martin")], 2,
                    per.evidence["Steve"], CFG)[0]
    assert steve["Olivia"] == ap(0.5) and steve["Noah"] == ap(0.3)
    assert "Noah" not in [e.player for e in per.evidence["Steve"]]  # Steve did not see Noah's death
    # a public ejection reveal reaches every crewmate
    st.emit(F.EV_EJECTION, ejected="Olivia", role="imposter", tally={"Olivia": 5}, text="Olivia was an Imposter.")
    per.update()
    assert all(any(e.kind == EJECTED for e in ev) for ev in per.evidence.values())


def test_perception_ignores_a_player_out_of_sight(w):
    st = w.state
    per = Perception(w, CFG)
    place(w, "Steve", 84.0, 76.0, yaw_deg=0)  # looking away from the body
    place(w, "Olivia", 81.0, 76.5)
    st.emit(F.EV_KILL, killer="Olivia", victim="Martin", x=80.0, z=76.0, room="Cafeteria", witnesses=[])
    st.emit(F.EV_BODY_SEEN, player="Steve", body="Martin", room="Cafeteria")
    per.update()
    assert [e.kind for e in per.evidence["Steve"]] == [DEAD]


# -- probe answers ------------------------------------------------------------------------------------------------
def test_probe_answers_are_checked_and_normalised_to_the_living_imposters():
    cands = ["A", "B", "C", "D"]
    r = parse_probe('{"beliefs": {"a": 0.9, "B": 0.9, "C": 0.1, "D": 0.1}, "top2": ["B", "A"]}', cands, 2)
    assert sum(r["beliefs"].values()) == ap(2.0) and r["top2"] == ["B", "A"]
    assert r["beliefs"]["A"] == ap(0.9)
    assert normalise({"A": 1.0, "B": 0.5, "C": 0.5}, 2) == {"A": 1.0, "B": 0.5, "C": 0.5}
    assert normalise({"A": 0.0, "B": 0.0}, 1) == {"A": 0.5, "B": 0.5}
    assert normalise({"A": 0.9, "B": 0.1, "C": 0.0}, 2)["A"] == 1.0  # capped; the rest goes to the others
    for bad in ('{"beliefs": {"A": 1.5, "B": 0, "C": 0, "D": 0}}', '{"beliefs": {"A": 0.5}}', "no json"):
        with pytest.raises(ParseError):
            parse_probe(bad, cands, 2)
    assert parse_probe('{"beliefs": {"A": 0.1, "B": 0.7, "C": 0.2, "D": 0.3}}', cands, 2)["top2"] == ["B", "D"]


# -- probes leave the match unchanged ------------------------------------------------------------------------------
def _play(tmp: Path, probes: dict[str, Any], seed: int = 3, crew_backend: ModelBackend | None = None,
          max_steps: int = 200) -> tuple[AriaMatch, Path]:
    world = make_world(WorldConfig.model_validate({"game": {"max_steps": max_steps}}))
    crew = SeatConfig.model_validate({"aria": {"frames": False, "probes": probes}})
    imp = SeatConfig.model_validate({"aria": {"frames": False, "prompt_style": "deterministic"}})
    seats = {"crewmate": crew, "imposter": imp}
    backends = {"crewmate": crew_backend or make_backend(crew.model), "imposter": make_backend(imp.model)}
    tmp.mkdir(parents=True)
    m = AriaMatch(world, seats, backends, tmp, "m")
    asyncio.run(m.play(seed))
    m.log.close()
    (tmp / F.EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in world.state.events))
    return m, tmp


def _calls(folder: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(x).items() if k not in (F.LATENCY_S, F.HARNESS_MS)}
            for x in (folder / F.CALLS_FILE).read_text().splitlines()]


def test_probes_leave_the_match_unchanged_and_never_enter_memory_or_prompts(tmp_path):
    _, d_off = _play(tmp_path / "off", {"enabled": False, "observer": False})
    on, d_on = _play(tmp_path / "on", {"enabled": True, "roam_every": 10})
    assert (d_off / F.EVENTS_FILE).read_text() == (d_on / F.EVENTS_FILE).read_text()
    assert _calls(d_off) == _calls(d_on)  # every later prompt and answer is the same
    assert (d_off / F.MEMORY_FILE).read_text() == (d_on / F.MEMORY_FILE).read_text()
    recs = B.read_probes(d_on)
    model = [r for r in recs if r[F.PROBE_SOURCE] == "model"]
    assert model and {r[F.PROBE_MOMENT] for r in model} >= {"meeting_start", "before_vote", "roam"}
    assert all(r[F.ROLE] == "crewmate" and not r[F.FALLBACK] for r in model)
    assert len([r for r in recs if r[F.PROBE_SOURCE] == "ideal"]) == len(model)
    marker = QUESTION.split(":")[0]
    assert marker in json.dumps(model[0][F.MESSAGES])
    # the probe sees the agent's state text as its play calls do, suspicion scores included (issue 9)
    assert all("Suspicion scores (0 to 1):" in json.dumps(r[F.MESSAGES]) for r in model)
    assert marker not in (d_on / F.CALLS_FILE).read_text() and marker not in (d_on / F.MEMORY_FILE).read_text()
    assert on.probe_summary["model_probes"] == len(model) and not (d_off / F.PROBES_FILE).exists()


class BrokenProbes(ModelBackend):
    """The scripted expert for play; probes of one crewmate raise, the others' answer garbage or half."""

    name = "broken"

    def __init__(self):
        from mau.harness.backends.base import ModelConfig

        super().__init__(ModelConfig())
        self.inner = make_backend(ModelConfig())
        self.n = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.module != "probe":
            return await self.inner.complete(request)
        assert request.stream == "probe"
        self.n += 1
        if self.n % 3 == 0:
            raise RuntimeError("probe server down")
        if self.n % 3 == 1:
            return ModelResponse(text="I think it is James.")
        return await self.inner.complete(request)


def test_probe_failures_are_recorded_fallbacks_excluded_from_metrics(tmp_path):
    _, d_ref = _play(tmp_path / "ref", {"enabled": False}, seed=4)
    m, d = _play(tmp_path / "broken", {"enabled": True}, seed=4, crew_backend=BrokenProbes())
    assert (d_ref / F.EVENTS_FILE).read_text() == (d / F.EVENTS_FILE).read_text()
    recs = [r for r in B.read_probes(d) if r[F.PROBE_SOURCE] == "model"]
    bad = [r for r in recs if r[F.FALLBACK]]
    assert bad and all(r[F.PROBE_BELIEFS] is None and r[F.FALLBACK_REASON] for r in bad)
    assert any("probe server down" in r[F.FALLBACK_REASON] for r in bad)
    assert any("JSON" in r[F.FALLBACK_REASON] for r in bad)
    (d / F.MATCH_HEADER).write_text(json.dumps({F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: 1, F.SEED: 4,
                                                F.ROLES: {p.name: p.role for p in m.world.state.players},
                                                F.TICKS: m.world.state.tick}))
    mb = B.match_beliefs(d)["model"]
    good = [r for r in recs if not r[F.FALLBACK]]
    assert mb.asked == len(recs) and mb.fallbacks == len(bad)
    assert len(mb.p) == sum(len(r[F.PROBE_BELIEFS]) for r in good)  # fallbacks add no (probe, player) pair


class ScoringExpert(ModelBackend):
    """The scripted expert for play; scores a VOTE read-out as minus the name's length (Ethan, James, ... first)."""

    name = "scoring"
    can_score = True

    def __init__(self):
        from mau.harness.backends.base import ModelConfig

        super().__init__(ModelConfig())
        self.inner = make_backend(ModelConfig())
        self.scored: list[tuple[ModelRequest, str, list[str]]] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        assert request.module != "probe", "the vote read-out never generates"
        return await self.inner.complete(request)

    async def score(self, request: ModelRequest, prefix: str, continuations: list[str]) -> ScoreResponse:
        self.scored.append((request, prefix, continuations))
        return ScoreResponse([-float(len(c)) for c in continuations], prompt_tokens=10)


def test_vote_readout_scores_the_vote_prompt_and_leaves_the_match_unchanged(tmp_path):
    _, d_off = _play(tmp_path / "off", {"enabled": False, "observer": False}, seed=4)
    backend = ScoringExpert()
    _, d = _play(tmp_path / "vote", {"enabled": True, "readout": "vote"}, seed=4, crew_backend=backend)
    assert (d_off / F.EVENTS_FILE).read_text() == (d / F.EVENTS_FILE).read_text()
    assert [{**c, F.BACKEND: None} for c in _calls(d_off)] == [{**c, F.BACKEND: None} for c in _calls(d)]
    model = [r for r in B.read_probes(d) if r[F.PROBE_SOURCE] == "model"]
    assert model and len(model) == len(backend.scored)
    for r in model:
        assert r[F.PROBE_READOUT] == "vote" and not r[F.FALLBACK]
        text = json.dumps(r[F.MESSAGES])
        assert QUESTION.split(":")[0] not in text and "vote_target" in text  # the VOTE prompt, no question
        assert sum(r[F.PROBE_BELIEFS].values()) == pytest.approx(r["n_imposters"], abs=1e-4)
        raw, cands = r["raw_beliefs"], r[F.PROBE_CANDIDATES]
        w = {c: 2.718281828459045 ** -(len(c) + 1) for c in cands}
        assert all(raw[c] == pytest.approx(w[c] / sum(w.values()), abs=1e-5) for c in cands)
        assert r[F.PROBE_TOP2] == sorted(cands, key=lambda c: (len(c), c))[:2]
    req, prefix, conts = backend.scored[0]
    assert prefix == VOTE_PREFIX and req.stream == "probe" and all(c.endswith('"') for c in conts)
    # a backend that cannot score: every model probe is a recorded fallback that says why, the match unchanged
    _, d2 = _play(tmp_path / "scripted", {"enabled": True, "readout": "vote"}, seed=4)
    assert (d_off / F.EVENTS_FILE).read_text() == (d2 / F.EVENTS_FILE).read_text()
    bad = [r for r in B.read_probes(d2) if r[F.PROBE_SOURCE] == "model"]
    assert bad and all(r[F.FALLBACK] and "cannot score" in r[F.FALLBACK_REASON] for r in bad)
    # readout auto: vote where the backend can score, the question elsewhere
    for backend, readout in ((ScoringExpert(), "vote"), (None, "answer")):
        _, d3 = _play(tmp_path / f"auto-{readout}", {"enabled": True, "readout": "auto"}, seed=4,
                      crew_backend=backend)
        recs = [r for r in B.read_probes(d3) if r[F.PROBE_SOURCE] == "model"]
        assert recs and all(r[F.PROBE_READOUT] == readout and not r[F.FALLBACK] for r in recs)


# -- metrics on a hand-made probe file -----------------------------------------------------------------------------
def _probe(seq: int, tick: int, beliefs: dict[str, float] | None, top2: list[str] | None,
           source: str = "model") -> dict[str, Any]:
    return {F.PROBES_VERSION_FIELD: 1, F.MATCH: "m", F.STEP: 0, F.TICK: tick, F.PROBE_MOMENT: "meeting_start",
            F.PROBE_SEQ: seq, F.AGENT: "X", F.ROLE: "crewmate", F.PROBE_SOURCE: source,
            F.PROBE_CANDIDATES: sorted(beliefs) if beliefs else ["A", "B", "C", "D"], F.PROBE_BELIEFS: beliefs,
            F.PROBE_TOP2: top2, F.FALLBACK: beliefs is None}


def _hand_match(folder: Path, probes: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    roles = {"X": "crewmate", "A": "imposter", "B": "imposter", "C": "crewmate", "D": "crewmate"}
    (folder / F.MATCH_HEADER).write_text(json.dumps({F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: 1, F.SEED: 1,
                                                     F.ROLES: roles, F.TICKS: 1000}))
    (folder / F.EVENTS_FILE).write_text(json.dumps({F.EVENT_INDEX: 0, F.TICK: 500, F.STEP: 5, F.TYPE: F.EV_EJECTION,
                                                    "ejected": "A", "role": "imposter"}) + "\n")
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
    v = {k: e["value"] for k, e in c.items()}
    assert v["auroc"] == ap(25.5 / 30)  # 5 imposter and 6 crewmate scores, ties count half
    assert v["brier"] == ap(1.64 / 11)
    assert v["ece"] == ap(2.0 / 11)
    assert c["auroc"]["n"] == 11  # the fallback adds nothing (never a silent 0.5)
    assert v["top2_hit_rate"] == ap(2 / 3)
    assert v["detection_rate"] == ap(0.5)  # A detected from the first probe; B's last probe misses
    assert v["time_to_detection"] == ap(0.1)
    assert v["detection_lead"] == ap(0.1 - 0.5)
    assert v["probe_fallback_share"] == ap(0.25)
    # the report says how each row's beliefs were read (records without the field were asked)
    det = B.evaluate(B.load_run(d), resamples=50)
    assert det["readouts"] == {"match": ["answer"]}
    assert "Probe read-out: match: answer (" in markdown(det)


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


def test_observer_vote_temperament_votes_the_observers_top_player(tmp_path):
    _, d = _play(tmp_path / "ov", {"enabled": False, "observer_vote": 0.5}, seed=3)
    ideal = {(r[F.AGENT], r["meeting"]): r for r in B.read_probes(d)
             if r[F.PROBE_SOURCE] == "ideal" and r[F.PROBE_MOMENT] == "before_vote"}
    votes = [json.loads(x) for x in (d / F.CALLS_FILE).read_text().splitlines()]
    votes = [r for r in votes if r[F.MODULE] == "vote" and r[F.ROLE] == "crewmate"]
    assert votes
    meeting_of_tick: dict[int, int] = {}
    for (_, m), r in ideal.items():
        meeting_of_tick[r[F.TICK]] = m
    for v in votes:
        r = ideal[(v[F.AGENT], meeting_of_tick[v[F.TICK]])]
        bel = r[F.PROBE_BELIEFS]
        top = max(sorted(bel), key=lambda n: bel[n])
        assert v[F.PARSED]["vote_target"] == (top if bel[top] >= 0.5 else "skip")
        assert "observer" not in json.dumps(v[F.MESSAGES])  # the hint is never in the prompt


def test_summary_table_puts_detection_next_to_win_rate_with_the_observer_row():
    from mau.beliefs.report import summary_table

    e = {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 4, "method": "x"}
    none = {"value": None, "ci_low": None, "ci_high": None, "n": 0, "method": "x"}
    vote = {"crew_win_rate": e, "ejection_precision": none, "fallback_share": e}
    det = {"auroc": e, "brier": e, "top2_hit_rate": e, "probe_fallback_share": e}
    res = {"arms": ["a"], "columns": ["imp"], "cells": [{"arm": "a", "imposter": "imp", "metrics": vote}],
           "detection": {"rows": ["a", B.IDEAL_ROW], "cells": [{"row": r, "imposter": "imp", "metrics": det}
                                                               for r in ("a", B.IDEAL_ROW)]}}
    lines = summary_table(res).splitlines()
    assert lines[2] == "| a | 50 [25, 75] | n/a (n=0) | 50 [25, 75] | 0.50 [0.25, 0.75] | 0.50 [0.25, 0.75] | " \
                       "50 [25, 75] | 50 [25, 75] |"
    assert lines[3].startswith(f"| {B.IDEAL_ROW} | - | - | - | 0.50")
    # An arm without a usable answer is marked failed, not scored (its fallback share stays visible).
    res["arm_health"] = {"a": {"failed": True, "over": True}}
    assert summary_table(res).splitlines()[2].startswith("| a | FAILED | FAILED | 50 [25, 75] |")
    res["detection"]["readouts"] = {"a": ["vote"]}
    assert summary_table(res).splitlines()[-1].startswith("Probe read-out: a: vote (")


def test_probe_arms_turn_model_probes_off_for_the_other_arms():
    from mau.errors import ConfigError
    from mau.eval.config import EvalConfig, plan, seats_for

    base = {"arms": {"a": {}, "b": {}}, "imposters": {"i": {}}, "seeds": [1],
            "crewmate_aria": {"probes": {"enabled": True}}}
    cfg = EvalConfig.model_validate({**base, "probe_arms": ["b"]})
    seats = {m.arm: seats_for(cfg, m)["crewmate"] for m in plan(cfg)}
    assert not seats["a"].aria.probes.enabled and seats["b"].aria.probes.enabled
    assert seats["a"].aria.probes.observer  # the observer still writes its rows
    with pytest.raises((ConfigError, ValueError), match="probe_arms"):
        EvalConfig.model_validate({**base, "probe_arms": ["nope"]})
