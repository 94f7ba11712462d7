"""``mau rl``: a short decision-level GRPO run on the tiny model (CPU), rewards from forks of a recorded match."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("trl")
pytest.importorskip("peft")
pytest.importorskip("datasets")

from mau.cli import main  # noqa: E402
from mau.tiny import build_voter_model  # noqa: E402
from tests.ml_fixtures import tiny_model_dir  # noqa: E402,F401 - the fixture


def test_short_grpo_run_changes_the_adapter_and_logs_rewards(tmp_path, tiny_model_dir):  # noqa: F811
    from tests.ml_fixtures import build_tiny_adapter

    match = tmp_path / "match"
    assert main(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "1", "--out", str(match),
                 "--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false"]) == 0
    voter = build_voter_model(tiny_model_dir, tmp_path / "voter")
    bc = tmp_path / "bc-adapter"  # a near-identity adapter: exercises the merge of the start policy
    build_tiny_adapter(voter, bc, seed=1, scale=1e-4)
    out = tmp_path / "rl"
    assert main(["rl", "--config", "configs/rl/tiny.yaml", "--out", str(out),
                 "--set", f"decisions.runs=[{match}]", "--set", "decisions.max_decisions=2",
                 "--set", f"policy.path={voter}", "--set", f"policy.adapter={bc}",
                 "--set", "grpo.max_steps=2", "--set", "grpo.per_device_batch_size=4",
                 "--set", "grpo.max_completion_length=12", "--set", "grpo.learning_rate=0.001"]) == 0
    summary = json.loads((out / "rl.json").read_text())
    assert summary["steps"] == 2 and summary["forks"] == 8
    log = [json.loads(x) for x in (out / "trainer_log.jsonl").read_text().splitlines()]
    steps = [r for r in log if "reward" in r]
    assert len(steps) == 2
    assert any(r["reward_std"] > 0 for r in steps) and any(r["loss"] != 0 for r in steps)
    rewards = [json.loads(x) for x in (out / "rewards.jsonl").read_text().splitlines()]
    assert len(rewards) == 8 and len({r["reward"] for r in rewards}) > 1
    assert sum(not r["fallback"] for r in rewards) >= 4  # it answers in the format (a dead name falls back)
    checks = json.loads((out / "checks.json").read_text())
    assert checks["vision_unchanged"] and checks["trainable_changed"] == checks["trainable_tensors"] > 0
    from safetensors.torch import load_file

    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert any("lora_B" in k and v.abs().max() > 0 for k, v in weights.items())  # B starts at zero
    assert (out / "model" / "config.json").is_file()


def test_fork_samples_alternative_answers_from_a_model(tmp_path, tiny_model_dir):  # noqa: F811
    """mau fork --model: N answers sampled from a local model given the decision's recorded prompt."""
    match = tmp_path / "match"
    assert main(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "1", "--out", str(match),
                 "--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false"]) == 0
    voter = build_voter_model(tiny_model_dir, tmp_path / "voter")
    calls = [json.loads(x) for x in (match / "calls.jsonl").read_text().splitlines()]
    vote = next(c for c in calls if c["module"] == "vote" and c["role"] == "crewmate")
    out = tmp_path / "fork"
    assert main(["fork", str(match), "--step", str(vote["step"]), "--agent", vote["agent"], "--model", str(voter),
                 "--n", "4", "--horizon", "meeting", "--set", "model.device=cpu", "--set", "model.max_tokens=16",
                 "--set", "model.temperature=1.0", "--out", str(out)]) == 0
    h = json.loads((out / "fork.json").read_text())
    sampled = h["branches"][1:]  # branch 0 is the recorded answer
    assert len(sampled) == 4 and all(b["answer"].startswith('{"vote_target": "') for b in sampled)
    assert h["config"]["model"]["backend"] == "hf"
