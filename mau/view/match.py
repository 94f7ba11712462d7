"""One match folder -> one viewer page: ``index.html``, ``data.js`` (header, players, map, tracks, events,
meetings, frames, probes, problems), ``calls/<seat>.js`` (each player's call records, loaded when the player
is selected) and the frames (hard links). A missing or damaged part is named on the page, never fatal."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.view.site import js_dumps, link_or_copy, read_jsonl, write_data_js, write_html

MAP_SCALE = 8  # pixels per block of the background image
PROBES_FILE = F.PROBES_FILE  # the belief probes; drawn when present (docs/viewer.md)
KEY_EVENTS = {
    F.EV_KILL, F.EV_BODY_SEEN, F.EV_REPORT, F.EV_EMERGENCY, F.EV_MEETING_START, F.EV_EJECTION,
    F.EV_MEETING_END, F.EV_MISSION_COMPLETE, F.EV_MATCH_START, F.EV_MATCH_END, F.EV_FAKE_MISSION_START,
}
_FRAME = re.compile(r"^(\d{4})_(.+?)(?:_(fwd|back))?(?:_(\d+))?\.(png|jpg|jpeg)$")


def map_assets(name: str, cache: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
    """The map's geometry for the page and its top-down background PNG (no players), once per map."""
    if name in cache:
        return cache[name]
    try:
        from PIL import Image

        from mau.env.map import load_map
        from mau.env.render import Renderer

        m = load_map(name)
        img = Renderer(m, 8, 8)._topdown_base_image(MAP_SCALE)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "PNG", optimize=False, compress_level=3)
        h, w = img.shape[:2]
        info = {
            "name": m.name, "origin": list(m.origin), "size": [w / MAP_SCALE, h / MAP_SCALE],
            "rooms": [{"name": r.name, "rect": list(r.rect)} for r in m.spec.rooms], "places": _places(m),
            "stations": [list(s) for s in m.spec.stations], "button": list(m.spec.button),
        }
        cache[name] = (info, buf.getvalue())
    except Exception as e:  # noqa: BLE001 - a map we cannot load only costs the background
        cache[name] = None
        cache[f"error:{name}"] = f"{type(e).__name__}: {e}"
    return cache[name]


def _places(m: Any) -> dict[str, list[list[int]]]:
    """Every region's floor rectangles by the name a claim uses (rooms and ``corridor A-B``)."""
    out: dict[str, list[list[int]]] = {}
    for r in m.regions:
        out.setdefault(r.name, []).append(list(r.rect))
    return out


def _frames(folder: Path, roster: list[str]) -> tuple[dict[int, dict[str, list[str]]], int]:
    """{moment: {player or "topdown": [frame paths]}}. ARIA JPEGs are named by the moment they show (steps
    played so far); the scripted policy's PNGs by the step about to be played, one more."""
    out: dict[int, dict[str, list[str]]] = {}
    d = folder / F.FRAMES_DIR
    if not d.is_dir():
        return out, 0
    names = sorted(e.name for e in os.scandir(d) if e.is_file())
    known = sorted(roster + ["topdown"], key=len, reverse=True)
    for name in names:
        m = _FRAME.match(name)
        if not m:
            continue
        who = m.group(2)
        if who not in known:  # a name with "_" in it: the longest player name that prefixes the rest
            rest = name[5:]
            who = next((k for k in known if rest.startswith(k + "_") or rest.startswith(k + ".")), None)
            if who is None:
                continue
        step = int(m.group(1)) - (1 if m.group(5) == "png" else 0)
        out.setdefault(max(step, 0), {}).setdefault(who, []).append(f"{F.FRAMES_DIR}/{name}")
    return out, len(names)


