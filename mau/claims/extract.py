"""Claims from free text: what a model said without structured claims, read as claims of the grammar so that the
checker can judge it (docs/claims.md, "Extraction").

Two readers:

- ``spot``: the templates' parser (``mau.claims.render.parse``) plus word spotting of common phrasings ("I was in
  Admin", "I saw Noah near Storage", "I suspect Noah", "Noah is innocent", "I found Steve's body in Storage").
  Untimed claims get the window the speaker could mean: a place from ``max(last meeting's end, meeting - 60 s)``
  to the meeting (the majority rule then judges it), a sighting the same window, a task or a body the meeting's
  time. No model, no cost; the fallback of the model reader.
- ``Extractor``: a model in JSON mode (any backend; the caller passes a completion function) given the utterance,
  the roster, the places, the meeting's time and the grammar; its answer is checked by the grammar and a bad claim
  dropped. Answers are cached by (prompt version, model, hash of the prompt). A failed or unusable answer falls
  back to ``spot``.

``f1`` measures a reader on a labelled sample (``SAMPLE``: hand-labelled LLM-like utterances, one JSON object a
line with the utterance's context and its gold claims). A claim matches a gold claim on its kind, its subject and
its place or object (times aside: free text rarely says them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from mau.claims.grammar import ME, Scope, validate_all
from mau.claims.render import parse, render

PROMPT_VERSION = "1"
SAMPLE = Path(__file__).parent / "data" / "extract_sample.jsonl"
WINDOW_S = 60.0

Completion = Callable[[list[dict[str, Any]]], Awaitable[tuple[str | None, int, int]]]  # text, prompt, completion toks


@dataclass(frozen=True)
class Context:
    """What an utterance's claims are read against."""

    speaker: str
    names: tuple[str, ...]
    places: tuple[str, ...]
    meeting_s: float
    since_s: float  # the last meeting's end (0 at the first)
    n_stations: int = 64

    @property
    def window(self) -> tuple[float, float]:
        return max(self.since_s, self.meeting_s - WINDOW_S), self.meeting_s

    def scope(self) -> Scope:
        return Scope(self.names, self.speaker, self.places, self.n_stations, self.meeting_s)


# -- word spotting ---------------------------------------------------------------------------------------------------
def _alt(items: list[str]) -> str:
    return "|".join(re.escape(x) for x in sorted(items, key=len, reverse=True))


def _place_alt(places: tuple[str, ...]) -> str:
    """Places as they are said: "Admin", "the corridor Admin-Storage", "corridor Admin-Storage"."""
    return _alt(list(places) + [p.removeprefix("corridor ") for p in places if p.startswith("corridor ")])


def _canon_place(said: str, places: tuple[str, ...]) -> str:
    low = said.lower()
    return next(p for p in places if p.lower() == low or p.lower() == f"corridor {low}")


def _canon_name(said: str, names: tuple[str, ...]) -> str:
    return next(n for n in names if n.lower() == said.lower())


_SENTENCE = re.compile(r"[^.!?;]+[.!?;]?")


