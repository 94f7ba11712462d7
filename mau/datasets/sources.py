"""Reading the inputs of a dataset build: finding match folders, and streaming their logs line by line.

A damaged line (truncated by a crash, corrupt bytes, not a call record) never stops a build and is never
dropped silently: it becomes a ``Problem`` (file, line, what is wrong) that the build counts and reports.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from mau import schema as F
from mau.errors import MauError
from mau.matchdir import iter_events, read_header
from mau.schema import CREW_OUTCOMES, IMPOSTER

# Fields a calls.jsonl line needs to be used as a call record (docs/formats.md).
REQUIRED_CALL_FIELDS = (F.CALL_ID, F.ROLE, F.AGENT, F.MODULE, F.TICK, F.MESSAGES, F.RAW_OUTPUT, F.FALLBACK)


@dataclass(frozen=True)
class Problem:
    """One damaged input, reported with its file and line (line 0: the whole file)."""

    kind: str  # corrupt_line, missing_image, missing_file
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.what}"


@dataclass
class MatchInfo:
    """What a build needs to know about one match (the header's facts and the event log's reveals)."""

    path: Path
    match_id: str
    run: str
    header: dict[str, Any]
    roles: dict[str, str]
    outcome: str
    ejections: list[tuple[int, str]] = field(default_factory=list)  # (tick, ejected player), in order
    utterances: list[tuple[str, str]] = field(default_factory=list)  # (speaker, text)
    kills: list[tuple[int, str, str]] = field(default_factory=list)  # (tick, killer, victim), in order

    @property
    def crew_won(self) -> bool:
        return self.outcome in CREW_OUTCOMES

    @property
    def imposters(self) -> set[str]:
        return {n for n, r in self.roles.items() if r == IMPOSTER}

    def revealed_at(self, tick: int) -> set[str]:
        """Players whose role an ejection has revealed by ``tick`` (ejections with tick <= ``tick``)."""
        return {name for t, name in self.ejections if t <= tick}


def run_of(match_dir: Path) -> str:
    """The run a match belongs to: ``<run>`` for ``<run>/matches/<id>/``, else the folder that holds it."""
    if match_dir.parent.name == F.MATCHES_DIR:
        return str(match_dir.parent.parent)
    return str(match_dir.parent)


def find_matches(paths: list[str | Path]) -> list[tuple[Path, str]]:
    """Every match folder (one holding ``match.json``) under ``paths``, recursively, sorted by path, each
    once, with the run it belongs to. Hidden folders (staging folders ``.<name>.partial-*``) are skipped."""
    found: dict[Path, tuple[Path, str]] = {}
    for given in map(Path, paths):
        if not given.is_dir():
            raise MauError(f"--runs {given}: no such folder; give a collect run, a match folder or a folder "
                           f"of them")
        n = 0
        for root, dirs, files in os.walk(given):
            if F.MATCH_HEADER in files:
                d = Path(root)
                found.setdefault(d.resolve(), (d, run_of(d)))
                n += 1
                dirs[:] = []  # a match folder holds no further matches
                continue
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        if n == 0:
            raise MauError(f"--runs {given}: holds no match folder (no {F.MATCH_HEADER} below it); "
                           "give a collect run or match folders written by mau play / mau collect")
    return sorted(found.values(), key=lambda t: str(t[0]))


def iter_jsonl(path: Path, problems: Callable[[Problem], None]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each good line of a JSONL file; each bad one goes to ``problems``.

    Read as bytes, so that invalid UTF-8 is a reported line, not a crash. A last line without its newline that
    does not parse is reported as truncated (a crash while it was being written)."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                obj = json.loads(raw)
            except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
                if not raw.endswith(b"\n"):
                    what = f"truncated last line ({len(raw)} bytes, no newline; the writer stopped mid-line)"
                elif not raw.strip():
                    what = "empty line"
                else:
                    what = f"corrupt line ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
                problems(Problem("corrupt_line", str(path), n, what))
                continue
            if not isinstance(obj, dict):
                problems(Problem("corrupt_line", str(path), n, f"not a JSON object ({type(obj).__name__})"))
                continue
            yield n, obj


def iter_calls(match: MatchInfo, problems: Callable[[Problem], None]) -> Iterator[dict[str, Any]]:
    """The call records of a match, streamed; lines that are not call records are reported."""
    path = match.path / F.CALLS_FILE
    if not path.is_file():
        return
    for n, rec in iter_jsonl(path, problems):
        what = _not_a_call(rec)
        if what:
            problems(Problem("corrupt_line", str(path), n, f"not a call record ({what})"))
            continue
        yield rec


def _not_a_call(rec: dict[str, Any]) -> str | None:
    """What makes this object unusable as a call record, or None."""
    missing = [k for k in REQUIRED_CALL_FIELDS if k not in rec]
    if missing:
        return f"missing field {missing[0]!r}"
    if not isinstance(rec[F.TICK], int) or isinstance(rec[F.TICK], bool):
        return f"{F.TICK!r} is not an integer"
    if rec[F.RAW_OUTPUT] is not None and not isinstance(rec[F.RAW_OUTPUT], str):
        return f"{F.RAW_OUTPUT!r} is not text"
    msgs = rec[F.MESSAGES]
    if not isinstance(msgs, list) or not all(
            isinstance(m, dict) and (isinstance(m.get(F.DS_CONTENT), str) or (
                isinstance(m.get(F.DS_CONTENT), list) and all(isinstance(p, dict) for p in m[F.DS_CONTENT])))
            for m in msgs):
        return f"{F.MESSAGES!r} is not a list of messages with text or a list of parts"
    return None


def match_id_of(match_dir: Path, header: dict[str, Any]) -> str:
    return str(header.get(F.MATCH_ID) or match_dir.name)


def load_match(match_dir: Path, run: str, problems: Callable[[Problem], None]) -> MatchInfo:
    """The header (checked: an unknown format version is an error) and the reveals of the event log."""
    header = read_header(match_dir)
    roles = header.get(F.ROLES)
    if not isinstance(roles, dict) or not roles:
        raise MauError(f"{match_dir / F.MATCH_HEADER}: no {F.ROLES!r} mapping; the header is damaged, play "
                       f"the match again")
    info = MatchInfo(path=match_dir, match_id=match_id_of(match_dir, header), run=run, header=header,
                     roles={str(k): str(v) for k, v in roles.items()}, outcome=str(header.get(F.OUTCOME)))
    # The log tells when each role became public: a missing, cut or damaged one is refused by name (read as
    # it is, a revealed role would look like a leak, or the build would silently count fewer reveals).
    for e in iter_events(match_dir):
        if e.get(F.TYPE) == F.EV_EJECTION and e.get(F.EJECTED):
            info.ejections.append((int(e.get(F.TICK, 0)), str(e[F.EJECTED])))
        elif e.get(F.TYPE) == F.EV_KILL and e.get(F.KILLER) and e.get(F.VICTIM):
            info.kills.append((int(e.get(F.TICK, 0)), str(e[F.KILLER]), str(e[F.VICTIM])))
        elif e.get(F.TYPE) == F.EV_UTTERANCE and isinstance(e.get(F.UTTERANCE_TEXT), str):
            info.utterances.append((str(e.get(F.SPEAKER)), e[F.UTTERANCE_TEXT]))
    return info
