"""Scripted imposters label a fabrication ``lie`` only when it is false by the checker's rules (issue 21:
"every lie-labelled claim FALSE or UNSUPPORTED"): an alibi in a room the speaker was in within the checker's
+/- 5 s, and a "false" sighting of a player who really was in that room in its view, are replaced by false
ones (docs/claims.md, "Where claims come from"). Hand-built situations checked by the role-blind checker, the
speaker's line-of-sight
bound against the world's, and the scripted matches where the speaker used to lie with a true claim."""

from __future__ import annotations

import math
import random

import pytest

from mau import schema as F
from mau.claims.check import FALSE, TRUE, UNSUPPORTED, check_match
from mau.claims.config import ClaimsConfig
from mau.claims.speaker import ClaimSpeaker, _floor
from mau.env.config import WorldConfig
from mau.env.map import load_map
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sim import SimWorld

ON = ClaimsConfig(mode="structured")
GMAP = load_map("skeld")
PLAYERS = ["Noah", "Steve", "Jason"]
PLACES = list(dict.fromkeys(r.name for r in GMAP.regions))
TABLE = GMAP.spawn_points(8)  # where everyone stands after a meeting
LOWER = GMAP.room_centers["Lower Engine"]


def _roam(tick: int, xz: tuple[float, float], seen: dict | None = None, killed: str | None = None,
          fake: tuple[int, ...] = ()) -> dict:
    """An imposter's step-end observation (the fields the speaker reads)."""
    return {"tick": tick, "alive": True, "role": "imposter", "room": GMAP.place_name(*xz),
            "position": [xz[0], GMAP.floor_y, xz[1]],
            "players_in_view": [{"name": n, "room": GMAP.place_name(*p), "position": [p[0], p[1]]}
                                for n, p in (seen or {}).items()],
            "bodies_in_view": [], "teammates": [],
            "fake_missions": [{"station": s, "room": GMAP.station_rooms[s]} for s in fake],
            "last_action_result": {"reason": f"killed {killed}"} if killed else None}


def _meeting(tick: int, xz: tuple[float, float], fake: tuple[int, ...] = ()) -> dict:
    return {**_roam(tick, xz, fake=fake), "meeting": {"round": 1, "alive_players": PLAYERS}}


def _sights(changes: list[tuple[int, bool, dict[str, str], list, list]]) -> list[dict]:
    """sights.jsonl lines: (tick, the table after a meeting, {player: place}, pairs gained, pairs lost)."""
    lines = [
        {F.SIGHTS_VERSION_FIELD: F.SIGHTS_VERSION, F.SIGHT_PLAYERS: PLAYERS, F.SIGHT_PLACE_NAMES: PLACES}
    ]
    for tick, after, places, gained, lost in changes:
        line: dict = {
            F.SIGHT_TICK: tick,
            F.SIGHT_PLACES: [
                [PLAYERS.index(n), None if p is None else PLACES.index(p)] for n, p in places.items()
            ],
        }
        if gained:
            line[F.SIGHT_GAINED] = [[PLAYERS.index(v), PLAYERS.index(s)] for v, s in gained]
        if lost:
            line[F.SIGHT_LOST] = [[PLAYERS.index(v), PLAYERS.index(s)] for v, s in lost]
        if after:
            line[F.SIGHT_AFTER_MEETING] = True
        lines.append(line)
    return lines


def _verdicts(claims: list[dict], sights: list[dict], meetings: list[int], now: int,
              kill: tuple[int, str, str]) -> list[str]:
    """The checker's verdict on each claim, said by Noah at the meeting of ``now``."""
    events = [{F.TYPE: F.EV_MATCH_START, F.TICK: 0}]
    for m in meetings:
        events += [{F.TYPE: F.EV_MEETING_START, F.TICK: m}, {F.TYPE: F.EV_MEETING_END, F.TICK: m}]
    events += [{F.TYPE: F.EV_KILL, F.TICK: kill[0], F.KILLER: "Noah", F.VICTIM: kill[1], "room": kill[2],
                "witnesses": []},
               {F.TYPE: F.EV_MEETING_START, F.TICK: now},
               {F.TYPE: F.EV_UTTERANCE, F.TICK: now, F.SPEAKER: "Noah", "round": 1, F.CLAIMS: claims},
               {F.TYPE: F.EV_MATCH_END, F.TICK: now + 500}]
    events = [dict(e, **{F.EVENT_INDEX: i}) for i, e in enumerate(sorted(events, key=lambda e: e[F.TICK]))]
    return [r["verdict"] for r in check_match(events, sights)]


