"""Each rule of the game by a constructed scenario (SPEC section 1)."""

from __future__ import annotations

import pytest

from mau.env.actions import Action
from mau.env.state import CREWMATE_WIN, DISCUSSION, ENDED, IMPOSTER_WIN, MISSION_WIN, ROAM, TIMEOUT, VOTING
from tests.helpers import events_of, make_world, park_everyone, place


def test_paper_roles_and_seeded_roles():
    w = make_world(roles="paper")
    w.reset(5)
    assert sorted(p.name for p in w.state.players if p.is_imposter) == ["James", "Olivia"]
    seen = set()
    for seed in range(20):
        w = make_world()
        w.reset(seed)
        imps = tuple(p.name for p in w.state.players if p.is_imposter)
        assert len(imps) == 2
        seen.add(imps)
    assert len(seen) > 5  # drawn from the seed, not fixed


def test_missions_three_distinct_stations_each(world):
    for p in world.state.players:
        assert len(p.missions) == 3 and len(set(p.missions)) == 3
        assert all(0 <= s < 20 for s in p.missions)


def test_kill_reach(world):
    park_everyone(world)
    james, steve = world.state.player("James"), world.state.player("Steve")
    james.kill_cooldown = 0
    place(world, "James", 80.5, 70.0)
    place(world, "Steve", 80.5, 73.2)  # 3.2 blocks: out of reach
    assert "out of reach" in world.rules.check_kill(world.state, james, steve)
    place(world, "Steve", 80.5, 72.9)
    assert world.rules.check_kill(world.state, james, steve) is None


def test_kill_action_approaches_then_strikes_and_leaves_a_body(world):
    park_everyone(world)
    world.state.player("James").kill_cooldown = 0
    place(world, "James", 80.5, 70.0)
    place(world, "Steve", 80.5, 80.0)
    world.step({"James": Action("kill", target="Steve")})
    kills = events_of(world, "kill")
    assert len(kills) == 1 and kills[0]["killer"] == "James" and kills[0]["victim"] == "Steve"
    assert not world.state.player("Steve").alive
    assert [b.victim for b in world.state.bodies] == ["Steve"]
    assert world.state.player("James").kill_cooldown == 3600 - (world.state.tick - kills[0]["tick"])


def test_cooldown_blocks_a_second_kill_and_variants_use_1200():
    assert make_world().cfg.cooldown_ticks == 3600
    assert make_world(num_crewmates=5).cfg.cooldown_ticks == 1200
    assert make_world(num_crewmates=4).cfg.cooldown_ticks == 1200
    w = make_world(roles="paper")
    w.reset(0)
    park_everyone(w)
    james = w.state.player("James")
    james.kill_cooldown = 0
    place(w, "James", 80.5, 70.0)
    place(w, "Steve", 80.5, 71.5)
    place(w, "Jason", 81.5, 71.5)
    w.step({"James": Action("kill", target="Steve")})
    w.step({"James": Action("kill", target="Jason")})
    assert len(events_of(w, "kill")) == 1
    assert w.state.player("Jason").alive
    assert w.last_results["James"]["status"] in ("running", "timed_out")


def test_imposters_cannot_kill_imposters_or_crew_kill(world):
    park_everyone(world)
    james, olivia, steve = (world.state.player(n) for n in ("James", "Olivia", "Steve"))
    james.kill_cooldown = 0
    place(world, "Olivia", james.x + 1, james.z)
    assert world.rules.check_kill(world.state, james, olivia) == "imposters cannot kill imposters"
    place(world, "Steve", olivia.x + 1, olivia.z)
    assert world.rules.check_kill(world.state, steve, olivia) == "only imposters can kill"


def _kill(world, killer: str, victim: str) -> None:
    k, v = world.state.player(killer), world.state.player(victim)
    world.rules.do_kill(world.state, k, v, [])


def test_report_range_and_meeting_clears_bodies(world):
    park_everyone(world)
    place(world, "Steve", 80.5, 70.0)
    _kill(world, "James", "Steve")
    body = world.state.bodies[0]
    jason = world.state.player("Jason")
    place(world, "Jason", 80.5, 72.1)
    assert "more than 2.0 blocks" in world.rules.check_report(world.state, jason, body)
    place(world, "Jason", 80.5, 71.9)
    assert world.rules.check_report(world.state, jason, body) is None
    world.rules.do_report(world.state, jason, body)
    assert world.state.phase == DISCUSSION and world.state.bodies == []
    m = world.state.meeting
    assert m.caller == "Jason" and m.reason == "report" and "Steve" not in m.order
    assert events_of(world, "meeting_start")[0]["announced_dead"] == ["Steve"]


def test_report_action_walks_to_a_seen_body(world):
    park_everyone(world)
    place(world, "Steve", 84.5, 75.0)
    _kill(world, "James", "Steve")
    place(world, "Jason", 84.5, 70.0, yaw_deg=90)  # looking along +z, at the body
    world._see_bodies()
    world.step({"Jason": Action("report")})
    assert events_of(world, "report")[0]["reporter"] == "Jason"
    assert world.state.phase == DISCUSSION


