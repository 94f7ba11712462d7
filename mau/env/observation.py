"""An agent's structured observation: own state, what it sees, public knowledge, the meeting.

Two state modes (SPEC section 1): ``ego`` lists the players in view now (frustum, line of sight, 36-block
cap); ``privileged`` also lists every player at its last known position (observed within 96 blocks) and how
long ago that was. Neither ever holds another player's hidden role: roles appear only as the agent's own role,
an imposter's teammates, and roles revealed by ejection. Neither tells of a kill the agent did not see: deaths
become known by seeing the body or at the next meeting, and who killed whom only through the frames (unless
the ablation ``world.observation.witness_text`` is on).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Protocol

from mau import schema as F
from mau.env.actions import Action
from mau.env.state import DISCUSSION, VOTING, GameState, PlayerState
from mau.schema import IMPOSTER, TICKS_PER_SECOND


class ObservedWorld(Protocol):
    """What ``observe`` reads of a world (``SimWorld``, and the minecraft world built on it): a protocol, so
    that this module does not import the sim that calls it."""

    state: GameState
    map: Any
    vision: Any
    config: Any
    cfg: Any
    rules: Any
    runs: dict[str, Any]
    last_results: dict[str, Any]
    observation_frame: Any  # the last Frame (this module's; the world only keeps it)

    def privileged_sees(self, viewer: PlayerState, p: PlayerState) -> bool: ...

    def last_known(self, viewer: PlayerState) -> dict[str, list[float]]: ...

STATE_MODES = ("ego", "privileged")


def _r(v: float, scale: float = 100.0, digits: int = 2) -> float:
    """``round(v, digits)`` (``scale`` is 10 ** digits), the same float at two thirds of its cost for the
    values observations round (positions, distances, headings): round goes through v's exact decimal digits.
    For 0 < v < 1e6, y = v * scale is within 1e-8 of the exact v * scale, and f = y % 1.0 and y - f are exact;
    so while f is not within 1e-4 of a half, the integer nearest the exact v * scale is y - f, or one more
    above a half (never a tie, where round's half-even would decide), and that integer (a double exactly)
    divided by scale is the nearest float to the decimal, as round's conversion back gives. Anything else (a
    near half, zero, a negative or huge value, NaN) goes to round itself (tests/test_sim.py compares both)."""
    if 0.0 < v < 1e6:
        y = v * scale
        f = y % 1.0
        if not 0.4999 < f < 0.5001:
            return (y - f + (f > 0.5)) / scale
    return round(v, digits)


def _privileged_players(world: ObservedWorld, me: PlayerState, in_view: set[str]) -> list[dict[str, Any]]:
    """Every player not known dead to me nor ejected, at its last known position and how long ago that was
    (``world.observation.privileged``: sight, every player in line of sight within 96 blocks and the last
    sighting of the others; or the paper's radar through walls). With sight a player killed out of my sight is
    listed at my last sighting of it alive, ageing like any player out of sight, until I see its body or a
    meeting announces the death: no list tells of a death I did not perceive (docs/game.md)."""
    st, gmap = world.state, world.map
    radar = world.config.observation.privileged == "radar"
    out = []
    last_known = world.last_known(me)
    for p in st.players:
        if p is me or p.ejected or p.name in st.public_dead or (not radar and p.name in me.seen_bodies):
            continue
        if me.active and world.privileged_sees(me, p):
            x, z, tick = p.x, p.z, st.tick  # observed now (the radar: a dead player lies where it fell)
        elif p.name in last_known:
            x, z, tick = last_known[p.name]
        else:
            continue
        out.append(
            {
                "name": p.name, "color": p.color, "position": [_r(x), _r(z)],
                "distance": _r(math.hypot(x - me.x, z - me.z)), "room": gmap.place_name(x, z),
                "in_view": p.name in in_view, "seen_s_ago": round((st.tick - tick) / TICKS_PER_SECOND, 2),
            }
        )
    return out


@lru_cache(maxsize=8)
def _station_points(gmap: Any) -> list[tuple[float, ...]]:
    """Each station's position as observations write it (a map's stations never move)."""
    return [tuple(_r(c) for c in point) for point in gmap.stations]


@lru_cache(maxsize=8)
def _stations(gmap: Any) -> list[tuple[str, tuple[float, ...]]]:
    """Each station's room and position as observations write them."""
    return list(zip(gmap.station_rooms, _station_points(gmap)))


