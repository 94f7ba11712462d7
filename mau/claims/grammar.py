"""The claim grammar: eight kinds, each a small pydantic model, checked against the match they are said in.

A claim is a JSON object with a kind ``k`` and the fields of its kind (times are game seconds, ``obs.time_s``;
a place is a region of the map, corridors included; ``who: "me"`` is the speaker)::

    at        who, room, [from_s, to_s | when]          where a player was, and when
    task      who, station, [at_s]                      a task finished at a station
    saw       who, room, [at_s | from_s, to_s | when]   I saw a player there then
    with      who, room, [from_s, to_s | when]          I was with a player there then
    saw_kill  who, victim, [room], [at_s | from_s, to_s]   I saw a player kill another
    body      victim, room, [at_s], near                I found a body there, these players near it
    accuse    who                                       a stance: I think this player is an imposter
    vouch     who                                       a stance: I think this player is a crewmate

Times in brackets may be left out: what people say. An untimed place or company means a stay since the last
meeting (``mau.claims.check.UNTIMED_S``), an untimed sighting "at some time since the last meeting"; an
untimed task, body or kill "before this meeting"; ``when`` names a relative time
("start": the first ``RELATIVE_S`` seconds after the last meeting, "end": the last ``RELATIVE_S`` seconds
before this one). The checker gives each form its window (docs/claims.md, "The checker").

``validate`` turns one raw claim into its canonical dict (names as the roster spells them, the speaker's own
name as ``"me"``, places as the map spells them, times rounded to 0.01 s) or gives the one-line reason it is
dropped. Nothing here raises on bad input: claims come from models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mau.schema import CLAIM_FACT_KINDS, CLAIM_STANCE_KINDS

ME = "me"
FACT_KINDS = CLAIM_FACT_KINDS
STANCE_KINDS = CLAIM_STANCE_KINDS
KINDS = FACT_KINDS + STANCE_KINDS
SELF_KINDS = ("at", "task", "with")  # claims about the speaker itself (a false one is known-false)
MAX_NEAR = 7
WHEN = ("start", "end")  # relative times: just after the last meeting, just before this one
RELATIVE_S = 20.0  # seconds a relative time covers


@dataclass(frozen=True)
class Scope:
    """What a claim is checked against when it is said: the roster, the speaker, the map's places and
    stations, and the game time of the meeting (no claim is about the future)."""

    names: tuple[str, ...]
    speaker: str
    places: tuple[str, ...]
    n_stations: int
    now_s: float

    def name(self, v: Any, field: str, *, me_ok: bool) -> str:
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"{field}: expected a player's name")
        low = v.strip().lower()
        if low in (ME, "i", "myself", self.speaker.lower()):
            if not me_ok:
                raise ValueError(f"{field}: must name another player, not the speaker")
            return ME
        for n in self.names:
            if n.lower() == low:
                return n
        raise ValueError(f"{field}: {v!r} is not a player ({', '.join(self.names)})")

    def place(self, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("room: expected a place name")
        low = v.strip().lower()
        for p in self.places:
            if p.lower() == low or p.lower() == f"corridor {low}":
                return p
        raise ValueError(f"room: {v!r} is not a place of the map ({', '.join(self.places)})")


def _scope(info: ValidationInfo) -> Scope:
    scope = (info.context or {}).get("scope")
    if scope is None:
        raise ValueError("no scope to check the claim against")
    return scope


def _time(v: Any, field: str, info: ValidationInfo) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{field}: expected game seconds (a number)")
    now = _scope(info).now_s
    if v < 0 or v > now + 1e-6:
        raise ValueError(f"{field}: {v:g} s is outside the match so far (0 to {now:g} s)")
    return round(float(v), 2)


class _Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("from_s", "to_s", "at_s", mode="before", check_fields=False)
    @classmethod
    def _times(cls, v: Any, info: ValidationInfo) -> float | None:
        return _time(v, info.field_name, info)

    @field_validator("room", mode="before", check_fields=False)
    @classmethod
    def _room(cls, v: Any, info: ValidationInfo) -> str | None:
        if (
            v is None
            and cls.model_fields["room"].default is None
            and not cls.model_fields["room"].is_required()
        ):
            return None  # an optional room (a kill's) left out
        return _scope(info).place(v)

    @field_validator("when", mode="before", check_fields=False)
    @classmethod
    def _relative(cls, v: Any) -> str | None:
        return _when(v)


class _Window(_Claim):
    @model_validator(mode="after")
    def _order(self) -> "_Window":
        f, t = getattr(self, "from_s", None), getattr(self, "to_s", None)
        if f is not None and t is not None and f > t:
            raise ValueError(f"from_s {f:g} is after to_s {t:g}")
        return self


class _Self(_Claim):
    """``who`` may be the speaker ("me")."""

    @field_validator("who", mode="before", check_fields=False)
    @classmethod
    def _who(cls, v: Any, info: ValidationInfo) -> str:
        return _scope(info).name(v, "who", me_ok=True)


class _Other(_Claim):
    """``who`` is another player."""

    @field_validator("who", mode="before", check_fields=False)
    @classmethod
    def _who(cls, v: Any, info: ValidationInfo) -> str:
        return _scope(info).name(v, "who", me_ok=False)


class _OneTime(_Claim):
    """At most one form of time: ``at_s``, or ``from_s`` with ``to_s``, or ``when``; none: untimed."""

    @model_validator(mode="after")
    def _one_time(self) -> "_OneTime":
        at, f, t, w = (getattr(self, k, None) for k in ("at_s", "from_s", "to_s", "when"))
        if (f is None) != (t is None):
            raise ValueError("give both from_s and to_s, or neither")
        if sum(x is not None for x in (at, f, w)) > 1:
            raise ValueError("give one time: at_s, or from_s and to_s, or when (or none: untimed)")
        return self


def _when(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or v.strip().lower() not in WHEN:
        raise ValueError(f"when: one of {', '.join(WHEN)} (a relative time), or leave it out")
    return v.strip().lower()


class At(_Window, _OneTime, _Self):
    k: Literal["at"]
    who: str
    room: str
    from_s: float | None = None
    to_s: float | None = None
    when: str | None = None


class Task(_Self):
    k: Literal["task"]
    who: str
    station: int
    at_s: float | None = None

    @field_validator("station", mode="before")
    @classmethod
    def _station(cls, v: Any, info: ValidationInfo) -> int:
        n = _scope(info).n_stations
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
            raise ValueError(f"station: expected a station number from 0 to {n - 1}")
        return v


class Saw(_Window, _OneTime, _Other):
    """``at_s``, or a window ``from_s``..``to_s`` (when the speaker does not say the moment), or ``when``, or
    none (some time since the last meeting)."""

    k: Literal["saw"]
    who: str
    room: str
    at_s: float | None = None
    from_s: float | None = None
    to_s: float | None = None
    when: str | None = None


class With(_Window, _OneTime, _Other):
    k: Literal["with"]
    who: str
    room: str
    from_s: float | None = None
    to_s: float | None = None
    when: str | None = None


class SawKill(_Window, _OneTime, _Other):
    """The kill is the event of ``victim``'s death: the room and the time, where given, must be its own."""

    k: Literal["saw_kill"]
    who: str
    victim: str
    room: str | None = None
    at_s: float | None = None
    from_s: float | None = None
    to_s: float | None = None

    @field_validator("victim", mode="before")
    @classmethod
    def _victim(cls, v: Any, info: ValidationInfo) -> str:
        return _scope(info).name(v, "victim", me_ok=False)

    @model_validator(mode="after")
    def _two(self) -> "SawKill":
        if self.victim == self.who:
            raise ValueError("victim: a player does not kill itself")
        return self