def test_button_locks(world):
    park_everyone(world)
    bx, bz = world.map.button
    place(world, "Steve", bx, bz + 1)
    steve = world.state.player("Steve")
    world.state.tick = 2399
    assert "locked" in world.rules.check_button(world.state, steve)
    world.state.tick = 2400
    assert world.rules.check_button(world.state, steve) is None
    world.rules.do_button(world.state, steve)
    for name in world.state.meeting.order:  # everyone passes; then everyone skips
        world.step({name: Action("speak")})
    assert world.state.phase == VOTING
    world.step({})
    assert world.state.phase == ROAM
    place(world, "Steve", bx, bz + 1)
    world.state.tick += 1199
    assert "locked for 1 more ticks" in world.rules.check_button(world.state, steve)
    world.state.tick += 1
    assert world.rules.check_button(world.state, steve) is None
    place(world, "Steve", bx + 5, bz + 5)
    assert world.rules.check_button(world.state, steve) == "not at the button"


def test_mission_completes_after_1200_still_ticks(world):
    park_everyone(world)
    steve = world.state.player("Steve")
    station = steve.missions[0]
    sx, sz = world.map.stations[station]
    place(world, "Steve", sx, sz)
    world.step({"Steve": Action("mission", station=station)})
    assert events_of(world, "mission_start")[0]["station"] == station
    for _ in range(12):
        world.step({})
    done = events_of(world, "mission_complete")
    assert len(done) == 1 and done[0]["player"] == "Steve"
    start = events_of(world, "mission_start")[0]["tick"]
    assert done[0]["tick"] - start == 1200
    assert steve.missions_done[0]


def test_moving_cancels_a_mission(world):
    park_everyone(world)
    steve = world.state.player("Steve")
    station = steve.missions[0]
    sx, sz = world.map.stations[station]
    place(world, "Steve", sx, sz)
    world.step({"Steve": Action("mission", station=station)})
    world.step({"Steve": Action("goto", target="Cafeteria")})
    cancels = events_of(world, "mission_cancel")
    assert len(cancels) == 1 and cancels[0]["player"] == "Steve"
    assert not steve.missions_done[0] and steve.holding_station is None


def test_imposters_cannot_complete_missions(world):
    james = world.state.player("James")
    sx, sz = world.map.stations[james.missions[0]]
    place(world, "James", sx, sz)
    world.step({"James": Action("mission", station=james.missions[0])})
    assert "imposters cannot complete missions" in world.last_results["James"]["reason"]
    world.step({"James": Action("fake_mission", station=james.missions[0])})
    for _ in range(13):
        world.step({})
    assert events_of(world, "fake_mission_start") and events_of(world, "fake_mission_end")
    assert not events_of(world, "mission_complete")


def test_dead_players_cannot_act_speak_or_vote(world):
    park_everyone(world)
    _kill(world, "James", "Steve")
    world.step({"Steve": Action("goto", target="Admin")})
    assert world.last_results["Steve"] == {"status": "failed", "reason": "dead players cannot act"}
    bx, bz = world.map.button
    place(world, "Jason", bx, bz)
    world.state.tick = 5000
    world.rules.do_button(world.state, world.state.player("Jason"))
    assert "Steve" not in world.state.meeting.order
    res = world.step({"Steve": Action("speak", text="I was killed by "
                                                    "James!"), "Jason": Action("speak", text="hi")})
    assert res.results["Steve"]["status"] == "failed"
    assert all(e["speaker"] != "Steve" for e in events_of(world, "utterance"))
    while world.state.phase == DISCUSSION:
        world.step({})
    res = world.step({"Steve": Action("vote", target="James")})
    assert res.results["Steve"] == {"status": "failed", "reason": "dead players cannot vote"}
    assert all(e["voter"] != "Steve" for e in events_of(world, "vote"))


def _meeting_then_votes(world, votes: dict[str, str]):
    bx, bz = world.map.button
    place(world, "Steve", bx, bz)
    world.state.tick = max(world.state.tick, 5000)
    world.rules.do_button(world.state, world.state.player("Steve"))
    while world.state.phase == DISCUSSION:
        world.step({})
    world.step({n: Action("vote", target=t) for n, t in votes.items()})
    return events_of(world, "ejection")[-1]


def test_tie_between_players_ejects_nobody(world):
    e = _meeting_then_votes(world, {"Steve": "James", "Jason": "James", "Michael": "Noah", "Noah": "Michael",
                                    "Ethan": "Noah", "Martin": "skip", "James": "Michael", "Olivia": "skip"})
    # James 2, Noah 2, Michael 2, skip 2: a tie
    assert e["ejected"] is None and e["text"] == "No one was ejected."


def test_tie_with_skip_ejects_nobody(world):
    e = _meeting_then_votes(world, {"Steve": "James", "Jason": "James", "Michael": "James",
                                    "Noah": "skip", "Ethan": "skip", "Martin": "skip"})
    # James 3, skip 3 + 2 missing votes counted as skip = 5: skip wins
    assert e["ejected"] is None
    assert e["tally"] == {"James": 3, "skip": 5}


