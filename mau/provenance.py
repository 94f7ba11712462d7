"""Provenance of a run: git commit and dirty flag, package versions, Python, platform, command line.

Nothing from the environment is recorded (API keys live there).
"""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "mau", "numpy", "pydantic", "pyyaml", "pillow", "pettingzoo", "torch", "torchvision", "transformers",
    "peft", "trl", "datasets", "accelerate", "openai",
)


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def provenance() -> dict[str, Any]:
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "git_commit": commit,
        "git_dirty": bool(status) if status is not None else None, "python": sys.version.split()[0],
        "platform": platform.platform(), "argv": list(sys.argv), "packages": package_versions(),
    }
