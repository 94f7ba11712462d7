"""The CLI end to end, in-process and as a subprocess: mau play, mau bench env, mau info, mau --help."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from mau import schema as F
from mau.cli import main
from mau.errors import MauError
from mau.matchdir import iter_events, read_header


def test_play_writes_a_match_folder_and_prints_one_line(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["play", "--config", "configs/play/scripted.yaml", "--seed", "3", "--out", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and f"-> {out}" in line
    h = read_header(out)
    assert h["seed"] == 3 and h["outcome"] in ("IMPOSTER WIN", "TIMEOUT", "CREWMATE WIN", "MISSION WIN")
    assert line.startswith(h["outcome"])
    assert sorted(h["roles"].values()).count("imposter") == 2
    assert h["config"]["world"]["game"]["max_steps"] == 200
    assert h["provenance"]["packages"]["numpy"]
    events = list(iter_events(out))
    assert events[0]["type"] == "match_start" and events[-1]["type"] == "match_end"
    assert events[-1]["outcome"] == h["outcome"] and len(events) == h["n_events"]
    assert (out / F.RESOLVED_CONFIG).is_file()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no staging folder left


def test_rerun_into_finished_folder_needs_resume(tmp_path, capsys):
    out = tmp_path / "m"
    args = ["play", "--seed", "1", "--out", str(out), "--set", "world.game.max_steps=5"]
    assert main(args) == 0
    before = (out / F.MATCH_HEADER).read_text()
    assert main(args) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0
    assert (out / F.MATCH_HEADER).read_text() == before  # nothing already written is lost


def test_bad_config_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["play", "--out", str(out), "--set", "world.game.kill_reach=far"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mau play: error: --set: world.game.kill_reach") and "\n" not in err
    assert not out.exists()


def test_frames_are_written_when_asked(tmp_path):
    out = tmp_path / "m"
    assert main(["play", "--seed", "2", "--out", str(out), "--frames", "--set", "world.game.max_steps=2",
                 "--set", "world.frames.width=64", "--set", "world.frames.height=36"]) == 0
    frames = sorted((out / F.FRAMES_DIR).glob("*.png"))
    assert len(frames) == 16 and read_header(out)[F.N_FRAMES] == 16
    from PIL import Image

    assert Image.open(frames[0]).size == (64, 36)


def test_reader_refuses_unknown_version(tmp_path):
    out = tmp_path / "m"
    assert main(["play", "--seed", "1", "--out", str(out), "--set", "world.game.max_steps=3"]) == 0
    h = json.loads((out / F.MATCH_HEADER).read_text())
    h[F.FORMAT_VERSION] = 99
    (out / F.MATCH_HEADER).write_text(json.dumps(h))
    with pytest.raises(MauError, match="version 99 is not the version this mau reads"):
        read_header(out)


def test_help_is_fast_and_lists_verbs():
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "mau", "--help"], capture_output=True, text=True, check=True)
    assert time.perf_counter() - t < 5  # generous; the figure itself is for `mau bench`, not a test
    assert "play" in r.stdout and "bench" in r.stdout
    heavy = subprocess.run([sys.executable, "-c", "import sys, mau.cli; mau.cli.build_parser(); "
                            "print(sorted(m for m in ('numpy','pydantic','yaml','torch') if m in "
                            "sys.modules))"],
                           capture_output=True, text=True, check=True)
    assert heavy.stdout.strip() == "[]"


def test_bench_env_prints_one_json_object(capsys):
    import gc

    from mau.commands.bench import bench_env

    r = bench_env(matches=2, frames=5, seed=0)
    assert r["game_seconds_per_wall_second"] > 0 and r["frame_ms_640x360"] > 0 and r["agents"] == 8
    assert r["gc_young_threshold"] == gc.get_threshold()[0] and 0 <= r["gc_seconds"] < 10
    assert all(cb.__name__ != "_tick" for cb in gc.callbacks)  # the collector's clock is taken off again


def test_bench_harness_prints_its_figures():
    from mau.commands.bench import bench_harness

    r = bench_harness(steps=2, latency_ms=20, seed=0, matches=1, full_match=False)
    assert r["step_to_slowest_call_ratio"] >= 1.0 and r["overhead_ms_per_call"] > 0
    assert r["aria_matches"][0]["calls"] > 0 and r["aria_matches"][0]["frames"] > 0


def test_info(capsys):
    assert main(["info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["backends"] == ["minecraft", "sim"] and info["maps"] == ["skeld"]


def test_unknown_backend_is_refused():
    from mau.commands.play import PlayConfig
    from mau.commands.play import main as play_main
    from mau.config import load_config, parse_overrides

    cfg = load_config(PlayConfig, None, parse_overrides(["world.backend=bedrock", "out=/nonexistent/x"]))
    with pytest.raises(MauError, match=r"world.backend: 'bedrock' is unknown; use one of \['minecraft', "
                                       r"'sim'\]"):
        play_main(cfg)


@pytest.mark.parametrize("verb", ["beliefs", "claims", "judge", "student-train", "student-rl"])
def test_every_verb_takes_a_typed_config(verb, tmp_path):
    """The report verbs and the student's verbs parse their flags into a pydantic config like the others (not
    an argparse namespace), so that tests and scripts call their ``main(cfg)`` with a documented object."""
    import importlib

    from mau.cli import VERBS, build_parser
    from mau.commands.common import config_for
    from mau.config import Model

    argv = [verb, str(tmp_path)] if verb in ("beliefs", "claims", "judge") else [verb, "--out", str(tmp_path)]
    args = build_parser(verb).parse_args(argv)
    cfg = config_for(importlib.import_module(VERBS[verb][0]), args)
    assert isinstance(cfg, Model) and type(cfg).__doc__


@pytest.fixture
def default_gc_threshold():
    import gc

    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*old)


def test_verbs_that_play_matches_collect_young_garbage_less_often(tmp_path, capsys, default_gc_threshold):
    import gc

    from mau.gc_tuning import MATCH_GC_THRESHOLD, collect_young_garbage_less_often

    assert main(["info"]) == 0
    assert gc.get_threshold() == (700, 10, 10)  # a verb that plays no match keeps the default
    out = str(tmp_path / "m")
    assert main(["play", "--config", "configs/play/scripted.yaml", "--seed", "3", "--out", out]) == 0
    assert gc.get_threshold() == (MATCH_GC_THRESHOLD, 10, 10)  # the older generations' thresholds kept
    gc.set_threshold(50_000, 5, 5)
    collect_young_garbage_less_often()
    assert gc.get_threshold() == (50_000, 5, 5)  # never made more eager
    gc.set_threshold(0)
    collect_young_garbage_less_often()
    assert gc.get_threshold()[0] == 0  # a collector that is off stays off
