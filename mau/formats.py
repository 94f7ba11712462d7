"""Reading the versioned JSON header of a mau folder (match, dataset, ...): one place that refuses a file
that is missing, damaged, of another format, or of a version this mau does not read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError


def read_versioned_header(path: Path, *, fmt: str, version: int, what: str, missing: str, redo: str,
                          other_version: str) -> dict[str, Any]:
    """The header at ``path``, checked. ``what`` names the kind ("match", "dataset"); ``missing`` is the whole
    message when the file is absent; ``redo`` says how to remake a damaged folder; ``other_version`` what to
    do about a version this mau does not read."""
    if not path.is_file():
        raise MauError(missing)
    try:
        header = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise MauError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}); the folder is damaged, "
                       f"{redo}") from None
    if header.get(F.FORMAT) != fmt:
        raise MauError(f"{path}: format {header.get(F.FORMAT)!r} is not {fmt!r}; not a mau {what} folder")
    if header.get(F.FORMAT_VERSION) != version:
        raise MauError(f"{path}: {what} format version {header.get(F.FORMAT_VERSION)} is not the version "
                       f"this mau reads ({version}); {other_version}")
    return header
