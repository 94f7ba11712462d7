"""``sights.jsonl`` read back as intervals: where each player was and whom each player had in view, over time.

An interval is ``(start, end)`` in ticks, half open: the state sampled at ``start`` holds until the next
sample that changes it. A meeting stops the clock: its tick is the world as the meeting was called, and the
table after it starts one tick later. The last
state holds until ``end_tick`` (the match's last event).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from mau import schema as F
from mau.errors import MauError

Interval = tuple[int, int]


def read_lines(folder: str | Path, header: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The lines of a match folder's sights.jsonl, checked: every line JSON, the legend first, every sample's
    players and places indices of the legend, and as many lines as ``match.json`` records (``header``: the
    match header, read here when not given). Empty when the match recorded none (played before sights, or by
    a backend
    without them). A damaged, cut or missing file is a one-line ``MauError`` naming it and the fix."""
    path = Path(folder) / F.SIGHTS_FILE
    if header is None:
        from mau.matchdir import read_header

        header = read_header(folder)
    want = (header.get(F.SIGHTS) or {}).get("lines")
    fix = "copy it back from where the run was written, or play the match again"
    if not path.is_file():
        if want:
            raise MauError(f"{path}: missing, but match.json records {want} lines of sights; {fix}")
        return []
    lines = []
    for n, x in enumerate(path.read_text().splitlines(), 1):
        if not x.strip():
            continue
        try:
            lines.append(json.loads(x))
        except json.JSONDecodeError:
            raise MauError(f"{path}:{n}: not valid JSON (the file is cut or damaged); {fix}") from None
    if want is not None and len(lines) != want:
        raise MauError(f"{path}: {len(lines)} lines, but match.json records {want} (the file is cut or "
                       f"damaged); {fix}")
    if lines and lines[0].get(F.SIGHTS_VERSION_FIELD) != F.SIGHTS_VERSION:
        raise MauError(f"{path}: sights version {lines[0].get(F.SIGHTS_VERSION_FIELD)!r}, this mau reads "
                       f"version {F.SIGHTS_VERSION}; install the mau version that wrote it")
    problem = check_lines(lines)
    if problem:
        raise MauError(f"{path}: {problem}; {fix}")
    return lines


def check_lines(lines: list[dict[str, Any]]) -> str | None:
    """What is wrong with sights lines (a legend, then samples of known players and places), or None."""
    if not lines:
        return None
    legend = lines[0]
    players, places = legend.get(F.SIGHT_PLAYERS), legend.get(F.SIGHT_PLACE_NAMES)
    if not isinstance(players, list) or not isinstance(places, list):
        return f"line 1: the legend lacks its '{F.SIGHT_PLAYERS}' and '{F.SIGHT_PLACE_NAMES}' lists"
    np_, nq = len(players), len(places)

    def index(v: Any, n: int, none_ok: bool = False) -> bool:
        return (v is None and none_ok) or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n)

    last = -1
    for n, line in enumerate(lines[1:], 2):
        t = line.get(F.SIGHT_TICK) if isinstance(line, dict) else None
        if not isinstance(t, int) or isinstance(t, bool) or t < last:
            return f"line {n}: no tick '{F.SIGHT_TICK}' (a whole number, never going back)"
        last = t
        for key in (F.SIGHT_PLACES, F.SIGHT_GAINED, F.SIGHT_LOST):
            for pair in line.get(key, []):
                if not (isinstance(pair, list) and len(pair) == 2 and index(pair[0], np_) and
                        index(pair[1], nq if key == F.SIGHT_PLACES else np_, key == F.SIGHT_PLACES)):
                    return f"line {n}: '{key}' holds {pair!r}, not a pair of indices of the legend"
    return None


