"""A scripted player for both roles that plays sensibly from the observation alone (no hidden state).

Crewmates do their missions, report bodies they see, call a meeting on strong evidence, say what they saw and
vote on it. Their evidence is only what they could perceive: a player they saw next to a victim just before
its body came into view, a player standing near a body, a claim in a meeting that contradicts where they saw
the speaker, and what others say. Imposters fake missions, stalk, kill when their target is alone enough,
leave the scene, sometimes self-report, lie about where they were, deflect accusations and vote a crewmate.
Each player's choices draw on its own seeded random stream, so a match is a pure function of its seed.

Temperaments (``TEMPERAMENTS``; docs/game.md, "The scripted policy") make different experts, not one policy
with different seeds: ``expert`` (a per-match random mix, the default), ``cautious`` (crewmate: votes and
accuses only on strong evidence; imposter: patient, kills only a lone target in reach), ``accusatory``
(crewmate: acts on weak evidence and hearsay; imposter: aggressive, kills with a witness around, self-reports,
accuses) and ``mission`` (crewmate: missions first, never wanders, never presses the button; imposter: covers
with fake missions). The scripted expert's model name picks one (``scripted-cautious``; others: ``expert``).

``ScriptedBrain`` answers one decision at a time, in the terms of ARIA's modules (report? kill? which
mission? what to say?); the harness's scripted expert (``mau.harness.backends.scripted``) answers model calls
with it. ``ScriptedPolicy`` composes the same decisions into one action per step, with no harness at all
(the fast path of ``mau play`` and ``mau bench env``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from mau.env.actions import Action
from mau.env.map import GameMap
from mau.schema import NONE, SKIP


@dataclass(frozen=True)
class Temperament:
    """How a scripted player weighs evidence and risk. None: drawn per match from the seed (``expert``)."""

    explore_p: float | None  # crewmate: chance to wander instead of the next mission
    vote_threshold: float  # crewmate: suspicion needed to vote for someone (else skip)
    accuse_threshold: float  # crewmate: suspicion needed to name someone in a meeting
    emergency_at: float  # crewmate: suspicion that makes it press the button (> 1: never)
    hearsay: float  # weight of what others say in meetings
    kill_radius: float | None  # imposter: farthest target it goes for
    kill_max_crew: int  # imposter: crewmates in view it still kills with (1: only a lone target)
    stalk_p: float  # imposter: chance to stalk a crewmate in view
    self_report_p: float | None  # imposter: chance to report a body it comes upon
    accuse_p: float  # imposter: chance to accuse a crewmate in the first round
    fake_mission_p: float  # imposter: chance to fake a mission rather than wander


TEMPERAMENTS: dict[str, Temperament] = {
    "expert": Temperament(None, 0.5, 0.3, 0.8, 1.0, None, 1, 0.3, None, 0.5, 0.6),
    "cautious": Temperament(0.5, 0.8, 0.8, 0.8, 0.5, 6.0, 1, 0.6, 0.0, 0.2, 0.6),
    "accusatory": Temperament(0.75, 0.2, 0.2, 0.5, 1.5, 16.0, 2, 0.2, 0.6, 0.9, 0.4),
    "mission": Temperament(0.1, 0.6, 0.6, 9.0, 0.5, 10.0, 1, 0.3, 0.3, 0.3, 0.8),
}


def temperament_of(model_name: str) -> str:
    """The temperament a scripted model name asks for: the first known one named in it, else ``expert``."""
    low = model_name.lower()
    return next((t for t in TEMPERAMENTS if t in low), "expert")


_MODE_OF = {"mission": "mission", "fake_mission": "mission", "goto": "explore", "follow": "explore", "flee": "explore"}


class ScriptedBrain:
    """One seat's scripted decisions. Call ``observe(obs)`` before a roam decision."""

    def __init__(self, name: str, game_map: GameMap, seed: int, temperament: str = "expert"):
        self.name = name
        self.map = game_map
        self.rng = random.Random(f"mau-scripted-{seed}-{name}")
        self.t = TEMPERAMENTS[temperament]
        # The expert's per-match draws (so its matches differ); the other temperaments are fixed.
        self.explore_p = self.rng.choice([0.0, 0.1, 0.25, 0.5, 0.97])
        self.kill_radius = self.rng.choice([3.0, 6.0, 10.0, 16.0])
        self.self_report_p = self.rng.choice([0.0, 0.3, 0.6])
        if self.t.explore_p is not None:
            self.explore_p = self.t.explore_p
        if self.t.kill_radius is not None:
            self.kill_radius = self.t.kill_radius
        if self.t.self_report_p is not None:
            self.self_report_p = self.t.self_report_p
        self.suspicion: dict[str, float] = {}
        self.evidence: dict[str, str] = {}  # what I perceived about a player, said in meetings
        self.prev_view: dict[str, list[float]] = {}  # players in view at my last roam observation
        self.last_sighting: dict[str, tuple[int, str]] = {}  # player -> (step, room) where I last saw it
        self.last_room = ""
        self.killed_since_meeting = False
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
        """Learn from what I perceive: a player next to a victim just before its body came into view, players
        standing near a body, where I saw whom (and, only in the witness_text ablation, kills told in words)."""
        for w in obs["witnessed_kills"]:
            if w["killer"] not in self.known_imposters:
                self.known_imposters.append(w["killer"])
                self.suspicion[w["killer"]] = 1.0
                self.evidence[w["killer"]] = f"I saw {w['killer']} kill {w['victim']} in {w['room']}."
        self.last_room = obs["room"]
        if obs["role"] == "imposter" and (obs.get("last_action_result") or {}).get("reason", "").startswith("killed"):
            self.killed_since_meeting = True
        view = {p["name"]: p["position"] for p in obs["players_in_view"]}
        for p in obs["players_in_view"]:
            self.last_sighting[p["name"]] = (obs["step"], p["room"])
        if obs["role"] != "imposter":
            for b in obs["bodies_in_view"]:
                if b["victim"] in self.handled_bodies:
                    continue
                self.handled_bodies.add(b["victim"])
                self._judge_body(b, view)
        self.prev_view = view

    def _judge_body(self, b: dict[str, Any], view: dict[str, list[float]]) -> None:
        victim = b["victim"]
        # Seen beside the victim at my last look, and now the victim lies dead: the kill happened in view.
        if victim in self.prev_view:
            vpos = self.prev_view[victim]
            beside = [n for n, pos in self.prev_view.items() if n != victim and _dist(pos, vpos) < 4.0]
            for n in beside:
                w = 0.9 if len(beside) == 1 else 0.5
                self.suspicion[n] = self.suspicion.get(n, 0.0) + w
                self.evidence.setdefault(
                    n, f"I saw {n} right next to {victim} just before {victim} died in {b['room']}.")
        near = [n for n, pos in view.items() if _dist(pos, b["position"]) < 8]
        for n in near:  # alone with a body is damning; in a crowd, less so
            self.suspicion[n] = self.suspicion.get(n, 0.0) + (0.55 if len(near) == 1 else 0.35 / len(near))
            self.evidence.setdefault(n, f"I saw {n} standing near the body of {victim} in {b['room']}.")

    def live_known(self, obs: dict[str, Any]) -> list[str]:
        """Players I have strong perceived evidence against (suspicion at my emergency level), alive."""
        gone = {e["name"] for e in obs["ejections"]} | set(obs["known_dead"])
        strong = [n for n, s in sorted(self.suspicion.items(), key=lambda kv: (-kv[1], kv[0]))
                  if s >= self.t.emergency_at]
        return [k for k in dict.fromkeys(self.known_imposters + strong) if k not in gone and k != self.name]

    def top_suspect(self, candidates: list[str], threshold: float = 0.3) -> str | None:
        ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in candidates), reverse=True)
        return ranked[0][1] if ranked and ranked[0][0] >= threshold else None

    # -- roam decisions (one per ARIA module) ---------------------------------------------------------------
    def surveillance(self, obs: dict[str, Any]) -> dict[str, Any]:
        seen = [p["name"] for p in obs["players_in_view"]]
        known = [k for k in self.live_known(obs) if k in seen]
        bodies = [b["victim"] for b in obs["bodies_in_view"]]
        if known:
            detail = f"{known[0]} is here; " + self.evidence.get(known[0], f"I suspect {known[0]}.")
        elif bodies:
            detail = f"The body of {bodies[0]} is here" + (f", with {', '.join(seen)} nearby." if seen else ".")
        else:
            detail = f"I see {', '.join(seen)}." if seen else "Nobody in sight."
        suspect = known[0] if known else (self.top_suspect(seen, 0.3) if bodies else None)
        return {"players_seen": seen, "detail": detail, "suspect": suspect or NONE}

    def emergency(self, obs: dict[str, Any]) -> bool:
        if self.t.emergency_at > 1:
            return False
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
        """KILL when few enough crewmates are in sight and the nearest is close; STALK sometimes; else DEFER."""
        crew = sorted(self._crew_seen(obs), key=lambda p: (p["distance"], p["name"]))
        if (obs.get("kill_cooldown_ticks", 1) == 0 and 1 <= len(crew) <= self.t.kill_max_crew
                and crew[0]["distance"] <= self.kill_radius):
            return "KILL", crew[0]["name"]
        if crew and self.rng.random() < self.t.stalk_p:
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
            if obs["fake_missions"] and self.rng.random() < self.t.fake_mission_p:
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

    # -- meetings ---------------------------------------------------------------------------------------------
    def _new_meeting(self, obs: dict[str, Any]) -> bool:
        if obs["tick"] != self._meeting_tick:
            self._meeting_tick, self._read = obs["tick"], 0
            return True
        return False

    def read_transcript(self, obs: dict[str, Any]) -> None:
        """Take in what others said: 'I saw X ...' weighs more than 'I suspect X'; a claim to have been somewhere
        I did not see the speaker at my last look before the meeting is itself suspicious."""
        meeting = obs["meeting"]
        self._new_meeting(obs)
        mates = set(obs.get("teammates", []))
        h = self.t.hearsay
        for t in meeting["transcript"][self._read:]:
            speaker = t["speaker"]
            if speaker == self.name:
                continue
            for name in meeting["alive_players"]:
                if name == self.name or name == speaker or name in mates:
                    continue
                if re.search(rf"\bsaw {re.escape(name)} (?:kill|right next to)\b", t["text"]):
                    self.suspicion[name] = self.suspicion.get(name, 0.0) + 0.6 * h
                elif re.search(rf"\b(?:suspect|saw) {re.escape(name)}\b", t["text"]):
                    self.suspicion[name] = self.suspicion.get(name, 0.0) + 0.2 * h
            claim = re.search(r"\bI was (?:doing (?:my )?missions )?(?:in|near) ([A-Z][A-Za-z0-9 ]*?)[.,]", t["text"])
            seen = self.last_sighting.get(speaker)
            if (obs["role"] != "imposter" and claim and seen and seen[0] >= obs["step"] - 1
                    and claim.group(1) in self.map.room_names and claim.group(1) != seen[1]):
                self.suspicion[speaker] = self.suspicion.get(speaker, 0.0) + 0.4
                self.evidence.setdefault(speaker, f"{speaker} says they were in {claim.group(1)}, "
                                                  f"but I saw {speaker} in {seen[1]}.")
        self._read = len(meeting["transcript"])

    def _accused(self, meeting: dict[str, Any]) -> bool:
        return any(t["speaker"] != self.name and re.search(rf"\b(suspect|saw) {re.escape(self.name)}\b", t["text"])
                   for t in meeting["transcript"])

    def _where_i_was(self, obs: dict[str, Any]) -> str:
        """The room I say I was in: the truth, unless I am an imposter who killed since the last meeting."""
        room = self.last_room or obs["room"]
        if obs["role"] == "imposter" and self.killed_since_meeting and obs.get("fake_missions"):
            room = obs["fake_missions"][0]["room"]
        return room

    def speech(self, obs: dict[str, Any]) -> tuple[str, str]:
        """(what to say, '' to pass; who it casts suspicion on, or 'none')."""
        self.read_transcript(obs)
        meeting = obs["meeting"]
        room = self._where_i_was(obs)
        alive = [n for n in meeting["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            crew = [n for n in alive if n not in obs.get("teammates", [])]
            if self._accused(meeting) and meeting["round"] <= 2 and crew:
                other = self.rng.choice(crew)
                return f"That is not true, I was in {room}. I suspect {other}.", other
            if meeting["round"] == 1:
                if crew and self.rng.random() < self.t.accuse_p:
                    other = self.rng.choice(crew)
                    return f"I suspect {other}, they were acting strange. I was in {room}.", other
                return f"I was doing missions near {room}. Nothing to report.", NONE
            return "", NONE
        if meeting["round"] == 1:
            top = self.top_suspect(alive, self.t.accuse_threshold)
            if top:
                said = self.evidence.get(top, f"I suspect {top}.")
                return f"{said} Vote {top}." if self.suspicion.get(top, 0) >= self.t.vote_threshold else said, top
            return f"I was doing my missions near {room}. I have not seen anything suspicious.", NONE
        if self._accused(meeting) and meeting["round"] == 2:
            return f"I am a crewmate, I was in {room} doing my missions.", NONE
        return "", NONE

    def vote(self, obs: dict[str, Any]) -> str:
        self.read_transcript(obs)
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        if obs["role"] == "imposter":
            self.killed_since_meeting = False
            mates = set(obs.get("teammates", []))
            ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in alive and n not in mates), reverse=True)
            if ranked and ranked[0][0] > 0:
                return ranked[0][1]
            crew = [n for n in alive if n not in mates]
            return self.rng.choice(crew) if crew and self.rng.random() < 0.5 else SKIP
        return self.top_suspect(alive, self.t.vote_threshold) or SKIP

    def _changes(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        """What changed in my suspicions since I last passed them on (BELIEF or REFLECT)."""
        updates = []
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        for name, s in sorted(self.suspicion.items()):
            if name in gone or name == self.name:
                continue
            delta = round(s - self._reflected.get(name, 0.0), 3)
            if delta:
                updates.append({"player": name, "delta": delta})
        self._reflected = dict(self.suspicion)
        return updates

    def belief(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        """BELIEF after an utterance or a surveillance flag: take in what was said, pass on the changes."""
        if obs.get("meeting"):
            self.read_transcript(obs)
        return self._changes(obs)

    def reflect(self, obs: dict[str, Any]) -> dict[str, Any]:
        """After a meeting: what changed in my suspicions since the last update."""
        updates = self._changes(obs)
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
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
