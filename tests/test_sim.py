"""The sim as a whole: determinism, snapshot/restore, state modes, no role leak, endings over seeds."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter

from mau.env.actions import Action
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sim import SimWorld
from mau.env.state import MISSION_WIN, OUTCOMES, ROAM
from mau.schema import TICKS_PER_SECOND
from tests.helpers import make_world, park_everyone, place


def _play(seed: int, world: SimWorld | None = None):
    w = world or SimWorld()
    pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
    play_match(w, pols, seed)
    return w


def _digest(events) -> str:
    return hashlib.sha256(json.dumps(events, sort_keys=True).encode()).hexdigest()


def test_same_seed_same_match_in_process():
    a, b = _play(11), _play(11)
    assert a.state.events == b.state.events
    assert _play(12).state.events != a.state.events


def test_same_seed_same_match_across_processes():
    code = ("import hashlib, json; from tests.test_sim import _play, _digest; "
            "print(_digest(_play(11).state.events))")
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONHASHSEED": str(h), "PATH": ""}).stdout.strip() for h in (1, 2)}
    assert out == {_digest(_play(11).state.events)}


def test_snapshot_restore_gives_identical_continuation_events_and_frames():
    w = SimWorld()
    seed = 4
    w.reset(seed)
    pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
    for _ in range(15):
        w.step({p.name: pols[p.name].act(w.observe(p.name)) for p in w.state.players if p.active})
    snap = w.snapshot()
    n_before = len(w.state.events)
    taken, frames_a = [], []
    for _ in range(25):
        if w.done:
            break
        acts = {p.name: pols[p.name].act(w.observe(p.name)) for p in w.state.players if p.active}
        taken.append(acts)
        w.step(acts)
        frames_a.append(w.render("Steve").copy())
    events_a = w.state.events[n_before:]
    w.restore(snap)
    assert len(w.state.events) == n_before
    frames_b = []
    for acts in taken:
        w.step(acts)
        frames_b.append(w.render("Steve").copy())
    assert w.state.events[n_before:] == events_a
    assert len(frames_a) == len(frames_b) > 0
    assert all((fa == fb).all() for fa, fb in zip(frames_a, frames_b))


def test_snapshot_is_independent_of_later_play():
    w = _play(2)
    snap = w.snapshot()
    tick = w.state.tick
    w.state.tick += 999
    w.restore(snap)
    assert w.state.tick == tick


def test_ego_never_lists_a_player_behind_a_wall_privileged_does():
    w = make_world(roles="paper")
    w.reset(0)
    park_everyone(w)
    place(w, "Steve", 80.5, 84.5, yaw_deg=90)  # Cafeteria, looking +z at the wall to Medbay
    place(w, "Jason", 80.5, 95.5)  # inside Medbay? no: Medbay is x 84-95; put Jason in Medbay behind the wall
    place(w, "Jason", 85.5, 95.5)
    place(w, "Michael", 82.5, 84.5)  # beside Steve, outside the frustum (to the side)
    place(w, "Noah", 81.0, 86.5)  # in front of Steve, in view
    ego = w.observe("Steve", "ego")
    priv = w.observe("Steve", "privileged")
    seen = {p["name"] for p in ego["players_in_view"]}
    assert "Jason" not in seen and "Noah" in seen
    listed = {p["name"]: p for p in priv["players"]}
    assert "Jason" in listed and listed["Jason"]["in_view"] is False
    assert "players" not in ego


def test_ego_distance_cap():
    w = make_world(roles="paper")
    w.reset(0)
    park_everyone(w)
    place(w, "Steve", 80.5, 65.5, yaw_deg=90)
    place(w, "Jason", 80.5, 86.0)  # same room, 20.5 blocks ahead
    assert "Jason" in {p["name"] for p in w.observe("Steve")["players_in_view"]}
    w2 = make_world(roles="paper", ego_view_distance=10)
    w2.reset(0)
    park_everyone(w2)
    place(w2, "Steve", 80.5, 65.5, yaw_deg=90)
    place(w2, "Jason", 80.5, 86.0)
    assert "Jason" not in {p["name"] for p in w2.observe("Steve")["players_in_view"]}


def _leaks(obs: dict, hidden: set[str]) -> list[str]:
    """Places where an observation could tell another player's role."""
    found = []
    # own role, the revealed roles of ejections and the public count of imposters may name the word
    text = json.dumps({k: v for k, v in obs.items() if k not in ("role", "ejections", "n_imposters")}).lower()
    if "imposter" in text:
        found.append("the word imposter outside own role and ejections")
    for e in obs["ejections"]:
        if e["name"] in hidden:
            found.append(f"ejection of {e['name']} before it happened")
    if "teammates" in obs:
        found.append("teammates in a crewmate's observation")
    return found


