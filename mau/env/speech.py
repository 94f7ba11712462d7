"""What scripted players say: speech acts, and the one set of phrasings both roles draw from.

A scripted player decides *what* to say as a list of acts (where it was, an accusation and its reason, a
denial, a vouch, ...); ``realise`` turns each act into a sentence drawn from that act's pool of paraphrases
with the speaker's own phrasing stream, whatever its role. So a crewmate and an imposter who say the same
thing say it the same way: what differs between the roles is content (what is true), never phrasing
(docs/game.md, "Speech"; ``mau.eval.phrasing`` measures the tell that is left). Every accusation form reads
as one to ``mau.infer.hearsay`` (strong: a kill or a player by the victim; weak: a suspicion or a vote), and
no clearing form reads as an accusation (tests/test_speech.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

# Act kinds
ALIBI, NOTHING, SAW_KILL, NEAR, SUSPECT, VOTE, STANCE, VOUCH, AGREE = (
    "alibi", "nothing", "saw_kill", "near", "suspect", "vote", "stance", "vouch", "agree")
ACCUSING = (SAW_KILL, NEAR, SUSPECT, VOTE)  # acts that name a player as an imposter

# Each act's paraphrases: {who} the player it is about, {victim}, {room}, {dist} blocks, {at} game seconds,
# {to} the speaker agreed with.
POOLS: dict[str, tuple[str, ...]] = {
    # where I was: the room I stood in when the meeting was called, said as such (a claim of that moment,
    # docs/claims.md "Untimed claims": "the whole time" was not what these lines meant)
    ALIBI: ("I was doing my missions near {room} when the meeting was called.",
            "I was in {room} when the meeting was called.", "I was around {room} just now."),
    NOTHING: ("I have not seen anything suspicious.", "Nothing to report.", "I did not see anything "
                                                                            "strange."),
    SAW_KILL: ("I saw {who} kill {victim} in {room}.", "I saw {who} kill {victim} with my own eyes, in "
                                                       "{room}."),
    NEAR: ("I saw {who} near where {victim} died ({dist} blocks away at {at} s).",
           "{who} was near where {victim} died, {dist} blocks away at {at} s, I saw it."),
    SUSPECT: ("I suspect {who}.", "{who} looks suspicious.", "{who} seems sus to me."),
    VOTE: ("Vote {who}.", "I vote for {who}.", "Let us vote {who} out."),
    # round 2: every speaker, accused or not, stands by where it was (a denial that never tells who was
    # accused)
    STANCE: ("That is not true, I was in {room} when the meeting was called.",
             "I am a crewmate, I was in {room} doing my missions when the meeting was called.",
             "It was not me, I was in {room} just now."),
    VOUCH: ("I vouch for {who}.", "I believe {who}, {who} is innocent.", "I trust {who}."),
    AGREE: ("I agree with {to}.", "{to} is right."),
}


@dataclass(frozen=True)
class Act:
    """One thing to say. ``who``: the player it is about; ``to``: the speaker agreed with."""

    kind: str
    who: str | None = None
    victim: str | None = None
    room: str | None = None
    dist: float | None = None
    at: float | None = None
    to: str | None = None


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:g}"


def realise(acts: list[Act], key: str) -> str:
    """The sentences of ``acts``, each from its pool: the paraphrase is a hash of ``key`` (the speaker and the
    moment), the act's place and kind, so it is uniform over the pool and independent of every decision."""
    out = []
    for i, a in enumerate(acts):
        pool = POOLS[a.kind]
        h = hashlib.blake2b(f"{key}|{i}|{a.kind}".encode(), digest_size=4).digest()
        form = pool[int.from_bytes(h, "big") % len(pool)]
        out.append(
            form.format(who=a.who, victim=a.victim, room=a.room, dist=_num(a.dist), at=_num(a.at), to=a.to)
        )
    return " ".join(out)


def accused_by(acts: list[Act]) -> str | None:
    """The player the acts accuse (the suspicion cast on), or None."""
    return next((a.who for a in acts if a.kind in ACCUSING), None)


@lru_cache(maxsize=1)
def _matchers() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for kind, forms in POOLS.items():
        for form in forms:
            pat = re.escape(form)
            for slot in ("who", "victim", "room", "dist", "at", "to"):
                pat = pat.replace(re.escape("{" + slot + "}"), r".+?")
            out.append((kind, re.compile(pat)))
    return out


def kinds(text: str) -> list[str]:
    """The acts of a scripted utterance, read back from its sentences (a sentence of no pool: nothing)."""
    return list(_kinds(text)) if isinstance(text, str) else _read_kinds(text)


@lru_cache(maxsize=4096)
def _kinds(text: str) -> tuple[str, ...]:
    """``kinds`` of a text, kept: every imposter at the table reads the same utterance."""
    return tuple(_read_kinds(text))


def _read_kinds(text: str | None) -> list[str]:
    out = []
    for sentence in re.findall(r".+?[.!?](?=\s|$)", text or ""):
        sentence = sentence.strip()
        kind = next((k for k, m in _matchers() if m.fullmatch(sentence)), None)
        if kind is not None:
            out.append(kind)
    return out
