"""The configs of the CPU GRPO experiment (docs/experiments.md) load, and its chain is consistent: the GRPO
stage starts from the BC stage's output and reads the collection, and no evaluation seed is a training
seed."""

from __future__ import annotations

from pathlib import Path

from mau.collect.run import CollectConfig
from mau.config import load_config
from mau.eval.config import EvalConfig
from mau.rl.config import RLConfig
from mau.train.config import TrainConfig

C = "configs/{}/grpo_cpu.yaml"
OUT = {"collect": "runs/exp14/collect", "train": "runs/exp14/train", "rl": "runs/exp14/rl"}


def test_grpo_cpu_chain() -> None:
    collect = load_config(CollectConfig, C.format("collect"))
    train = load_config(TrainConfig, C.format("train"))
    rl = load_config(RLConfig, C.format("rl"))
    ev = load_config(EvalConfig, C.format("eval"))
    assert (
        train.lora.full_finetune and rl.policy.path == OUT["train"] + "/model" and rl.policy.adapter is None
    )
    assert rl.decisions.runs == [OUT["collect"]] and rl.decisions.modules == ["vote"]
    assert ev.arms["bc"].model == OUT["train"] + "/model" and ev.arms["grpo"].model == OUT["rl"] + "/model"
    assert ev.arm_modules == ["vote"] and ev.crewmate_aria.module_temperature["vote"] == 0
    held_out = set(ev.seeds or [])
    assert held_out and not held_out & set(collect.grid.seeds or [])
    assert held_out <= set(rl.decisions.exclude_seeds)


def test_detect_cpu_chain() -> None:
    """The detection experiment: train reads the collection's BCvote, eval compares the untrained model with
    the trained one, both read out by the vote read-out, on seeds never collected."""
    d = "configs/{}/detect_cpu.yaml"
    collect = load_config(CollectConfig, d.format("collect"))
    train = load_config(TrainConfig, d.format("train"))
    ev = load_config(EvalConfig, d.format("eval"))
    assert train.lora.full_finetune and train.data.dataset == "runs/detect/datasets/bcvote"
    assert ev.arms["untrained"].model == train.model.path and ev.arms["bc"].model == "runs/detect/train/model"
    assert ev.baseline_arm == "untrained" and ev.arm_modules == ["vote"]
    assert ev.crewmate_aria.probes.enabled and ev.crewmate_aria.probes.readout == "vote"
    assert ev.crewmate_aria.module_temperature["vote"] == 0
    held_out = set(ev.seeds or [])
    assert len(held_out) == 40 and not held_out & set(collect.grid.seeds or [])
    assert len(collect.grid.seeds or []) == collect.grid.repetitions == 120


def test_student_cpu_chain() -> None:
    """The CPU student's experiment (docs/student.md): the student's compact VOTE prompts are collected,
    trained on and evaluated on; train, GRPO and eval read each other's outputs; no evaluation seed was
    collected."""
    from mau.student.config import StudentRLConfig, StudentTrainConfig

    collect = load_config(CollectConfig, "configs/collect/student.yaml")
    train = load_config(StudentTrainConfig, "configs/student/train.yaml")
    rl = load_config(StudentRLConfig, "configs/student/rl.yaml")
    ev = load_config(EvalConfig, "configs/eval/student_cpu.yaml")
    assert all(c.crewmate.prompt_profile == {"vote": "compact"} for c in collect.grid.cases)
    assert ev.crewmate_aria.prompt_profile == {"vote": "compact"}
    assert train.data.dataset == "runs/student/bcvote" and rl.policy.path == "runs/student/train/model"
    assert rl.grpo.feature_cache == "runs/student/train/features.pt" and rl.decisions.runs == [
        "runs/student/collect"
    ]
    assert (
        ev.arms["untrained"].model == train.model.path and ev.arms["bc"].model == "runs/student/train/model"
    )
    assert ev.arms["grpo"].model == "runs/student/rl/model"
    assert all(
        ev.arms[a].backend == "lm" and ev.arms[a].answer == "candidates" for a in ("untrained", "bc", "grpo")
    )
    assert ev.baseline_arm == "untrained" and ev.arm_modules == ["vote"]
    assert ev.crewmate_aria.probes.enabled and ev.crewmate_aria.probes.readout in ("vote", "auto")
    n = len(collect.grid.pool) ** 2 * len(collect.grid.cases) * collect.grid.repetitions
    assert collect.grid.seed_scheme == "per_match" and n == 180
    held_out = set(ev.seeds or [])
    assert len(held_out) == 40 and not held_out & set(range(collect.grid.seed, collect.grid.seed + n))


