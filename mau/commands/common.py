"""Arguments every config-driven verb shares: --config, --set, --resume."""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML config (its keys override the defaults; see docs/config.md)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key, e.g. --set world.game.max_steps=50 (repeatable)")


def dated_run_dir(kind: str, tag: str) -> str:
    """runs/<kind>/<date>/<time>_<tag>: self-describing default run folders."""
    now = _dt.datetime.now()
    return str(Path("runs") / kind / now.strftime("%Y-%m-%d") / f"{now.strftime('%H-%M-%S')}_{tag}")
