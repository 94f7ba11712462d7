"""The role-leak audit: no crewmate example may state the role of a player whose role it cannot know yet,
nor, in the harness's words, who killed whom (a crewmate perceives a kill only through its frames).

Run on every example of every build (docs/datasets.md, "Role-leak audit"). A leak fails the whole build with
one line naming the match, the call and the phrase; nothing is written.

What is searched: the example's input text (the system message and the text parts of the user message), with
three kinds of text taken out first, because they are what players (models) said, not what the harness knows:
the quoted speech of the meeting transcript (``Name: "..."`` lines: players accuse each other), and text that
the caller's own earlier answers put into its prompt (REFLECT insights and skills, strategies: a model's
beliefs, at least ``MIN_AUTHORED_CHARS`` long).

Who is hidden at a call: every player of the match except the caller itself and the players ejected at or
before the call's tick (an ejection reveals the role to everyone).

Kill authors: for every kill of the match up to the call's tick (``kill`` events), any of
``KILL_AUTHOR_PHRASES`` naming its killer in the searched text is a leak, whoever the caller is and whether
or not the killer has been ejected since: only players may say who killed whom (their speech and the caller's
own words are taken out).

Claim labels (docs/claims.md): no call record may carry what only the analysis knows of a claim, the speaker's
private ``intent`` label or the checker's verdict: a key ``intent``, ``verdict`` or ``epistemic`` in the
answer (raw or parsed), or in the harness's text of the prompt such a key written out or a verdict word
(``UNSUPPORTED``, ``UNVERIFIABLE``, ``verdict: FALSE``). ``claim_label_leak`` finds it, for a call of either
role.

``vanished_rule`` measures the inference the issue found in the old privileged state (a player silently
dropped from the position list is the victim; the player listed nearest to it one call earlier the killer);
``python -m mau.datasets.audit RUN...`` runs the audit and the rule over collected matches and prints JSON.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from mau import schema as F
from mau.datasets.sources import MatchInfo
from mau.errors import MauError
from mau.schema import IMPOSTER

# Phrases that state a hidden player's role (each starts with "{name} ", the player); case-insensitive, any
# run of whitespace between words. The first two are how the harness lists ejections ("Ejected: Olivia (was
# an Imposter).").
LEAK_PHRASES: tuple[str, ...] = (
    "{name} (was an Imposter)", "{name} (was a Crewmate)", "{name} was an Imposter", "{name} was a Crewmate",
    "{name} is an Imposter", "{name} is the Imposter", "{name} is a Crewmate",
)
# Phrases that leak on their own, whoever they name: only an imposter's prompt may speak of a fellow.
ANY_PLAYER_PHRASES: tuple[str, ...] = ("fellow Imposter",)
# The header's roles mapping written out, e.g. '"Olivia": "imposter"', "Olivia: crewmate", "Olivia=imposter":
# a regular expression (lower case) for what follows a hidden player's name.
ROLE_MAPPING_AFTER_NAME = r"""["']?\s*[:=]\s*["']?(?:imposter|crewmate)\b"""
# Phrases that state who killed whom ({killer}, {victim}: players of a kill of the match), case-insensitive.
KILL_AUTHOR_PHRASES: tuple[str, ...] = (
    "saw {killer} kill", "{killer} killed", "{killer} kill {victim}", "{killer} kills {victim}",
    "killed by {killer}",
)
# Claim labels: keys of a private label or a verdict, and the checker's words in the harness's text.
CLAIM_LABEL_KEYS: tuple[str, ...] = ("intent", "verdict", "epistemic")
CLAIM_LABEL_RE = re.compile(
    r"""["']?\b(?:intent|verdict|epistemic)\b["']?\s*[:=]|\bUNSUPPORTED\b|\bUNVERIFIABLE\b"""
)
# Every match of CLAIM_LABEL_RE holds one of these words: a text without them is skipped in a fraction of the
# time (a leading optional quote and word boundaries defeat the regex engine's own literal scan).
_CLAIM_LABEL_WORDS = re.compile(r"intent|verdict|epistemic|UNSUPPORTED|UNVERIFIABLE")
# The caller's own earlier answers shorter than this are not taken out (names, rooms, "skip").
MIN_AUTHORED_CHARS = 16


class RoleLeakError(MauError):
    """A crewmate example states a role its caller could not know; the build stops."""


@dataclass(frozen=True)
class Leak:
    player: str | None  # None for ANY_PLAYER_PHRASES
    phrase: str
    kill: tuple[str, str] | None = None  # (killer, victim) when the phrase states a kill's author


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
        self.player_re = re.compile(
            r"(?<![\w])(?P<name>"
            + "|".join(re.escape(n.lower()) for n in names)
            + r")(?:"
            + "|".join(tails)
            + ")"
        )
        self.canonical = {n.lower(): n for n in names}
        self.any_re = re.compile("|".join(_phrase_regex(p.lower()) for p in ANY_PLAYER_PHRASES))
        # One line of the transcript: Name: "...". Speech over several lines is taken out whole (from the
        # log).
        self.speech_re = re.compile(r'^(?:' + "|".join(re.escape(n) for n in names) + r'): '
                                                                                      r'".*"$', re.MULTILINE)
        self.long_speech = [f'{s}: "{t}"' for s, t in match.utterances if "\n" in t]
        # Speech quoted in a module's event line (BELIEF: `Noah said: "..."`) is a player's words too.
        self.quoted_speech = [f'{s} said: "{t}"' for s, t in match.utterances]
        self.authored: dict[str, dict[str, None]] = {}
        self.kill_res = [
            (
                tick, killer, victim,
                re.compile(
                    "|".join(
                        r"(?<![\w])"
                        + _phrase_regex(ph.format(killer=killer.lower(), victim=victim.lower()))
                        + r"(?![\w])"
                        for ph in KILL_AUTHOR_PHRASES
                    )
                ),
            )
            for tick, killer, victim in match.kills
        ]
        # The union of every kill's phrases: one pass tells whether any of them occurs (almost never), so the
        # per-kill patterns, which say which kill and whether it happened yet, run only then. The boundaries
        # are written once around the alternatives: the engine then scans for their first letters (about 10x
        # faster than boundaries inside each alternative).
        self.any_kill_re = re.compile(
            r"(?<![\w])(?:"
            + "|".join(_phrase_regex(ph.format(killer=killer.lower(), victim=victim.lower()))
                       for _, killer, victim in match.kills for ph in KILL_AUTHOR_PHRASES)
            + r")(?![\w])"
        ) if match.kills else None

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
        for s in self.long_speech + self.quoted_speech:
            if s in text:
                text = text.replace(s, "\n")
        text = self.speech_re.sub("\n", text)
        for s in self.authored.get(str(call.get(F.AGENT)), ()):
            if s in text:
                text = text.replace(s, "\n")
        return text

    def find(self, call: dict[str, Any]) -> Leak | None:
        text = self.searched_text(call)
        label = claim_label_leak(call, text)
        if label is not None:
            return Leak(None, label)
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
        if self.any_kill_re is None or self.any_kill_re.search(low) is None:
            return None
        for tick, killer, victim, rx in self.kill_res:
            if tick <= int(call[F.TICK]):
                m = rx.search(low)
                if m:
                    return Leak(killer, phrase(m), kill=(killer, victim))
        return None

    def check(self, call: dict[str, Any]) -> None:
        leak = self.find(call)
        if leak is None:
            return
        phrase = " ".join(leak.phrase.split())
        if leak.kill:
            whose = (f"who killed {leak.kill[1]} ({leak.kill[0]}): only players may say that, the harness "
                     f"never")
        elif leak.player:
            whose = f"the role of {leak.player}, not revealed by tick {call[F.TICK]}"
        elif leak.phrase.startswith(CLAIM_LABEL_PREFIX):
            whose = ("a claim's private label or the checker's verdict, which no call may carry "
                     "(docs/claims.md)")
        else:
            whose = "an imposter's teammate in a crewmate's prompt"
        raise RoleLeakError(
            f"role leak in match {self.match.match_id} ({self.match.path}), call {call[F.CALL_ID]}: "
            f"{phrase!r} states {whose}; nothing was written (docs/datasets.md, 'Role-leak audit')")


CLAIM_LABEL_PREFIX = "claim label: "


def _keys(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def claim_label_leak(call: dict[str, Any], text: str | None = None) -> str | None:
    """A claim's private label or a verdict in a call record: as a key of the answer (parsed, or raw JSON),
    or in the prompt's harness text (``text``: speech already taken out; default the whole input text). The
    phrase found (prefixed ``claim label: ``), or None."""
    answers: list[Any] = [call.get(F.PARSED)]
    raw = call.get(F.RAW_OUTPUT)
    if isinstance(raw, str) and "{" in raw:
        try:
            answers.append(json.loads(raw[raw.index("{"): raw.rindex("}") + 1]))
        except ValueError:
            pass
    for a in answers:
        key = next((k for k in _keys(a) if k in CLAIM_LABEL_KEYS), None)
        if key is not None:
            return f"{CLAIM_LABEL_PREFIX}the answer has a key {key!r}"
    searched = input_text(call.get(F.MESSAGES) or []) if text is None else text
    m = CLAIM_LABEL_RE.search(searched) if _CLAIM_LABEL_WORDS.search(searched) else None
    return f"{CLAIM_LABEL_PREFIX}{m.group(0)}" if m else None


# -- the "vanished player" inference -------------------------------------------------------------------------
_POSITIONS_RE = re.compile(r"^(?:Last known positions of the others|Positions of all players within range): "
                           r"(.*)\.$",
                           re.MULTILINE)
_ENTRY_RE = re.compile(r"([A-Z][A-Za-z]*) in [^;(]*\((-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\)")
_LIST_RE = {"dead": re.compile(r"^Known dead: (.*)\.$", re.MULTILINE),
            "ejected": re.compile(r"^Ejected: (.*)\.$", re.MULTILINE)}


def _listed(text: str) -> dict[str, tuple[float, float]] | None:
    m = _POSITIONS_RE.search(text)
    if m is None:
        return None
    return {e.group(1): (float(e.group(2)), float(e.group(3))) for e in _ENTRY_RE.finditer(m.group(1))}


def _gone(text: str) -> set[str]:
    out: set[str] = set()
    for rx in _LIST_RE.values():
        m = rx.search(text)
        if m:
            out |= {w.split(" (")[0].strip() for w in m.group(1).split(",")}
    return out


def vanished_rule(calls: Iterable[dict[str, Any]], kills: list[tuple[int, str, str]]) -> dict[str, float]:
    """The inference from prompt text alone: a player listed at a crewmate's previous call, missing now and
    neither known dead nor ejected, is a victim, and the player listed nearest to it at the previous call its
    killer. Returns events (vanishings), hits (the named killer killed the vanished player) and chance (the
    mean of 1 / candidates, candidates: the others listed at the previous call)."""
    truth = {(k, v) for _, k, v in kills}
    prev: dict[str, dict[str, tuple[float, float]]] = {}
    events = hits = 0
    chance = 0.0
    for c in calls:
        if c.get(F.ROLE) == IMPOSTER:
            continue
        text = input_text(c[F.MESSAGES])
        now = _listed(text)
        if now is None:
            continue
        agent = str(c.get(F.AGENT))
        before = prev.get(agent)
        prev[agent] = now
        if not before:
            continue
        gone = _gone(text)
        for v in before:
            if v in now or v in gone:
                continue
            others = {n: p for n, p in before.items() if n != v}
            if not others:
                continue
            vx, vz = before[v]
            guess = min(others, key=lambda n: (math.hypot(others[n][0] - vx, others[n][1] - vz), n))
            events += 1
            hits += (guess, v) in truth
            chance += 1 / len(others)
    return {"events": events, "hits": hits, "chance_hits": round(chance, 2),
            "accuracy": round(hits / events, 3) if events else None,
            "chance": round(chance / events, 3) if events else None}


def audit_runs(paths: list[str]) -> dict[str, Any]:
    """Every crewmate call of every match under ``paths``: leaks found (role or kill author), and the
    vanished-player rule, per state mode."""
    from mau.datasets.sources import find_matches, iter_calls, load_match

    problems: list[str] = []
    leaks: list[str] = []
    per_mode: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"matches": 0, "crewmate_calls": 0, "calls": []}
    )
    n = 0
    for match_dir, run in find_matches(paths):
        match = load_match(match_dir, run, lambda p: problems.append(str(p)))
        auditor = Auditor(match)
        calls = list(iter_calls(match, lambda p: problems.append(str(p))))
        n += 1
        modes = set()
        for call in calls:
            if call.get(F.ROLE) != IMPOSTER:
                mode = str((call.get(F.HARNESS) or {}).get("state", "?"))
                modes.add(mode)
                per_mode[mode]["crewmate_calls"] += 1
                leak = auditor.find(call)
                if leak is not None:
                    leaks.append(f"{match.match_id} {call[F.CALL_ID]}: {' '.join(leak.phrase.split())!r}")
            # imposters' calls too
            elif (label := claim_label_leak(call, auditor.searched_text(call))) is not None:
                leaks.append(f"{match.match_id} {call[F.CALL_ID]}: {label}")
            auditor.observe(call)
        for mode in modes:
            per_mode[mode]["matches"] += 1
            rule = vanished_rule(
                [c for c in calls if str((c.get(F.HARNESS) or {}).get("state")) == mode], match.kills
            )
            per_mode[mode]["calls"].append(rule)
    out: dict[str, Any] = {
        "matches": n, "leaks": len(leaks), "first_leaks": leaks[:10], "problems": len(problems),
    }
    for mode, d in sorted(per_mode.items()):
        ev = sum(r["events"] for r in d["calls"])
        hits = sum(r["hits"] for r in d["calls"])
        ch = sum(r["chance_hits"] for r in d["calls"])
        out[mode] = {"matches": d["matches"], "crewmate_calls": d["crewmate_calls"], "vanished_events": ev,
                     "rule_hits": hits, "rule_accuracy": round(hits / ev, 3) if ev else None,
                     "chance": round(ch / ev, 3) if ev else None}
    return out


def main(argv: list[str] | None = None) -> int:
    """python -m mau.datasets.audit RUN [RUN...]: the audit over collected matches, as JSON; exit 1 on a
    leak."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m mau.datasets.audit RUN [RUN...]", file=sys.stderr)
        return 2
    report = audit_runs([str(Path(a)) for a in args])
    print(json.dumps(report, indent=1))
    return 1 if report["leaks"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
