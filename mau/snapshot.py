"""Snapshots of a match between two steps, made by the owners of the state and composed in one pickle.

Each owner (the world, the ARIA match, an agent, a backend) says what of it changes with ``parts()`` and takes
it back with ``restore_parts()``; ``snapshot()`` / ``restore()`` are those two around one pickle. Composing
owners (a match holds its world and agents; a replay session holds a match and its backends) nests their parts
under keys, so the whole snapshot is still one pickle and objects shared between owners stay shared.

Three kinds of objects, so that a restore costs about as much as the changing state and not the whole history:
- ``changing``: copied by the pickle (game state, running actions, memories, counters);
- ``shared``: objects that never change during a match (maps, configs, prompt builders, backends, the owners
  themselves), kept by reference;
- ``logs``: append-only lists (events, call records, memory dumps, tracks) whose items are never mutated once
  written, kept as tuples of their items and given back as fresh lists.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Parts:
    """What an owner contributes to a snapshot."""

    changing: dict[str, Any] = field(default_factory=dict)
    shared: list[Any] = field(default_factory=list)
    logs: dict[str, list[Any]] = field(default_factory=dict)

    def nest(self, key: str, other: "Parts") -> "Parts":
        """Add another owner's parts under ``key``; returns self."""
        self.changing[key] = other.changing
        self.shared += other.shared
        self.logs.update({f"{key}.{k}": v for k, v in other.logs.items()})
        return self


@dataclass
class Restored:
    """A snapshot taken back: the changing state (fresh objects) and the logs (fresh lists, the same ones the
    changing state refers to)."""

    changing: dict[str, Any]
    logs: dict[str, list[Any]]

    def part(self, key: str) -> "Restored":
        """What was nested under ``key``."""
        n = len(key) + 1
        return Restored(
            self.changing[key], {k[n:]: v for k, v in self.logs.items() if k.startswith(f"{key}.")}
        )


@dataclass(frozen=True)
class Snapshot:
    blob: bytes
    shared: tuple[Any, ...]
    logs: dict[str, tuple[Any, ...]]


class _Pickler(pickle.Pickler):
    def __init__(self, f: io.BytesIO, pins: dict[int, Any]):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.pins = pins

    def persistent_id(self, obj: Any) -> Any:
        return self.pins.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, f: io.BytesIO, loads: dict[Any, Any]):
        super().__init__(f)
        self.loads = loads

    def persistent_load(self, pid: Any) -> Any:
        return self.loads[pid]


def freeze(parts: Parts) -> Snapshot:
    """One pickle of ``parts.changing``, with the shared objects and the logs pinned (not copied)."""
    shared = [x for x in parts.shared if x is not None]
    pins: dict[int, Any] = {id(x): k for k, x in enumerate(shared)}
    # the lists grow: they come back as copies
    pins.update({id(v): ("log", k) for k, v in parts.logs.items()})
    buf = io.BytesIO()
    _Pickler(buf, pins).dump(parts.changing)
    return Snapshot(buf.getvalue(), tuple(shared), {k: tuple(v) for k, v in parts.logs.items()})


def thaw(snap: Snapshot) -> Restored:
    """A snapshot's changing state as fresh objects (shared ones by reference, each log as a fresh list)."""
    logs = {k: list(v) for k, v in snap.logs.items()}
    loads: dict[Any, Any] = dict(enumerate(snap.shared))
    loads.update({("log", k): v for k, v in logs.items()})
    return Restored(_Unpickler(io.BytesIO(snap.blob), loads).load(), logs)