def _frame_key(players: list[PlayerState]) -> list[tuple[Any, ...]]:
    """Everything of the players that ``Frame`` reads: two equal keys give equal frames."""
    return [(p.name, p.color, p.x, p.z, p.yaw, p.alive, p.ejected) for p in players]


class Frame:
    """What the observations of one moment share, computed once: every observation of a step reads the same
    players (each agent's own observation still builds fresh containers from it).

    A pure function of ``key`` (``_frame_key``: every player's name, colour, position, yaw and life) and of
    the world's map and vision, which never change: it holds values only, never a ``PlayerState``, so an equal
    key after a reset, a restore or a test that moved a player by hand reuses it rightly, and any change to
    what it reads gives another key. The frame before it (``prev``) lends only values of equal key rows, and
    the running actions' dicts, which are keyed on the action itself."""

    __slots__ = ("key", "roster", "active", "at", "seen", "clock", "actions")

    def __init__(self, players: list[PlayerState], key: list[tuple[Any, ...]], gmap: Any, vision: Any,
                 prev: Frame | None = None):
        self.key = key
        # player -> (its running action, that action's to_dict): handed on from frame to frame, as an action
        # runs for many steps (see ``_action_dict``)
        self.actions: dict[str, tuple[Action, dict[str, Any]]] = {} if prev is None else prev.actions
        # (rules, tick, last meeting's end tick, the rules' button_lock_left then, time_s): values of the
        # moment that are not of the players, kept for the other observations of the moment (see ``_clock``)
        self.clock: tuple[Any, int, int | None, int, float] | None = None
        # public: names and colours only (the templates each observation copies)
        self.roster = tuple({"name": p.name, "color": p.color} for p in players)
        active = [p for p in players if p.alive and not p.ejected]  # PlayerState.active, read once
        self.active = tuple(p.name for p in active)
        # each player's x, z (rounded), yaw in degrees and place, as observations write them, read from the
        # key's rows (a pure function of x, z and yaw); a player whose row is the previous frame's, at the
        # same seat, has its entry there (players at a mission or waiting stand still for many steps)
        old = prev.key if prev is not None and len(prev.key) == len(key) else [None] * len(key)
        prev_at = prev.at if prev is not None else {}
        self.at: dict[str, tuple[float, float, float, str]] = {}
        at = self.at
        for row, was in zip(key, old):
            name, _, x, z, yaw, _, _ = row
            at[name] = prev_at[name] if row == was else (
                _r(x), _r(z), _r(math.degrees(yaw) % 360, 10.0, 1), gmap.place_name(x, z)
            )
        # each active player's players_in_view: (name, colour, x, z, distance, room) of those it sees, in seat
        # order (vision.sees(me, p.x, p.z), as the sight recorder found it). Built from the view's pairs, few
        # of the active players' n * (n - 1): each viewer's seen sorted by seat, a viewer who sees nobody left
        # out (observe reads ``seen.get(name, ())``)
        order = {p.name: i for i, p in enumerate(active)}
        mine: dict[str, list[str]] = {}
        for a, b in vision.view(active):
            if a != b and a in order and b in order:  # (the view's pairs are of these players; kept exact)
                mine.setdefault(a, []).append(b)
        rows = {row[0]: row for row in key}
        self.seen: dict[str, tuple[tuple[Any, ...], ...]] = {}
        for a, names in mine.items():
            names.sort(key=order.__getitem__)
            _, _, ax, az, *_ = rows[a]
            out = []
            for b in names:
                _, color, bx, bz, *_ = rows[b]
                bx_r, bz_r, _, room = at[b]
                out.append((b, color, bx_r, bz_r, _r(math.hypot(bx - ax, bz - az)), room))
            self.seen[a] = tuple(out)