def test_bc_chain_and_no_config_shares_a_seed_with_its_eval() -> None:
    """The clone experiment (docs/student.md, docs/experiments.md): the curve reads the BC grid's BCvote and
    the held-out grid; the table's eval plays the students the curve and the trainings write; and no training,
    curve or table seed is a seed the curve or the table scores on (nor the demo's)."""
    from mau.collect.grid import enumerate_grid
    from mau.commands.quickstart import QuickstartConfig
    from mau.config import parse_overrides
    from mau.student.config import StudentCurveConfig

    def seeds(path: str, sets: list[str] | None = None) -> set[int]:
        grid = load_config(CollectConfig, path, parse_overrides(sets or [])).grid
        return {s.seed for s in enumerate_grid(grid)}

    train, held = seeds("configs/collect/bc_ladder.yaml"), seeds("configs/collect/heldout_ladder.yaml")
    curve = load_config(StudentCurveConfig, "configs/student/curve.yaml")
    table = load_config(EvalConfig, "configs/eval/bc_table.yaml")
    bc = load_config(StudentCurveConfig, "configs/student/bc.yaml")
    assert len(train) == 1344 and len(held) == 210
    assert curve.data.dataset == "runs/bc/bcvote" and curve.heldout.runs == ["runs/bc/heldout"]
    assert bc.data.dataset == "runs/bc/bcwin" and bc.training.feature_cache == curve.training.feature_cache
    # the table's students: the 1,000-row points, saved by the curve
    assert bc.heldout.runs == curve.heldout.runs and bc.sizes == [1000] and 1000 in curve.sizes
    assert set(curve.save_sizes or []) >= {1000} and curve.objectives["belief"].sizes == [1000, 3000]
    assert bc.training.model_dump(exclude={"vote_weight", "belief_weight"}) == \
        curve.training.model_dump(exclude={"vote_weight", "belief_weight"})
    students = {f"runs/bc/curve/points/{o}_1000_model" for o in ("vote", "vote_belief")} | \
        {f"runs/bc/st_{f}/points/vote_{bc.sizes[0]}_model" for f in ("bcwin", "bcwin_vote")}
    assert {table.arms[a].model for a in ("distilled", "bcwin", "bcvote", "bcwin+vote")} == students
    assert not train & held  # the curve scores matches no point trained on
    eval_seeds = set(table.seed_list())
    assert len(eval_seeds) == 20 and not eval_seeds & (train | held)
    assert table.bc_rows is not None and table.bc_rows.dataset == curve.data.dataset
    assert table.arms["untrained"].model == curve.model.path and table.baseline_arm == "untrained"
    assert table.arm_modules == ["vote"] and table.crewmate_aria.state == "ego"
    assert all(table.arms[a].backend == "lm" and table.arms[a].answer == "candidates"
               for a in ("untrained", "distilled", "bcwin", "bcvote", "bcwin+vote"))
    assert {a: table.arm_seeds.get(a, 20) for a in table.arms} == {
        "untrained": 20, "distilled": 20, "teacher": 20, "bcwin": 10, "bcvote": 10, "bcwin+vote": 10}
    # the curve on whole-evidence prompts: the same grids with the budget raised (the curve's seeds)
    long_budget = ["grid.cases.0.crewmate.compact_evidence_chars=1200"]
    long = load_config(StudentCurveConfig, "configs/student/curve_long.yaml")
    assert seeds("configs/collect/bc_ladder.yaml", long_budget) == train
    assert seeds("configs/collect/heldout_ladder.yaml", long_budget) == held
    for path in ("configs/collect/bc_ladder.yaml", "configs/collect/heldout_ladder.yaml"):
        case = load_config(CollectConfig, path, parse_overrides(long_budget)).grid.cases[0]
        aria = case.crewmate
        assert aria.compact_evidence_chars == 1200 and aria.prompt_profile == {"vote": "compact"}
    assert long.data.dataset == "runs/bc42/bcvote" and long.heldout.runs == ["runs/bc42/heldout"]
    assert long.training.feature_cache != curve.training.feature_cache  # other prompts, other features
    assert long.training.model_dump() == curve.training.model_dump(exclude={"feature_cache"}) | {
        "feature_cache": long.training.feature_cache}
    # the pointer read-out: the curve's data, held-out prompts and schedule, the read-out alone changed; its
    # live table plays the saved 1,000-row student on the paper's table's seeds
    ptr = load_config(StudentCurveConfig, "configs/student/curve_pointer.yaml")
    assert (ptr.data, ptr.heldout, ptr.model) == (curve.data, curve.heldout, curve.model)
    assert ptr.training.readout == "pointer" and curve.training.readout == "token"
    assert ptr.training.model_dump(exclude={"readout", "head_reads"}) == \
        curve.training.model_dump(exclude={"readout", "head_reads"})
    # reading every mention: the pointer curve with what the head reads alone changed
    mentions = load_config(StudentCurveConfig, "configs/student/curve_mentions.yaml")
    assert (ptr.training.head_reads, mentions.training.head_reads) == ("names", "names+mentions")
    assert mentions.model_dump(exclude={"training"}) == ptr.model_dump(exclude={"training"})
    same = {"exclude": {"head_reads"}}
    assert mentions.training.model_dump(**same) == ptr.training.model_dump(**same)
    assert ptr.objectives["vote+belief"] == curve.objectives["vote+belief"].model_copy(update={"sizes": None})
    live = load_config(EvalConfig, "configs/eval/pointer_table.yaml")
    assert live.arms["pointer"].model == "runs/bc/curve_pointer/points/vote_belief_1000_model"
    assert 1000 in (ptr.save_sizes or []) and live.seed_list() == table.seed_list()
    assert live.imposters == table.imposters and live.crewmate_aria == table.crewmate_aria
    assert live.bc_rows == table.bc_rows and live.arms["untrained"] == table.arms["untrained"]
    qs = QuickstartConfig()
    demo_train = seeds(qs.collect_config, qs.collect_set)
    demo_eval = set(load_config(EvalConfig, qs.eval_config).seed_list())
    assert not demo_train & demo_eval