class Body(_Claim):
    k: Literal["body"]
    victim: str
    room: str
    at_s: float | None = None
    near: list[str] = Field(default_factory=list)

    @field_validator("victim", mode="before")
    @classmethod
    def _victim(cls, v: Any, info: ValidationInfo) -> str:
        return _scope(info).name(v, "victim", me_ok=False)

    @field_validator("near", mode="before")
    @classmethod
    def _near(cls, v: Any, info: ValidationInfo) -> list[str]:
        if v is None:
            return []
        if not isinstance(v, list):
            raise ValueError("near: expected a list of names")
        if len(v) > MAX_NEAR:
            raise ValueError(f"near: at most {MAX_NEAR} names")
        out = [_scope(info).name(n, "near", me_ok=False) for n in v]
        return list(dict.fromkeys(out))

    @model_validator(mode="after")
    def _not_victim(self) -> "Body":
        if self.victim in self.near:
            raise ValueError("near: the victim is the body, not near it")
        return self


class Accuse(_Other):
    k: Literal["accuse"]
    who: str


class Vouch(_Other):
    k: Literal["vouch"]
    who: str


CLAIM = TypeAdapter(
    Annotated[Union[At, Task, Saw, With, SawKill, Body, Accuse, Vouch], Field(discriminator="k")]
)
_ORDER = ("k", "who", "victim", "room", "station", "at_s", "from_s", "to_s", "when", "near")


