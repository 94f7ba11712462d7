"""Claims from free text: what a player said without structured claims, read as claims of the grammar so that
the checker can judge it (docs/claims.md, "Extraction").

Two readers:

- ``spot``: the templates' parser (``mau.claims.render.parse``) plus a reader of common phrasings. It finds
  the players (misspelled names too: one letter swapped, dropped or doubled) and the places (corridors said
  as "the corridor between Admin and Storage"), cuts the text into clauses, skips negated ones ("I was never
  in Navigation"), and reads each clause's claims and its time: a window ("from 40 to 100 s", "between 40 and
  100 seconds"), a moment ("at 93 s", "around 93 s"), a relative time ("just before the meeting": ``when``),
  or none (an untimed claim; the checker gives it its meaning). No model, no cost.
- ``Extractor``: a model in JSON mode through any harness backend (the caller passes a completion function)
  given the utterance, the roster, the places, the meeting's time and the grammar; its answer is checked by
  the grammar and a bad claim dropped. An answer that is no JSON object with a claims list is asked again
  (``retries``), then counted as a parse failure (``stats``; the share is reported). Answers are cached by
  (prompt version, model, hash of the prompt).

``score`` measures a reader on labelled utterances (the corpus of ``mau.claimsread.corpus``): per claim kind
and pooled, precision, recall and F1 with a claim matching a gold claim on its kind, its subject, its place
or object and its time as said (``match_key``; ``loose_key`` leaves times aside).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mau import schema as F
from mau.claims.grammar import KINDS, ME, STANCE_KINDS, Scope, validate_all
from mau.claims.render import parse, render
from mau.harness.completion import Completion

PROMPT_VERSION = "2"
HANDWRITTEN = Path(__file__).parent / "data" / "claims_handwritten.jsonl"



@dataclass(frozen=True)
class Context:
    """What an utterance's claims are read against."""

    speaker: str
    names: tuple[str, ...]
    places: tuple[str, ...]
    meeting_s: float
    since_s: float  # the last meeting's end (0 at the first)
    n_stations: int = 64

    def scope(self) -> Scope:
        return Scope(self.names, self.speaker, self.places, self.n_stations, self.meeting_s)


