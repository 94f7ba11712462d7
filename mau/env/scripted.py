"""A scripted player for both roles that plays sensibly from the observation alone (no hidden state).

Crewmates do their missions, report bodies they see, call a meeting when they saw a kill, say what they saw
and vote on it. Imposters fake missions, stalk, kill when only their target is in sight, leave the scene,
sometimes self-report, deflect accusations and vote a crewmate. Each player's choices draw on its own seeded
random stream, so a match is a pure function of its seed.

``ScriptedBrain`` answers one decision at a time, in the terms of ARIA's modules (report? kill? which
mission? what to say?); the harness's scripted expert (``mau.harness.backends.scripted``) answers model calls
with it. ``ScriptedPolicy`` composes the same decisions into one action per step, with no harness at all
(the fast path of ``mau play`` and ``mau bench env``).
"""

from __future__ import annotations

import random
import re
from typing import Any

from mau.env.actions import Action
from mau.env.map import GameMap
from mau.schema import NONE, SKIP

_MODE_OF = {"mission": "mission", "fake_mission": "mission", "goto": "explore", "follow": "explore", "flee": "explore"}


class ScriptedBrain:
    """One seat's scripted decisions. Call ``observe(obs)`` before a roam decision."""

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
        self.reported_bodies: set[str] = set()
        self.fake_index = 0
        self._meeting_tick = -1  # the clock stops during a meeting: its tick identifies it
        self._read = 0  # transcript lines of the current meeting already taken in
        self._reflected: dict[str, float] = {}

    # -- what the player knows -----------------------------------------------------------------------------
    def observe(self, obs: dict[str, Any]) -> None:
        """Learn from kills seen and from who stood near a body when it came into view."""
        for w in obs["witnessed_kills"]:
            if w["killer"] not in self.known_imposters:
                self.known_imposters.append(w["killer"])
                self.suspicion[w["killer"]] = 1.0
        if obs["role"] == "imposter":
            return
        for b in obs["bodies_in_view"]:
            if b["victim"] in self.handled_bodies:
                continue
            self.handled_bodies.add(b["victim"])
            near = [p for p in obs["players_in_view"]
                    if _dist(p["position"], b["position"]) < 8 and p["name"] not in self.known_imposters]
            for p in near:  # alone with a body is damning; in a crowd, less so
                self.suspicion[p["name"]] = self.suspicion.get(p["name"],
                                                               0.0) + (0.55 if len(near) == 1 else 0.35 / len(near))

    def live_known(self, obs: dict[str, Any]) -> list[str]:
        gone = {e["name"] for e in obs["ejections"]}
        return [k for k in self.known_imposters if k not in gone]

    def top_suspect(self, candidates: list[str], threshold: float = 0.3) -> str | None:
        ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in candidates), reverse=True)
        return ranked[0][1] if ranked and ranked[0][0] >= threshold else None

    # -- roam decisions (one per ARIA module) ---------------------------------------------------------------
    def surveillance(self, obs: dict[str, Any]) -> dict[str, Any]:
        seen = [p["name"] for p in obs["players_in_view"]]
        known = [k for k in self.live_known(obs) if k in seen]
        bodies = [b["victim"] for b in obs["bodies_in_view"]]
        if known:
            detail = f"{known[0]} is here; I saw {known[0]} kill."
        elif bodies:
            detail = f"The body of {bodies[0]} is here" + (f", with {', '.join(seen)} nearby." if seen else ".")
        else:
            detail = f"I see {', '.join(seen)}." if seen else "Nobody in sight."
        suspect = known[0] if known else (self.top_suspect(seen, 0.3) if bodies else None)
        return {"players_seen": seen, "detail": detail, "suspect": suspect or NONE}

    def emergency(self, obs: dict[str, Any]) -> bool:
        live = self.live_known(obs)
        if live and obs["button_lock_ticks"] == 0 and live[0] not in self.called_for:
            self.called_for.add(live[0])
            return True
        return False

    def report(self, obs: dict[str, Any], victim: str) -> bool:
        if obs["role"] != "imposter":
            return True
        if victim in self.reported_bodies:
            return False
        self.reported_bodies.add(victim)
        crew_seen = self._crew_seen(obs)
        return bool(crew_seen) and self.rng.random() < self.self_report_p

    def kill(self, obs: dict[str, Any]) -> tuple[str, str]:
        """KILL when exactly one crewmate is in sight and close; STALK sometimes; else DEFER."""
        crew = self._crew_seen(obs)
        if obs.get("kill_cooldown_ticks", 1) == 0 and len(crew) == 1 and crew[0]["distance"] <= self.kill_radius:
            return "KILL", crew[0]["name"]
        if crew and self.rng.random() < 0.3:
            return "STALK", self.rng.choice(crew)["name"]
        return "DEFER", crew[0]["name"] if crew else NONE

    def plan(self, obs: dict[str, Any]) -> tuple[str, str]:
        """Reactive planner: (mode, target) with mode in report | mission | explore | kill."""
        if obs["bodies_in_view"] and obs["role"] != "imposter":
            return "report", min(obs["bodies_in_view"], key=lambda b: b["distance"])["victim"]
        cur = obs["current_action"]
        if obs["role"] == "imposter":
            decision, target = self.kill(obs)
            if decision == "KILL":
                return "kill", target
            if cur and cur["kind"] in _MODE_OF:  # keep what is under way (a fake mission, a walk)
                return _MODE_OF[cur["kind"]], cur.get("target", NONE)
            if obs["fake_missions"] and self.rng.random() < 0.6:
                return "mission", NONE
            return "explore", target if decision == "STALK" else NONE
        if cur and cur["kind"] in _MODE_OF:  # a mission being held is never dropped for a whim
            return _MODE_OF[cur["kind"]], cur.get("target", NONE)
        todo = [m for m in obs["missions"] if not m["done"]]
        if todo and self.rng.random() >= self.explore_p:
            return "mission", NONE
        return "explore", NONE

    def strategy(self, obs: dict[str, Any]) -> dict[str, Any]:
        alive = [p["name"] for p in obs["players_in_view"]]
        if obs["role"] == "imposter":
            return {"strategy": "fake missions, kill only when one crewmate is alone with me, then leave",
                    "priority_target": alive[0] if alive else NONE}
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        top = self.top_suspect([n for n in self.suspicion if n not in gone], 0.3)
        return {"strategy": "finish my missions, report bodies, watch " + (top or "everyone"),
                "priority_target": top or NONE}

    def mission(self, obs: dict[str, Any]) -> int | None:
        if obs["role"] == "imposter":
            fakes = obs["fake_missions"]
            if not fakes:
                return None
            m = fakes[self.fake_index % len(fakes)]
            self.fake_index += 1
            return m["station"]
        todo = [m for m in obs["missions"] if not m["done"]]
        if not todo:
            return None
        here = obs["position"]
        return min(todo, key=lambda m: self.map.path_length(here[0], here[2], *m["position"]))["station"]

    def move(self, obs: dict[str, Any], target: str = NONE) -> tuple[str, str | None]:
        """(target_player or 'wander', room or None)."""
        if target != NONE and any(p["name"] == target for p in obs["players_in_view"]):
            return target, None
        return "wander", self.rng.choice(self.map.room_names)

    def far_room(self, obs: dict[str, Any]) -> str:
        x, z = obs["position"][0], obs["position"][2]
        return max(self.map.room_names, key=lambda r: self.map.path_length(x, z, *self.map.room_centers[r]))

    def _crew_seen(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        mates = set(obs.get("teammates", []))
        return [p for p in obs["players_in_view"] if p["name"] not in mates]

    # -- meetings ------------------------------------------------------------------------------------------
    def read_transcript(self, obs: dict[str, Any]) -> None:
        """Take in what others said: 'I saw X kill' weighs more than 'I suspect X'."""
        meeting = obs["meeting"]
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

    def speech(self, obs: dict[str, Any]) -> tuple[str, str]:
        """(what to say, '' to pass; who it casts suspicion on, or 'none')."""
        self.read_transcript(obs)
        meeting = obs["meeting"]
        room = obs["room"]
        alive = [n for n in meeting["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            crew = [n for n in alive if n not in obs.get("teammates", [])]
            if self._accused(meeting) and meeting["round"] <= 2 and crew:
                other = self.rng.choice(crew)
                return f"That is not true, I was in {room}. I suspect {other}.", other
            if meeting["round"] == 1:
                if crew and self.rng.random() < 0.5:
                    other = self.rng.choice(crew)
                    return f"I suspect {other}, they were acting strange.", other
                return f"I was doing missions near {room}. Nothing to report.", NONE
            return "", NONE
        known = [k for k in self.live_known(obs) if k in alive]
        if meeting["round"] == 1:
            if known:
                w = next(w for w in obs["witnessed_kills"] if w["killer"] == known[0])
                return f"I saw {known[0]} kill {w['victim']} in {w['room']}. Vote {known[0]}.", known[0]
            top = self.top_suspect(alive)
            if top:
                return f"I suspect {top}.", top
            return f"I was doing my missions near {room}. I have not seen anything suspicious.", NONE
        if self._accused(meeting) and meeting["round"] == 2:
            return "I am a crewmate, I was doing my missions.", NONE
        return "", NONE

    def vote(self, obs: dict[str, Any]) -> str:
        self.read_transcript(obs)
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            mates = set(obs.get("teammates", []))
            ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in alive and n not in mates), reverse=True)
            if ranked and ranked[0][0] > 0:
                return ranked[0][1]
            crew = [n for n in alive if n not in mates]
            return self.rng.choice(crew) if crew and self.rng.random() < 0.5 else SKIP
        return self.top_suspect(alive, 0.5) or SKIP

    def reflect(self, obs: dict[str, Any]) -> dict[str, Any]:
        """After a meeting: what changed in my suspicions since the last reflection."""
        updates = []
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        for name, s in sorted(self.suspicion.items()):
            if name in gone or name == self.name:
                continue
            delta = round(s - self._reflected.get(name, 0.0), 3)
            if delta:
                updates.append({"player": name, "delta": delta})
        self._reflected = dict(self.suspicion)
        top = self.top_suspect([n for n in self.suspicion if n not in gone], 0.0)
        last = obs["ejections"][-1] if obs["ejections"] else None
        insight = (f"{last['name']} was ejected and was a {last['role']}." if last else "Nobody has been ejected yet.")
        skill = ("Trust only what I saw myself." if obs["role"] != "imposter"
                 else "Accuse early so that suspicion spreads away from me.")
        return {"insights": insight, "most_suspicious": top or NONE, "suspicion_updates": updates,
                "skill_learned": skill}


class ScriptedPolicy(ScriptedBrain):
    """The brain's decisions as one action per step (no harness). ``act(obs)``: an Action, or None to keep
    the running one."""

    def act(self, obs: dict[str, Any]) -> Action | None:
        if not obs["alive"]:
            return None
        meeting = obs.get("meeting")
        if meeting is not None:
            if meeting["voting"]:
                return Action("vote", target=self.vote(obs))
            if meeting["your_turn"]:
                return Action("speak", text=self.speech(obs)[0])
            self.read_transcript(obs)
            return None
        self.observe(obs)
        if obs["role"] == "imposter":
            return self._imposter(obs)
        return self._crewmate(obs)

    def _crewmate(self, obs: dict[str, Any]) -> Action | None:
        current = obs["current_action"]
        mode, target = self.plan(obs)
        if mode == "report":
            if current and current.get("kind") == "report" and current.get("target") == target:
                return None  # already on the way
            return Action("report", target=target)
        live = self.live_known(obs)
        if live:
            if self.emergency(obs):
                return Action("button")
            close = [p for p in obs["players_in_view"] if p["name"] in live and p["distance"] < 8]
            if close:
                return Action("flee", target=close[0]["name"])
        if current is not None:
            return None
        if mode == "mission":
            return Action("mission", station=self.mission(obs))
        return Action("goto", target=self.move(obs)[1])

    def _imposter(self, obs: dict[str, Any]) -> Action | None:
        last = obs["last_action_result"] or {}
        if last.get("reason", "").startswith("killed"):
            return Action("goto", target=self.far_room(obs), narration="leave the body behind before anyone comes")
        if obs["bodies_in_view"]:
            victim = obs["bodies_in_view"][0]["victim"]
            if self.report(obs, victim):
                return Action("report", target=victim, narration="report it myself to look innocent")
        current = obs["current_action"]
        decision, target = self.kill(obs)
        if decision == "KILL":
            if current and current.get("kind") == "kill" and current.get("target") == target:
                return None
            return Action("kill", target=target, narration=f"{target} is alone with me; strike now")
        if current is not None and current.get("kind") != "kill":
            return None
        if decision == "STALK":
            return Action("follow", target=target, narration=f"stalk {target} until they are alone")
        station = self.mission(obs) if self.rng.random() < 0.6 else None
        if station is not None:
            return Action("fake_mission", station=station, ticks=self.rng.choice([200, 400, 800]),
                          narration=f"pretend to work at station {station}")
        return Action("goto", target=self.move(obs)[1], narration="wander to look for someone alone")


def _dist(a: list[float], b: list[float]) -> float:
    ax, az = (a[0], a[2]) if len(a) == 3 else a
    return ((ax - b[0]) ** 2 + (az - b[1]) ** 2) ** 0.5
