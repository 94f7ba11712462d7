"""The imposter ladder (issue 29; docs/game.md, "The imposter ladder"): each rung's rules on hand-built
scenes, the no-peeking check for every rung, speech without a role tell, and the framer's claims under the
checker."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from mau.env import imposters
from mau.env.runner import play_match
from mau.env.scripted import ScriptedBrain, ScriptedPolicy
from mau.env.sim import SimWorld
from mau.env.speech import POOLS, Act, kinds, realise
from mau.eval.phrasing import NaiveBayes, speakers_of, templates, within_meeting_auroc
from mau.infer.hearsay import STRONG, WEAK, accusations
from mau.schema import SKIP
from tests.helpers import make_world, place

LADDER = ("accusatory", "expert", "mission", "cautious", "quiet", "framer", "adversarial")
NAMES = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin"]


# -- the phrasing both roles share ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(POOLS))
def test_every_paraphrase_reads_back_as_its_act_and_accuses_only_when_it_should(kind):
    act = Act(kind, who="Noah", victim="Steve", room="Admin", dist=2.5, at=90, to="Ethan")
    seen = set()
    for key in range(60):  # every paraphrase in turn (the key picks one)
        text = realise([act], str(key))
        seen.add(text)
        assert kinds(text) == [kind], text
        found = accusations(text, "James", NAMES)
        if kind in ("saw_kill", "near"):
            assert found == {"Noah": STRONG}, text
        elif kind in ("suspect", "vote"):
            assert found == {"Noah": WEAK}, text
        else:
            assert found == {}, text  # alibis, vouches, agreement and stances accuse nobody
    assert len(seen) == len(POOLS[kind])


def _imposter_brain(world: SimWorld, name: str, rung: str, mode: str = "ego") -> ScriptedBrain:
    b = ScriptedBrain(name, world.map, 0, rung)
    b.observe(world.observe(name, mode))
    return b


def _scene():
    """James (imposter) beside Steve in Cafeteria, facing him; Jason in Cafeteria too, behind James."""
    w = make_world(roles="paper")
    w.reset(0)
    far = {"Michael": (120.5, 60.5), "Olivia": (106.5, 94.5), "Noah": (97.5, 39.5), "Ethan": (127.5, 73.5),
           "Martin": (102.5, 35.5)}  # Shields, Security, Weapons-side rooms: out of Cafeteria's sight
    for name, (x, z) in far.items():
        place(w, name, x, z)
    w.state.player("James").kill_cooldown = 0
    place(w, "James", 84.5, 70.5, yaw_deg=90)  # looking along +z, at Steve
    place(w, "Steve", 84.5, 72.5)
    place(w, "Jason", 84.5, 62.5)  # behind James: in line of sight of the spot, out of James's frustum
    return w


def test_quiet_declines_a_kill_a_crewmate_it_perceives_could_see(monkeypatch):
    monkeypatch.setattr(imposters, "RISK_MAX", 1.0)  # the witnesses it perceives only (exposure: below)
    w = _scene()
    # privileged sight: James perceives Jason behind him, who could see the spot: no kill
    assert (
        _imposter_brain(w, "James", "quiet", "privileged").kill(w.observe("James", "privileged"))[0]
        == "DEFER"
    )
    # ego: Jason is out of James's view and James has not seen him lately: it cannot know, and kills
    assert _imposter_brain(w, "James", "quiet", "ego").kill(w.observe("James", "ego"))[0] == "KILL"
    # the habit (accusatory) kills with a crewmate in view: one watcher is fine by it
    w2 = _scene()
    place(w2, "Jason", 84.5, 80.5)  # in front of James: in view
    assert _imposter_brain(w2, "James", "accusatory", "ego").kill(w2.observe("James", "ego"))[0] == "KILL"
    assert _imposter_brain(w2, "James", "quiet", "ego").kill(w2.observe("James", "ego"))[0] == "DEFER"


def test_quiet_remembers_a_player_it_saw_a_moment_ago(monkeypatch):
    monkeypatch.setattr(imposters, "RISK_MAX", 1.0)  # the witnesses it perceives only (exposure: below)
    w = _scene()
    place(w, "Jason", 84.5, 80.5)  # in view now
    b = _imposter_brain(w, "James", "quiet", "ego")
    place(w, "Jason", 84.5, 62.5)  # behind it now: out of view, seen 0 s ago
    w.state.tick += 20
    assert b.kill(w.observe("James", "ego"))[0] == "DEFER"
    w.state.tick += 20 * 30  # half a minute later it may have walked far: no longer a witness
    assert b.kill(w.observe("James", "ego"))[0] == "KILL"


def test_framer_kills_only_where_a_crewmate_stood_and_says_the_truth_of_it(monkeypatch):
    monkeypatch.setattr(imposters, "RISK_MAX", 1.0)  # the witnesses it perceives only (exposure: below)
    w = _scene()
    place(w, "Jason", 120.5, 62.5)  # far and out of sight (Shields)
    b = _imposter_brain(w, "James", "framer", "ego")
    assert b.kill(w.observe("James", "ego"))[0] == "DEFER"  # nobody to frame yet (and not impatient)
    place(w, "Noah", 85.5, 76.5)  # Noah walks past the spot, in James's view
    w.state.tick += 100
    b.observe(w.observe("James", "ego"))
    place(w, "Noah", 96.5, 66.5)  # and away, out of sight
    w.state.tick += 20 * 15
    assert b.kill(w.observe("James", "ego")) == ("KILL", "Steve")
    frame = b.scheme.mind.frames["Steve"]
    assert frame["who"] == "Noah" and frame["dist"] <= 8


def test_careful_rungs_weigh_the_crewmates_they_cannot_see():
    """Exposure: a crewmate never seen may stand anywhere; one seen a moment ago far away cannot be watching.
    The quiet imposter declines while the chance of an unseen watcher is over RISK_MAX."""
    w = _scene()
    place(w, "Jason", 120.5, 62.5)  # Shields
    w.step({})  # a step end: what privileged sight shows now, and the last sightings before it
    b = _imposter_brain(w, "James", "quiet", "privileged")
    mind, spot = b.scheme.mind, (84.5, 72.5)
    obs = w.observe("James", "privileged")
    never = mind.exposure(obs, "Steve", spot)  # the crewmates out of its sight were never seen
    for p in w.state.players:  # seen a second ago, each where it is: far off, behind walls
        mind.last.setdefault(p.name, imposters.Sighting(obs["tick"] - 20, p.x, p.z))
    seen_far = mind.exposure(obs, "Steve", spot)
    assert 0 <= seen_far < never <= 1
    vis, cells = imposters.visible_cells(w.map, spot, 36.0)
    assert 0 < vis.mean() < 0.5 and len(vis) == len(cells)
    assert b.kill(obs)[0] == ("KILL" if never <= imposters.RISK_MAX else "DEFER")


# -- no peeking ----------------------------------------------------------------------------------------------
def _perturb_hidden(world: SimWorld, imposter: str, mode: str, rng: random.Random) -> SimWorld:
    """A copy of ``world`` in which every crewmate outside the imposter's perception has moved elsewhere
    outside it, turned, and had its missions changed; the imposter's observation must be the same in both."""
    other = SimWorld(world.config)
    other.restore(world.snapshot())
    obs = world.observe(imposter, mode)
    seen = {p["name"] for p in obs["players_in_view"]} | {p["name"] for p in obs.get("players") or []
                                                          if p["seen_s_ago"] == 0}
    spots = [
        (78.5, 65.5), (96.5, 86.5), (120.5, 60.5), (106.5, 94.5), (97.5, 39.5), (127.5, 73.5), (81.5, 55.5),
    ]
    me = other.state.player(imposter)
    for p in other.state.players:
        if p.name == imposter or p.is_imposter or p.name in seen or not p.active:
            continue
        for x, z in rng.sample(spots, len(spots)):
            p.x, p.z, p.yaw = x + 0.5, z, rng.uniform(0, 6.28)
            if not (other.vision.sees(me, p.x, p.z) or other.privileged_sees(me, p)):
                break
        p.missions_done = [rng.random() < 0.5 for _ in p.missions_done]
    return other


