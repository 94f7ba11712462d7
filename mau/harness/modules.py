"""ARIA's decision modules: for each, the JSON answer it asks for, how the answer is checked, and the
deterministic fallback used when the answer is missing or wrong. Parsing never raises past this module and
never evaluates model text: answers are data, checked field by field."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from mau import schema as F
from mau.schema import IMPOSTER, NONE, SKIP

WANDER = "wander"
# an answer's key for what a scripted stand-in hands the agent unrecorded (ModelResponse.private)
PRIVATE = "_private"

# Module names, as they appear in call records.
SURVEILLANCE, EMERGENCY, REPORT, KILL = "surveillance", "emergency", "report", "kill"
MEETING, VOTE, MOVE, MISSION = "meeting", "vote", "move", "mission"
# how every VOTE answer opens (the scripted expert's, hence BC targets'): read-outs
VOTE_PREFIX = '{"vote_target": "'
PLAN, PLAN_SHORT, STRATEGY, REFLECT = "plan", "plan_short", "strategy", "reflect"
# semantic memory's bounded belief update (after a meeting utterance or a surveillance flag)
BELIEF = "belief"
DECISION_MODULES = (KILL, REPORT, SURVEILLANCE, EMERGENCY, MEETING, VOTE, MOVE, MISSION)
ALL_MODULES = DECISION_MODULES + (PLAN, PLAN_SHORT, STRATEGY, REFLECT, BELIEF)
# the deterministic suspicion raise of a surveillance flag (BELIEF's fallback; window memory)
FLAG_DELTA = 0.1
CREW_MODES = ("report", "mission", "explore")
IMPOSTER_MODES = ("report", "mission", "explore", "kill")


class ParseError(ValueError):
    """The answer cannot be used; the message says why (it goes into the call record)."""


@dataclass
class Context:
    """What a module's checks need to know: the observation the prompt was built from."""

    obs: dict[str, Any]
    rooms: list[str]
    # the agent's scores (VOTE's fallback reads them)
    suspicion: dict[str, float] = field(default_factory=dict)
    flagged: str | None = None  # BELIEF after a surveillance flag: the player flagged

    @property
    def me(self) -> str:
        return self.obs["name"]

    @property
    def imposter(self) -> bool:
        return self.obs["role"] == IMPOSTER

    @property
    def alive(self) -> list[str]:
        """Players this agent believes alive: the roster less the known dead and the ejected."""
        m = self.obs.get("meeting")
        if m:
            return list(m["alive_players"])
        gone = set(self.obs["known_dead"]) | {e["name"] for e in self.obs["ejections"]}
        return [p["name"] for p in self.obs["roster"] if p["name"] not in gone]

    @property
    def in_view(self) -> list[str]:
        return [p["name"] for p in self.obs["players_in_view"]]

    @property
    def crew_in_view(self) -> list[str]:
        mates = set(self.obs.get("teammates", []))
        return [n for n in self.in_view if n not in mates]

    @property
    def stations(self) -> list[int]:
        if self.imposter:
            return [m["station"] for m in self.obs["fake_missions"]]
        return [m["station"] for m in self.obs["missions"] if not m["done"]]