# -- the reader of phrasings ---------------------------------------------------------------------------------
def _edits1(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter swapped with its neighbour, dropped or added (case aside)."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    if abs(len(a) - len(b)) != 1:
        return False
    s, t = (a, b) if len(a) < len(b) else (b, a)
    return any(t[:i] + t[i + 1:] == s for i in range(len(t)))


def _alt(items: list[str]) -> str:
    return "|".join(re.escape(x) for x in sorted(items, key=len, reverse=True))


N = r"@N\d+@"  # a player, once the text is read into tokens
PL = r"@P\d+@"  # a place
NUM = r"(\d+(?:\.\d+)?)"
UNIT = r"\s*(?:s\b|secs?\b|seconds?\b)"
_WINDOW = re.compile(rf"\b(?:from|between)\s+(?:about\s+|around\s+|roughly\s+)?{NUM}(?:{UNIT})?\s+"
                     rf"(?:to|and|until|till|-)\s+(?:about\s+|around\s+)?{NUM}(?:{UNIT})?", re.I)
_MOMENT = re.compile(rf"\b(?:at|around|about)\s+(?:about\s+|around\s+|roughly\s+)?(?:the\s+)?{NUM}"
                     rf"(?:{UNIT}|\s*second mark)", re.I)
_REL = {"start": re.compile(r"\b(?:at the (?:start|beginning) of the round|right after the (?:last "
                            r")?meeting|early on|at the (?:start|beginning)|after the last meeting "
                            r"ended)\b", re.I),
        "end": re.compile(r"\b(?:just|right|shortly) before (?:the|this) meeting|before the meeting was "
                          r"called|just now\b|right before the body was (?:found|reported)", re.I)}
_NEG = re.compile(
    r"\b(?:not|never|no|nobody|didn't|don't|doesn't|wasn't|weren't|haven't|hasn't|isn't|n't)\b", re.I
)
_CLAUSE = re.compile(r"(?<!\d)[.!?;]|[.!?;](?=\s|$)|(?:,\s*(?:and\s+)?then|\band then)\b(?!\s+(?:the\s+)?@P)|"
                     r",\s*and\b|,\s*but\b|\bbut\b|,\s*(?=I\b|@N\d+@\s+(?:is|was|seems|looks)\b)", re.I)
_VOUCH_NEG = re.compile(r"\b(?:is|was)\s*(?:not|n't)\s+(?:the|an|a)\s+(?:imposter|impostor|killer)", re.I)


_CONTRACTION = re.compile(r"\b(he|she|it|they|we|I)'(s|re|m)\b", re.I)
_PRONOUN = re.compile(r"\b(?:(his|her)\s+(?=body\b|corpse\b)|(he|she|him|her|they|them))\b", re.I)


def _pronouns(text: str) -> str:
    """Each third-person pronoun as the player named last before it ("I saw him" -> "I saw @N3@"); "her body"
    as "@N3@'s body". Left as said when no player was named before it."""
    out, last, pos = [], None, 0
    for m in re.finditer(rf"{N}|{_PRONOUN.pattern}", text, re.I):
        if m.group(0).startswith("@N"):
            last = m.group(0)
            continue
        if last is None:
            continue
        out.append(text[pos:m.start()] + (f"{last}'s " if m.group(1) else last))
        pos = m.end()
    return "".join(out) + text[pos:]


class Reader:
    """The phrasing reader for one context: names and places become tokens, then clauses are read."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.names = list(ctx.names)
        self.places = list(ctx.places)
        corridors = {}
        for p in self.places:
            if p.startswith("corridor "):
                a, b = p.removeprefix("corridor ").split("-", 1)
                corridors[(a.lower(), b.lower())] = corridors[(b.lower(), a.lower())] = p
        self.corridors = corridors
        rooms = [p for p in self.places if not p.startswith("corridor ")]
        r = _alt(rooms)
        self._corr = re.compile(
            rf"\b(?:the\s+)?(?:corridor|hallway|hall)\s+between\s+(?:the\s+)?({r})\s+and\s+"
            rf"(?:the\s+)?({r})\b|\b(?:the\s+)?(?:corridor\s+)?({r})-({r})(?:\s+(?:corridor|"
            rf"hallway|hall))?\b", re.I,
        )
        self._place = re.compile(rf"\b(?:the\s+)?({r})\b", re.I)

    # tokens: @Pi@ for places, @Nj@ for names
    def tokens(self, text: str) -> str:
        """The text with places as ``@Pi@`` and players as ``@Nj@`` (misspelled names too; a pronoun: the
        player named last before it)."""
        text = _CONTRACTION.sub(
            lambda m: m.group(1) + {"s": " is", "re": " are", "m": " am"}[m.group(2).lower()], text
        )

        def corr(m: re.Match) -> str:
            a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            p = self.corridors.get((a.lower(), b.lower()))
            return f"@P{self.places.index(p)}@" if p else m.group(0)

        text = self._corr.sub(corr, text)
        text = self._place.sub(lambda m: f"@P{self._room(m.group(1))}@", text)

        def name(m: re.Match) -> str:
            w = m.group(0)
            base = w[:-2] if w.lower().endswith("'s") else w
            hit = [i for i, n in enumerate(self.names) if n.lower() == base.lower()]
            if not hit and base[:1].isupper() and len(base) >= 3:
                hit = [i for i, n in enumerate(self.names) if len(n) >= 4 and _edits1(n, base)]
            if len(hit) != 1:
                return w
            return f"@N{hit[0]}@" + ("'s" if base != w else "")

        text = re.sub(r"\b[A-Za-z][a-z]+(?:'s)?\b", name, text)
        return _pronouns(text)

    def _room(self, said: str) -> int:
        return next(i for i, p in enumerate(self.places) if p.lower() == said.lower())

    def name(self, tok: str) -> str:
        return self.names[int(tok[2:-1])]

    def place(self, tok: str) -> str:
        return self.places[int(tok[2:-1])]


NS = rf"{N}(?:(?:\s*,\s*|\s*,?\s+and\s+){N})*"  # a list of names
PREP = r"(?:in|at|near|around|inside|by|into|through|over in|to|hanging around|entering|leaving|heading into)"
ME_VERB = (r"\bI(?:'ve| have)?\s+(?:was|been|stayed|spent(?: my time| some time| time)?|hung around|hung out|"
           r"went|walked|headed|ran|came|am|was doing (?:tasks|my tasks|missions|my missions|my task|a task)|"
           r"was over|was just|got)\b")
KILL = r"(?:kill|killing|murder|murdering|stab|stabbing)"
IMPOSTER = r"(?:imposter|impostor|killer)"
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (k, re.compile(p, re.I))
    for k, p in [
        (
            "saw_kill",
            rf"(?:saw|watched|witnessed|seen)\s+(?P<who>{N})\s+{KILL}\s+(?P<victim>{N})|"
            rf"(?P<who2>{N})\s+(?:killed|murdered|stabbed)\s+(?P<victim2>{N})",
        ),
        (
            "body",
            rf"(?:found|discovered|came "
            rf"across|saw|reported|spotted)\s+(?:the\s+)?(?:(?:dead\s+)?body\s+of\s+"
            rf"(?P<victim>{N})|(?P<victim2>{N})'s\s+(?:dead\s+)?(?:body|corpse)|(?P<victim3>{N})\s+dead)|"
            rf"(?P<victim4>{N})'s\s+body\s+(?:was|lay)",
        ),
        (
            "task",
            r"(?:finished|did|completed|done|got|fixed)\s+(?:(?:the|my|a)\s+)?(?:task|mission)?s?\s*"
            r"(?:at\s+|in\s+|on\s+)?station\s+(?P<station>\d+)|"
            r"station\s+(?P<station2>\d+)\s+(?:done|finished)",
        ),
        (
            "with",
            rf"\bwith\s+(?P<who>{NS})|(?P<who2>{NS})\s+and\s+I\b|(?P<who3>{NS})\s+(?:was|were)\s+"
            rf"(?:\S+\s+){{0,3}}?with me\b",
        ),
        ("saw", rf"(?:saw|spotted|noticed|seen|caught sight of|watched)\s+(?P<who>{NS})"),
        (
            "vouch",
            rf"(?:vouch(?:ing)? for|I trust|I "
            rf"clear)\s+(?P<who>{NS})|(?P<who2>{NS})\s+(?:is|was|are|were)\s+"
            rf"(?:definitely\s+|clearly\s+|totally\s+)?(?:innocent|safe|clean|clear(?:ed)?|a "
            rf"crewmate|crewmates?|"
            rf"telling the truth|not (?:the|an|a) {IMPOSTER})|(?P<who3>{NS})\s+(?:didn't|did not) do it|"
            rf"I (?:don't|do not) think (?P<who4>{N}) (?:did it|is (?:the|an|a) {IMPOSTER})",
        ),
        (
            "accuse",
            rf"(?:I suspect|I accuse|suspect|vote(?:\s+for|\s+out)?|I think it'?s|I think it is|sus of|"
            rf"suspicious of|voting(?: "
            rf"for)?)\s+(?P<who>{NS})|(?P<who2>{NS})\s+(?:is|was|seems|looks|sounds)\s+"
            rf"(?:really\s+|very\s+|so\s+|super\s+)?(?:the\s+|an\s+|a\s+|like "
            rf"the\s+)?(?:imposter|impostor|"
            rf"sus|suspicious|lying|a liar|the killer|suspicious to me|making (?:things|it|stuff) up)",
        ),
    ]
]
ROOMS = rf"(?P<room>{PL}(?:(?:\s*,\s*|\s*,?\s+(?:and|then|and then)\s+)(?:the\s+)?{PL})*)"
AT_ME = re.compile(rf"(?:^(?:walked|went|headed|ran|came)\s+(?:to|into|over to|back to|from)\s+|"
                   rf"{ME_VERB}(?:\s+\w+){{0,3}}?\s+(?:{PREP}\s+)?){ROOMS}", re.I)
AT_OTHER = re.compile(rf"(?P<who>{N})\s+(?:was|stayed|has been|had "
                      rf"been)\s+(?:\w+\s+){{0,2}}?{PREP}\s+(?P<room>{PL})",
                      re.I)
NEAR = re.compile(rf"(?:with\s+(?P<a>{NS})\s+(?:nearby|near it|around|close by|next to it|standing close)|"
                  rf"(?P<b>{NS})\s+(?:was|were)\s+(?:near|by|around|next to|standing close|close)|"
                  rf"(?:near|next to)\s+(?:it|the body)\s+(?:was|were)\s+(?P<c>{NS}))", re.I)


def _names_in(r: Reader, s: str) -> list[str]:
    return [r.name(t) for t in re.findall(N, s)]


def _places_in(r: Reader, s: str) -> list[str]:
    return [r.place(t) for t in re.findall(PL, s)]


def _time(clause: str) -> tuple[str, tuple[float, ...] | str] | None:
    """The time a clause says: ("window", (a, b)), ("moment", (x,)), ("when", "start"|"end"), or None."""
    m = _WINDOW.search(clause)
    if m:
        return "window", (float(m.group(1)), float(m.group(2)))
    m = _MOMENT.search(clause)
    if m:
        return "moment", (float(m.group(1)),)
    for when, rx in _REL.items():
        if rx.search(clause):
            return "when", when
    return None


def _timed(c: dict[str, Any], t: tuple[str, Any] | None) -> dict[str, Any]:
    """``c`` with the clause's time in the fields its kind takes (untimed where it takes none of that
    form)."""
    if t is None or c["k"] in STANCE_KINDS:
        return c
    form, v = t
    k = c["k"]
    if form == "when":
        return dict(c, when=v) if k in F.CLAIM_WHEN_KINDS else c
    if form == "window":
        if k in F.CLAIM_PLACED_KINDS:
            return dict(c, from_s=v[0], to_s=v[1])
        return dict(c, at_s=v[1])
    if k in ("at", "with"):
        return dict(c, from_s=v[0], to_s=v[0])
    return dict(c, at_s=v[0])


def _negated(s: str, m: re.Match) -> bool:
    """Whether a negation governs the match: one in its own words or in the words before it since the last
    comma ("I was never in Navigation", "I do not suspect Noah"; not "I was in O2 and didn't see anyone")."""
    return bool(_NEG.search(s[s.rfind(",", 0, m.start()) + 1: m.end()]))


def _near_names(r: Reader, near: re.Match | None) -> list[str]:
    return _names_in(r, near.group("a") or near.group("b") or near.group("c")) if near else []


def _clause(r: Reader, s: str, out: list[dict[str, Any]], last_body: list[dict[str, Any]]) -> None:
    """The claims of one clause (tokens in), appended to ``out``."""
    t = _time(s)
    near = NEAR.search(s)
    if near and last_body and not re.search(r"(?:found|discovered|came across|body|dead)", s, re.I):
        last_body[-1].setdefault("near", []).extend(_near_names(r, near))
        return
    found: dict[str, int] = {}  # kind -> where its first match starts
    rooms = _places_in(r, s)
    for kind, rx in PATTERNS:
        if kind in ("saw", "with") and found.keys() & {"saw_kill", "body"}:
            continue  # "I saw Noah kill Steve", "... body, with Noah nearby": not a sighting, not company
        for m in rx.finditer(s):
            g = {k: v for k, v in m.groupdict().items() if v}
            if _negated(s, m) and not (kind == "vouch" and ({"who3", "who4"} & g.keys() or _VOUCH_NEG.search(
                    m.group(0)))):
                continue  # "I was never in Navigation", "I do not suspect Noah": no claim of the grammar
            after = _places_in(r, s[m.end():])
            room = (after or rooms or [None])[0]
            who = next((v for k, v in g.items() if k.startswith("who")), None)
            if kind == "saw_kill":
                c = {"k": kind, "who": r.name(who), "victim": r.name(g.get("victim") or g["victim2"])}
                if after:
                    c["room"] = after[0]
                out.append(_timed(c, t))
            elif kind == "body":
                victim = r.name(next(v for k, v in g.items() if k.startswith("victim")))
                if room is None:
                    continue
                c = _timed({"k": "body", "victim": victim, "room": room,
                            "near": [n for n in _near_names(r, near) if n != victim]}, t)
                out.append(c)
                last_body.append(c)
            elif kind == "task":
                out.append(
                    _timed({"k": "task", "who": ME, "station": int(g.get("station") or g["station2"])}, t)
                )
            elif kind in ("with", "saw"):
                if room is None:
                    continue
                out += [_timed({"k": kind, "who": n, "room": room}, t) for n in _names_in(r, who)]
            else:
                out += [{"k": kind, "who": n} for n in _names_in(r, who)]
            found.setdefault(kind, m.start())
    if "with" in found:
        return  # "I was in Admin with Noah": company, said once
    first = min((v for k, v in found.items() if k not in STANCE_KINDS), default=len(s))
    for m in AT_ME.finditer(s):
        # my place, said before a sighting ("I was in X and saw ...")
        if m.end() <= first and not _negated(s, m):
            out += [
                _timed({"k": "at", "who": ME, "room": room}, t) for room in _places_in(r, m.group("room"))
            ]
    if first < len(s):
        return
    for m in AT_OTHER.finditer(s):
        if not _negated(s, m):
            out.append(
                _timed({"k": "at", "who": r.name(m.group("who")), "room": r.place(m.group("room"))}, t)
            )


def spot(text: str, ctx: Context) -> list[dict[str, Any]]:
    """The template sentences of ``text``, then the claims of its other clauses; all checked by the
    grammar."""
    raw = parse(text, list(ctx.names), list(ctx.places), ctx.speaker)
    rest = text
    for c in raw:  # take the template sentences out
        rest = rest.replace(render(c), " ")
    r = Reader(ctx)
    body: list[dict[str, Any]] = []
    for clause in _CLAUSE.split(r.tokens(rest)):
        if clause and clause.strip():
            _clause(r, clause.strip(), raw, body)
    seen: set[tuple[str, str]] = set()
    unique = []
    for c in raw:  # a stance said twice is one stance
        if c["k"] in STANCE_KINDS:
            if (c["k"], c["who"]) in seen:
                continue
            seen.add((c["k"], c["who"]))
        if c["k"] == "body":
            c["near"] = list(dict.fromkeys(n for n in c.get("near", []) if n != c["victim"]))
        unique.append(c)
    kept, _, _ = validate_all(unique, ctx.scope(), limit=50)
    return kept


# -- a model in JSON mode ------------------------------------------------------------------------------------
SYSTEM = ("You read what a player of a social deduction game said in a meeting and list the factual claims "
          "it makes, in a fixed grammar. Only claims the speaker makes; no guesses of your own; nothing for "
          "a negated statement. Answer with one JSON object.")
GRAMMAR = ('{"k": "at", "who": "me" or a player, "room": place} | {"k": "task", "who": "me", "station": n} | '
           '{"k": "saw", "who": player, "room": place} | {"k": "with", "who": player, "room": place} | '
           '{"k": "saw_kill", "who": killer, "victim": player, "room": place (if said)} | '
           '{"k": "body", "victim": player, "room": place, "near": [players said to be near]} | '
           '{"k": "accuse", "who": player} | {"k": "vouch", "who": player}')
TIMES = ('Times only as said: a moment "at_s": s (at, with: "from_s" and "to_s" both that moment); a span '
         '"from_s" and "to_s"; "when": "start" (just after the last meeting) or "end" (just before this '
         'meeting) for at, saw and with; no time field when none is said.')
SCHEMA = {"type": "object", "required": ["claims"],
          "properties": {"claims": {"type": "array", "items": {"type": "object", "required": ["k"],
                                                               "properties": {"k": {"enum": list(KINDS)}}}}}}


def prompt(text: str, ctx: Context) -> list[dict[str, Any]]:
    user = (f"Speaker: {ctx.speaker} (\"I\", \"me\" = the speaker: write \"me\").\nPlayers: "
            f"{', '.join(ctx.names)}.\nPlaces: {', '.join(ctx.places)}.\nThe meeting is at game time "
            f"{ctx.meeting_s:g} s; the last meeting ended at {ctx.since_s:g} s.\nClaims, one object each: "
            f"{GRAMMAR}.\n{TIMES} A suspicion is accuse; saying someone is innocent is vouch. Names may be "
            f"misspelled: write them as the player list spells them.\nJSON schema of the answer: "
            f"{json.dumps(SCHEMA, separators=(',', ':'))}\nUtterance: \"{text}\"\n"
            'Answer: {"claims": [<the claims as objects, [] if none>]}')
    return [
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": [{"type": "text", "text": user}]},
    ]


RETRY = ('Your answer was not one JSON object with a "claims" list. Answer again with only that object: '
         '{"claims": [...]}.')


def cache_key(model: str, messages: list[dict[str, Any]]) -> str:
    blob = json.dumps([PROMPT_VERSION, model, messages], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Extractor:
    """Reads utterances with a model (``complete``), its answers cached in ``cache_path`` (JSON lines); an
    answer without a claims list is asked again up to ``retries`` times, then counted in
    ``stats['parse_failures']``
    (the utterance then gives no claims, or the phrasing reader's with ``fallback``)."""

    model: str
    complete: Completion
    cache_path: Path | None = None
    retries: int = 2
    fallback: bool = False
    cache: dict[str, Any] = field(default_factory=dict)
    stats: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.cache_path is not None and self.cache_path.is_file():
            for n, line in enumerate(self.cache_path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                    self.cache[d["key"]] = d["answer"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    from mau.errors import MauError

                    raise MauError(f"{self.cache_path}:{n}: not a cache line (the file is damaged); delete "
                                   f"it to "
                                   "ask the model again") from None

    async def _ask(self, messages: list[dict[str, Any]]) -> str | None:
        answer, pt, ct = await self.complete(messages)
        self.stats["calls"] += 1
        self.stats["prompt_tokens"] += pt
        self.stats["completion_tokens"] += ct
        return answer

    async def read(self, text: str, ctx: Context) -> list[dict[str, Any]]:
        messages = prompt(text, ctx)
        key = cache_key(self.model, messages)
        self.stats["utterances"] += 1
        if key in self.cache:
            self.stats["cached"] += 1
            claims = claims_of(self.cache[key])
        else:
            answer = await self._ask(messages)
            claims = claims_of(answer)
            tries = 0
            while claims is None and tries < self.retries:
                tries += 1
                self.stats["retries"] += 1
                answer = await self._ask(messages + [{"role": "assistant", "content": answer or ""},
                                                     {"role": "user", "content": RETRY}])
                claims = claims_of(answer)
            if claims is not None:
                self.cache[key] = answer
                if self.cache_path is not None:
                    with open(self.cache_path, "a") as f:
                        f.write(json.dumps({"key": key, "model": self.model, "version": PROMPT_VERSION,
                                            "answer": answer}) + "\n")
        if claims is None:
            self.stats["parse_failures"] += 1
            return spot(text, ctx) if self.fallback else []
        kept, _, dropped = validate_all(claims, ctx.scope(), limit=50)
        self.stats["dropped"] += len(dropped)
        return kept


def claims_of(answer: str | None) -> list[Any] | None:
    """The claims list of a model's answer, or None when it has none."""
    obj = first_json_object(answer)
    claims = obj.get("claims") if obj is not None else None
    return claims if isinstance(claims, list) else None


def first_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object in a model's text (a think block and code fences tolerated), or None."""
    if not text:
        return None
    if "</think>" in text:
        text = text.split("</think>", 1)[1]
    dec = json.JSONDecoder()
    i = text.find("{")
    while i >= 0:
        try:
            value, _ = dec.raw_decode(text, i)
            if isinstance(value, dict):
                return value
        except json.JSONDecodeError:
            pass
        i = text.find("{", i + 1)
    return None


# -- F1 on labelled utterances -------------------------------------------------------------------------------
def _times(c: dict[str, Any]) -> tuple[Any, ...]:
    if c.get("at_s") is not None:
        return ("at", round(float(c["at_s"]), 2))
    if c.get("from_s") is not None:
        return ("window", round(float(c["from_s"]), 2), round(float(c["to_s"]), 2))
    if c.get("when") is not None:
        return ("when", c["when"])
    return ("untimed",)


def loose_key(c: dict[str, Any]) -> tuple[Any, ...]:
    """Kind, subject and place or object, times aside."""
    k = c["k"]
    if k in F.CLAIM_WHEN_KINDS:
        return (k, c["who"], c["room"])
    if k == "task":
        return (k, c["who"], c["station"])
    if k == "saw_kill":
        return (k, c["who"], c["victim"])
    if k == "body":
        return (k, c["victim"], c["room"])
    return (k, c["who"])


def match_key(c: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a claim states: kind, subject, place or object (a kill's room, a body's near list) and its
    time as said. Two claims with one key are the same claim to the checker."""
    extra: tuple[Any, ...] = ()
    if c["k"] == "saw_kill":
        extra = (c.get("room"),)
    elif c["k"] == "body":
        extra = (tuple(sorted(c.get("near") or [])),)
    return loose_key(c) + extra + (() if c["k"] in STANCE_KINDS else _times(c))


def score(pred: list[list[dict[str, Any]]], gold: list[list[dict[str, Any]]],
          key: Callable[[dict[str, Any]], tuple[Any, ...]] = match_key) -> dict[str, Any]:
    """Claim-level precision, recall and F1 over utterances (multiset match on ``key``), pooled and per
    kind."""
    counts: dict[str, Counter] = {k: Counter() for k in ("all",) + KINDS}
    for p, g in zip(pred, gold):
        cp, cg = Counter(map(key, p)), Counter(map(key, g))
        hit = cp & cg
        for kk, n in hit.items():
            for bucket in ("all", kk[0]):
                counts[bucket]["tp"] += n
        for kk, n in (cp - hit).items():
            for bucket in ("all", kk[0]):
                counts[bucket]["fp"] += n
        for kk, n in (cg - hit).items():
            for bucket in ("all", kk[0]):
                counts[bucket]["fn"] += n
    return {"pooled": _prf(counts["all"]), "per_kind": {k: _prf(counts[k]) for k in KINDS}}


def _prf(c: Counter) -> dict[str, Any]:
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"precision": prec, "recall": rec, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "gold": tp + fn}


def f1(pred: list[list[dict[str, Any]]], gold: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Pooled precision, recall and F1 (``score``'s pooled row; ``match_key``)."""
    return score(pred, gold)["pooled"]


def load_labelled(path: Path, split: str | None = None) -> list[tuple[str, Context, list[dict[str, Any]]]]:
    """(text, context, gold claims) of a labelled file (JSON lines: speaker, names, places, meeting_s,
    since_s, text, claims; optionally split), the ``split`` part only when given. A bad line is a one-line
    error."""
    from mau.errors import MauError

    if not path.is_file():
        raise MauError(f"{path}: no such labelled file; give a labelled file of docs/claims.md "
                       "(mau/claimsread/data/) or a file in its format")
    out = []
    head: dict[str, Any] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if n == 1 and "text" not in d:  # a first line with the roster and places of every line
                head = d
                continue
            if split is not None and d.get("split") != split:
                continue
            d = {**head, **d}
            ctx = Context(d["speaker"], tuple(d["names"]), tuple(d["places"]), float(d["meeting_s"]),
                          float(d["since_s"]), int(d.get("n_stations", 64)))
            gold, _, dropped = validate_all(d["claims"], ctx.scope(), limit=50)
            text = d["text"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise MauError(f"{path}:{n}: not a labelled utterance ({type(e).__name__}: {e}); fix the line "
                           "(docs/claims.md, 'The labelled corpus')") from None
        if dropped:
            raise MauError(f"{path}:{n}: a gold claim is not valid: {dropped[0]['reason']}; fix the line")
        out.append((text, ctx, gold))
    if not out:
        raise MauError(f"{path}: no labelled utterances" + (f" in split {split!r}" if split else ""))
    return out
