"""The claims a scripted player makes, from its own perception only (docs/claims.md, "Scripted speakers").

It reads the observations the scripted brain gets (its own room at every step end, the players in its view and
their rooms, the bodies in its view, its finished missions; an imposter: the kills it made) and the kills its
frames showed. Its window is the last ``window_s`` game seconds before the meeting, never before the last
meeting's end.

- A **crewmate** tells the truth: the kills it saw (``saw_kill``), the bodies it found with who was in view in
  their room (``body``), its accusation (``accuse``), where it was (``at``: its last two runs of step ends in
  one place), the tasks it finished (``task``) and its last sighting of each living player (``saw``). With
  ``honest_error`` p, each fact is a mistake with chance p (a time 15-30 s off, or a wrong room), labelled
  ``mistake``.
- An **imposter** that did not kill in the window blends in: where it was, truthfully. One that killed
  fabricates an alibi for the whole window (``at`` in a room it was never in: its fake mission's room when
  free and it is cautious or a mission imposter, else a free room drawn at random; a mission imposter adds a
  false ``task``) and may vouch for its teammate (``with`` in that room, p 0.5 when cautious or mission, else
  0.2, and ``vouch``). Every accusation it makes is backed by a false sighting of the accused (``saw``):
  where it saw that player itself, it names a room far from there, so the lie is known-false. Its lies are
  labelled ``lie``.

Before a fabrication is labelled ``lie`` it is checked against what the speaker knows of the truth, by the
checker's own rules (``mau.claims.check``: +/- 5 s, the short-window and majority rules): where it was at its
step ends and when meetings were called, where it saw the subject (in privileged state: where it was
observed), how far a player walks in the time between, and where a line of sight into a room can come from
(``Reach``). A drawn room that it may have been in (an alibi), or in which it may have had the subject in
view (a sighting), is not claimed: another false one is, drawn from a side stream, or another moment (a
sighting), or no such claim at all.

Draws come from the speaker's own seeded stream, so a brain's other choices are the same with claims on or
off.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from mau.claims.check import MAJORITY, SHORT, TOL
from mau.claims.config import ClaimsConfig
from mau.claims.grammar import ME
from mau.schema import IMPOSTER, INTENT_LIE, INTENT_MISTAKE, TICKS_PER_SECOND

SEGMENTS = 2  # own `at` runs told (the most recent)
# false vouching for the teammate after a kill (others: VOUCH_P_ELSE)
VOUCH_P = {"cautious": 0.5, "mission": 0.5}
VOUCH_P_ELSE = 0.2
FAR = 40.0  # blocks: a room this far from where I saw a player cannot have held it within 5 s
# The world's walking speed (blocks/s) and view distance (blocks), as the observation gives them
# (``walk_speed``, ``view_distance``); these defaults, GameConfig's own (a test holds them equal), serve an
# observation without them (hand-built ones in tests).
DEFAULT_WALK_SPEED = 4.317
DEFAULT_VIEW = 36.0
SLACK = 2.0  # blocks: rounded positions, and the sub-step (5 ticks) the sights hold a state for


@dataclass
class Sample:
    """What I perceived at one step end."""

    tick: int
    room: str
    xz: tuple[float, float]  # my position
    seen: dict[str, tuple[str, float, float]]  # name -> (room, x, z) of the players in my view
    bodies: dict[str, str]  # victim -> room, of the bodies in my view
    done: frozenset[int] = frozenset()  # my missions done
    # the meetings I had noted when I took it in: its roam (the table after a meeting has its tick)
    part: int = 0
    where: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (x, z) of the players whose
    # place I knew then (in view, or privileged state's players observed now): never claimed, only a bound on
    # lies


@dataclass
class _Meeting:
    tick: int
    # my place claims, said again
    facts: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)


class ClaimSpeaker:
    def __init__(self, name: str, game_map: Any, seed: int, temperament: str, config: ClaimsConfig,
                 truthful: bool = False):
        """``truthful``: an imposter that never says a false thing (the upper rungs of the imposter ladder,
        docs/game.md): it claims as a crewmate does, minus what would give it away (its own kills: the place
        and moment of each, its victims' bodies; its teammate's kills it saw)."""
        self.truthful = truthful
        self.name = name
        self.map = game_map
        self.temperament = temperament
        self.cfg = config
        self.rng = random.Random(f"mau-claims-{seed}-{name}")
        # another false pick, when the drawn one is not
        self.alt = random.Random(f"mau-claims-alt-{seed}-{name}")
        self.samples: list[Sample] = []
        self.kills: list[tuple[int, str, str]] = []  # (tick, victim, room) of the kills I made
        self.kills_seen: list[dict[str, Any]] = []
        self.meetings: list[int] = []  # the ticks of the meetings I took part in
        self.meeting_xz: dict[int, tuple[float, float]] = {}  # where I was when each meeting was called
        self._meeting: _Meeting | None = None
        self.walk = DEFAULT_WALK_SPEED / TICKS_PER_SECOND  # blocks a player walks in a tick, at most
        self.view = DEFAULT_VIEW  # blocks: nobody farther is in view (sights.jsonl)

    # -- taking things in ------------------------------------------------------------------------------------
    def observe(self, obs: dict[str, Any]) -> None:
        if "walk_speed" in obs:  # the world's own, where the observation says
            self.walk = float(obs["walk_speed"]) / TICKS_PER_SECOND
        if "view_distance" in obs:
            self.view = float(obs["view_distance"])
        if obs.get("meeting") is not None:
            self.note_meeting(obs["tick"])
            if obs.get("position") is not None:
                self.meeting_xz.setdefault(
                    obs["tick"], (float(obs["position"][0]), float(obs["position"][2]))
                )
            return
        if not obs["alive"] or (self.samples and self.samples[-1].tick == obs["tick"]):
            return
        seen = {p["name"]: (p["room"], float(p["position"][0]), float(p["position"][1]))
                for p in obs["players_in_view"]}
        bodies = {b["victim"]: b["room"] for b in obs["bodies_in_view"]}
        done = frozenset(m["station"] for m in obs.get("missions", []) if m["done"])
        xz = (float(obs["position"][0]), float(obs["position"][2]))
        where = {p["name"]: (float(p["position"][0]), float(p["position"][1])) for p in obs.get("players", [])
                 if p.get("seen_s_ago") == 0}
        where.update({n: (x, z) for n, (_, x, z) in seen.items()})
        self.samples.append(
            Sample(obs["tick"], obs["room"], xz, seen, bodies, done, len(self.meetings), where)
        )
        last = obs.get("last_action_result") or {}
        reason = last.get("reason", "")
        if obs["role"] == IMPOSTER and reason.startswith("killed "):
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

    # -- the window ------------------------------------------------------------------------------------------
    def _window(self, now: int) -> tuple[int, list[Sample]]:
        before = [t for t in self.meetings if t < now]
        last = before[-1] if before else -1
        start = max(last + 1, now - int(self.cfg.window_s * TICKS_PER_SECOND), 0)
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

    # -- what I say ------------------------------------------------------------------------------------------
    def said_room(self, obs: dict[str, Any]) -> str:
        """The room my speech names: my alibi's room (the one I claim), else where I was last."""
        facts = self._place_facts(obs)
        at = [c for c, _ in facts if c["k"] == "at"]
        if at:
            return at[-1]["room"]
        return self.samples[-1].room if self.samples else obs["room"]

    def claims(self, obs: dict[str, Any], accused: str | None,
               vouched: str | None = None) -> tuple[list[dict[str, Any]], list[str | None]]:
        """(claims, a private label per claim) for what I say now; ``accused``: whom my words accuse;
        ``vouched``: whom they vouch for (a ``vouch``, and a true ``with`` when I was with that player:
        either role)."""
        meeting = obs["meeting"]
        self.note_meeting(obs["tick"])
        out: list[tuple[dict[str, Any], str | None]] = []
        imposter = obs["role"] == IMPOSTER and not self.truthful  # a liar (the habits)
        if meeting["round"] == 1 and not imposter:
            out += self._crew_round_one(obs, accused)
            if obs["role"] == IMPOSTER:
                out = self._keep_hidden(obs, out)
        else:
            out += self._place_facts(obs)
            if accused is not None:
                if imposter:
                    out += self._false_sighting(obs, accused)
                out.append(({"k": "accuse", "who": accused}, None))
            if imposter and meeting["round"] == 1:
                out += self._bodies(obs, set(v for _, v, _ in self.kills)) + self._vouch(obs)
        if vouched is not None and not any(c["k"] == "vouch" for c, _ in out):
            out += self._with(obs, vouched) + [({"k": "vouch", "who": vouched}, None)]
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
        killed = [t for t, _, _ in self.kills if start <= t <= now]
        if obs["role"] == IMPOSTER and killed and not self.truthful:
            return self._alibi(obs, start, samples)
        segments = self._segments(samples)
        # true, but never a stretch around my kill: only the places away from it
        if obs["role"] == IMPOSTER:
            segments = [
                (r, a, b) for r, a, b in segments if all(t < a - 2 * TOL or t > b + 2 * TOL for t in killed)
            ]
        out = []
        for room, a, b in segments[-SEGMENTS:]:
            out.append(self._mistake({"k": "at", "who": ME, "room": room, "from_s": a / TICKS_PER_SECOND,
                                      "to_s": b / TICKS_PER_SECOND}, obs))
        return out

    def _alibi(
        self, obs: dict[str, Any], start: int, samples: list[Sample]
    ) -> list[tuple[dict[str, Any], str | None]]:
        been = {s.room for s in samples}
        free = [r for r in self.map.room_names if r not in been]
        fake = [m["room"] for m in obs.get("fake_missions", []) if m["room"] in free]
        if not free:
            return []
        far = [r for r in free if all(self._dist(s, r) >= FAR / 2 for s in samples)] or free
        if self.temperament in ("cautious", "mission") and fake:
            room = fake[0]
        else:
            room = self.rng.choice(sorted(far))
        a, b = start / TICKS_PER_SECOND, obs["tick"] / TICKS_PER_SECOND
        # A lie must be false by the checker's rules: not a room I may have been in within its tolerance
        # (between two step ends, or in the seconds before the last meeting).
        reach = Reach(self, obs["tick"])

        def false(r: str) -> bool:
            return not reach.could_be_at(r, start, obs["tick"])

        room = self._recheck(room, [], far, false) or self._recheck(None, [], free, false)
        out: list[tuple[dict[str, Any], str | None]] = []
        if room is not None:
            out.append(({"k": "at", "who": ME, "room": room, "from_s": a, "to_s": b}, INTENT_LIE))
        if self.temperament == "mission" and obs.get("fake_missions"):
            station = obs["fake_missions"][0]["station"]
            out.append(
                ({"k": "task", "who": ME, "station": station, "at_s": _quarter((a + b) / 2)}, INTENT_LIE)
            )
        return out

    def _keep_hidden(self, obs: dict[str, Any], out: list[tuple[dict[str, Any], str | None]]
                     ) -> list[tuple[dict[str, Any], str | None]]:
        """A truthful imposter's crewmate claims without what gives it away: kills by my teammates, the
        bodies of my victims, sightings in the seconds around my kills; and no mistakes (they are
        labelled)."""
        mates = set(obs.get("teammates", []))
        victims = {v for _, v, _ in self.kills}
        near_kill = [t for t, _, _ in self.kills]

        def hidden(c: dict[str, Any]) -> bool:
            t = c.get("at_s")
            around = t is not None and any(abs(t * TICKS_PER_SECOND - k) <= 6 * TOL for k in near_kill)
            return (
                (c["k"] == "saw_kill" and c.get("who") in mates)
                or (c["k"] == "body" and c["victim"] in victims)
                or (c["k"] in ("saw", "body") and around)
            )
        return [(c, None) for c, i in out if not hidden(c) and i is None]

    def _with(self, obs: dict[str, Any], who: str) -> list[tuple[dict[str, Any], str | None]]:
        """A true ``with``: my latest run of step ends with ``who`` in view in my room, if any."""
        _, samples = self._window(obs["tick"])
        run: list[Sample] = []
        for s in reversed(samples):
            if who in s.seen and s.seen[who][0] == s.room and (not run or s.room == run[-1].room):
                run.append(s)
            elif run:
                break
        if not run:
            return []
        return [({"k": "with", "who": who, "room": run[0].room, "from_s": run[-1].tick / TICKS_PER_SECOND,
                  "to_s": run[0].tick / TICKS_PER_SECOND}, None)]

    def _bodies(self, obs: dict[str, Any], skip: set[str]) -> list[tuple[dict[str, Any], str | None]]:
        """The bodies I found in the window, with who was in view in their room (true), but those of
        ``skip``."""
        start, samples = self._window(obs["tick"])
        out: list[tuple[dict[str, Any], str | None]] = []
        told: set[str] = set(skip)
        for s in samples:
            for victim, room in s.bodies.items():
                if victim in told:
                    continue
                told.add(victim)
                near = sorted(n for n, (r, _, _) in s.seen.items() if r == room and n != victim)
                out.append(({"k": "body", "victim": victim, "room": room, "at_s": s.tick / TICKS_PER_SECOND,
                             "near": near}, None))
        return out

    def _vouch(self, obs: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
        """After a kill: I was with my teammate in my alibi's room (a lie), and I vouch for it."""
        facts = self._place_facts(obs)
        lie = next((c for c, i in facts if c["k"] == "at" and i == INTENT_LIE), None)
        mates = [n for n in obs.get("teammates", []) if n in obs["meeting"]["alive_players"]]
        if lie is None or not mates or self.rng.random() >= VOUCH_P.get(self.temperament, VOUCH_P_ELSE):
            return []
        mate = mates[0]
        return [
            (
                {"k": "with", "who": mate, "room": lie["room"], "from_s": lie["from_s"], "to_s": lie["to_s"]},
                INTENT_LIE,
            ),
            ({"k": "vouch", "who": mate}, None),
        ]

    def _false_sighting(self, obs: dict[str, Any], target: str) -> list[tuple[dict[str, Any], str | None]]:
        """A sighting of ``target`` that did not happen: where I saw it myself, a room far from there; else a
        moment of mine and a room far from me. Never one in which I may have had it in view then
        (``Reach``)."""
        now = obs["tick"]
        start, samples = self._window(now)
        kill_rooms = [r for t, _, r in self.kills if start <= t <= now and r in self.map.room_names]
        reach = Reach(self, now, target)

        def pick(s: Sample, first: str | None, far: list[str]) -> list[tuple[dict[str, Any], str | None]]:
            """``first``, or another room of ``far``, in which by the checker's rules I did not see
            ``target`` at ``s`` (within +/- 5 s of it): the claim, or none."""
            room = self._recheck(first, [r for r in kill_rooms if r in far], far,
                                 lambda r: not reach.could_see(r, s.tick - TOL, s.tick + TOL))
            if room is None:
                return []
            return [
                ({"k": "saw", "who": target, "room": room, "at_s": s.tick / TICKS_PER_SECOND}, INTENT_LIE)
            ]

        mine = [s for s in samples if target in s.seen]
        if mine:
            s = mine[-1]
            room, x, z = s.seen[target]
            far = [r for r in self.map.room_names
                   if r != room and self.map.path_length(x, z, *self.map.room_centers[r]) >= FAR]
            first = next((r for r in kill_rooms if r in far), None) or (
                self.rng.choice(sorted(far)) if far else None
            )
            out = pick(s, first, far) if first is not None else []
            if out:
                return out
        if not samples:
            return []
        # I never had it in view: a moment of mine, and a room too far from me for me to have seen it there.
        k = self.rng.randrange(len(samples))  # the draw of rng.choice(samples)
        s = samples[k]
        far = [r for r in self.map.room_names if r != s.room and self._dist(s, r) >= FAR]
        if not far:
            return []
        out = pick(s, next((r for r in kill_rooms if r in far), None) or self.rng.choice(sorted(far)), far)
        others = samples[:k] + samples[k + 1:]
        if not out and others:  # no false room at that moment: another moment
            self.alt.shuffle(others)
            for s in others:
                out = pick(
                    s, None, [r for r in self.map.room_names if r != s.room and self._dist(s, r) >= FAR]
                )
                if out:
                    break
        return out

    def _recheck(self, first: str | None, prefer: list[str], rest: list[str],
                 false: Callable[[str], bool]) -> str | None:
        """A fabricated room that ``false`` holds false by the checker's rules: ``first`` (the drawn one)
        when it is, else the first of ``prefer`` that is, else one of ``rest`` that is, drawn from the side
        stream (the main stream's draws stay as they were); None when none is."""
        if first is not None and false(first):
            return first
        for r in prefer:
            if false(r):
                return r
        ok = [r for r in sorted(set(rest)) if false(r)]
        return self.alt.choice(ok) if ok else None

    def _crew_round_one(
        self, obs: dict[str, Any], accused: str | None
    ) -> list[tuple[dict[str, Any], str | None]]:
        now = obs["tick"]
        start, samples = self._window(now)
        alive = set(obs["meeting"]["alive_players"]) - {self.name}
        out: list[tuple[dict[str, Any], str | None]] = []
        for k in self.kills_seen:
            if start <= k["tick"] <= now:
                out.append(self._mistake({"k": "saw_kill", "who": k["killer"], "victim": k["victim"],
                                          "room": k["room"], "at_s": k["tick"] / TICKS_PER_SECOND}, obs))
        out += [self._mistake(c, obs) for c, _ in self._bodies(obs, set())]
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
                out.append(
                    self._mistake({"k": "task", "who": ME, "station": st, "at_s": t / TICKS_PER_SECOND}, obs)
                )
        last: dict[str, tuple[int, str]] = {}
        for s in samples:
            for n, (room, _, _) in s.seen.items():
                if n in alive:
                    last[n] = (s.tick, room)
        for n, (t, room) in sorted(last.items(), key=lambda kv: (-kv[1][0], kv[0])):
            out.append(self._mistake({"k": "saw", "who": n, "room": room, "at_s": t / TICKS_PER_SECOND}, obs))
        return out

    # -- honest mistakes -------------------------------------------------------------------------------------
    def _mistake(self, c: dict[str, Any], obs: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """A crewmate's claim, made wrong with chance ``honest_error``: a time 15-30 s off, or a wrong
        room."""
        p = self.cfg.honest_error
        if obs["role"] == IMPOSTER or p <= 0 or self.rng.random() >= p:
            return c, None
        c = dict(c)
        now = obs["tick"] / TICKS_PER_SECOND
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


class Reach:
    """What the speaker knows of the truth, as bounds the checker's rules can be held to (a fabrication is
    labelled a lie only when it is false by them).

    Its anchors are the known places of a player: its own at every step end and when each meeting was called,
    and those of ``subject`` at the step ends it had it in view (or, in privileged state, observed it now).
    Between anchors a player walks at most ``walk`` blocks a tick. A meeting is a wall: the table after it is
    another place, so an anchor bounds only the ticks of its own roam. Nobody farther than ``view`` is in
    view, and a line of sight into a room from outside passes its doorways (``_Floor``). Every bound holds of
    the truth: "could" may be
    wrong, "could not" never is (on the world's walking speed and view distance, from the observation)."""

    def __init__(self, speaker: ClaimSpeaker, now: int, subject: str | None = None):
        self.now = now
        self.meetings = sorted(t for t in speaker.meetings if t < now)
        self.floor = _floor(speaker.map, speaker.view)
        self.walk, self.view = speaker.walk, speaker.view
        # A step end after a meeting has the meeting's tick, but the table's place (the sights hold the world
        # as called at that tick): a sample's roam is the one it was taken in, not the one its tick falls in.
        mine = [(s.part, s.tick, *s.xz) for s in speaker.samples]
        mine += [(self._part(t), t, *xz) for t, xz in speaker.meeting_xz.items() if t < now]
        self.me = self._by_part(mine)
        self.them = self._by_part([(s.part, s.tick, *s.where[subject]) for s in speaker.samples
                                   if subject is not None and subject in s.where])

    def _part(self, tick: int) -> int:
        """Which roam ``tick`` is in: the meetings called before it (a meeting's own tick is the world as
        called)."""
        return bisect.bisect_left(self.meetings, tick)

    @staticmethod
    def _by_part(anchors: list[tuple[int, int, float, float]]) -> dict[int, list[tuple[int, float, float]]]:
        out: dict[int, list[tuple[int, float, float]]] = {}
        for part, *a in sorted(set(anchors)):
            out.setdefault(part, []).append((a[0], a[1], a[2]))
        return out

    def _near(
        self, anchors: dict[int, list[tuple[int, float, float]]], tick: int
    ) -> list[tuple[float, float, float]]:
        """(x, z, how far the player may have walked from there) of the anchors nearest in time before and
        after ``tick`` in its roam: at ``tick`` it was within that distance of each."""
        near = anchors.get(self._part(tick), [])
        i = bisect.bisect_left(near, (tick,))
        return [(x, z, self.walk * abs(tick - t) + SLACK) for t, x, z in near[max(i - 1, 0): i + 1]]

    def _out(self, anchors: dict[int, list[tuple[int, float, float]]], room: str, tick: int) -> bool:
        """Whether the player was not in ``room`` at ``tick``."""
        return any(_gap(self.floor.rects[room], x, z) > r for x, z, r in self._near(anchors, tick))

    def _blind(self, room: str, tick: int) -> bool:
        """Whether I could not see into ``room`` at ``tick``: out of it, and farther than ``view`` from each
        of its doorways or on no floor cell with a line of sight into it."""
        near = self._near(self.me, tick)
        if not near or not self._out(self.me, room, tick):
            return False
        if any(all(_gap(door, x, z) > self.view + r for door in self.floor.doors[room]) for x, z, r in near):
            return True
        cells = self.floor.cells[room]  # the centres of the cells that may see into it
        may = np.ones(len(cells), dtype=bool)
        for x, z, r in near:
            may &= np.hypot(cells[:, 0] - x, cells[:, 1] - z) <= r + HALF_CELL
        return not may.any()

    def _ticks(self, t0: int, t1: int) -> range:
        """The ticks of the checker's window [t0, t1], never past the meeting."""
        return range(max(t0, 0), min(t1, self.now) + 1)

    def could_be_at(self, room: str, f: int, t: int) -> bool:
        """Whether ``at`` me in ``room`` from tick ``f`` to ``t`` may be TRUE (the checker's
        ``_place_claim``)."""
        if t - f < SHORT:
            return any(not self._out(self.me, room, k) for k in self._ticks(f - TOL, t + TOL))
        could = sum(not self._out(self.me, room, k) for k in self._ticks(f, t))
        return could / (t + 1 - f) >= MAJORITY

    def could_see(self, room: str, t0: int, t1: int) -> bool:
        """Whether I may have had the subject in view in ``room`` at some tick of [t0, t1] (``saw`` TRUE):
        unless, at every tick, the subject was not in the room or I could not see into it."""
        return any(
            not self._out(self.them, room, k) and not self._blind(room, k) for k in self._ticks(t0, t1)
        )


# -- the map, as the bounds need it --------------------------------------------------------------------------
# x0, x1, z0, z1 in continuous coordinates (a doorway: x0 = x1 or z0 = z1)
Box = tuple[float, float, float, float]
HALF_CELL = math.sqrt(0.5)  # from a point to the centre of its cell, at most
DOOR_EPS = 0.05  # blocks: doorways are taken this much longer at both ends (a line through a corner)


def _gap(box: Box, x: float, z: float) -> float:
    """The distance from (x, z) to the nearest point of ``box``."""
    x0, x1, z0, z1 = box
    return math.hypot(max(x0 - x, 0.0, x - x1), max(z0 - z, 0.0, z - z1))


def _box_gap(a: Box, b: Box) -> float:
    return math.hypot(max(a[0] - b[1], 0.0, b[0] - a[1]), max(a[2] - b[3], 0.0, b[2] - a[3]))


def _shared(a: Box, b: Box) -> Box | None:
    """The edge two rectangles share (positive length), as a degenerate box."""
    ax0, ax1, az0, az1 = a
    bx0, bx1, bz0, bz1 = b
    if ax1 == bx0 or bx1 == ax0:
        lo, hi = max(az0, bz0), min(az1, bz1)
        if hi > lo:
            x = ax1 if ax1 == bx0 else ax0
            return (x, x, lo, hi)
    if az1 == bz0 or bz1 == az0:
        lo, hi = max(ax0, bx0), min(ax1, bx1)
        if hi > lo:
            z = az1 if az1 == bz0 else az0
            return (lo, hi, z, z)
    return None


Seg = tuple[tuple[float, float], tuple[float, float]]


def _segments(doors: list[Box]) -> list[Seg]:
    return [
        ((x0 - DOOR_EPS, z0), (x1 + DOOR_EPS, z1)) if z0 == z1 else ((x0, z0 - DOOR_EPS), (x1, z1 + DOOR_EPS))
        for x0, x1, z0, z1 in doors
    ]


def _crosses(px: Any, pz: Any, qx: Any, qz: Any, segs: list[Seg]) -> Any:
    """Whether the line through p and q crosses every segment (closed); numbers or numpy arrays alike."""
    dx, dz = qx - px, qz - pz
    ok = (dx != 0) | (dz != 0)
    for (ax, az), (bx, bz) in segs:
        ok = ok & ((dx * (az - pz) - dz * (ax - px)) * (dx * (bz - pz) - dz * (bx - px)) <= 1e-9)
    return ok


def _stabbed(doors: list[Box]) -> bool:
    """Whether one straight line crosses every door. When one does, one through two of their ends does too."""
    segs = _segments(doors)
    ends = [e for seg in segs for e in seg]
    return len(segs) < 2 or any(bool(_crosses(*p, *q, segs)) for p, q in itertools.combinations(ends, 2))


def _cells_in_sight(box: Box, doors: list[Box], view: float) -> np.ndarray:
    """The cells of a region (a mask over its blocks, x by z) that a straight line through every door of
    ``doors`` may cross, the first door within ``view``: a line that crosses a cell crosses one of its
    diagonals, and a line that crosses the doors and a diagonal can be turned until it passes two of their
    ends (both doors', a door's and a corner, or the diagonal's own)."""
    x0, x1, z0, z1 = (int(v) for v in box)
    cx, cz = np.meshgrid(np.arange(x0, x1, dtype=float), np.arange(z0, z1, dtype=float), indexing="ij")
    corners = [(cx + a, cz + b) for a, b in ((0, 0), (1, 0), (1, 1), (0, 1))]
    segs = _segments(doors)
    ends = [e for seg in segs for e in seg]
    hit = np.zeros(cx.shape, dtype=bool)
    for (px, pz), (qx, qz) in itertools.combinations(ends, 2):  # through two door ends: the cells it crosses
        if bool(_crosses(px, pz, qx, qz, segs)):
            side = [(qx - px) * (z - pz) - (qz - pz) * (x - px) for x, z in corners]
            hit |= (np.minimum.reduce(side) <= 1e-9) & (np.maximum.reduce(side) >= -1e-9)
    for px, pz in ends:  # through a door's end and a cell's corner
        for x, z in corners:
            hit |= _crosses(px, pz, x, z, segs)
    for (ax, az), (bx, bz) in (((0, 0), (1, 1)), ((1, 0), (0, 1))):  # along a cell's diagonal
        hit |= _crosses(cx + ax, cz + az, cx + bx, cz + bz, segs)
    d = doors[0]  # the room's own doorway: the cell within view of it
    gx = np.maximum(np.maximum(d[0] - (cx + 1), cx - d[1]), 0)
    gz = np.maximum(np.maximum(d[2] - (cz + 1), cz - d[3]), 0)
    return hit & (np.hypot(gx, gz) <= view)


class _Floor:
    """A map's rooms as the speaker's bounds need them: each room's area, its doorways (the edges it shares
    with other regions: a line of sight from outside gets in only through them) and ``cells``: the centres of
    the floor cells from which a line of sight may reach into it. Such a line from region A into room R
    crosses the shared edges of a chain of regions from A to R (each is a convex rectangle), so one straight
    line crosses all those edges and the cell; they are checked without their order (more lines pass), so
    ``cells`` holds every cell that
    can see into R (tests/test_claims_speaker.py checks it against the world's line of sight)."""

    def __init__(self, game_map: Any, view: float = DEFAULT_VIEW):
        self.boxes = [
            (float(r.rect[0]), r.rect[1] + 1.0, float(r.rect[2]), r.rect[3] + 1.0) for r in game_map.regions
        ]
        index = {r.name: r.index for r in game_map.regions if r.room}
        self.rects = {name: self.boxes[i] for name, i in index.items()}
        edges: dict[int, list[tuple[int, Box]]] = {i: [] for i in range(len(self.boxes))}
        for i, a in enumerate(self.boxes):
            for j, b in enumerate(self.boxes):
                door = _shared(a, b) if i != j else None
                if door is not None:
                    edges[i].append((j, door))
        self.doors = {name: [d for _, d in edges[i]] for name, i in index.items()}
        self.cells: dict[str, np.ndarray] = {}
        for name, i in index.items():
            seen: dict[int, np.ndarray] = {i: np.ones(self._shape(i), dtype=bool)}

            def grow(at: int, chain: list[Box], been: set[int]) -> None:
                for j, door in edges[at]:
                    doors = chain + [door]
                    if j in been or (chain and _box_gap(chain[0], door) > view) or not _stabbed(doors):
                        continue
                    mask = _cells_in_sight(self.boxes[j], doors, view)
                    seen[j] = seen[j] | mask if j in seen else mask
                    grow(j, doors, been | {j})

            grow(i, [], {i})
            centres = []
            for j, mask in seen.items():
                xs, zs = np.nonzero(mask)
                centres.append(np.stack([xs + self.boxes[j][0] + 0.5, zs + self.boxes[j][2] + 0.5], axis=1))
            self.cells[name] = np.concatenate(centres)

    def _shape(self, i: int) -> tuple[int, int]:
        x0, x1, z0, z1 = self.boxes[i]
        return int(x1 - x0), int(z1 - z0)


_FLOORS: dict[tuple, _Floor] = {}


def _floor(game_map: Any, view: float = DEFAULT_VIEW) -> _Floor:
    """The map's ``_Floor``, built once per layout (its regions) and view distance."""
    key = (tuple((r.name, tuple(r.rect)) for r in game_map.regions), view)
    if key not in _FLOORS:
        _FLOORS[key] = _Floor(game_map, view)
    return _FLOORS[key]


def _quarter(s: float) -> float:
    return round(s * 4) / 4