# -- JSON extraction ---------------------------------------------------------------------------------------
def extract_json(text: str | None) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and a think block tolerated)."""
    if text is None or not text.strip():
        raise ParseError("empty answer")
    if "</think>" in text:
        text = text.split("</think>", 1)[1]
    start = text.find("{")
    if start < 0:
        raise ParseError("no JSON object in the answer")
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                try:
                    value = json.loads(text[start: i + 1])
                except json.JSONDecodeError as e:
                    raise ParseError(f"malformed JSON ({e.msg})") from None
                if not isinstance(value, dict):
                    raise ParseError("the answer is not a JSON object")
                return value
    raise ParseError("malformed JSON (unclosed object)")


# -- field checks ------------------------------------------------------------------------------------------
def _str(d: dict[str, Any], key: str, default: str | None = None) -> str:
    v = d.get(key, default)
    if v is None:
        raise ParseError(f"missing field {key!r}")
    if not isinstance(v, str):
        raise ParseError(f"{key}: expected a string, got {type(v).__name__}")
    return v.strip()


def _bool(d: dict[str, Any], key: str) -> bool:
    if key not in d:
        raise ParseError(f"missing field {key!r}")
    v = d[key]
    if not isinstance(v, bool):
        raise ParseError(f"{key}: expected true or false, got {type(v).__name__}")
    return v


def checked_name(value: Any, key: str, allowed: list[str], extra: tuple[str, ...] = ()) -> str:
    """Match a player name (or a keyword such as none / skip) case-insensitively."""
    if not isinstance(value, str):
        raise ParseError(f"{key}: expected a name, got {type(value).__name__}")
    v = value.strip().strip(".").lower()
    for option in list(extra) + list(allowed):
        if v == option.lower():
            return option
    shown = ", ".join(list(allowed) + list(extra)) or "(nobody)"
    raise ParseError(f"{key}: {value!r} is not one of {shown}")


def _reasoning(d: dict[str, Any]) -> str:
    v = d.get("reasoning", "")
    return v.strip() if isinstance(v, str) else ""


# -- one check and one fallback per module -----------------------------------------------------------------
def parse_surveillance(d: dict[str, Any], c: Context) -> dict[str, Any]:
    seen = d.get("players_seen")
    if not isinstance(seen, list) or not all(isinstance(s, str) for s in seen):
        raise ParseError("players_seen: expected a list of names")
    names = {n.lower(): n for n in c.alive + c.in_view}
    return {
        "players_seen": [names[s.strip().lower()] for s in seen if s.strip().lower() in names],
        "detail": _str(d, "detail", ""),
        "suspect": checked_name(
            d.get("suspect", NONE), "suspect", [n for n in names.values() if n != c.me], (NONE,)
        ),
    }


def fallback_surveillance(c: Context) -> dict[str, Any]:
    return {"players_seen": c.in_view, "detail": "", "suspect": NONE}


def parse_emergency(d: dict[str, Any], c: Context) -> dict[str, Any]:
    return {"should_call": _bool(d, "should_call"), "reasoning": _reasoning(d)}


def fallback_emergency(c: Context) -> dict[str, Any]:
    return {"should_call": False, "reasoning": ""}


def parse_report(d: dict[str, Any], c: Context) -> dict[str, Any]:
    return {"should_report": _bool(d, "should_report"), "reasoning": _reasoning(d)}


def fallback_report(c: Context) -> dict[str, Any]:
    return {"should_report": not c.imposter, "reasoning": ""}


def parse_kill(d: dict[str, Any], c: Context) -> dict[str, Any]:
    decision = checked_name(d.get("decision"), "decision", [], ("KILL", "DEFER", "STALK"))
    target = d.get("target", NONE)
    if decision == "DEFER":
        target = NONE if target in (None, NONE) else target
        return {
            "decision": decision, "target": target if isinstance(target, str) else NONE,
            "reasoning": _reasoning(d),
        }
    return {
        "decision": decision, "target": checked_name(target, "target", c.crew_in_view),
        "reasoning": _reasoning(d),
    }


def fallback_kill(c: Context) -> dict[str, Any]:
    return {"decision": "DEFER", "target": NONE, "reasoning": ""}


def _mode(d: dict[str, Any], c: Context) -> str:
    return checked_name(d.get("mode"), "mode", [], IMPOSTER_MODES if c.imposter else CREW_MODES)


def parse_plan(d: dict[str, Any], c: Context) -> dict[str, Any]:
    target = d.get("target", NONE)
    return {"mode": _mode(d, c), "target": target.strip() if isinstance(target, str) else str(target),
            "reasoning": _reasoning(d)}


def fallback_plan(c: Context) -> dict[str, Any]:
    if c.obs["bodies_in_view"] and not c.imposter:
        return {"mode": "report", "target": c.obs["bodies_in_view"][0]["victim"], "reasoning": ""}
    if c.stations:
        return {"mode": "mission", "target": NONE, "reasoning": ""}
    return {"mode": "explore", "target": NONE, "reasoning": ""}


def parse_plan_short(d: dict[str, Any], c: Context) -> dict[str, Any]:
    out = parse_plan(d, c)
    plan = d.get("plan", "")
    out["plan"] = plan.strip() if isinstance(plan, str) else ""
    return out


def fallback_plan_short(c: Context) -> dict[str, Any]:
    return {**fallback_plan(c), "plan": ""}


def parse_strategy(d: dict[str, Any], c: Context) -> dict[str, Any]:
    others = [n for n in c.alive if n != c.me]
    return {
        "strategy": _str(d, "strategy"),
        "priority_target": checked_name(d.get("priority_target", NONE), "priority_target", others, (NONE,)),
        "reasoning": _reasoning(d),
    }


def fallback_strategy(c: Context) -> dict[str, Any]:
    text = "blend in and fake missions" if c.imposter else "finish missions and report bodies"
    return {"strategy": text, "priority_target": NONE, "reasoning": ""}


def parse_mission(d: dict[str, Any], c: Context) -> dict[str, Any]:
    s = d.get("station")
    if isinstance(s, str) and s.strip().isdigit():
        s = int(s.strip())
    if not isinstance(s, int) or isinstance(s, bool):
        raise ParseError("station: expected a station number")
    if s not in c.stations:
        raise ParseError(f"station: {s} is not one of your open stations {c.stations}")
    return {"station": s, "reasoning": _reasoning(d)}


def fallback_mission(c: Context) -> dict[str, Any]:
    missions = c.obs["fake_missions"] if c.imposter else [m for m in c.obs["missions"] if not m["done"]]
    if not missions:
        return {"station": None, "reasoning": ""}
    x, z = c.obs["position"][0], c.obs["position"][2]
    best = min(missions, key=lambda m: (math.hypot(m["position"][0] - x, m["position"][1] - z), m["station"]))
    return {"station": best["station"], "reasoning": ""}


def parse_move(d: dict[str, Any], c: Context) -> dict[str, Any]:
    room = d.get("room")
    out: dict[str, Any] = {"reasoning": _reasoning(d), "room": None}
    if room not in (None, "", NONE):
        out["room"] = checked_name(room, "room", c.rooms)
    tp = d.get("target_player", WANDER if out["room"] else None)
    out["target_player"] = checked_name(tp, "target_player", [n for n in c.in_view], (WANDER,))
    return out


def fallback_move(c: Context) -> dict[str, Any]:
    # A different room each step, deterministically: the agent keeps moving rather than standing still.
    return {"target_player": WANDER, "room": c.rooms[c.obs["step"] % len(c.rooms)], "reasoning": ""}


# claims passed on to the world, which keeps world.claims.max_per_utterance and drops the rest
MAX_CLAIMS = 20


def parse_meeting(d: dict[str, Any], c: Context) -> dict[str, Any]:
    """The text, and the structured claims as given (with claims on; the world checks each one and drops a bad
    one with its reason, so a bad claim never costs the answer its text)."""
    text = _str(d, "response_text")
    out = {"response_text": text[:1000],
           "suspicion_cast_on": checked_name(d.get("suspicion_cast_on", NONE), "suspicion_cast_on",
                                      [n for n in c.alive if n != c.me], (NONE,)),
           "reasoning": _reasoning(d)}
    if "claims" in d:
        claims = d["claims"]
        out["claims"] = (
            (claims if isinstance(claims, list) else [claims])[:MAX_CLAIMS] if claims is not None else []
        )
    return out


def fallback_meeting(c: Context) -> dict[str, Any]:
    return {"response_text": "", "suspicion_cast_on": NONE, "reasoning": ""}


def parse_vote(d: dict[str, Any], c: Context) -> dict[str, Any]:
    """The vote (checked), its reasoning, and the expert's ``beliefs`` when it gave a usable set (optional:
    ``vote_beliefs``)."""
    out = {"vote_target": checked_name(d.get("vote_target"), "vote_target", c.alive, (SKIP,)),
           "reasoning": _reasoning(d)}
    bel = vote_beliefs(d.get(F.VOTE_BELIEFS), [n for n in c.alive if n != c.me])
    if bel is not None:
        out[F.VOTE_BELIEFS] = bel
    return out


def vote_beliefs(value: Any, candidates: list[str]) -> dict[str, float] | None:
    """A VOTE answer's ``beliefs`` (P(imposter) of each living other, docs/harness.md) when usable: an object
    that gives every candidate a number in [0, 1] (names matched without case; other keys ignored). None
    otherwise: beliefs are optional and a bad set never costs the vote."""
    if not isinstance(value, dict) or not candidates:
        return None
    lower = {str(k).strip().lower(): v for k, v in value.items()}
    out = {}
    for n in candidates:
        v = lower.get(n.lower())
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
            return None
        out[n] = float(v)
    return out


def fallback_vote(c: Context) -> dict[str, Any]:
    """The paper's: the highest suspicion above zero among the living others, else skip; never a teammate."""
    mates = set(c.obs.get("teammates", []))
    ranked = sorted(((-s, n) for n, s in c.suspicion.items()
                     if s > 0 and n in c.alive and n != c.me and n not in mates))
    return {"vote_target": ranked[0][1] if ranked else SKIP, "reasoning": ""}


