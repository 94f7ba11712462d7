"""The arms race between the crewmates' detector and the imposter that plans against it (``mau arms-race``;
docs/detection.md, "The arms race"; issue 43).

Round 0's detector is a given likelihood file (``base``: issue 29's teacher). In round k the adversary
(``scripted-adversarial`` with ``plans_against`` detector k) plays the teacher's crewmate temperaments, who
reason with detector k, on training seeds of that round; detector k+1 is a ``Mixture`` over the imposters'
kinds: ``habit`` (the likelihoods fitted on the habits' matches, played once on training seeds) and one
``planner_<j>`` per earlier adversary j <= k (the likelihoods fitted on its matches), with P(planner) =
``planner_prior`` shared alike. Every fit reads only the race's own matches, whose seeds the config checks
are disjoint from the held-out seeds it scores on; the race writes the two eval configs that score it:
``cross.yaml`` (every detector against every adversary) and ``ladder.yaml`` (the last detector and the first
against the habit rungs).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationInfo, field_validator

from mau import schema as F
from mau.config import Model, build, read_yaml
from mau.errors import MauError
from mau.rundir import atomic_write

HABIT = "habit"
SEED_STRIDE = 1000  # each round's training seeds start this far from the previous round's
PLANNER = "scripted-adversarial"
MAX_CREWMATES = 8  # the seed check's bound on a pool's crewmate temperaments (the template is read later)


class ArmsRaceConfig(Model):
    """``mau arms-race``: rounds of detector and adversary, fitted on training seeds, scored on held-out
    ones."""

    out: str | None = Field(None, description="Run folder; default runs/arms-race/<date>/<time>_<config>.")
    resume: bool = Field(False, description="Keep the rounds already played and fitted in --out.")
    rounds: int = Field(3, ge=1, description="K: detectors 0..K and adversaries 0..K.")
    base: str = Field("configs/observer/issue29.json", description="Detector 0: an observer_fit.json.")
    planner_prior: float = Field(0.5, gt=0, lt=1, description="P(the imposters are planners) in detectors "
                                                              "1..K, shared alike by the planner kinds.")
    l2: float = Field(0.01, ge=0, description="The fits' L2 penalty (as mau beliefs --fit).")
    collect: str = Field("configs/collect/ladder.yaml", description="The collect config whose pool, world, "
                                                                    "workers and case the race plays.")
    case: str = Field("ego", description="The collect config's ARIA case (grid.cases[].name) played.")
    habits: list[str] = Field(["accusatory", "expert", "mission", "cautious", "quiet", "framer"],
                              description="The pool's habit rungs (the habit kind is fitted on them).")
    habit_repetitions: int = Field(6, ge=1, description="Repetitions of each habit x crewmate pairing.")
    adversary_repetitions: int = Field(14, ge=1, description="Repetitions of each crewmate against each "
                                                             "round's adversary.")
    train_seed: int = Field(40000, description=f"Habits play seeds from here; round k's adversary from "
                                               f"train_seed + {SEED_STRIDE} (k + 1) (one seed per match).")
    eval_seeds: list[int] = Field(default_factory=lambda: list(range(3001, 3021)),
                                  description="Held-out seeds of cross.yaml and ladder.yaml (>= 20 per cell "
                                              "for issue 43's table; default the ladder's first 20); none "
                                              "may be a training seed.")
    eval_workers: int = Field(2, ge=1, description="workers of the eval configs written.")
    detector_model: str = Field("scripted-expert", description="The crewmate arm of the eval configs.")

    @field_validator("eval_seeds")
    @classmethod
    def _held_out(cls, seeds: list[int], info: ValidationInfo) -> list[int]:
        d = info.data  # the fields above (a field that failed its own check is missing: nothing to compare)
        if any(k not in d for k in ("rounds", "habits", "habit_repetitions", "adversary_repetitions",
                                    "train_seed")):
            return seeds
        ranges = training_seeds(d["train_seed"], d["rounds"], len(d["habits"]) * d["habit_repetitions"],
                                d["adversary_repetitions"], MAX_CREWMATES)
        train = {s for lo, n in ranges.values() for s in range(lo, lo + n)}
        clash = sorted(train & set(seeds))
        if clash:
            raise ValueError(f"{clash[:5]} are training seeds of the race (from train_seed "
                             f"{d['train_seed']}); move train_seed or the eval seeds so that no round is "
                             "fitted on seeds it scores")
        return seeds

    def seed_ranges(self, crewmates: int) -> dict[str, tuple[int, int]]:
        """(first seed, matches) of each training run: ``habits`` and ``round_<k>``."""
        return training_seeds(self.train_seed, self.rounds, len(self.habits) * self.habit_repetitions,
                              self.adversary_repetitions, crewmates)


def training_seeds(train_seed: int, rounds: int, habit_pairings: int, adversary_reps: int,
                   crewmates: int) -> dict[str, tuple[int, int]]:
    """(first seed, matches) of the habits' run and of each round's adversary run (one seed per match, each
    run ``SEED_STRIDE`` apart)."""
    n_hab, n_adv = habit_pairings * crewmates, adversary_reps * crewmates
    if max(n_hab, n_adv) > SEED_STRIDE:
        raise ValueError(f"habit_repetitions / adversary_repetitions: a run of more than {SEED_STRIDE} "
                         "matches would reuse the next round's seeds; lower them")
    out = {HABIT: (train_seed, n_hab)}
    for k in range(rounds + 1):
        out[f"round_{k}"] = (train_seed + SEED_STRIDE * (k + 1), n_adv)
    return out


def _collect_cfg(cfg: ArmsRaceConfig, template: dict[str, Any], detector: str | None, imposters: list[str],
                 reps: int, seed: int, adversary_against: str | None) -> dict[str, Any]:
    """The collect config of one training run: the template's pool with the crewmates reasoning with
    ``detector`` and the adversary planning against ``adversary_against``."""
    doc = copy.deepcopy(template)
    grid = doc["grid"]
    cases = [c for c in grid["cases"] if c.get("name") == cfg.case]
    if not cases:
        raise MauError(f"case {cfg.case}: not a case of {cfg.collect} (grid.cases names: "
                       f"{[c.get('name') for c in grid['cases']]})")
    for p in grid["pool"]:
        m = p["model"]
        if p["name"] in grid["crewmates"] and detector:
            m["likelihood"] = detector
        if m.get("model") == PLANNER and adversary_against:
            m["plans_against"] = adversary_against
    missing = [i for i in imposters if i not in {p["name"] for p in grid["pool"]}]
    if missing:
        raise MauError(f"{cfg.collect}: the pool has no {missing} (habits and the adversary are pool names)")
    grid.update(imposters=imposters, cases=cases, repetitions=reps, seed=seed, seed_scheme="per_match")
    return doc


def _collect(cfg: ArmsRaceConfig, out: Path, doc: dict[str, Any], progress: bool) -> Path:
    """Play one training run (kept when finished and --resume)."""
    from mau.collect.run import CollectConfig, run_collect
    from mau.matchdir import finished_matches
    from mau.options import RunOptions

    planned = len(doc["grid"]["imposters"]) * len(doc["grid"]["crewmates"]) * doc["grid"]["repetitions"]
    if out.exists() and cfg.resume and len(finished_matches(out)) == planned:
        return out
    ccfg = build(CollectConfig, {**doc, "out": str(out), "resume": out.exists()}, str(out))
    s = run_collect(ccfg, out, RunOptions(progress=progress))
    if s is None or s["matches"] < planned:
        raise MauError(f"{out}: {s and s['matches']} of {planned} matches finished; rerun with --resume")
    return out


def _fit(runs: list[Path], l2: float) -> tuple[Any, int]:
    from mau.eval.observer_fit import training_probes
    from mau.infer.fit import fit
    from mau.infer.model import Params

    probes, matches = training_probes([str(r) for r in runs])
    if not probes:
        raise MauError(f"{runs}: no ideal-observer probes to fit on (the case needs probes enabled)")
    return fit(probes, start=Params(), l2=l2)["params"], matches


def _write_detector(path: Path, kinds: dict[str, Any], prior: dict[str, float], note: str) -> None:
    doc = {F.FORMAT: F.FIT_FORMAT, F.FORMAT_VERSION: F.FIT_MIXTURE_VERSION, "note": note,
           "kinds": {n: p.to_dict() for n, p in kinds.items()}, "prior": prior}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(doc, indent=1) + "\n").encode())


def run_race(cfg: ArmsRaceConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    """Play and fit every round; write the detectors, the eval configs and race.json."""
    import shutil

    template = read_yaml(cfg.collect)
    n_crew = len(template["grid"]["crewmates"])
    seeds = cfg.seed_ranges(n_crew)
    pool = template["grid"]["pool"]
    adversary = next((p["name"] for p in pool if p["model"].get("model") == PLANNER), None)
    if adversary is None:
        raise MauError(f"{cfg.collect}: the pool has no {PLANNER} model (the race's adversary)")
    from mau.infer.fit import read_params

    try:
        read_params(cfg.base, "base")  # detector 0 must be a likelihood file before anything is played
    except ValueError as e:
        raise MauError(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    detectors = [out / "round_0" / F.OBSERVER_FIT]
    detectors[0].parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cfg.base, detectors[0])
    habit_run = _collect(cfg, out / "habits", _collect_cfg(cfg, template, str(detectors[0]), cfg.habits,
                                                           cfg.habit_repetitions, seeds[HABIT][0], None),
                         progress)
    habit, n_habit = _fit([habit_run], cfg.l2)
    planners: dict[str, Any] = {}
    rounds = []
    for k in range(cfg.rounds + 1):
        det = str(detectors[k])
        run = _collect(cfg, out / f"round_{k}" / "adversary",
                       _collect_cfg(cfg, template, det, [adversary], cfg.adversary_repetitions,
                                    seeds[f"round_{k}"][0], det), progress)
        rounds.append({"round": k, "detector": det, "adversary_run": str(run),
                       "train_seeds": list(seeds[f"round_{k}"])})
        if k == cfg.rounds:
            break
        planners[f"planner_{k}"], _ = _fit([run], cfg.l2)
        kinds = {HABIT: habit, **planners}
        share = round(cfg.planner_prior / len(planners), 6)  # the habit kind takes what rounding leaves
        prior = {HABIT: round(1 - share * len(planners), 6), **dict.fromkeys(planners, share)}
        detectors.append(out / f"round_{k + 1}" / F.OBSERVER_FIT)
        _write_detector(detectors[-1], kinds, prior, f"arms race round {k + 1}: habit fitted on {habit_run} "
                                                     f"({n_habit} matches), planner_j on round j's adversary")
    summary = {"rounds": rounds, "habits_run": str(habit_run), "habit_train_seeds": list(seeds[HABIT]),
               "eval_seeds": cfg.eval_seeds, "detectors": [str(d) for d in detectors]}
    _write_eval_configs(cfg, template, out, detectors)
    atomic_write(out / "race.json", (json.dumps(summary, indent=1) + "\n").encode())
    return summary


def _write_eval_configs(cfg: ArmsRaceConfig, template: dict[str, Any], out: Path,
                        detectors: list[Path]) -> None:
    """cross.yaml (every detector x every adversary) and ladder.yaml (the first and last detectors x the habit
    rungs), on the held-out seeds, in the race's case."""
    case = next(c for c in template["grid"]["cases"] if c.get("name") == cfg.case)
    habits = {p["name"]: p["model"] for p in template["grid"]["pool"] if p["name"] in cfg.habits}
    arms = {f"teacher_r{k}": {"backend": "scripted", "model": cfg.detector_model, "seed": 0,
                              "likelihood": str(d)} for k, d in enumerate(detectors)}
    adversaries = {f"adversarial_r{k}": {"backend": "scripted", "model": PLANNER, "seed": 11000,
                                         "plans_against": str(d)} for k, d in enumerate(detectors)}
    common = {"workers": cfg.eval_workers, "seeds": cfg.eval_seeds, "baseline": "teacher_r0",
              "crewmate_aria": case["crewmate"], "imposter_aria": case["imposter"],
              "world": template.get("world", {})}
    last = f"teacher_r{len(detectors) - 1}"
    head = (f"# Written by mau arms-race ({out}): held-out seeds only; the race fitted on "
            f"{out}/race.json's training seeds.\n")
    for name, doc in (("cross.yaml", {**common, "arms": arms, "imposters": adversaries}),
                      ("ladder.yaml", {**common, "arms": {"teacher_r0": arms["teacher_r0"], last: arms[last]},
                                       "imposters": habits})):
        atomic_write(out / name, (head + f"#   mau eval --config {out / name} --out {out / name[:-5]}\n"
                                  + yaml.safe_dump(doc, sort_keys=False)).encode())