_ACTING: list[SimWorld] = []  # the world a decision is taken in (only a planted peek reads it)


@pytest.mark.parametrize("rung,against", [(r, None) for r in LADDER] + [
    # every detector the repository keeps (configs/observer/: issue 29's, the habits', the race's mixtures)
    ("adversarial", str(p)) for p in sorted(Path("configs/observer").glob("*.json"))])
def test_no_rung_reads_what_lies_outside_its_perception(rung, against):
    """At every roam step of a match, each living imposter's decision from its observation of the real world
    and of a world whose crewmates outside its perception were moved, turned and given other missions: the
    same
    observation, and the same action and internal state (its brain is a function of what it perceived)."""
    mode = "privileged"
    w = make_world()
    rng = random.Random(7)
    seed = 11
    w.reset(seed)
    from mau.infer.fit import read_params

    plans = read_params(against) if against else None  # every detector the adversary may plan against
    pols = {
        p.name: ScriptedPolicy(p.name, w.map, seed, rung if p.is_imposter else "expert",
                               plans_against=plans if p.is_imposter else None)
        for p in w.state.players
    }
    checked = 0
    for _ in range(60):
        st = w.state
        if st.phase == "ended":
            break
        actions = {}
        for p in st.players:
            if not p.active:
                continue
            pols[p.name].perceive(p.witnessed)
            obs = w.observe(p.name, mode)
            if p.is_imposter and st.phase == "roam":
                other = _perturb_hidden(w, p.name, mode, rng)
                assert other.observe(p.name, mode) == obs  # nothing outside its perception shows
                twin = copy.deepcopy(pols[p.name])
                _ACTING[:] = [w]
                a = pols[p.name].act(obs)
                _ACTING[:] = [other]
                b = twin.act(other.observe(p.name, mode))
                assert a == b and _state(pols[p.name]) == _state(twin), (rung, st.step, p.name)
                actions[p.name] = a
                checked += 1
            else:
                actions[p.name] = pols[p.name].act(obs)
        w.step(actions)
    assert checked >= 30