def spot(text: str, ctx: Context) -> list[dict[str, Any]]:
    """The template sentences of ``text``, then claims spotted in its other sentences; all checked by the grammar."""
    raw = parse(text, list(ctx.names), list(ctx.places), ctx.speaker)
    rest = text
    for c in raw:  # take the template sentences out
        rest = rest.replace(render(c), " ")
    n = _alt([x for x in ctx.names if x != ctx.speaker])
    ns = rf"(?:{n})(?:(?:,\s*|,? and )(?:{n}))*"  # a list of names: "Noah and Steve", "Noah, Jason and Steve"
    p = _place_alt(ctx.places)
    ps = rf"(?:the )?(?:{p})(?:(?:,\s*|,? (?:and|then|and then) (?:the )?)(?:{p}))*"
    a, b = ctx.window
    neg = re.compile(r"\b(?:not|never|n't|no)\b", re.I)
    pats: list[tuple[str, str]] = [
        ("saw_kill", rf"\bsaw (?P<who>{n}) (?:kill|killing|murder|murdering) (?P<victim>{n})(?:.*?\b(?:in|at|near) "
                     rf"(?:the )?(?P<room>{p})\b)?"),
        ("body", rf"\b(?:found|saw|discovered|reported) (?:the )?(?:body of (?P<victim>{n})|(?P<victim2>{n})'s body|"
                 rf"(?P<victim3>{n}) dead)\b.*?\b(?:in|at|near) (?:the )?(?P<room>{p})\b"),
        ("with", rf"\b(?:I was|I've been|I have been) with (?P<who>{n})\b.*?\b(?:in|at|near) (?:the )?(?P<room>{p})\b"
                 rf"|\b(?:I was|I've been|I have been) (?:in|at|near) (?:the )?(?P<room2>{p}) with (?P<who2>{n})\b"),
        ("saw", rf"\b(?:saw|seen|spotted|noticed) (?P<who>{ns})\b(?: \w+){{0,4}}? (?:in|at|near|by|around|heading "
                rf"into|entering|leaving|through) (?:the )?(?P<room>{p})\b"),
        ("task", r"\b(?:finished|did|completed|done) (?:the |my )?(?:task|mission)s? (?:at|in) station "
                 r"(?P<station>\d+)\b"),
        ("at", rf"\b(?:I was|I've been|I have been|I stayed|I'm|I am)(?: \w+){{0,4}}? (?:in|at|near|around|"
               rf"inside) (?P<rooms>{ps})\b|\b(?:I )?(?:went|walked|headed|came) (?:to|from|over to|back to) "
               rf"(?P<rooms2>{ps})\b"),
        ("vouch", rf"\b(?:I vouch for|I trust|I can vouch for|I clear) (?P<who>{ns})\b|\b(?P<who2>{n}) (?:is|was) "
                  rf"(?:innocent|clear(?:ed)?|a crewmate|safe|with me)\b"),
        ("accuse", rf"\b(?:I suspect|I accuse|vote(?: for| out)?|I think it'?s|sus of|suspicious of) (?P<who>{ns})\b|"
                   rf"\b(?P<who2>{n}) (?:is|was|seems|looks) (?:the |an |a )?(?:imposter|impostor|sus|suspicious|"
                   rf"lying|a liar|the killer)\b"),
    ]

    def names_in(said: str) -> list[str]:
        return [_canon_name(x, ctx.names) for x in re.findall(n, said, re.I)]

    def places_in(said: str) -> list[str]:
        return [_canon_place(x, ctx.places) for x in re.findall(p, said, re.I)]

    for sentence in _SENTENCE.findall(rest):
        taken: set[str] = set()
        for kind, pat in pats:
            if kind in taken or (kind == "at" and taken & {"with"}) or (kind == "saw" and taken & {"saw_kill", "body"}):
                continue
            m = re.search(pat, sentence, re.I)
            if not m:
                continue
            if kind in ("accuse", "vouch", "at") and neg.search(sentence[:m.end()]):
                continue  # "I do not suspect Noah", "I was never in Navigation": the spotter does not read negation
            g = {k: v for k, v in m.groupdict().items() if v}
            taken.add(kind)
            if kind == "at":
                for room in places_in(g.get("rooms") or g["rooms2"]):
                    raw.append({"k": "at", "who": ME, "room": room, "from_s": a, "to_s": b})
                continue
            if kind in ("accuse", "vouch", "saw"):
                room = _canon_place(g["room"], ctx.places) if "room" in g else None
                for who in names_in(g.get("who") or g["who2"]):
                    c = {"k": kind, "who": who}
                    if kind == "saw":
                        c.update(room=room, from_s=a, to_s=b)
                    raw.append(c)
                continue
            c: dict[str, Any] = {"k": kind}
            if kind in ("with", "saw_kill"):
                c["who"] = _canon_name(g.get("who") or g["who2"], ctx.names)
            if "room" in g or "room2" in g:
                c["room"] = _canon_place(g.get("room") or g["room2"], ctx.places)
            if kind == "saw_kill":
                c["victim"] = _canon_name(g["victim"], ctx.names)
                if "room" not in c:
                    taken.discard(kind)
                    continue  # a kill without a place is no claim of the grammar
                c["from_s"], c["to_s"] = a, b
            elif kind == "body":
                c["victim"] = _canon_name(g.get("victim") or g.get("victim2") or g["victim3"], ctx.names)
                c["at_s"], c["near"] = b, []
            elif kind == "with":
                c["from_s"], c["to_s"] = a, b
            elif kind == "task":
                c.update(who=ME, station=int(g["station"]), at_s=b)
            raw.append(c)
    seen_stances: set[tuple[str, str]] = set()
    unique = []
    for c in raw:  # a stance said twice is one stance
        if c["k"] in ("accuse", "vouch"):
            if (c["k"], c["who"].lower()) in seen_stances:
                continue
            seen_stances.add((c["k"], c["who"].lower()))
        unique.append(c)
    raw = unique
    kept, _, _ = validate_all(raw, ctx.scope(), limit=50)
    return kept


# -- a model in JSON mode --------------------------------------------------------------------------------------------
SYSTEM = ("You read what a player of a social deduction game said in a meeting and list the factual claims it makes, "
          "in a fixed grammar. Only claims the speaker makes; no guesses of your own. Answer with one JSON object.")
