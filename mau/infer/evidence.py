"""One crewmate's evidence, built from its own observations only (docs/detection.md, "Evidence").

Feed it every observation the crewmate gets (``observe``: a roam step or a meeting moment, each tick taken in
once) and the kills its frames showed (``saw_kill``). It keeps:

- **positions it was shown**: every player listed as seen now (privileged state: ``players`` with
  ``seen_s_ago == 0``; ego state: ``players_in_view``) at each step end, so that when a death becomes known it
  can say who was near the spot where the victim fell, from when the victim lay there until the death was
  known (``death`` items, distances binned at 3 / 6 / 12 blocks);
- **what it saw**: kills in its view (``saw_kill``), bodies (their spot);
- **what is public**: deaths announced, ejections and the revealed roles, who reported or called each meeting,
  every accusation in meeting speech (``mau.infer.hearsay``) and every vote;
- **claims** (``world.claims.mode: structured``; docs/claims.md): a claim that puts a player in a place
  during a window (``at``, ``saw``, ``with``, ``saw_kill``) is checked against my own sightings only: when I
  was shown its subject inside the window, always elsewhere, the speaker is ``contradicted`` (I saw Noah in
  Storage when he says he was in Admin; "I saw you in Admin" when I was in Storage); and two public claims
  that cannot both hold (A says she was in Admin, B says he saw A in Storage then) are a ``conflict`` between
  their speakers. Never a verdict of the checker: only what this crewmate saw and heard.

``items()`` is the evidence as plain dicts (the likelihood model's input, recorded with each ideal-observer
probe); ``lines()`` renders the same evidence as the text ARIA's memory shows in prompts, so what a model
reads is exactly what the scripted teacher votes on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mau.infer.hearsay import STRONG, accusations
from mau.schema import CLAIM_PLACED_KINDS, SKIP, TICKS_PER_SECOND

# Distance bins of a death's neighbours, in blocks: 0: <= 3 (kill reach), 1: <= 6, 2: <= 12, 3: farther or
# unseen.
NEAR_BINS = (3.0, 6.0, 12.0)
FAR = len(NEAR_BINS)
STILL_EPS = 0.75  # blocks: a victim sample this close to the spot where it fell counts as lying there
MAX_WINDOW = 24  # step ends of a death's window kept (older ones tell little about the kill)
REPORTER_APPROACH = 2  # last step ends of a window at which the reporter's nearness is its walk to the body

# Evidence kinds (the ``k`` of an item)
UNKNOWN_FALL = ", fallen at a time I do not know"  # a window whose start is not when the victim fell
CLAIM_MARGIN = 20  # ticks (1 s): a sighting this close to a claim's window edge is not held against it
CLAIM_TOL = 100  # ticks (5 s): a claimed moment (at_s) spans +/- this, as the checker reads it
PLACED_KINDS = CLAIM_PLACED_KINDS  # claims that put a player in a place during a window

DEAD, EJECTED, SAW_KILL, DEATH, ACCUSE, VOTE, REPORTED, CALLED, CONTRADICTED, CONFLICT = (
    "dead", "ejected", "saw_kill", "death", "accuse", "vote", "reported", "called", "contradicted",
    "conflict",
)
# Evidence a planning imposter was thought unable to steer cheaply (issue 43; docs/detection.md, "Evidence"):
# a vote withheld (``skipped``: who gains from a meeting that ejects nobody) and my own sightings of a player
# away from where a victim lay during its death window (``alibi``: time accounted for).
SKIPPED, ALIBI = "skipped", "alibi"
ALIBI_LINE = f"Seen by me only farther than {NEAR_BINS[-1]:g} blocks from where"  # lines() of alibis


def dist_bin(d: float | None) -> int:
    if d is None:
        return FAR
    for i, edge in enumerate(NEAR_BINS):
        if d <= edge:
            return i
    return FAR


@dataclass
class _Death:
    victim: str
    known_tick: int
    spot: tuple[float, float] | None
    room: str
    ticks: list[int] = field(default_factory=list)  # the window's step ends
    dists: dict[str, list[float | None]] = field(default_factory=dict)
    reporter: str | None = None
    uniform: bool = False  # never shown lying where it fell: when in the window it fell is unknown
    # the distances' bins per player and whether any is near (items() reads them at every posterior): kept
    # until _fill_window, the only writer of the window, sets it again (None: not binned yet)
    binned: tuple[dict[str, list[int]], bool] | None = None
    # the players seen in the window only farther than NEAR_BINS[-1] from the spot (alibis): kept as binned
    away: list[str] | None = None


class EvidenceLog:
    """What one crewmate (``me``) perceived and heard; plain data, deep-copyable (snapshots)."""

    def __init__(self, me: str, roster: list[str]):
        self.me = me
        self.roster = list(roster)
        self.others = [n for n in roster if n != me]
        self.samples: list[tuple[int, dict[str, tuple[float, float]]]] = []  # (tick, fresh positions)
        # (tick, {player: place}) of the same sightings, me too
        self.places: list[tuple[int, dict[str, str]]] = []
        # claims heard that place a player: {speaker, who, room, t0, t1}
        self.placings: list[dict[str, Any]] = []
        self.contradictions: list[dict[str, Any]] = []  # {speaker, who, room, t0, t1, seen_place, seen_tick}
        self.conflicts: list[dict[str, Any]] = []  # {a, b, room_a, room_b, t0, t1}
        self._last_tick = -1
        # victim -> (x, z, room, tick I saw it)
        self.body_spots: dict[str, tuple[float, float, str, int]] = {}
        self.deaths: dict[str, _Death] = {}
        self.dead: list[str] = []
        self.ejected: dict[str, str] = {}
        self.kills_seen: list[dict[str, Any]] = []
        self.accused: list[dict[str, Any]] = []  # {meeting, speaker, target, strength}
        self.votes: list[dict[str, Any]] = []  # {meeting, voter, target}
        self._voted: set[int] = set()  # the meetings whose votes are in self.votes
        self.meetings: list[dict[str, Any]] = []  # {n, caller, reason, body}
        # meeting -> how many of its transcript lines are taken in: each observation takes in every line it
        # shows, and a transcript only grows, so the lines taken in are always its first ones
        self._heard: dict[int, int] = {}
        self._meeting_tick = -1
        self.mode = "privileged"
        # privileged state's list is the paper's radar (a dead player listed where it fell)
        self.radar = False
        # ARIA memory only: what the agent itself flagged in surveillance
        self.flags: list[dict[str, Any]] = []
        self.version = 0  # counts the changes of items(): readers cache what they computed from them

    # -- taking things in ------------------------------------------------------------------------------------
    def observe(self, obs: dict[str, Any]) -> None:
        """Take in one observation (any phase); the same tick twice is taken in once."""
        tick = obs["tick"]
        self.mode = obs.get("state_mode", self.mode)
        if self.mode == "privileged":
            self.radar = obs.get("privileged", "radar") == "radar"  # observations before the rule: the radar
        if obs.get("meeting") is None and tick != self._last_tick:
            self._last_tick = tick
            fresh: dict[str, tuple[float, float]] = {}
            where: dict[str, str] = {self.me: obs["room"]} if obs.get("alive", True) and "room" in obs else {}
            for p in obs.get("players") or []:
                if p["seen_s_ago"] == 0:
                    fresh[p["name"]] = (float(p["position"][0]), float(p["position"][1]))
                    where[p["name"]] = p.get("room", "")
            for p in obs["players_in_view"]:
                fresh[p["name"]] = (float(p["position"][0]), float(p["position"][1]))
                where[p["name"]] = p.get("room", "")
            self.samples.append((tick, fresh))
            self.places.append((tick, where))
            for b in obs["bodies_in_view"]:
                if b["victim"] not in self.body_spots:
                    self.body_spots[b["victim"]] = (
                        float(b["position"][0]), float(b["position"][1]), b["room"], tick,
                    )
                    self._learn_death(b["victim"], tick, None)
        for v in obs["known_dead"]:
            if v not in self.deaths:  # (_learn_death's own test, here: most steps know no new death)
                self._learn_death(v, tick, None)
        for e in obs["ejections"]:
            if e["name"] not in self.ejected:
                self.ejected[e["name"]] = e["role"]
                self.version += 1
        for m in obs.get("meetings_public") or []:
            if m["n"] not in self._voted:  # (_public_meeting's own test, here)
                self._public_meeting(m)
        if obs.get("meeting") is not None:
            self._meeting(obs, obs["meeting"])

    def saw_kill(self, killer: str, victim: str, room: str, tick: int) -> None:
        """A kill my frames showed (the engine's view rules decide; a scripted reader of frames is told)."""
        if any(k["killer"] == killer and k["victim"] == victim for k in self.kills_seen):
            return
        self.kills_seen.append({"killer": killer, "victim": victim, "room": room, "tick": tick})
        self.version += 1

    def flag(self, tick: int, suspect: str, detail: str) -> None:
        """A sighting the agent itself flagged (its SURVEILLANCE answer): kept as said, for its memory."""
        if not any(f["suspect"] == suspect and f["detail"] == detail for f in self.flags):
            self.flags.append({"tick": tick, "suspect": suspect, "detail": detail})

    def _meeting(self, obs: dict[str, Any], m: dict[str, Any]) -> None:
        n = len(self.meetings) + (0 if obs["tick"] == self._meeting_tick else 1)
        if obs["tick"] != self._meeting_tick:  # the clock stops during a meeting: its tick names it
            self._meeting_tick = obs["tick"]
            self.version += 1
            self.meetings.append({"n": n, "caller": m["caller"], "reason": m["reason"], "body": m["body"],
                                  "tick": obs["tick"]})
            if m["reason"] == "report" and m["body"] in self.deaths:
                self.deaths[m["body"]].reporter = m["caller"]
                self._fill_window(self.deaths[m["body"]])
        transcript = m["transcript"]
        for i in range(self._heard.get(n, 0), len(transcript)):
            self._heard[n] = i + 1
            t = transcript[i]
            if t["speaker"] == self.me:
                continue
            for target, strength in accusations(t["text"], t["speaker"], self.roster).items():
                # once per (meeting, speaker, target), the strongest: a speaker who says it again in the next
                # round adds no evidence
                same = self._accusation(n, t["speaker"], target)
                if same is not None:
                    if strength == STRONG and same["strength"] != STRONG:
                        same["strength"] = STRONG
                        self.version += 1
                    continue
                self.version += 1
                self.accused.append({"meeting": n, "speaker": t["speaker"], "target": target,
                                     "strength": strength})
            for c in t.get("claims") or []:
                self._claim(n, t["speaker"], c)

    def _accusation(self, meeting: int, speaker: str, target: str) -> dict[str, Any] | None:
        """The accusation already taken in of (meeting, speaker, target), or None. Only the latest meeting's
        are looked at, from the end: ``_meeting`` appends them in meeting order, once per key."""
        for a in reversed(self.accused):
            if a["meeting"] != meeting:
                return None
            if a["speaker"] == speaker and a["target"] == target:
                return a
        return None

    def _claim(self, meeting: int, speaker: str, c: dict[str, Any]) -> None:
        """A heard claim that places a player (``PLACED_KINDS``): checked against my sightings, and against
        the claims heard before it."""
        if not isinstance(c, dict) or c.get("k") not in PLACED_KINDS:
            return
        try:
            if c.get("at_s") is not None:
                at = round(float(c["at_s"]) * TICKS_PER_SECOND)
                t0, t1 = at - CLAIM_TOL, at + CLAIM_TOL
            else:
                t0, t1 = (
                    round(float(c["from_s"]) * TICKS_PER_SECOND), round(float(c["to_s"]) * TICKS_PER_SECOND),
                )
            room = str(c["room"])
        except (KeyError, TypeError, ValueError):
            return  # claims are data: one this log cannot read counts for nothing
        who = speaker if c.get("who") == "me" else c.get("who")
        subjects = [who] + ([speaker] if c["k"] == "with" else [])  # "with": both of us were there
        for subj in subjects:
            if subj not in self.roster:
                continue
            placing = {"meeting": meeting, "speaker": speaker, "who": subj, "room": room, "t0": t0, "t1": t1,
                       "k": c["k"]}
            self.placings.append(placing)
            seen = self._seen_elsewhere(subj, room, t0, t1)
            if seen is not None and speaker != self.me:
                self.contradictions.append({**placing, "seen_place": seen[1], "seen_tick": seen[0]})
                self.version += 1
            for other in self.placings[:-1]:
                a, b = self._conflict(other, placing)
                if a is not None and not any({x["a"], x["b"]} == {a, b} and x["who"] == subj
                                             for x in self.conflicts):
                    self.conflicts.append({"a": a, "b": b, "who": subj, "first": other, "second": placing})
                    self.version += 1

    def _seen_elsewhere(self, who: str, room: str, t0: int, t1: int) -> tuple[int, str] | None:
        """(tick, place) of my first sighting of ``who`` inside the window when every sighting of it there was
        elsewhere; None when I did not see it then, or saw it in ``room``."""
        first = None
        for tick, where in self.places:
            if tick < t0 + CLAIM_MARGIN or tick > t1 - CLAIM_MARGIN or who not in where:
                continue
            if where[who] == room:
                return None
            first = first or (tick, where[who])
        return first

    @staticmethod
    def _conflict(x: dict[str, Any], y: dict[str, Any]) -> tuple[str | None, str | None]:
        """Two speakers place the same player in different places at overlapping times: (speaker, speaker) of
        a conflict, or (None, None). Only a speaker's claim about itself against another's about it: two
        third-party sightings may both be right about a player on the move."""
        if x["who"] != y["who"] or x["speaker"] == y["speaker"] or x["room"] == y["room"]:
            return None, None
        if x["speaker"] != x["who"] and y["speaker"] != y["who"]:
            return None, None
        lo, hi = max(x["t0"], y["t0"]), min(x["t1"], y["t1"])
        if hi - lo < 2 * CLAIM_MARGIN:
            return None, None
        # a stay (at/with) claimed for the whole window against a sighting inside it
        return x["speaker"], y["speaker"]

    def _public_meeting(self, m: dict[str, Any]) -> None:
        """A finished meeting's public record (observation ``meetings_public``): its votes."""
        n = m["n"]
        if n in self._voted or not m.get("votes"):
            return
        self._voted.add(n)
        for voter, target in m["votes"].items():
            self.votes.append({"meeting": n, "voter": voter, "target": target})
            self.version += 1

    def _learn_death(self, victim: str, tick: int, reporter: str | None) -> None:
        if victim in self.deaths or victim == self.me:
            return
        self.dead.append(victim)
        self.version += 1
        spot = self.body_spots.get(victim)
        # The paper's radar lists a dead player where it fell until its death is public; in ego state and with
        # privileged sight the last sight of the victim is of it alive, so only a body I saw gives the spot.
        xy = (spot[0], spot[1]) if spot else (self._last_position(victim) if self.radar else None)
        d = _Death(victim, tick, xy, spot[2] if spot else "", reporter=reporter)
        self.deaths[victim] = d
        self._fill_window(d)

    def _last_position(self, name: str) -> tuple[float, float] | None:
        for _, fresh in reversed(self.samples):
            if name in fresh:
                return fresh[name]
        return None

    def _fill_window(self, d: _Death) -> None:
        """The step ends from the first one at which the victim lay where it fell (as far as I was shown)
        until the death was known; per other player, its distance to that spot at each (None: not shown)."""
        d.ticks, d.dists, d.binned, d.away = [], {}, None, None
        if d.spot is None:
            return
        fx, fz = d.spot
        samples = [(t, f) for t, f in self.samples if t <= d.known_tick]
        start = len(samples)
        for i in range(len(samples) - 1, -1, -1):
            pos = samples[i][1].get(d.victim)
            if pos is None:
                continue
            if math.hypot(pos[0] - fx, pos[1] - fz) > STILL_EPS:
                break
            start = i
        d.uniform = start == len(samples)
        if d.uniform:
            # Never shown lying where it fell (ego state: a body in view is not a player in view): it fell
            # after my last sight of it alive, at a step end I cannot tell; the last step ends before I knew,
            # weighed alike.
            seen = [i for i, (_, f) in enumerate(samples) if d.victim in f]
            window = samples[(seen[-1] + 1 if seen else 0):][-MAX_WINDOW:]
        else:
            window = samples[start:][:MAX_WINDOW]
        if not window:
            return
        d.ticks = [t for t, _ in window]
        for name in self.others:
            if name == d.victim or name in self.ejected:  # gone before the death was known: not its killer
                continue
            row: list[float | None] = []
            for k, (_, fresh) in enumerate(window):
                pos = fresh.get(name)
                late = k >= len(window) - REPORTER_APPROACH
                if pos is None or (late and name == d.reporter):
                    row.append(None)
                else:
                    row.append(round(math.hypot(pos[0] - fx, pos[1] - fz), 1))
            d.dists[name] = row

    # -- reading it out --------------------------------------------------------------------------------------
    def near_sighting(self, name: str) -> tuple[str, float, float] | None:
        """(victim, blocks, game s) of my closest sighting of ``name`` by a spot where a victim lay."""
        best = None
        for d in self.deaths.values():
            for x, t in zip(d.dists.get(name, []), d.ticks):
                if x is not None and (best is None or x < best[1]):
                    best = (d.victim, x, t / TICKS_PER_SECOND)
        return best

    def alibis(self) -> list[tuple[str, str]]:
        """(victim, player) of each death window in which I saw the player only away from where the victim lay
        (farther than ``NEAR_BINS[-1]`` at every step end I saw it): its time there is accounted for, by
        me."""
        return [(d.victim, name) for d in self.deaths.values() for name in _away(d)]

    def items(self) -> list[dict[str, Any]]:
        """The evidence as the likelihood model reads it (``mau.infer.model``)."""
        out: list[dict[str, Any]] = [{"k": DEAD, "p": v} for v in self.dead]
        out += [{"k": EJECTED, "p": n, "role": r} for n, r in self.ejected.items()]
        out += [{"k": SAW_KILL, "p": k["killer"], "victim": k["victim"]} for k in self.kills_seen]
        for d in self.deaths.values():
            if d.binned is None:
                bins = {n: [dist_bin(x) for x in row] for n, row in d.dists.items()}
                d.binned = bins, any(b != FAR for row in bins.values() for b in row)
            bins, near = d.binned
            if near:  # fresh lists each time: a reader may keep or change the items it got
                bins = {n: list(row) for n, row in bins.items()}
                out.append(
                    {"k": DEATH, "victim": d.victim, "bins": bins, **({"uniform": True} if d.uniform else {})}
                )
        out += [
            {"k": ACCUSE, "p": a["speaker"], "target": a["target"], "s": a["strength"]} for a in self.accused
        ]
        out += [
            {"k": VOTE, "p": v["voter"], "target": v["target"]} for v in self.votes if v["target"] != SKIP
        ]
        out += [{"k": SKIPPED, "p": v["voter"]} for v in self.votes if v["target"] == SKIP]
        out += [{"k": ALIBI, "p": name, "victim": victim} for victim, name in self.alibis()]
        for m in self.meetings:
            out.append({"k": REPORTED if m["reason"] == "report" else CALLED, "p": m["caller"]})
        out += [{"k": CONTRADICTED, "p": c["speaker"]} for c in self.contradictions]
        out += [{"k": CONFLICT, "p": c["a"], "target": c["b"]} for c in self.conflicts]
        return out

    def lines(self) -> list[str]:
        """The same evidence as sentences (ARIA's evidence memory); empty when there is none."""
        out = [f"At {f['tick'] / TICKS_PER_SECOND:g} s I flagged {f['suspect']}: "
               f"{f['detail']}" for f in self.flags]
        for k in self.kills_seen:
            out.append(f"I saw {k['killer']} kill {k['victim']} in {k['room']} at "
                       f"{k['tick'] / TICKS_PER_SECOND:g} s.")
        for d in self.deaths.values():
            where = f" in {d.room}" if d.room else ""
            if not d.ticks:
                out.append(f"{d.victim} is dead{where}; I do not know where {d.victim} fell.")
                continue
            near = []
            for name, row in d.dists.items():
                hits = [f"{x:g} at {t / TICKS_PER_SECOND:g} s" for x, t in zip(row, d.ticks)
                        if x is not None and x <= NEAR_BINS[-1]]
                if hits:
                    near.append(f"{name} {', '.join(hits)}")
            span = (f"from {d.ticks[0] / TICKS_PER_SECOND:g} s to {d.ticks[-1] / TICKS_PER_SECOND:g} s"
                    + (UNKNOWN_FALL if d.uniform else ""))
            who = "; ".join(near) if near else "nobody"
            out.append(f"{d.victim} is dead{where}. Within {NEAR_BINS[-1]:g} blocks of where {d.victim} lay, "
                       f"{span} (blocks at step ends): {who}.")
            if _away(d):
                out.append(f"{ALIBI_LINE} {d.victim} lay then: {', '.join(_away(d))}.")
        for n, r in self.ejected.items():
            out.append(f"{n} was ejected: {'an Imposter' if r == 'imposter' else 'a Crewmate'}.")
        for m in self.meetings:
            what = f"reported the body of {m['body']}" if m["reason"] == "report" else ("called an emergency "
                                                                                        "meeting")
            acc = [a for a in self.accused if a["meeting"] == m["n"]]
            said = "; ".join(f"{a['speaker']} accused {a['target']} ({a['strength']})" for a in acc) or (
                "no accusation"
            )
            votes = [v for v in self.votes if v["meeting"] == m["n"]]
            tally = ", ".join(f"{v['voter']}->{v['target']}" for v in votes)
            out.append(f"Meeting {m['n']}: {m['caller']} {what}; {said}" + (f"; votes: "
                                                                            f"{tally}." if tally else "."))
        for c in self.contradictions:
            out.append(f"Meeting {c['meeting']}: {self._placed(c, c['who'])}; "
                       + ("I was in " if c["who"] == self.me else f"I saw {c['who']} in ")
                       + f"{c['seen_place']} at {c['seen_tick'] / TICKS_PER_SECOND:g} s.")
        for c in self.conflicts:
            f, s = c["first"], c["second"]
            out.append(f"Meeting {s['meeting']}: {self._placed(f, c['who'])}, but "
                       f"{self._placed(s, c['who'])}.")
        return out

    def _placed(self, p: dict[str, Any], who: str) -> str:
        """'<speaker> placed <who> in <room> <window>': how every line that repeats a placing claim says it
        (the learnability parser reads these words back)."""
        return (f"{p['speaker']} placed {_who(who, p['speaker'], self.me)} in {p['room']} "
                f"{_span(p['t0'], p['t1'])}")

    def claim_lines(self, limit: int) -> list[str]:
        """The placing claims heard in meetings before the latest one, as said (the newest ``limit``): what a
        crewmate's prompt may show of earlier speech (``aria.claims_memory``); no verdict, only words."""
        last = max((m["n"] for m in self.meetings), default=0)
        out = [f"Meeting {p['meeting']}: "
               f"{self._placed(p, p['who'])}." for p in self.placings if p["meeting"] < last]
        return out[-limit:] if limit else []

    def compact_lines(self, speech: bool = True) -> list[str]:
        """The evidence in few words (the compact prompt profile, docs/harness.md): a death's window is summed
        up per player as the closest distance and the count of step ends within 6 blocks; everything else as
        ``lines``. The same facts the likelihood reads, shorter, so a small model's prompt stays short."""
        out = [f"At {f['tick'] / TICKS_PER_SECOND:g} s I flagged {f['suspect']}: "
               f"{f['detail']}" for f in self.flags]
        out += [f"I saw {k['killer']} kill {k['victim']} in {k['room']}." for k in self.kills_seen]
        for d in self.deaths.values():
            where = f" in {d.room}" if d.room else ""
            near = []
            for name, row in d.dists.items():
                xs = [x for x in row if x is not None and x <= NEAR_BINS[-1]]
                if xs:
                    close = sum(x <= NEAR_BINS[1] for x in xs)
                    tail = f" ({close}x within 6)" if close else ""
                    near.append((min(xs), f"{name} {min(xs):.0f} blocks{tail}"))
            who = ", ".join(t for _, t in sorted(near)) or "nobody"
            out.append(f"{d.victim} died{where}; near the body before it was found: {who}.")
        out += [f"{n} was ejected: {'an Imposter' if r == 'imposter' else 'a Crewmate'}."
                for n, r in self.ejected.items()]
        for m in self.meetings:
            acc = [
                f"{a['speaker']} accused {a['target']}"
                for a in self.accused
                if a["meeting"] == m["n"] and speech
            ]
            votes = [f"{v['voter']}->{v['target']}" for v in self.votes if v["meeting"] == m["n"] and speech]
            how = "reported" if m["reason"] == "report" else "called"
            out.append(f"Meeting {m['n']} ({m['caller']} {how})" + (f": {'; '.join(acc)}" if acc else "")
                       + (f"; votes {', '.join(votes)}" if votes else "") + ".")
        out += [f"{c['speaker']} placed {_who(c['who'], c['speaker'], self.me)} in {c['room']}, but I saw "
                f"{'myself' if c['who'] == self.me else c['who']} in "
                f"{c['seen_place']}." for c in self.contradictions]
        out += [f"{c['first']['speaker']} and {c['second']['speaker']} placed {c['who']} in different rooms."
                for c in self.conflicts]
        return out


def _away(d: _Death) -> list[str]:
    """The players seen in the death's window, only farther than ``NEAR_BINS[-1]`` from the spot; kept on the
    death until its window changes (items() reads it at every posterior, as it reads the bins)."""
    if d.away is None:
        d.away = []
        for name, row in d.dists.items():
            seen = [x for x in row if x is not None]
            if seen and min(seen) > NEAR_BINS[-1]:
                d.away.append(name)
    return d.away


def _who(name: str, speaker: str | None, me: str) -> str:
    return "me" if name == me else "themself" if name == speaker else name


def _span(t0: int, t1: int) -> str:
    return f"from {t0 / TICKS_PER_SECOND:g} s to {t1 / TICKS_PER_SECOND:g} s"