def _canon(x):
    """A comparable form of nested state (objects by their fields, sets sorted)."""
    if isinstance(x, dict):
        return {str(k): _canon(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_canon(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(_canon(v) for v in x)
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return _canon({k: v for k, v in vars(x).items() if k not in ("game_map", "map", "brain", "rng")})
    return x


def _state(brain: ScriptedBrain) -> str:
    """What the imposter's strategy remembers (its mind; the adversary's model of the crewmates too)."""
    s = brain.scheme
    return json.dumps(_canon((s.mind, getattr(s, "lens", None))) if s else None, default=repr)


def test_the_no_peeking_check_catches_a_peek(monkeypatch):
    """A planted peek (the quiet imposter's kill decision also reads the true positions of crewmates it cannot
    perceive, as an imposter forking the world's snapshot would) fails the check above."""
    import mau.env.imposters as imp

    honest = imp.Strategy.kill

    def peeking(self, obs):
        decision, target = honest(self, obs)
        hidden = sum(p.x + p.z for p in _ACTING[0].state.players if p.active and not p.is_imposter)
        return ("DEFER", target) if int(hidden) % 2 else (decision, target)  # waits when the world says so

    monkeypatch.setattr(imp.Strategy, "kill", peeking)
    with pytest.raises(AssertionError, match="quiet"):
        test_no_rung_reads_what_lies_outside_its_perception("quiet", None)


# -- speech without a role tell ------------------------------------------------------------------------------
def _grid(seeds: range, mode: str = "ego") -> list:
    out = []
    for rung in LADDER:
        for seed in seeds:
            w = make_world()
            w.reset(seed)
            pols = {p.name: ScriptedPolicy(p.name, w.map, seed, rung if p.is_imposter else "expert")
                    for p in w.state.players}
            play_match(w, pols, seed, mode)
            out += speakers_of(w.state.events, {p.name: p.role for p in w.state.players}, f"{rung}-{seed}")
    return out


def test_phrasing_alone_does_not_tell_the_role_on_a_held_out_grid():
    """A naive Bayes over masked sentence templates, fitted on one grid of the ladder (every rung against
    expert crewmates, ego state) and scored within each meeting of a held-out grid: at most 0.60 (issue 29);
    the same classifier finds a planted tell (imposters' alibis in words of their own) at once."""
    train, test = _grid(range(500, 512)), _grid(range(600, 612))
    nb = NaiveBayes(train)
    value, n = within_meeting_auroc([(s, nb.score(s)) for s in test])
    assert n >= 100 and value is not None and value <= 0.60, (value, n)
    for s in train + test:  # the planted tell: imposters end every sentence with a word of their own
        if s.imposter:
            s.templates = Counter({t.rstrip(".") + ", honestly.": k for t, k in s.templates.items()})
    nb = NaiveBayes(train)
    value, _ = within_meeting_auroc([(s, nb.score(s)) for s in test])
    assert value > 0.9


def test_templates_mask_names_places_and_numbers():
    assert templates("I saw Noah near where Steve died (2.5 blocks away at 90 s). Vote Noah.", NAMES) == \
        ["i saw p near where p died (n blocks away at n s).", "vote p."]
    said = "That is not true, I was in corridor Cafeteria-Weapons."
    assert templates(said, NAMES) == ["that is not true, i was in r."]


@pytest.mark.parametrize("rung", ["framer", "quiet"])
def test_the_upper_rungs_claims_are_never_false_under_the_checker(rung):
    """With structured claims on, the framer's and the quiet imposter's claims (alibis, sightings) are all
    TRUE, UNSUPPORTED or UNVERIFIABLE by the role-blind checker: they never lie, they leave out
    (docs/claims.md); a habit imposter's are not (a positive control: it fabricates alibis)."""
    from mau.claims.check import check_match
    from mau.env.config import WorldConfig

    def verdicts(imposter_rung: str) -> list[str]:
        out = []
        for seed in range(4):
            w = SimWorld(WorldConfig.model_validate({"claims": {"mode": "structured"}}))
            w.reset(seed)
            imps = {p.name for p in w.state.players if p.is_imposter}
            pols = {p.name: ScriptedPolicy(p.name, w.map, seed, imposter_rung if p.is_imposter else "expert",
                                           claims=w.config.claims) for p in w.state.players}
            play_match(w, pols, seed, "ego")
            out += [r["verdict"] for r in check_match(w.state.events, w.sights.lines) if r["speaker"] in imps]
        return out

    mine = verdicts(rung)
    assert len(mine) >= 20 and "FALSE" not in mine, mine
    assert "FALSE" in verdicts("cautious")


def test_mau_play_gives_each_seat_its_scripted_model(tmp_path):
    """configs/play/scripted.yaml: the imposters' rung and the crewmates' temperament come from the seats."""
    from mau.config import load_config
    from mau.env.rules import imposters_of
    from mau.runner import PlayConfig, scripted_policies

    framer = {"seats": {"imposter": {"model": {"model": "scripted-framer"}}}}
    cfg = load_config(PlayConfig, "configs/play/scripted.yaml", framer)
    pols = scripted_policies(cfg, make_world().map)
    imps = set(imposters_of(cfg.world.game, cfg.seed))
    assert {n: p.rung for n, p in pols.items() if n in imps} == dict.fromkeys(imps, "framer")
    assert {p.rung for n, p in pols.items() if n not in imps} == {"habit"}
    from mau.infer.fit import read_params

    habits = "configs/observer/habits.json"  # a seat's likelihood and plans_against reach its policy
    cfg = load_config(PlayConfig, "configs/play/scripted.yaml", {"seats": {"imposter": {"model": {
        "model": "scripted-adversarial", "plans_against": habits, "likelihood": habits}}}})
    pols = scripted_policies(cfg, make_world().map)
    assert all(pols[n].plans_against == read_params(habits) == pols[n].params for n in imps)


def test_a_scripted_model_reasons_with_the_likelihood_it_is_given(tmp_path):
    from mau import schema as F
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelConfig
    from mau.infer.model import Params

    with pytest.raises(ValueError, match="no such file; give the observer_fit.json"):
        ModelConfig(backend="scripted", likelihood=str(tmp_path / "nope.json"))
    fit = tmp_path / F.OBSERVER_FIT
    fit.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_VERSION,
                               "params": {**Params().to_dict(), "near_0": 9.0}}))
    backend = make_backend(ModelConfig(backend="scripted", likelihood=str(tmp_path)))
    assert backend._params.near_0 == 9.0
    fit.write_text("{}")
    with pytest.raises(ValueError, match="not a mau.observer_fit file of version 1 or 2 or 3 or 4"):
        make_backend(ModelConfig(backend="scripted", likelihood=str(fit)))