def test_an_alibi_in_the_room_i_left_just_before_the_last_meeting_is_not_told():
    """A cautious imposter's alibi is its fake mission's room when it was not there at any step end of the
    window. Here it stood there until the last meeting was called, 10 s before this one: within the checker's
    +/- 5 s of
    the window's start, so that alibi would be TRUE. The speaker tells another room, false by the checker."""
    reactor = GMAP.room_centers["Reactor"]
    station = GMAP.station_rooms.index("Reactor")
    sp = ClaimSpeaker("Noah", GMAP, 7, "cautious", ON)
    sp.observe(_roam(800, reactor, fake=(station,)))
    sp.observe(_roam(900, reactor, fake=(station,)))
    sp.observe(_meeting(1000, reactor, fake=(station,)))  # the meeting is called while I stand in Reactor
    sp.observe(_roam(1000, TABLE[0], fake=(station,)))  # the table after it: the clock stood still
    sp.observe(_roam(1100, TABLE[0], killed="Steve", fake=(station,)))
    now = 1199  # a window of 9.9 s (1001 to 1199): the short-window rule, +/- 5 s
    claims, intent = sp.claims(_meeting(now, TABLE[0], fake=(station,)), None)
    sights = _sights([(0, False, {"Noah": "Reactor", "Steve": "Cafeteria", "Jason": "Admin"}, [], []),
                      (1000, True, {"Noah": "Cafeteria"}, [], []),
                      (1100, False, {"Steve": None}, [], [])])
    drawn = {"k": "at", "who": "me", "room": "Reactor", "from_s": 1001 / 20, "to_s": now / 20}
    # the trap is real by the majority and short-window rules (a kill outside the window); the kill inside it
    # makes the cover rule catch it too (docs/claims.md), but the speaker does not count on that
    assert _verdicts([drawn], sights, [1000], now, (990, "Steve", "Cafeteria")) == [TRUE]
    assert _verdicts([drawn], sights, [1000], now, (1100, "Steve", "Cafeteria")) == [FALSE]
    alibi = [(c, i) for c, i in zip(claims, intent) if c["k"] == "at"]
    assert len(alibi) == 1 and alibi[0][1] == "lie"
    assert alibi[0][0]["room"] not in ("Reactor", "Cafeteria")
    assert _verdicts([alibi[0][0]], sights, [1000], now, (1100, "Steve", "Cafeteria")) == [FALSE]


def test_a_false_sighting_of_a_player_i_had_in_view_there_is_not_told():
    """An imposter backs its accusation with a sighting in the room of its kill, at its last sighting of the
    accused. Here that moment is 5 s after the last meeting, and when the meeting was called the accused stood
    in that very room, in the speaker's view: within +/- 5 s, so the "false" sighting would be TRUE. The
    speaker
    names a room where, by its own track and its sightings of the accused, it cannot have seen the accused."""
    sp = ClaimSpeaker("Noah", GMAP, 7, "accusatory", ON)
    steve_le = (LOWER[0] + 2, LOWER[1])
    sp.observe(_roam(900, LOWER, seen={"Steve": steve_le}))
    sp.observe(_meeting(1000, LOWER))
    sp.observe(_roam(1000, TABLE[0], seen={"Steve": TABLE[1]}))
    sp.observe(_roam(1100, TABLE[0], seen={"Steve": TABLE[1]}))  # my last sighting of Steve
    sp.observe(_roam(1600, LOWER, killed="Jason"))  # I walked to Lower Engine and killed there
    now = 1700
    claims, intent = sp.claims(_meeting(now, LOWER), "Steve")
    sights = _sights([(0, False, {"Noah": "Lower Engine", "Steve": "Lower Engine", "Jason": "Admin"},
                       [("Noah", "Steve")], []),
                      (1000, True, {"Noah": "Cafeteria", "Steve": "Cafeteria"}, [], []),
                      (1150, False, {}, [], [("Noah", "Steve")]),
                      (1500, False, {"Noah": "Lower Engine", "Jason": "Lower Engine"}, [], []),
                      (1600, False, {"Jason": None}, [], [])])
    drawn = {"k": "saw", "who": "Steve", "room": "Lower Engine", "at_s": 55.0}
    assert _verdicts([drawn], sights, [1000], now, (1600, "Jason", "Lower "
                                                                   "Engine")) == [TRUE]  # the trap is real
    saw = [(c, i) for c, i in zip(claims, intent) if c["k"] == "saw"]
    assert len(saw) == 1 and saw[0][1] == "lie" and saw[0][0]["room"] != "Lower Engine"
    assert _verdicts([saw[0][0]], sights, [1000], now, (1600, "Jason", "Lower "
                                                                       "Engine"))[0] in (FALSE, UNSUPPORTED)
    assert {"k": "accuse", "who": "Steve"} in claims