GRAMMAR = ('{"k": "at", "who": "me" or a player, "room": place, "from_s": s, "to_s": s} | '
           '{"k": "task", "who": "me", "station": n, "at_s": s} | {"k": "saw", "who": player, "room": place, '
           '"from_s": s, "to_s": s} | {"k": "with", "who": player, "room": place, "from_s": s, "to_s": s} | '
           '{"k": "saw_kill", "who": killer, "victim": player, "room": place, "from_s": s, "to_s": s} | '
           '{"k": "body", "victim": player, "room": place, "at_s": s, "near": [players]} | '
           '{"k": "accuse", "who": player} | {"k": "vouch", "who": player}')


def prompt(text: str, ctx: Context) -> list[dict[str, Any]]:
    a, b = ctx.window
    user = (f"Speaker: {ctx.speaker} (\"I\", \"me\" = the speaker: write \"me\").\n"
            f"Players: {', '.join(ctx.names)}.\nPlaces: {', '.join(ctx.places)}.\n"
            f"The meeting is at game time {b:g} s; the speaker's last roam began at {ctx.since_s:g} s. A time the "
            f"speaker does not say: for a place or a sighting use from_s {a:g} and to_s {b:g}; for a task or a body "
            f"at_s {b:g}.\nClaims, one object each: {GRAMMAR}. A suspicion is accuse; saying someone is innocent "
            f"is vouch.\nUtterance: \"{text}\"\n"
            'Answer: {"claims": [<the claims as objects, [] if none>]}')
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": [{"type": "text", "text": user}]}]


def cache_key(model: str, messages: list[dict[str, Any]]) -> str:
    blob = json.dumps([PROMPT_VERSION, model, messages], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Extractor:
    """Reads utterances with a model (``complete``), its answers cached in ``cache_path`` (JSON lines)."""

    model: str
    complete: Completion
    cache_path: Path | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    stats: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.cache_path is not None and self.cache_path.is_file():
            for line in self.cache_path.read_text().splitlines():
                if line.strip():
                    d = json.loads(line)
                    self.cache[d["key"]] = d["answer"]

    async def read(self, text: str, ctx: Context) -> list[dict[str, Any]]:
        messages = prompt(text, ctx)
        key = cache_key(self.model, messages)
        if key in self.cache:
            self.stats["cached"] += 1
            answer = self.cache[key]
        else:
            answer, pt, ct = await self.complete(messages)
            self.stats["calls"] += 1
            self.stats["prompt_tokens"] += pt
            self.stats["completion_tokens"] += ct
            if answer is not None:
                self.cache[key] = answer
                if self.cache_path is not None:
                    with open(self.cache_path, "a") as f:
                        f.write(json.dumps({"key": key, "model": self.model, "version": PROMPT_VERSION,
                                            "answer": answer}) + "\n")
        claims = _claims_of(answer)
        if claims is None:
            self.stats["fallbacks"] += 1
            return spot(text, ctx)
        kept, _, dropped = validate_all(claims, ctx.scope(), limit=50)
        self.stats["dropped"] += len(dropped)
        return kept


def _claims_of(answer: str | None) -> list[Any] | None:
    """The claims list of a model's answer, or None when it has none (then the spotter reads the text)."""
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


# -- F1 on a labelled sample ------------------------------------------------------------------------------------------
def match_key(c: dict[str, Any]) -> tuple[Any, ...]:
    k = c["k"]
    if k in ("at", "saw", "with"):
        return (k, c["who"], c["room"])
    if k == "task":
        return (k, c["who"], c["station"])
    if k == "saw_kill":
        return (k, c["who"], c["victim"])
    if k == "body":
        return (k, c["victim"], c["room"])
    return (k, c["who"])


def f1(pred: list[list[dict[str, Any]]], gold: list[list[dict[str, Any]]]) -> dict[str, float]:
    """Claim-level precision, recall and F1 over utterances (multiset match on ``match_key``)."""
    tp = fp = fn = 0
    for p, g in zip(pred, gold):
        cp, cg = Counter(map(match_key, p)), Counter(map(match_key, g))
        hit = sum((cp & cg).values())
        tp, fp, fn = tp + hit, fp + sum(cp.values()) - hit, fn + sum(cg.values()) - hit
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def load_sample(path: Path = SAMPLE) -> list[tuple[str, Context, list[dict[str, Any]]]]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        ctx = Context(d["speaker"], tuple(d["names"]), tuple(d["places"]), d["meeting_s"], d["since_s"])
        gold, _, dropped = validate_all(d["claims"], ctx.scope(), limit=50)
        if dropped:
            raise ValueError(f"{path}: a gold claim is not valid: {dropped[0]}")
        out.append((d["text"], ctx, gold))
    return out
