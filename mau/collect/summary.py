"""The summary of a collect run, from its match folders: outcomes, win rates per model and role, and the
imposter x crewmate matchup matrix (table, CSV and a heat-map PNG)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.matchdir import count_events, finished_matches, read_header
from mau.schema import CREW_OUTCOMES, OUTCOMES
from mau.stats import ratio_bootstrap, wilson  # noqa: F401  (wilson re-exported)


def load_headers(run: Path) -> list[dict[str, Any]]:
    return [read_header(p) for p in finished_matches(run)]


def play_counts(run: Path) -> dict[str, Any]:
    """Meetings per match and the crewmates' votes (named-vote precision, skip share) over a run's matches.
    The precision is the eval's (``mau.stats.ratio_bootstrap``: votes cluster within matches)."""
    tot = {"meetings": 0, "crew_votes": 0, "crew_skips": 0, "crew_votes_on_imposters": 0}
    on_imposters, named_votes = [], []
    n = 0
    for p in finished_matches(run):
        c = count_events(p)
        n += 1
        for k in tot:
            tot[k] += c[k]
        on_imposters.append(c["crew_votes_on_imposters"])
        named_votes.append(c["crew_votes"] - c["crew_skips"])
    precision = ratio_bootstrap(on_imposters, named_votes)
    return {**tot, "meetings_per_match": tot["meetings"] / n if n else None,
            "crew_vote_precision": precision.value,
            "crew_vote_precision_ci95": [precision.ci_low, precision.ci_high],
            "crew_skip_share": tot["crew_skips"] / tot["crew_votes"] if tot["crew_votes"] else None}


def summarize(run: Path, planned: int | None = None) -> dict[str, Any]:
    headers = load_headers(run)
    outcomes = {o: 0 for o in OUTCOMES}
    per_model: dict[str, dict[str, list[int]]] = {}  # model -> role -> [wins, n]
    matchups: dict[tuple[str, str], list[int]] = {}  # (imposter model, crewmate model) -> [crew wins, n]
    calls = fallbacks = prompt_tokens = completion_tokens = 0
    cost = 0.0
    sides: dict[str, list[int]] = {}  # role -> [calls, fallbacks] of the side's own model (not rest_model)
    for h in headers:
        outcomes[h[F.OUTCOME]] += 1
        crew_won = h[F.OUTCOME] in CREW_OUTCOMES
        g = h.get(F.GRID, {})
        imp, crew = g.get(F.IMPOSTER_MODEL, "?"), g.get(F.CREWMATE_MODEL, "?")
        for model, role, won in ((imp, F.IMPOSTER, not crew_won), (crew, F.CREWMATE, crew_won)):
            cell = per_model.setdefault(model, {}).setdefault(role, [0, 0])
            cell[0] += won
            cell[1] += 1
        mu = matchups.setdefault((imp, crew), [0, 0])
        mu[0] += crew_won
        mu[1] += 1
        c = h.get("calls", {})
        for role, by_src in c.get("by_side", {}).items():
            own = by_src.get("model", {})
            side = sides.setdefault(role, [0, 0])
            side[0] += own.get("calls", 0)
            side[1] += own.get("fallbacks", 0)
        calls += c.get("calls", 0)
        fallbacks += c.get("fallbacks", 0)
        prompt_tokens += c.get("prompt_tokens", 0)
        completion_tokens += c.get("completion_tokens", 0)
        cost += c.get("cost_usd", 0.0)
    models = sorted({m for pair in matchups for m in pair})
    win_rates = {m: {role: {"wins": w, "n": n, "rate": w / n if n else None, "ci95": wilson(w, n)}
                     for role, (w, n) in sorted(roles.items())} for m, roles in sorted(per_model.items())}
    return {
        "matches": len(headers), "planned": planned, "outcomes": outcomes,
        "crew_win_rate": (sum(outcomes[o] for o in CREW_OUTCOMES) / len(headers)) if headers else None,
        "win_rates": win_rates,
        "matchups": [
            {F.IMPOSTER_COLUMN: i, "crewmate": c, "crew_wins": w, "n": n}
            for (i, c), (w, n) in sorted(matchups.items())
        ],
        "models": models, "calls": calls, "fallbacks": fallbacks, "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens, "cost_usd": round(cost, 6),
        "fallback_share": {
            role: {"calls": n, "fallbacks": fb, "share": fb / n if n else None}
            for role, (n, fb) in sorted(sides.items())
        },
        "play": play_counts(run),
    }


