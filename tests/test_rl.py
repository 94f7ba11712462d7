"""``mau rl`` (mau/rl): its config errors, the decision rows and the reward function TRL calls (forks of a
recorded match), and short decision-level GRPO runs on the tiny model (CPU): a run that trains, and one step
that is resumed to a second. The reward terms themselves: tests/test_replay.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main
from mau.errors import MauError
from mau.replay.decisions import decision_rows, to_prompt
from mau.rl.config import DecisionsSection
from mau.rl.grpo import ForkReward, completion_text
from tests.ml_fixtures import tiny_model_dir  # noqa: F401 - the fixture (torch only when used)

NO_FRAMES = ["--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false"]


def needs_ml() -> None:
    for m in ("torch", "torchvision", "trl", "peft", "datasets"):
        pytest.importorskip(m)


@pytest.fixture(scope="module")
def voted_match(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ARIA match of the scripted expert (seed 1, no frames), which has crewmate VOTE decisions."""
    match = tmp_path_factory.mktemp("rl") / "match"
    assert main(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "1", "--out", str(match),
                 *NO_FRAMES]) == 0
    return match


def test_config_errors_are_one_line_and_name_the_field(tmp_path, capsys):
    base = ["rl", "--config", "configs/rl/tiny.yaml", "--out", str(tmp_path / "rl")]
    for bad, field in ((["--set", "grpo.nope=1"], "grpo.nope"), (["--set", "grpo.num_generations=1"],
                                                                   "grpo.num_generations"),
                       (["--set", "reward.horizon=game"], "reward.horizon")):
        assert main(base + bad) == 2
        err = capsys.readouterr().err.strip()
        assert field in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "rl").exists()  # nothing is written for a bad config
    with pytest.raises(MauError, match="decisions.runs is empty"):
        decision_rows(DecisionsSection())


def test_decision_rows_are_the_recorded_crewmate_votes(voted_match):
    calls = [json.loads(x) for x in (voted_match / F.CALLS_FILE).read_text().splitlines()]
    votes = [c for c in calls if c[F.MODULE] == "vote" and c[F.ROLE] == "crewmate"]
    rows = decision_rows(DecisionsSection(runs=[str(voted_match)]))
    assert [r["call_id"] for r in rows] == [c[F.CALL_ID] for c in votes] and votes
    assert rows[0]["prompt"] == to_prompt(votes[0][F.MESSAGES]) and rows[0]["match"] == str(
        voted_match.resolve()
    )
    assert len(decision_rows(DecisionsSection(runs=[str(voted_match)], max_decisions=2))) == 2
    with pytest.raises(MauError, match="no crewmate vote calls"):  # its seed is held out
        decision_rows(DecisionsSection(runs=[str(voted_match)], exclude_seeds=[1]))


def test_reward_function_forks_each_completion_and_logs_its_terms(voted_match, tmp_path):
    from mau.replay.reward import ForkRewarder, RewardConfig

    header = json.loads((voted_match / F.MATCH_HEADER).read_text())
    row = decision_rows(DecisionsSection(runs=[str(voted_match)], max_decisions=1))[0]
    imposter = next(n for n, r in header[F.ROLES].items() if r == "imposter")
    completions = [[{"role": "assistant", "content": json.dumps({"vote_target": imposter})}],  # TRL's shape
                   json.dumps({"vote_target": "skip"}), "no json at all"]
    assert [completion_text(c) for c in completions[1:]] == completions[1:]
    log = tmp_path / "rewards.jsonl"
    cfg = RewardConfig(vote_skip=0.1)
    reward = ForkReward(ForkRewarder(cfg), log)
    r = reward(prompts=[row["prompt"]] * 3, completions=completions, match=[row["match"]] * 3,
               call_id=[row["call_id"]] * 3)
    # named an imposter, whatever the meeting did
    assert r[0] >= cfg.vote_imposter + cfg.meeting_ejects_crewmate
    assert r[2] == cfg.unparseable  # a fallback gets the penalty and nothing else
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["reward"] for x in rows] == r and [x["vote_target"] for x in rows[:2]] == [imposter, "skip"]
    assert rows[0]["terms"]["vote_imposter"] == cfg.vote_imposter and rows[1]["terms"]["vote_skip"] == 0.1
    assert rows[2]["terms"] == {"unparseable": cfg.unparseable} and rows[2]["fallback"]
    assert reward.rewarder.forks == 3 and reward.__name__ == "fork_reward"


