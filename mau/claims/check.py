"""The role-blind claim checker: every claim of a match against what happened (docs/claims.md, "The checker").

It reads the events that are facts of the world (kills with their witnesses, bodies seen and reported, tasks
finished, meetings, utterances) and ``sights.jsonl`` (places and views at the sub-step rate), and nothing that
names a role: not the roles of ``match_start``, not an ejection's role, not fake missions, not narrations,
not the speakers' private intent labels (``Facts`` takes exactly what it reads; a test shuffles the roles and
sees no verdict change). Verdicts:

- TRUE: it happened, and the speaker could have seen it;
- FALSE: it did not happen;
- UNSUPPORTED: it happened, but the speaker could not have seen it (never had the subject in view there, was
  no witness of the kill);
- UNVERIFIABLE: the logs cannot say (the subject was not in the game then), and every stance (accuse, vouch):
  right or wrong only against the roles, which the checker does not read; a stance says whether it is
  ``grounded``.

Each claim gets a window from its time (``span``): a moment ``at_s`` is +/- 5 s; a window ``from_s``-``to_s``
is judged by the short-window rule (under 10 s: at some moment, +/- 5 s), else by the majority rule, except
that a window holding a kill elsewhere (or the subject's report of a body elsewhere) must be covered: the
subject in the claimed place at that moment and for ``COVER`` of the window (a liar's alibi cannot half-cover
its kill); an untimed place or company means a stay since the last meeting (``UNTIMED_S`` in all, or half a
shorter roam: a passing glance is not one), an untimed sighting "at some time since the last meeting", a
relative time (``when``) "at some time in its ``RELATIVE_S`` seconds"; an untimed task, body or kill "before
this meeting"; a kill seen is the event of the victim's death, whatever the window. A claim that places
another player needs the speaker to have had that player in view there (else UNSUPPORTED).

Each verdict has a one-line ``reason``, ``support`` (the numbers behind it: the rule, the window) and, when
not TRUE, an ``epistemic`` label from the speaker's own view: ``known_false`` (a claim about itself, or its
view showed otherwise), ``honest_error`` (its view showed the claim earlier or later: a stale sighting),
``fabrication`` (it had no view).

``Checker(..., source=...)`` reads files: a claim the grammar refuses, an event without its fields, is a
one-line ``MauError`` naming the file (a damaged log), never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mau import schema as F
from mau.claims.grammar import ME, RELATIVE_S, STANCE_KINDS, Scope, validate
from mau.claims.sights import Timeline, length, overlap
from mau.errors import MauError
from mau.schema import TICKS_PER_SECOND

TOL = 5 * TICKS_PER_SECOND  # one step: a claimed moment is right within +/- 5 s
# A window shorter than this is right when the subject was there at any moment of it +/- 5 s.
SHORT = 10 * TICKS_PER_SECOND
MAJORITY = 0.5  # a longer window: the subject there for at least half of it
# ... or, where it holds a kill elsewhere (or the subject's report of a body elsewhere), this much of it
COVER = 0.8
RELATIVE = int(RELATIVE_S * TICKS_PER_SECOND)  # the window of a relative time ("start", "end")
# An untimed place or company ("I was in Admin", "... the whole time") is a stay, not a glance: the subject in
# the place for this long in all since the last meeting, or for half the roam when the roam is shorter than
# twice this (docs/claims.md, "Untimed claims": crewmates' true claims pass, a random room seldom does).
UNTIMED_S = 15.0
UNTIMED = int(UNTIMED_S * TICKS_PER_SECOND)
# how far from the claimed moment a sighting makes a false claim an honest error
STALE = 60 * TICKS_PER_SECOND
TRUE, FALSE, UNSUPPORTED, UNVERIFIABLE = "TRUE", "FALSE", "UNSUPPORTED", "UNVERIFIABLE"
VERDICTS = (TRUE, FALSE, UNSUPPORTED, UNVERIFIABLE)
KNOWN_FALSE, HONEST_ERROR, FABRICATION = "known_false", "honest_error", "fabrication"
MOMENT, WINDOW, SOME_TIME, STAY = "moment", "window", "some_time", "stay"  # how a time reads (``Span.how``)


@dataclass
class Facts:
    """The facts of one match the checker reads (role-blind by construction: nothing else is kept)."""

    # victim -> {killer, room, tick, witnesses}
    kills: dict[str, dict[str, Any]] = field(default_factory=dict)
    body_seen: dict[tuple[str, str], int] = field(default_factory=dict)  # (player, victim) -> first tick
    reports: list[dict[str, Any]] = field(default_factory=list)  # {tick, reporter, room}
    tasks: dict[tuple[str, int], int] = field(default_factory=dict)  # (player, station) -> tick finished
    meetings: list[int] = field(default_factory=list)  # start ticks
    meeting_ends: list[int] = field(default_factory=list)
    # {i, tick, speaker, round, meeting, claims}
    utterances: list[dict[str, Any]] = field(default_factory=list)
    end_tick: int = 0

    @classmethod
    def of(cls, events: list[dict[str, Any]], source: str = "events.jsonl") -> "Facts":
        f = cls()
        for n, e in enumerate(events):
            try:
                f._take(e)
            except (KeyError, TypeError, ValueError, AttributeError) as x:
                raise MauError(f"{source}: event {n + 1} ({e.get(F.TYPE) if isinstance(e, dict) else e!r}) "
                               f"lacks a field the checker reads ({type(x).__name__}: {x}); the log is "
                               f"damaged: restore "
                               "it from the run or play the match again") from None
        return f

    def _take(self, e: dict[str, Any]) -> None:
        t, tick = e[F.TYPE], int(e[F.TICK])
        self.end_tick = max(self.end_tick, tick)
        if t == F.EV_KILL:
            self.kills[e[F.VICTIM]] = {"killer": e[F.KILLER], "room": e["room"], "tick": tick,
                                       "witnesses": list(e.get("witnesses", []))}
        elif t == F.EV_BODY_SEEN:
            self.body_seen.setdefault((e["player"], e["body"]), tick)
        elif t == F.EV_REPORT:
            self.reports.append({"tick": tick, "reporter": e["reporter"], "room": e["room"]})
        elif t == F.EV_MISSION_COMPLETE:
            self.tasks.setdefault((e["player"], e["station"]), tick)
        elif t == F.EV_MEETING_START:
            self.meetings.append(tick)
        elif t == F.EV_MEETING_END:
            self.meeting_ends.append(tick)
        elif t == F.EV_UTTERANCE and e.get(F.CLAIMS):
            self.utterances.append(
                {
                    "i": e[F.EVENT_INDEX], "tick": tick, "speaker": e[F.SPEAKER], "round": e.get("round"),
                    "meeting": len(self.meetings), "claims": e[F.CLAIMS],
                }
            )

    def since_last_meeting(self, tick: int) -> int:
        """The start of the roam before the meeting at ``tick``: the previous meeting's end, or 0."""
        ends = [t for t in self.meeting_ends if t < tick]
        return ends[-1] if ends else 0

    def saw_body(self, player: str, victim: str) -> int | None:
        """When ``player`` first saw ``victim``'s body (a witness of the kill saw it fall)."""
        seen = self.body_seen.get((player, victim))
        k = self.kills.get(victim)
        if k is not None and player in k["witnesses"]:
            seen = k["tick"] if seen is None else min(seen, k["tick"])
        return seen


