"""The imposter ladder: scripted imposters from today's habits up to one that plans against the crewmates'
observer (docs/game.md, "The imposter ladder").

Every rung decides from what an imposter may know and nothing else: its own observations in its state mode
(its position, the players and bodies it perceives, the public record of meetings, its teammate, its
cooldown), the kills its frames showed, and its own memory of those. Never a crewmate's evidence, memory,
beliefs, probes or prompts: a rung is handed the observation, not the world (tests/test_ladder.py perturbs
what lies outside an imposter's perception and gets the same decisions).

Every rung speaks in the crewmates' forms at the crewmates' rates (``Strategy.speech``: as often as the table
of crewmates has accused, asked for a vote, vouched or agreed so far, ``Mind.blend``), so how it speaks does
not tell its role; the rungs differ in content: whom they accuse and why, and what they do.

- ``Habit`` (the lower rungs: the temperaments ``accusatory``, ``expert``, ``mission``, ``cautious``): today's
  imposters, whose habits give them away: an accusation names a random crewmate (a false eyewitness with
  made-up distances at the temperament's rate), so does a counter-accusation; kills with a crewmate in view
  (accusatory: up to one), stalking, self-reports at the temperament's rate, and never a vote for the partner.
- ``Quiet``: never stalks; kills only when no other player it perceives (now, or within the last 10 s) could
  see the spot by the engine's view rules (distance and line of sight; facing unknown, so assumed), then
  walks off; fakes missions; its accusations are its own true sightings (never of its teammate); reports a
  body it comes upon when a crewmate has it in sight (walking past would look worse); votes with the table
  (the most accused player of the meeting, its teammate too when the table is against it), else skips.
- ``Framer``: the quiet imposter, but it kills where a crewmate it saw within the last 30 s stood near the
  target, then tells the truth that places that crewmate there ("I saw X near where V died ..."); with
  structured claims its alibis are true (a true claim is never FALSE); it votes the crewmate it framed when
  another accuses it too.
- ``Adversary`` (``mau.env.adversary``): plans against a model of the crewmates' observer.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from mau.env.map import GameMap
from mau.env.speech import AGREE, ALIBI, NEAR, NOTHING, SAW_KILL, STANCE, SUSPECT, VOTE, VOUCH, Act, kinds
from mau.infer import model as infer
from mau.infer.evidence import EvidenceLog
from mau.infer.hearsay import STRONG, accusations
from mau.schema import NONE, SKIP, TICKS_PER_SECOND

RUNGS = ("quiet", "framer", "adversarial")  # the strategies above the habits (model names scripted-<rung>)
RECENT_S = 10.0  # a player I saw this recently may still be near: a possible witness
FRAME_S = 30.0  # a crewmate I saw near a spot this recently can be framed for a kill there
FRAME_NEAR = 8.0  # blocks: how near the spot the framed crewmate stood
QUIET_RADIUS = 5.0  # blocks: the farthest target a careful imposter goes for (the strike comes at once)
IMPATIENT_S = 60.0  # the framer: after this long off cooldown without a frame, it kills as the quiet one does
DEFAULT_VIEW = 36.0
# the chance that a player who stands where it could see a spot looks that way (a 102 degree view)
FACING = 0.3
# the careful rungs strike only when the chance that an unseen crewmate watches is at most this
RISK_MAX = 0.15
# What an imposter expects of the table's speech before it has heard any (Mind.blend), per round: the shares
# of the scripted crewmates' statements (expert crewmates in ego state against the expert, quiet and
# adversarial imposters, 60 matches; docs/game.md "Speech" gives the command): round 1, with a call to vote
# 0.62; of the accusations, a kill seen as the reason 0.04, a sighting by a victim 0.01; round 2, a call to
# vote 0.66, a vouch or an agreement next to never (0.003). Worth 4 statements.
PRIOR = {1: {"accuse": 1.0, "vote": 0.62, "kill": 0.04, "near": 0.01, "vouch": 0.003, "agree": 0.003},
         2: {"accuse": 0.66, "vote": 0.66, "kill": 0.0, "near": 0.0, "vouch": 0.003, "agree": 0.003}}
PRIOR_WEIGHT = 4.0
NOW_WEIGHT = 12.0  # a statement of the current meeting counts this many of the match's earlier ones


@dataclass
class Sighting:
    tick: int
    x: float
    z: float


@dataclass
class Mind:
    """What one imposter perceived and remembers (its own observations only)."""

    me: str
    game_map: GameMap
    mates: set[str] = field(default_factory=set)
    roster: list[str] = field(default_factory=list)
    n_imposters: int = 2
    view: float = DEFAULT_VIEW
    walk: float = 4.317
    last: dict[str, Sighting] = field(default_factory=dict)  # each player's last sighting
    # recent step ends
    history: list[tuple[int, dict[str, tuple[float, float]]]] = field(default_factory=list)
    frames: dict[str, dict[str, Any]] = field(default_factory=dict)  # victim -> the crewmate I framed
    ev: EvidenceLog | None = None  # my perception read as a crewmate would (the mimic's evidence)
    tick: int = -1
    off_cooldown_since: int | None = None
    heard: dict[tuple[int, int], tuple[int, str, bool, frozenset[str]]] = field(default_factory=dict)
    # (meeting tick, line) -> (round, its accusation: "" none, "kill", "near" (strong) or "weak", it asked
    # for a vote, its acts (mau.env.speech.kinds)): others' speech
    read: dict[int, int] = field(default_factory=dict)  # meeting tick -> transcript lines already read

    def blend(self, round_: int, meeting: int | None = None) -> dict[str, float]:
        """How the table speaks, from the crewmates' statements of this round: the share that accused someone
        (``accuse``), that called for a vote (``vote``), vouched (``vouch``) or agreed (``agree``); of the
        accusations, the share that claimed to have seen a kill (``kill``) or the player by a victim
        (``near``). The statements of the current meeting (``meeting``: its tick) count ``NOW_WEIGHT`` times
        (a table that
        accuses as one is joined), the earlier ones of the match once, a prior worth ``PRIOR_WEIGHT``."""
        prior = {k: PRIOR_WEIGHT * v for k, v in PRIOR[min(max(round_, 1), 2)].items()}
        w = {
            key: (NOW_WEIGHT if key[0] == meeting else 1.0)
            for key, (r, *_) in self.heard.items()
            if r == round_
        }
        said = [(w[key], a, v, k) for key, (r, a, v, k) in self.heard.items() if r == round_]
        m = sum(x for x, *_ in said) + PRIOR_WEIGHT
        acc = sum(x for x, a, _, _ in said if a)
        n = acc + PRIOR_WEIGHT

        def share(of: float, key: str, total: float) -> float:
            return (of + prior[key]) / total
        return {"accuse": share(acc, "accuse", m),
                "vote": share(sum(x for x, a, v, _ in said if v), "vote", m),
                "kill": share(sum(x for x, a, _, _ in said if a == "kill"), "kill", n),
                "near": share(sum(x for x, a, _, _ in said if a == "near"), "near", n),
                "vouch": share(sum(x for x, *_, k in said if VOUCH in k), "vouch", m),
                "agree": share(sum(x for x, *_, k in said if AGREE in k), "agree", m)}

    def observe(self, obs: dict[str, Any]) -> None:
        if self.ev is None:
            self.roster = [p["name"] for p in obs["roster"]]
            self.ev = EvidenceLog(self.me, self.roster)
            self.mates = set(obs.get("teammates", []))
            self.n_imposters = obs.get("n_imposters", self.n_imposters)
        self.view = float(obs.get("view_distance", self.view))
        self.walk = float(obs.get("walk_speed", self.walk))
        self.ev.observe(obs)
        m = obs.get("meeting")
        if m is not None:
            transcript = m["transcript"]
            # lines already read are skipped (a transcript only grows; a line read once never changes)
            for i in range(self.read.get(obs["tick"], 0), len(transcript)):
                self.read[obs["tick"]] = i + 1
                t = transcript[i]
                # the crewmates' speech only: my teammates' is no model of how crewmates talk
                if (
                    t["speaker"] != self.me
                    and t["speaker"] not in self.mates
                    and (obs["tick"], i) not in self.heard
                ):
                    found = accusations(t["text"], t["speaker"], self.roster)
                    kind = "" if not found else "weak" if STRONG not in found.values() else \
                        "kill" if _KILL.search(t["text"]) else "near"
                    vote = _VOTE.search(t["text"]) is not None
                    self.heard[(obs["tick"], i)] = (
                        int(t.get("round") or 1), kind, vote, frozenset(kinds(t["text"])),
                    )
            return
        if obs["tick"] == self.tick:
            return
        self.tick = obs["tick"]
        fresh = self.fresh(obs)
        for n, (x, z) in fresh.items():
            self.last[n] = Sighting(obs["tick"], x, z)
        self.history.append((obs["tick"], fresh))
        del self.history[:-int(FRAME_S / 5) - 2]
        if obs.get("kill_cooldown_ticks", 1) == 0:
            self.off_cooldown_since = (
                obs["tick"] if self.off_cooldown_since is None else self.off_cooldown_since
            )
        else:
            self.off_cooldown_since = None

    @staticmethod
    def fresh(obs: dict[str, Any]) -> dict[str, tuple[float, float]]:
        """The players I perceive now: in view, and (privileged state) those observed now."""
        out = {p["name"]: (float(p["position"][0]), float(p["position"][1])) for p in obs.get("players") or []
               if p.get("seen_s_ago") == 0}
        out.update(
            {p["name"]: (float(p["position"][0]), float(p["position"][1])) for p in obs["players_in_view"]}
        )
        return out

    def witnesses(self, obs: dict[str, Any], target: str, spot: tuple[float, float]) -> list[str]:
        """Players other than me, my teammates and the target who, as far as my perception shows, could see
        the spot: perceived now within view distance with a line of sight to it, or seen within the last
        ``RECENT_S`` near enough to have walked into view since (facing is unknown: assumed towards it)."""
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        fresh = self.fresh(obs)
        out = []
        for name, s in self.last.items():
            if name in (self.me, target) or name in self.mates or name in gone:
                continue
            age = (obs["tick"] - s.tick) / TICKS_PER_SECOND
            if name in fresh:
                x, z = fresh[name]
                if math.hypot(x - spot[0], z - spot[1]) <= self.view and \
                        self.game_map.line_of_sight(x, z, spot[0], spot[1]):
                    out.append(name)
            elif age <= RECENT_S and math.hypot(s.x - spot[0], s.z - spot[1]) <= self.view + self.walk * age:
                out.append(name)
        return sorted(out)

    def exposure(self, obs: dict[str, Any], target: str, spot: tuple[float, float]) -> float:
        """The chance that some crewmate I do not perceive now watches the spot: for each living crewmate out
        of my perception, the share of the floor it may stand on (within walking reach of my last sighting of
        it, or
        anywhere when I never saw it) from which the spot is in sight within view distance, times
        ``FACING``."""
        vis, cells = visible_cells(self.game_map, spot, self.view)
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        fresh = self.fresh(obs)
        alive = [p["name"] for p in obs["roster"] if p["name"] not in gone]
        safe = 1.0
        for name in alive:
            if name in (self.me, target) or name in self.mates or name in fresh:
                continue
            s = self.last.get(name)
            if s is None:
                share = float(vis.mean())
            else:
                reach = ((cells[:, 0] - s.x) ** 2 + (cells[:, 1] - s.z) ** 2
                         <= (self.walk * (obs["tick"] - s.tick) / TICKS_PER_SECOND + 1.0) ** 2)
                share = float(vis[reach].mean()) if reach.any() else 0.0
            safe *= 1.0 - FACING * share
        return 1.0 - safe

    def mimic(self, candidates: list[str], params: infer.Params) -> dict[str, float]:
        """P(imposter) of each crewmate candidate as a crewmate with my perception would reckon it: the model
        over my evidence with my teammates left out of it (no suspects of mine, nothing of theirs weighed),
        the rules' number of imposters among the rest, so its numbers stand on a crewmate's scale."""
        if self.ev is None or not candidates:
            return {c: 0.0 for c in candidates}
        roster = [n for n in self.roster if n not in self.mates]
        items = [
            (
                {**it, "bins": {n: b for n, b in it["bins"].items() if n not in self.mates}}
                if it["k"] == "death"
                else it
            )
            for it in self.ev.items()
            if it.get("p") not in self.mates and it.get("target") not in self.mates and it["k"] != "saw_kill"
        ]
        k = min(self.n_imposters, max(1, len(roster) - 2))
        return infer.beliefs(self.me, roster, candidates, k, items, params)[0]

    def near_sighting(self, name: str) -> tuple[str, float, float] | None:
        """(victim, blocks, game s) of my closest sighting of ``name`` by a spot where a victim lay (true)."""
        return self.ev.near_sighting(name) if self.ev else None

    def frame_candidate(
        self, obs: dict[str, Any], target: str, spot: tuple[float, float]
    ) -> dict[str, Any] | None:
        """A crewmate (not the target) I saw within ``FRAME_S`` standing within ``FRAME_NEAR`` of the spot:
        the closest such sighting (who, blocks, game s)."""
        best = None
        for tick, seen in self.history:
            if (obs["tick"] - tick) / TICKS_PER_SECOND > FRAME_S:
                continue
            for name, (x, z) in seen.items():
                if name in (self.me, target) or name in self.mates:
                    continue
                d = math.hypot(x - spot[0], z - spot[1])
                if d <= FRAME_NEAR and (best is None or d < best["dist"]):
                    best = {"who": name, "dist": round(d, 1), "at": round(tick / TICKS_PER_SECOND)}
        return best


_VOTE = re.compile(r"\bvote\b", re.I)
_KILL = re.compile(r"\bkill\b", re.I)


@lru_cache(maxsize=4096)
def _visible(game_map: GameMap, cell: tuple[int, int], view: float) -> np.ndarray:
    x, z = cell[0] + 0.5, cell[1] + 0.5
    cells = floor_cells(game_map)
    near = (cells[:, 0] - x) ** 2 + (cells[:, 1] - z) ** 2 <= view * view
    return np.array([bool(n) and game_map.line_of_sight(float(cx), float(cz), x, z)
                     for n, (cx, cz) in zip(near, cells)])


@lru_cache(maxsize=8)
def floor_cells(game_map: GameMap) -> np.ndarray:
    """The centres of every floor block of the map, as an (N, 2) array."""
    ix, iz = np.nonzero(game_map.floor)
    return np.stack([ix + game_map.origin[0] + 0.5, iz + game_map.origin[1] + 0.5], axis=1)


def visible_cells(game_map: GameMap, spot: tuple[float, float], view: float) -> tuple[np.ndarray, np.ndarray]:
    """(a mask of the floor blocks from which the spot is in line of sight within ``view``, the blocks)."""
    return _visible(game_map, (math.floor(spot[0]), math.floor(spot[1])), view), floor_cells(game_map)


def table(meeting: dict[str, Any], names: list[str], me: str) -> dict[str, float]:
    """How strongly the meeting so far accuses each player (strong 2, weak 1 per speaker), me left out."""
    out: dict[str, float] = {}
    for t in meeting["transcript"]:
        for name, strength in accusations(t["text"], t["speaker"], names).items():
            if name != me:
                out[name] = out.get(name, 0.0) + (2.0 if strength == STRONG else 1.0)
    return out


def accusers(meeting: dict[str, Any], names: list[str], target: str) -> list[str]:
    return [
        t["speaker"] for t in meeting["transcript"] if target in accusations(t["text"], t["speaker"], names)
    ]


class Strategy:
    """An imposter's decisions (as ``ScriptedBrain`` asks them); the base is the quiet imposter. ``brain``:
    the scripted brain it belongs to (its random stream, map, thresholds, and the crewmate speech it
    imitates)."""

    name = "quiet"

    def __init__(self, brain: Any):
        self.brain = brain
        self.mind = Mind(brain.name, brain.map)
        self.rng: random.Random = brain.rng

    def observe(self, obs: dict[str, Any]) -> None:
        self.mind.observe(obs)

    def crew_in_view(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        return sorted((p for p in obs["players_in_view"] if p["name"] not in self.mind.mates),
                      key=lambda p: (p["distance"], p["name"]))

    def crew_alive(self, obs: dict[str, Any]) -> list[str]:
        return [
            n for n in obs["meeting"]["alive_players"] if n != self.brain.name and n not in self.mind.mates
        ]

    # -- roam ------------------------------------------------------------------------------------------------
    def kill(self, obs: dict[str, Any]) -> tuple[str, str]:
        crew = self.crew_in_view(obs)
        if obs.get("kill_cooldown_ticks", 1) == 0:
            for p in crew:
                if p["distance"] > QUIET_RADIUS:
                    break
                spot = (float(p["position"][0]), float(p["position"][1]))
                if (
                    not self.mind.witnesses(obs, p["name"], spot)
                    and self.mind.exposure(obs, p["name"], spot) <= RISK_MAX
                    and self.may_kill(obs, p["name"], spot)
                ):
                    return "KILL", p["name"]
        return "DEFER", crew[0]["name"] if crew else NONE

    def may_kill(self, obs: dict[str, Any], target: str, spot: tuple[float, float]) -> bool:
        """Unwatched is enough for the quiet imposter."""
        return True

    def report(self, obs: dict[str, Any], victim: str) -> bool:
        """Report a body I come upon when a crewmate has me in sight (walking past it would look worse)."""
        me = (obs["position"][0], obs["position"][2])
        return any(self.brain.map.line_of_sight(p["position"][0], p["position"][1], *me)
                   for p in self.crew_in_view(obs))

    # -- meetings --------------------------------------------------------------------------------------------
    def reason(self, name: str) -> list[Act]:
        """What I say against ``name``: my true closest sighting of it by a victim, else my suspicion."""
        near = self.mind.near_sighting(name)
        if near is not None and near[1] <= 6:
            return [Act(NEAR, who=name, victim=near[0], dist=near[1], at=near[2])]
        return [Act(SUSPECT, who=name)]

    def speech(self, obs: dict[str, Any], room: str) -> list[Act]:
        """The crewmates' forms at the crewmates' rates (``Mind.blend``): in round 1 an accusation as often
        as the table makes one (with a call to vote as often), else where I was and that I saw nothing; in
        round 2 where I stand, then an accusation, a vouch or an agreement as often as the table. Whom I
        accuse is my rung's (``accuse_whom``); with nobody to accuse I say what I would say without one."""
        r = obs["meeting"]["round"]
        if r not in (1, 2):
            return []
        crew = self.crew_alive(obs)
        table_ = self.mind.blend(r, obs["tick"])
        target = self.accuse_whom(obs, crew)
        vote = (
            [Act(VOTE, who=target)]
            if target is not None and self.brain.phrase.random() < table_["vote"]
            else []
        )
        if r == 1:
            return (
                [Act(ALIBI, room=room)]
                + (self.reason(target) if target is not None else [Act(NOTHING)])
                + vote
            )
        return [Act(STANCE, room=room)] + (vote or self.answer_in(obs, crew))

    def accuse_whom(self, obs: dict[str, Any], crew: list[str]) -> str | None:
        """The crewmate a crewmate with my perception would suspect (``Mind.mimic``) when sure enough to say
        so, else one the table accuses already, else my mimic's lean: never a random name, always a reason a
        crewmate could have."""
        bel = self.mind.mimic(crew, self.brain.params)
        top = max(sorted(bel), key=lambda n: bel[n]) if bel else None
        if top is not None and bel[top] >= self.brain.t.accuse_threshold:
            return top
        return self.echo(obs, crew) or top

    def answer_in(self, obs: dict[str, Any], crew: list[str]) -> list[Act]:
        """Round 2, no accusation of mine: vouch or agree as often as the table does (``Mind.blend``)."""
        table_ = self.mind.blend(2, obs["tick"])
        u = self.brain.phrase.random()
        names = [p["name"] for p in obs["roster"]]
        tab = table(obs["meeting"], names, self.brain.name)
        if u < table_["vouch"]:
            who = self.vouchee(obs, tab)
            return [Act(VOUCH, who=who)] if who else []
        if u < table_["vouch"] + table_["agree"]:
            top = self.echo(obs, crew)
            by = [a for a in accusers(obs["meeting"], names, top) if a != self.brain.name] if top else []
            return [Act(AGREE, to=by[0]), Act(VOTE, who=top)] if by else []
        return []

    def vouchee(self, obs: dict[str, Any], tab: dict[str, float]) -> str | None:
        """Whom I vouch for: the least accused crewmate of those accused (never my teammate: that would tie
        us)."""
        cands = [n for n in tab if n not in self.mind.mates and n in obs["meeting"]["alive_players"]]
        return min(sorted(cands), key=lambda n: tab[n]) if cands else None

    def echo(self, obs: dict[str, Any], crew: list[str]) -> str | None:
        """The crewmate the meeting accuses most so far, or None."""
        names = [p["name"] for p in obs["roster"]]
        tab = {n: v for n, v in table(obs["meeting"], names, self.brain.name).items() if n in crew}
        return max(sorted(tab), key=lambda n: tab[n]) if tab else None

    def vote(self, obs: dict[str, Any]) -> str:
        """With the table: the most accused living player of this meeting (my teammate too when the table is
        against it: it is lost, and a vote to save it would mark me); nobody accused: skip."""
        meeting = obs["meeting"]
        names = [p["name"] for p in obs["roster"]]
        alive = [n for n in meeting["alive_players"] if n != self.brain.name]
        tab = {n: v for n, v in table(meeting, names, self.brain.name).items() if n in alive}
        if not tab:
            return SKIP
        return max(sorted(tab), key=lambda n: tab[n])