def _fit_file(path, **planted) -> str:
    from mau import schema as F
    from mau.infer.model import Params

    path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_VERSION,
                                "params": {**Params().to_dict(), **planted}}))
    return str(path)


def test_the_adversary_plans_against_the_detector_it_is_given(tmp_path):
    """plans_against (issue 43): the adversarial imposter weighs its choices with that file's weights, its
    own reasoning keeps its own. A planted weight flips a decision: where a report reads as innocent
    (reported < 0) it reports a body; where the detector it plans against reads a report as guilt, it does
    not."""
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelConfig
    from mau.infer.fit import read_params
    from mau.infer.model import Params

    def reports(against: str | None) -> bool:
        w = _scene()
        b = ScriptedBrain("James", w.map, 0, "adversarial",
                          plans_against=read_params(against) if against else None)
        obs = w.observe("James", "ego")
        b.observe(obs)
        assert b.params == Params()  # its own model is the shipped one whatever it plans against
        return b.report(obs, "Steve")

    innocent = _fit_file(tmp_path / "innocent.json", reported=-6.0)
    guilty = _fit_file(tmp_path / "guilty.json", reported=6.0)
    assert reports(innocent) is True and reports(guilty) is False
    assert reports(None) is (Params().reported < 0)  # by default: the shipped teacher's weights
    backend = make_backend(ModelConfig(backend="scripted", model="scripted-adversarial",
                                       plans_against=guilty))
    assert backend._against.reported == 6.0 and backend._params is None
    with pytest.raises(ValueError, match="no such file; give the observer_fit.json"):
        ModelConfig(backend="scripted", plans_against=str(tmp_path / "nope.json"))


