"""An agent's structured observation: own state, what it sees, public knowledge, the meeting.

Two state modes (SPEC section 1): ``ego`` lists the players in view now (frustum, line of sight, 36-block
cap); ``privileged`` lists every active player within 96 blocks. Neither ever holds another player's hidden
role: roles appear only as the agent's own role, an imposter's teammates, and roles revealed by ejection.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mau import schema as F
from mau.env.state import DISCUSSION, VOTING

if TYPE_CHECKING:
    from mau.env.sim import SimWorld

STATE_MODES = ("ego", "privileged")


def _r(v: float) -> float:
    return round(v, 2)


def observe(world: "SimWorld", name: str, mode: str = "ego") -> F.Observation:
    if mode not in STATE_MODES:
        raise ValueError(f"state mode {mode!r}: use one of {STATE_MODES}")
    st, cfg, gmap, vision = world.state, world.cfg, world.map, world.vision
    me = st.player(name)
    place = gmap.place_name(me.x, me.z)
    obs: F.Observation = {
        "name": me.name, "color": me.color, "role": me.role, "alive": me.active, "state_mode": mode,
        "phase": st.phase, "step": st.step, "max_steps": cfg.max_steps, "tick": st.tick,
        "time_s": round(st.tick / 20, 2),
        "position": [_r(me.x), gmap.floor_y, _r(me.z)], "yaw_deg": round(math.degrees(me.yaw) % 360, 1),
        "room": place,
        "roster": [{"name": p.name, "color": p.color} for p in st.players],  # public: names and colours only
    }
    if me.is_imposter:
        obs["teammates"] = [p.name for p in st.players if p.is_imposter and p is not me]
        obs["kill_cooldown_ticks"] = me.kill_cooldown
    key = "fake_missions" if me.is_imposter else "missions"
    obs[key] = [{"station": s, "room": gmap.station_rooms[s], "position": [_r(c) for c in gmap.stations[s]],
                 "done": bool(done) and not me.is_imposter}
                for s, done in zip(me.missions, me.missions_done)]
    obs["holding_station"] = me.holding_station
    obs["holding_ticks"] = me.holding_ticks
    obs["mission_hold_ticks"] = cfg.mission_hold_ticks
    bx, bz = gmap.button
    obs["button_lock_ticks"] = world.rules.button_lock_left(st)
    obs["at_button"] = math.hypot(me.x - bx, me.z - bz) <= cfg.button_range

    seen, listed = [], []
    for p in st.players:
        if p is me or not p.active:
            continue
        d = math.hypot(p.x - me.x, p.z - me.z)
        in_view = me.active and vision.sees(me, p.x, p.z)
        entry = {"name": p.name, "color": p.color, "position": [_r(p.x), _r(p.z)], "distance": _r(d),
                 "room": gmap.place_name(p.x, p.z)}
        if in_view:
            seen.append(entry)
        if mode == "privileged" and d <= cfg.privileged_radius:
            listed.append({**entry, "in_view": in_view})
    obs["players_in_view"] = seen
    if mode == "privileged":
        obs["players"] = listed
    bodies = []
    for b in st.bodies:
        if me.active and vision.sees(me, b.x, b.z, 0.5):
            bodies.append({"victim": b.victim, "color": b.color, "position": [_r(b.x), _r(b.z)],
                           "distance": _r(math.hypot(b.x - me.x, b.z - me.z)), "room": b.room})
    obs["bodies_in_view"] = bodies
    obs["reportable_bodies"] = [b.victim for b in world.rules.bodies_in_range(st, me)
                                if b.victim in me.seen_bodies] if me.active else []
    if me.is_imposter and me.active:
        obs["in_kill_reach"] = [p.name for p in st.players if p.active and not p.is_imposter
                                and math.hypot(p.x - me.x, p.z - me.z) <= cfg.kill_reach]
    known_dead = list(st.public_dead) + [v for v in me.seen_bodies if v not in st.public_dead]
    obs["known_dead"] = known_dead
    obs["ejections"] = [{"name": e["name"], "role": e["role"]} for e in st.ejections]
    obs["witnessed_kills"] = [dict(w) for w in me.witnessed]
    last = world.last_results.get(name)
    run = world.runs.get(name)
    obs["current_action"] = run.action.to_dict() if run is not None and run.status == "running" else None
    obs["last_action_result"] = dict(last) if last else None
    m = st.meeting
    if m is not None and st.phase in (DISCUSSION, VOTING):
        obs["meeting"] = {
            "caller": m.caller, "reason": m.reason, "body": m.body, "round": m.round,
            "rounds": cfg.meeting_rounds, "order": list(m.order),
            "speaker": m.speaker if st.phase == DISCUSSION else None,
            "your_turn": st.phase == DISCUSSION and m.speaker == name,
            "voting": st.phase == VOTING, "transcript": [dict(t) for t in m.transcript],
            "alive_players": [p.name for p in st.players if p.active],
        }
    else:
        obs["meeting"] = None
    return obs
