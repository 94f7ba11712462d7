"""The match runner and the run folder as a user meets them: Ctrl-C, --max-failures, --dry-run, a creation
killed half-way, folder permissions, flag errors, refusing to overwrite."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main

SMOKE = "configs/collect/smoke.yaml"
FAST = ["--set", "world.game.max_steps=8", "--no-progress"]


def _finished(run: Path) -> set[str]:
    d = run / F.MATCHES_DIR
    return {p.name for p in d.iterdir() if (p / F.MATCH_HEADER).is_file()} if d.is_dir() else set()


def _descendants(pid: int) -> list[int]:
    """Processes whose parent chain leads to ``pid`` (from /proc)."""
    parents = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parents[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = [], {pid}
    while frontier:
        kids = {c for c, par in parents.items() if par in frontier}
        out += kids
        frontier = kids
    return out


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_stops_collect_within_seconds_and_resume_finishes(tmp_path, workers):
    run = tmp_path / "run"
    half = ["--set", "world.game.max_steps=30", "--set", "grid.repetitions=1"]  # 18 matches: the suite's time
    cmd = [sys.executable, "-m", "mau", "collect", "--config", SMOKE, "--out", str(run), "--workers", workers,
           *half, "--no-progress"]
    proc = subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_finished(run)) < 2:
        time.sleep(0.05)
    assert len(_finished(run)) >= 2, "no match finished in time"
    kids = _descendants(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("mau collect was still running 10 s after Ctrl-C")
    stopped_s = time.monotonic() - t0
    assert stopped_s < 5, f"stopped after {stopped_s:.1f} s"
    assert proc.returncode == 130 and "interrupted" in err, err
    done = _finished(run)
    assert 2 <= len(done) < 18  # the queue was dropped, the finished matches kept
    time.sleep(0.5)
    alive = [k for k in kids if _running(k)]
    assert not alive, f"worker processes left running: {alive}"
    assert main(["collect", "--config", SMOKE, "--out", str(run), "--resume", "--workers", "2", *half,
                 "--no-progress"]) == 0
    assert len(_finished(run)) == 18
    assert not [p for p in (run / F.MATCHES_DIR).iterdir() if p.name.startswith(".")]


def test_max_failures_stops_early_or_tolerates(tmp_path, capsys):
    # one pool model names a backend that does not exist: every match it plays in fails
    bad = ["--set", "grid.pool.2.model.backend=nope"]
    run = tmp_path / "stop"
    assert main(["collect", "--config", SMOKE, "--out", str(run), *FAST, *bad]) == 2
    err = capsys.readouterr().err
    import re

    # the first failure starts no new match; those in flight end, each failure with its line
    n = re.search(r"(\d+) matches failed \(--max-failures 0\); the first: ", err)
    assert n and "rerun with --resume" in err, err
    assert len(re.findall(r"^match \S+ failed: ", err, re.M)) == int(n.group(1)) >= 1
    assert len(_finished(run)) < 36
    run = tmp_path / "tolerate"
    # --max-failures lets the run go on, not succeed: 20 of 36 failed is exit code 3, so that
    # ``mau collect ... && mau dataset ...`` never trains on an incomplete run
    assert main(["collect", "--config", SMOKE, "--out", str(run), "--max-failures", "100", *FAST, *bad]) == 3
    err = capsys.readouterr().err
    # scripted-c plays in 5 of the 9 pairings (imposter or crewmate): 20 of the 36 matches fail
    assert "20 matches failed" in err and "exit code 3" in err and "16 of 36 matches finished" in err
    assert len(_finished(run)) == 16


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["collect", "--config", SMOKE, "--out", str(run), "--dry-run",
                 "--set", "grid.pool.0.model.price_prompt_per_mtok=1.0"]) == 0
    out = capsys.readouterr().out
    assert "36 planned matches" in out and "36 to play" in out and '"cost_usd_at_most"' in out
    import json

    est = json.loads(out.strip().splitlines()[-1])
    assert est["matches"] == 36 and est["calls_at_most"] > 0 and est["cost_usd_at_most"] > 0
    assert not run.exists()
    assert main(["play", "--out", str(tmp_path / "p"), "--dry-run"]) == 0
    assert not (tmp_path / "p").exists()


def test_a_creation_killed_half_way_blocks_neither_a_new_run_nor_resume(tmp_path):
    from mau.rundir import LOCK_FILE

    for flag in ([], ["--resume"]):
        run = tmp_path / f"run{len(flag)}"
        (run / F.MATCHES_DIR).mkdir(parents=True)  # what a SIGKILL during creation leaves: no run.json yet
        (run / LOCK_FILE).write_text("")
        (run / F.RESOLVED_CONFIG).write_text("half")
        (run / f".{F.PROVENANCE_FILE}.123.tmp").write_text("{")
        assert main(["collect", "--config", SMOKE, "--out", str(run), *flag, *FAST,
                     "--set", "grid.repetitions=1", "--set", "grid.cases=[{name: a}]"]) == 0
        assert (run / F.RUN_HEADER).is_file() and len(_finished(run)) == 9
        assert not list(run.glob(".*.tmp"))


def test_folders_follow_the_users_umask(tmp_path):
    old = os.umask(0o022)
    try:
        run = tmp_path / "run"
        assert main(["collect", "--config", SMOKE, "--out", str(run), *FAST,
                     "--set", "grid.repetitions=1", "--set", "grid.cases=[{name: a}]",
                     "--set", "grid.pool=[{name: s}]"]) == 0
    finally:
        os.umask(old)
    (m,) = _finished(run)
    assert stat.S_IMODE((run / F.MATCHES_DIR / m).stat().st_mode) == 0o755


def test_a_bad_flag_value_names_the_flag(tmp_path, capsys):
    assert main(["collect", "--config", SMOKE, "--out", str(tmp_path / "r"), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mau collect: error: --workers: workers:") and "fix the value of --workers" in err


def test_every_verbs_set_example_is_valid(capsys):
    import importlib

    from mau.cli import VERBS, build_parser
    from mau.commands.common import config_for

    for verb, (module, _) in VERBS.items():
        mod = importlib.import_module(module)
        flags = [f for f in mod.FLAGS if f.name == "--set"]
        if not flags:
            continue
        example = flags[0].help.split("e.g. --set ")[1].split(" ")[0]
        argv = [verb, "--set", example]
        if verb == "eval":
            argv += ["--config", "configs/eval/smoke.yaml"]
        if verb == "collect":
            argv += ["--config", SMOKE]
        if verb == "student-curve":  # a curve needs held-out runs, which only a config names
            argv += ["--config", "configs/student/curve.yaml"]
        if verb == "fork":
            argv = [verb, "runs/some-match", "--step", "1", "--set", example]
        assert config_for(mod, build_parser(verb).parse_args(argv)) is not None, verb


def test_version_and_info_name_the_accelerator(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("mau 0.")
    assert main(["info"]) == 0
    assert '"accelerator"' in capsys.readouterr().out


def test_tiny_model_does_not_overwrite_without_resume_or_force(tmp_path, capsys):
    out = tmp_path / "tiny"
    out.mkdir()
    (out / "config.json").write_text("{}")
    assert main(["tiny-model", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["tiny-model", "--out", str(out), "--resume"]) == 0
    assert (out / "config.json").read_text() == "{}"
