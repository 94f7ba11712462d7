"""mau collect --config configs/collect/smoke.yaml --out runs/collect/smoke

Play a grid of expert matches (the paper's RQ2 design): every model of the pool as imposter against every
model as crewmate, under each ARIA case, with repetitions. Matches run in parallel worker processes
(``--workers``); each match folder appears whole when its match is done, so a killed run loses nothing:
rerun with ``--resume``. ``--shard I/N`` plays one shard of the grid (Slurm arrays:
slurm/collect_array.sbatch). Writes the resolved config, provenance, the grid, the match folders and a
summary (outcomes, win rates per model and role, the imposter x crewmate matchup matrix as a table and a
plot). Ctrl-C stops within seconds and keeps every finished match; a match that fails stops the run (no
new match starts, those in flight end, each failure one line); ``--max-failures N`` goes on past N failed
matches, but a run that ends with failed matches is not complete and exits with code 3 (rerun with
``--resume``); ``--dry-run`` prints the plan and what it will cost (calls, tokens, USD, disk), then the grid
(matches per case with each side's harness, the pool, the pairings), and writes nothing. Before the first
match every pool model answers one preflight request (a dead server or a misnamed model stops the run in one
line); at the end a side whose own calls fell back more than ``max_fallback_share`` (default 50 %) is warned
about.
"""

from __future__ import annotations

from mau.commands.common import (
    DRY_RUN,
    IN_FLIGHT,
    MAX_FAILURES,
    NO_PROGRESS,
    OUT,
    RESUME,
    SHARD,
    WORKERS,
    config_flags,
)
from mau.options import RunOptions

FLAGS = [*config_flags("grid.repetitions=2"), OUT, RESUME, SHARD, WORKERS, IN_FLIGHT, NO_PROGRESS, DRY_RUN,
         MAX_FAILURES]
CONFIG = "mau.collect.run:CollectConfig"


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main(cfg, opts: RunOptions = RunOptions()) -> int:
    import json
    import sys

    from mau.collect.run import run_collect
    from mau.rundir import RunDir

    out = RunDir.choose(cfg.out, "collect", opts.tag("collect"), "collect run").path
    s = run_collect(cfg, out, opts)
    if s is None:  # --dry-run
        return 0
    print(f"collected {s['matches']}/{s['planned']} matches (shard {s['shard']}: {s['played_now']} played "
          f"now, "
          f"{s['wall_s']} s) outcomes={json.dumps(s['outcomes'])} crew_win_rate="
          f"{s['crew_win_rate'] if s['crew_win_rate'] is None else round(s['crew_win_rate'], 3)} "
          f"meetings_per_match={_r(s['play']['meetings_per_match'])} -> {out}")
    m = s.get("meter") or {}
    if m.get("calls"):
        print(f"calls now: {m['calls']} ({m['calls_per_s']:.1f}/s, in flight: peak {m['peak_in_flight']}, "
              f"mean {m['mean_in_flight']:.1f}), tokens: {m['tokens']}, cost: ${m['cost_usd']:.4f} at the "
              f"configured prices; the whole run: {s['prompt_tokens'] + s['completion_tokens']} tokens, "
              f"${s['cost_usd']:.4f}")
    for role, f in s.get("fallback_share", {}).items():
        if f["share"] is not None and f["share"] > cfg.max_fallback_share:
            print(f"mau collect: warning: the {role}s' own calls fell back {100 * f['share']:.1f} % of the "
                  f"time ({f['fallbacks']} of {f['calls']}; max_fallback_share "
                  f"{100 * cfg.max_fallback_share:.0f} %): "
                  "their matches measure fallbacks, not the models", file=sys.stderr)
    print(probe_cost_line(out))
    if s.get("failed_now"):
        from mau.errors import EXIT_FAILED_MATCHES

        print(f"mau collect: {s['failed_now']} matches failed (exit code {EXIT_FAILED_MATCHES}: the run is "
              f"not complete, {s['matches']} of {s['planned']} matches finished); rerun with --resume to "
              "play them", file=sys.stderr)
        return EXIT_FAILED_MATCHES
    return 0


def probe_cost_line(out) -> str:
    """One line: the belief probes' cost per match (read from the match headers)."""
    from mau.eval.detection import probe_cost
    from mau.matchdir import finished_matches

    c = probe_cost(finished_matches(out))
    return (f"probes: {c['probes']} model probe calls in {c['matches']} matches ({c['probes_per_match']:.1f} "
            f"per match, {c['fallbacks']} fallbacks, {c['tokens']} tokens)")
