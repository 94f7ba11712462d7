"""The arms race (issue 43; docs/detection.md, "The arms race"): its rounds fit only on training seeds, and
its detectors are mixtures over the imposters' kinds that the scripted teacher and the adversary both read."""

from __future__ import annotations

import json

import pytest
import yaml

from mau import schema as F


def _race_cfg(tmp_path, **over):
    from mau.collect.arms_race import ArmsRaceConfig
    from mau.config import build

    template = yaml.safe_load(open("configs/collect/ladder.yaml"))
    template["workers"] = 1
    template["world"]["game"]["max_steps"] = 90
    path = tmp_path / "collect.yaml"
    path.write_text(yaml.safe_dump(template))
    doc = {"rounds": 1, "collect": str(path), "habits": ["quiet"], "habit_repetitions": 1,
           "adversary_repetitions": 1, "train_seed": 50000, "eval_seeds": [3001, 3002], **over}
    return build(ArmsRaceConfig, doc, "test")


def test_the_race_refuses_eval_seeds_it_would_train_on(tmp_path):
    from mau.errors import ConfigError

    with pytest.raises(ConfigError, match="eval_seeds: Value error, \\[50001\\] are training seeds"):
        _race_cfg(tmp_path, eval_seeds=[3001, 50001])
    with pytest.raises(ConfigError, match="\\[51000\\] are training seeds"):  # round 0's adversary seeds
        _race_cfg(tmp_path, eval_seeds=[51000])
    assert _race_cfg(tmp_path, eval_seeds=[49999, 53001]).eval_seeds == [49999, 53001]


def test_a_small_race_fits_each_round_on_its_own_training_seeds_and_scores_on_held_out_ones(tmp_path):
    from mau.collect.arms_race import run_race
    from mau.config import build
    from mau.eval.config import EvalConfig
    from mau.infer.fit import read_params
    from mau.infer.model import Mixture, Params
    from mau.matchdir import finished_matches, read_header

    cfg = _race_cfg(tmp_path)
    out = tmp_path / "race"
    s = run_race(cfg, out, progress=False)
    race = json.loads((out / "race.json").read_text())
    assert race == s and len(s["rounds"]) == 2
    # detector 0 is the base file; detector 1 a mixture of the habit kind and round 0's planner
    assert read_params(s["detectors"][0]) == read_params(cfg.base)
    d1 = read_params(s["detectors"][1])
    assert isinstance(d1, Mixture) and sorted(d1.kinds) == ["habit", "planner_0"]
    assert d1.prior == {"habit": 0.5, "planner_0": 0.5} and isinstance(d1.kinds["habit"], Params)
    # every training match is on a training seed, none an eval seed; each round's crewmates reasoned with
    # that round's detector and its adversary planned against it
    trained = []
    for r in s["rounds"]:
        for m in finished_matches(r["adversary_run"]):
            h = read_header(m)
            trained.append(h["seed"])
            seats = json.dumps(h["seats"])
            assert r["detector"] in seats and "plans_against" in seats
    trained += [read_header(m)["seed"] for m in finished_matches(s["habits_run"])]
    assert len(trained) == 9 and not set(trained) & set(cfg.eval_seeds)
    # the eval configs are valid, on the held-out seeds, every detector against every adversary
    cross = build(EvalConfig, yaml.safe_load((out / "cross.yaml").read_text()), "cross.yaml")
    assert cross.seeds == cfg.eval_seeds
    assert list(cross.arms) == ["teacher_r0", "teacher_r1"]
    assert [m.plans_against for m in cross.imposters.values()] == s["detectors"]
    ladder = build(EvalConfig, yaml.safe_load((out / "ladder.yaml").read_text()), "ladder.yaml")
    assert list(ladder.imposters) == ["quiet"] and list(ladder.arms) == ["teacher_r0", "teacher_r1"]
    assert json.loads(open(s["detectors"][1]).read())[F.FORMAT_VERSION] == F.FIT_MIXTURE_VERSION
