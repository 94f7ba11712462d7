"""The top rung of the imposter ladder: an imposter that plans against a model of the crewmates' observer
(``mau.env.imposters``, docs/game.md "The imposter ladder").

``Lens`` is the imposter's estimate of what each crewmate perceived, built from its own perception only: at
every step end, for each crewmate whose place it perceives, the players and bodies it perceives that stand in
that crewmate's line of sight within view distance (facing unknown: assumed all round); every crewmate takes
in the public record of meetings. Each crewmate's estimated evidence is an ``EvidenceLog``, read by the
observer's model (``mau.infer.model``) with the parameters of the detector it plans against
(``ScriptedBrain.plans_against``: the model spec's ``plans_against`` file, else the shipped teacher's): a
white-box attack on that detector, from the imposter's own perception.

At a report decision, a speech and a vote, ``Adversary`` plays each candidate out on that model (a fork: the
evidence the candidate would add, on top of what each crewmate already has) and takes the one with the lowest
cost: the crewmates' mean P(imposter) of itself and its living teammate, minus a gain for the crewmate that
looks most guilty (a vote to eject) and plus the value of the predicted ejection at a vote. It never forks
the world: the world's state holds what the imposter cannot know (crewmates out of its sight, their memories).
"""

from __future__ import annotations

import math
from typing import Any

from mau.env.imposters import QUIET_RADIUS, RISK_MAX, Strategy
from mau.env.speech import VOTE, VOUCH, Act, realise
from mau.infer import model as infer
from mau.infer.evidence import EvidenceLog
from mau.infer.hearsay import accusations
from mau.schema import SKIP

GUILT_GAIN = 0.5  # cost units per unit of the most suspected crewmate's mean P(imposter)
EJECT_VALUE = {"crew": -1.0, "mate": 1.0, "me": 2.0, "none": 0.0}  # a vote's predicted outcome
# a crewmate votes its top suspect when its P(imposter) reaches this (the teacher's expert)
CREW_VOTE_AT = 0.6


class Lens:
    """What the imposter estimates each crewmate perceived (one ``EvidenceLog`` per crewmate)."""

    def __init__(self, me: str, roster: list[str], mates: set[str], view: float):
        self.me, self.roster, self.mates, self.view = me, list(roster), set(mates), view
        self.logs = {c: EvidenceLog(c, roster) for c in roster if c != me and c not in mates}
        self.public_dead: list[str] = []

    def crew(self, obs: dict[str, Any]) -> list[str]:
        alive = set(self.alive(obs))
        return [c for c in self.logs if c in alive]

    @staticmethod
    def alive(obs: dict[str, Any]) -> list[str]:
        if obs.get("meeting"):
            return list(obs["meeting"]["alive_players"])
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        return [p["name"] for p in obs["roster"] if p["name"] not in gone]

    def observe(self, obs: dict[str, Any], fresh: dict[str, tuple[float, float]], game_map: Any) -> None:
        """One of my observations: each crewmate's estimated view of it."""
        if obs.get("meeting") is not None:
            self.public_dead = list(dict.fromkeys(self.public_dead + list(obs["known_dead"])))
            for c, log in self.logs.items():
                log.observe({**obs, "known_dead": self.public_dead})
            return
        known = dict(fresh)
        known[self.me] = (float(obs["position"][0]), float(obs["position"][2]))
        bodies = obs["bodies_in_view"]
        for c, log in self.logs.items():
            base = {"tick": obs["tick"], "state_mode": "ego", "meeting": None, "alive": True,
                    "known_dead": list(self.public_dead), "ejections": obs["ejections"],
                    "meetings_public": obs.get("meetings_public") or [], "players_in_view": [],
                    "bodies_in_view": []}
            if c in known:
                cx, cz = known[c]
                base["room"] = game_map.place_name(cx, cz)
                base["players_in_view"] = [
                    {"name": n, "position": [x, z], "room": game_map.place_name(x, z)}
                    for n, (x, z) in sorted(known.items())
                    if n != c
                    and math.hypot(x - cx, z - cz) <= self.view
                    and game_map.line_of_sight(cx, cz, x, z)
                ]
                base["bodies_in_view"] = [
                    b for b in bodies if math.hypot(b["position"][0] - cx, b["position"][1] - cz) <= self.view
                    and game_map.line_of_sight(cx, cz, b["position"][0], b["position"][1])]
            log.observe(base)

    def beliefs(self, c: str, obs: dict[str, Any], extra: list[dict[str, Any]], params: infer.Detector,
                k: int) -> dict[str, float]:
        cands = [n for n in self.alive(obs) if n != c]
        return infer.beliefs(c, self.roster, cands, k, self.logs[c].items() + extra, params)[0]