def test_the_linear_detectors_round_trains_on_no_seed_it_is_scored_on() -> None:
    """configs/arms/linear_round1.yaml and linear_habits.yaml (the linear detector's own training matches)
    play training seeds only: none a seed of the linear detector's evals, none a seed of the arms race's
    rounds; the detector and the adversary of round 1 are the shipped linear file."""
    from mau.collect.grid import enumerate_grid

    grid = load_config(CollectConfig, "configs/arms/linear_round1.yaml").grid
    train = {s.seed for s in enumerate_grid(grid)}
    assert len(train) == 42 and min(train) == 46000
    habit_grid = load_config(CollectConfig, "configs/arms/linear_habits.yaml").grid
    habits = {s.seed for s in enumerate_grid(habit_grid)}
    assert len(habits) == 108 and not habits & train
    train |= habits
    scored = set(load_config(EvalConfig, "configs/arms/linear.yaml").seed_list())
    for later in ("configs/arms/linear_r1.yaml", "configs/arms/linear_r2.yaml"):
        assert scored == set(load_config(EvalConfig, later).seed_list())
    from mau.collect.arms_race import ArmsRaceConfig

    race_cfg = load_config(ArmsRaceConfig, "configs/arms/race.yaml")
    race = {s for lo, n in race_cfg.seed_ranges(3).values() for s in range(lo, lo + n)}  # its fit's seeds
    assert len(race) == 108 + 4 * 42 and not train & scored and not train & race and not race & scored
    lin = "configs/observer/linear_race.json"
    pool = {p.name: p.model for p in grid.pool}
    assert pool["adversarial"].plans_against == lin
    assert all(pool[c].likelihood == lin for c in grid.crewmates)