def _claims(
    folder: Path, events: list[dict[str, Any]], problems: list[str]
) -> dict[int, list[dict[str, Any]]]:
    """Each utterance's claims (event index -> chips): the sentence, the checker's verdict and reason from the
    match-end claims.jsonl, and the speaker's private label (shown only with "reveal truth")."""
    from mau.claims.grammar import placement
    from mau.claims.render import render

    verdicts: dict[tuple[int, int], dict[str, Any]] = {}
    if (folder / F.CLAIMS_FILE).is_file():
        for r in read_jsonl(folder / F.CLAIMS_FILE, problems):
            verdicts[(r.get("i"), r.get("n"))] = r
    elif any(e.get(F.CLAIMS) for e in events):
        problems.append(f"{F.CLAIMS_FILE} is missing: claims shown without verdicts (run mau claims on the "
                        f"folder)")
    out: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        claims = e.get(F.CLAIMS)
        if e.get(F.TYPE) != F.EV_UTTERANCE or not claims:
            continue
        labels = e.get(F.CLAIM_INTENT) or []
        chips = []
        for n, c in enumerate(claims):
            v = verdicts.get((e.get(F.EVENT_INDEX), n), {})
            try:
                said = render(c)
            except (KeyError, ValueError):
                said = str(c)
            where = placement(c, e.get(F.SPEAKER, "")) if isinstance(c, dict) else None
            chips.append(
                {
                    "k": c.get("k"), "text": said, "verdict": v.get("verdict"), "reason": v.get("reason"),
                    "epistemic": v.get("epistemic"), "grounded": v.get("grounded"),
                    "label": labels[n] if n < len(labels) else None, "t": where["to_s"] if where else None,
                    "where": where,
                }
            )
        out[e.get(F.EVENT_INDEX)] = chips
    return out


def _meetings(events: list[dict[str, Any]], claims: dict[int, list[dict[str, Any]]] | None = None
              ) -> list[dict[str, Any]]:
    meetings: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for e in events:
        t = e.get(F.TYPE)
        if t == F.EV_MEETING_START:
            cur = {
                "n": len(meetings) + 1, F.STEP: e.get(F.STEP, 0), "caller": e.get("caller"),
                "reason": e.get("reason"), "body": e.get("body"), "lines": [], "votes": [], "ejection": None,
            }
            meetings.append(cur)
        elif cur is None:
            continue
        elif t in (F.EV_UTTERANCE, F.EV_PASS):
            cur["lines"].append(
                {
                    "speaker": e.get(F.SPEAKER), "round": e.get("round"),
                    "text": e.get(F.UTTERANCE_TEXT) if t == F.EV_UTTERANCE else None,
                    "claims": (claims or {}).get(e.get(F.EVENT_INDEX), []),
                }
            )
        elif t == F.EV_VOTE:
            cur["votes"].append(
                {"voter": e.get("voter"), "target": e.get("target"), "missing": bool(e.get("missing"))}
            )
        elif t == F.EV_EJECTION:
            cur["ejection"] = {k: e.get(k) for k in (F.EJECTED, "role", "tally", "text")}
        elif t == F.EV_MEETING_END:
            cur = None
    return meetings


def _probes(folder: Path, problems: list[str]) -> list[dict[str, Any]] | None:
    """Belief probes (``probes.jsonl``, format ``mau.probes``, every version the metrics read): who
    (``agent``), when (``step``), whose belief (``source``: ``model`` or ``ideal``) and P(imposter) per
    player (``beliefs``). Read tolerantly: a few other key names are accepted, fallbacks (no beliefs) are
    left out silently, lines of another ``format_version`` or without beliefs are skipped and counted."""
    path = folder / PROBES_FILE
    if not path.is_file():
        return None
    rows, skipped, other = [], 0, set()
    for r in read_jsonl(path, problems):
        if r.get(F.FORMAT_VERSION, F.PROBES_FORMAT_VERSION) not in F.PROBES_READABLE_VERSIONS:
            other.add(r.get(F.FORMAT_VERSION))
            continue
        if r.get(F.FALLBACK):
            continue
        agent = r.get("agent") or r.get("crewmate") or r.get("player")
        probs = next((r[k] for k in ("beliefs", "p_imposter", "probs", "probabilities", "p")
                      if isinstance(r.get(k), dict)), None)
        if not agent or probs is None:
            skipped += 1
            continue
        p = {}
        for name, v in probs.items():
            v = v.get("p", v.get("p_imposter")) if isinstance(v, dict) else v
            if isinstance(v, (int, float)):
                p[name] = float(v)
        source = r.get("source") or r.get("observer") or r.get("kind") or "model"
        rows.append({"agent": agent, F.STEP: r.get(F.STEP, 0), "source": str(source), "p": p,
                     "moment": r.get("moment")})
    if other:
        problems.append(f"{PROBES_FILE}: format_version {sorted(map(str, other))} is not one this mau reads "
                        f"({list(F.PROBES_READABLE_VERSIONS)}); those probes are not drawn")
    if skipped:
        problems.append(f"{PROBES_FILE}: {skipped} lines without an agent and P(imposter) per player, "
                        f"skipped")
    return rows