def _updates(d: dict[str, Any], c: Context) -> list[dict[str, Any]]:
    ups = d.get("suspicion_updates", [])
    if not isinstance(ups, list):
        raise ParseError("suspicion_updates: expected a list of {player, delta}")
    updates = []
    for u in ups:
        if (
            not isinstance(u, dict)
            or not isinstance(u.get("delta"), (int, float))
            or isinstance(u.get("delta"), bool)
        ):
            raise ParseError("suspicion_updates: each item needs a player and a numeric delta")
        if not math.isfinite(u["delta"]):
            raise ParseError("suspicion_updates: delta must be finite")
        updates.append({"player": checked_name(u.get("player"), "suspicion_updates.player",
                                        [n for n in c.alive if n != c.me]), "delta": float(u["delta"])})
    return updates


def parse_belief(d: dict[str, Any], c: Context) -> dict[str, Any]:
    return {"suspicion_updates": _updates(d, c), "reasoning": _reasoning(d)}


def fallback_belief(c: Context) -> dict[str, Any]:
    """A surveillance flag still raises the flagged player a little; a meeting utterance changes nothing."""
    ups = [{"player": c.flagged, "delta": FLAG_DELTA}] if c.flagged and c.flagged in c.alive else []
    return {"suspicion_updates": ups, "reasoning": ""}


