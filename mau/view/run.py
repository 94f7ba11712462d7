"""A collect or eval run folder -> a run page (summary or results with intervals, every match with its
outcome, pairing and seed, filterable) and one match page per match. Streaming: each match page is written and
forgotten, and its row goes straight to ``run.js``, so memory stays flat however many matches the run
holds."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Callable

from mau import schema as F
from mau.view.match import build_match
from mau.view.site import copy_assets, js_dumps, read_jsonl, write_html

RUN_FORMATS = (F.RUN_FORMAT, F.EVAL_FORMAT)


def is_run_dir(path: Path) -> bool:
    return (path / F.RUN_HEADER).is_file() or (path / F.MATCHES_DIR).is_dir()


def _run_header(run: Path, problems: list[str]) -> dict[str, Any]:
    try:
        h = json.loads((run / F.RUN_HEADER).read_text())
    except FileNotFoundError:
        problems.append(f"{F.RUN_HEADER} is missing: an unfinished or hand-made run folder")
        return {}
    except (json.JSONDecodeError, OSError) as e:
        problems.append(f"{F.RUN_HEADER}: damaged ({e}); shown without it")
        return {}
    if h.get(F.FORMAT) not in RUN_FORMATS:
        problems.append(f"{F.RUN_HEADER}: format {h.get(F.FORMAT)!r} is not one of {RUN_FORMATS}")
    return h


def _summary(run: Path, problems: list[str]) -> tuple[dict[str, Any] | None, list[dict[str, str]] | None]:
    summary = results = None
    if (run / F.SUMMARY_JSON).is_file():
        try:
            summary = json.loads((run / F.SUMMARY_JSON).read_text())
        except (json.JSONDecodeError, OSError) as e:
            problems.append(f"{F.SUMMARY_JSON}: damaged ({e})")
    if (run / F.RESULTS_CSV).is_file():
        with open(run / F.RESULTS_CSV, newline="") as f:
            results = list(csv.DictReader(f))
    return summary, results


def _match_folders(run: Path, problems: list[str]):
    """(match id, folder or None, grid line): the grid's order first, then folders the grid does not name."""
    matches = run / F.MATCHES_DIR
    seen: set[str] = set()
    if (run / F.GRID_FILE).is_file():
        for g in read_jsonl(run / F.GRID_FILE, problems):
            mid = str(g.get(F.MATCH_ID))
            seen.add(mid)
            folder = matches / mid
            yield mid, folder if (folder / F.MATCH_HEADER).is_file() or folder.is_dir() else None, g
    if matches.is_dir():
        for e in sorted(os.scandir(matches), key=lambda e: e.name):
            if e.is_dir() and not e.name.startswith(".") and e.name not in seen:
                yield e.name, Path(e.path), {}


def build_run(run: Path, out: Path, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write the run page and every match page into ``out``; return counts."""
    problems: list[str] = []
    header = _run_header(run, problems)
    summary, results = _summary(run, problems)
    copy_assets(out)
    (out / F.MATCHES_DIR).mkdir(parents=True, exist_ok=True)
    head = {
        "kind": "run", "format": header.get(F.FORMAT), "name": run.name, "folder": str(run),
        "planned": header.get("planned_matches"), "summary": summary, "results": results,
    }
    map_cache: dict[str, Any] = {}
    n = played = 0
    with open(out / "run.js", "w") as f:
        f.write("MAU.data(" + js_dumps(head)[:-1] + ',"matches":[')
        for mid, folder, g in _match_folders(run, problems):
            if folder is None:
                row = {
                    "id": mid, F.SEED: g.get(F.SEED), F.OUTCOME: None,
                    F.IMPOSTER_COLUMN: g.get(F.IMPOSTER_MODEL), "crewmate": g.get(F.CREWMATE_MODEL),
                    F.ARM: g.get(F.ARM), "case": g.get(F.CASE),
                }
            else:
                row = build_match(
                    folder, out / F.MATCHES_DIR / mid, root="../../", map_cache=map_cache,
                    maps_dir=out / "maps", run_href="../../index.html",
                )
                row["id"] = mid
                row["href"] = f"{F.MATCHES_DIR}/{mid}/index.html"
                if header.get(F.FORMAT) == F.EVAL_FORMAT:
                    row[F.IMPOSTER_COLUMN] = g.get(F.EVAL_IMPOSTER) or row.get(F.IMPOSTER_COLUMN)
                    row[F.ARM] = row.get(F.ARM) or g.get(F.ARM)
                played += 1
            f.write(("," if n else "") + js_dumps(row))
            n += 1
            if progress is not None:
                progress(n)
        if n == 0:
            problems.append(f"no match folders under {run / F.MATCHES_DIR}")
        f.write('],"problems":' + js_dumps(problems) + "});\n")
    write_html(out / "index.html", f"mau run {run.name}", "", ["run.js"])
    return {"matches": n, "played": played, "problems": len(problems)}
