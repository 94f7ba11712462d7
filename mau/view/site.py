"""What every viewer page shares: the vendored-free assets, data written as JS (``file://`` pages cannot fetch
JSON, but they can load a script), the HTML shell, and reading JSON lines that may be damaged."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

STATIC = Path(__file__).parent / "static"
ASSETS = ("viewer.js", "viewer.css")
ASSETS_DIR = "assets"


def copy_assets(out: Path) -> None:
    (out / ASSETS_DIR).mkdir(parents=True, exist_ok=True)
    for name in ASSETS:
        shutil.copyfile(STATIC / name, out / ASSETS_DIR / name)


def js_dumps(obj: Any) -> str:
    """JSON that is safe inside a <script> file (no '</' that could end it)."""
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def write_data_js(path: Path, obj: Any, call: str = "MAU.data") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{call}({js_dumps(obj)});\n")


def write_html(path: Path, title: str, root: str, data_files: list[str]) -> None:
    """The page shell: the assets (under ``root``), the data scripts, then the viewer's start."""
    esc = title.replace("&", "&amp;").replace("<", "&lt;")
    scripts = "".join(f'<script src="{f}"></script>' for f in data_files)
    path.write_text(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{root}{ASSETS_DIR}/viewer.css"></head>'
        f'<body><div id="app">loading…</div><script src="{root}{ASSETS_DIR}/viewer.js"></script>{scripts}'
        f"<script>MAU.start();</script></body></html>\n"
    )


def link_or_copy(src: Path, dst: Path) -> None:
    """Frames are big and never change: a hard link costs nothing; copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def read_jsonl(path: Path, problems: list[str], what: str | None = None) -> Iterator[dict[str, Any]]:
    """The objects of a JSON-lines file; a damaged line is skipped and named in ``problems``."""
    what = what or path.name
    bad = 0
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        problems.append(f"{what}: cannot be read ({e.strerror})")
        return
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict):
                bad += 1
                if bad <= 5:
                    problems.append(f"{what} line {n}: damaged, skipped")
                continue
            yield obj
    if bad > 5:
        problems.append(f"{what}: {bad} damaged lines in all, skipped")
