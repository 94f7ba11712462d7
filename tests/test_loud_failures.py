"""Failures cannot pass as results (issue 9, part 5): the preflight check, fallback shares that count an
arm's own calls, failed arms, a non-zero exit; and `mau dataset` with the same call twice."""

from __future__ import annotations

import json
from pathlib import Path

from mau import schema as F
from mau.cli import main
from mau.harness.mock_server import mock_server
from mau.procs import free_port

REPO = Path(__file__).resolve().parents[1]
SMOKE = str(REPO / "configs" / "eval" / "smoke.yaml")
FAST = ["--set", "world.game.max_steps=12", "--set", "seeds=[5]", "--no-progress", "--workers", "1"]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err, err
    return err


def test_a_missing_adapter_fails_the_eval_at_start_up_in_one_line(tmp_path, capsys):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = tmp_path / "eval"
    assert (
        main(
            [
                "eval", "--config", SMOKE, "--out", str(out), *FAST, "--set", "arms.baseline.backend=hf",
                "--set", f"arms.baseline.model={model}", "--set",
                f"arms.baseline.adapter={tmp_path / 'nope'}",
            ]
        )
        == 2
    )
    err = _one_line_error(capsys)
    assert "arm baseline" in err and "adapter" in err and "does not exist" in err
    assert not out.exists()  # stopped before the run folder


def test_a_dead_server_fails_the_eval_and_the_collect_at_start_up(tmp_path, capsys):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["eval", "--config", SMOKE, "--out", str(tmp_path / "e"), *FAST,
                 "--set", "arms.baseline.backend=openai", "--set", f"arms.baseline.base_url={dead}"]) == 2
    err = _one_line_error(capsys)
    assert "arm baseline" in err and dead in err and "does not answer" in err
    assert main(["collect", "--config", str(REPO / "configs" / "collect" / "smoke.yaml"), "--out",
                 str(tmp_path / "c"), "--no-progress", "--set", "grid.pool.0.model.backend=openai",
                 "--set", f"grid.pool.0.model.base_url={dead}"]) == 2
    assert "pool cautious" in _one_line_error(capsys)


def test_fallback_share_counts_the_arms_own_calls_and_fails_the_eval(tmp_path, capsys):
    """arm_modules: [vote] with an arm whose every answer is malformed: the share is 100 % of the arm's own
    (vote) calls, not ~1 % of all calls; the eval warns, marks the arm and exits 1 unless
    --allow-fallbacks."""
    with mock_server(str(tmp_path / "server.log"), faults="malformed=1.0") as srv:
        argv = [
            "eval", "--config", SMOKE, *FAST, "--set", "arm_modules=[vote]", "--set",
            "arms.scripted-b.backend=openai", "--set", f"arms.scripted-b.base_url={srv.base_url}", "--set",
            "world.game.max_steps=40",
        ]
        assert main([*argv, "--out", str(tmp_path / "a")]) == 1
        err = capsys.readouterr().err
        assert "arm scripted-b failed: every one of its" in err and "own calls fell back" in err
        assert "baseline" not in err
        res = json.loads((tmp_path / "a" / F.RESULTS_JSON).read_text())
        h = res["arm_health"]
        assert h["scripted-b"]["over"] and h["scripted-b"]["share"] == 1.0 and not h["baseline"]["over"]
        # it answered, but every answer fell back: its games measure the fallback rule, so it is not scored
        assert h["scripted-b"]["failed"] and h["scripted-b"]["answered"] > 0
        md = (tmp_path / "a" / F.RESULTS_MD).read_text()
        assert "| scripted-b | FAILED (no usable answer) |" in md
        share = next(c for c in res["cells"] if c["arm"] == "scripted-b" and c["imposter"] == "all")
        assert share["metrics"]["fallback_share"]["value"] == 1.0
        assert main([*argv, "--out", str(tmp_path / "b"), "--allow-fallbacks"]) == 0


def test_arm_health_marks_an_arm_that_never_answered_as_failed():
    from mau.eval.metrics import MatchStats, arm_health

    def ms(arm, calls, fb, answered):
        return MatchStats("m", arm, "i", 0, "TIMEOUT", 2, 0, 0, 0, 0, arm_calls=calls, arm_fallbacks=fb,
                          arm_answered=answered)

    h = arm_health(
        [ms("dead", 10, 10, 0), ms("ok", 10, 1, 10), ms("bad", 10, 6, 10), ms("all", 10, 10, 10)], 0.5
    )
    assert h["dead"]["failed"] and h["dead"]["over"]
    assert h["all"]["failed"] and h["all"]["over"]  # it answered, but every answer fell back: not scored
    assert not h["ok"]["over"] and h["ok"]["share"] == 0.1
    assert h["bad"]["over"] and not h["bad"]["failed"]


def test_dataset_keeps_a_call_seen_twice_once_and_refuses_a_clash(tmp_path, capsys):
    import shutil

    from datasets import load_from_disk

    from tests.match_factory import MatchSpec

    m = MatchSpec("dup", outcome="CREWMATE WIN")
    for k in range(3):
        m.call("Steve", "plan", 100 * k)
    a = tmp_path / "run_a"
    m.write(a)
    b = tmp_path / "run_b"
    shutil.copytree(a, b)
    out = tmp_path / "ds"
    assert main(["dataset", "--runs", str(a), str(b), "--filter", "bcwin", "--out", str(out)]) == 0
    dd = load_from_disk(str(out))
    assert sum(dd[s].num_rows for s in dd) == 3
    assert "already read from another input" in capsys.readouterr().err
    assert json.loads((out / F.DATASET_HEADER).read_text())["skipped"]["duplicate_calls"] == 3
    calls = b / "dup" / F.CALLS_FILE
    calls.write_text(calls.read_text().replace("What do you do next?", "Something else?"))
    assert (
        main(["dataset", "--runs", str(a), str(b), "--filter", "bcwin", "--out", str(tmp_path / "ds2")]) == 2
    )
    assert "other content" in _one_line_error(capsys)
