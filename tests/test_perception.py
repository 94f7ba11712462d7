"""What a crewmate may know (issue 9, part 1): kills are perceived, never told; no list reveals an unseen
death.

The audit reads prompts as a model would. Three checks over real ARIA matches: no engine-given statement of a
kill's author by default (and the witness_text ablation does state them: the audit sees it); the "vanished
player" rule (a player dropped from the position list is the victim, the player listed nearest to it one call
earlier the killer) does no better than chance now, and names the killer almost always with the old list
(a positive control: the same rule, the same seeds, the old observation).
"""

from __future__ import annotations

import json

import pytest

from mau import schema as F
from mau.cli import main
from mau.datasets.audit import Auditor, audit_runs
from mau.datasets.sources import load_match
from tests.helpers import make_world, park_everyone, place
from tests.match_factory import MatchSpec

ARIA = "configs/play/aria_scripted.yaml"
SEEDS = range(1, 9)


def _play(root, seeds, *extra: str) -> None:
    for s in seeds:
        out = root / F.MATCHES_DIR / f"m{s}"
        assert main(["play", "--config", ARIA, "--seed", str(s), "--set", "seats.crewmate.aria.frames=false",
                     "--set", "seats.imposter.aria.frames=false", *extra, "--out", str(out)]) == 0


@pytest.mark.parametrize("text,tick,leaks", [
    ("You saw James kill Noah in Admin at 150 s.", 300, True),
    ("Notes:\n- I saw James kill Noah in Admin.", 300, True), ("James killed Noah in Admin.", 300, True),
    ("Noah was killed by James.", 300, True),
    ("You saw James kill Noah in Admin at 150 s.", 100, False),  # before that kill: not about it
    ('Meeting: Steve reported.\nSteve: "I saw James kill Noah."\nVote now.', 300, False),  # a player's speech
    ("Known dead: Noah.", 300, False),
    ("Jameson killed time.", 300, False),  # the name must be a whole word
])
def test_audit_fails_on_an_engine_given_kill_author(tmp_path, text, tick, leaks):
    m = MatchSpec("kills", outcome="CREWMATE WIN")
    m.event(200, F.EV_KILL, killer="James", victim="Noah", x=1.0, z=2.0, room="Admin", witnesses=["Steve"])
    m.call("Steve", "plan", tick, text=text)
    info = load_match(m.write(tmp_path), str(tmp_path), lambda p: pytest.fail(str(p)))
    found = Auditor(info).find(m.calls[-1])
    assert (found is not None) == leaks, found
    if leaks:
        assert found.kill == ("James", "Noah")


def _kill_out_of_sight(privileged: str):
    """A world in which a crewmate (the watcher, in Shields) had the victim in sight, then lost it, and the
    victim was killed out of its sight; returns (world, victim, watcher, the watcher's list before the
    kill)."""
    w = make_world()
    w.config.observation.privileged = privileged
    w.reset(0)
    park_everyone(w)
    st = w.state
    imp = next(p for p in st.players if p.is_imposter)
    crew = [p for p in st.players if not p.is_imposter]
    victim, watcher = crew[0], crew[1]
    place(w, watcher.name, 120.5, 60.5, yaw_deg=0)  # in Shields
    place(w, victim.name, 118.5, 62.5)  # beside it: in sight
    place(w, imp.name, 84.5, 70.5)
    w.step({})
    seen = {p["name"]: p for p in w.observe(watcher.name, "privileged")["players"]}
    assert seen[victim.name]["seen_s_ago"] == 0  # in sight now (the radar: in range)
    place(w, victim.name, 84.5, 72.5)  # walks off to Cafeteria, out of the watcher's sight
    w.step({})
    before = {p["name"]: p for p in w.observe(watcher.name, "privileged")["players"]}
    imp.kill_cooldown = 0
    w.rules.do_kill(st, imp, victim, [])
    w.step({})
    w.step({})
    return w, victim, watcher, before


