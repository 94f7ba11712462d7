"""What the checker will say of a claim a scripted speaker is about to make, from its own perception only
(docs/claims.md, "Foreseeing a verdict"): ``Foresight(speaker, now).possible(claim)`` is the set of verdicts
the checker (``mau.claims.check``, every rule: moments, windows with the majority and cover rules, untimed
stays and relative times, sightings) may give it. A speaker that wants a claim to pass (the framer's true
alibis) says one whose set is ``{TRUE}``; one that wants a lie it cannot be wrong about, one without TRUE.

It is a bound on the truth, never a guess: "may" can be wrong, "cannot" never is. It reads what ``Reach``
(``mau.claims.speaker``) reads: the speaker's place at every step end and when each meeting was called, where
it had the subject in view (in privileged state: observed it), a walk of at most the world's walking speed
between them, the view distance and the map's lines of sight. The cover rule (a window holding a kill
elsewhere) counts only in "surely TRUE" (the whole window surely in the place): the speaker knows a kill's
moment only to a step (its own kill is recorded at the step end after it), and may not know of a kill at all,
so a window claim that may pass the majority rule stays "may be TRUE, may be FALSE".
"""

from __future__ import annotations

from typing import Any

from mau.claims.check import (
    FALSE,
    MAJORITY,
    SHORT,
    SOME_TIME,
    STAY,
    TOL,
    TRUE,
    UNSUPPORTED,
    UNVERIFIABLE,
    WINDOW,
    claim_span,
)
from mau.claims.grammar import ME, STANCE_KINDS
from mau.claims.speaker import ClaimSpeaker, Reach
from mau.schema import TICKS_PER_SECOND

ALL = frozenset((TRUE, FALSE, UNSUPPORTED, UNVERIFIABLE))


class Foresight:
    """The verdicts a claim may get, said by ``speaker`` at the meeting of tick ``now``."""

    def __init__(self, speaker: ClaimSpeaker, now: int):
        self.sp, self.now = speaker, now
        self.start = max((t for t in speaker.meetings if t < now), default=0)  # a meeting stops the clock
        self.reach = Reach(speaker, now)

    def _surely_in(self, anchors: dict, room: str, tick: int) -> bool:
        """The player was in ``room`` at ``tick``: a known place near in time holds it inside, whatever it
        did."""
        x0, x1, z0, z1 = self.reach.floor.rects[room]
        return any(
            x0 + r <= x <= x1 - r and z0 + r <= z <= z1 - r for x, z, r in self.reach._near(anchors, tick)
        )

    def _may_be_in(self, anchors: dict, room: str, tick: int) -> bool:
        return not self.reach._out(anchors, room, tick)

    def _ticks(self, lo: int, hi: int) -> range:
        return range(max(lo, 0), min(hi, self.now) + 1)

    def possible(self, c: dict[str, Any]) -> frozenset[str]:
        """The verdicts the checker may give ``c`` (canonical; ``who: me`` is the speaker)."""
        k = c["k"]
        if k in STANCE_KINDS:
            return frozenset((UNVERIFIABLE,))
        if k == "at" and c.get("who") == ME:
            return self._at_me(c)
        if k == "task" and c.get("who") == ME:
            return self._task(c)
        if k == "saw":
            return self._saw(c)
        return ALL  # claims about others' places, company, kills, bodies: not bounded here

    def _at_me(self, c: dict[str, Any]) -> frozenset[str]:
        room, me = c["room"], self.reach.me
        sp = claim_span(c, self.now, self.start)
        if room not in self.reach.floor.rects:
            return frozenset((FALSE, TRUE, UNVERIFIABLE))  # a corridor: not bounded here
        if sp.how == STAY:  # an untimed place: a stay of ``stay_ticks`` in all
            ticks = self._ticks(sp.lo, sp.hi)
            may = sum(self._may_be_in(me, room, t) for t in ticks) >= sp.stay_ticks
            sure = sum(self._surely_in(me, room, t) for t in ticks) >= sp.stay_ticks
            return _verdicts(may, sure)
        if sp.how == SOME_TIME or (sp.how == WINDOW and sp.hi - sp.lo < SHORT) or sp.how != WINDOW:
            lo, hi = (sp.lo - TOL, sp.hi + TOL) if sp.how == WINDOW else (sp.lo, sp.hi)
            ticks = self._ticks(lo, hi)
            may = any(self._may_be_in(me, room, t) for t in ticks)
            sure = any(self._surely_in(me, room, t) for t in ticks) and (
                sp.how != WINDOW or all(self._surely_in(me, room, t) for t in self._ticks(sp.lo, sp.hi)))
            return _verdicts(may, sure)
        f, t = sp.lo, sp.hi
        n = t + 1 - f
        may = sum(self._may_be_in(me, room, x) for x in self._ticks(f, t)) / n >= MAJORITY
        sure = all(self._surely_in(me, room, x) for x in self._ticks(f, t)) and len(self._ticks(f, t)) == n
        return _verdicts(may, sure)

    def _task(self, c: dict[str, Any]) -> frozenset[str]:
        by = (
            min(int(round(c["at_s"] * TICKS_PER_SECOND)) + TOL, self.now)
            if c.get("at_s") is not None
            else self.now
        )
        before, prev = None, -1
        for s in self.sp.samples:
            if c["station"] in s.done:
                before = s.tick
                break
            prev = s.tick
        if before is None:  # never done by my last step end: maybe done since (within a step)
            return frozenset((FALSE,)) if prev >= by else frozenset((TRUE, FALSE))
        may = prev < by  # it was finished after ``prev`` and by ``before``
        sure = before <= by
        return _verdicts(may, sure)

    def _saw(self, c: dict[str, Any]) -> frozenset[str]:
        who, room = c["who"], c["room"]
        sp = claim_span(c, self.now, self.start)
        lo, hi = (sp.lo - TOL, sp.hi + TOL) if sp.how == WINDOW else (sp.lo, sp.hi)
        if room not in self.reach.floor.rects:
            return ALL - {UNVERIFIABLE}
        if any(
            lo <= s.tick <= min(hi, self.now) and s.seen.get(who, ("",))[0] == room for s in self.sp.samples
        ):
            return frozenset((TRUE,))  # I had it in view there at a step end of the window
        reach = Reach(self.sp, self.now, who)
        ticks = self._ticks(lo, hi)
        there = any(not reach._out(reach.them, room, t) for t in ticks)
        out = {FALSE}
        if there:
            out.add(UNSUPPORTED)
        if reach.could_see(room, lo, hi):
            out.add(TRUE)
        if any(self._surely_in(reach.them, room, t) for t in ticks):
            out.discard(FALSE)
        return frozenset(out)


def _verdicts(may: bool, sure: bool) -> frozenset[str]:
    if sure:
        return frozenset((TRUE,))
    return frozenset((TRUE, FALSE)) if may else frozenset((FALSE,))
