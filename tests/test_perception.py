"""What a crewmate may know (issue 9, part 1): kills are perceived, never told; no list reveals an unseen death.

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
    ("Notes:\n- I saw James kill Noah in Admin.", 300, True),
    ("James killed Noah in Admin.", 300, True),
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


def test_a_dead_player_stays_listed_where_it_fell_until_a_meeting():
    w = make_world()
    w.reset(0)
    park_everyone(w)
    st = w.state
    imp = next(p for p in st.players if p.is_imposter)
    crew = [p for p in st.players if not p.is_imposter]
    victim, watcher = crew[0], crew[1]
    place(w, imp.name, 84.5, 70.5)
    place(w, victim.name, 84.5, 72.5)
    place(w, watcher.name, 120.5, 60.5, yaw_deg=0)  # in Shields, far from Cafeteria's body
    w.step({})
    before = {p["name"]: p for p in w.observe(watcher.name, "privileged")["players"]}
    imp.kill_cooldown = 0
    w.rules.do_kill(st, imp, victim, [])
    w.step({})
    obs = w.observe(watcher.name, "privileged")
    listed = {p["name"]: p for p in obs["players"]}
    assert victim.name in listed and listed[victim.name]["position"] == before[victim.name]["position"]
    assert listed[victim.name]["seen_s_ago"] == 0  # like any player in range
    assert victim.name not in obs["known_dead"] and obs["witnessed_kills"] == []
    text = " ".join(json.dumps(v) for v in obs.values())
    assert "killer" not in text
    w.rules.do_button(st, watcher)  # the meeting announces the death: now it leaves the list
    obs = w.observe(watcher.name, "privileged")
    assert victim.name not in {p["name"] for p in obs["players"]} and victim.name in obs["known_dead"]


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
        assert st.events[-1][F.TYPE] == F.EV_KILL and st.events[-1]["witnesses"] == ["Jason"]  # ground truth keeps it


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
        return [{"name": p.name, "color": p.color, "position": [round(p.x, 2), round(p.z, 2)], "distance": 0.0,
                 "room": world.map.place_name(p.x, p.z), "in_view": p.name in in_view, "seen_s_ago": 0}
                for p in world.state.players if p is not me and p.active and abs(p.x - me.x) + abs(p.z - me.z) <= r]

    monkeypatch.setattr(O, "_privileged_players", old_list)
    _play(tmp_path / "old", SEEDS)
    old = audit_runs([str(tmp_path / "old")])["privileged"]
    assert old["vanished_events"] >= 10 and old["rule_accuracy"] >= old["chance"] + 0.3, old
