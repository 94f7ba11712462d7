"""mau collect: the grid, shards, atomic match folders, kill -9 and --resume, the summary."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main
from mau.collect.grid import GridConfig, enumerate_grid, in_shard, parse_shard
from mau.collect.summary import wilson
from tests.helpers import finished_matches, kill_group_when

SMOKE = "configs/collect/smoke.yaml"
FAST = ["--set", "world.game.max_steps=8", "--no-progress"]


def _grid(**kw) -> GridConfig:
    pool = [{"name": n, "model": {"backend": "scripted", "model": n}} for n in ("a", "b", "c")]
    return GridConfig.model_validate({"pool": pool, **kw})


def test_grid_has_every_pairing_and_case_once_per_repetition():
    g = _grid(cases=[{"name": "1A"}, {"name": "2A"}], repetitions=3, seeds=[5, 6, 7])
    specs = enumerate_grid(g)
    assert len(specs) == 2 * 3 * 3 * 3
    keys = Counter((s.case, s.imposter_model, s.crewmate_model, s.rep) for s in specs)
    assert set(keys.values()) == {1}
    assert {(i, c) for _, i, c, _ in keys} == {(i, c) for i in "abc" for c in "abc"}
    assert {s.seed for s in specs if s.rep == 1} == {6}  # a repetition's seed is shared by every pairing
    assert len({s.match_id for s in specs}) == len(specs)
    no_self = enumerate_grid(_grid(self_play=False))
    assert all(s.imposter_model != s.crewmate_model for s in no_self) and len(no_self) == 6


def test_a_grid_can_name_who_plays_each_side():
    """The imposter ladder against the teacher's temperaments: imposters and crewmates from named pool
    entries."""
    g = _grid(imposters=["a", "b"], crewmates=["c"], repetitions=2)
    specs = enumerate_grid(g)
    assert {(s.imposter_model, s.crewmate_model) for s in specs} == {("a", "c"), ("b", "c")} and len(
        specs
    ) == 4
    with pytest.raises(ValueError, match="imposters: 'z' is not a pool name"):
        _grid(imposters=["z"])


def test_shards_cover_the_grid_exactly_once():
    specs = enumerate_grid(_grid(cases=[{"name": "x"}, {"name": "y"}], repetitions=5))
    for n in (1, 2, 3, 7, 100):
        seen = Counter(s.match_id for i in range(n) for s in in_shard(specs, i, n))
        assert set(seen) == {s.match_id for s in specs} and set(seen.values()) == {1}
    assert parse_shard("2/8") == (2, 8)
    for bad in ("8/8", "-1/3", "a/b", "3"):
        with pytest.raises(ValueError, match="write it as I/N"):
            parse_shard(bad)


def test_bad_grid_configs_are_refused_with_the_field():
    with pytest.raises(ValueError, match="pool: the name 'a' is used twice"):
        GridConfig.model_validate({"pool": [{"name": "a"}, {"name": "a"}]})
    with pytest.raises(ValueError, match="seeds: 1 given for 2 repetitions"):
        _grid(repetitions=2, seeds=[1])
    with pytest.raises(ValueError, match="use letters, digits"):
        GridConfig.model_validate({"pool": [{"name": "gpt/4"}]})


_finished = finished_matches


def _planned(run: Path) -> list[str]:
    return sorted(json.loads(x)["match_id"] for x in (run / F.GRID_FILE).read_text().splitlines())


def test_sharded_runs_share_one_folder_and_cover_every_match(tmp_path, capsys):
    run = tmp_path / "run"
    for i in range(3):
        args = ["collect", "--config", SMOKE, "--out", str(run), "--shard", f"{i}/3", "--workers", "1", *FAST]
        assert main(args + (["--resume"] if i else [])) == 0
    assert _finished(run) == _planned(run) and len(_planned(run)) == 36
    s = json.loads((run / F.SUMMARY_JSON).read_text())
    assert s["matches"] == 36 and sum(s["outcomes"].values()) == 36
    assert sum(m["n"] for m in s["matchups"]) == 36 and len(s["matchups"]) == 9
    for model, roles in s["win_rates"].items():
        assert roles["crewmate"]["n"] == roles["imposter"]["n"] == 12
    assert (run / F.MATCHUPS_PNG).is_file() and (run / F.MATCHUPS_CSV).read_text().count("\n") == 4
    h = json.loads(next((run / F.MATCHES_DIR).iterdir()).joinpath(F.MATCH_HEADER).read_text())
    assert h[F.GRID]["case"] in ("sem-react", "win-hier") and h["calls"]["calls"] > 0
    out = capsys.readouterr().out
    assert "collected 36/36 matches" in out


def test_rerun_needs_resume_and_resume_needs_the_same_config(tmp_path, capsys):
    run = tmp_path / "run"
    base = ["collect", "--config", SMOKE, "--out", str(run), "--shard", "0/12", *FAST]
    assert main(base) == 0
    assert main(base) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main(base + ["--resume", "--set", "world.game.max_steps=9"]) == 2
    assert "the config differs from the run's at world.game.max_steps" in capsys.readouterr().err
    assert main(base + ["--resume"]) == 0  # nothing left to play in this shard
    assert "0 played now" in capsys.readouterr().out


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    run = tmp_path / "run"
    half = ["--set", "world.game.max_steps=30", "--set", "grid.repetitions=1"]  # 18 matches: the suite's time
    cmd = [sys.executable, "-m", "mau", "collect", "--config", SMOKE, "--out", str(run), "--workers", "2",
           *half, "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_group_when(proc, lambda: len(_finished(run)) >= 3, 120)  # some, not all, matches are done
    done_before = _finished(run)
    assert 3 <= len(done_before) < len(_planned(run))
    before = {m: (run / F.MATCHES_DIR / m / F.MATCH_HEADER).read_text() for m in done_before}
    assert main(["collect", "--config", SMOKE, "--out", str(run), "--resume", "--workers", "2", *half,
                 "--no-progress"]) == 0
    assert _finished(run) == _planned(run) and len(_planned(run)) == 18
    assert not [p for p in (run / F.MATCHES_DIR).iterdir() if p.name.startswith(".")]  # no staging leftovers
    for m, text in before.items():  # finished matches were kept, not replayed
        assert (run / F.MATCHES_DIR / m / F.MATCH_HEADER).read_text() == text
    for m in _finished(run):
        lines = (run / F.MATCHES_DIR / m / F.EVENTS_FILE).read_text().splitlines()
        assert json.loads(lines[-1])["type"] == "match_end"


def test_wilson_interval():
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-3) and hi == pytest.approx(0.7634, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0)


def test_shards_starting_together_create_the_run_once(tmp_path):
    run = tmp_path / "run"
    procs = [
        subprocess.Popen(
            [
                sys.executable, "-m", "mau", "collect", "--config", SMOKE, "--out", str(run), "--shard",
                f"{i}/4", "--resume", "--workers", "1", "--set", "world.game.max_steps=3", "--set",
                "grid.repetitions=1", "--no-progress",
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert _finished(run) == _planned(run)


def test_endpoint_changes_do_not_block_resume(tmp_path):
    run = tmp_path / "run"
    base = ["collect", "--config", SMOKE, "--out", str(run), "--shard", "0/12", *FAST]
    assert main(base) == 0
    assert main(base + ["--resume", "--set", "grid.pool.0.model.base_url=http://node7:8000/v1",
                        "--set", "grid.pool.0.model.concurrency=4"]) == 0