def test_no_hidden_role_in_any_crewmate_observation_over_many_matches():
    checked = 0
    for seed in range(25):
        for mode in ("ego", "privileged"):
            w = SimWorld()
            w.reset(seed)
            pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
            while not w.done:
                acts = {}
                ejected_now = {e["name"] for e in w.state.ejections}
                for p in w.state.players:
                    if p.is_imposter:
                        continue
                    obs = w.observe(p.name, mode)
                    hidden = {q.name for q in w.state.players if q.name not in ejected_now}
                    assert not _leaks(obs, hidden), (seed, mode, p.name, _leaks(obs, hidden))
                    checked += 1
                for p in w.state.players:
                    if p.active:
                        acts[p.name] = pols[p.name].act(w.observe(p.name, mode))
                w.step(acts)
    assert checked > 5000


def test_leak_check_catches_a_planted_leak():
    w = SimWorld()
    w.reset(0)
    crew = next(p for p in w.state.players if not p.is_imposter)
    obs = w.observe(crew.name)
    obs["players_in_view"] = [{"name": "James", "role": "imposter"}]
    assert _leaks(obs, {"James"})


def test_all_four_endings_over_seeds():
    outcomes: Counter = Counter()
    # look until all are seen; every third match on a budget too short for the missions
    for seed in range(300):
        w = make_world(max_steps=40) if seed % 3 == 2 else None
        outcomes[_play(seed, w).state.outcome] += 1
        if set(outcomes) == set(OUTCOMES):
            break
    assert set(outcomes) == set(OUTCOMES), outcomes


def test_look_around_turns_a_full_circle():
    w = make_world(roles="paper")
    w.reset(0)
    yaw0 = w.state.player("Steve").yaw
    w.step({"Steve": Action("look_around")})
    assert w.last_results["Steve"]["status"] == "done"
    assert abs((w.state.player("Steve").yaw - yaw0) % 6.283185307179586) < 1e-6


def test_follow_and_flee_move_the_right_way():
    w = make_world(roles="paper")
    w.reset(0)
    park_everyone(w)
    place(w, "Steve", 80.5, 70.5)
    place(w, "Jason", 94.5, 84.5)
    d0 = w.map.path_length(80.5, 70.5, 94.5, 84.5)
    w.step({"Steve": Action("follow", target="Jason")})
    s, j = w.state.player("Steve"), w.state.player("Jason")
    assert w.map.path_length(s.x, s.z, j.x, j.z) < d0 - 10
    w.step({"Jason": Action("flee", target="Steve"), "Steve": Action("wait", ticks=400)})
    w.step({})
    assert w.map.path_length(s.x, s.z, j.x, j.z) > 10


def test_match_end_is_the_last_event_of_every_match():
    """Also in the smaller variants, where a kill at parity ends the match (the killer's walk-off once came
    after match_end there: 26 of these 90 matches)."""
    from mau.env.config import WorldConfig

    for crew in (6, 5, 4):
        cfg = WorldConfig.model_validate({"game": {"num_crewmates": crew}})
        for seed in range(30):
            world = SimWorld(cfg)
            events = _play(seed, world).state.events
            assert events[-1]["type"] == "match_end" and [e["i"] for e in events] == list(range(len(events)))


def test_nothing_may_be_emitted_after_match_end():
    import pytest

    world = _play(3)
    with pytest.raises(RuntimeError, match="after match_end"):
        world.state.emit("action_start", player="Steve")



