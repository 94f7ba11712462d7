"""How easily a made-up untimed alibi passes the checker (docs/claims.md, "Untimed claims"): for every speaker
of every meeting, "I was in R" said without a time, for every room R of the map, checked as the checker checks
it. Its pass rate is the chance that a liar naming a room at random is believed; the untimed rule is chosen so
that it stays small (a stay, not a glance) while crewmates' true claims pass."""

from __future__ import annotations

from typing import Any

from mau import schema as F
from mau.claims.check import TRUE, Checker


def untimed_alibis(events: list[dict[str, Any]], sights: list[dict[str, Any]],
                   roles: dict[str, str]) -> dict[str, int]:
    """{"tries_<role>": n, "passes_<role>": k}: every (speaker, meeting, room) of the match, an untimed alibi
    checked; the speakers are those who spoke in the meeting (utterances), the rooms the map's (no corridors,
    no "outside")."""
    ch = Checker(events, sights)
    rooms = [p for p in ch.tl.places if not p.startswith("corridor ") and p != "outside"]
    said: dict[tuple[str, int], int] = {}
    meeting = 0
    for e in events:
        if e.get(F.TYPE) == F.EV_MEETING_START:
            meeting = e[F.TICK]
        elif e.get(F.TYPE) == F.EV_UTTERANCE and meeting:
            said.setdefault((e[F.SPEAKER], meeting), meeting)
    out: dict[str, int] = {}
    for (speaker, _), tick in said.items():
        role = roles.get(speaker, "?")
        for room in rooms:
            v = ch.check({"k": "at", "who": "me", "room": room}, speaker, tick)
            out[f"tries_{role}"] = out.get(f"tries_{role}", 0) + 1
            out[f"passes_{role}"] = out.get(f"passes_{role}", 0) + (v.verdict == TRUE)
    return out