def parse_reflect(d: dict[str, Any], c: Context) -> dict[str, Any]:
    updates = _updates(d, c)
    others = [n for n in c.alive if n != c.me]
    return {
        "insights": _str(d, "insights", ""), "suspicion_updates": updates,
        "most_suspicious": checked_name(d.get("most_suspicious", NONE), "most_suspicious", others, (NONE,)),
        "skill_learned": _str(d, "skill_learned", ""),
    }


def fallback_reflect(c: Context) -> dict[str, Any]:
    return {"insights": "", "suspicion_updates": [], "most_suspicious": NONE, "skill_learned": ""}


@dataclass(frozen=True)
class Module:
    name: str
    images: tuple[str, ...]  # which views go with the call: "fwd" (facing), "back" (behind)
    parse: Callable[[dict[str, Any], Context], dict[str, Any]]
    fallback: Callable[[Context], dict[str, Any]]


MODULES: dict[str, Module] = {m.name: m for m in (
    Module(SURVEILLANCE, ("fwd", "back"), parse_surveillance, fallback_surveillance),
    Module(EMERGENCY, ("fwd",), parse_emergency, fallback_emergency),
    Module(REPORT, ("fwd",), parse_report, fallback_report),
    # behind-scan for witnesses, forward-scan for a target
    Module(KILL, ("back", "fwd"), parse_kill, fallback_kill),
    Module(PLAN, ("fwd",), parse_plan, fallback_plan),
    Module(PLAN_SHORT, ("fwd",), parse_plan_short, fallback_plan_short),
    Module(STRATEGY, (), parse_strategy, fallback_strategy),
    Module(MISSION, (), parse_mission, fallback_mission), Module(MOVE, ("fwd",), parse_move, fallback_move),
    Module(MEETING, (), parse_meeting, fallback_meeting), Module(VOTE, (), parse_vote, fallback_vote),
    Module(REFLECT, (), parse_reflect, fallback_reflect), Module(BELIEF, (), parse_belief, fallback_belief),
)}


class Decision(NamedTuple):
    """The checked answer, and why the fallback was used (None when the model's own answer was)."""

    answer: dict[str, Any]
    fallback_reason: str | None


def decide(module: str, text: str | None, error: str | None, ctx: Context) -> Decision:
    """The answer to use and the fallback reason (None when the model's own answer was used)."""
    m = MODULES[module]
    if error is not None:
        return Decision(m.fallback(ctx), error)
    try:
        return Decision(m.parse(extract_json(text), ctx), None)
    except ParseError as e:
        return Decision(m.fallback(ctx), str(e))
    except Exception as e:  # a check that trips over an odd value: still data, still a fallback
        return Decision(m.fallback(ctx), f"unusable answer ({type(e).__name__})")
