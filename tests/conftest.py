"""Shared fixtures: a fresh sim world and helpers to build game scenarios by hand."""

from __future__ import annotations

import math
import os
import signal

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One OpenMP thread per process (this one and every subprocess): the suite's models are small and several of
# its tests run processes side by side; on a 2-core machine shared with other work, two spinning OpenMP
# threads per process made torch tests ~3x slower (tests/test_rl.py's GRPO run: 23 s with one thread, 66 s
# with two, at load ~4.5). Set before torch is imported; an explicit OMP_NUM_THREADS wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# A suite started in the background by a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and so would every process it starts: the Ctrl-C tests would meet children that cannot be
# interrupted. Ctrl-C is restored to Python's default here, so children start with it.
signal.signal(signal.SIGINT, signal.default_int_handler)

from mau.env.config import GameConfig, WorldConfig  # noqa: E402
from mau.env.sim import SimWorld  # noqa: E402
from mau.env.state import CREWMATE, IMPOSTER  # noqa: E402


def make_world(**game: object) -> SimWorld:
    return SimWorld(WorldConfig(game=GameConfig(**game)))


@pytest.fixture
def world() -> SimWorld:
    w = make_world(roles="paper")  # James and Olivia are the imposters
    w.reset(0)
    return w


def place(world: SimWorld, name: str, x: float, z: float, yaw_deg: float | None = None) -> None:
    p = world.state.player(name)
    p.x, p.z = x, z
    if yaw_deg is not None:
        p.yaw = math.radians(yaw_deg)


def park_everyone(world: SimWorld) -> None:
    """Move every player far apart in Cafeteria corners so that nobody is near anybody by accident."""
    spots = [
        (78.5, 65.5), (96.5, 65.5), (78.5, 86.5), (96.5, 86.5), (80.5, 75.5), (94.5, 75.5), (87.5, 66.5),
        (87.5, 85.5),
    ]
    for p, (x, z) in zip(world.state.players, spots):
        p.x, p.z = x, z


def roles(world: SimWorld) -> dict[str, str]:
    return {p.name: p.role for p in world.state.players}


def events_of(world: SimWorld, kind: str) -> list[dict]:
    return [e for e in world.state.events if e["type"] == kind]


__all__ = ["make_world", "place", "park_everyone", "roles", "events_of", "CREWMATE", "IMPOSTER"]