class _PlainWorld(SimWorld):
    """The sim without its shortcuts: every goto and mission resolves its goal at every sub-step, every look
    at a body and every track line is computed anew, the endings are checked after every sub-step (each
    sub-step is a step's first, its active players listed anew), every running program is called, a held
    station's too."""

    _skip_held = False

    def _advance(self, ticks):
        st = self.state
        end_tick = st.tick + ticks
        while st.tick < end_tick and st.phase == ROAM:
            super()._advance(min(self.cfg.substep_ticks, end_tick - st.tick))

    def _run_goto(self, p, run, dt):
        run.fixed_goal = None
        super()._run_goto(p, run, dt)

    def _run_mission(self, p, run, dt):
        if run.stage == "travel":
            run.fixed_goal = None
        super()._run_mission(p, run, dt)

    def _see_bodies(self):
        self._unseen.clear()
        super()._see_bodies()

    def _track(self, after):
        self._tracked.clear()
        super()._track(after)


def test_shortcuts_give_the_plain_computation():
    for seed in (2, 5, 9):
        fast, plain = _play(seed), _play(seed, _PlainWorld())
        assert fast.state.events == plain.state.events
        assert fast.tracks == plain.tracks
        assert fast.positions == plain.positions
        assert fast.sights.lines == plain.sights.lines


