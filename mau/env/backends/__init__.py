"""World backends. A backend is a module in this package that defines ``World`` (a class with the SimWorld
interface: reset, step, observe, render, snapshot, restore). Adding a backend = adding a file here."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from mau.errors import ConfigError


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]))


def get_world_class(name: str):
    if name not in available():
        raise ConfigError(f"world.backend: {name!r} is unknown; use one of {available()}")
    return importlib.import_module(f"{__name__}.{name}").World


def make_world(config):
    """Build the world that ``config.backend`` names (``config`` is a WorldConfig)."""
    return get_world_class(config.backend)(config)
