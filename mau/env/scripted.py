"""A scripted player for both roles that plays sensibly from the observation alone (no hidden state).

Crewmates do their missions, report bodies, call a meeting on strong evidence, say what they saw and vote on
it. They reason with the ideal observer's model (``mau.infer``) over their own evidence (``EvidenceLog``: the
positions they were shown, the kills their frames showed, the bodies they saw, what was said and voted in
meetings), so a crewmate's suspicion is the exact posterior P(imposter) of that evidence; it votes the
posterior's top player when it is confident enough and skips otherwise. An accusation counts by the speaker's
credibility: the model gives the speaker's own role a part in every hypothesis, so an accusation by a
revealed imposter clears its target. Imposters decide by their rung of the imposter ladder
(``mau.env.imposters``: today's habits, or the quiet, framer and adversarial imposters), from their own
observations only. Both roles speak in the same phrasing (``mau.env.speech``). Each player's choices draw on
its own seeded random stream, so a match is a pure function of its seed.

Temperaments (``TEMPERAMENTS``; docs/game.md, "The scripted policy") make different experts, not one policy
with different seeds. Crewmates differ in attention (the share of evidence items they take in), thresholds
(to accuse, vote, press the button) and decision noise, never in reasoning wrongly: ``expert`` (a per-match
random mix, the default), ``cautious`` (attentive, votes only when sure; imposter: patient, kills only a lone
target in reach), ``accusatory`` (quick to accuse and vote, noisier; imposter: aggressive, kills with a
witness around, self-reports) and ``mission`` (missions first, less attentive, never presses the button;
imposter: covers with fake missions). The scripted expert's model name picks one (``scripted-cautious``;
others: ``expert``), or a rung above them (``scripted-quiet``, ``scripted-framer``, ``scripted-adversarial``:
the expert as a crewmate).

``ScriptedBrain`` answers one decision at a time, in the terms of ARIA's modules (report? kill? which mission?
what to say?); the harness's scripted expert (``mau.harness.backends.scripted``) answers model calls with it.
``ScriptedPolicy`` composes the same decisions into one action per step, with no harness at all (the fast
path of ``mau play`` and ``mau bench env``).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from mau.claims import paraphrase
from mau.claims.config import ClaimsConfig
from mau.claims.speaker import ClaimSpeaker
from mau.env.actions import Action
from mau.env.adversary import Adversary
from mau.env.imposters import RUNGS, Framer, Habit, Strategy
from mau.env.map import GameMap
from mau.env.speech import (
    AGREE,
    ALIBI,
    NEAR,
    NOTHING,
    SAW_KILL,
    STANCE,
    SUSPECT,
    VOTE,
    VOUCH,
    Act,
    accused_by,
    realise,
)
from mau.infer import explain
from mau.infer import model as infer
from mau.infer.evidence import EvidenceLog
from mau.infer.hearsay import STRONG, accusations
from mau.schema import IMPOSTER, NONE, SKIP, TICKS_PER_SECOND


@dataclass(frozen=True)
class Temperament:
    """How a scripted player weighs evidence and risk. None: drawn per match from the seed (``expert``)."""

    explore_p: float | None  # crewmate: chance to wander instead of the next mission
    vote_threshold: float  # crewmate: P(imposter) of its top suspect needed to vote for it (else skip)
    accuse_threshold: float  # crewmate: P(imposter) needed to name someone in a meeting
    # crewmate: P(imposter) of a living player that makes it press the button (> 1: never)
    emergency_at: float
    attention: float  # crewmate: share of its evidence items it takes in (the rest it missed)
    noise: float  # crewmate: s.d. of the noise on each player's log-odds when it decides
    kill_radius: float | None  # imposter: farthest target it goes for
    kill_max_crew: int  # imposter: crewmates in view it still kills with (1: only a lone target)
    stalk_p: float  # imposter: chance to stalk a crewmate in view
    self_report_p: float | None  # imposter: chance to report a body it comes upon
    accuse_p: float  # imposter: chance to accuse a crewmate in the first round
    fake_mission_p: float  # imposter: chance to fake a mission rather than wander
    # imposter: chance, when a death is announced, to claim it saw a crewmate by the victim
    fake_witness_p: float


TEMPERAMENTS: dict[str, Temperament] = {
    "expert": Temperament(None, 0.6, 0.5, 0.8, 1.0, 0.1, None, 1, 0.3, None, 0.5, 0.6, 0.4),
    "cautious": Temperament(0.75, 0.75, 0.6, 0.85, 0.99, 0.03, 8.0, 1, 0.6, 0.0, 0.2, 0.6, 0.15),
    "accusatory": Temperament(0.85, 0.45, 0.35, 0.6, 0.97, 0.06, 16.0, 2, 0.2, 0.6, 0.9, 0.4, 0.6),
    "mission": Temperament(0.65, 0.6, 0.5, 9.0, 0.98, 0.05, 12.0, 1, 0.3, 0.3, 0.3, 0.8, 0.25),
}
# The upper rungs of the imposter ladder (mau.env.imposters): their imposters follow a strategy, not these
# numbers (only fake_mission_p is read); as crewmates they are the expert.
for _rung in RUNGS:
    TEMPERAMENTS[_rung] = TEMPERAMENTS["expert"]


def leave_point(game_map: GameMap, obs: dict[str, Any], target: str) -> tuple[float, float]:
    """Where a killer walks right after the strike (the kill action's ``point``): the centre of the room
    farthest by path from the victim (its position in view; else mine)."""
    x, z = obs["position"][0], obs["position"][2]
    for p in obs["players_in_view"]:
        if p["name"] == target:
            x, z = p["position"]
    return game_map.room_centers[game_map.farthest_room(x, z)]


def temperament_of(model_name: str) -> str:
    """The temperament a scripted model name asks for: the first known one named in it, else ``expert``."""
    low = model_name.lower()
    return next((t for t in TEMPERAMENTS if t in low), "expert")


VOUCH_AT = 0.01  # a crewmate vouches for an accused player whose P(imposter) is at most this

_MODE_OF = {
    "mission": "mission", "fake_mission": "mission", "goto": "explore", "follow": "explore",
    "flee": "explore",
}


def read_likelihood(path: str | None, what: str) -> infer.Detector | None:
    """The parameters of an observer_fit.json given as field ``what`` (``likelihood``, ``plans_against``);
    None when unset."""
    from mau.infer.fit import read_params

    return read_params(path, what) if path else None


class ScriptedBrain:
    """One seat's scripted decisions. Call ``observe(obs)`` with every observation (roam steps and meetings)
    and ``perceive(kills)`` with the kills its frames showed, before a decision."""

    def __init__(self, name: str, game_map: GameMap, seed: int, temperament: str = "expert",
                 params: infer.Detector | None = None, claims: ClaimsConfig | None = None,
                 plans_against: infer.Detector | None = None):
        self.name = name
        self.map = game_map
        self.rng = random.Random(f"mau-scripted-{seed}-{name}")
        self.phrase = random.Random(f"mau-phrase-{seed}-{name}")  # which paraphrase: never a decision's draw
        self._seed = seed
        self.t = TEMPERAMENTS[temperament]
        # the imposter's rung (mau.env.imposters)
        self.rung = temperament if temperament in RUNGS else "habit"
        # my imposter strategy (mau.env.imposters), made when first needed
        self.scheme: Strategy | None = None
        params = params or infer.Params()
        # the detector the adversarial imposter plans against (its evidence kinds and weights): by default the
        # model it reasons with itself (the shipped teacher's, or ``likelihood``'s; a drawn pool as a whole)
        self.plans_against = plans_against or params
        # a ``rule: draw`` pool: this seat's member, drawn once per match (its own stream: moves no draw)
        self.params = infer.drawn(params, random.Random(f"mau-draw-{seed}-{name}"))
        # The expert's per-match draws (so its matches differ); the other temperaments are fixed.
        self.explore_p = self.rng.choice([0.5, 0.75, 0.85, 0.97])
        self.kill_radius = self.rng.choice([6.0, 10.0, 16.0])
        self.self_report_p = self.rng.choice([0.0, 0.3, 0.6])
        if self.t.explore_p is not None:
            self.explore_p = self.t.explore_p
        if self.t.kill_radius is not None:
            self.kill_radius = self.t.kill_radius
        if self.t.self_report_p is not None:
            self.self_report_p = self.t.self_report_p
        self.ev: EvidenceLog | None = None  # made at the first observation (it needs the roster)
        self.n_imposters = 2
        self.suspicion: dict[str, float] = {}  # crewmate: P(imposter); imposter: how accused each player is
        self.last_room = ""
        self.killed_since_meeting = False
        self.called_for: set[str] = set()
        self.reported_bodies: set[str] = set()
        self.fake_index = 0
        self._meeting_tick = -1  # the clock stops during a meeting: its tick identifies it
        self._read = 0  # transcript lines of the current meeting already taken in (imposters)
        self._reflected: dict[str, float] = {}
        self._flagged: set[tuple[str, str]] = set()  # kills I have told of in surveillance
        self._checked: set[str] = set()  # players I went to look at (lying still: maybe dead)
        self._goto: str | None = None  # where I go to look
        self._posterior_cache: tuple[Any, dict[str, float]] = (None, {})
        self._memo = infer.PosteriorMemo()  # the model's factors of my evidence items, computed once each
        self._said: list[Act] = []  # the acts of my last speech
        # Structured claims (world.claims.mode structured): made by a speaker of their own
        # (mau.claims.speaker) that reads the same observations; None when claims are off. In free mode the
        # same claims are said in words (mau.claims.paraphrase), drawn from a stream of their own.
        self.speaker = (ClaimSpeaker(name, game_map, seed, temperament, claims, truthful=self.rung != "habit")
                        if claims and claims.speakers else None)
        self._words = random.Random(f"mau-words-{seed}-{name}") if claims and claims.free else None

    # -- what the player knows -----------------------------------------------------------------------------
    def observe(self, obs: dict[str, Any]) -> None:
        """Take in an observation: positions, bodies, deaths, ejections, meetings and what was said in
        them."""
        if self.speaker is not None:
            self.speaker.observe(obs)
        if self.ev is None:
            self.ev = EvidenceLog(self.name, [p["name"] for p in obs["roster"]])
            self.n_imposters = obs.get("n_imposters", self.n_imposters)
        if obs.get("meeting") is None:
            self.last_room = obs["room"]
            last = obs.get("last_action_result") or {}
            if obs["role"] == IMPOSTER and last.get("reason", "").startswith("killed"):
                self.killed_since_meeting = True
        if obs["role"] != IMPOSTER:
            self.ev.observe(obs)
        else:
            if self.scheme is None:
                self.scheme = make_strategy(self.rung, self)
            self.scheme.observe(obs)

    def perceive(self, kills: list[dict[str, Any]]) -> None:
        """The kills my frames showed (a scripted reader of frames is told what they show)."""
        if self.speaker is not None:
            self.speaker.perceive(kills)
        if self.ev is not None:
            for k in kills:
                self.ev.saw_kill(k["killer"], k["victim"], k["room"], k["tick"])

    def _attends(self, item: dict[str, Any]) -> bool:
        """Whether I took this evidence item in (temperament attention; the same answer every time I ask)."""
        if self.t.attention >= 1.0 or item["k"] in ("dead", "ejected"):
            return True
        key = (
            f"{self._seed}|{self.name}|{item['k']}|{item.get('p')}|{item.get('victim')}|{item.get('target')}"
        )
        u = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big") / 2 ** 32
        return u < self.t.attention

    def posterior(self, candidates: list[str]) -> dict[str, float]:
        """My P(imposter) of each candidate: the model's posterior over the evidence I took in (read only;
        computed again only when the evidence changed)."""
        if self.ev is None or not candidates:
            return {c: 0.0 for c in candidates}
        key = (self.ev.version, tuple(candidates))
        if self._posterior_cache[0] != key:
            bel = infer.beliefs(self.name, self.ev.roster, candidates, self.n_imposters, self._taken_in(),
                                self.params, self._memo)[0]
            self._posterior_cache = (key, bel)
        return dict(self._posterior_cache[1])

    def _taken_in(self) -> list[dict[str, Any]]:
        """The evidence items I took in (all of them at full attention): what my posterior reads."""
        items = self.ev.items() if self.ev is not None else []
        if self.t.attention < 1.0:  # (a full attention takes in every item: _attends says so)
            items = [it for it in items if self._attends(it)]
        return items

    def reasons(self, target: str, n: int = 3) -> list[str]:
        """The ``n`` evidence items that moved my P(imposter) of ``target`` most, in words
        (``mau.infer.explain``); no random draw, so asking never changes a decision."""
        if self.ev is None:
            return []
        return explain.reasons(self.name, self.ev.roster, self.n_imposters, self._taken_in(), self.params,
                               target, self.ev, n, self._memo)

    def explained(self, target: str, bel: dict[str, float]) -> str:
        """'<target> at <P>: <reasons>.': my belief of ``target`` and why."""
        why = self.reasons(target)
        head = f"{target}, P(imposter) {bel.get(target, 0.0):.2f}"
        return head + (f": {'; '.join(why)}." if why else ": no evidence either way.")

    def beliefs(self, candidates: list[str]) -> dict[str, float]:
        """``posterior``, kept as my suspicion (what BELIEF and REFLECT pass on)."""
        bel = self.posterior(candidates)
        self.suspicion.update(bel)
        return bel

    def _decide(self, candidates: list[str]) -> tuple[str | None, float]:
        """(my top suspect after decision noise, its P(imposter)); (None, 0) without candidates."""
        bel = self.beliefs(candidates)
        if not bel:
            return None, 0.0

        def noisy(p: float) -> float:
            p = min(1 - 1e-6, max(1e-6, p))
            return 1 / (1 + math.exp(-(math.log(p / (1 - p)) + self.rng.gauss(0.0, self.t.noise))))

        scored = {n: noisy(p) for n, p in sorted(bel.items())}
        top = max(sorted(scored), key=lambda n: scored[n])
        return top, scored[top]

    def _alive_others(self, obs: dict[str, Any]) -> list[str]:
        if obs.get("meeting"):
            return [n for n in obs["meeting"]["alive_players"] if n != self.name]
        gone = set(obs["known_dead"])
        for e in obs["ejections"]:
            gone.add(e["name"])
        gone.add(self.name)
        return [n for n in (p["name"] for p in obs["roster"]) if n not in gone]

    def _saw_kill_of(self, name: str) -> dict[str, Any] | None:
        return next((k for k in (self.ev.kills_seen if self.ev else []) if k["killer"] == name), None)

    def _near_sighting(self, name: str) -> tuple[str, float, float] | None:
        """(victim, blocks, game s) of my closest sighting of ``name`` by a spot where a victim lay."""
        return self.ev.near_sighting(name) if self.ev else None

    def live_known(self, obs: dict[str, Any]) -> list[str]:
        """Living players I would press the button for: a kill I saw, or P(imposter) at my emergency level."""
        alive = self._alive_others(obs)
        if obs["role"] == IMPOSTER:
            return []
        bel = self.beliefs(alive)
        seen = [k["killer"] for k in (self.ev.kills_seen if self.ev else []) if k["killer"] in alive]
        # the players at my emergency level, most suspected first (filtered before the sort: same order)
        at = self.t.emergency_at
        strong = [n for n, _ in sorted(((n, p) for n, p in bel.items() if p >= at),
                                       key=lambda kv: (-kv[1], kv[0]))]
        return list(dict.fromkeys(seen + strong))

    def top_suspect(self, candidates: list[str], threshold: float = 0.3) -> str | None:
        ranked = sorted(((s, n) for n, s in self.suspicion.items() if n in candidates), reverse=True)
        return ranked[0][1] if ranked and ranked[0][0] >= threshold else None

    # -- roam decisions (one per ARIA module) ---------------------------------------------------------------
    def surveillance(self, obs: dict[str, Any]) -> dict[str, Any]:
        seen = [p["name"] for p in obs["players_in_view"]]
        bodies = [b["victim"] for b in obs["bodies_in_view"]]
        kill = next((k for k in (self.ev.kills_seen if self.ev else [])
                     if (k["killer"], k["victim"]) not in self._flagged), None)
        if kill is not None and obs["role"] != IMPOSTER:
            self._flagged.add((kill["killer"], kill["victim"]))  # said once: memory keeps it
            detail = f"I saw {kill['killer']} kill {kill['victim']} in {kill['room']}."
            # a killer dead or ejected since is no suspect the answer may name (memory keeps the kill)
            suspect = kill["killer"] if kill["killer"] in self._alive_others(obs) else NONE
            return {"players_seen": seen, "detail": detail, "suspect": suspect}
        if obs["role"] != IMPOSTER and self.t.emergency_at <= 1:
            known = [n for n in self.live_known(obs) if n not in self.called_for]
            if known:  # a player I am sure of: say why (memory keeps it) and call a meeting when I can
                here = f"{known[0]} is here. " if known[0] in seen else ""
                return {"players_seen": seen, "detail": f"{here}{self._why(known[0])}", "suspect": known[0]}
        if bodies:
            detail = f"The body of {bodies[0]} is here" + (f", with {', '.join(seen)} "
                                                           f"nearby." if seen else ".")
        else:
            detail = f"I see {', '.join(seen)}." if seen else "Nobody in sight."
        return {"players_seen": seen, "detail": detail, "suspect": NONE}

    def emergency(self, obs: dict[str, Any], live: list[str] | None = None) -> bool:
        """Whether I press the button now; ``live``: ``live_known(obs)`` when the caller has it already."""
        if self.t.emergency_at > 1:
            return False
        if live is None:
            live = self.live_known(obs)
        if live and obs["button_lock_ticks"] == 0 and live[0] not in self.called_for:
            self.called_for.add(live[0])
            return True
        return False

    def report(self, obs: dict[str, Any], victim: str) -> bool:
        if obs["role"] != IMPOSTER:
            return True
        if victim in self.reported_bodies:
            return False
        self.reported_bodies.add(victim)
        return self._imp(obs).report(obs, victim)

    def kill(self, obs: dict[str, Any]) -> tuple[str, str]:
        """KILL / STALK / DEFER and the target: the imposter's strategy (``mau.env.imposters``)."""
        return self._imp(obs).kill(obs)

    def _imp(self, obs: dict[str, Any]) -> Strategy:
        """My imposter strategy, made (and fed this observation) when first needed."""
        if self.scheme is None:
            self.observe(obs)
        assert self.scheme is not None
        return self.scheme

    def plan(self, obs: dict[str, Any]) -> tuple[str, str]:
        """Reactive planner: (mode, target) with mode in report | mission | explore | kill."""
        if obs["bodies_in_view"] and obs["role"] != IMPOSTER:
            return "report", min(obs["bodies_in_view"], key=lambda b: b["distance"])["victim"]
        cur = obs["current_action"]
        if obs["role"] == IMPOSTER:
            decision, target = self.kill(obs)
            if decision == "KILL":
                return "kill", target
            if cur and cur["kind"] in _MODE_OF:  # keep what is under way (a fake mission, a walk)
                return _MODE_OF[cur["kind"]], cur.get("target", NONE)
            if obs["fake_missions"] and self.rng.random() < self.t.fake_mission_p:
                return "mission", NONE
            return "explore", target if decision == "STALK" else NONE
        if cur and cur["kind"] == "report":  # on the way to a body I saw, even once it is out of view
            return "report", cur.get("target", NONE)
        # never drop a mission hold; a walk may turn to look at a still player
        if obs["holding_station"] is None:
            self._goto = self._still_spot(obs)
            if self._goto is not None:
                return "explore", NONE
        if cur and cur["kind"] in _MODE_OF:  # a mission being held is never dropped for a whim
            return _MODE_OF[cur["kind"]], cur.get("target", NONE)
        todo = [m for m in obs["missions"] if not m["done"]]
        if todo and self.rng.random() >= self.explore_p:
            return "mission", NONE
        return "explore", NONE

    def strategy(self, obs: dict[str, Any]) -> dict[str, Any]:
        alive = [p["name"] for p in obs["players_in_view"]]
        if obs["role"] == IMPOSTER:
            return {"strategy": "fake missions, kill only when one crewmate is alone with me, then leave",
                    "priority_target": alive[0] if alive else NONE}
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        top = self.top_suspect([n for n in self.suspicion if n not in gone], 0.3)
        return {"strategy": "finish my missions, report bodies, watch " + (top or "everyone"),
                "priority_target": top or NONE}

    def mission(self, obs: dict[str, Any]) -> int | None:
        if obs["role"] == IMPOSTER:
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
        if self._goto is not None:
            room, self._goto = self._goto, None
            return "wander", room
        return "wander", self.rng.choice(self.map.room_names)

    def _still_spot(self, obs: dict[str, Any]) -> str | None:
        """A crewmate goes to look at a player it was shown lying still where nobody works (3 step ends), or
        at a station for longer than a mission takes: likely a body. The place to go, once per player."""
        if self.ev is None or obs["role"] == IMPOSTER or len(self.ev.samples) < 3:
            return None
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]} | self._checked
        recent = self.ev.samples[-16:]
        for name in sorted({n for _, f in recent[-1:] for n in f} - gone - {self.name}):
            pos = recent[-1][1][name]
            run = 0
            for _, f in reversed(recent):
                q = f.get(name)
                if q is None or abs(q[0] - pos[0]) + abs(q[1] - pos[1]) > 0.3:
                    break
                run += 1
            at_station = any(abs(sx - pos[0]) + abs(sz - pos[1]) <= 2.0 for sx, sz in self.map.stations)
            if (not at_station and run >= 3) or run >= 15:
                self._checked.add(name)
                return self.map.nearest_room(pos[0], pos[1])  # a room: ARIA's move names rooms only
        return None

    def far_room(self, obs: dict[str, Any]) -> str:
        return self.map.farthest_room(obs["position"][0], obs["position"][2])

    # -- meetings --------------------------------------------------------------------------------------------
    def _new_meeting(self, obs: dict[str, Any]) -> bool:
        if obs["tick"] != self._meeting_tick:
            self._meeting_tick, self._read = obs["tick"], 0
            return True
        return False

    def read_transcript(self, obs: dict[str, Any]) -> None:
        """Take in what others said. A crewmate's evidence log reads every accusation (weighed by the model);
        an imposter only keeps count of who is accused, to vote with the table."""
        meeting = obs["meeting"]
        self._new_meeting(obs)
        if obs["role"] != IMPOSTER:
            self.observe(obs)
            self._read = len(meeting["transcript"])
            return
        self._imp(obs).observe(obs)
        if len(meeting["transcript"]) == self._read:
            return  # no new line (most meeting steps): nothing to count
        mates = set(obs.get("teammates", []))
        names = [p["name"] for p in obs["roster"]]
        for t in meeting["transcript"][self._read:]:
            if t["speaker"] == self.name:
                continue
            for name, strength in accusations(t["text"], t["speaker"], names).items():
                if name != self.name and name not in mates:
                    self.suspicion[name] = self.suspicion.get(name, 0.0) + (
                        0.6 if strength == STRONG else 0.2
                    )
        self._read = len(meeting["transcript"])

    def _where_i_was(self, obs: dict[str, Any]) -> str:
        """The room I say I was in: the truth, unless I am an imposter who killed since the last meeting (with
        claims on: the room my claims name)."""
        if self.speaker is not None:
            return self.speaker.said_room(obs)
        room = self.last_room or obs["room"]
        if obs["role"] == IMPOSTER and self.killed_since_meeting and obs.get("fake_missions") \
                and self.rung == "habit":  # the habits lie after a kill; the rungs above tell where they are
            room = obs["fake_missions"][0]["room"]
        return room

    def _why(self, name: str) -> str:
        """The evidence I say against ``name``: a kill I saw, my closest sighting by a victim, or my
        suspicion."""
        k = self._saw_kill_of(name)
        if k is not None:
            return f"I saw {name} kill {k['victim']} in {k['room']}."
        near = self._near_sighting(name)
        if near is not None and near[1] <= 6:
            return f"I saw {name} near where {near[0]} died ({near[1]:g} blocks away at {near[2]:g} s)."
        return f"I suspect {name}."

    def _reason(self, name: str) -> list[Act]:
        """What I say against ``name``: a kill I saw, my closest sighting by a victim, or my suspicion."""
        k = self._saw_kill_of(name)
        if k is not None:
            return [Act(SAW_KILL, who=name, victim=k["victim"], room=k["room"])]
        near = self._near_sighting(name)
        if near is not None and near[1] <= 6:
            return [Act(NEAR, who=name, victim=near[0], dist=near[1], at=near[2])]
        return [Act(SUSPECT, who=name)]

    def speech(self, obs: dict[str, Any]) -> tuple[str, str]:
        """(what to say, '' to pass; who it casts suspicion on, or 'none'): the acts of ``speech_acts`` in the
        phrasing both roles share (``mau.env.speech``)."""
        self.read_transcript(obs)
        acts = self.speech_acts(obs)
        self._said = acts  # what say() backs with claims
        m = obs["meeting"]
        return realise(acts, f"{self._seed}|{self.name}|{obs['tick']}|{m['round']}"), accused_by(acts) or NONE

    def speech_acts(self, obs: dict[str, Any]) -> list[Act]:
        room = self._where_i_was(obs)
        if obs["role"] == IMPOSTER:
            return self._imp(obs).speech(obs, room)
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        return self.crew_words(obs, room, alive, self._decide, self._reason, self.beliefs, self._saw_kill_of)

    def crew_words(
        self, obs: dict[str, Any], room: str, candidates: list[str],
        decide: Callable[[list[str]], tuple[str | None, float]], reason: Callable[[str], list[Act]],
        beliefs: Callable[[list[str]], dict[str, float]], saw: Callable[[str], Any] = lambda name: None,
    ) -> list[Act]:
        """What a crewmate says, from its reckoning (``decide``: top suspect and its P(imposter); ``reason``:
        what it says against a player; ``beliefs``; ``saw``: a kill it saw by a player). Round 1: its
        accusation with its reason (and a vote when sure enough), or where it was and that it saw nothing (a
        reporter says nothing of the report: the public record has it); round 2: where it was (every speaker,
        accused or not: ``STANCE``), then its suspect, else a vouch or agreement (``_answer``). Imposters
        speak through the same
        function with their own reckoning (``mau.env.imposters``); docs/game.md, "Speech"."""
        meeting = obs["meeting"]
        names = [p["name"] for p in obs["roster"]]
        if meeting["round"] not in (1, 2):
            return []
        top, p = decide(candidates)
        sure = top is not None and (p >= self.t.vote_threshold or saw(top) is not None)
        if meeting["round"] == 1:  # where I was, and whom I suspect most (a call to vote when sure)
            lead = [Act(ALIBI, room=room)]
            return (
                lead
                + (reason(top) if top is not None else [Act(NOTHING)])
                + ([Act(VOTE, who=top)] if sure else [])
            )
        # round 2, accused or not: where I stand; a call to vote when sure, else a vouch or agreement
        if sure:
            return [Act(STANCE, room=room), Act(VOTE, who=top)]
        return [Act(STANCE, room=room)] + self._answer(meeting, names, candidates, decide, beliefs)

    def _answer(self, meeting: dict[str, Any], names: list[str], alive: list[str],
                decide: Callable[[list[str]], tuple[str | None, float]],
                beliefs: Callable[[list[str]], dict[str, float]]) -> list[Act]:
        """Round 2 with no suspect of my own: vouch for an accused player I am sure of, or join an accusation
        my own reckoning now shares; else nothing."""
        accused: dict[str, str] = {}
        mine: set[str] = set()
        for t in meeting["transcript"]:
            for target in accusations(t["text"], t["speaker"], names):
                if t["speaker"] == self.name:
                    mine.add(target)
                elif target in alive:
                    accused.setdefault(target, t["speaker"])
        if not accused:
            return []
        bel = beliefs(alive)
        clear = [n for n in sorted(accused) if bel.get(n, 1.0) <= VOUCH_AT]
        if clear:
            return [Act(VOUCH, who=clear[0])]
        top, p = decide(alive)
        if top in accused and top not in mine and p >= self.t.vote_threshold:
            return [Act(AGREE, to=accused[top]), Act(VOTE, who=top)]
        return []

    def say(
        self, obs: dict[str, Any]
    ) -> tuple[str, str, list[dict[str, Any]] | None, list[str | None] | None]:
        """``speech`` with its structured claims: (text, suspicion cast on, claims, a private label per
        claim); claims and labels are None when claims are off."""
        text, on = self.speech(obs)
        if self.speaker is None:
            return text, on, None, None
        self.speaker.note_meeting(obs["tick"])
        if not text:
            return text, on, [], []
        vouched = next((a.who for a in self._said if a.kind == VOUCH), None)
        claims, intent = self.speaker.claims(obs, on if on != NONE else None, vouched)
        if self._words is not None:  # free mode: the claims in words, the same phrasings for every role
            since = max((t for t in self.speaker.meetings if t < obs["tick"]), default=0) / TICKS_PER_SECOND
            names = [p["name"] for p in obs["roster"]]
            text, claims = paraphrase.say(claims, self.name, self._words, paraphrase.SPEECH, names,
                                          list(self.map.room_names), obs["tick"] / TICKS_PER_SECOND, since)
            text = text or "Nothing to add from me."
        return text, on, claims, intent

    def vote(self, obs: dict[str, Any]) -> str:
        self.read_transcript(obs)
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        if obs["role"] == IMPOSTER:
            self.killed_since_meeting = False
            return self._imp(obs).vote(obs)
        top, p = self._decide(alive)
        return top if top is not None and p >= self.t.vote_threshold else SKIP

    def vote_answer(self, obs: dict[str, Any]) -> dict[str, Any]:
        """VOTE as an answer in the paper's format (``vote_target``, ``reasoning``) with my P(imposter) of
        every candidate (``beliefs``, the posterior that decided it, 3 decimals) and, in words, the evidence
        that moved it most (docs/detection.md, "The teacher's reasons"). An imposter gives only its vote."""
        target = self.vote(obs)
        if obs["role"] == IMPOSTER:
            return {"vote_target": target, "reasoning": "the evidence"}
        alive = [n for n in obs["meeting"]["alive_players"] if n != self.name]
        bel = self.posterior(alive)
        if not bel:
            return {"vote_target": target, "reasoning": "nobody to vote for"}
        if target == SKIP:
            top = max(sorted(bel), key=lambda n: bel[n])
            text = (f"Not sure enough to vote (I vote at {self.t.vote_threshold:.2f}); my top suspect is "
                    f"{self.explained(top, bel)}")
        else:
            text = self.explained(target, bel)
        return {"vote_target": target, "reasoning": text, "beliefs": {n: round(bel[n], 3) for n in alive}}

    def suspicion_reasoning(self, obs: dict[str, Any], on: str = NONE) -> str:
        """Why I say what I say (MEETING) or believe what I believe (BELIEF): my P(imposter) of ``on`` (else
        of my top suspect) and the evidence that moved it most."""
        if obs["role"] == IMPOSTER or self.ev is None:
            return "say what I know"
        bel = self.posterior(self._alive_others(obs))
        if not bel:
            return "nobody left to suspect"
        focus = on if on in bel else max(sorted(bel), key=lambda n: bel[n])
        return ("" if on in bel else "My top suspect is ") + self.explained(focus, bel)

    def _changes(self, obs: dict[str, Any]) -> list[dict[str, Any]]:
        """What changed in my suspicions since I last passed them on (BELIEF or REFLECT)."""
        if obs["role"] != IMPOSTER:
            self.beliefs(self._alive_others(obs))
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
        if obs["role"] != IMPOSTER:
            self.observe(obs)
        updates = self._changes(obs)
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        top = self.top_suspect([n for n in self.suspicion if n not in gone], 0.0)
        last = obs["ejections"][-1] if obs["ejections"] else None
        insight = (f"{last['name']} was ejected and was a {last['role']}." if last else "Nobody has been "
                                                                                        "ejected yet.")
        skill = ("Trust what I saw myself; weigh what others say by how credible they "
                 "are." if obs["role"] != IMPOSTER
                 else "Accuse early so that suspicion spreads away from me.")
        return {"insights": insight, "most_suspicious": top or NONE, "suspicion_updates": updates,
                "skill_learned": skill}