def test_substep_hooks_run_where_a_backend_overrides_them():
    calls = Counter()

    class Hooked(SimWorld):
        def _substep_begin(self):
            calls["begin"] += 1

        def _substep_move(self, ticks):
            calls["move"] += ticks

    w = Hooked()
    w.reset(1)
    w.step({})
    assert calls == {"begin": w.state.tick // w.cfg.substep_ticks, "move": w.state.tick}


def test_goal_that_cannot_move_is_resolved_once_a_player_each_substep(world):
    a, b = (p.name for p in world.state.players[:2])
    room = next(iter(world.map.room_centers))
    world.step({a: Action("goto", target=room), b: Action("goto", target=a)})
    assert world.runs[a].fixed_goal == world.map.room_centers[room]
    assert world.runs[b].fixed_goal is None  # a player moves: its place is read at every sub-step


def test_endings_checked_at_the_first_substep_after_a_change_from_outside(world):
    for p in world.state.players:
        if not p.is_imposter:
            p.missions_done = [True] * len(p.missions)
    world.step({})
    assert world.state.outcome == MISSION_WIN
    assert world.state.tick == world.cfg.substep_ticks  # ended after the step's first sub-step


def test_a_mission_completed_mid_step_ends_the_match_at_that_substep(world):
    crew = [p for p in world.state.players if not p.is_imposter]
    for p in crew:
        p.missions_done = [True] * len(p.missions)
    last = crew[0]
    last.missions_done[-1] = False
    last.x, last.z = world.map.stations[last.missions[-1]]
    sub = world.cfg.substep_ticks
    last.holding_station, last.holding_ticks = last.missions[-1], world.cfg.mission_hold_ticks - 2 * sub
    world.step({})  # the first sub-step finds nothing to end; the second completes the mission
    assert world.state.outcome == MISSION_WIN
    assert world.state.tick == 2 * sub


def test_observation_frame_cache_equals_a_fresh_frame_and_is_never_stale():
    """observe reads the players through a frame shared by the observations of one moment (kept on the
    world): over played steps, after a restore and after players moved or died by hand at the same step,
    every observation equals one built from a fresh frame, and changing an observation changes no other."""
    w = make_world()
    w.reset(3)
    pols = {p.name: ScriptedPolicy(p.name, w.map, 3) for p in w.cfg.players}

    def both(name: str) -> dict:
        cached = w.observe(name)
        w.observation_frame = None  # the plain computation: a frame built for this observation alone
        assert w.observe(name) == cached
        return cached

    snap = None
    for k in range(60):
        st = w.state
        if st.phase == "ended":
            break
        obs = {p.name: both(p.name) for p in st.players}
        obs[st.players[0].name]["roster"][0]["name"] = "changed"  # an agent may change its own observation
        obs[st.players[0].name]["position"].append(0)
        assert both(st.players[1].name)["roster"][0]["name"] == st.players[0].name
        if k == 20:
            snap = w.snapshot()
        w.step({p.name: pols[p.name].act(obs[p.name]) for p in st.players if p.active})
    w.restore(snap)
    for p in w.state.players:
        both(p.name)
    # moved, turned and killed by hand, no step between: the next observation sees it
    park_everyone(w)
    a, b = [p for p in w.state.players if p.active][:2]
    place(w, a.name, 84.5, 72.5, yaw_deg=0)
    place(w, b.name, 86.5, 72.5)
    assert b.name in [q["name"] for q in both(a.name)["players_in_view"]]
    place(w, a.name, 84.5, 72.5, yaw_deg=180)  # turned away
    assert b.name not in [q["name"] for q in both(a.name)["players_in_view"]]
    assert both(a.name)["yaw_deg"] == 180.0
    place(w, a.name, 84.5, 72.5, yaw_deg=0)
    b.alive = False
    assert b.name not in [q["name"] for q in both(a.name)["players_in_view"]]


def test_observation_button_lock_follows_the_clock_and_the_last_meeting_on_one_frame():
    """The frame keeps the button lock and the time of its moment: a clock or a meeting end changed with no
    player moved (the same frame) gives the rules' answer and the time anew."""
    w = make_world()
    w.reset(3)
    st, name = w.state, w.state.players[0].name
    moments = ((0, None), (5, None), (2500, None), (2500, 2000), (2500, 1000), (2600, 2000), (2613, 2000))
    for tick, end in moments:
        st.tick, st.last_meeting_end_tick = tick, end
        obs = w.observe(name)
        assert obs["button_lock_ticks"] == w.rules.button_lock_left(st)
        assert obs["time_s"] == round(tick / TICKS_PER_SECOND, 2)  # kept with the lock for the moment's tick


def _observed_steps(seed: int, steps: int):
    """(world, every player's observation) at each of up to ``steps`` steps of a scripted match of ``seed``;
    once the caller has read them, the active players' actions on them step the world."""
    w = make_world()
    w.reset(seed)
    pols = {p.name: ScriptedPolicy(p.name, w.map, seed) for p in w.cfg.players}
    for _ in range(steps):
        st = w.state
        if st.phase == "ended":
            return
        obs = {p.name: w.observe(p.name) for p in st.players}
        yield w, obs
        w.step({n: pols[n].act(o) for n, o in obs.items() if st.player(n).active})


def test_observation_current_action_is_the_running_actions_dict_fresh_each_time():
    """The running action's dict is kept between observations (frame to frame); each observation still gets
    a fresh one, equal to ``to_dict`` of the action running now."""
    from mau.env.actions import Action

    seen = 0
    for w, obs in _observed_steps(3, 40):
        for name, o in obs.items():
            run = w.runs.get(name)
            want = run.action.to_dict() if run is not None and run.status == "running" else None
            assert o["current_action"] == want
            if want is not None:
                seen += 1
                o["current_action"]["kind"] = "changed"  # an agent may change its own observation
                assert w.observe(name)["current_action"] == want
    assert seen > 50
    # an action with a list is never kept (its dict's list is a copy of the action's, each time)
    name = next(n for n, r in w.runs.items() if r is not None and r.status == "running")
    w.runs[name].action = Action("goto", point=[1.0, 2.0])  # type: ignore[arg-type]
    first = w.observe(name)["current_action"]
    first["point"].append(3.0)
    assert w.observe(name)["current_action"] == {"kind": "goto", "point": [1.0, 2.0]}


class _Listening(ScriptedPolicy):
    """The scripted policy asked at every discussion step, as play_match asks a policy that listens."""

    listens = True


def test_scripted_policies_play_the_same_games_without_listening_to_each_line():
    """play_match asks a ScriptedPolicy only on its turn while others speak (it reads the lines said since on
    its turn or at the vote): every game is the one it plays when it hears each line, over temperaments,
    imposter rungs, claims modes and both state modes."""
    from mau.claims.config import ClaimsConfig
    from mau.env.config import WorldConfig
    from mau.env.scripted import TEMPERAMENTS

    grid = [("ego", "off", "expert"), ("privileged", "off", "quiet"), ("ego", "structured", "framer"),
            ("ego", "free", "adversarial"), ("privileged", "structured", "cautious")]
    heard = spoken = 0
    for mode, claims, rung in grid:
        cfg = WorldConfig()
        cfg.claims = ClaimsConfig(mode=claims)
        for seed in (3, 11):
            games = []
            for cls in (ScriptedPolicy, _Listening):
                world = SimWorld(cfg)
                world.reset(seed)
                imposters = {p.name for p in world.state.players if p.is_imposter}
                temperaments = list(TEMPERAMENTS)
                pols = {p.name: cls(p.name, world.map, seed,
                                    rung if p.name in imposters else temperaments[i % len(temperaments)],
                                    claims=cfg.claims)
                        for i, p in enumerate(world.cfg.players)}
                asked = []  # one entry per observation built (one per act)
                observe = world.observe
                world.observe = lambda *a, observe=observe, asked=asked: asked.append(a) or observe(*a)
                play_match(world, pols, seed, mode)
                games.append((world.state.events, world.tracks, world.sights.lines, len(asked)))
            (ev, tracks, sights, n_quiet), (ev_l, tracks_l, sights_l, n_listening) = games
            assert ev == ev_l, (mode, claims, rung, seed)
            assert tracks == tracks_l and sights == sights_l
            spoken += any(e["type"] == "utterance" for e in ev)
            heard += n_listening - n_quiet
    assert spoken >= len(grid)  # most matches held meetings: lines were said and heard
    assert heard > 0  # the listeners were asked at the lines the quiet policies skipped


def test_observation_rounding_is_round_itself():
    """observe's ``_r`` (a cheaper round for positions, distances and headings) gives round's float, bit for
    bit, near halves, at zero, for negative, huge and non-finite values."""
    import math
    import random

    from mau.env.observation import _r

    rng = random.Random(7)
    values = [0.0, -0.0, 1e-9, 0.005, 0.015, 0.125, 1.005, 2.675, 72.5, 359.95, 999999.995, 1e6, 1e300,
              -3.14159, -0.004, math.inf, -math.inf]
    values += [rng.uniform(0, 200) for _ in range(20000)]
    nudges = (0.0, 1e-12, -1e-12, 5e-5, -5e-5)  # halves (and near them) of the second and first digit
    values += [rng.randint(0, 40000) / 200 + rng.choice(nudges) for _ in range(20000)]
    for v in values:
        for scale, digits in ((100.0, 2), (10.0, 1)):
            assert repr(_r(v, scale, digits)) == repr(round(v, digits)), (v, digits)
    assert math.isnan(_r(math.nan))


def test_observation_matches_the_plain_reading_of_the_players():
    """The frame's positions, headings, places and players_in_view (kept from frame to frame, built from the
    view's pairs) equal the plain reading of each player over played steps: round, vision.sees, seat order."""
    import math

    seen = 0
    for w, obs in _observed_steps(5, 80):
        st = w.state
        for me in st.players:
            o = obs[me.name]
            assert o["position"] == [round(me.x, 2), w.map.floor_y, round(me.z, 2)]
            assert repr(o["yaw_deg"]) == repr(round(math.degrees(me.yaw) % 360, 1))
            assert o["room"] == w.map.place_name(me.x, me.z)
            plain = [{"name": p.name, "color": p.color, "position": [round(p.x, 2), round(p.z, 2)],
                      "distance": round(math.hypot(p.x - me.x, p.z - me.z), 2),
                      "room": w.map.place_name(p.x, p.z)}
                     for p in st.players if p.active and p is not me and w.vision.sees(me, p.x, p.z)]
            assert o["players_in_view"] == (plain if me.active else [])
            seen += len(plain)
    assert seen > 30
