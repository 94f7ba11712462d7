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