def test_plurality_ejects_and_reveals_the_role(world):
    e = _meeting_then_votes(world, {"Steve": "James", "Jason": "James", "Michael": "James",
                                    "Noah": "James", "Martin": "James", "Ethan": "skip"})
    assert e["ejected"] == "James" and e["role"] == "imposter" and e["text"] == "James was an Imposter."
    assert world.state.player("James").ejected
    obs = world.observe("Steve")
    assert {"name": "James", "role": "imposter"} in obs["ejections"]
    e = _meeting_then_votes(world, {"Steve": "Noah", "Jason": "Noah", "Michael": "Noah", "Olivia": "Noah"})
    assert e["text"] == "Noah was a Crewmate."


def test_meeting_has_at_most_three_rounds_and_ends_early_when_silent(world):
    bx, bz = world.map.button
    place(world, "Steve", bx, bz)
    world.state.tick = 5000
    world.rules.do_button(world.state, world.state.player("Steve"))
    order = list(world.state.meeting.order)
    talks = 0
    while world.state.phase == DISCUSSION:
        speaker = world.state.meeting.speaker
        world.step({speaker: Action("speak", text=f"{speaker} talks")})
        talks += 1
    assert talks == 3 * len(order)
    place(world, "Steve", bx, bz)
    world.step({})
    world.state.tick += 2000
    world.rules.do_button(world.state, world.state.player("Steve"))
    n = 0
    while world.state.phase == DISCUSSION:
        world.step({})
        n += 1
    assert n == len(world.state.meeting.order)  # one silent round ends the talk


def test_ending_imposter_win():
    w = make_world(roles="paper")
    w.reset(1)
    for victim in ("Steve", "Jason", "Michael"):
        _kill(w, "James", victim)
        assert w.state.phase == ROAM
    _kill(w, "Olivia", "Noah")  # 2 crewmates left against 2 imposters
    assert w.state.phase == ENDED and w.state.outcome == IMPOSTER_WIN
    assert events_of(w, "match_end")[0]["outcome"] == IMPOSTER_WIN


def test_ending_crewmate_win(world):
    crew = ["Steve", "Jason", "Michael", "Noah", "Ethan", "Martin"]
    _meeting_then_votes(world, {n: "James" for n in crew})
    assert world.state.phase == ROAM
    world.state.tick += 3000
    _meeting_then_votes(world, {n: "Olivia" for n in crew})
    assert world.state.outcome == CREWMATE_WIN


def test_ending_mission_win_counts_living_crewmates_only(world):
    _kill(world, "James", "Steve")
    for p in world.state.players:
        if not p.is_imposter and p.name not in ("Steve", "Jason"):
            p.missions_done = [True] * 3
    jason = world.state.player("Jason")
    jason.missions_done = [True, True, False]
    world.step({})
    assert world.state.phase == ROAM
    station = jason.missions[2]
    place(world, "Jason", *world.map.stations[station])
    world.step({"Jason": Action("mission", station=station)})
    for _ in range(12):
        if world.state.phase == ENDED:
            break
        world.step({})
    assert world.state.outcome == MISSION_WIN  # Steve's missions are not needed: he is dead


def test_ending_timeout_spends_the_step_budget():
    w = make_world(max_steps=7)
    w.reset(3)
    n = 0
    while w.state.phase != ENDED:
        w.step({})
        n += 1
    assert n == 7 and w.state.outcome == TIMEOUT and w.state.step == 7


def test_action_timeout(world):
    park_everyone(world)
    world.state.player("James").kill_cooldown = 10_000
    place(world, "James", 80.5, 70.0)
    place(world, "Steve", 80.5, 71.0)
    world.step({"James": Action("kill", target="Steve")})
    for _ in range(6):
        world.step({})
    assert world.last_results["James"]["status"] == "timed_out"
    assert "cooldown" in world.last_results["James"]["reason"]


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "teleport"}, {"kind": "kill"}, {"kind": "goto"}, {"kind": "mission", "station": "three"},
        {"kind": "goto", "point": [1]}, "rm -rf /", {"kind": "goto", "target": "Narnia"},
        {"kind": "goto", "point": [0.5, 0.5]}, {"kind": "mission", "station": 99},
        {"kind": "vote", "target": "x"}, {"kind": "goto", "point": [float("nan"), 3.0]},
        {"kind": "goto", "point": [True, 3.0]}, None and {},
        {"kind": "kill", "target": "Steve", "code": "__import__('os').system('true')"},
        {"kind": "wait", "ticks": -5}, {"kind": "follow", "target": "Steve"},
    ],
)
def test_bad_actions_fail_without_crashing(world, bad):
    if bad is None:
        bad = []
    world.step({"Steve": bad})
    world.step({})
    result = world.last_results["Steve"]
    assert result["status"] == "failed" and result["reason"]