def overlap(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The intersection of two sorted lists of disjoint intervals."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(ivs: Iterable[Interval], t0: int, t1: int) -> list[Interval]:
    """The parts of ``ivs`` inside the closed window [t0, t1] (as the half-open [t0, t1 + 1): an instant
    counts)."""
    out = []
    t1 += 1
    for a, b in ivs:
        lo, hi = max(a, t0), min(b, t1)
        if lo < hi:
            out.append((lo, hi))
    return out


def length(ivs: Iterable[Interval]) -> int:
    return sum(b - a for a, b in ivs)


class Timeline:
    """Places and views of one match, from its sights lines (``end_tick``: until when the last state
    holds)."""

    def __init__(self, lines: list[dict[str, Any]], end_tick: int):
        if not lines:
            raise MauError("sights.jsonl is empty or missing: this match cannot be checked (it was played "
                           "before sights were recorded)")
        legend = lines[0]
        self.players: list[str] = list(legend[F.SIGHT_PLAYERS])
        self.places: list[str] = list(legend[F.SIGHT_PLACE_NAMES])
        last = lines[-1].get(F.SIGHT_TICK, 0) if len(lines) > 1 else 0
        self.end = max(end_tick, last) + 1
        self.at: dict[str, dict[str, list[Interval]]] = defaultdict(lambda: defaultdict(list))
        self.views: dict[tuple[str, str], list[Interval]] = defaultdict(list)
        self.active: dict[str, list[Interval]] = defaultdict(list)
        where: dict[str, tuple[str | None, int]] = {}
        seen: dict[tuple[str, str], int] = {}
        for line in lines[1:]:
            t = line[F.SIGHT_TICK]
            # After a meeting the clock stood still: the tick of the call is the world before it (what was
            # said there is about that world); the table after it starts one tick later.
            until = t + 1 if line.get(F.SIGHT_AFTER_MEETING) else t
            for i, place in line.get(F.SIGHT_PLACES, []):
                name = self.players[i]
                self._close_place(name, where.get(name), until)
                where[name] = (None if place is None else self.places[place], until)
            for v, s in line.get(F.SIGHT_LOST, []):
                pair = (self.players[v], self.players[s])
                start = seen.pop(pair, None)
                if start is not None:
                    self.views[pair].append((start, max(until, start + 1)))
            for v, s in line.get(F.SIGHT_GAINED, []):
                seen.setdefault((self.players[v], self.players[s]), until)
        for name, w in where.items():
            self._close_place(name, w, self.end)
        for pair, start in seen.items():
            self.views[pair].append((start, self.end))

    def _close_place(self, name: str, w: tuple[str | None, int] | None, t: int) -> None:
        """A place held from its sample until ``t``; two samples at one tick (a meeting stops the clock: where
        a player stood when it was called, then the table) keep the first as an instant."""
        if w is None:
            return
        place, start = w
        if place is not None:
            iv = (start, max(t, start + 1))
            self.at[name][place].append(iv)
            self.active[name].append(iv)

    # -- questions -------------------------------------------------------------------------------------------
    def in_place(self, name: str, place: str, t0: int, t1: int) -> list[Interval]:
        """When ``name`` was in ``place`` within [t0, t1]."""
        return clip(self.at.get(name, {}).get(place, []), t0, t1)

    def presence(self, name: str, place: str, t0: int, t1: int) -> float:
        """The share of [t0, t1] that ``name`` spent in ``place`` (an instant: 1 or 0)."""
        return length(self.in_place(name, place, t0, t1)) / (t1 + 1 - t0)

    def was_active(self, name: str, t0: int, t1: int) -> bool:
        return bool(clip(self.active.get(name, []), t0, t1))

    def places_during(self, name: str, t0: int, t1: int) -> dict[str, int]:
        """{place: ticks} of ``name`` within [t0, t1], most first."""
        out = {p: length(clip(ivs, t0, t1)) for p, ivs in self.at.get(name, {}).items()}
        return dict(sorted(((p, n) for p, n in out.items() if n > 0), key=lambda kv: (-kv[1], kv[0])))

    def in_view(self, viewer: str, seen: str, t0: int, t1: int) -> list[Interval]:
        """When ``viewer`` had ``seen`` in view within [t0, t1]."""
        return clip(self.views.get((viewer, seen), []), t0, t1)