def _frame(world: ObservedWorld) -> Frame:
    """The frame of the world's players now: the last one while nothing it reads changed (kept on the world,
    whose resets and restores it outlives)."""
    players = world.state.players
    key = _frame_key(players)
    frame = world.observation_frame
    if frame is None or frame.key != key:
        frame = world.observation_frame = Frame(players, key, world.map, world.vision, frame)
    return frame


def _action_dict(frame: Frame, name: str, action: Action) -> dict[str, Any]:
    """``action.to_dict()``, a fresh dict: a copy of the one kept for the player's running action (the same
    ``Action`` object: frozen, so its dict never changes). to_dict's values are the action's own (a tuple is
    its own copy) but for lists, which it copies: an action with a list is never kept."""
    memo = frame.actions.get(name)
    if memo is None or memo[0] is not action:
        out = action.to_dict()
        if any(isinstance(v, list) for v in out.values()):
            return out
        memo = frame.actions[name] = (action, out)
    return memo[1].copy()


def _clock(world: ObservedWorld, frame: Frame) -> tuple[int, float]:
    """``world.rules.button_lock_left(state)`` and the time in seconds (a float's round costs), asked once per
    moment: they read only the state's tick and last meeting's end (and the rules' own config), so the frame
    keeps both answers for those rules and values."""
    st, rules = world.state, world.rules
    memo = frame.clock
    if memo is None or memo[0] is not rules or memo[1] != st.tick or memo[2] != st.last_meeting_end_tick:
        memo = frame.clock = (rules, st.tick, st.last_meeting_end_tick, rules.button_lock_left(st),
                               round(st.tick / TICKS_PER_SECOND, 2))
    return memo[3], memo[4]