def test_privileged_radar_keeps_the_papers_still_dot():
    """The paper's radar (kept for replication): a player killed out of sight stays listed, still, where it
    fell, observed now like any player in range: the tell docs/game.md warns of."""
    w, victim, watcher, before = _kill_out_of_sight("radar")
    listed = {p["name"]: p for p in w.observe(watcher.name, "privileged")["players"]}
    assert listed[victim.name]["position"] == before[victim.name]["position"] == [84.5, 72.5]
    assert listed[victim.name]["seen_s_ago"] == 0


def test_privileged_sight_neither_a_still_dot_nor_a_vanished_player():
    """Privileged sight: a player killed out of my sight is listed at my last sighting of it alive and ages
    like any player out of sight (no still dot where it fell), stays listed until the death is public or I
    see the body (it does not vanish), and nothing in the observation tells of the kill."""
    w, victim, watcher, before = _kill_out_of_sight("sight")
    st = w.state
    last_seen = before[victim.name]
    assert last_seen["position"] == [118.5, 62.5] and last_seen["seen_s_ago"] > 0  # lost from sight, alive
    obs = w.observe(watcher.name, "privileged")
    listed = {p["name"]: p for p in obs["players"]}
    assert victim.name in listed  # not vanished
    assert listed[victim.name]["position"] == last_seen["position"]  # not where it fell (84.5, 72.5)
    assert listed[victim.name]["seen_s_ago"] == last_seen["seen_s_ago"] + 10  # ageing: two steps later
    assert victim.name not in obs["known_dead"] and obs["witnessed_kills"] == []
    assert "killer" not in " ".join(json.dumps(v) for v in obs.values())
    # a living player that walked out of sight the same way is listed the same way
    other = next(p for p in st.players if p.active and not p.is_imposter and p is not watcher)
    assert {k: listed[other.name][k] for k in ("in_view",)} == {"in_view": False}
    # seeing the body (in line of sight, behind me: privileged sight turns the head) makes the death known
    place(w, watcher.name, 84.5, 76.5, yaw_deg=90)
    w.step({})
    obs = w.observe(watcher.name, "privileged")
    assert victim.name in obs["known_dead"] and victim.name not in {p["name"] for p in obs["players"]}
    assert victim.name in {b["victim"] for b in obs["bodies_in_view"]}
    w.rules.do_button(st, watcher)  # the meeting announces it too
    assert victim.name in w.observe(watcher.name, "privileged")["known_dead"]


def test_privileged_sight_never_updates_a_dead_player_over_real_matches():
    """Over played matches (privileged sight, scripted players): after every kill, each crewmate that had not
    perceived it lists the victim with an age at least the time since the kill (never a fresh position of the
    dead), and keeps listing it until the death is public or its body was seen."""
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy

    checked = 0
    for seed in range(6):
        w = make_world()
        deaths: dict[str, int] = {}

        def on_step(st) -> None:
            nonlocal checked
            for e in st.events:
                if e[F.TYPE] == F.EV_KILL:
                    deaths.setdefault(e["victim"], e[F.TICK])
            for me in st.players:
                if not me.active:
                    continue
                obs = w.observe(me.name, "privileged")
                listed = {p["name"]: p for p in obs["players"]}
                for v, tick in deaths.items():
                    if v in obs["known_dead"]:
                        assert v not in listed
                        continue
                    assert v in listed, (seed, me.name, v)  # it does not vanish
                    assert listed[v]["seen_s_ago"] >= (st.tick - tick) / 20 - 1e-9, (seed, me.name, v)
                    checked += 1

        pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
        play_match(w, pols, seed, "privileged", on_step=on_step)
    assert checked > 50


def test_witness_text_is_an_explicit_ablation():
    for flag, expect in ((False, []), (True, ["James"])):
        w = make_world(roles="paper")
        w.config.observation.witness_text = flag
        w.reset(0)
        park_everyone(w)
        st = w.state
        place(w, "James", 84.5, 70.5, yaw_deg=90)
        place(w, "Steve", 84.5, 72.5)
        place(w, "Jason", 84.5, 80.5, yaw_deg=-90)
        st.player("James").kill_cooldown = 0
        w.rules.do_kill(st, st.player("James"), st.player("Steve"), ["Jason"])
        assert [k["killer"] for k in w.observe("Jason", "privileged")["witnessed_kills"]] == expect
        # ground truth keeps it
        assert st.events[-1][F.TYPE] == F.EV_KILL and st.events[-1]["witnesses"] == ["Jason"]


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    root = tmp_path_factory.mktemp("perception")
    _play(root / "now", SEEDS)
    _play(root / "witness", SEEDS, "--set", "world.observation.witness_text=true")
    return root


