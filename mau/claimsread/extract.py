"""Claims from free text: what a player said without structured claims, read as claims of the grammar so that
the checker can judge it (docs/claims.md, "Extraction").

Two readers:

- ``spot``: the template parser and the phrasing reader (``mau.claimsread.reader``): clauses read by what they
  mean, speech that states no claim of the speaker (reported speech, questions, plans, proposals,
  counterfactuals, an earlier round) read as none. No model, no cost.
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mau import schema as F
from mau.claims.grammar import KINDS, STANCE_KINDS, validate_all
from mau.claimsread.reader import Context, spot  # noqa: F401  (the phrasing reader, read from here too)
from mau.harness.completion import Completion

PROMPT_VERSION = "3"
HANDWRITTEN = Path(__file__).parent / "data" / "claims_handwritten.jsonl"


# -- a model in JSON mode ------------------------------------------------------------------------------------
SYSTEM = ("You read what a player of a social deduction game said in a meeting and list the factual "
          "claims it makes, in a fixed grammar. Only claims the speaker makes of this round; no guesses of "
          "your own; nothing for a negated statement, for what another player said (reported speech, "
          "hearsay), for a question, a plan, a proposal (but a call to vote someone is an accusation), a "
          "counterfactual or an earlier round. Another player's place said by the speaker is a sighting "
          "(saw); a place only passed through or headed for is none. Answer with one JSON object.")
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
