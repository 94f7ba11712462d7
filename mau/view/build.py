"""The viewer's site builder: a match folder, a collect run or an eval run -> one self-contained static site
(``mau view``; the pages: docs/viewer.md). It only reads the folders."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from mau import schema as F
from mau.errors import ConfigError
from mau.view.match import build_match
from mau.view.run import build_run, is_run_dir
from mau.view.site import copy_assets

MARKER = ".mau-view"  # a folder with it was written by mau view and may be rebuilt in place


def _prepare_out(out: Path) -> None:
    """Rebuild our own site in place; never write into a folder mau view did not make."""
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists()):
            raise ConfigError(f"--out {out}: exists and was not written by mau view; choose a new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by mau view; rebuilt in place by the next mau view into it\n")


def build(path: Path, out: Path) -> dict:
    """Build the site of ``path`` into ``out``; return what was built (kind, counts, seconds)."""
    t0 = time.perf_counter()
    if (path / F.MATCH_HEADER).is_file() or (path / F.EVENTS_FILE).is_file():
        _prepare_out(out)
        copy_assets(out)
        row = build_match(path, out)
        res = {"kind": "match", "problems": row["problems"]}
    elif is_run_dir(path):
        _prepare_out(out)
        res = {"kind": "run", **build_run(path, out)}
    else:
        raise ConfigError(
            f"{path}: neither a match folder ({F.MATCH_HEADER}) nor a run folder ({F.RUN_HEADER}, "
            f"{F.MATCHES_DIR}/); give one of those"
        )
    return {**res, "site": str(out / "index.html"), "seconds": round(time.perf_counter() - t0, 3)}
