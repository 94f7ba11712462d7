"""mau bench env

Speed figures, printed as one JSON object. Runs pinned to one core; these machines are shared, so quote
medians and ratios.

``env``: game seconds simulated per wall second by whole matches of 8 scripted agents without frames (total
over matches, and the median over matches), the garbage collector's seconds within the matches and the young
threshold it ran at (``mau.gc_tuning``), and the median time of one 640x360 first-person frame.
``mau bench env --backend minecraft --matches 3``: the same on the minecraft backend (installed with
``make minecraft``), with every active agent's frame rendered at every step (``--frames 0``: none); the
matches share one host, as a collect or eval worker's do (mau/env/minecraft/bench.py).

``harness`` (``mau bench harness``): against mau's OpenAI-compatible mock server on loopback (a separate
process, with latency): the ratio of a step's wall time to its slowest call when 8 agents call at once
(median over steps), and the harness's own time per call (prompt, request, check, record; the model and the
frames excluded); then full ARIA matches with the scripted expert, every call's frames rendered and saved,
among them one forced to its full 200 steps (no kills, missions that never finish).

``dataset`` (``mau bench dataset``): ``mau dataset`` builds (filter ``all``: every crewmate expert call,
frames embedded) of a corpus of ARIA scripted matches (``--matches``, played here) and of the same corpus
replicated ``--scale`` times (hard-linked copies under new match ids); each build runs in a fresh subprocess,
so its peak RSS is its own. Reports examples/s and peak RSS of both, and their ratio (flat memory: ~1).

``fork`` (``mau bench fork``): ARIA matches with the scripted expert in every seat (no frames) are played and
the first crewmate VOTE of each is forked (docs/replay.md): branches per second played to the end of the
meeting and to the end of the match, answers alternating between the recorded vote and a skip; also the
one-off cost of replaying up to the decision and the snapshot / restore times.

``rl`` (``mau bench rl``): a few GRPO steps (``mau rl``, TRL) on the CPU with the tiny Qwen3.5 made to vote in
the format (``mau.models.tiny.build_voter_model``) on the VOTE decisions of a played match: seconds per step
and steps per minute, forks per step.

``view`` (``mau bench view``): ``mau view`` site build of a 200-step ARIA match, its page's time to
interactive in headless Chromium, and run builds of ``--matches`` (default 1000) and a tenth as many short
matches, with peak RSS (``mau/view/bench.py``).

``train`` (``mau bench train``, the GPU check; needs the ml extra): a few LoRA SFT steps of the production
training path on a Qwen3.5-9B-shaped model with random bf16 weights (nothing downloaded; ``--layers 4
--vision-depth 2 --device cpu`` for the reduced depth on a CPU; ``--dtype float32 --width-divisor 8`` on a CPU
without native bf16), rows of one 640x360 frame and ~2k text tokens;
tokens/s, peak memory beside the ``mau train --plan`` estimate, MFU (mau.train.bench; docs/training.md).

``collect`` (``mau bench collect``): one ``mau collect`` run of ``--matches`` matches against the mock server
at ``--latency-ms`` (default 1000 here), ``--jitter-ms`` and ``--faults``, ``--matches-in-flight`` of them at
once (default: all) in ``--workers`` processes (default 1): matches/hour, calls/s, peak and mean calls in
flight, the client's CPU ms per call, the mock server's own CPU per call and ceiling, and the projected wall
time of the RQ2 grid (mau/collect/bench.py; docs/collect.md). Not pinned to one core (the server is a second
process).

``probes`` (``mau bench probes``): the same ARIA scripted matches (no frames: the cheapest match, so the worst
case for the ratio) played with belief probes and the ideal observer off, and both on at the default moments
(``--roam-every N`` adds roam probes), alternating which goes first: probe calls per match, the ratio of model
calls with probes to calls without (goal <= 1.5), the median over seeds of the match wall-time ratio on / off
(goal <= 1.3), and the same ratio within each probed match (its wall time over its wall time less the probes'
own time: insensitive to load changing between the two plays on a shared machine); the events of both plays
are checked to be identical.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mau.commands.common import Flag
from mau.options import RunOptions
from mau.schema import CREWMATE, IMPOSTER, TICKS_PER_SECOND

TARGETS = ("env", "harness", "dataset", "fork", "rl", "view", "train", "probes", "collect")
DEFAULT_MATCHES = {"env": 30, "harness": 30, "dataset": 4, "fork": 3, "rl": 1, "view": 1000, "train": 0,
                   "probes": 10, "collect": 64}


FLAGS = [
    Flag("target", "what to measure", choices=TARGETS),
    Flag(
        "--matches",
        "matches to play (default: " + ", ".join(f"{k} {v}" for k, v in DEFAULT_MATCHES.items()) + ")",
        type=int,
    ),
    Flag("--frames", "frames to render (env)", type=int, default=300),
    Flag(
        "--backend", "world backend (env; minecraft: 3 matches by default)", choices=("sim", "minecraft"),
        default="sim",
    ),
    Flag("--seed", "first seed", type=int, default=0),
    Flag("--steps", "concurrent-call steps to time (harness)", type=int, default=20),
    Flag(
        "--latency-ms", "mock server latency per call (harness: default 200; collect: default 1000)",
        type=float,
    ),
    Flag("--jitter-ms", "mock server latency jitter, uniform (collect)", type=float, default=0.0),
    Flag("--faults", "mock server faults, e.g. 429=0.03,500=0.01,timeout=0.01 (collect)", default=""),
    Flag("--max-steps", "step budget of each match (collect)", type=int, default=60),
    Flag("--burst", "START:SECONDS: the mock server answers every request 429 in that window (collect)"),
    Flag("--frame-size", "first-person frames WxH, or off (collect)", default="640x360"),
    Flag("--matches-in-flight", "matches each worker plays at once (collect; default: all)", type=int),
    Flag("--workers", "worker processes (collect)", type=int, default=1),
    Flag("--scale", "the larger corpus is this many copies of the first (dataset)", type=int, default=4),
    Flag(
        "--branches", "meeting-end branches per decision (fork); a tenth of them are played to the match end",
        type=int, default=200,
    ),
    Flag("--rl-steps", "GRPO steps to time (rl)", type=int, default=3),
    Flag("--layers", "text layers of the 9B-shaped model (train; 4 = one block)", type=int, default=32),
    Flag("--vision-depth", "vision-tower layers (train)", type=int, default=27),
    Flag("--train-steps", "LoRA SFT steps, one row each; the first is warm-up (train)", type=int, default=4),
    Flag("--text-tokens", "text tokens per synthetic row (train)", type=int, default=2000),
    Flag("--device", "auto: the GPU if there is one (train)", choices=("auto", "cpu"), default="auto"),
    Flag(
        "--dtype", "bfloat16: the production path; float32: for a CPU without native bf16 (train)",
        choices=("bfloat16", "float32"), default="bfloat16",
    ),
    Flag(
        "--width-divisor", "divide the 9B's widths, heads and vocabulary by 1, 2, 4 or 8 (train)", type=int,
        default=1,
    ),
    Flag("--no-gradient-checkpointing", "train without it (train)", type=bool),
    Flag(
        "--peak-tflops",
        "the device's dense bf16 peak for MFU (train; default: known GPUs by name, none on the CPU)",
        type=float,
    ),
    Flag("--roam-every", "also probe every N roam steps (probes)", type=int),
]


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """No config file: the flags are the whole configuration."""
    cfg = {f.dest: getattr(args, f.dest) for f in FLAGS}
    if cfg["matches"] is None:
        minecraft = args.target == "env" and args.backend == "minecraft"
        cfg["matches"] = 3 if minecraft else DEFAULT_MATCHES[args.target]
    return cfg


def _one_core() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


class _CollectorClock:
    """Wall seconds the garbage collector spends while the block runs (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        import time

        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start

    def __enter__(self) -> _CollectorClock:
        import gc

        gc.callbacks.append(self._tick)
        return self

    def __exit__(self, *exc: Any) -> None:
        import gc

        gc.callbacks.remove(self._tick)


def bench_env(matches: int, frames: int, seed: int) -> dict[str, Any]:
    import gc
    import statistics
    import time

    from mau.env.render import bench_frame_ms
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy
    from mau.env.sim import SimWorld

    world = SimWorld()
    rates, game_s, wall_s, cpu_s, outcomes = [], 0.0, 0.0, 0.0, {}
    collector = _CollectorClock()
    for s in range(seed, seed + matches):
        policies = {p.name: ScriptedPolicy(p.name, world.map, s) for p in world.cfg.players}
        t0, c0 = time.perf_counter(), time.process_time()
        with collector:
            r = play_match(world, policies, s)
        dt = time.perf_counter() - t0
        cpu_s += time.process_time() - c0
        rates.append(r.ticks / TICKS_PER_SECOND / dt)
        game_s += r.ticks / TICKS_PER_SECOND
        wall_s += dt
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    w, h = world.config.frames.width, world.config.frames.height
    return {
        "bench": "env", "matches": matches, "agents": world.cfg.num_players,
        "game_seconds_per_wall_second": round(game_s / wall_s, 1),
        "game_seconds_per_wall_second_median": round(statistics.median(rates), 1),
        # CPU time of this process: the speed of one core when it is not shared (on a busy machine the wall
        # figures include waiting for the core)
        "game_seconds_per_cpu_second": round(game_s / cpu_s, 1),
        "mean_game_seconds_per_match": round(game_s / matches, 1), "outcomes": dict(sorted(outcomes.items())),
        # the garbage collector's time within the matches, and its young threshold (mau.gc_tuning)
        "gc_seconds": round(collector.seconds, 4), "gc_young_threshold": gc.get_threshold()[0],
        f"frame_ms_{w}x{h}": round(bench_frame_ms(w, h, n=frames), 3), "frames": frames, "cores": 1,
    }


def bench_harness(steps: int, latency_ms: float, seed: int, matches: int = 3,
                  full_match: bool = True) -> dict[str, Any]:
    import asyncio
    import statistics
    import tempfile
    import time
    from pathlib import Path

    from mau.commands.play import PlayConfig
    from mau.config import load_config, parse_overrides
    from mau.env.sim import SimWorld
    from mau.harness.agent import AriaAgent
    from mau.harness.backends import make_backend
    from mau.harness.backends.base import ModelConfig
    from mau.harness.calls import Caller, CallLog, FrameStore
    from mau.harness.match import AriaMatch
    from mau.harness.mock_server import mock_server
    from mau.harness.prompting import PromptBuilder

    # Write where real runs write (runs/), not /tmp: file creation costs differ a lot between filesystems.
    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-harness-", dir="runs"))
    cfg = load_config(PlayConfig, None, parse_overrides(["policy=aria"]))
    seat = cfg.seats["crewmate"]
    out: dict[str, Any] = {"bench": "harness", "mock_latency_ms": latency_ms,
                           "mock_jitter_ms": latency_ms / 2}

    # 1. Steps of 8 concurrent calls, each a real prompt through the openai backend to a server on loopback.
    with mock_server(str(tmp / "mock.log"), latency_ms=latency_ms, jitter_ms=latency_ms / 2) as srv:
        model = ModelConfig(backend="openai", model="mock", base_url=srv.base_url)

        async def run_steps() -> list[float]:
            backend = make_backend(model)
            world = SimWorld(cfg.world)
            world.reset(seed)
            log = CallLog(None)
            caller = Caller(world, log, "bench", {p.name: {} for p in world.state.players})
            builder = PromptBuilder(seat.aria, world.cfg, world.map)
            agents = [AriaAgent(p.name, p.role, [q.name for q in world.state.players],
                                seat.model_copy(update={"model": model}), backend, builder, caller,
                                FrameStore(world, None), list(world.map.room_names))
                      for p in world.state.players]
            for a in agents:
                a.aria = a.aria.model_copy(update={"frames": False})
            ratios = []
            try:
                for _ in range(steps + 1):
                    obs = {a.name: world.observe(a.name, "privileged") for a in agents}
                    t0 = time.perf_counter()
                    start = log.n
                    await asyncio.gather(*(a.call("plan", obs[a.name]) for a in agents))
                    wall = time.perf_counter() - t0
                    caller.flush()  # the step's records (and their latencies) into the log
                    slowest = max(log.latencies[start:])
                    ratios.append(wall / slowest)
                    world.step({})
            finally:
                await backend.aclose()
            return ratios[1:]  # the first step opens the connections

        ratios = asyncio.run(run_steps())
    out["step_to_slowest_call_ratio"] = round(statistics.median(ratios), 4)
    out["step_to_slowest_call_ratio_max"] = round(max(ratios), 4)
    out["concurrent_calls_per_step"] = 8
    out["steps_timed"] = len(ratios)

    # 2. Full ARIA matches with the scripted expert, frames rendered and saved; harness time per call.
    def aria_match(extra: list[str], s: int) -> tuple[float, AriaMatch, Any]:
        c = load_config(PlayConfig, "configs/play/aria_scripted.yaml", parse_overrides(extra))
        world = SimWorld(c.world)
        backends = {k: make_backend(v.model) for k, v in c.seats.items()}
        folder = Path(tempfile.mkdtemp(dir=tmp))
        m = AriaMatch(world, c.seats, backends, folder, "bench")
        t0 = time.perf_counter()
        r = asyncio.run(m.play(s))
        return time.perf_counter() - t0, m, r

    harness_ms: list[float] = []
    typical = []
    for s in range(seed, seed + matches):
        wall, m, r = aria_match([], s)
        typical.append({"steps": r.steps, "wall_s": round(wall, 3), "calls": m.log.n,
                        "frames": m.frames.saved})
        harness_ms += [json_ms for json_ms in _harness_ms(m)]
    out["overhead_ms_per_call"] = round(statistics.median(harness_ms), 4)
    out["overhead_ms_per_call_mean"] = round(statistics.fmean(harness_ms), 4)
    out["record_write_ms_per_call"] = round(1000 * m.log.write_s / max(m.log.n, 1), 4)
    out["aria_matches"] = typical
    if full_match:
        full_wall, m, r = aria_match(["world.game.kill_cooldown_initial_ticks=1000000000",
                                      "world.game.mission_hold_ticks=1000000000"], seed)
        out["aria_match_200_steps"] = {"steps": r.steps, "outcome": r.outcome, "wall_s": round(full_wall, 3),
                                       "calls": m.log.n, "frames_saved": m.frames.saved,
                                       "frames_s": round(m.frames.seconds, 3)}
    out["cores"] = 1
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return out


def _harness_ms(match) -> list[float]:
    import json

    from mau import schema as F

    with open(match.folder / F.CALLS_FILE) as f:
        return [json.loads(line)[F.HARNESS_MS] for line in f]


# Run in a fresh interpreter per build: one dataset build, its own peak RSS (ru_maxrss) and timings as JSON.
_DATASET_CHILD = """
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from mau.datasets.config import DatasetConfig
from mau.datasets.build import build_dataset
import datasets, tqdm
imports_s = time.perf_counter() - t0
rss_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cfg = DatasetConfig(runs=[sys.argv[1]], filter=sys.argv[3], out=sys.argv[2])
t = time.perf_counter()
header, stats = build_dataset(cfg, Path(sys.argv[2]), warn=lambda line: None)
build_s = time.perf_counter() - t
s = stats.summary()
print(json.dumps({"examples": sum(s["examples"].values()), "matches": sum(s["matches"].values()),
                  "images": sum(int(k) * sum(v.values()) for k, v in s["by_images"].items()),
                  "build_s": build_s, "imports_s": imports_s,
                  "rss_after_imports_mb": rss_imports / 1024,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _replicate(src: Any, dst: Any, copies: int) -> None:
    """``copies`` hard-linked copies of every match folder of ``src`` under ``dst``, each under a new match id
    (the header is rewritten, not linked), so that each copy is a match of its own for the split."""
    import json
    import shutil

    from mau import schema as F

    dst.mkdir(parents=True)
    for m in sorted(src.iterdir()):
        for k in range(copies):
            d = dst / f"{m.name}_x{k}"
            shutil.copytree(m, d, copy_function=os.link)
            h = json.loads((d / F.MATCH_HEADER).read_text())
            h[F.MATCH_ID] = d.name
            (d / F.MATCH_HEADER).unlink()  # a hard link: write a new file, never through the link
            (d / F.MATCH_HEADER).write_text(json.dumps(h))


def bench_dataset(matches: int, seed: int, scale: int = 4, max_steps: int | None = None,
                  filter: str = "all") -> dict[str, Any]:
    import json
    import shutil
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    from mau import schema as F
    from mau.config import load_config
    from mau.runner import PlayConfig, play_one

    # Write where real runs write (runs/), not /tmp: file creation costs differ a lot between filesystems.
    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-dataset-", dir="runs"))
    try:
        played = tmp / "played"
        t0 = time.perf_counter()
        for s in range(seed, seed + matches):
            over: dict[str, Any] = {"seed": s, "out": str(played / f"m{s}")}
            if max_steps is not None:
                over["world"] = {"game": {"max_steps": max_steps}}
            cfg = load_config(PlayConfig, "configs/play/aria_scripted.yaml", over)
            play_one(cfg, Path(cfg.out))
        play_s = time.perf_counter() - t0
        builds = {}
        for factor in (1, scale):
            corpus = tmp / f"corpus-x{factor}"
            _replicate(played, corpus / F.MATCHES_DIR, factor)
            out = tmp / f"dataset-x{factor}"
            r = subprocess.run([sys.executable, "-c", _DATASET_CHILD, str(corpus), str(out), filter],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"dataset build x{factor} failed: {r.stderr.strip().splitlines()[-1:]}")
            b = json.loads(r.stdout.strip().splitlines()[-1])
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            builds[f"x{factor}"] = {
                "matches": b["matches"], "examples": b["examples"], "images": b["images"],
                "build_s": round(b["build_s"], 3),
                "examples_per_second": round(b["examples"] / b["build_s"], 1),
                "images_per_second": round(b["images"] / b["build_s"], 1),
                "peak_rss_mb": round(b["peak_rss_mb"], 1),
                "rss_after_imports_mb": round(b["rss_after_imports_mb"], 1),
                "dataset_mb": round(size / 2**20, 1),
            }
            shutil.rmtree(out)
        small, large = builds["x1"], builds[f"x{scale}"]
        return {
            "bench": "dataset", "filter": filter, "played_matches": matches, "play_s": round(play_s, 2),
            "scale": scale, **builds, "examples_per_second": large["examples_per_second"],
            "peak_rss_mb": large["peak_rss_mb"],
            "peak_rss_ratio": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3),
            "build_rss_growth_ratio": round(
                (large["peak_rss_mb"] - large["rss_after_imports_mb"])
                / max(small["peak_rss_mb"] - small["rss_after_imports_mb"], 1e-9), 3,
            ),
            "cores": 1,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_probes(matches: int, seed: int, roam_every: int | None = None) -> dict[str, Any]:
    """Probes on vs off on the same seeds (scripted expert, no frames)."""
    import asyncio
    import statistics

    from mau.env.backends import make_world
    from mau.env.config import WorldConfig
    from mau.harness.backends import make_backend
    from mau.harness.config import SeatConfig
    from mau.harness.match import AriaMatch

    def play(s: int, enabled: bool) -> tuple[float, int, int, list[dict[str, Any]], float]:
        probes = {"enabled": enabled, "observer": enabled, "roam_every": roam_every if enabled else None}
        crew = SeatConfig.model_validate({"aria": {"frames": False, "probes": probes}})
        imp = SeatConfig.model_validate({"aria": {"frames": False, "prompt_style": "deterministic"}})
        seats = {CREWMATE: crew, IMPOSTER: imp}
        world = make_world(WorldConfig())
        m = AriaMatch(world, seats, {k: make_backend(v.model) for k, v in seats.items()}, None, f"bench-{s}")
        r = asyncio.run(m.play(s))
        pr = m.probe_summary or {}
        return r.wall_seconds, m.log.n, pr.get("model_probes", 0), world.state.events, pr.get("wall_s", 0.0)

    ratios, inner, calls_off, calls_on, n_probes, same = [], [], 0, 0, [], True
    for k in range(matches):
        s = seed + k
        order = (False, True) if k % 2 == 0 else (True, False)
        res = {on: play(s, on) for on in order}
        (w_off, c_off, _, ev_off, _), (w_on, c_on, p_on, ev_on, probe_s) = res[False], res[True]
        same &= ev_off == ev_on and c_off == c_on
        ratios.append(w_on / w_off)
        inner.append(w_on / max(w_on - probe_s, 1e-9))  # the same run with its probes' own time taken out
        calls_off += c_off
        calls_on += c_on + p_on
        n_probes.append(p_on)
    return {"bench": "probes", "matches": matches, "roam_every": roam_every, "frames": False,
            "probe_calls_per_match": round(statistics.mean(n_probes), 2),
            "calls_per_match_off": round(calls_off / matches, 1),
            "calls_ratio_on_off": round(calls_on / calls_off, 3),
            "wall_ratio_on_off_median": round(statistics.median(ratios), 3),
            "wall_ratio_on_off_max": round(max(ratios), 3),
            "wall_ratio_within_match_median": round(statistics.median(inner), 3),
            "identical_events": same, "cores": 1}


def main(cfg: dict[str, Any], opts: RunOptions = RunOptions()) -> int:
    import json

    if cfg["target"] == "train":  # the GPU check: all cores (the data loader, the CPU fallback)
        from mau.errors import MauError
        from mau.train.bench import bench_train
        from mau.train.shapes import NARROW_DIVISORS

        if cfg["width_divisor"] not in NARROW_DIVISORS:
            raise MauError(f"--width-divisor {cfg['width_divisor']}: use one of "
                           f"{', '.join(map(str, NARROW_DIVISORS))}")
        print(
            json.dumps(
                bench_train(
                    cfg["layers"], cfg["vision_depth"], cfg["train_steps"], cfg["text_tokens"], cfg["device"],
                    not cfg["no_gradient_checkpointing"], cfg["peak_tflops"], cfg["seed"], dtype=cfg["dtype"],
                    width_divisor=cfg["width_divisor"],
                )
            )
        )
        return 0
    if cfg["target"] == "collect":  # not pinned: the mock server is a second process
        from mau.collect.bench import bench_collect

        print(
            json.dumps(
                bench_collect(
                    cfg["matches"], cfg["latency_ms"] or 1000.0, cfg["jitter_ms"], cfg["faults"],
                    cfg["max_steps"], cfg["frame_size"], cfg["matches_in_flight"], cfg["workers"],
                    cfg["seed"], cfg["burst"],
                )
            )
        )
        return 0
    if cfg["target"] == "env" and cfg.get("backend") == "minecraft":
        from mau.env.minecraft.bench import bench_minecraft

        # Not pinned to one core: the Node host is a second process (server, bots and frames in one).
        print(json.dumps(bench_minecraft(cfg["matches"], cfg["seed"], frames=cfg["frames"] > 0)))
        return 0
    _one_core()
    if cfg["target"] == "probes":
        print(json.dumps(bench_probes(cfg["matches"], cfg["seed"], cfg.get("roam_every"))))
        return 0
    if cfg["target"] == "env":
        print(json.dumps(bench_env(cfg["matches"], cfg["frames"], cfg["seed"])))
    elif cfg["target"] == "fork":
        from mau.replay.bench import bench_fork

        print(json.dumps(bench_fork(cfg["matches"], cfg["seed"], cfg.get("branches", 200))))
    elif cfg["target"] == "rl":
        from mau.rl.bench import bench_rl

        print(json.dumps(bench_rl(cfg["seed"], cfg.get("rl_steps", 3))))
    elif cfg["target"] == "view":
        from mau.view.bench import bench_view

        print(json.dumps(bench_view(cfg["matches"], cfg["seed"] or 3)))
    elif cfg["target"] == "dataset":
        print(json.dumps(bench_dataset(cfg["matches"], cfg["seed"], cfg.get("scale", 4))))
    else:
        print(
            json.dumps(
                bench_harness(cfg["steps"], cfg["latency_ms"] or 200.0, cfg["seed"], matches=cfg["matches"])
            )
        )
    return 0
