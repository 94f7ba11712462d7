"""A scripted policy for both roles that plays sensibly from the observation alone (no hidden state).

Crewmates do their missions, report bodies they see, call a meeting when they saw a kill, say what they saw
and vote on it. Imposters fake missions, stalk, kill when only their target is in sight, leave the scene,
sometimes self-report, deflect accusations and vote a crewmate. Each player's choices draw on its own seeded
random stream, so a match is a pure function of its seed. The harness (``mau.harness``) reuses these
decisions as its scripted expert.
"""

from __future__ import annotations

import random
import re
from typing import Any

from mau.env.actions import Action
from mau.env.map import GameMap
from mau.env.rules import SKIP


class ScriptedPolicy:
    """One seat's scripted player. ``act(obs)`` returns an Action, or None to keep the running one."""

    def __init__(self, name: str, game_map: GameMap, seed: int):
        self.name = name
        self.map = game_map
        self.rng = random.Random(f"mau-scripted-{seed}-{name}")
        # Per-match temperament, so matches differ: how often a crewmate wanders off its missions, how bold
        # an imposter is about witnesses.
        self.explore_p = self.rng.choice([0.0, 0.1, 0.25, 0.5, 0.97])
        self.kill_radius = self.rng.choice([3.0, 6.0, 10.0, 16.0])
        self.self_report_p = self.rng.choice([0.0, 0.3, 0.6])
        self.suspicion: dict[str, float] = {}
        self.known_imposters: list[str] = []
        self.called_for: set[str] = set()
        self.handled_bodies: set[str] = set()
        self.fake_index = 0
        self._meeting_tick = -1  # the clock stops during a meeting: its tick identifies it
        self._read = 0  # transcript lines of the current meeting already taken in

    # -- entry ---------------------------------------------------------------------------------------------
    def act(self, obs: dict[str, Any]) -> Action | None:
        if not obs["alive"]:
            return None
        meeting = obs.get("meeting")
        if meeting is not None:
            self._read_transcript(obs, meeting)
            if meeting["voting"]:
                return Action("vote", target=self._vote(obs))
            if meeting["your_turn"]:
                return Action("speak", text=self._speech(obs, meeting))
            return None
        if obs["role"] == "imposter":
            return self._imposter(obs)
        return self._crewmate(obs)

    # -- crewmate ------------------------------------------------------------------------------------------
    def _crewmate(self, obs: dict[str, Any]) -> Action | None:
        for w in obs["witnessed_kills"]:
            if w["killer"] not in self.known_imposters:
                self.known_imposters.append(w["killer"])
                self.suspicion[w["killer"]] = 1.0
        gone = {e["name"] for e in obs["ejections"]}
        live_known = [k for k in self.known_imposters if k not in gone]
        for b in obs["bodies_in_view"]:
            if b["victim"] not in self.handled_bodies:
                self.handled_bodies.add(b["victim"])
                near = [p for p in obs["players_in_view"]
                        if _dist(p["position"], b["position"]) < 8 and p["name"] not in self.known_imposters]
                for p in near:
                    self.suspicion[p["name"]] = self.suspicion.get(p["name"], 0.0) + 0.35 / len(near)
        current = obs["current_action"]
        if obs["bodies_in_view"]:
            victim = min(obs["bodies_in_view"], key=lambda b: b["distance"])["victim"]
            if current and current.get("kind") == "report" and current.get("target") == victim:
                return None  # already on the way
            return Action("report", target=victim)
        if live_known:
            if obs["button_lock_ticks"] == 0 and live_known[0] not in self.called_for:
                self.called_for.add(live_known[0])
                return Action("button")
            close = [p for p in obs["players_in_view"] if p["name"] in live_known and p["distance"] < 8]
            if close:
                return Action("flee", target=close[0]["name"])
        if current is not None:
            return None
        todo = [m for m in obs["missions"] if not m["done"]]
        if todo and self.rng.random() >= self.explore_p:
            here = obs["position"]
            nearest = min(todo, key=lambda m: self.map.path_length(here[0], here[2], *m["position"]))
            return Action("mission", station=nearest["station"])
        return Action("goto", target=self.rng.choice(self.map.room_names))

    # -- imposter ------------------------------------------------------------------------------------------
    def _imposter(self, obs: dict[str, Any]) -> Action | None:
        mates = set(obs.get("teammates", []))
        crew_seen = [p for p in obs["players_in_view"] if p["name"] not in mates]
        last = obs["last_action_result"] or {}
        if last.get("reason", "").startswith("killed"):
            far = max(self.map.room_names, key=lambda r: self.map.path_length(
                obs["position"][0], obs["position"][2], *self.map.room_centers[r]))
            return Action("goto", target=far, narration="leave the body behind before anyone comes")
        if obs["bodies_in_view"]:
            b = obs["bodies_in_view"][0]
            if b["victim"] not in self.handled_bodies:
                self.handled_bodies.add(b["victim"])
                if crew_seen and self.rng.random() < self.self_report_p:
                    return Action("report", target=b["victim"], narration="report it myself to look innocent")
        current = obs["current_action"]
        if obs["kill_cooldown_ticks"] == 0 and len(crew_seen) == 1 and crew_seen[0]["distance"] <= self.kill_radius:
            target = crew_seen[0]["name"]
            if not (current and current.get("kind") == "kill" and current.get("target") == target):
                return Action("kill", target=target, narration=f"{target} is alone with me; strike now")
            return None
        if current is not None and current.get("kind") != "kill":
            return None
        if crew_seen and self.rng.random() < 0.3:
            target = self.rng.choice(crew_seen)["name"]
            return Action("follow", target=target, narration=f"stalk {target} until they are alone")
        fakes = obs["fake_missions"]
        if fakes and self.rng.random() < 0.6:
            m = fakes[self.fake_index % len(fakes)]
            self.fake_index += 1
            return Action("fake_mission", station=m["station"], ticks=self.rng.choice([200, 400, 800]),
                          narration=f"pretend to work at station {m['station']} in {m['room']}")
        return Action("goto", target=self.rng.choice(self.map.room_names), narration="wander to look for someone alone")

    # -- meetings ------------------------------------------------------------------------------------------
    def _read_transcript(self, obs: dict[str, Any], meeting: dict[str, Any]) -> None:
        """Take in what others said: 'I saw X kill' weighs more than 'I suspect X'."""
        if obs["tick"] != self._meeting_tick:
            self._meeting_tick, self._read = obs["tick"], 0
        mates = set(obs.get("teammates", []))
        for t in meeting["transcript"][self._read:]:
            if t["speaker"] == self.name:
                continue
            for name in meeting["alive_players"]:
                if name == self.name or name == t["speaker"] or name in mates:
                    continue
                if re.search(rf"\bsaw {re.escape(name)} kill\b", t["text"]):
                    self.suspicion[name] = self.suspicion.get(name, 0.0) + 0.6
                elif re.search(rf"\bsuspect {re.escape(name)}\b", t["text"]):
                    self.suspicion[name] = self.suspicion.get(name, 0.0) + 0.2
        self._read = len(meeting["transcript"])

    def _accused(self, meeting: dict[str, Any]) -> bool:
        return any(t["speaker"] != self.name and re.search(rf"\b(suspect|saw) {re.escape(self.name)}\b", t["text"])
                   for t in meeting["transcript"])

    def _speech(self, obs: dict[str, Any], meeting: dict[str, Any]) -> str:
        room = obs["room"]
        alive = [n for n in meeting["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            crew = [n for n in alive if n not in obs.get("teammates", [])]
            if self._accused(meeting) and meeting["round"] <= 2:
                other = self.rng.choice(crew) if crew else None
                return f"That is not true, I was in {room}. I suspect {other}." if other else f"I was in {room}."
            if meeting["round"] == 1:
                if crew and self.rng.random() < 0.5:
                    return f"I suspect {self.rng.choice(crew)}, they were acting strange."
                return f"I was doing missions near {room}. Nothing to report."
            return ""
        gone = {e["name"] for e in obs["ejections"]}
        known = [k for k in self.known_imposters if k in alive and k not in gone]
        if meeting["round"] == 1:
            if known:
                w = next(w for w in obs["witnessed_kills"] if w["killer"] == known[0])
                return f"I saw {known[0]} kill {w['victim']} in {w['room']}. Vote {known[0]}."
            top = self._top_suspect(alive)
            if top:
                return f"I suspect {top}, they were near a body."
            return f"I was doing my missions near {room}. I have not seen anything suspicious."
        if self._accused(meeting) and meeting["round"] == 2:
            return "I am a crewmate, I was doing my missions."
        return ""

    def _top_suspect(self, alive: list[str], threshold: float = 0.3) -> str | None:
        ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in alive), reverse=True)
        return ranked[0][1] if ranked and ranked[0][0] >= threshold else None

    def _vote(self, obs: dict[str, Any]) -> str:
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            mates = set(obs.get("teammates", []))
            ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in alive and n not in mates), reverse=True)
            if ranked and ranked[0][0] > 0:
                return ranked[0][1]
            crew = [n for n in alive if n not in mates]
            return self.rng.choice(crew) if crew and self.rng.random() < 0.5 else SKIP
        return self._top_suspect(alive, 0.5) or SKIP


def _dist(a: list[float], b: list[float]) -> float:
    ax, az = (a[0], a[2]) if len(a) == 3 else a
    return ((ax - b[0]) ** 2 + (az - b[1]) ** 2) ** 0.5
