"""In-match beliefs (mau/harness/beliefs): belief probes, perception and the ideal observer (docs/harness.md,
"Belief probes"; docs/evaluation.md, "The ideal observer"). Their metrics: tests/test_detection.py."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from mau import schema as F
from mau.env.backends import make_world
from mau.env.config import WorldConfig
from mau.eval import detection as B
from mau.harness.backends import make_backend
from mau.harness.backends.base import ModelBackend, ModelRequest, ModelResponse, ScoreResponse
from mau.harness.beliefs.config import ObserverConfig
from mau.harness.beliefs.perceive import Perception
from mau.harness.beliefs.probe import QUESTION, VOTE_PREFIX, normalise, parse_probe
from mau.harness.config import SeatConfig
from mau.harness.match import AriaMatch
from mau.harness.modules import ParseError
from mau.infer import model as infer
from tests.helpers import park_everyone, place

ROSTER = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin"]
ME = "Steve"
CFG = ObserverConfig()


def ap(x: float):
    return pytest.approx(x, abs=1e-6)  # beliefs are written with 6 decimals


def _bel(items: list[dict[str, Any]], dead: tuple[str, ...] = ()) -> dict[str, float]:
    cands = [n for n in ROSTER if n != ME and n not in dead]
    return infer.beliefs(ME, ROSTER, cands, 2, items, CFG)[0]


# -- the ideal observer (mau.infer.model, hand computations: tests/test_infer.py) ----------------------------
def test_observer_prior_is_uniform_over_the_21_pairs():
    b = _bel([])
    assert set(b) == set(ROSTER) - {ME}
    assert all(v == ap(2 / 7) for v in b.values())  # each player is in 6 of the 21 pairs


def test_observer_witnessed_kill_by_hand():
    # Noah is dead (a crewmate): 15 pairs of the 6 others remain; the kill seen by me keeps the 5 with James
    # (the others weigh exp(saw_kill_error) each)
    e = math.exp(CFG.saw_kill_error)
    b = _bel([{"k": "saw_kill", "p": "James", "victim": "Noah"}, {"k": "dead", "p": "Noah"}], dead=("Noah",))
    assert b["James"] == ap(5 / (5 + 10 * e))
    for n in ("Jason", "Michael", "Olivia", "Ethan", "Martin"):
        assert b[n] == ap((1 + 4 * e) / (5 + 10 * e))


def test_observer_ejection_reveal_by_hand():
    imp = _bel([{"k": "ejected", "p": "Jason", "role": "imposter"}])
    assert imp["Jason"] == ap(1.0) and imp["Olivia"] == ap(1 / 6)
    crew = _bel([{"k": "ejected", "p": "Jason", "role": "crewmate"}], dead=("Jason",))
    assert all(v == ap(2 / 6) for v in crew.values())  # C(6, 2) = 15 pairs, 5 per player


# -- perception from the world: what each crewmate was shown -------------------------------------------------
@pytest.fixture
def w():
    world = make_world(WorldConfig.model_validate({"game": {"roles": "paper"}}))
    world.reset(0)
    park_everyone(world)
    return world


def _kill(w, killer: str, victim: str, witnesses: list[str]) -> None:
    st = w.state
    w.rules.do_kill(st, st.player(killer), st.player(victim), witnesses)


def test_perception_of_a_witnessed_kill_reaches_only_the_witness(w):
    st = w.state
    per = Perception(w, {n: "privileged" for n in ROSTER})
    per.update()
    _kill(w, "James", "Noah", ["Jason"])  # James and Olivia are the imposters (roles: paper)
    st.tick += 100
    per.update()
    assert {"k": "saw_kill", "p": "James", "victim": "Noah"} in per.items("Jason")
    assert not any(it["k"] == "saw_kill" for it in per.items("Steve"))
    jason = infer.beliefs("Jason", ROSTER, [n for n in ROSTER if n not in ("Jason", "Noah")], 2,
                          per.items("Jason"), CFG)[0]
    assert jason["James"] > 0.99


def test_perception_keeps_who_stood_where_the_victim_lay(w):
    """The paper's radar shows the victim lying where it fell; once the death is known (here: a meeting
    announces it), who stood within reach of that spot at a step end is a death item for every crewmate.
    (Privileged sight, the default, shows the body itself to whoever has it in line of sight: the next
    test.)"""
    w.config.observation.privileged = "radar"
    st = w.state
    per = Perception(w, {n: "privileged" for n in ROSTER})
    place(w, "Martin", 80.0, 70.0)
    place(w, "Olivia", 81.5, 70.0)  # an imposter, within reach
    per.update()
    _kill(w, "Olivia", "Martin", [])
    st.tick += 100
    place(w, "Olivia", 82.0, 70.0)  # still by the body at the next step end
    per.update()
    assert not any(it["k"] == "death" for it in per.items("Steve"))  # the death is not known yet
    w.rules.do_report(st, st.player("Ethan"), st.bodies[0])  # Ethan reports: a meeting announces it
    per.update()
    death = next(it for it in per.items("Steve") if it["k"] == "death")
    # <= 3 blocks at the first step end
    assert death["victim"] == "Martin" and death["bins"]["Olivia"][0] == 0
    steve = infer.beliefs("Steve", ROSTER, [n for n in ROSTER if n not in ("Steve", "Martin")], 2,
                          per.items("Steve"), CFG)[0]
    assert max(steve, key=steve.get) == "Olivia"


def test_privileged_sight_sees_the_body_all_round_and_who_stood_by_it(w):
    """Privileged sight (the default): a crewmate with the body in line of sight, in any direction, knows the
    death at once, and who stood within reach of it at that step end is a death item; one without it does
    not."""
    st = w.state
    per = Perception(w, {n: "privileged" for n in ROSTER})
    place(w, "Steve", 84.0, 76.0, yaw_deg=0)  # looking away from where Martin dies: behind it, in sight
    place(w, "Martin", 80.0, 76.0)
    place(w, "Olivia", 81.0, 76.5)
    place(w, "Noah", 120.5, 60.5)  # in Shields: no line of sight
    per.update()
    _kill(w, "Olivia", "Martin", [])
    st.tick += 100
    w.step({})
    per.update()
    death = next(it for it in per.items("Steve") if it["k"] == "death")
    assert death["victim"] == "Martin" and death["bins"]["Olivia"][-1] == 0
    assert not any(it["k"] in ("death", "dead") for it in per.items("Noah"))


def test_ego_perception_does_not_see_a_player_out_of_view(w):
    st = w.state
    per = Perception(w, {n: "ego" for n in ROSTER})
    place(w, "Steve", 84.0, 76.0, yaw_deg=0)  # looking away from where Martin dies
    place(w, "Martin", 80.0, 76.0)
    place(w, "Olivia", 81.0, 76.5)
    per.update()
    _kill(w, "Olivia", "Martin", [])
    st.tick += 100
    per.update()
    w.rules.do_report(st, st.player("Ethan"), st.bodies[0])
    per.update()
    # Steve never saw Martin fall nor the body: the death is known, where it happened is not
    assert {"k": "dead", "p": "Martin"} in per.items("Steve")
    assert not any(it["k"] == "death" for it in per.items("Steve"))


# -- probe answers -------------------------------------------------------------------------------------------
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
    assert parse_probe('{"beliefs": {"A": 0.1, "B": 0.7, "C": 0.2, "D": '
                       '0.3}}', cands, 2)["top2"] == ["B", "D"]


# -- probes leave the match unchanged ------------------------------------------------------------------------
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
    assert (
        marker not in (d_on / F.CALLS_FILE).read_text() and marker not in (d_on / F.MEMORY_FILE).read_text()
    )
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
    """The scripted expert for play; scores a VOTE read-out as minus the name's length (Ethan, James, ...
    first)."""

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


# -- the observer's fit and re-scoring from recorded evidence ------------------------------------------------
@pytest.fixture(scope="module")
def aria_run(tmp_path_factory) -> Path:
    """A run folder of six scripted ARIA matches (the ideal observer writes its evidence at every meeting),
    with the paper's radar for privileged state: positions near every death, so that their ablation shows in
    six matches (privileged sight gives them only where a crewmate had the spot in sight)."""
    from mau.cli import main

    run = tmp_path_factory.mktemp("fitrun")
    for seed in range(1, 7):
        assert (
            main(
                [
                    "play", "--config", "configs/play/aria_scripted.yaml", "--seed", str(seed), "--out",
                    str(run / F.MATCHES_DIR / f"m{seed}"), "--set", "seats.crewmate.aria.frames=false",
                    "--set", "seats.imposter.aria.frames=false", "--set",
                    "world.observation.privileged=radar",
                ]
            )
            == 0
        )
    return run


def test_rescoring_the_recorded_evidence_reproduces_the_observers_beliefs(aria_run):
    """The evidence in probes.jsonl is all the observer used: the vectorised fit code, given the same
    parameters, recomputes every recorded belief."""
    from mau.eval.rescore import rescore
    from mau.infer.model import Params
    from mau.matchdir import finished_matches, read_header

    checked = 0
    for folder in finished_matches(aria_run):
        recs = B.read_probes(folder)
        again = rescore(recs, read_header(folder)[F.ROLES], Params())
        for a, b in zip(recs, again):
            if a[F.PROBE_SOURCE] == "ideal":
                checked += 1
                assert b[F.PROBE_BELIEFS] == pytest.approx(a[F.PROBE_BELIEFS], abs=2e-6)
    assert checked > 20


def test_beliefs_fit_writes_the_likelihoods_and_params_rescore_a_run(aria_run, tmp_path, capsys):
    from mau.cli import main

    assert main(["beliefs", str(aria_run), "--fit", "--out", str(tmp_path / "fit")]) == 0
    doc = json.loads((tmp_path / "fit" / F.OBSERVER_FIT).read_text())
    assert doc["matches"] == 6 and doc["probes"] > 20
    assert doc["loglik_per_probe"] >= doc["start_loglik_per_probe"]  # the fit can only improve on its start
    assert set(doc["params"]) == set(ObserverConfig.model_fields)
    assert "observer fit:" in capsys.readouterr().out
    assert main(["beliefs", str(aria_run), "--params", str(tmp_path / "fit"), "--out", str(tmp_path / "rep"),
                 "--resamples", "20"]) == 0
    rep = json.loads((tmp_path / "rep" / F.BELIEFS_JSON).read_text())
    assert rep["observer_params"]["near_0"] == doc["params"]["near_0"]
    assert "re-scored from its recorded evidence" in (tmp_path / "rep" / F.BELIEFS_MD).read_text()
    assert main(["beliefs", str(aria_run), "--fit", "--params", str(tmp_path / "fit")]) == 2
    # a mixture over kinds (observer_fit.json version 2, mau arms-race): one kind is that kind's fit, and
    # the baselines and --ablate read a mixture too
    one = tmp_path / "one.json"
    one.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_MIXTURE_VERSION,
                               "kinds": {"habit": doc["params"]}, "prior": {"habit": 1.0}}))
    assert main(["beliefs", str(aria_run), "--params", str(one), "--out", str(tmp_path / "rep1"),
                 "--resamples", "20"]) == 0
    rep1 = json.loads((tmp_path / "rep1" / F.BELIEFS_JSON).read_text())
    assert rep1["observer_params"]["kinds"]["habit"] == doc["params"]
    cells = lambda r: [(c["row"], c["imposter"], c["metrics"]["auroc_within"]) for c in r["cells"]]  # noqa: E731
    assert cells(rep1) == cells(rep)
    two = tmp_path / "two.json"
    two.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_MIXTURE_VERSION,
                               "kinds": {"habit": doc["params"], "planner_0": {"strong_ii": 3.0}},
                               "prior": {"habit": 0.5, "planner_0": 0.5}}))
    assert main(["beliefs", str(aria_run), "--params", str(two), "--ablate", "speech", "--out",
                 str(tmp_path / "rep2"), "--resamples", "20"]) == 0
    two.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_MIXTURE_VERSION,
                               "kinds": {"habit": doc["params"]}, "prior": {"habit": 0.5}}))
    assert main(["beliefs", str(aria_run), "--params", str(two), "--out", str(tmp_path / "rep3")]) == 2
    assert "sum to 1" in capsys.readouterr().err


def test_beliefs_fit_linear_writes_a_linear_detector_that_rescores_a_run(aria_run, tmp_path, capsys):
    """--fit --linear (issue 43): the linear detector fitted on the truth (observer_fit.json version 3), read
    back by --params and --ablate like the likelihoods; --linear without --fit is refused."""
    from mau.cli import main
    from mau.infer.linear import LINEAR_FEATURES

    assert main(["beliefs", str(aria_run), "--fit", "--linear", "--out", str(tmp_path / "lin")]) == 0
    doc = json.loads((tmp_path / "lin" / F.OBSERVER_FIT).read_text())
    assert doc[F.FORMAT_VERSION] == F.FIT_LINEAR_VERSION and doc["matches"] == 6 and doc["l2"] == 1.0
    assert set(doc["linear"]["weights"]) == set(LINEAR_FEATURES) and doc["loglik_per_candidate"] < 0
    assert "linear fit:" in capsys.readouterr().out
    assert main(["beliefs", str(aria_run), "--params", str(tmp_path / "lin"), "--out", str(tmp_path / "rep"),
                 "--resamples", "20"]) == 0
    rep = json.loads((tmp_path / "rep" / F.BELIEFS_JSON).read_text())
    assert rep["observer_params"]["weights"] == doc["linear"]["weights"]
    ideal = [c for c in rep["cells"] if c["row"] == "ideal observer"]
    assert ideal and ideal[0]["metrics"]["auroc_within"]["value"] > 0.5  # it reads its own training matches
    assert main(["beliefs", str(aria_run), "--params", str(tmp_path / "lin"), "--ablate", "speech", "--out",
                 str(tmp_path / "abl"), "--resamples", "20"]) == 0
    assert main(["beliefs", str(aria_run), "--linear", "--out", str(tmp_path / "x")]) == 2
    assert "--linear: only with --fit" in capsys.readouterr().err
    # --without with --linear: features (or the group own_acts) held at 0, the rest fitted
    assert main(["beliefs", str(aria_run), "--fit", "--linear", "--without", "own_acts,near2", "--out",
                 str(tmp_path / "lin2")]) == 0
    held = json.loads((tmp_path / "lin2" / F.OBSERVER_FIT).read_text())
    assert held["without"][-1] == "near2" and "called" in held["without"]
    assert all(held["linear"]["weights"][n] == 0.0 for n in held["without"])
    assert held["linear"]["weights"]["strong_got"] != 0.0
    assert main(["beliefs", str(aria_run), "--fit", "--linear", "--without", "strong_ci", "--out",
                 str(tmp_path / "x")]) == 2
    assert "not a feature of the linear detector" in capsys.readouterr().err


def test_beliefs_ablate_compares_the_observer_with_and_without_kinds_of_evidence(aria_run, tmp_path):
    """--ablate re-scores the same probes without some kinds of evidence: without evidence the run has (claims
    are off here) nothing changes; without the positions near each death the observer does worse; the
    knows-nothing row stands beside them at 0.5 within each probe."""
    from mau.cli import main

    out = tmp_path / "abl"
    assert main(["beliefs", str(aria_run), "--ablate", "contradicted,conflict", "--out", str(out),
                 "--resamples", "20"]) == 0
    doc = json.loads((out / "ablation.json").read_text())
    same = {d["metric"]: d["diff"] for d in doc["paired"]}
    assert same["auroc_within"] == 0.0 and same["brier"] == 0.0
    assert doc["rows"]["knows_nothing"]["auroc_within"]["value"] == pytest.approx(0.5)
    assert "knows nothing" in (out / "ablation.md").read_text()
    assert main(["beliefs", str(aria_run), "--ablate", "near_0,near_1,near_2", "--out", str(out),
                 "--resamples", "20"]) == 0
    doc = json.loads((out / "ablation.json").read_text())
    assert {d["metric"]: d["diff"] for d in doc["paired"]}["brier_within"] < 0  # positions help
    assert main(["beliefs", str(aria_run), "--ablate", "kill_decay", "--out", str(out)]) != 0


def test_beliefs_fit_without_holds_kinds_of_evidence_at_zero_and_the_ablation_names_them(aria_run, tmp_path):
    """--fit --without speech fits an observer that ignores accusations and votes (their ratios stay 0, the
    others move); --ablate on that fit says which kinds count for nothing in both arms; bad names and groups
    are one-line errors that name the flag."""
    from mau.cli import main
    from mau.infer.model import GROUPS

    fit = tmp_path / "fit"
    assert main(["beliefs", str(aria_run), "--fit", "--without", "speech,near_2", "--out", str(fit)]) == 0
    doc = json.loads((fit / F.OBSERVER_FIT).read_text())
    held = GROUPS["speech"] + ["near_2"]
    assert doc["without"] == held
    assert all(doc["params"][n] == 0.0 for n in held)
    assert doc["params"]["near_0"] != 0.0 and doc["params"]["reported"] != 0.0  # the rest is fitted
    out = tmp_path / "abl"
    assert main(["beliefs", str(aria_run), "--params", str(fit), "--ablate", "positions", "--out", str(out),
                 "--resamples", "20"]) == 0
    abl = json.loads((out / "ablation.json").read_text())
    assert abl["drop"] == GROUPS["positions"]
    assert set(GROUPS["speech"]) <= set(abl["absent_in_both"]) and "near_2" not in abl["absent_in_both"]
    assert "Counting for nothing in both" in (out / "ablation.md").read_text()
    for bad in (["--fit", "--without", "nope"], ["--without", "speech"], ["--ablate", ","],
                ["--fit", "--without", "kill_decay"]):
        assert main(["beliefs", str(aria_run), *bad, "--out", str(tmp_path / "x")]) == 2
