"""``mau view --video MATCH``: an MP4 of the top-down map, one frame per recorded position line, with the
current event or speaker as a caption. ffmpeg comes from the ``imageio-ffmpeg`` wheel (the ``view`` extra)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.view.site import read_jsonl

SCALE = 6
CAPTION_H = 48  # three lines of caption above the map


def _caption(e: dict[str, Any]) -> str | None:
    t = e.get(F.TYPE)
    return {
        F.EV_KILL: lambda: f"{e.get('victim')} is killed in {e.get('room')}",
        F.EV_REPORT: lambda: f"{e.get('reporter')} reports the body of {e.get('body')}",
        F.EV_EMERGENCY: lambda: f"{e.get('caller')} calls an emergency meeting",
        F.EV_UTTERANCE: lambda: f"{e.get(F.SPEAKER)}: {e.get(F.UTTERANCE_TEXT)}",
        F.EV_EJECTION: lambda: e.get("text"),
        F.EV_MISSION_COMPLETE: lambda: (
            f"{e.get('player')} completes a mission ({e.get('done')}/{e.get('of')})"
        ),
        F.EV_MATCH_END: lambda: f"{e.get(F.OUTCOME)}: {e.get('reason')}",
    }.get(t, lambda: None)()


def make_video(match: Path, out: Path, fps: int = 6) -> dict[str, Any]:
    """Write ``out`` (MP4); return frames and seconds. Needs tracks.jsonl (positions)."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise MauError("--video needs imageio-ffmpeg (it ships ffmpeg): pip install 'mau[view]'") from None
    import numpy as np
    from PIL import Image, ImageDraw

    from mau.env.config import COLOR_RGB
    from mau.env.map import load_map
    from mau.env.render import Renderer
    from mau.matchdir import read_header

    header = read_header(match)
    if not (match / F.TRACKS_FILE).is_file():
        raise MauError(
            f"{match}: no {F.TRACKS_FILE} (a match played before positions were recorded); "
            "replay it with this mau to make a video"
        )
    tv = (header.get(F.TRACKS) or {}).get("version", F.TRACKS_VERSION)
    if tv != F.TRACKS_VERSION:
        raise MauError(f"{match}: {F.TRACKS_FILE} version {tv} is not the version this mau reads "
                       f"({F.TRACKS_VERSION}); install the mau version that wrote it")
    problems: list[str] = []
    tracks = list(read_jsonl(match / F.TRACKS_FILE, problems))
    events = list(read_jsonl(match / F.EVENTS_FILE, problems))
    world = (header.get(F.CONFIG) or {}).get("world") or {}
    m = load_map(str(world.get(F.MAP) or header.get(F.MAP)))
    base = Image.fromarray(Renderer(m, 8, 8)._topdown_base_image(SCALE))
    w, h = base.size
    W, H = (w + 15) // 16 * 16, (h + CAPTION_H + 15) // 16 * 16
    colors = {p["name"]: COLOR_RGB.get(p.get("color"), (200, 200, 200)) for p in header.get(F.PLAYERS, [])}
    ox, oz = m.origin
    by_step: dict[int, list[str]] = {}
    for e in events:
        c = _caption(e)
        if c:
            by_step.setdefault(e.get(F.STEP, 0), []).append(c)

    def frame(t: dict[str, Any], caption: str) -> bytes:
        img = Image.new("RGB", (W, H), (17, 17, 17))
        img.paste(base, (0, CAPTION_H))
        d = ImageDraw.Draw(img)
        for victim, x, z in t.get(F.TRACK_BODIES, []):
            u, v = (x - ox) * SCALE, (z - oz) * SCALE + CAPTION_H
            d.line([u - 5, v - 5, u + 5, v + 5], fill=colors.get(victim, (255, 0, 0)), width=3)
            d.line([u - 5, v + 5, u + 5, v - 5], fill=colors.get(victim, (255, 0, 0)), width=3)
        for name, (x, z, _yaw) in t.get(F.TRACK_PLAYERS, {}).items():
            u, v = (x - ox) * SCALE, (z - oz) * SCALE + CAPTION_H
            d.ellipse([u - 5, v - 5, u + 5, v + 5], fill=colors.get(name, (200, 200, 200)), outline=(0, 0, 0))
            d.text((u + 6, v - 12), name, fill=(255, 255, 255))
        lines = textwrap.wrap(f"step {t.get(F.STEP)}  {caption}", width=max(20, W // 6 - 2))[:3]
        for k, text in enumerate(lines):
            d.text((6, 4 + 14 * k), text, fill=(255, 255, 255))
        return np.asarray(img).tobytes()

    n = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = imageio_ffmpeg.write_frames(str(out), (W, H), fps=fps, macro_block_size=16, quality=7)
    writer.send(None)
    try:
        for t in tracks:
            caps = by_step.pop(t.get(F.STEP, 0), []) if t.get(F.TRACK_AFTER) != "start" else []
            for c in caps or [""]:
                hold = fps if c else 1  # an event's caption stays up a second
                data = frame(t, c)
                for _ in range(hold):
                    writer.send(data)
                    n += 1
    finally:
        writer.close()
    return {"video": str(out), "frames": n, "seconds": round(n / fps, 1), "size": [W, H]}