class ScriptedPolicy(ScriptedBrain):
    """The brain's decisions as one action per step (no harness). ``act(obs)``: an Action, or None to keep
    the running one."""

    # Not asked while others speak (mau.env.runner.play_match): read_transcript takes in every line said since
    # it last read, on its turn or at the vote, as it would have line by line (the evidence log and the
    # imposters' counts read a transcript's lines in order, once each).
    listens = False

    def act(self, obs: dict[str, Any]) -> Action | None:
        if not obs["alive"]:
            return None
        meeting = obs.get("meeting")
        if meeting is not None:
            if meeting["voting"]:
                return Action("vote", target=self.vote(obs))
            if meeting["your_turn"]:
                text, _, claims, intent = self.say(obs)
                if claims:
                    return Action("speak", text=text, claims=tuple(claims), intent=tuple(intent or ()))
                return Action("speak", text=text)
            self.read_transcript(obs)
            return None
        self.observe(obs)
        if obs["role"] == IMPOSTER:
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
            if self.emergency(obs, live):
                return Action("button")
            close = [p for p in obs["players_in_view"] if p["name"] in live and p["distance"] < 8]
            if close:
                return Action("flee", target=close[0]["name"])
        if self._goto is not None:  # a player lying still: go and look (plan set it)
            return Action("goto", target=self.move(obs)[1])
        if current is not None:
            return None
        if mode == "mission":
            return Action("mission", station=self.mission(obs))
        return Action("goto", target=self.move(obs)[1])

    def _imposter(self, obs: dict[str, Any]) -> Action | None:
        last = obs["last_action_result"] or {}
        if last.get("reason", "").startswith("killed"):
            return Action("goto", target=self.far_room(obs), narration="leave the body behind before anyone "
                                                                       "comes")
        if obs["bodies_in_view"]:
            victim = obs["bodies_in_view"][0]["victim"]
            if self.report(obs, victim):
                return Action("report", target=victim, narration="report it myself to look innocent")
        current = obs["current_action"]
        decision, target = self.kill(obs)
        if decision == "KILL":
            if current and current.get("kind") == "kill" and current.get("target") == target:
                return None
            return Action("kill", target=target, point=leave_point(self.map, obs, target),
                          narration=f"{target} is alone with me; strike now")
        if current is not None and current.get("kind") != "kill":
            return None
        if decision == "STALK":
            return Action("follow", target=target, narration=f"stalk {target} until they are alone")
        station = self.mission(obs) if self.rng.random() < 0.6 else None
        if station is not None:
            return Action("fake_mission", station=station, ticks=self.rng.choice([200, 400, 800]),
                          narration=f"pretend to work at station {station}")
        return Action("goto", target=self.move(obs)[1], narration="wander to look for someone alone")


STRATEGIES: dict[str, Any] = {"quiet": Strategy, "framer": Framer, "adversarial": Adversary}  # rung -> class


def make_strategy(rung: str, brain: Any) -> Strategy:
    """The imposter strategy of a rung name (the habits for the temperaments)."""
    return STRATEGIES.get(rung, Habit)(brain)
