"""mau quickstart end to end, shrunk: tiny model, a few short matches, one dataset, two training steps, one eval."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from mau.cli import main  # noqa: E402


def test_quickstart_runs_the_whole_loop(tmp_path, capsys):
    out = tmp_path / "qs"
    args = ["quickstart", "--out", str(out),
            "--set", 'collect_set=["grid.repetitions=1", "grid.seeds=[11]", "world.game.max_steps=6"]',
            "--set", "filters=[all]",  # matches this short end in TIMEOUT: no crew win, no vote
            "--set", 'train_set=["training.max_steps=2", "data.max_eval_examples=4", "training.save_steps=2"]',
            # two training steps leave the tiny model's greedy answers unchanged, which the adapter guard rightly
            # reports as an inactive adapter (its own tests: tests/test_adapter_guard.py)
            "--set", 'eval_set=["seeds=[101]", "world.game.max_steps=2", "adapter_guard=false"]',
            "--set", "workers=1"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "[5/5]" in text and "quickstart done" in text and "| baseline |" in text and "| teacher |" in text
    assert "AUROC" in text.split("Results (pooled")[1]  # the detection metrics next to the win rate
    results = json.loads((out / "eval" / "results.json").read_text())
    assert results and (out / "eval" / "results.png").is_file() and (out / "eval" / "results.md").is_file()
    assert (out / "train" / "all" / "adapter" / "adapter_config.json").is_file()
    assert (out / "datasets" / "all" / "dataset.json").is_file()
    assert main(args) == 2  # a finished quickstart is not overwritten
    assert main(args + ["--resume"]) == 0  # ... but can be resumed (every stage is kept)


def test_quickstart_student_preset_fills_only_what_was_left_at_its_default(tmp_path, capsys):
    from mau.commands.quickstart import STUDENT_PRESET, QuickstartConfig
    from mau.commands.quickstart import main as quickstart_main
    from mau.options import RunOptions

    quickstart_main(QuickstartConfig(student=True, out=str(tmp_path / "q")), RunOptions(dry_run=True))
    line = capsys.readouterr().out
    assert "CPU student" in line and STUDENT_PRESET["collect_config"] in line
    assert STUDENT_PRESET["train_config"] in line
    own = QuickstartConfig(student=True, out=str(tmp_path / "q"), collect_config="configs/collect/smoke.yaml")
    quickstart_main(own, RunOptions(dry_run=True))
    assert "collect configs/collect/smoke.yaml" in capsys.readouterr().out  # a field set by hand wins
    assert not (tmp_path / "q").exists()