class Framer(Strategy):
    name = "framer"

    def may_kill(self, obs: dict[str, Any], target: str, spot: tuple[float, float]) -> bool:
        frame = self.mind.frame_candidate(obs, target, spot)
        if frame is not None:
            self.mind.frames[target] = {**frame, "victim": target}
            return True
        since = self.mind.off_cooldown_since
        return since is not None and (obs["tick"] - since) / TICKS_PER_SECOND >= IMPATIENT_S

    def _open_frame(self, obs: dict[str, Any], crew: list[str]) -> dict[str, Any] | None:
        dead = set(obs["known_dead"])
        return next((f for v, f in sorted(self.mind.frames.items())
                     if v in dead and f["who"] in crew and not f.get("said")), None)

    def accuse_whom(self, obs: dict[str, Any], crew: list[str]) -> str | None:
        """The crewmate I framed, once its victim is known dead; else as the quiet imposter."""
        f = self._open_frame(obs, crew)
        return f["who"] if f is not None else super().accuse_whom(obs, crew)

    def reason(self, name: str) -> list[Act]:
        """My sighting of the crewmate I framed by its victim (true: I saw it there), else the quiet one's."""
        f = next((f for f in self.mind.frames.values() if f["who"] == name and not f.get("said")), None)
        if f is not None:
            f["said"] = True
            return [Act(NEAR, who=name, victim=f["victim"], dist=f["dist"], at=f["at"])]
        return super().reason(name)

    def vote(self, obs: dict[str, Any]) -> str:
        meeting = obs["meeting"]
        names = [p["name"] for p in obs["roster"]]
        framed = {f["who"] for f in self.mind.frames.values() if f.get("said")}
        for who in sorted(framed & set(meeting["alive_players"])):
            if any(a != self.brain.name for a in accusers(meeting, names, who)):
                return who  # the table follows my frame
        return super().vote(obs)