def test_one_grpo_step_then_resume_to_two(voted_match, tmp_path, tiny_model_dir, capsys):  # noqa: F811
    needs_ml()
    from mau.models.tiny import build_voter_model

    voter = build_voter_model(tiny_model_dir, tmp_path / "voter")
    out = tmp_path / "rl"
    args = [
        "rl", "--config", "configs/rl/tiny.yaml", "--out", str(out), "--set",
        f"decisions.runs=[{voted_match}]", "--set", "decisions.max_decisions=1", "--set",
        f"policy.path={voter}", "--set", "grpo.save_steps=1", "--set", "grpo.per_device_batch_size=4",
        "--set", "grpo.max_completion_length=12", "--set", "output.merge=false",
    ]
    assert main([*args, "--set", "grpo.max_steps=1"]) == 0
    one = json.loads((out / "rl.json").read_text())
    assert one["steps"] == 1 and one["forks"] == 4 and (out / "checkpoint-1").is_dir()
    assert (out / F.RESOLVED_CONFIG).is_file() and "decisions" in json.loads(
        (out / F.PROVENANCE_FILE).read_text()
    )
    capsys.readouterr()
    assert main([*args, "--set", "grpo.max_steps=2"]) == 2  # a finished run is kept unless --resume
    assert "pass --resume" in capsys.readouterr().err
    assert main([*args, "--resume", "--set", "grpo.max_steps=1"]) == 2  # nothing left to train
    assert "already trained 1 of grpo.max_steps=1" in capsys.readouterr().err
    assert main([*args, "--resume", "--set", "grpo.max_steps=2"]) == 0
    two = json.loads((out / "rl.json").read_text())
    assert two["steps"] == 2 and two["forks"] == 4  # the second step only: the first is in the checkpoint
    rewards = [json.loads(x) for x in (out / "rewards.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rewards] == [0] * 4 + [1] * 4
    assert [r["step"] for r in map(json.loads, (out / "trainer_log.jsonl").read_text().splitlines())
            if "reward" in r] == [1, 2]
    assert main(["rl", "--config", "configs/rl/tiny.yaml", "--out", str(tmp_path / "voter"),
                 "--set", f"decisions.runs=[{voted_match}]", "--set", f"policy.path={voter}"]) == 2
    assert "is not a GRPO run folder" in capsys.readouterr().err  # never writes into a folder it did not make


def test_short_grpo_run_changes_the_adapter_and_logs_rewards(tmp_path, tiny_model_dir):  # noqa: F811
    needs_ml()
    from mau.models.tiny import build_voter_model
    from tests.ml_fixtures import build_tiny_adapter

    match = tmp_path / "match"
    assert (
        main(
            [
                "play", "--config", "configs/play/aria_scripted.yaml", "--seed", "1", "--out", str(match),
                "--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false",
            ]
        )
        == 0
    )
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
    needs_ml()
    from mau.models.tiny import build_voter_model

    match = tmp_path / "match"
    assert (
        main(
            [
                "play", "--config", "configs/play/aria_scripted.yaml", "--seed", "1", "--out", str(match),
                "--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false",
            ]
        )
        == 0
    )
    voter = build_voter_model(tiny_model_dir, tmp_path / "voter")
    calls = [json.loads(x) for x in (match / "calls.jsonl").read_text().splitlines()]
    vote = next(c for c in calls if c["module"] == "vote" and c["role"] == "crewmate")
    out = tmp_path / "fork"
    assert (
        main(
            [
                "fork", str(match), "--step", str(vote["step"]), "--agent", vote["agent"], "--model",
                str(voter), "--n", "4", "--horizon", "meeting", "--set", "model.device=cpu", "--set",
                "model.max_tokens=16", "--set", "model.temperature=1.0", "--out", str(out),
            ]
        )
        == 0
    )
    h = json.loads((out / "fork.json").read_text())
    sampled = h["branches"][1:]  # branch 0 is the recorded answer
    assert len(sampled) == 4 and all(b["answer"].startswith('{"vote_target": "') for b in sampled)
    assert h["config"]["model"]["backend"] == "hf"
