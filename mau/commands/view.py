"""mau view runs/play/seed1 --out runs/view/seed1

Watch a match, a collect run or an eval run in a browser: writes a self-contained static site (one index.html,
the viewer's JS and CSS, the data as script files and the frames it shows; no network at view time) and
prints its path. ``--serve`` serves it on loopback (a free port unless ``--port``); ``--video`` writes an MP4
of a match's top-down map with captions instead. The pages and what they show: docs/viewer.md.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import Field

from mau.commands.common import Flag
from mau.config import Model
from mau.errors import ConfigError
from mau.options import RunOptions


class ViewConfig(Model):
    """``mau view``: one site per match or run folder."""

    path: str = Field(description="A match folder, a collect run or an eval run.")
    out: str | None = Field(None, description="Site folder (or MP4 file with --video); default "
                                              "runs/view/<name>.")
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


def main(cfg: ViewConfig, opts: RunOptions = RunOptions()) -> int:
    path = Path(cfg.path)
    if not path.is_dir():
        raise ConfigError(f"{path}: no such folder; give a match folder, a collect run or an eval run")
    if cfg.video:
        from mau.view.video import make_video

        out = Path(cfg.out or Path("runs") / "view" / f"{path.name}.mp4")
        print(json.dumps(make_video(path, out, cfg.fps)))
        return 0
    from mau.view.build import build

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
