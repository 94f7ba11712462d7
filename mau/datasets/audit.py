"""The role-leak audit: no crewmate example may state the role of a player whose role it cannot know yet.

Run on every example of every build (docs/datasets.md, "Role-leak audit"). A leak fails the whole build with
one line naming the match, the call and the phrase; nothing is written.

What is searched: the example's input text (the system message and the text parts of the user message), with
three kinds of text taken out first, because they are what players (models) said, not what the harness knows:
the quoted speech of the meeting transcript (``Name: "..."`` lines: players accuse each other), and text that
the caller's own earlier answers put into its prompt (REFLECT insights and skills, strategies: a model's
beliefs, at least ``MIN_AUTHORED_CHARS`` long).

Who is hidden at a call: every player of the match except the caller itself and the players ejected at or
before the call's tick (an ejection reveals the role to everyone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from mau import schema as F
from mau.datasets.sources import MatchInfo
from mau.errors import MauError

# Phrases that state a hidden player's role (each starts with "{name} ", the player); case-insensitive, any run
# of whitespace between words. The first two are how the harness lists ejections ("Ejected: Olivia (was an Imposter).").
LEAK_PHRASES: tuple[str, ...] = (
    "{name} (was an Imposter)",
    "{name} (was a Crewmate)",
    "{name} was an Imposter",
    "{name} was a Crewmate",
    "{name} is an Imposter",
    "{name} is the Imposter",
    "{name} is a Crewmate",
)
# Phrases that leak on their own, whoever they name: only an imposter's prompt may speak of a fellow.
ANY_PLAYER_PHRASES: tuple[str, ...] = ("fellow Imposter",)
# The header's roles mapping written out, e.g. '"Olivia": "imposter"', "Olivia: crewmate", "Olivia=imposter":
# a regular expression (lower case) for what follows a hidden player's name.
ROLE_MAPPING_AFTER_NAME = r"""["']?\s*[:=]\s*["']?(?:imposter|crewmate)\b"""
# The caller's own earlier answers shorter than this are not taken out (names, rooms, "skip").
MIN_AUTHORED_CHARS = 16


class RoleLeakError(MauError):
    """A crewmate example states a role its caller could not know; the build stops."""


@dataclass(frozen=True)
class Leak:
    player: str | None  # None for ANY_PLAYER_PHRASES
    phrase: str


def _phrase_regex(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


def input_text(messages: list[dict[str, Any]]) -> str:
    """S as text: every text part of every message (system and user), in order."""
    out = []
    for m in messages:
        content = m.get(F.DS_CONTENT)
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p.get(F.DS_CONTENT_TEXT) or "" for p in content
                    if isinstance(p, dict) and p.get(F.DS_CONTENT_TYPE) == "text"]
    return "\n".join(out)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


class Auditor:
    """The audit for one match. Feed it every call of the match in order (``observe``), and ``check`` the
    examples."""

    def __init__(self, match: MatchInfo):
        self.match = match
        names = sorted(match.roles, key=len, reverse=True)  # longest first: "Ann" must not shadow "Anna"
        tails = [r"\s+" + _phrase_regex(p.removeprefix("{name} ").lower()) for p in LEAK_PHRASES]
        tails.append(ROLE_MAPPING_AFTER_NAME)
        # One pass per example over the lower-cased text (much faster than re.IGNORECASE): any player's name
        # followed by any phrase; then keep the hidden ones.
        self.player_re = re.compile(r"(?<![\w])(?P<name>" + "|".join(re.escape(n.lower()) for n in names) + r")(?:"
                                    + "|".join(tails) + ")")
        self.canonical = {n.lower(): n for n in names}
        self.any_re = re.compile("|".join(_phrase_regex(p.lower()) for p in ANY_PLAYER_PHRASES))
        # One line of the transcript: Name: "...". Speech over several lines is taken out whole (from the log).
        self.speech_re = re.compile(r'^(?:' + "|".join(re.escape(n) for n in names) + r'): ".*"$', re.MULTILINE)
        self.long_speech = [f'{s}: "{t}"' for s, t in match.utterances if "\n" in t]
        self.authored: dict[str, dict[str, None]] = {}

    def observe(self, call: dict[str, Any]) -> None:
        """Remember what this call's answer may bring into the caller's later prompts (its own words)."""
        parsed = call.get(F.PARSED)
        if parsed is None:
            return
        mine = self.authored.setdefault(str(call.get(F.AGENT)), {})
        for s in _strings(parsed):
            if len(s) >= MIN_AUTHORED_CHARS:
                mine.setdefault(s, None)

    def searched_text(self, call: dict[str, Any]) -> str:
        text = input_text(call[F.MESSAGES])
        for s in self.long_speech:
            if s in text:
                text = text.replace(s, "\n")
        text = self.speech_re.sub("\n", text)
        for s in self.authored.get(str(call.get(F.AGENT)), ()):
            if s in text:
                text = text.replace(s, "\n")
        return text

    def find(self, call: dict[str, Any]) -> Leak | None:
        text = self.searched_text(call)
        low = text.lower()
        same = len(low) == len(text)  # show the phrase as written when lower-casing kept the positions

        def phrase(m: re.Match) -> str:
            return text[m.start():m.end()] if same else m.group(0)

        m = self.any_re.search(low)
        if m:
            return Leak(None, phrase(m))
        hidden = set(self.match.roles) - self.match.revealed_at(int(call[F.TICK])) - {call.get(F.AGENT)}
        for m in self.player_re.finditer(low):
            name = self.canonical[m.group("name")]
            if name in hidden:
                return Leak(name, phrase(m))
        return None

    def check(self, call: dict[str, Any]) -> None:
        leak = self.find(call)
        if leak is None:
            return
        phrase = " ".join(leak.phrase.split())
        whose = (f"the role of {leak.player}, not revealed by tick {call[F.TICK]}" if leak.player
                 else "an imposter's teammate in a crewmate's prompt")
        raise RoleLeakError(
            f"role leak in match {self.match.match_id} ({self.match.path}), call {call[F.CALL_ID]}: "
            f"{phrase!r} states {whose}; nothing was written (docs/datasets.md, 'Role-leak audit')")