def write_summary(run: Path, planned: int | None = None) -> dict[str, Any]:
    s = summarize(run, planned)
    claims_md = _claims(run, s)
    (run / F.SUMMARY_JSON).write_text(json.dumps(s, indent=1))
    models = s["models"]
    cell = {(m[F.IMPOSTER_COLUMN], m["crewmate"]): m for m in s["matchups"]}
    with open(run / F.MATCHUPS_CSV, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["imposter \\ crewmate"] + models)
        for i in models:
            w.writerow([i] + [_rate(cell.get((i, c))) for c in models])
    lines = ["# Collect run summary", "", f"Matches: {s['matches']}" + (f" of {planned} "
                                                                        f"planned" if planned else ""),
             "", "| outcome | matches |", "|---|---|"]
    lines += [f"| {o} | {n} |" for o, n in s["outcomes"].items()]
    pc = s["play"]
    if s["matches"]:
        prec = "-" if pc["crew_vote_precision"] is None else \
            f"{100 * pc['crew_vote_precision']:.1f} % [{100 * pc['crew_vote_precision_ci95'][0]:.1f}, " \
            f"{100 * pc['crew_vote_precision_ci95'][1]:.1f}]"
        skip = "-" if pc["crew_skip_share"] is None else f"{100 * pc['crew_skip_share']:.1f} %"
        lines += ["", f"Meetings per match: {pc['meetings_per_match']:.2f}. Crewmate votes: "
                  f"{pc['crew_votes']}, of which skips {skip}; named votes on an imposter: {prec} (95% "
                  f"match bootstrap)."]
    lines += ["", "## Win rates per model and role (95% Wilson interval)", "",
              "| model | role | wins / n | win rate | 95% CI |", "|---|---|---|---|---|"]
    for m, roles in s["win_rates"].items():
        for role, r in roles.items():
            lo, hi = r["ci95"]
            lines.append(f"| {m} | {role} | {r['wins']} / {r['n']} | {r['rate']:.2f} | [{lo:.2f}, {hi:.2f}] "
                         f"|")
    lines += ["", "## Crew win rate by matchup (rows: imposter model, columns: crewmate model; n in "
                  "brackets)", "",
              "| imposter \\ crewmate | " + " | ".join(models) + " |", "|---" * (len(models) + 1) + "|"]
    for i in models:
        lines.append(f"| {i} | " + " | ".join(_rate(cell.get((i, c)), with_n=True) for c in models) + " |")
    lines += ["", f"Calls: {s['calls']}, fallbacks: {s['fallbacks']}, prompt tokens: {s['prompt_tokens']}, "
              f"completion tokens: {s['completion_tokens']}, cost: ${s['cost_usd']:.4f} at the configured "
              f"prices.",
              ""]
    lines += claims_md
    (run / F.SUMMARY_MD).write_text("\n".join(lines))
    if models:
        heatmap(models, cell, run / F.MATCHUPS_PNG)
    return s


def _claims(run: Path, s: dict[str, Any]) -> list[str]:
    """With structured claims: their verdicts and rates into the summary (``claims`` in summary.json, a
    section of summary.md)."""
    from mau.claimsread.report import run_claims, section, summary_json

    ev = run_claims(run)
    if ev is None:
        return []
    s["claims"] = summary_json(ev)
    return [""] + section(ev)


def _rate(m: dict[str, Any] | None, with_n: bool = False) -> str:
    if not m or not m["n"]:
        return "-"
    r = f"{m['crew_wins'] / m['n']:.2f}"
    return f"{r} ({m['n']})" if with_n else r


def heatmap(models: list[str], cell: dict[tuple[str, str], dict[str, Any]], path: Path) -> None:
    """Crew win rate per matchup as a heat map (Pillow only: no plotting library needed)."""
    from PIL import Image, ImageDraw

    size, left, top = 72, 150, 60
    n = len(models)
    img = Image.new("RGB", (max(left + n * size + 20, 400), top + n * size + 40), "white")
    d = ImageDraw.Draw(img)
    d.text((6, 8), "crew win rate (rows: imposter model, columns: crewmate model)", fill="black")
    for j, c in enumerate(models):
        d.text((left + j * size + 4, top - 18), c[:11], fill="black")
    for i, imp in enumerate(models):
        d.text((6, top + i * size + size // 2 - 6), imp[:22], fill="black")
        for j, crew in enumerate(models):
            m = cell.get((imp, crew))
            x, y = left + j * size, top + i * size
            if m and m["n"]:
                r = m["crew_wins"] / m["n"]
                # red (imposters win) -> green (crew wins)
                color = (int(230 - 180 * r), int(90 + 140 * r), 90)
                d.rectangle([x, y, x + size - 2, y + size - 2], fill=color)
                d.text((x + 8, y + size // 2 - 12), f"{r:.2f}", fill="black")
                d.text((x + 8, y + size // 2 + 2), f"n={m['n']}", fill="black")
            else:
                d.rectangle([x, y, x + size - 2, y + size - 2], outline=(200, 200, 200))
    img.save(path)