def test_no_crewmate_input_names_a_kills_author_by_default(played):
    now = audit_runs([str(played / "now")])
    assert now["matches"] == len(SEEDS) and now["privileged"]["crewmate_calls"] > 1000
    assert now["leaks"] == 0, now["first_leaks"]
    witness = audit_runs([str(played / "witness")])
    assert witness["leaks"] > 0  # the ablation states kill authors, and the audit catches it


def test_the_vanished_player_rule_no_longer_beats_chance(played, tmp_path, monkeypatch):
    now = audit_runs([str(played / "now")])["privileged"]
    assert now["vanished_events"] == 0 or now["rule_accuracy"] <= now["chance"] + 0.1, now
    # Positive control: the old observation (only active players in range, a killed one silently dropped).
    import mau.env.observation as O

    def old_list(world, me, in_view):
        r = world.cfg.privileged_radius
        return [
            {
                "name": p.name, "color": p.color, "position": [round(p.x, 2), round(p.z, 2)], "distance": 0.0,
                "room": world.map.place_name(p.x, p.z), "in_view": p.name in in_view, "seen_s_ago": 0,
            }
            for p in world.state.players
            if p is not me and p.active and abs(p.x - me.x) + abs(p.z - me.z) <= r
        ]

    monkeypatch.setattr(O, "_privileged_players", old_list)
    _play(tmp_path / "old", SEEDS)
    old = audit_runs([str(tmp_path / "old")])["privileged"]
    assert old["vanished_events"] >= 10 and old["rule_accuracy"] >= old["chance"] + 0.3, old


def _eager_last_known(world, known: dict[str, dict[str, list]]) -> None:
    """The eager reference of privileged persistent positions: after every step, every active viewer's
    observation of each other player not publicly dead nor ejected (the rule ``SimWorld.last_known`` reads
    lazily from the step log)."""
    st = world.state
    for v in st.players:
        if not v.active:
            continue
        for p in st.players:
            if p is not v and not p.ejected and p.name not in st.public_dead and world.privileged_sees(v, p):
                known.setdefault(v.name, {})[p.name] = [round(p.x, 2), round(p.z, 2), st.tick]


@pytest.mark.parametrize("privileged", ["sight", "radar"])
def test_lazy_last_known_equals_the_eager_rule_across_a_snapshot(privileged):
    """``last_known`` is computed when a privileged observation asks (issue 32: most agents never ask): over
    scripted matches where each viewer asks only now and then, and across a snapshot restored mid-match, it
    equals the eager rule computed after every step. Reading ahead of the cursor makes this fail."""
    from mau.env.scripted import ScriptedPolicy
    from mau.env.sim import SimWorld

    compared = 0
    for seed in (2, 5):
        w = SimWorld()
        w.config.observation.privileged = privileged
        w.reset(seed)
        pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
        eager: dict[str, dict[str, list]] = {}
        _eager_last_known(w, eager)
        snap, snap_eager = None, None
        while not w.done:
            st = w.state
            for k, p in enumerate(st.players):
                if p.active and (st.step + k) % 3 == 0:  # each viewer asks every third step only
                    assert w.last_known(p) == eager.get(p.name, {}), (seed, st.step, p.name)
                    compared += 1
            if st.step == 12 and snap is None:
                snap, snap_eager = w.snapshot(), {k: dict(v) for k, v in eager.items()}
            acts = {p.name: pols[p.name].act(w.observe(p.name)) for p in st.players if p.active}
            w.step(acts)
            _eager_last_known(w, eager)
        w.restore(snap)  # back to step 12: the cursors and the log come back with the state
        eager = snap_eager
        for p in w.state.players:
            if p.active:
                assert w.last_known(p) == eager.get(p.name, {}), (seed, "restored", p.name)
                compared += 1
    assert compared > 200