def build_match(
    folder: Path, out: Path, *, root: str = "", map_cache: dict[str, Any] | None = None,
    maps_dir: Path | None = None, run_href: str | None = None,
) -> dict[str, Any]:
    """Write the page of ``folder`` into ``out``; return a row for a run's match list. ``root`` is the
    relative path from ``out`` to the site root (assets, shared map images under ``maps_dir``)."""
    map_cache = {} if map_cache is None else map_cache
    out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    header: dict[str, Any] = {}
    try:
        from mau.matchdir import read_header

        header = read_header(folder)
    except Exception as e:  # noqa: BLE001 - a damaged header still leaves events, tracks and frames to show
        problems.append(str(e))
    events = list(read_jsonl(folder / F.EVENTS_FILE, problems))
    if not (folder / F.EVENTS_FILE).is_file():
        problems[-1:] = [f"{F.EVENTS_FILE} is missing: no timeline, meetings or kills"]
    players = _players(header, events)
    roster = [p["name"] for p in players]
    tracks = _tracks(folder, header, problems)
    map_info = _map_info(header, out, root, map_cache, maps_dir, problems)
    frames, linked = _link_frames(folder, out, header, roster, problems)
    calls_index = _write_calls(folder, out, header, roster, linked, problems)

    memory = list(read_jsonl(folder / F.MEMORY_FILE, problems)) if (folder / F.MEMORY_FILE).is_file() else []
    probes = _probes(folder, problems)
    keep = [e for e in events if e.get(F.TYPE) in KEY_EVENTS]
    last = max(
        [header.get(F.STEPS) or 0] + [t["s"] for t in tracks] + [e.get(F.STEP, 0) for e in events[-1:]]
    )
    match_id = header.get(F.MATCH_ID) or folder.name
    grid = header.get(F.GRID) or {}
    data = {
        "kind": "match", "id": match_id,
        "ticks_per_second": F.TICKS_PER_SECOND,  # the viewer turns claimed seconds into track ticks with it
        "folder": str(folder), "run_href": run_href,
        "header": {
            k: header.get(k)
            for k in (
                F.SEED, F.OUTCOME, F.END_REASON, F.STEPS, F.TICKS, F.MAP, F.BACKEND, "meeting_steps",
                "game_seconds", F.ARM,
            )
        },
        "grid": grid, "players": players, "map": map_info, "tracks": tracks, "events": keep,
        "meetings": _meetings(events, _claims(folder, events, problems)),
        "frames": {str(k): v for k, v in frames.items()}, "calls": calls_index, "memory": memory,
        "probes": probes, "problems": problems, "last_step": last,
    }
    write_data_js(out / "data.js", data)
    write_html(out / "index.html", f"mau match {match_id}", root, ["data.js"])
    kills = sum(1 for e in events if e.get(F.TYPE) == F.EV_KILL)
    return {
        "id": match_id, F.SEED: header.get(F.SEED, grid.get(F.SEED)), F.OUTCOME: header.get(F.OUTCOME),
        F.IMPOSTER_COLUMN: grid.get(F.IMPOSTER_MODEL), "crewmate": grid.get(F.CREWMATE_MODEL),
        F.ARM: header.get(F.ARM), "case": grid.get(F.CASE), F.STEPS: header.get(F.STEPS), "kills": kills,
        "false_claims": _false_claims(header), "problems": len(problems),
    }


def _players(header: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The header's players (or the match start's roles), each with its colour's RGB."""
    start = next((e for e in events if e.get(F.TYPE) == F.EV_MATCH_START), {})
    players = header.get(F.PLAYERS) or [
        {"name": n, "color": None, "seat": i, "role": r}
        for i, (n, r) in enumerate((start.get(F.ROLES) or {}).items())
    ]
    from mau.env.config import COLOR_RGB

    palette = list(COLOR_RGB.values())
    for i, p in enumerate(players):
        p["rgb"] = list(COLOR_RGB.get(p.get("color") or "", palette[i % len(palette)]))
    return players


def _tracks(folder: Path, header: dict[str, Any], problems: list[str]) -> list[dict[str, Any]]:
    """tracks.jsonl as the page reads it (step, tick, after-meeting flag, players, bodies), or a problem."""
    tracks = []
    tv = (header.get(F.TRACKS) or {}).get("version", F.TRACKS_VERSION)
    if tv != F.TRACKS_VERSION:
        problems.append(f"{F.TRACKS_FILE}: version {tv} is not the version this mau reads "
                        f"({F.TRACKS_VERSION}); "
                        "positions not shown (install the mau version that wrote it)")
    elif (folder / F.TRACKS_FILE).is_file():
        for t in read_jsonl(folder / F.TRACKS_FILE, problems):
            tracks.append(
                {
                    "s": t.get(F.STEP, 0), "t": t.get(F.TICK, 0), "a": t.get(F.TRACK_AFTER),
                    "p": t.get(F.TRACK_PLAYERS) or {}, "b": t.get(F.TRACK_BODIES) or [],
                }
            )
    else:
        problems.append(
            f"{F.TRACKS_FILE} is missing (a match played before tracks were recorded): no positions "
            "on the map, only where kills happened"
        )
    return tracks


