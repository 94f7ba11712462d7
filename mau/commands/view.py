"""mau view runs/play/seed1 --out runs/view/seed1

Watch a match, a collect run or an eval run in a browser: writes a self-contained static site (one index.html,
the viewer's JS and CSS, the data as script files and the frames it shows; no network at view time) and
prints its path. ``--serve`` serves it on loopback (a free port unless ``--port``); ``--video`` writes an MP4 of a
match's top-down map with captions instead. The pages and what they show: docs/viewer.md.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from pydantic import Field

from mau.commands.common import Flag
from mau.config import Model
from mau.errors import ConfigError
from mau.options import RunOptions

MARKER = ".mau-view"  # a folder with it was written by mau view and may be rebuilt in place


class ViewConfig(Model):
    """``mau view``: one site per match or run folder."""

    path: str = Field(description="A match folder, a collect run or an eval run.")
    out: str | None = Field(None, description="Site folder (or MP4 file with --video); default runs/view/<name>.")
    serve: bool = Field(False, description="Serve the site on 127.0.0.1 after building it (Ctrl-C stops).")
    port: int = Field(0, ge=0, le=65535, description="--serve: the port; 0 picks a free one.")
    video: bool = Field(False, description="Write an MP4 of the match's top-down map with captions instead.")
    fps: int = Field(6, ge=1, le=60, description="--video: frames per second (one frame per position line).")


FLAGS = [
    Flag("path", "match folder, collect run or eval run", key="path"),
    Flag("--out", "site folder (default runs/view/<name>); with --video the MP4 file", key="out"),
    Flag("--serve", "serve the site on loopback after building it", key="serve", type=bool),
    Flag("--port", "--serve: port (default: a free one)", key="port", type=int),
    Flag("--video", "write an MP4 of a match's top-down map instead", key="video", type=bool),
    Flag("--fps", "--video: frames per second (default 6)", key="fps", type=int),
]
CONFIG = "mau.commands.view:ViewConfig"  # no YAML: the flags are the whole config


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
    from mau import schema as F
    from mau.view.match import build_match
    from mau.view.run import build_run, is_run_dir
    from mau.view.site import copy_assets

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


def main(cfg: ViewConfig, opts: RunOptions = RunOptions()) -> int:
    path = Path(cfg.path)
    if not path.is_dir():
        raise ConfigError(f"{path}: no such folder; give a match folder, a collect run or an eval run")
    if cfg.video:
        from mau.view.video import make_video

        out = Path(cfg.out or Path("runs") / "view" / f"{path.name}.mp4")
        print(json.dumps(make_video(path, out, cfg.fps)))
        return 0
    out = Path(cfg.out or Path("runs") / "view" / path.name)
    res = build(path, out)
    print(json.dumps(res))
    if cfg.serve:
        from mau.view.serve import SiteServer

        with SiteServer(out, cfg.port) as srv:
            print(f"serving {out} at {srv.url} (Ctrl-C stops)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    return 0
