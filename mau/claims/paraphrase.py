"""Claims said in words: a paraphrase generator, seeded, whose every sentence knows its gold claims.

``say(claims, speaker, rng)`` turns canonical claims (``mau.claims.grammar``) into free text the way people
(and LLM players) say them, and gives back the claims that text states (its **gold**): a claim said without
its time is the untimed claim ("I was in Admin": some time since the last meeting), one said with a relative
time the claim with ``when`` ("just before the meeting"), one said with rounded times ("around 93 s") the
claim with those times; a hedge ("I think") changes nothing. Several claims go into one utterance, joined as
people join them; options add what a reader must not take for a claim (negations: "I was never in
Navigation") and misspelled names (the gold has them right).

Two pools of phrasings: ``dev`` (what extractors may be built on) and ``held`` (kept for the held-out part of
the labelled corpus, ``mau.claimsread.corpus``); ``all`` uses both. The scripted speakers of
``world.claims.mode: free`` speak through it (docs/claims.md, "Claims in words"). Nothing here reads a role:
the same phrasings and the same chances serve every speaker.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from mau import schema as F
from mau.claims.check import UNTIMED_S
from mau.claims.grammar import ME, RELATIVE_S
from mau.claims.render import seconds

POOLS = ("dev", "held", "all")
TIME_STYLES = ("exact", "approx", "untimed", "relative")


@dataclass(frozen=True)
class Style:
    """How an utterance is said: the chance of each time style, of a hedge per claim, of a negated distractor,
    of a misspelled name per mention, and the phrasing pool."""

    times: tuple[float, float, float, float] = (0.35, 0.2, 0.3, 0.15)  # exact, approx, untimed, relative
    hedge: float = 0.2
    negation: float = 0.0
    misspell: float = 0.0
    filler: float = 0.2
    pool: str = "all"
    # a place or company said without its time only where the untimed claim keeps its truth: a window at
    # least twice the checker's untimed stay (a truthful window holds the subject there half of it)
    untimed_keeps_truth: bool = False


# scripted speakers in free mode: no misspellings, no negated distractors; their words mean what they say
SPEECH = Style(untimed_keeps_truth=True)
CORPUS = Style(negation=0.25, misspell=0.12, filler=0.25)

# -- phrasings: (pool, template); {who} a subject ("I" or a name), {room} a place, {t} the time phrase -------
P = {
    "at_me": [("dev", "I was in {room}{t}"), ("dev", "I was doing tasks in {room}{t}"),
              ("dev", "I stayed in {room}{t}"), ("dev", "I spent my time in {room}{t}"),
              ("dev", "I've been in {room}{t}"),
              ("held", "I hung around {room}{t}"), ("held", "I was over in {room}{t}")],
    "at_other": [("dev", "{who} was in {room}{t}"), ("dev", "{who} stayed in {room}{t}"),
                 ("held", "{who} was hanging around {room}{t}")],
    "task": [("dev", "I finished the task at station {station}{t}"), ("dev", "I did my task at station "
                                                                             "{station}{t}"),
             ("dev", "I completed station {station}{t}"), ("held", "I got station {station} done{t}")],
    "saw": [("dev", "I saw {who} in {room}{t}"), ("dev", "I spotted {who} in {room}{t}"),
            ("dev", "I noticed {who} in {room}{t}"), ("held", "I caught sight of {who} in {room}{t}")],
    "with": [("dev", "I was with {who} in {room}{t}"), ("dev", "I was in {room} with {who}{t}"),
             ("dev", "{who} and I were together in {room}{t}"), ("held", "I stuck with {who} in {room}{t}")],
    "saw_kill": [("dev", "I saw {who} kill {victim}{in_room}{t}"),
                 ("dev", "I watched {who} kill {victim}{in_room}{t}"),
                 ("dev", "{who} killed {victim} right in front of me{in_room}{t}"),
                 ("held", "I witnessed {who} killing {victim}{in_room}{t}")],
    "body": [("dev", "I found {victim}'s body in {room}{t}{near}"),
             ("dev", "I found the body of {victim} in {room}{t}{near}"),
             ("dev", "I discovered {victim} dead in {room}{t}{near}"),
             ("held", "I came across the body of {victim} in {room}{t}{near}")],
    "accuse": [("dev", "I suspect {who}"), ("dev", "I think {who} is the imposter"), ("dev", "{who} is sus"),
               ("dev", "vote {who}"), ("dev", "{who} is lying"), ("held", "{who} looks really suspicious to "
                                                                          "me")],
    "vouch": [("dev", "I vouch for {who}"), ("dev", "{who} is innocent"), ("dev", "I trust {who}"),
              ("dev", "{who} is not the imposter"), ("held", "{who} is definitely a crewmate")],
}
NEAR = [("dev", ", with {names} nearby"), ("dev", ", and {names} {was} near it"),
        ("held", ", {names} {was} standing close")]
# time phrases: {a}, {b}, {x} numbers; relative ones by when
WINDOW = [("dev", " from {a} to {b} s"), ("dev", " from {a}s to {b}s"), ("dev", " between {a} and {b} "
                                                                                "seconds"),
          ("held", " from {a} until {b} seconds")]
MOMENT = [("dev", " at {x} s"), ("dev", " at {x}s"), ("dev", " at {x} seconds"), ("held", " at the {x} "
                                                                                          "second mark")]
APPROX_MOMENT = [("dev", " around {x} s"), ("dev", " at about {x} seconds"), ("held", " roughly at {x}s")]
APPROX_WINDOW = [("dev", " from about {a} to {b} s"), ("dev", " roughly between {a} and {b} seconds"),
                 ("held", " from around {a} till {b}s")]
RELATIVE = {"start": [("dev", " at the start of the round"), ("dev", " right after the last meeting"),
                      ("dev", " early on"), ("held", " at the beginning of the round")],
            "end": [("dev", " just before the meeting"), ("dev", " right before the meeting was called"),
                    ("dev", " just now"), ("held", " shortly before this meeting")]}
HEDGES = [
    ("dev", "I think "), ("dev", "I'm pretty sure "), ("dev", "if I remember right, "), ("dev", "I believe "),
    ("held", "as far as I can tell, "),
]
NEGATIONS = [("dev", "I was never in {room}"), ("dev", "I didn't go to {room}"), ("dev", "I did not see "
                                                                                         "{who} at all"),
             ("dev", "{who} wasn't in {room}"), ("held", "I never set foot in {room}")]
FILLERS = ["Nothing else to report.", "Let's think about this carefully.", "We need to be careful with our "
                                                                           "votes.",
           "That's all I have.", "Has anyone else seen anything?"]
JOINS = [". ", ", and ", ". Also, ", "; ", ". Then "]
PLACE_FORMS = [("dev", "{p}"), ("dev", "the corridor {a}-{b}"), ("dev", "the corridor between {a} and {b}"),
               ("held", "the hallway between {a} and {b}")]


def _pick(rng: random.Random, items: list[tuple[str, str]], pool: str) -> str:
    usable = [t for p, t in items if pool == "all" or p == pool]
    return rng.choice(usable)


def misspell(name: str, rng: random.Random) -> str:
    """A typo: two letters swapped, one dropped or one doubled (never the first letter)."""
    if len(name) < 4:
        return name
    i = rng.randrange(1, len(name) - 1)
    op = rng.randrange(3)
    if op == 0:
        return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    if op == 1:
        return name[:i] + name[i + 1:]
    return name[:i] + name[i] + name[i:]


class _Say:
    def __init__(
        self, speaker: str, rng: random.Random, style: Style, now_s: float | None, since_s: float | None
    ):
        self.speaker, self.rng, self.style = speaker, rng, style
        self.now_s, self.since_s = now_s, since_s

    def approx(self, x: float) -> int:
        """A time rounded as people round it, never past the meeting."""
        r = int(round(x))
        return int(x) if self.now_s is not None and r > self.now_s else r

    def relative(self, c: dict[str, Any]) -> str | None:
        """A relative time that keeps the claim's truth: "end" when its time reaches into the last RELATIVE_S
        seconds before the meeting, "start" when it begins within RELATIVE_S of the last meeting's end; any
        when the meeting's time is not known."""
        if c.get("when") is not None:
            return c["when"]
        if self.now_s is None or self.since_s is None:
            return self.rng.choice(("start", "end"))
        t0 = c["at_s"] if c.get("at_s") is not None else c.get("from_s")
        t1 = c["at_s"] if c.get("at_s") is not None else c.get("to_s")
        if t0 is None:
            return None
        fits = [
            w
            for w, ok in (("start", t0 <= self.since_s + RELATIVE_S), ("end", t1 >= self.now_s - RELATIVE_S))
            if ok
        ]
        return self.rng.choice(fits) if fits else None

    def name(self, n: str) -> str:
        return misspell(n, self.rng) if self.rng.random() < self.style.misspell else n

    def names(self, ns: list[str]) -> str:
        said = [self.name(n) for n in ns]
        return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]

    def place(self, p: str) -> str:
        if not p.startswith("corridor "):
            return p
        a, b = p.removeprefix("corridor ").split("-", 1)
        return _pick(self.rng, PLACE_FORMS[1:], self.style.pool).format(a=a, b=b, p=p)

    def time(self, c: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The time phrase of a claim and the claim it then states."""
        k = c["k"]
        if k in ("accuse", "vouch"):
            return "", c
        rng, pool = self.rng, self.style.pool
        style = rng.choices(TIME_STYLES, weights=self.style.times)[0]
        when = self.relative(c) if style == "relative" and k in F.CLAIM_WHEN_KINDS else None
        if style == "relative" and when is None:
            style = "exact"
        timeless = {key: v for key, v in c.items() if key not in ("at_s", "from_s", "to_s", "when")}
        has_time = any(c.get(key) is not None for key in ("at_s", "from_s"))
        if style == "untimed" and self.style.untimed_keeps_truth and has_time and k in ("at", "with") and (
                c.get("from_s") is None or c["to_s"] - c["from_s"] < 2 * UNTIMED_S):
            style = "exact"  # "I was in Admin" would ask a stay the window does not promise
        if style == "untimed" or (not has_time and style in ("exact", "approx")):
            return "", timeless
        if style == "relative" and when is not None:
            return _pick(rng, RELATIVE[when], pool), dict(timeless, when=when)
        num = seconds if style == "exact" else (lambda x: str(self.approx(x)))
        back = float if style == "exact" else (lambda x: float(self.approx(x)))
        moment, window = (MOMENT, WINDOW) if style == "exact" else (APPROX_MOMENT, APPROX_WINDOW)
        if c.get("at_s") is not None:
            return _pick(rng, moment, pool).format(x=num(c["at_s"])), dict(timeless, at_s=back(c["at_s"]))
        a, b = c["from_s"], c["to_s"]
        if num(a) == num(b):
            if k in ("at", "with"):
                return _pick(rng, moment, pool).format(x=num(a)), dict(timeless, from_s=back(a), to_s=back(a))
            return _pick(rng, moment, pool).format(x=num(a)), dict(timeless, at_s=back(a))
        return _pick(rng, window, pool).format(a=num(a), b=num(b)), dict(
            timeless, from_s=back(a), to_s=back(b)
        )

    def claim(self, c: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """One claim in words (hedged or not) and the claim it states."""
        t, gold = self.time(c)
        k, pool, rng = c["k"], self.style.pool, self.rng
        who = c.get("who")
        key = ("at_me" if who == ME else "at_other") if k == "at" else k
        if k == "task" and who != ME:
            return self._other_task(c, t, gold)
        fields: dict[str, Any] = {"t": t, "who": "I" if who in (ME, None) else self.name(who)}
        if "room" in c and c.get("room") is not None:
            fields["room"] = self.place(c["room"])
        if k == "task":
            fields["station"] = c["station"]
        if k in ("saw_kill", "body"):
            fields["victim"] = self.name(c["victim"])
        if k == "saw_kill":
            keep_room = c.get("room") is not None and rng.random() < 0.75
            fields["in_room"] = f" in {fields['room']}" if keep_room else ""
            if not keep_room:
                gold = {key: v for key, v in gold.items() if key != "room"}
        if k == "body":
            near = list(c.get("near") or [])
            fields["near"] = _pick(rng, NEAR, pool).format(names=self.names(near), was="was" if len(near) == 1
                                                           else "were") if near else ""
        text = _pick(rng, P[key], pool).format(**fields)
        if rng.random() < self.style.hedge and k not in ("accuse", "vouch"):
            text = _pick(rng, HEDGES, pool) + text
        return text, gold

    def _other_task(self, c: dict[str, Any], t: str, gold: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return f"{self.name(c['who'])} finished the task at station {c['station']}{t}", gold

    def negation(self, names: list[str], places: list[str]) -> str:
        others = [n for n in names if n != self.speaker]
        return _pick(self.rng, NEGATIONS, self.style.pool).format(room=self.place(self.rng.choice(places)),
                                                                  who=self.name(self.rng.choice(others)))


def _sentence(parts: list[str], rng: random.Random) -> str:
    out = parts[0]
    for p in parts[1:]:
        j = rng.choice(JOINS)
        out += j + (p[0].upper() + p[1:] if j == ". " else p)
    return out[0].upper() + out[1:] + "."


def say(claims: list[dict[str, Any]], speaker: str, rng: random.Random, style: Style = SPEECH,
        names: list[str] | None = None, places: list[str] | None = None, now_s: float | None = None,
        since_s: float | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(free text, the claims it states) for canonical ``claims`` said by ``speaker`` at the meeting of game
    time ``now_s`` (the last meeting ended at ``since_s``: relative times are used only where they keep a
    claim's
    truth); ``names`` and ``places`` (the roster and the map's places) serve the negated distractors."""
    s = _Say(speaker, rng, style, now_s, since_s)
    parts, gold = [], []
    for c in claims:
        text, g = s.claim(c)
        parts.append(text)
        gold.append(g)
    if names and places and rng.random() < style.negation:
        parts.insert(rng.randrange(len(parts) + 1), s.negation(names, places))
    text = _sentence(parts, rng) if parts else ""
    if rng.random() < style.filler:
        filler = rng.choice(FILLERS)
        text = f"{filler} {text}".strip() if rng.random() < 0.5 else f"{text} {filler}".strip()
    return text, gold