def _map_info(header: dict[str, Any], out: Path, root: str, map_cache: dict[str, Any], maps_dir: Path | None,
              problems: list[str]) -> dict[str, Any] | None:
    """The map's geometry and image (written beside the page, or once under ``maps_dir``), or a problem."""
    world = (header.get(F.CONFIG) or {}).get("world") or {}
    map_name = str(world.get(F.MAP) or header.get(F.MAP) or "skeld")
    geo = map_assets(map_name, map_cache)
    map_info = None
    if geo is None:
        problems.append(
            f"map {map_name!r} cannot be loaded ({map_cache.get('error:' + map_name)}): drawn without it"
        )
    else:
        map_info, png = geo
        map_info = dict(map_info)
        if maps_dir is None:
            (out / "map.png").write_bytes(png)
            map_info["image"] = "map.png"
        else:
            target = maps_dir / f"{map_info['name']}.png"
            if not target.exists():
                maps_dir.mkdir(parents=True, exist_ok=True)
                target.write_bytes(png)
            map_info["image"] = f"{root}{maps_dir.name}/{target.name}"
    return map_info


def _link_frames(folder: Path, out: Path, header: dict[str, Any], roster: list[str],
                 problems: list[str]) -> tuple[dict[Any, Any], set[str]]:
    """The match's frames linked (or copied) beside the page: (frames by step and player, the linked
    paths)."""
    frames, n_files = _frames(folder, roster)
    expected = max(header.get(F.N_FRAMES) or 0, header.get("frames_saved") or 0)
    if expected and n_files < expected:
        problems.append(
            f"{F.FRAMES_DIR}/: {expected - n_files} of {expected} frame files are missing"
            + (" (the whole folder)" if n_files == 0 else "")
        )
    linked = {rel for names in frames.values() for paths in names.values() for rel in paths}
    if n_files:
        (out / F.FRAMES_DIR).mkdir(exist_ok=True)
        for names in frames.values():
            for paths in names.values():
                for rel in paths:
                    link_or_copy(folder / rel, out / rel)  # a fresh folder: nothing to overwrite
    return frames, linked


def _write_calls(folder: Path, out: Path, header: dict[str, Any], roster: list[str], linked: set[str],
                 problems: list[str]) -> dict[str, dict[str, Any]]:
    """calls/<seat>.js per agent (a call whose frame is gone is marked ``missing``); the page's index of
    them."""
    calls_index: dict[str, dict[str, Any]] = {}
    if (folder / F.CALLS_FILE).is_file():
        per: dict[str, list[dict[str, Any]]] = {}
        for c in read_jsonl(folder / F.CALLS_FILE, problems):
            per.setdefault(str(c.get(F.AGENT)), []).append(c)
        (out / "calls").mkdir(exist_ok=True)
        for k, (agent, calls) in enumerate(per.items()):
            seat = roster.index(agent) if agent in roster else len(roster) + k
            fname = f"calls/{seat}.js"
            for c in calls:  # a call that saw a frame the folder no longer has
                for m in c.get(F.MESSAGES) or []:
                    for part in m.get("content") if isinstance(m.get("content"), list) else []:
                        rel = (
                            part.get(F.IMAGE_PATH)
                            if isinstance(part, dict) and part.get("type") == "image"
                            else None
                        )
                        if rel and rel not in linked:
                            part["missing"] = True
            (out / fname).write_text(f"MAU.calls({js_dumps(agent)},{js_dumps(calls)});\n")
            calls_index[agent] = {
                "file": fname, "n": len(calls), "steps": sorted({c.get(F.STEP, 0) for c in calls}),
            }
    elif header.get("calls"):
        problems.append(f"{F.CALLS_FILE} is missing: the header counts {header['calls'].get('calls')} calls")
    return calls_index


def _false_claims(header: dict[str, Any]) -> int | None:
    """The claims the checker found FALSE or UNSUPPORTED (the match header's count), None without claims."""
    v = (header.get(F.CLAIMS_HEADER) or {}).get("verdicts")
    return None if v is None else int(v.get("FALSE", 0)) + int(v.get("UNSUPPORTED", 0))