def test_the_pools_rounds_train_on_no_seed_they_are_scored_on() -> None:
    """configs/arms/pool_round{1,2}.yaml and pool_pair_round1.yaml (the pools' own training matches) play
    training seeds only: none a seed of the pool's evals, of each other, of the linear detector's rounds or of
    the arms race; each round's crew and adversary reason with and plan against that round's pool file."""
    from mau.collect.arms_race import ArmsRaceConfig
    from mau.collect.grid import enumerate_grid

    earlier = set()
    for path in ("configs/arms/linear_round1.yaml", "configs/arms/linear_habits.yaml"):
        earlier |= {s.seed for s in enumerate_grid(load_config(CollectConfig, path).grid)}
    race_cfg = load_config(ArmsRaceConfig, "configs/arms/race.yaml")
    earlier |= {s for lo, n in race_cfg.seed_ranges(3).values() for s in range(lo, lo + n)}
    rounds = (("pool_round1", 48000, "pool_r1"), ("pool_round2", 48100, "pool_r2"),
              ("pool_pair_round1", 48200, "pool_pair"))
    for name, first, detector in rounds:
        grid = load_config(CollectConfig, f"configs/arms/{name}.yaml").grid
        train = {s.seed for s in enumerate_grid(grid)}
        assert len(train) == 42 and min(train) == first and not train & earlier
        earlier |= train
        pool = {p.name: p.model for p in grid.pool}
        assert pool["adversarial"].plans_against == f"configs/observer/{detector}.json"
        assert all(pool[c].likelihood == f"configs/observer/{detector}.json" for c in grid.crewmates)
    for path in ("configs/arms/pool.yaml", "configs/arms/pool_r2.yaml", "configs/arms/pool_r3.yaml",
                 "configs/arms/pool_pair.yaml", "configs/arms/pool_pair_more.yaml",
                 "configs/arms/pool_pair_r2.yaml", "configs/arms/pool_more.yaml",
                 "configs/arms/cross_final.yaml"):
        assert not earlier & set(load_config(EvalConfig, path).seed_list())
    # the final cross table's seeds are new: none a seed the ladder, a pool or a linear design was measured on
    final = set(load_config(EvalConfig, "configs/arms/cross_final.yaml").seed_list())
    ladder = set(load_config(EvalConfig, "configs/eval/ladder.yaml").seed_list())
    assert len(final) == 60 and not final & ladder


# An eval config that renders frames although every seat is scripted: the smoke eval exercises the whole
# call path, frames included (tests/test_eval.py).
KEEPS_FRAMES = {"smoke.yaml"}
# Collections of scripted seats whose data no VLM reads (the teacher's fit, the CPU student's text prompts,
# the detection experiments' rounds); the others keep frames for the VLM path (detect_cpu, grpo_cpu) or forks.
ARMS = sorted(str(p) for p in Path("configs/arms").glob("*.yaml"))
NO_FRAMES_COLLECT = ["configs/collect/ladder.yaml", *ARMS]


def _seats_and_sides(data: dict) -> tuple[list[dict], list[dict]]:
    """(the seats' model configs, each side's ARIA settings) of an eval or a collect config as written."""
    if "arms" in data:
        return ([*data["arms"].values(), *data["imposters"].values()],
                [data.get("crewmate_aria") or {}, data.get("imposter_aria") or {}])
    grid = data.get("grid") or {}
    return ([m["model"] for m in grid.get("pool", [])],
            [c[side] for c in grid.get("cases", []) for side in ("crewmate", "imposter")])


def test_scripted_seats_render_no_frames() -> None:
    """An eval whose every seat is scripted renders no first-person frames, nor does a collection whose data
    no VLM reads: no seat reads an image, the events and results are the same without them, and frames cost
    most of the time and disk (docs/evaluation.md)."""
    import yaml

    from mau.harness.config import AriaConfig

    default = AriaConfig().frames
    evals = sorted(str(p) for p in Path("configs/eval").glob("*.yaml")) + ARMS
    checked = set()
    for path in sorted(set(evals) | set(NO_FRAMES_COLLECT)):
        data = yaml.safe_load(Path(path).read_text())  # as written: some name run folders of earlier steps
        if Path(path).name in KEEPS_FRAMES or ("arms" not in data and path not in NO_FRAMES_COLLECT):
            continue
        seats, sides = _seats_and_sides(data)
        if seats and all(m["backend"] == "scripted" for m in seats):
            for aria in sides:
                assert not aria.get("frames", default), f"{path}: set frames: false"
            checked.add(path)
    assert len(checked) >= 22, sorted(checked)