@dataclass
class Verdict:
    verdict: str
    reason: str
    support: dict[str, Any] = field(default_factory=dict)
    epistemic: str | None = None
    grounded: bool | None = None  # stances only


@dataclass(frozen=True)
class Span:
    """The ticks a claim's time names, and how they read: ``moment`` (at_s: the subject there at some tick of
    [lo, hi], which is the moment +/- 5 s), ``window`` (from_s-to_s: [lo, hi] is the claimed window, read by
    the short-window, majority and cover rules), ``some_time`` (relative, or an untimed sighting: there at
    some tick of [lo, hi]), ``stay`` (an untimed place or company: there for ``stay_ticks`` of [lo, hi] in
    all)."""

    lo: int
    hi: int
    how: str

    def support(self) -> dict[str, Any]:
        out = {"rule": self.how, "window_s": [self.lo / TICKS_PER_SECOND, self.hi / TICKS_PER_SECOND]}
        if self.how == STAY:
            out["stay_s"] = self.stay_ticks / TICKS_PER_SECOND
        return out

    @property
    def stay_ticks(self) -> int:
        """An untimed claim's stay: ``UNTIMED`` ticks, or half the roam when the roam is shorter."""
        return min(UNTIMED, (self.hi + 1 - self.lo) // 2)


def claim_span(c: dict[str, Any], tick: int, start: int) -> Span:
    """The ticks a place, sighting or company claim names, said at the meeting of ``tick`` in the roam that
    began at ``start`` (the last meeting's end, or 0): a moment +/- 5 s, a window, or for an untimed or
    relative claim the part of the roam it means (an untimed place or company: a stay in it, ``STAY``)."""
    if c.get("at_s") is not None:
        return Span(_t(c["at_s"]) - TOL, _t(c["at_s"]) + TOL, MOMENT)
    if c.get("from_s") is not None:
        return Span(_t(c["from_s"]), _t(c["to_s"]), WINDOW)
    if c.get("when") == "start":
        return Span(start, min(start + RELATIVE, tick), SOME_TIME)
    if c.get("when") == "end":
        return Span(max(tick - RELATIVE, start), tick, SOME_TIME)
    return Span(start, tick, STAY if c.get("k") in ("at", "with") else SOME_TIME)


def _s(tick: float) -> str:
    return f"{tick / TICKS_PER_SECOND:g} s"


def _t(seconds: float) -> int:
    return int(round(seconds * TICKS_PER_SECOND))


def _where(tl: Timeline, name: str, t0: int, t1: int) -> str:
    places = tl.places_during(name, t0, t1)
    return ", ".join(list(places)[:3]) if places else "nowhere in the game"


class Checker:
    """The verdicts of one match: ``Checker(events, sights_lines).check_all()``; ``source``: the match folder
    the events came from (each claim is then checked against the grammar first: a damaged file is a one-line
    error)."""

    def __init__(self, events: list[dict[str, Any]], sights: list[dict[str, Any]], source: str | None = None):
        self.source = source
        self.facts = Facts.of(events, f"{source}/{F.EVENTS_FILE}" if source else F.EVENTS_FILE)
        self.tl = Timeline(sights, self.facts.end_tick)
        self._now = self.facts.end_tick
        if source is not None:
            self._check_grammar()

    def _check_grammar(self) -> None:
        """Every claim of the file as the grammar reads it (the world only ever wrote valid ones)."""
        for u in self.facts.utterances:
            if not isinstance(u["claims"], list):
                self._damaged(u, 0, "claims is not a list")
            scope = Scope(tuple(self.tl.players), u["speaker"], tuple(self.tl.places), 10 ** 9,
                          u["tick"] / TICKS_PER_SECOND)
            for n, c in enumerate(u["claims"]):
                ok, why = validate(c, scope)
                if ok is None:
                    self._damaged(u, n, why or "not a claim")

    def _damaged(self, u: dict[str, Any], n: int, why: str) -> None:
        raise MauError(f"{self.source}/{F.EVENTS_FILE}: the utterance at event index {u['i']}, claim "
                       f"{n + 1}: {why}; the log is damaged or edited: restore it from the run or play the "
                       f"match again")

    # -- one claim -------------------------------------------------------------------------------------------
    def check(self, claim: dict[str, Any], speaker: str, tick: int) -> Verdict:
        """The verdict on ``claim``, said by ``speaker`` at the meeting of ``tick`` (nothing after that tick
        counts: the tolerance never reaches into the meeting)."""
        fn = getattr(self, f"_{claim['k']}")
        self._now = tick
        return fn(claim, speaker, tick)

    def span(self, c: dict[str, Any], tick: int) -> Span:
        """The window of a place, sighting or company claim said at the meeting of ``tick``."""
        return claim_span(c, tick, self.facts.since_last_meeting(tick))

    def _in_place(self, name: str, place: str, t0: int, t1: int) -> list:
        return self.tl.in_place(name, place, t0, min(t1, self._now))

    def _in_view(self, viewer: str, seen: str, t0: int, t1: int) -> list:
        return self.tl.in_view(viewer, seen, t0, min(t1, self._now))

    def _who(self, c: dict[str, Any], speaker: str) -> str:
        return speaker if c.get("who") == ME else c["who"]

    def anchors(self, subj: str, room: str, f: int, t: int) -> list[tuple[int, str]]:
        """(tick, what) of the moments inside [f, t] at which the record puts something elsewhere than
        ``room`` that the claim's window must then cover: every kill in another place, and ``subj``'s reports
        of a body in another place."""
        out = [(k["tick"], f"the kill of {v} in {k['room']} at "
                           f"{_s(k['tick'])}") for v, k in self.facts.kills.items()
               if f <= k["tick"] <= t and k["room"] != room]
        out += [(r["tick"], f"its report of a body in {r['room']} at "
                            f"{_s(r['tick'])}") for r in self.facts.reports
                if r["reporter"] == subj and f <= r["tick"] <= t and r["room"] != room]
        return sorted(out)

    def place_rule(self, subj: str, room: str, span: Span) -> tuple[bool, dict[str, Any], str]:
        """(right, support, why not) of "``subj`` was in ``room``" over ``span``: the rule of its kind of
        time."""
        sup = span.support()
        if span.how != WINDOW:
            lo, hi = span.lo, span.hi
            there = self._in_place(subj, room, lo, hi)
            sup["present_s"] = length(there) / TICKS_PER_SECOND
            if span.how == STAY:
                need = span.stay_ticks
                return length(there) >= need, sup, (
                    f"{subj} was in {room} for {length(there) / TICKS_PER_SECOND:g} s since the last meeting "
                    f"({need / TICKS_PER_SECOND:g} s needed)" if there else f"{subj} was not in {room} then")
            return bool(there), sup, f"{subj} was not in {room} then"
        f, t = span.lo, span.hi
        short = t - f < SHORT
        p = self.tl.presence(subj, room, f, t)
        sup["presence"] = round(p, 3)
        anchors = self.anchors(subj, room, f, t)
        for tick, what in anchors:
            if not self._in_place(subj, room, tick, tick):
                sup.update(rule="covered", anchor_tick=tick)
                where = _where(self.tl, subj, tick, tick)
                return False, sup, f"the window holds {what}, and {subj} was in {where} then, not in {room}"
        if short:
            return bool(self._in_place(subj, room, f - TOL, t + TOL)), sup, f"{subj} was not in {room} then"
        need = COVER if anchors else MAJORITY
        if anchors:
            sup["rule"] = "covered"
        why = (f"in {room} for {p:.0%} of the window, which holds {anchors[0][1]} ({need:.0%} "
               f"needed)" if anchors
               else f"near miss: in {room} for {p:.0%} of the window")
        return p >= need, sup, why

    def _seen_there(self, speaker: str, subj: str, room: str, lo: int, hi: int) -> list:
        return overlap(self._in_place(subj, room, lo, hi), self._in_view(speaker, subj, lo, hi))

    def _at(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        subj, room = self._who(c, speaker), c["room"]
        sp = self.span(c, tick)
        if not self.tl.was_active(subj, sp.lo - TOL, sp.hi + TOL):
            return Verdict(UNVERIFIABLE, f"{subj} was not in the game then", sp.support())
        ok, sup, why = self.place_rule(subj, room, sp)
        if ok and subj != speaker and not self._seen_there(speaker, subj, room, sp.lo - TOL, sp.hi + TOL):
            return Verdict(UNSUPPORTED, f"{subj} was in {room}, but never in {speaker}'s view there", sup,
                           FABRICATION)
        if ok:
            return Verdict(TRUE, f"{subj} was in {room}" + (f" for {sup['presence']:.0%} of the window"
                                                             if "presence" in sup else ""), sup)
        if why.startswith(f"{subj} was not in"):
            why = f"{subj} was in {_where(self.tl, subj, sp.lo, sp.hi)}"
        epi = KNOWN_FALSE if subj == speaker else self._epistemic_place(speaker, subj, room, sp.lo - TOL,
                                                                          sp.hi + TOL)
        return Verdict(FALSE, why, sup, epi)

    def _task(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        subj = self._who(c, speaker)
        by = _t(c["at_s"]) + TOL if c.get("at_s") is not None else tick
        done = self.facts.tasks.get((subj, c["station"]))
        if done is not None and done <= min(by, tick):
            return Verdict(TRUE, f"{subj} finished station {c['station']} at {_s(done)}", {"done_tick": done})
        why = (f"{subj} finished station {c['station']} only at {_s(done)}" if done is not None
               else f"{subj} finished no task at station {c['station']}")
        return Verdict(FALSE, why, {"done_tick": done}, KNOWN_FALSE if subj == speaker else FABRICATION)

    def _sighting(self, speaker: str, subj: str, room: str, t0: int, t1: int) -> Verdict:
        """``speaker`` saw ``subj`` in ``room`` within [t0, t1] (``saw``, and ``body``'s near)."""
        there = self._in_place(subj, room, t0, t1)
        seen = overlap(there, self._in_view(speaker, subj, t0, t1))
        if seen:
            return Verdict(TRUE, f"{subj} was in {room}, in {speaker}'s view", {"seen_ticks": length(seen)})
        if there:
            return Verdict(UNSUPPORTED, f"{subj} was in {room} but never in {speaker}'s view there",
                           {"there_ticks": length(there)}, FABRICATION)
        return Verdict(FALSE, f"{subj} was in {_where(self.tl, subj, t0, t1)}", {},
                       self._epistemic_place(speaker, subj, room, t0, t1))

    def _epistemic_place(self, speaker: str, subj: str, room: str, t0: int, t1: int) -> str:
        """A false place claim about another player, from the speaker's own view."""
        if self._in_view(speaker, subj, t0, t1):
            return KNOWN_FALSE  # the speaker had the subject in view then, elsewhere
        there = self._in_place(subj, room, t0 - STALE, t1 + STALE)
        if overlap(there, self._in_view(speaker, subj, t0 - STALE, t1 + STALE)):
            return HONEST_ERROR  # it saw the subject there, earlier or later
        return FABRICATION

    def _saw(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        sp = self.span(c, tick)
        lo, hi = (sp.lo - TOL, sp.hi + TOL) if sp.how == WINDOW else (sp.lo, sp.hi)
        v = self._sighting(speaker, c["who"], c["room"], lo, hi)
        v.support.update(sp.support())
        return v

    def _with(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        """Both in the room together (each by the place rule of the claim's time; a long window: together for
        as much of it as the rule asks), and the other in the speaker's view there."""
        room, other = c["room"], c["who"]
        sp = self.span(c, tick)
        me_ok, sup, why_me = self.place_rule(speaker, room, sp)
        it_ok, _, why_it = self.place_rule(other, room, sp)
        long = sp.how == WINDOW and sp.hi - sp.lo >= SHORT
        f, t = (sp.lo, sp.hi) if sp.how in (SOME_TIME, STAY) or long else (sp.lo - TOL, sp.hi + TOL)
        both = overlap(self._in_place(speaker, room, f, t), self._in_place(other, room, f, t))
        share = length(both) / (t + 1 - f)
        sup["together"] = round(share, 3)
        need = (COVER if sup.get("rule") == "covered" else MAJORITY) if long else 0.0
        if sp.how == STAY:
            need = sp.stay_ticks / (t + 1 - f)
            sup["together_s"] = length(both) / TICKS_PER_SECOND
        if me_ok and it_ok and both and share >= need:
            if not overlap(both, self._in_view(speaker, other, f, t)):
                return Verdict(UNSUPPORTED, f"{speaker} and {other} were in {room}, but {other} never in "
                                            f"{speaker}'s view there", sup, FABRICATION)
            return Verdict(TRUE, f"{speaker} and {other} were in {room} together for {share:.0%} of the "
                                 f"window", sup)
        why = why_me if not me_ok else why_it if not it_ok else (f"together in {room} for {share:.0%} of the "
                                                                 f"window")
        return Verdict(FALSE, f"{why}; {speaker} was in {_where(self.tl, speaker, sp.lo, sp.hi)}, {other} in "
                              f"{_where(self.tl, other, sp.lo, sp.hi)}", sup, KNOWN_FALSE)

    def _saw_kill(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        """Anchored to the kill event of the victim: its killer, and its room and time where the claim says
        them."""
        k = self.facts.kills.get(c["victim"])
        witnessed = k is not None and speaker in k["witnesses"]
        epi = KNOWN_FALSE if witnessed else FABRICATION
        if k is None or k["tick"] > tick:
            return Verdict(FALSE, f"{c['victim']} was not killed by then", {}, epi)
        sup = {"kill_tick": k["tick"]}
        if k["killer"] != c["who"]:
            return Verdict(FALSE, f"{c['who']} did not kill {c['victim']}", sup, epi)
        if c.get("room") is not None and k["room"] != c["room"]:
            return Verdict(FALSE, f"the kill was in {k['room']}", sup, epi)
        if c.get("at_s") is not None or c.get("from_s") is not None:
            sp = self.span(c, tick)
            lo, hi = (sp.lo, sp.hi) if sp.how == MOMENT else (sp.lo - TOL, sp.hi + TOL)
            if not lo <= k["tick"] <= hi:
                return Verdict(FALSE, f"the kill was at {_s(k['tick'])}", sup, epi)
        if not witnessed:
            return Verdict(UNSUPPORTED, f"{speaker} was no witness of the kill", sup, FABRICATION)
        return Verdict(TRUE, f"{speaker} witnessed the kill", sup)

    def _body(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        victim = c["victim"]
        k = self.facts.kills.get(victim)
        if k is None or k["tick"] > tick:
            return Verdict(FALSE, f"{victim} was not killed by then", {}, KNOWN_FALSE)
        if k["room"] != c["room"]:
            return Verdict(FALSE, f"{victim}'s body lay in {k['room']}", {}, KNOWN_FALSE)
        seen = self.facts.saw_body(speaker, victim)
        by = _t(c["at_s"]) + TOL if c.get("at_s") is not None else tick
        if seen is None or seen > min(by, tick):
            why = f"{speaker} saw the body only at {_s(seen)}" if seen is not None else (f"{speaker} never "
                                                                                         f"saw the body")
            return Verdict(FALSE, why, {"seen_tick": seen}, KNOWN_FALSE)
        # who was near: at the claimed moment +/- 5 s; untimed, at some moment from my first sight of the
        # body on
        lo, hi = (
            (_t(c["at_s"]) - TOL, _t(c["at_s"]) + TOL) if c.get("at_s") is not None else (seen - TOL, tick)
        )
        worst = Verdict(TRUE, f"{speaker} saw the body at {_s(seen)}", {"seen_tick": seen})
        for name in c.get("near", []):
            v = self._sighting(speaker, name, c["room"], lo, hi)
            if v.verdict == FALSE or (v.verdict == UNSUPPORTED and worst.verdict == TRUE):
                worst = Verdict(
                    v.verdict, f"near: {v.reason}", {"seen_tick": seen, "near": name}, v.epistemic
                )
        return worst

    def _stance(self, c: dict[str, Any], speaker: str, tick: int) -> Verdict:
        start = self.facts.since_last_meeting(tick)
        target = c["who"]
        saw = bool(self._in_view(speaker, target, start, tick))
        near = False
        for victim, k in self.facts.kills.items():
            if start <= k["tick"] <= tick and victim != target:
                there = self._in_place(target, k["room"], k["tick"] - STALE, tick)
                near = near or bool(overlap(there, self._in_view(speaker, target, k["tick"] - STALE, tick)))
        return Verdict(UNVERIFIABLE, "a stance: right or wrong only against the roles, which the checker "
                                     "does not read", {"saw_since_last_meeting": saw, "near_a_body": near},
                       grounded=saw or near)

    _accuse = _vouch = _stance

    # -- a match ---------------------------------------------------------------------------------------------
    def check_all(self) -> list[dict[str, Any]]:
        """One record per claim of the match, in the order said (the lines of claims.jsonl)."""
        out = []
        for u in self.facts.utterances:
            for n, claim in enumerate(u["claims"]):
                v = self.check(claim, u["speaker"], u["tick"])
                rec: dict[str, Any] = {"i": u["i"], "n": n, F.TICK: u["tick"], "meeting": u["meeting"],
                                       "round": u["round"], F.SPEAKER: u["speaker"], "claim": claim,
                                       "kind": "stance" if claim["k"] in STANCE_KINDS else "fact",
                                       "verdict": v.verdict, "reason": v.reason, "support": v.support,
                                       "epistemic": v.epistemic}
                if v.grounded is not None:
                    rec["grounded"] = v.grounded
                out.append(rec)
        return out


def check_match(events: list[dict[str, Any]], sights: list[dict[str, Any]],
                source: str | None = None) -> list[dict[str, Any]]:
    """The checker's records of one match (empty when nobody made a claim); ``source``: the match folder read
    (its claims are checked against the grammar first)."""
    if not any(e.get(F.TYPE) == F.EV_UTTERANCE and e.get(F.CLAIMS) for e in events):
        return []
    return Checker(events, sights, source).check_all()


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    out = {v: 0 for v in VERDICTS}
    for r in records:
        out[r["verdict"]] += 1
    return out
