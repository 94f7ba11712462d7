"""Model backends. A backend is a module in this package defining ``Backend`` (a ``ModelBackend``);
adding one = adding a file here. ``make_backend(cfg)`` builds the one a seat's ModelConfig names."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from mau.errors import ConfigError
from mau.harness.backends.base import ModelBackend, ModelConfig


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name != "base")


def make_backend(config: ModelConfig) -> ModelBackend:
    if config.backend not in available():
        raise ConfigError(f"model.backend: {config.backend!r} is unknown; use one of {available()}")
    return importlib.import_module(f"{__name__}.{config.backend}").Backend(config)