def _transcript(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A meeting's transcript, copied (claims too: an agent may change its observation, never the world's).
    Each line is copied in C (``dict.copy``); only lines with claims need a deeper copy."""
    lines = list(map(dict.copy, transcript))
    for line in lines:
        if F.CLAIMS in line:
            line[F.CLAIMS] = [dict(c, near=list(c["near"])) if "near" in c else dict(c)
                              for c in line[F.CLAIMS]]
    return lines


def observe(world: ObservedWorld, name: str, mode: str = "ego") -> F.Observation:
    if mode not in STATE_MODES:
        raise ValueError(f"state mode {mode!r}: use one of {STATE_MODES}")
    st, cfg, gmap, vision = world.state, world.cfg, world.map, world.vision
    me = st.player(name)
    frame = _frame(world)
    me_active, imposter = me.alive and not me.ejected, me.role == IMPOSTER  # (the properties, read inline)
    if me_active:
        me.sight = mode  # privileged sight also finds bodies around (the world's body sightings read it)
    x, z, yaw_deg, place = frame.at[name]
    button_lock, time_s = _clock(world, frame)
    obs: F.Observation = {
        "name": me.name, "color": me.color, "role": me.role, "alive": me_active, "state_mode": mode,
        "phase": st.phase, "step": st.step, "max_steps": cfg.max_steps, "tick": st.tick,
        "time_s": time_s,
        "position": [x, gmap.floor_y, z], "yaw_deg": yaw_deg, "room": place,
        "roster": list(map(dict.copy, frame.roster)),  # public: names and colours only
        "n_imposters": cfg.num_imposters,  # public: the rules say how many imposters there are
        "walk_speed": cfg.walk_speed, "view_distance": cfg.ego_view_distance,  # public: the rules of movement
    }
    stations = _stations(gmap)
    if imposter:
        obs["teammates"] = [p.name for p in st.players if p.role == IMPOSTER and p is not me]
        obs["kill_cooldown_ticks"] = me.kill_cooldown
        obs["fake_missions"] = [  # a fake mission is never done
            {"station": s, "room": stations[s][0], "position": [*stations[s][1]], "done": False}
            for s, _ in zip(me.missions, me.missions_done)
        ]
    else:
        obs["missions"] = [
            {"station": s, "room": stations[s][0], "position": [*stations[s][1]], "done": bool(done)}
            for s, done in zip(me.missions, me.missions_done)
        ]
    obs["holding_station"] = me.holding_station
    obs["holding_ticks"] = me.holding_ticks
    obs["mission_hold_ticks"] = cfg.mission_hold_ticks
    bx, bz = gmap.button
    obs["button_lock_ticks"] = button_lock
    obs["at_button"] = math.hypot(me.x - bx, me.z - bz) <= cfg.button_range

    seen = [{"name": n, "color": c, "position": [px, pz], "distance": d, "room": room}
            for n, c, px, pz, d, room in frame.seen.get(name, ())] if me_active else []
    obs["players_in_view"] = seen
    if mode == "privileged":
        obs["players"] = _privileged_players(world, me, {q["name"] for q in seen})
        obs["privileged"] = world.config.observation.privileged  # sight or radar: how to read the list
    around = mode == "privileged" and world.config.observation.privileged == "sight"
    bodies = []
    for b in st.bodies:
        if me_active and (vision.sees(me, b.x, b.z, 0.5)
                          or (around and vision.sees_around(me, b.x, b.z, cfg.privileged_radius))):
            bodies.append({"victim": b.victim, "color": b.color, "position": [_r(b.x), _r(b.z)],
                           "distance": _r(math.hypot(b.x - me.x, b.z - me.z)), "room": b.room})
    obs["bodies_in_view"] = bodies
    obs["reportable_bodies"] = [b.victim for b in world.rules.bodies_in_range(st, me)
                                if b.victim in me.seen_bodies] if me_active and st.bodies else []
    if imposter and me_active:
        # only the players it perceives (in view; in privileged mode its all-round list too): a crewmate
        # behind it within reach is not a sense it has (issue 43), though the kill rule would reach it
        mx, mz, reach, hypot = me.x, me.z, cfg.kill_reach, math.hypot
        perceived = {q["name"] for q in seen} | {q["name"] for q in obs.get("players") or ()}
        obs["in_kill_reach"] = [p.name for p in st.players if p.alive and not p.ejected and p.role != IMPOSTER
                                and p.name in perceived and hypot(p.x - mx, p.z - mz) <= reach]
    # (each list below built only when not empty: a comprehension costs a call even over nothing)
    known_dead = list(st.public_dead)
    if me.seen_bodies:
        known_dead += [v for v in me.seen_bodies if v not in st.public_dead]
    obs["known_dead"] = known_dead
    obs["ejections"] = [{"name": e["name"], "role": e["role"]} for e in st.ejections] if st.ejections else []
    # Every finished meeting as everyone saw it: who called it and why, each vote, the ejection.
    log = st.meeting_log
    obs["meetings_public"] = [dict(m, votes=dict(m["votes"])) for m in log] if log else []
    # Who killed whom is perceived through the frames only; in words only as a documented ablation.
    obs["witnessed_kills"] = [dict(w) for w in me.witnessed] if world.config.observation.witness_text else []
    last = world.last_results.get(name)
    run = world.runs.get(name)
    running = run is not None and run.status == "running"
    obs["current_action"] = _action_dict(frame, name, run.action) if running else None
    obs["last_action_result"] = dict(last) if last else None
    m = st.meeting
    if m is not None and st.phase in (DISCUSSION, VOTING):
        obs["meeting"] = {
            "caller": m.caller, "reason": m.reason, "body": m.body, "round": m.round,
            "rounds": cfg.meeting_rounds, "order": list(m.order),
            "speaker": m.speaker if st.phase == DISCUSSION else None,
            "your_turn": st.phase == DISCUSSION and m.speaker == name,
            "voting": st.phase == VOTING, "transcript": _transcript(m.transcript),
            "alive_players": list(frame.active),
        }
    else:
        obs["meeting"] = None
    return obs