def canonical(model: BaseModel) -> dict[str, Any]:
    """The claim as a plain dict in a fixed key order, without unset optional times."""
    d = model.model_dump()
    return {k: d[k] for k in _ORDER if k in d and d[k] is not None}


def _reason(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"] if p not in KINDS)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "union_tag_invalid" or err["type"] == "union_tag_not_found":
        return f"k: must be one of {', '.join(KINDS)}"
    if err["type"] == "extra_forbidden":
        return f"{loc}: unknown field (a claim has k and the fields of its kind; docs/claims.md)"
    if err["type"] == "missing":
        return f"{loc}: missing"
    return f"{loc}: {msg}" if loc and not msg.startswith(loc) else msg


def validate(raw: Any, scope: Scope) -> tuple[dict[str, Any] | None, str | None]:
    """(canonical claim, None), or (None, why it is dropped)."""
    if not isinstance(raw, dict):
        return None, f"a claim is an object with a kind 'k', got {type(raw).__name__}"
    try:
        return canonical(CLAIM.validate_python(raw, context={"scope": scope})), None
    except ValidationError as e:
        return None, _reason(e)
    except Exception as e:  # an odd value that trips a check is still a dropped claim, never a failed match
        return None, f"unusable claim ({type(e).__name__})"


def validate_all(
    raws: Any, scope: Scope, limit: int
) -> tuple[list[dict[str, Any]], list[int], list[dict[str, Any]]]:
    """(the claims kept, the index in ``raws`` of each kept claim, the dropped ones with their reasons)."""
    if raws is None:
        return [], [], []
    if not isinstance(raws, (list, tuple)):
        return [], [], [{"claim": raws, "reason": "claims: expected a list of claims"}]
    kept: list[dict[str, Any]] = []
    where: list[int] = []
    dropped: list[dict[str, Any]] = []
    for i, raw in enumerate(raws):
        if len(kept) >= limit:
            dropped.append({"claim": raw, "reason": f"over the limit of {limit} claims per utterance"})
            continue
        claim, why = validate(raw, scope)
        if claim is None:
            dropped.append({"claim": raw, "reason": why})
        else:
            kept.append(claim)
            where.append(i)
    return kept, where, dropped


def subject(claim: dict[str, Any], speaker: str) -> str:
    """The player a claim is about (``me`` read as the speaker); for a body, the victim."""
    who = claim.get("who", claim.get("victim"))
    return speaker if who == ME else who


def placement(c: dict[str, Any], speaker: str) -> dict[str, Any] | None:
    """Where and when a claim puts whom (for drawing it on the map): ``subjects`` (the players it places
    there, ``me`` resolved to the speaker), ``place`` (a region) or ``station`` (a station index), and the
    claimed window ``from_s``-``to_s`` (a moment: both the same); None for a stance."""
    if c.get("k") not in FACT_KINDS:
        return None
    who = subject(c, speaker)
    subjects = {"at": [who], "task": [who], "saw": [who],
                "with": [speaker, who], "saw_kill": [who, c.get("victim")],
                # a body's subject() is its victim: here, who was there
                "body": [speaker, *c.get("near", [])]}[c["k"]]
    at = c.get("at_s")
    return {
        "subjects": [s for s in subjects if s], "place": c.get("room"), "station": c.get("station"),
        "from_s": at if at is not None else c.get("from_s"), "to_s": at if at is not None else c.get("to_s"),
    }
