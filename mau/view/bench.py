"""``mau bench view``: the viewer's speed figures. (1) Site build of a full 200-step ARIA match (scripted
expert, every call's frames saved; median of 3 builds). (2) Page load to interactive in headless Chromium
(``body[data-ready]``, median of 5 loads, browser start excluded), when Playwright and chromium are installed;
the browser runs on every core (the bench itself is pinned to one). The machine's load average is reported.
(3) Run builds of ``matches`` and ``matches / 10`` short ARIA matches (hard-linked copies), each in a fresh
subprocess: seconds and peak RSS, and their ratio (flat memory: ~1)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_RUN_CHILD = """
import json, resource, sys, time
from pathlib import Path
from mau.view.build import build
t0 = time.perf_counter()
r = build(Path(sys.argv[1]), Path(sys.argv[2]))
print(json.dumps({"matches": r["matches"], "build_s": time.perf_counter() - t0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _play(out: Path, seed: int, over: dict[str, Any]) -> None:
    from mau.config import load_config
    from mau.runner import PlayConfig, play_one

    cfg = load_config(PlayConfig, "configs/play/aria_scripted.yaml", {"seed": seed, "out": str(out), **over})
    play_one(cfg, out)


def _run_folder(src: Path, run: Path, n: int) -> None:
    """A collect-format run of ``n`` hard-linked copies of match ``src`` (own ids in header and grid)."""
    from mau import schema as F

    (run / F.MATCHES_DIR).mkdir(parents=True)
    (run / F.RUN_HEADER).write_text(
        json.dumps({F.FORMAT: F.RUN_FORMAT, F.FORMAT_VERSION: F.RUN_FORMAT_VERSION, "planned_matches": n})
    )
    header = json.loads((src / F.MATCH_HEADER).read_text())
    with open(run / F.GRID_FILE, "w") as grid:
        for k in range(n):
            mid = f"{k:05d}_bench_I-scripted_C-scripted_r{k}"
            d = run / F.MATCHES_DIR / mid
            shutil.copytree(src, d, copy_function=os.link)
            g = {
                "index": k, F.MATCH_ID: mid, F.SEED: k, F.CASE: "bench", F.IMPOSTER_MODEL: "scripted",
                F.CREWMATE_MODEL: "scripted", F.REP: k,
            }
            (d / F.MATCH_HEADER).unlink()
            (d / F.MATCH_HEADER).write_text(json.dumps({**header, F.MATCH_ID: mid, F.GRID: g}))
            grid.write(json.dumps(g) + "\n")


def page_ready_s(url: str, loads: int = 5) -> dict[str, float] | None:
    """Medians over ``loads`` fresh pages: ``page_ready_s``, the page's own time from navigation start to
    interactive (``performance.now()`` when ``body[data-ready]`` is set), and ``driver_s``, the wall time the
    driver saw from ``goto`` to the ready marker. None without chromium or Playwright."""
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if chromium is None:
        return None
    inner: list[float] = []
    outer: list[float] = []
    pinned = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if pinned is not None:  # `mau bench` pins itself to one core; a browser gets the cores a browser has
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, range(os.cpu_count() or 1))
    try:
        return _loads(sync_playwright, chromium, url, loads, inner, outer)
    finally:
        if pinned is not None:
            os.sched_setaffinity(0, pinned)


def _loads(sync_playwright, chromium: str, url: str, loads: int, inner: list[float], outer: list[float]):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS)
        for _ in range(loads):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(url, wait_until="commit")
            page.wait_for_selector("body[data-ready='1']")
            outer.append(time.perf_counter() - t0)
            inner.append(float(page.get_attribute("body", "data-ready-ms")) / 1000)
            page.close()
        browser.close()
    return {
        "page_ready_s": round(statistics.median(inner), 3), "driver_s": round(statistics.median(outer), 3),
    }


BROWSER_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-extensions",
    "--disable-dev-shm-usage", "--no-first-run",
]


def bench_view(matches: int = 1000, seed: int = 3) -> dict[str, Any]:
    from mau.view.build import build

    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-view-", dir="runs"))
    out: dict[str, Any] = {"bench": "view"}
    try:
        full = tmp / "full"
        _play(
            full, seed,
            {"world": {"game": {"kill_cooldown_initial_ticks": 10**9, "mission_hold_ticks": 10**9}}},
        )
        h = json.loads((full / "match.json").read_text())
        builds = []
        for k in range(3):
            t0 = time.perf_counter()
            build(full, tmp / f"site{k}")
            builds.append(time.perf_counter() - t0)
        out["match"] = {
            "steps": h["steps"], "calls": h["calls"]["calls"], "frames": h.get("frames_saved", h["n_frames"]),
            "build_s": round(statistics.median(builds), 3),
        }
        out["match"].update(
            page_ready_s((tmp / "site0" / "index.html").resolve().as_uri() + "#step=100") or {}
        )
        short = tmp / "short"
        _play(short, seed, {"world": {"game": {"max_steps": 30}}})
        runs = {}
        for n in (max(matches // 10, 1), matches):
            run = tmp / f"run{n}"
            _run_folder(short, run, n)
            r = subprocess.run(
                [sys.executable, "-c", _RUN_CHILD, str(run), str(tmp / f"runsite{n}")], capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                raise RuntimeError(f"run build of {n} matches failed: {r.stderr.strip().splitlines()[-1:]}")
            b = json.loads(r.stdout.strip().splitlines()[-1])
            runs[str(n)] = {
                "build_s": round(b["build_s"], 2), "peak_rss_mb": round(b["peak_rss_mb"], 1),
                "matches_per_second": round(n / b["build_s"], 1),
            }
            if n == matches:
                runs[str(n)].update(
                    page_ready_s((tmp / f"runsite{n}" / "index.html").resolve().as_uri(), 3) or {}
                )
            shutil.rmtree(run)
            shutil.rmtree(tmp / f"runsite{n}")
        small, large = runs[str(max(matches // 10, 1))], runs[str(matches)]
        out["run"] = {**runs, "peak_rss_ratio": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3)}
        return {**out, "cores": 1, "loadavg_1m": round(os.getloadavg()[0], 2)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
