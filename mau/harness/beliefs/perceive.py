"""What each crewmate perceived, as ideal-observer evidence, computed from the world and its event log.

The tracker reads the ground-truth event log only through the sim's own view rules (``mau.env.vision``): a kill
counts for the players the engine found had it in view (``witnesses``), a body for the player who saw it
(``body_seen``), and who stood near the body or at a station is checked with line of sight from the
crewmate's position at the next decision point. Public events (announced deaths, votes, ejections) count
for everybody. It never reads prompt text, so it does not depend on what the prompts say.

Call ``update(world)`` at every decision point (roam step, meeting turn, vote): holds of stations are
watched at each step end. Positions are those of the step end after an event (a step is 100 ticks, 5 s),
an approximation documented in docs/evaluation.md.
"""

from __future__ import annotations

import math
from typing import Any

from mau import schema as F
from mau.env.state import ENDED, ROAM
from mau.harness.beliefs.config import ObserverConfig
from mau.harness.beliefs.observer import DEAD, EJECTED, FULL_HOLD, NEAR_BODY, VOTE, WITNESSED_KILL, Evidence


class Perception:
    """Per crewmate, the evidence it has; public evidence is shared by all."""

    def __init__(self, world, cfg: ObserverConfig):
        self.world, self.cfg = world, cfg
        st = world.state
        self.crew = [p.name for p in st.players if not p.is_imposter]
        self.roster = [p.name for p in st.players]
        self.evidence: dict[str, list[Evidence]] = {n: [] for n in self.crew}
        self._i = 0  # events processed
        self._bodies: dict[str, tuple[float, float]] = {}
        self._holds: dict[str, dict[str, list[int]]] = {}  # holder -> observer -> [seen, step ends]
        self._watched_step = -1

    def _add(self, who: str, ev: Evidence) -> None:
        if who not in self.evidence or ev in self.evidence[who]:
            return
        if ev.kind == DEAD and any(x.kind == DEAD and x.player == ev.player for x in self.evidence[who]):
            return  # a death is learned once (the first way it became known)
        self.evidence[who].append(ev)

    def _public(self, ev: Evidence) -> None:
        for n in self.crew:
            self._add(n, ev)

    def _sees(self, observer: str, name: str) -> bool:
        st = self.world.state
        o, p = st.player(observer), st.player(name)
        return o.active and p.active and self.world.vision.sees(o, p.x, p.z)

    def update(self) -> None:
        """Take in the events since the last call; watch the holds once per roam step."""
        st = self.world.state
        events = st.events
        if self._i > len(events):  # the world was restored to an earlier snapshot (mau fork): start over
            self.evidence = {n: [] for n in self.crew}
            self._i, self._bodies, self._holds, self._watched_step = 0, {}, {}, -1
        for e in events[self._i:]:
            self._event(e)
        self._i = len(events)
        if st.phase in (ROAM, ENDED) and st.step != self._watched_step:
            self._watched_step = st.step
            for holder, obs in self._holds.items():
                for o in self.crew:
                    if o != holder:
                        c = obs.setdefault(o, [0, 0])
                        c[0] += self._sees(o, holder)
                        c[1] += 1

    def _event(self, e: dict[str, Any]) -> None:
        t, tick = e[F.TYPE], e[F.TICK]
        cfg = self.cfg
        if t == F.EV_KILL:
            self._bodies[e["victim"]] = (e["x"], e["z"])
            for w in e.get("witnesses", []):
                self._add(w, Evidence(WITNESSED_KILL, player=e["killer"], tick=tick))
                self._add(w, Evidence(DEAD, player=e["victim"], tick=tick))
        elif t == F.EV_BODY_SEEN:
            me, body = e["player"], e["body"]
            if me not in self.evidence:
                return
            self._add(me, Evidence(DEAD, player=body, tick=tick))
            bx, bz = self._bodies.get(body, (None, None))
            if bx is None:
                return
            st = self.world.state
            near = sorted(p.name for p in st.players if p.name != me and p.active
                          and math.hypot(p.x - bx, p.z - bz) <= cfg.near_body_radius and self._sees(me, p.name))
            if near:
                self._add(me, Evidence(NEAR_BODY, players=near, tick=tick))
        elif t == F.EV_MEETING_START:
            for d in e.get("announced_dead", []):
                self._public(Evidence(DEAD, player=d, tick=tick))
            self._holds.clear()  # a meeting interrupts every hold
        elif t == F.EV_VOTE:
            if e["target"] != "skip" and not e.get("missing"):
                for n in self.crew:
                    if n != e["voter"]:
                        self._add(n, Evidence(VOTE, player=e["voter"], target=e["target"], tick=tick))
        elif t == F.EV_EJECTION:
            if e.get("ejected"):
                self._public(Evidence(EJECTED, player=e["ejected"], role=e["role"], tick=tick))
        elif t in (F.EV_MISSION_START, F.EV_FAKE_MISSION_START):
            self._holds[e["player"]] = {}
        elif t == F.EV_MISSION_CANCEL:
            self._holds.pop(e["player"], None)
        elif t in (F.EV_MISSION_COMPLETE, F.EV_FAKE_MISSION_END):
            obs = self._holds.pop(e["player"], None)
            if obs is None:
                return
            if t == F.EV_FAKE_MISSION_END and e.get("held_ticks", 0) < self.world.cfg.mission_hold_ticks:
                return
            for o, (seen, ends) in obs.items():
                seen_now = self._sees(o, e["player"])
                if seen_now and (seen + 1) >= cfg.hold_seen_fraction * (ends + 1):
                    self._add(o, Evidence(FULL_HOLD, player=e["player"], tick=tick))