class Habit(Strategy):
    """Today's imposters (the temperaments' numbers): random accusations, stalking, kills with a witness in
    view where the temperament allows, self-reports at its rate, a vote for the most accused crewmate (never
    the partner) or a random one."""

    name = "habit"

    def kill(self, obs: dict[str, Any]) -> tuple[str, str]:
        b, t = self.brain, self.brain.t
        crew = self.crew_in_view(obs)
        if (obs.get("kill_cooldown_ticks", 1) == 0 and 1 <= len(crew) <= t.kill_max_crew
                and crew[0]["distance"] <= b.kill_radius):
            return "KILL", crew[0]["name"]
        if crew and self.rng.random() < t.stalk_p:
            return "STALK", self.rng.choice(crew)["name"]
        return "DEFER", crew[0]["name"] if crew else NONE

    def report(self, obs: dict[str, Any], victim: str) -> bool:
        return self.rng.random() < self.brain.self_report_p

    def accuse_whom(self, obs: dict[str, Any], crew: list[str]) -> str | None:
        return self.rng.choice(crew) if crew else None  # the habit: anyone

    def vouchee(self, obs: dict[str, Any], tab: dict[str, float]) -> str | None:
        """The habit: my teammate when it is accused (mutual reinforcement), else an accused crewmate."""
        alive = obs["meeting"]["alive_players"]
        mates = [m for m in sorted(self.mind.mates) if m in tab and m in alive]
        return mates[0] if mates else super().vouchee(obs, tab)

    def reason(self, name: str) -> list[Act]:
        """A false eyewitness (made-up distance and time; or a kill it never saw) as often as the table gives
        such reasons (``Mind.blend``) and at most at the temperament's rate, else a bare suspicion."""
        b = self.mind.blend(1)
        u = self.rng.random()
        strong = min(b["kill"] + b["near"], self.brain.t.fake_witness_p)
        if self.mind.ev is not None and self.mind.ev.dead and u < strong:
            victim = self.mind.ev.dead[-1]
            if u < b["kill"]:
                room = self.mind.ev.body_spots.get(victim, (0, 0, "Cafeteria"))[2] or "Cafeteria"
                return [Act(SAW_KILL, who=name, victim=victim, room=room)]
            d = round(self.rng.uniform(1.5, 4.5), 1)
            at = max(0, round(self.mind.tick / TICKS_PER_SECOND - self.rng.uniform(10, 40)))
            return [Act(NEAR, who=name, victim=victim, dist=d, at=at)]
        return [Act(SUSPECT, who=name)]

    def vote(self, obs: dict[str, Any]) -> str:
        b = self.brain
        alive = [n for n in obs["meeting"]["alive_players"] if n != b.name]
        mates = self.mind.mates
        ranked = sorted(
            ((s, n) for n, s in b.suspicion.items() if n in alive and n not in mates), reverse=True
        )
        if ranked and ranked[0][0] > 0:
            return ranked[0][1]
        crew = [n for n in alive if n not in mates]
        return self.rng.choice(crew) if crew and self.rng.random() < 0.5 else SKIP

