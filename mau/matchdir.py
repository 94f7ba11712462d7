"""The match folder (format ``mau.match`` version 1; see docs/formats.md).

    <match>/match.json      header: format, version, seed, roles, config, outcome, provenance
    <match>/events.jsonl    the ground-truth event log, one JSON event per line
    <match>/config.yaml     the resolved config of the run that played it
    <match>/frames/         first-person PNGs <step:04d>_<player>.png (and <step:04d>_topdown.png), when asked

A match folder is written atomically: everything goes to a hidden sibling folder first, which is renamed into
place at the end. After a crash the folder is complete or absent.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator

from mau import schema as F
from mau.errors import MauError
from mau.rundir import make_staging


class MatchWriter:
    """Collects a match's files in a staging folder and publishes it with one rename."""

    def __init__(self, final_dir: str | Path):
        self.final = Path(final_dir)
        self.staging = make_staging(self.final)  # with the user's umask (a team may share the runs)
        self.frames_dir = self.staging / F.FRAMES_DIR
        self.n_frames = 0

    def frame_path(self, name: str) -> Path:
        self.frames_dir.mkdir(exist_ok=True)
        self.n_frames += 1
        return self.frames_dir / name

    def write_text(self, name: str, text: str) -> None:
        (self.staging / name).write_text(text)

    def write_events(self, events: list[dict[str, Any]]) -> None:
        with open(self.staging / F.EVENTS_FILE, "w") as f:
            for e in events:
                f.write(json.dumps(e, separators=(",", ":")) + "\n")

    def publish(self, header: dict[str, Any]) -> Path:
        header = {F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: F.MATCH_FORMAT_VERSION, **header,
                  F.N_FRAMES: self.n_frames}
        # The header goes last: a staging folder without it is incomplete by construction.
        (self.staging / F.MATCH_HEADER).write_text(json.dumps(header, indent=1))
        if self.final.exists():
            shutil.rmtree(self.final)
        os.replace(self.staging, self.final)
        return self.final

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def is_match_dir(path: str | Path) -> bool:
    return (Path(path) / F.MATCH_HEADER).is_file()


def finished_matches(path: str | Path) -> list[Path]:
    """The finished match folders of a run folder (``matches/<id>/`` holding ``match.json``), sorted by name;
    ``[path]`` for a match folder itself; [] for anything else. Hidden folders (the staging folders of matches
    in flight, ``.<id>.partial-*``) are not matches. Every reader of a run lists its matches here."""
    path = Path(path)
    if is_match_dir(path):
        return [path]
    base = path / F.MATCHES_DIR
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if not p.name.startswith(".") and is_match_dir(p))


def read_header(path: str | Path) -> dict[str, Any]:
    """Read and check a match header; refuse a format or version this mau does not know."""
    from mau.formats import read_versioned_header

    return read_versioned_header(
        Path(path) / F.MATCH_HEADER, fmt=F.MATCH_FORMAT, version=F.MATCH_FORMAT_VERSION, what="match",
        missing=f"{path}: no {F.MATCH_HEADER}; not a match folder (or an unfinished one)", redo="play it "
                                                                                                "again",
        other_version="install the mau version that wrote it (see docs/formats.md)")


RESTORE = "restore it from where the run was written, or play the match again"


def event_problem(e: Any) -> str | None:
    """Why a line of ``events.jsonl`` is no event the world could have written, or None: an object with a
    type and a tick; an utterance's text a string, its claims, gold claims and labels lists."""
    if not isinstance(e, dict):
        return f"not an event (a JSON {type(e).__name__}, not an object)"
    tick = e.get(F.TICK)
    if not isinstance(e.get(F.TYPE), str) or not isinstance(tick, int) or isinstance(tick, bool):
        return f"an event without its {F.TYPE!r} (a name) or its {F.TICK!r} (a number)"
    if e[F.TYPE] == F.EV_UTTERANCE:
        if not isinstance(e.get(F.UTTERANCE_TEXT), str) or not isinstance(e.get(F.SPEAKER), str):
            return f"an utterance whose {F.UTTERANCE_TEXT!r} or {F.SPEAKER!r} is not a string"
        for key in (F.CLAIMS, F.CLAIMS_GOLD, F.CLAIM_INTENT):
            if e.get(key) is not None and not isinstance(e[key], list):
                return f"an utterance whose {key!r} is not a list"
    return None


def iter_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the event log of a match folder, checked: the file is there, every line is an event
    (``event_problem``), and it holds as many events as ``match.json`` records (``n_events``; a log cut at a
    line boundary or emptied is refused, never read as a shorter match). A damaged log is a one-line
    ``MauError`` naming the file and the fix."""
    header = read_header(path)
    file = Path(path) / F.EVENTS_FILE
    if not file.is_file():
        raise MauError(f"{file}: missing; the match folder is incomplete: {RESTORE}")
    n = 0
    with open(file) as f:
        for n, line in enumerate(f, 1):
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                raise MauError(f"{file}:{n}: not valid JSON; the log is damaged: {RESTORE}") from None
            why = event_problem(e)
            if why is not None:
                raise MauError(f"{file}:{n}: {why}; the log is damaged: {RESTORE}")
            yield e
    want = header.get(F.N_EVENTS)
    if isinstance(want, int) and n != want:
        raise MauError(f"{file}: {n} events, but {F.MATCH_HEADER} records {want} ({F.N_EVENTS}): the log is "
                       f"cut or damaged: {RESTORE}")


# Each side's count of its votes that name an imposter: for the crew a hit, for an imposter its partner.
_ON_IMPOSTER = {"crew": "crew_votes_on_imposters", "imposter": "imposter_votes_on_partner"}


def count_events(path: str | Path, events: Iterable[dict[str, Any]] | None = None) -> dict[str, int]:
    """What a match's event log counts (the eval's vote metrics, the collect summary): ejections (of
    somebody), imposters ejected, kills, missions completed, meetings, and each side's votes: cast (a vote
    missing at the count is none), skips, and those naming an imposter (for the imposters: the partner).
    Roles from the header; ``events``: the log already read (else it is read here)."""
    roles = read_header(path)[F.ROLES]
    c = dict.fromkeys(("ejections", "imposters_ejected", "kills", "missions", "meetings", "crew_votes",
                       "crew_skips", "crew_votes_on_imposters", "imposter_votes", "imposter_skips",
                       "imposter_votes_on_partner"), 0)
    for e in iter_events(path) if events is None else events:
        t = e[F.TYPE]
        if t == F.EV_VOTE and not e.get("missing"):
            side = "imposter" if roles.get(e["voter"]) == F.IMPOSTER else "crew"
            c[f"{side}_votes"] += 1
            c[f"{side}_skips"] += e["target"] == F.SKIP
            c[_ON_IMPOSTER[side]] += roles.get(e["target"]) == F.IMPOSTER
        elif t == F.EV_MEETING_START:
            c["meetings"] += 1
        elif t == F.EV_EJECTION and e.get(F.EJECTED):
            c["ejections"] += 1
            c["imposters_ejected"] += roles.get(e[F.EJECTED]) == F.IMPOSTER
        elif t == F.EV_KILL:
            c["kills"] += 1
        elif t == F.EV_MISSION_COMPLETE:
            c["missions"] += 1
    return c