def test_the_same_speaker_says_the_same_thing_twice():
    """Deterministic: the same observations give the same claims and labels (the side stream is seeded
    too)."""
    def speak() -> tuple[list, list]:
        sp = ClaimSpeaker("Noah", GMAP, 7, "accusatory", ON)
        for obs in (
            _roam(900, LOWER, seen={"Steve": LOWER}), _meeting(1000, LOWER),
            _roam(1000, TABLE[0], seen={"Steve": TABLE[1]}), _roam(1100, TABLE[0], seen={"Steve": TABLE[1]}),
            _roam(1600, LOWER, killed="Jason"),
        ):
            sp.observe(obs)
        return sp.claims(_meeting(1700, LOWER), "Steve")

    assert speak() == speak()


def test_the_cells_that_may_see_into_a_room_hold_every_line_of_sight_of_the_world():
    """The speaker's line-of-sight bound (``_Floor.cells``) never misses a line the world's vision would draw:
    random pairs within the view distance, half of them through doorways (where lines graze walls)."""
    floor = _floor(GMAP)
    cells = {room: {(math.floor(x), math.floor(z)) for x, z in c} for room, c in floor.cells.items()}
    doors = [d for ds in floor.doors.values() for d in ds]
    rng = random.Random(0)
    x0, z0 = GMAP.origin

    def point(near_door: bool) -> tuple[float, float]:
        while True:
            if near_door:
                dx0, dx1, dz0, dz1 = rng.choice(doors)
                x, z = rng.uniform(dx0 - 2, dx1 + 2), rng.uniform(dz0 - 2, dz1 + 2)
            else:
                x, z = rng.uniform(x0, x0 + GMAP.size[0]), rng.uniform(z0, z0 + GMAP.size[1])
            if GMAP.is_floor(x, z):
                return x, z

    checked = 0
    for k in range(40_000):
        (qx, qz), (px, pz) = point(k % 2 == 0), point(k % 3 == 0)
        room = GMAP.room_at(px, pz)
        if room is None or math.hypot(px - qx, pz - qz) > 36 or not GMAP.line_of_sight(qx, qz, px, pz):
            continue
        checked += 1
        assert (math.floor(qx), math.floor(qz)) in cells[room], ((qx, qz), room, (px, pz))
    assert checked > 3000
    # and it does bound
    assert all(len(c) < 0.4 * sum(len(v) for v in cells.values()) for c in cells.values())


# Scripted matches (ego state) in which the speaker before issue 21's fix labelled a TRUE fact a lie: (seed,
# imposters' temperament, crewmates' temperament). 1426: an alibi within 5 s of where it was before the last
# meeting (said twice); 165, 1361: a false eyewitness claim about a player who was in that room, in its view.
TRAPS = [(1426, "accusatory", "expert"), (165, "cautious", "cautious"), (1361, "cautious", "expert")]


@pytest.mark.parametrize("seed, imposter, crewmate", TRAPS)
def test_scripted_lies_are_false_where_they_used_to_be_true(seed, imposter, crewmate):
    roles = {p.name: p.role for p in SimWorld(WorldConfig(claims=ON)).reset(seed).players}
    w = SimWorld(WorldConfig(claims=ON))
    play_match(w, {p.name: ScriptedPolicy(p.name, w.map, seed, claims=ON,
                                          temperament=imposter if roles[p.name] == "imposter" else crewmate)
                   for p in w.cfg.players}, seed)
    labels = {e[F.EVENT_INDEX]: e.get(F.CLAIM_INTENT) for e in w.state.events if e.get(F.CLAIMS)}
    lies = [r for r in check_match(w.state.events, w.sights.lines)
            if r["kind"] == "fact" and (labels[r["i"]] or [None] * 20)[r["n"]] == "lie"]
    assert lies and [r for r in lies if r["verdict"] not in (FALSE, UNSUPPORTED)] == []


def test_the_speakers_default_movement_rules_are_the_worlds():
    """The speaker reads the walking speed and view distance from the observation; its fallbacks are
    GameConfig's defaults (claims may not import the world's config: docs/architecture.md)."""
    from mau.claims.speaker import DEFAULT_VIEW, DEFAULT_WALK_SPEED
    from mau.env.config import GameConfig, WorldConfig
    from mau.env.observation import observe
    from mau.env.sim import SimWorld
    from mau.schema import TICKS_PER_SECOND as TICKS_PER_S

    assert DEFAULT_WALK_SPEED == GameConfig().walk_speed and DEFAULT_VIEW == GameConfig().ego_view_distance
    w = SimWorld(WorldConfig(game=GameConfig(walk_speed=3.0, ego_view_distance=20.0)))
    w.reset(0)
    sp = ClaimSpeaker(w.state.players[0].name, w.map, 0, "cautious", ClaimsConfig(mode="structured"))
    sp.observe(observe(w, w.state.players[0].name, "privileged"))
    assert sp.walk == 3.0 / TICKS_PER_S and sp.view == 20.0