def test_the_adversary_plans_against_a_linear_detector_with_its_weights(tmp_path):
    """plans_against a linear detector (observer_fit.json version 3): a planted weight flips the report."""
    from mau import schema as F
    from mau.infer.fit import read_params

    def reports(weight: float) -> bool:
        path = tmp_path / f"lin{weight}.json"
        path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_LINEAR_VERSION,
                                    "linear": {"weights": {"reported": weight}, "bias": -1.0}}))
        w = _scene()
        b = ScriptedBrain("James", w.map, 0, "adversarial", plans_against=read_params(str(path)))
        obs = w.observe("James", "ego")
        b.observe(obs)
        return b.report(obs, "Steve")

    assert reports(-6.0) is True and reports(6.0) is False


def test_the_adversary_plans_against_a_pool_with_its_weights(tmp_path):
    """plans_against a pool (observer_fit.json version 4): the member weighted most decides the report."""
    from mau import schema as F
    from mau.infer.fit import read_params

    for name, weight in (("likes", -6.0), ("hates", 6.0)):
        (tmp_path / f"{name}.json").write_text(json.dumps({
            F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_LINEAR_VERSION,
            "linear": {"weights": {"reported": weight}, "bias": -1.0}}))

    def reports(w_likes: float) -> bool:
        path = tmp_path / f"pool{w_likes}.json"
        path.write_text(json.dumps({F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_POOL_VERSION, "pool": {
            "members": {"likes": "likes.json", "hates": "hates.json"},
            "weights": {"likes": w_likes, "hates": round(1 - w_likes, 6)}}}))
        w = _scene()
        b = ScriptedBrain("James", w.map, 0, "adversarial", plans_against=read_params(str(path)))
        obs = w.observe("James", "ego")
        b.observe(obs)
        return b.report(obs, "Steve")

    assert reports(0.9) is True and reports(0.1) is False