class Adversary(Strategy):
    name = "adversarial"

    def __init__(self, brain: Any):
        super().__init__(brain)
        self.lens: Lens | None = None

    def observe(self, obs: dict[str, Any]) -> None:
        super().observe(obs)
        if self.lens is None:
            self.lens = Lens(self.brain.name, self.mind.roster, self.mind.mates, self.mind.view)
        if obs.get("meeting") is None and obs["tick"] == getattr(self, "_lens_tick", None):
            return
        self._lens_tick = obs["tick"]
        self.lens.observe(obs, self.mind.fresh(obs), self.brain.map)

    # -- the cost of a fork ---------------------------------------------------------------------------------
    def cost(self, obs: dict[str, Any], extra: dict[str, list[dict[str, Any]]] | None = None,
             guilt: bool = True, dead: str | None = None) -> float:
        """Mean over living crewmates (``dead``: one the fork kills) of P(me) + P(living teammate), each with
        its ``extra`` evidence, minus the gain of the most suspected crewmate's mean P(imposter)."""
        assert self.lens is not None
        me, mates = self.brain.name, self.mind.mates
        crew = [c for c in self.lens.crew(obs) if c != dead]
        if not crew:
            return 0.0
        k = self.mind.n_imposters
        total, guilty = 0.0, {}
        for c in crew:
            bel = self.lens.beliefs(c, obs, (extra or {}).get(c, []), self.brain.plans_against, k)
            total += bel.get(me, 0.0) + sum(bel.get(m, 0.0) for m in mates)
            for n, p in bel.items():
                if n != me and n not in mates:
                    guilty[n] = guilty.get(n, 0.0) + p
        gain = max(guilty.values()) / len(crew) if guilty and guilt else 0.0
        return total / len(crew) - GUILT_GAIN * gain

    def _heard(self, obs: dict[str, Any], acts: list[Act]) -> dict[str, list[dict[str, Any]]]:
        """The evidence every crewmate would take from my saying ``acts`` now: its accusations, read as
        crewmates read speech (``mau.infer.hearsay``)."""
        if not acts or self.lens is None:
            return {}
        text = realise(acts, "cost")  # every paraphrase of an act reads the same to hearsay
        me = self.brain.name
        heard = accusations(text, me, self.lens.roster)
        items = [{"k": "accuse", "p": me, "target": t, "s": s} for t, s in heard.items()]
        return {c: items for c in self.lens.logs}

    # -- decisions ------------------------------------------------------------------------------------------
    def kill(self, obs: dict[str, Any]) -> tuple[str, str]:
        """Unwatched kills as the quiet imposter, the target whose death costs least (witnesses by the
        lens)."""
        crew = [p for p in self.crew_in_view(obs) if p["distance"] <= QUIET_RADIUS]
        if obs.get("kill_cooldown_ticks", 1) != 0 or not crew:
            return super().kill(obs)
        best = None
        for p in crew:
            spot = (float(p["position"][0]), float(p["position"][1]))
            if (
                self.mind.witnesses(obs, p["name"], spot)
                or self.mind.exposure(obs, p["name"], spot) > RISK_MAX
            ):
                continue
            saw = {
                c: [{"k": "saw_kill", "p": self.brain.name}]
                for c in self.watchers(obs, spot)
                if c != p["name"]
            }
            c = self.cost(obs, saw, guilt=False, dead=p["name"])
            if best is None or c < best[0]:
                best = (c, p["name"])
        if best is not None and best[0] <= self.cost(obs, guilt=False, dead=best[1]) + 0.05:
            return "KILL", best[1]
        return "DEFER", crew[0]["name"]

    def watchers(self, obs: dict[str, Any], spot: tuple[float, float]) -> list[str]:
        """Crewmates whose place I perceive with the spot in their line of sight within view distance."""
        fresh = self.mind.fresh(obs)
        return [c for c, (x, z) in fresh.items() if self.lens is not None and c in self.lens.logs
                and math.hypot(x - spot[0], z - spot[1]) <= self.mind.view
                and self.brain.map.line_of_sight(x, z, spot[0], spot[1])]

    def report(self, obs: dict[str, Any], victim: str) -> bool:
        """Report when the report lowers the crewmates' suspicion of us (a reporter is rarely an imposter, to
        an observer fitted on habits) more than staying silent does."""
        crew = self.lens.crew(obs) if self.lens else []
        rep = {c: [{"k": "reported", "p": self.brain.name}] for c in crew}
        return self.cost(obs, rep, guilt=False) < self.cost(obs, guilt=False)

    def accuse_whom(self, obs: dict[str, Any], crew: list[str]) -> str | None:
        """Whom I accuse (as often as the table accuses): the player whose accusation, with my reason against
        it, costs least; my living teammate too (two imposters rarely accuse each other, so an
        observer reads an accusation of my teammate as a sign that we are not a pair)."""
        mates = [m for m in sorted(self.mind.mates) if m in obs["meeting"]["alive_players"]]
        if not crew and not mates:
            return None
        scored = [
            (self.cost(obs, self._heard(obs, self.reason(x) + [Act(VOTE, who=x)])), x) for x in crew + mates
        ]
        return min(scored)[1]

    def vouchee(self, obs: dict[str, Any], tab: dict[str, float]) -> str | None:
        """Whom I vouch for: of my teammate (when accused) and the accused crewmates, the cheapest."""
        alive = obs["meeting"]["alive_players"]
        cands = [n for n in sorted(tab) if n in alive]
        if not cands:
            return None
        return min((self.cost(obs, self._heard(obs, [Act(VOUCH, who=n)])), n) for n in cands)[1]

    def vote(self, obs: dict[str, Any]) -> str:
        """The vote whose predicted outcome (each crewmate votes its top suspect when sure, by the lens) and
        suspicion cost least."""
        meeting = obs["meeting"]
        me, mates = self.brain.name, self.mind.mates
        alive = [n for n in meeting["alive_players"] if n != me]
        assert self.lens is not None
        k = self.mind.n_imposters
        counts: dict[str, int] = {}
        for c in self.lens.crew(obs):
            bel = self.lens.beliefs(c, obs, [], self.brain.plans_against, k)
            top = max(sorted(bel), key=lambda n: bel[n]) if bel else None
            if top is not None and bel[top] >= CREW_VOTE_AT:
                counts[top] = counts.get(top, 0) + 1
        n_meeting = len(obs.get("meetings_public") or []) + 1
        best = None
        for choice in [SKIP] + sorted(alive):
            tally = dict(counts)
            if choice != SKIP:
                tally[choice] = tally.get(choice, 0) + 1
            voters = len(meeting["alive_players"])
            top = max(tally.values(), default=0)
            leaders = [n for n, v in tally.items() if v == top]
            skips = voters - sum(tally.values())
            out = leaders[0] if len(leaders) == 1 and top > skips else None
            what = "none" if out is None else "me" if out == me else "mate" if out in mates else "crew"
            # a skip is evidence too where the detector weighs it (``skipped``; 0 in issue 29's likelihoods)
            vote_item = (
                [{"k": "skipped", "p": me}] if choice == SKIP
                else [{"k": "vote", "meeting": n_meeting, "p": me, "target": choice}]
            )
            c = self.cost(obs, {x: vote_item for x in self.lens.crew(obs)}, guilt=False) + EJECT_VALUE[what]
            if best is None or c < best[0] - 1e-9:
                best = (c, choice)
        return best[1] if best else SKIP

