"""wandb in offline mode (WANDB_MODE=offline, no network): ``mau train`` with ``logging.report_to: wandb``
leaves the offline run in its run folder with the loss curve (the same losses as trainer_log.jsonl); ``mau
eval`` and
``mau collect`` log their results tables to the same project when configured. wandb comes with the ml
extra."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("wandb")

from mau.cli import main
from mau.wandb_log import read_offline_run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var in ("WANDB_PROJECT", "WANDB_DIR", "WANDB_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _run_folder(out: Path) -> Path:
    runs = sorted((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, list((out / "wandb").glob("*")) if (out / "wandb").exists() else f"no {out}/wandb"
    return runs[0]


def _read(out: Path, done, timeout_s: float = 60.0) -> dict:
    """The offline run, once ``done(run)`` holds: wandb-core writes the run file in the background and may
    still be flushing it when ``finish()`` has returned."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        run = read_offline_run(_run_folder(out))
        if done(run) or time.monotonic() > deadline:
            return run
        time.sleep(0.5)


def test_train_writes_the_offline_run_with_the_loss_curve(offline, tmp_path, monkeypatch):
    pytest.importorskip("trl")
    import os

    from mau.models.tiny import build_tiny_model
    from tests.bc_factory import build_bc_dataset
    from tests.ml_fixtures import tiny_model_dir  # noqa: F401

    model = tmp_path / "tiny"
    build_tiny_model(model, seed=0)
    data = build_bc_dataset(tmp_path / "ds", n_train=8, n_validation=2, n_test=2)
    out = tmp_path / "run"
    # _wandb_env sets these with setdefault: let monkeypatch restore them afterwards
    monkeypatch.setenv("WANDB_PROJECT", "mau-test")
    monkeypatch.setenv("WANDB_DIR", str(out))
    assert (
        main(
            [
                "train", "--config", str(REPO / "configs" / "train" / "tiny.yaml"), "--out", str(out),
                "--set", f"model.path={model}", "--set", f"data.dataset={data}", "--set",
                "training.max_steps=4", "--set", "training.logging_steps=1", "--set",
                "logging.report_to=wandb",
            ]
        )
        == 0
    )
    run = _read(out, lambda r: sum("train/loss" in h for h in r["history"]) >= 4)
    assert run["project"] == os.environ["WANDB_PROJECT"] and run["name"] == out.name
    curve = [(h["train/global_step"], h["train/loss"]) for h in run["history"] if "train/loss" in h]
    logged = [
        (r["step"], r["loss"])
        for r in map(json.loads, (out / "trainer_log.jsonl").read_text().splitlines())
        if "loss" in r
    ]
    assert len(curve) == 4 and [s for s, _ in curve] == [1, 2, 3, 4]
    assert [s for s, _ in logged] == [1, 2, 3, 4]
    assert [v for _, v in curve] == pytest.approx([v for _, v in logged])  # the loss curve, step by step


def test_eval_logs_its_results_table(offline, tmp_path):
    out = tmp_path / "eval"
    assert (
        main(
            [
                "eval", "--config", str(REPO / "configs" / "eval" / "smoke.yaml"), "--out", str(out),
                "--workers", "1", "--set", "seeds=[5]", "--set", "world.game.max_steps=12", "--no-progress",
                "--set", "logging.report_to=wandb",
            ]
        )
        == 0
    )
    run = _read(out, lambda r: any("results/_type" in h for h in r["history"]))
    assert run["project"] == "mau"  # mau train's default project: curves and results side by side
    tables = [h for h in run["history"] if "results/_type" in h]
    rows = (out / "results.csv").read_text().strip().splitlines()
    assert (
        len(tables) == 1 and tables[0]["results/nrows"] == len(rows) - 1 and tables[0]["results/ncols"] == 8
    )


def test_collect_logs_its_summary_tables(offline, tmp_path):
    out = tmp_path / "collect"
    assert main(["collect", "--config", str(REPO / "configs" / "collect" / "smoke.yaml"), "--out", str(out),
                 "--shard", "0/9", "--workers", "1", "--set", "world.game.max_steps=8", "--no-progress",
                 "--set", "logging.report_to=wandb", "--set", "logging.wandb_project=mau-collect"]) == 0
    run = _read(out, lambda r: sum(k.endswith("/_type") for h in r["history"] for k in h) >= 2)
    assert run["project"] == "mau-collect"
    names = {k.split("/")[0] for h in run["history"] for k in h if k.endswith("/_type")}
    assert names == {"matchups", "win_rates"}
    summary = json.loads((out / "summary.json").read_text())
    t = next(h for h in run["history"] if "matchups/_type" in h)
    assert t["matchups/nrows"] == len(summary["matchups"])


def test_report_to_none_writes_no_wandb_folder(offline, tmp_path):
    out = tmp_path / "eval"
    assert (
        main(
            [
                "eval", "--config", str(REPO / "configs" / "eval" / "smoke.yaml"), "--out", str(out),
                "--workers", "1", "--set", "seeds=[5]", "--set", "world.game.max_steps=12", "--no-progress",
            ]
        )
        == 0
    )
    assert not (out / "wandb").exists()
