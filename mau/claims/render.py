"""Claims as sentences: the fixed templates the transcript shows, and the parser of exactly those sentences.

``render`` gives one sentence per claim ("I was in Admin from 300 s to 345 s."); ``parse`` finds every such
sentence in a text and gives the claims back, so ``parse(render(c)) == c`` for every valid claim (tested on
every claim of a run). The parser reads the templates only: free speech around them ("I was doing my missions
near Admin.") is not a claim to it (``mau.claimsread.extract`` reads free text).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from mau.claims.grammar import ME


def seconds(x: float) -> str:
    """Game seconds as the templates write them: 300, 302.5, 302.25 (two decimals at most, exact)."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _who(who: str, cap: bool = True) -> str:
    return ("I" if cap else "me") if who == ME else who


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


SINCE, BEFORE = "at some time since the last meeting", "before this meeting"  # untimed, said explicitly
STAY = "for a while since the last meeting"  # an untimed place or company: a stay (check.UNTIMED_S)
RELATIVE = {"start": "at the start of the round", "end": "just before the meeting"}
UNTIMED_BEFORE = ("task", "body", "saw_kill")  # untimed kinds whose window is the whole match so far


def _when(c: dict[str, Any]) -> str:
    """"at T s", or "from A s to B s" (a window of one instant reads "at T s": the parser gives it back as
    from_s = to_s for the kinds that have no at_s), a relative time, or the untimed phrase of the kind."""
    if c.get("at_s") is not None:
        return f"at {seconds(c['at_s'])} s"
    if c.get("when") is not None:
        return RELATIVE[c["when"]]
    if c.get("from_s") is None:
        return BEFORE if c["k"] in UNTIMED_BEFORE else STAY if c["k"] in ("at", "with") else SINCE
    if c["from_s"] == c["to_s"] and c["k"] in ("at", "with"):
        return f"at {seconds(c['from_s'])} s"
    return f"from {seconds(c['from_s'])} s to {seconds(c['to_s'])} s"


def render(c: dict[str, Any]) -> str:
    """One canonical claim (``mau.claims.grammar.validate``) as its sentence."""
    k = c["k"]
    if k == "at":
        return f"{_who(c['who'])} was in {c['room']} {_when(c)}."
    if k == "task":
        return f"{_who(c['who'])} finished the task at station {c['station']} {_when(c)}."
    if k == "saw":
        return f"I saw {c['who']} in {c['room']} {_when(c)}."
    if k == "with":
        return f"I was with {c['who']} in {c['room']} {_when(c)}."
    if k == "saw_kill":
        room = f" in {c['room']}" if c.get("room") else ""
        return f"I saw {c['who']} kill {c['victim']}{room} {_when(c)}."
    if k == "body":
        near = f", with {_names(c['near'])} nearby" if c.get("near") else ""
        return f"I found the body of {c['victim']} in {c['room']} {_when(c)}{near}."
    if k == "accuse":
        return f"I accuse {c['who']}."
    if k == "vouch":
        return f"I vouch for {c['who']}."
    raise ValueError(f"unknown claim kind {k!r}")


def render_all(claims: list[dict[str, Any]]) -> str:
    return " ".join(render(c) for c in claims)


def utterance(text: str | None, claims: list[dict[str, Any]]) -> str:
    """What the transcript shows: the free text, then the claims' sentences."""
    parts = [(text or "").strip(), render_all(claims)]
    return " ".join(p for p in parts if p)


# -- the parser of the templates -----------------------------------------------------------------------------
_NUM = r"\d+(?:\.\d+)?"
_WHEN = (rf"(?:at (?P<at>{_NUM}) s|from (?P<a>{_NUM}) s to (?P<b>{_NUM}) s|(?P<since>{SINCE}|{STAY}|{BEFORE})"
         rf"|(?P<rel>{'|'.join(RELATIVE.values())}))")
_REL = {v: k for k, v in RELATIVE.items()}


def _alt(items: list[str]) -> str:
    return "|".join(re.escape(x) for x in sorted(items, key=len, reverse=True))


@lru_cache(maxsize=64)
def _patterns(names: tuple[str, ...], places: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    n, p = _alt(list(names)), _alt(list(places))
    start, end = r"(?:(?<=\s)|^)", r"(?=\s|$)"
    who = rf"(?P<who>I|{n})"
    forms = {
        "at": rf"{who} was in (?P<room>{p}) {_WHEN}\.",
        "task": rf"{who} finished the task at station (?P<station>\d+) {_WHEN}\.",
        "saw": rf"I saw (?P<who>{n}) in (?P<room>{p}) {_WHEN}\.",
        "with": rf"I was with (?P<who>{n}) in (?P<room>{p}) {_WHEN}\.",
        "saw_kill": rf"I saw (?P<who>{n}) kill (?P<victim>{n})(?: in (?P<room>{p}))? {_WHEN}\.",
        "body": rf"I found the body of (?P<victim>{n}) in (?P<room>{p}) {_WHEN}"
                rf"(?:, with (?P<near>(?:{n})(?:(?:, | and )(?:{n}))*) nearby)?\.",
        "accuse": rf"I accuse (?P<who>{n})\.", "vouch": rf"I vouch for (?P<who>{n})\.",
    }
    return [(k, re.compile(start + f + end)) for k, f in forms.items()]


def parse(text: str, names: list[str], places: list[str], speaker: str) -> list[dict[str, Any]]:
    """Every template sentence in ``text``, in order, as canonical claims (the speaker's own name as
    ``me``)."""
    found: list[tuple[int, dict[str, Any]]] = []
    for k, rx in _patterns(tuple(names), tuple(places)):
        for m in rx.finditer(text or ""):
            g = m.groupdict()
            c: dict[str, Any] = {"k": k}
            if g.get("who") is not None:
                who = g["who"]
                c["who"] = ME if who in ("I", speaker) else who
            if g.get("victim") is not None:
                c["victim"] = g["victim"]
            if g.get("room") is not None:
                c["room"] = g["room"]
            if g.get("station") is not None:
                c["station"] = int(g["station"])
            if g.get("at") is not None and k in ("at", "with"):
                c["from_s"] = c["to_s"] = float(g["at"])
            elif g.get("at") is not None:
                c["at_s"] = float(g["at"])
            elif g.get("a") is not None:
                c["from_s"], c["to_s"] = float(g["a"]), float(g["b"])
            elif g.get("rel") is not None:
                c["when"] = _REL[g["rel"]]
            if k == "body":
                c["near"] = re.split(r", | and ", g["near"]) if g.get("near") else []
            found.append((m.start(), c))
    found.sort(key=lambda x: x[0])
    return [c for _, c in found]
