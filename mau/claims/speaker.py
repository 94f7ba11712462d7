"""The claims a scripted player makes, from its own perception only (docs/claims.md, "Scripted speakers").

It reads the observations the scripted brain gets (its own room at every step end, the players in its view and
their rooms, the bodies in its view, its finished missions; an imposter: the kills it made) and the kills its
frames showed. Its window is the last ``window_s`` game seconds before the meeting, never before the last
meeting's end.

- A **crewmate** tells the truth: the kills it saw (``saw_kill``), the bodies it found with who was in view in
  their room (``body``), its accusation (``accuse``), where it was (``at``: its last two runs of step ends in one
  place), the tasks it finished (``task``) and its last sighting of each living player (``saw``). With
  ``honest_error`` p, each fact is a mistake with chance p (a time 15-30 s off, or a wrong room), labelled
  ``mistake``.
- An **imposter** that did not kill in the window blends in: where it was, truthfully. One that killed
  fabricates an alibi for the whole window (``at`` in a room it was never in: its fake mission's room when free
  and it is cautious or a mission imposter, else a free room drawn at random; a mission imposter adds a false
  ``task``) and may vouch for its teammate (``with`` in that room, p 0.5 when cautious or mission, else 0.2, and
  ``vouch``). Every accusation it makes is backed by a false sighting of the accused (``saw``): where it saw
  that player itself, it names a room far from there, so the lie is known-false. Its lies are labelled ``lie``.

Draws come from the speaker's own seeded stream, so a brain's other choices are the same with claims on or off.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from mau.claims.config import ClaimsConfig
from mau.claims.grammar import ME
from mau.schema import INTENT_LIE, INTENT_MISTAKE

TICKS_PER_S = 20
SEGMENTS = 2  # own `at` runs told (the most recent)
VOUCH_P = {"cautious": 0.5, "mission": 0.5}  # false vouching for the teammate after a kill (others: VOUCH_P_ELSE)
VOUCH_P_ELSE = 0.2
FAR = 40.0  # blocks: a room this far from where I saw a player cannot have held it within 5 s


@dataclass
class Sample:
    """What I perceived at one step end."""

    tick: int
    room: str
    xz: tuple[float, float]  # my position
    seen: dict[str, tuple[str, float, float]]  # name -> (room, x, z) of the players in my view
    bodies: dict[str, str]  # victim -> room, of the bodies in my view
    done: frozenset[int] = frozenset()  # my missions done


@dataclass
class _Meeting:
    tick: int
    facts: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)  # my place claims, said again


class ClaimSpeaker:
    def __init__(self, name: str, game_map: Any, seed: int, temperament: str, config: ClaimsConfig):
        self.name = name
        self.map = game_map
        self.temperament = temperament
        self.cfg = config
        self.rng = random.Random(f"mau-claims-{seed}-{name}")
        self.samples: list[Sample] = []
        self.kills: list[tuple[int, str, str]] = []  # (tick, victim, room) of the kills I made
        self.kills_seen: list[dict[str, Any]] = []
        self.meetings: list[int] = []  # the ticks of the meetings I took part in
        self._meeting: _Meeting | None = None

    # -- taking things in ---------------------------------------------------------------------------------------
    def observe(self, obs: dict[str, Any]) -> None:
        if obs.get("meeting") is not None:
            self.note_meeting(obs["tick"])
            return
        if not obs["alive"] or (self.samples and self.samples[-1].tick == obs["tick"]):
            return
        seen = {p["name"]: (p["room"], float(p["position"][0]), float(p["position"][1]))
                for p in obs["players_in_view"]}
        bodies = {b["victim"]: b["room"] for b in obs["bodies_in_view"]}
        done = frozenset(m["station"] for m in obs.get("missions", []) if m["done"])
        xz = (float(obs["position"][0]), float(obs["position"][2]))
        self.samples.append(Sample(obs["tick"], obs["room"], xz, seen, bodies, done))
        last = obs.get("last_action_result") or {}
        reason = last.get("reason", "")
        if obs["role"] == "imposter" and reason.startswith("killed "):
            victim = reason.removeprefix("killed ").strip()
            if all(v != victim for _, v, _ in self.kills):
                self.kills.append((obs["tick"], victim, obs["room"]))

    def perceive(self, kills: list[dict[str, Any]]) -> None:
        for k in kills:
            if all((k["killer"], k["victim"]) != (s["killer"], s["victim"]) for s in self.kills_seen):
                self.kills_seen.append(dict(k))

    def note_meeting(self, tick: int) -> None:
        if not self.meetings or self.meetings[-1] != tick:
            self.meetings.append(tick)

    # -- the window -----------------------------------------------------------------------------------------------
    def _window(self, now: int) -> tuple[int, list[Sample]]:
        before = [t for t in self.meetings if t < now]
        last = before[-1] if before else -1
        start = max(last + 1, now - int(self.cfg.window_s * TICKS_PER_S), 0)
        return start, [s for s in self.samples if start <= s.tick <= now]

    def _segments(self, samples: list[Sample]) -> list[tuple[str, int, int]]:
        """Runs of consecutive step ends in one place: (place, first tick, last tick)."""
        runs: list[tuple[str, int, int]] = []
        for s in samples:
            if runs and runs[-1][0] == s.room:
                runs[-1] = (s.room, runs[-1][1], s.tick)
            else:
                runs.append((s.room, s.tick, s.tick))
        return runs

    # -- what I say -----------------------------------------------------------------------------------------------
    def said_room(self, obs: dict[str, Any]) -> str:
        """The room my speech names: my alibi's room (the one I claim), else where I was last."""
        facts = self._place_facts(obs)
        at = [c for c, _ in facts if c["k"] == "at"]
        if at:
            return at[-1]["room"]
        return self.samples[-1].room if self.samples else obs["room"]

    def claims(self, obs: dict[str, Any], accused: str | None) -> tuple[list[dict[str, Any]], list[str | None]]:
        """(claims, a private label per claim) for what I say now; ``accused``: whom my words accuse."""
        meeting = obs["meeting"]
        self.note_meeting(obs["tick"])
        out: list[tuple[dict[str, Any], str | None]] = []
        imposter = obs["role"] == "imposter"
        if meeting["round"] == 1 and not imposter:
            out += self._crew_round_one(obs, accused)
        else:
            out += self._place_facts(obs)
            if accused is not None:
                if imposter:
                    out += self._false_sighting(obs, accused)
                out.append(({"k": "accuse", "who": accused}, None))
            if imposter and meeting["round"] == 1:
                out += self._vouch(obs)
        out = out[: self.cfg.max_per_utterance]
        return [c for c, _ in out], [i for _, i in out]

    def _place_facts(self, obs: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
        """My place claims of this meeting (made once, said again when I defend myself)."""
        if self._meeting is None or self._meeting.tick != obs["tick"]:
            self._meeting = _Meeting(obs["tick"], self._where(obs))
        return list(self._meeting.facts)

    def _where(self, obs: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
        now = obs["tick"]
        start, samples = self._window(now)
        if obs["role"] == "imposter" and any(start <= t <= now for t, _, _ in self.kills):
            return self._alibi(obs, start, samples)
        out = []
        for room, a, b in self._segments(samples)[-SEGMENTS:]:
            out.append(self._mistake({"k": "at", "who": ME, "room": room, "from_s": a / TICKS_PER_S,
                                      "to_s": b / TICKS_PER_S}, obs))
        return out

    def _alibi(self, obs: dict[str, Any], start: int, samples: list[Sample]) -> list[tuple[dict[str, Any], str | None]]:
        been = {s.room for s in samples}
        free = [r for r in self.map.room_names if r not in been]
        fake = [m["room"] for m in obs.get("fake_missions", []) if m["room"] in free]
        if not free:
            return []
        if self.temperament in ("cautious", "mission") and fake:
            room = fake[0]
        else:
            far = [r for r in free if all(self._dist(s, r) >= FAR / 2 for s in samples)] or free
            room = self.rng.choice(sorted(far))
        a, b = start / TICKS_PER_S, obs["tick"] / TICKS_PER_S
        out: list[tuple[dict[str, Any], str | None]] = [({"k": "at", "who": ME, "room": room, "from_s": a,
                                                          "to_s": b}, INTENT_LIE)]
        if self.temperament == "mission" and obs.get("fake_missions"):
            station = obs["fake_missions"][0]["station"]
            out.append(({"k": "task", "who": ME, "station": station, "at_s": _quarter((a + b) / 2)}, INTENT_LIE))
        return out

    def _vouch(self, obs: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
        """After a kill: I was with my teammate in my alibi's room (a lie), and I vouch for it."""
        facts = self._place_facts(obs)
        lie = next((c for c, i in facts if c["k"] == "at" and i == INTENT_LIE), None)
        mates = [n for n in obs.get("teammates", []) if n in obs["meeting"]["alive_players"]]
        if lie is None or not mates or self.rng.random() >= VOUCH_P.get(self.temperament, VOUCH_P_ELSE):
            return []
        mate = mates[0]
        return [({"k": "with", "who": mate, "room": lie["room"], "from_s": lie["from_s"], "to_s": lie["to_s"]},
                 INTENT_LIE), ({"k": "vouch", "who": mate}, None)]

    def _false_sighting(self, obs: dict[str, Any], target: str) -> list[tuple[dict[str, Any], str | None]]:
        """A sighting of ``target`` that did not happen: where I saw it myself, a room far from there."""
        now = obs["tick"]
        start, samples = self._window(now)
        kill_rooms = [r for t, _, r in self.kills if start <= t <= now and r in self.map.room_names]
        mine = [s for s in samples if target in s.seen]
        if mine:
            s = mine[-1]
            room, x, z = s.seen[target]
            far = [r for r in self.map.room_names
                   if r != room and self.map.path_length(x, z, *self.map.room_centers[r]) >= FAR]
            pick = next((r for r in kill_rooms if r in far), None) or (self.rng.choice(sorted(far)) if far else None)
            if pick is not None:
                return [({"k": "saw", "who": target, "room": pick, "at_s": s.tick / TICKS_PER_S}, INTENT_LIE)]
        if not samples:
            return []
        # I never had it in view: a moment of mine, and a room too far from me for me to have seen it there.
        s = self.rng.choice(samples)
        far = [r for r in self.map.room_names if r != s.room and self._dist(s, r) >= FAR]
        if not far:
            return []
        pick = next((r for r in kill_rooms if r in far), None) or self.rng.choice(sorted(far))
        return [({"k": "saw", "who": target, "room": pick, "at_s": s.tick / TICKS_PER_S}, INTENT_LIE)]

    def _crew_round_one(self, obs: dict[str, Any], accused: str | None) -> list[tuple[dict[str, Any], str | None]]:
        now = obs["tick"]
        start, samples = self._window(now)
        alive = set(obs["meeting"]["alive_players"]) - {self.name}
        out: list[tuple[dict[str, Any], str | None]] = []
        for k in self.kills_seen:
            if start <= k["tick"] <= now:
                out.append(self._mistake({"k": "saw_kill", "who": k["killer"], "victim": k["victim"],
                                          "room": k["room"], "at_s": k["tick"] / TICKS_PER_S}, obs))
        told: set[str] = set()
        for s in samples:
            for victim, room in s.bodies.items():
                if victim in told:
                    continue
                told.add(victim)
                near = sorted(n for n, (r, _, _) in s.seen.items() if r == room and n != victim)
                out.append(self._mistake({"k": "body", "victim": victim, "room": room,
                                          "at_s": s.tick / TICKS_PER_S, "near": near}, obs))
        if accused is not None:
            out.append(({"k": "accuse", "who": accused}, None))
        out += self._place_facts(obs)
        first_done: dict[int, int] = {}
        before = self.samples[0].done if self.samples else frozenset()
        for s in self.samples:
            for st in s.done - before:
                first_done.setdefault(st, s.tick)
            before = s.done
        for st, t in sorted(first_done.items(), key=lambda kv: kv[1]):
            if start <= t <= now:
                out.append(self._mistake({"k": "task", "who": ME, "station": st, "at_s": t / TICKS_PER_S}, obs))
        last: dict[str, tuple[int, str]] = {}
        for s in samples:
            for n, (room, _, _) in s.seen.items():
                if n in alive:
                    last[n] = (s.tick, room)
        for n, (t, room) in sorted(last.items(), key=lambda kv: (-kv[1][0], kv[0])):
            out.append(self._mistake({"k": "saw", "who": n, "room": room, "at_s": t / TICKS_PER_S}, obs))
        return out

    # -- honest mistakes --------------------------------------------------------------------------------------------
    def _mistake(self, c: dict[str, Any], obs: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """A crewmate's claim, made wrong with chance ``honest_error``: a time 15-30 s off, or a wrong room."""
        p = self.cfg.honest_error
        if obs["role"] == "imposter" or p <= 0 or self.rng.random() >= p:
            return c, None
        c = dict(c)
        now = obs["tick"] / TICKS_PER_S
        if "room" in c and self.rng.random() < 0.5:
            c["room"] = self.rng.choice(sorted(r for r in self.map.room_names if r != c["room"]))
        else:
            shift = self.rng.uniform(15, 30) * self.rng.choice((-1, 1))
            for key in ("at_s", "from_s", "to_s"):
                if key in c:
                    c[key] = min(now, max(0.0, _quarter(c[key] + shift)))
        return c, INTENT_MISTAKE

    def _dist(self, s: Sample, room: str) -> float:
        """Walking distance from where I was at ``s`` to ``room``'s centre."""
        return self.map.path_length(*s.xz, *self.map.room_centers[room])


def _quarter(s: float) -> float:
    return round(s * 4) / 4