def test_the_adversary_weighs_its_own_skip_where_the_detector_does(tmp_path):
    """A vote withheld is evidence to a detector that weighs ``skipped`` (issue 43): the adversary planning
    against one that reads a skip as innocence skips, against one that reads it as guilt it votes."""
    from mau.infer.fit import read_params

    def vote(skipped: float) -> str:
        w = _scene()
        w.rules._start_meeting(w.state, w.state.player("Steve"), "emergency", None)
        against = read_params(_fit_file(tmp_path / f"skip{skipped}.json", skipped=skipped))
        b = ScriptedBrain("James", w.map, 0, "adversarial", plans_against=against)
        obs = w.observe("James", "ego")
        b.observe(obs)
        return b.vote(obs)

    assert vote(-6.0) == SKIP
    assert vote(6.0) != SKIP


def test_kill_reach_names_only_the_crewmates_the_imposter_perceives():
    """In ego state a crewmate behind the imposter within kill reach is not in its observation's (and its
    prompt's) ``in_kill_reach``; one in view is; all-round privileged sight names both (issue 43)."""
    w = _scene()
    place(w, "Jason", 84.5, 68.5)  # 2 blocks behind James: in reach, out of view
    ego = w.observe("James", "ego")
    assert "Jason" not in {p["name"] for p in ego["players_in_view"]}
    assert ego["in_kill_reach"] == ["Steve"]
    assert sorted(w.observe("James", "privileged")["in_kill_reach"]) == ["Jason", "Steve"]


def test_a_kill_seen_names_its_killer_as_suspect_only_while_the_killer_plays():
    """The crewmate's surveillance answer names the killer of a kill it saw only while the killer is a living
    candidate; once the killer is dead or ejected it says the kill and names no suspect (before: 2 of about
    990,000 crewmate calls of the pair pool's evals named a killer gone since, which the harness refuses)."""
    from mau.schema import NONE

    w = make_world(roles="paper")  # James and Olivia are the imposters
    w.reset(0)
    answers = []
    for gone in (False, True):
        b = ScriptedBrain("Steve", w.map, 0, "expert")
        obs = w.observe("Steve", "ego")
        b.observe(obs)
        b.ev.kills_seen.append({"killer": "James", "victim": "Noah", "room": "Admin", "tick": 0})
        if gone:
            obs = {**obs, "ejections": [*obs["ejections"], {"name": "James", "role": "imposter"}]}
        answers.append(b.surveillance(obs))
    assert answers[0]["suspect"] == "James"
    assert answers[1]["suspect"] == NONE and answers[1]["detail"] == "I saw James kill Noah in Admin."
