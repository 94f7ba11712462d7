"""mau quickstart

The whole loop on the embedded default, on a CPU, in minutes, ending with whether behaviour cloning lifted
detection (docs/experiments.md, "The demo"). The learner: the CPU student SmolLM2-135M (``make student``
installs it; docs/student.md); ``--set 'learners=[student,tiny]'`` adds a tiny random Qwen3.5 VLM built on the
spot, which exercises the VLM path (frames, LoRA) end to end. Stages: (1) the models; (2) expert matches of
the scripted teacher, the crewmates' VOTE prompt compact; (3) the behaviour-cloning datasets; (4) the student
trained over the VOTE candidates on BCvote (the tiny VLM, when asked for, LoRA-trained on each dataset); (5)
the re-entry eval: every learner untrained and trained as the crewmates' VOTE (answered by scoring the
candidates, so never a fallback), the teacher beside them, on held-out seeds with belief probes, against a
habit rung the student was trained against (accusatory) and the ladder's rung above it (quiet), which no
training match holds. It ends with one table, ``results.png``, and a one-line verdict read from the paired
interval of the trained student against the untrained one. The console shows one progress bar per stage;
every other line (the stages' own output, library warnings) is in ``quickstart.log`` in the run folder.
``--config configs/quickstart/learn.yaml`` runs the tiny VLM's CPU-scale experiment of docs/experiments.md
instead. Needs the ``ml`` extra.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mau.commands.common import DRY_RUN, NO_PROGRESS, Flag, config_flags
from mau.config import Model
from mau.options import RunOptions

Learner = Literal["student", "tiny"]
LOG_FILE = "quickstart.log"
LEARNERS = {"student": "student (SmolLM2-135M, trained over the VOTE candidates)",
            "tiny": "tiny (a random tiny Qwen3.5 VLM, LoRA)"}


class QuickstartConfig(Model):
    """``mau quickstart``: collect -> datasets -> train -> eval on the embedded default."""

    out: str | None = Field(None, description="Run folder; default runs/quickstart/<date>/<time>_quickstart.")
    resume: bool = Field(False, description="Continue a quickstart in --out: finished stages are kept.")
    learners: list[Learner] = Field(
        default_factory=lambda: ["student"],
        description="Who learns: student (SmolLM2-135M, trained over the VOTE candidates on student_filters) "
                    "and tiny (a random tiny Qwen3.5 VLM, LoRA on each of filters: the VLM path on frames, "
                    "about two more minutes; --set 'learners=[student,tiny]'). The first is the verdict's.")
    student_model: str = Field("runs/student/model", description="The student's folder: materialised there "
                               "(mau student) when missing, kept when present (make student writes it).")
    collect_config: str = Field("configs/collect/student.yaml", description="The expert grid to collect.")
    collect_set: list[str] = Field(default_factory=lambda: ["grid.repetitions=4"],
                                   description="--set overrides for the collection.")
    workers: int = Field(2, ge=1, description="Worker processes for collection and evaluation.")
    student_filters: list[str] = Field(default_factory=lambda: ["bcvote"],
                                       description="The BC datasets the student is trained on (one model "
                                                   "each).")
    student_train_config: str = Field("configs/student/train.yaml", description="The student's training.")
    student_train_set: list[str] = Field(
        default_factory=lambda: ["training.epochs=2", "training.learning_rate=3e-4",
                                 "training.vote_weight=1.0", "training.belief_weight=1.0",
                                 "training.readout=pointer"],
        description="--set overrides for every student training run (the recipe of docs/student.md: the "
                    "teacher's vote and its belief, read at the candidates' names).",
    )
    filters: list[str] = Field(default_factory=lambda: ["bcvote"],
                               description="The BC datasets the tiny VLM is trained on (one adapter each); "
                                           "[bcwin, bcvote, bcwin+vote] adds the datasets with frames "
                                           "(minutes).")
    train_config: str = Field("configs/train/tiny.yaml", description="The tiny VLM's training config.")
    train_set: list[str] = Field(
        default_factory=lambda: ["training.max_steps=30", "data.max_eval_examples=64"],
        description="--set overrides for every tiny VLM training run.",
    )
    eval_config: str = Field("configs/eval/quickstart.yaml", description="Evaluation config: its arm named "
                             "like a learner (else its first model arm) is that learner's template; its "
                             "scripted arms (the teacher) are kept.")
    eval_set: list[str] = Field(default_factory=list, description="--set overrides for the evaluation.")
    arm_modules: list[str] | None = Field(
        None, description="Modules the arms' model answers (the rest: arm_rest_model); None: as the eval "
                          "config.")
    probe_teacher_only: bool = Field(False, description="Probe only the teacher arm.")
    teacher_arm: bool = Field(True, description="Keep a 'teacher' arm (the scripted expert when the eval "
                                                "config has none).")
    quiet: bool = Field(True, description="One progress bar per stage on the console; every other line (the "
                                          "stages' output, library warnings) in quickstart.log of the run "
                                          "folder.")
    student: bool = Field(False, description="The student alone (learners: [student], now the default; "
                                             "--student).")
    frames: Literal["auto", "on", "off"] = Field(
        "auto", description="First-person frames in the expert and eval matches' prompts: auto renders them "
                            "only when a learner reads images (the tiny VLM); the text-only student never "
                            "does, and the games and the VOTE prompts are the same either way "
                            "(docs/experiments.md).")


FLAGS = [*config_flags("workers=1"),
         Flag("--out", "run folder", key="out"),
         Flag("--resume", "keep finished stages of --out", key="resume", type=bool),
         Flag("--student", "the CPU student alone (no tiny VLM): "
                           "learners=[student]", key="student", type=bool),
         NO_PROGRESS, DRY_RUN]
CONFIG = "mau.commands.quickstart:QuickstartConfig"
TOTAL = 5


def main(cfg: QuickstartConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.console import QuietConsole
    from mau.config import dump_yaml
    from mau.errors import MauError
    from mau.rundir import RunDir

    if cfg.student and "learners" not in cfg.model_fields_set:
        cfg = cfg.model_copy(update={"learners": ["student"]})
    if not cfg.learners:
        raise MauError("learners: name at least one (student, tiny)")
    run = RunDir.choose(cfg.out, "quickstart", "quickstart", "quickstart")
    out = run.path.resolve()
    if opts.dry_run:
        print(f"mau quickstart --dry-run: learners {', '.join(cfg.learners)}; collect {cfg.collect_config}; "
              f"datasets {', '.join(_filters(cfg))}; train {_train_configs(cfg)}; eval {cfg.eval_config} -> "
              f"{out} "
              "(nothing written)")
        return 0
    if (out / "done.json").is_file() and not cfg.resume:
        raise MauError(f"--out {out}: already holds a finished quickstart; pass --resume to keep it, or "
                       f"choose another --out")
    run.write_config(dump_yaml(cfg))  # config.yaml + provenance.json: the stages' own folders have theirs
    _environment()
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    with QuietConsole(out / LOG_FILE, quiet=cfg.quiet, progress=opts.progress) as con:
        con.print(f"mau quickstart -> {out}")
        con.print(f"      learners: {', '.join(LEARNERS[k] for k in cfg.learners)}; datasets: "
                  f"{', '.join(_filters(cfg))}")
        sub = RunOptions(progress=opts.progress and not cfg.quiet)
        models = _timed(timings, "models_s", _models, cfg, out, con, sub)
        collect_dir = _timed(timings, "collect_s", _collect, cfg, out, con, sub)
        datasets = _timed(timings, "datasets_s", _datasets, cfg, out, collect_dir, con, sub)
        trained = _timed(timings, "train_s", _train, cfg, out, models, datasets, con, sub)
        results = _timed(timings, "eval_s", _eval, cfg, out, models, trained, con, sub, datasets)
        wall = time.perf_counter() - t0
        done = {"wall_s": round(wall, 1), **{k: round(v, 1) for k, v in timings.items()},
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default")}
        (out / "done.json").write_text(json.dumps(done, indent=1))
        _report(cfg, out, results, wall, con)
    return 0


def _environment() -> None:
    """OpenMP's waiting threads by how busy the machine is when the quickstart starts: on a machine that
    others keep busy (a load average at or above its core count) they sleep at once (PASSIVE: two spinning
    threads on two busy cores made the student's forward pass 4 to 9 times slower); else OpenMP's default
    (spin briefly, then sleep), which runs the student's feature pass faster than PASSIVE on an idle machine.
    Never ACTIVE: its threads spin for good, and the quickstart's own idle threads then take a core from the
    eval workers (docs/experiments.md). And the hub off: every model here is local, and a mistyped path
    should fail at once, not after five retries of a download. A value you set wins."""
    if "OMP_WAIT_POLICY" not in os.environ and os.getloadavg()[0] >= (os.cpu_count() or 1):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@contextmanager
def _worker_threads(workers: int) -> Iterator[None]:
    """One share of the cores per spawned eval worker (they read OMP_NUM_THREADS when torch starts), so that
    two workers do not run four threads on two cores; a value you set wins."""
    if workers <= 1 or "OMP_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    try:
        yield
    finally:
        os.environ.pop("OMP_NUM_THREADS", None)


def _timed(timings: dict[str, float], key: str, fn: Any, *args: Any) -> Any:
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        timings[key] = time.perf_counter() - t


def _filters(cfg: QuickstartConfig) -> list[str]:
    """Every dataset to build, in order."""
    out = list(cfg.student_filters) if "student" in cfg.learners else []
    return out + [f for f in (cfg.filters if "tiny" in cfg.learners else []) if f not in out]


def _train_configs(cfg: QuickstartConfig) -> str:
    return " + ".join(c for learner, c in (("student", cfg.student_train_config), ("tiny", cfg.train_config))
                      if learner in cfg.learners)


def _slug(name: str) -> str:
    return name.replace("+", "_")


# -- 1. the models ------------------------------------------------------------------------------------------
def _models(cfg: QuickstartConfig, out: Path, con: Any, sub: RunOptions) -> dict[str, Path]:
    paths = {"student": Path(cfg.student_model).resolve(), "tiny": out / "tiny-qwen3_5"}
    paths = {k: v for k, v in paths.items() if k in cfg.learners}

    def poll() -> tuple[float, float]:
        return sum((p / "config.json").is_file() for p in paths.values()), len(paths)

    with con.stage(f"[1/{TOTAL}] models", poll, "models"):
        if "student" in paths and not (paths["student"] / "config.json").is_file():
            from mau.commands.student import StudentConfig
            from mau.commands.student import main as student_main

            student_main(StudentConfig(out=str(paths["student"]), resume=True), sub)
        if "tiny" in paths and not (paths["tiny"] / "config.json").is_file():
            from mau.commands.tiny_model import TinyModelConfig
            from mau.commands.tiny_model import main as tiny_main

            tiny_main(TinyModelConfig(out=str(paths["tiny"])), sub)
    return paths


# -- 2. expert data -----------------------------------------------------------------------------------------
def _planned_and_finished(run: Path) -> tuple[float, float]:
    """(finished matches, planned matches) of a collect or eval run folder being played."""
    from mau import schema as F
    from mau.matchdir import finished_matches

    grid = run / F.GRID_FILE
    total = sum(1 for line in grid.read_text().splitlines() if line.strip()) if grid.is_file() else 0
    return len(finished_matches(run)), total


def _collect(cfg: QuickstartConfig, out: Path, con: Any, sub: RunOptions) -> Path:
    from mau.collect.run import CollectConfig
    from mau.commands.collect import main as collect_main
    from mau.config import load_config, parse_overrides

    collect_dir = out / "collect"
    ccfg = load_config(CollectConfig, cfg.collect_config, parse_overrides(
        cfg.collect_set + [f"out={collect_dir}", f"workers={cfg.workers}", "resume=true"]))
    if not renders_frames(cfg):
        cases = [c.model_copy(update={side: getattr(c, side).model_copy(update={"frames": False})
                                      for side in ("crewmate", "imposter")}) for c in ccfg.grid.cases]
        ccfg = ccfg.model_copy(update={"grid": ccfg.grid.model_copy(update={"cases": cases})})
    with con.stage(f"[2/{TOTAL}] expert matches",
                   lambda: _planned_and_finished(collect_dir), "matches"):
        collect_main(ccfg, sub)
    return collect_dir


def renders_frames(cfg: QuickstartConfig) -> bool:
    """Whether the matches render first-person frames: only for a learner that reads images, unless set."""
    return cfg.frames == "on" or (cfg.frames == "auto" and "tiny" in cfg.learners)


# -- 3. datasets --------------------------------------------------------------------------------------------
def _datasets(
    cfg: QuickstartConfig, out: Path, collect_dir: Path, con: Any, sub: RunOptions
) -> dict[str, Path]:
    from mau import schema as F
    from mau.commands.dataset import DatasetConfig
    from mau.commands.dataset import main as dataset_main
    from mau.config import load_config

    datasets = {f: out / "datasets" / _slug(f) for f in _filters(cfg)}

    def poll() -> tuple[float, float]:
        return sum((d / F.DATASET_HEADER).is_file() for d in datasets.values()), len(datasets)

    with con.stage(f"[3/{TOTAL}] BC datasets", poll, "datasets"):
        for f, d in datasets.items():
            dataset_main(
                load_config(
                    DatasetConfig, None,
                    {"runs": [str(collect_dir)], "filter": f, "out": str(d), "resume": True},
                ),
                sub,
            )
    return datasets


# -- 4. training --------------------------------------------------------------------------------------------
def _train(cfg: QuickstartConfig, out: Path, models: dict[str, Path], datasets: dict[str, Path], con: Any,
           sub: RunOptions) -> dict[str, dict[str, tuple[str, Path]]]:
    """{learner: {filter: ("adapter" | "model", path)}}: one training run per learner and dataset."""
    from mau.commands.student_train import main as student_train_main
    from mau.commands.train import main as train_main
    from mau.config import load_config, parse_overrides
    from mau.student.config import StudentTrainConfig
    from mau.train.config import TrainConfig

    mains = {"student": student_train_main, "tiny": train_main}
    plan: list[tuple[str, str, Path, Any]] = []  # (learner, filter, run folder, config)
    for learner, kind, config, sets, filters in (
        ("student", StudentTrainConfig, cfg.student_train_config, cfg.student_train_set, cfg.student_filters),
        ("tiny", TrainConfig, cfg.train_config, cfg.train_set, cfg.filters),
    ):
        if learner not in cfg.learners:
            continue
        for f in filters:
            run = out / "train" / f"{learner}_{_slug(f)}"
            plan.append((learner, f, run, load_config(kind, config, parse_overrides(sets + [
                f"model.path={models[learner]}", f"data.dataset={datasets[f]}", f"output.dir={run}",
                "resume=true"]))))
    work = {run: _planned_work(tcfg) for _, _, run, tcfg in plan}

    def poll() -> tuple[float, float]:
        return sum(_run_progress(run, *w) for run, w in work.items()), sum(
            _work_total(w) for w in work.values()
        )

    trained: dict[str, dict[str, tuple[str, Path]]] = {}
    with con.stage(f"[4/{TOTAL}] training", poll, "example passes"):
        for learner, f, run, tcfg in plan:
            if _trained(run) is None:
                mains[learner](tcfg, sub)
            trained.setdefault(learner, {})[f] = _trained(run)
    return trained


def _planned_work(tcfg: Any) -> tuple[int, int, int]:
    """A training run's work, for the bar's ETA: (prompts whose features the candidate objective caches first,
    optimizer steps, examples per step). The bar counts example passes: cached prompts + steps x examples."""
    from mau import schema as F
    from mau.student.config import StudentTrainConfig

    t = tcfg.training
    per_step = t.per_device_batch_size * t.gradient_accumulation_steps
    n = json.loads((Path(tcfg.data.dataset) / F.DATASET_HEADER).read_text()).get("examples", {})
    steps = int(t.max_steps) if t.max_steps else max(1, math.ceil(n.get("train", 0) * t.epochs / per_step))
    cached = n.get("train", 0) + n.get("validation", 0) if isinstance(tcfg, StudentTrainConfig) else 0
    return cached, steps, per_step


def _work_total(work: tuple[int, int, int]) -> int:
    cached, steps, per_step = work
    return cached + steps * per_step


def _run_progress(run: Path, cached: int, steps: int, per_step: int) -> float:
    """A training run's example passes done: all once finished; else its cache once the cache file is written,
    plus its last logged step's examples."""
    if (run / "train.json").is_file():
        return float(cached + steps * per_step)
    done = float(cached) if (run / "features.pt").is_file() else 0.0
    log = run / "trainer_log.jsonl"
    last = [line for line in log.read_text().splitlines() if line.strip()] if log.is_file() else []
    if last:
        done += min(steps, json.loads(last[-1]).get("step", 0)) * per_step
    return done


def _trained(run: Path) -> tuple[str, Path] | None:
    """What a finished training run left: ("adapter", path) for LoRA, ("model", path) for a whole model."""
    if (run / "adapter" / "adapter_config.json").is_file():
        return ("adapter", run / "adapter")
    if (run / "model" / "config.json").is_file():
        return ("model", run / "model")
    return None


# -- 5. evaluation ------------------------------------------------------------------------------------------
def eval_arms(cfg: QuickstartConfig, base: Any, models: dict[str, Path],
              trained: dict[str, dict[str, tuple[str, Path]]]) -> tuple[dict[str, Any], str]:
    """The eval's arms (name -> model config as JSON) and its baseline: per learner the untrained model (named
    after the learner) and one arm per dataset (``<learner>_<filter>``) from the learner's template arm (the
    config's arm of that name, else its first model arm); then the config's scripted arms (the teacher)."""
    from mau.errors import MauError

    templates: dict[str, str] = {}
    for learner in cfg.learners:
        name = learner if learner in base.arms else next(
            (k for k, v in base.arms.items() if v.backend != "scripted"), None)
        if name is None:
            raise MauError(f"{cfg.eval_config}: no arm named {learner!r} nor any model arm to use as its "
                           f"template")
        templates[learner] = name
    arms: dict[str, Any] = {}
    for learner in cfg.learners:
        tpl = base.arms[templates[learner]].model_copy(
            update={"model": str(models[learner]), "adapter": None}
        )
        arms[learner] = tpl.model_dump(mode="json")
        for f, (kind, path) in trained.get(learner, {}).items():
            update = {"adapter": str(path)} if kind == "adapter" else {"model": str(path)}
            arms[f"{learner}_{_slug(f)}"] = tpl.model_copy(update=update).model_dump(mode="json")
    for name, m in base.arms.items():  # the references (the teacher): the config's scripted arms
        if m.backend == "scripted" and name not in arms and (name != "teacher" or cfg.teacher_arm):
            arms[name] = m.model_dump(mode="json")
    if cfg.teacher_arm and "teacher" not in arms:  # the reference: what the learners imitate
        arms["teacher"] = {"backend": "scripted", "model": "scripted-expert"}
    baseline = base.baseline if base.baseline in arms else cfg.learners[0]
    return arms, baseline


def _eval(
    cfg: QuickstartConfig, out: Path, models: dict[str, Path],
    trained: dict[str, dict[str, tuple[str, Path]]], con: Any, sub: RunOptions,
    datasets: dict[str, Path] | None = None,
) -> dict[str, Any] | None:
    from mau.commands.eval import main as eval_main
    from mau.config import load_config, merge, parse_overrides
    from mau.eval.config import EvalConfig

    eval_dir = out / "eval"
    base = load_config(EvalConfig, cfg.eval_config, parse_overrides(cfg.eval_set))
    arms, baseline = eval_arms(cfg, base, models, trained)
    # The list form replaces the config's arms (a mapping would be merged with them).
    over: dict[str, Any] = {"arms": [{"name": k, "model": v} for k, v in arms.items()], "baseline": baseline,
                            "out": str(eval_dir), "workers": cfg.workers, "resume": True}
    if cfg.arm_modules is not None:
        over["arm_modules"] = cfg.arm_modules
    if "teacher" in arms and cfg.probe_teacher_only:
        over["probe_arms"] = ["teacher"]
    if not renders_frames(cfg):
        over["crewmate_aria"], over["imposter_aria"] = {"frames": False}, {"frames": False}
    if "student" in cfg.learners and datasets and cfg.student_filters and cfg.student_filters[0] in datasets:
        over["bc_rows"] = student_peer(cfg, datasets[cfg.student_filters[0]])
    ecfg = load_config(EvalConfig, cfg.eval_config, merge(parse_overrides(cfg.eval_set), over))
    n = len(arms) * len(ecfg.imposters) * len(ecfg.seed_list())
    con.print(f"      eval: {len(arms)} arms ({', '.join(arms)}) x {len(ecfg.imposters)} imposter model(s) x "
              f"{len(ecfg.seed_list())} held-out seeds = {n} matches")
    with con.stage(f"[5/{TOTAL}] re-entry eval", lambda: _planned_and_finished(eval_dir), "matches"), \
            _worker_threads(ecfg.workers):
        eval_main(ecfg, sub)
    results_file = eval_dir / "results.json"
    return json.loads(results_file.read_text()) if results_file.is_file() else None


def student_peer(cfg: QuickstartConfig, dataset: Path) -> dict[str, Any]:
    """The eval's ``bc_rows``: the linear reader fitted on the student's own BC rows with its objective's
    weights (docs/evaluation.md, "linear (BC rows)"), so the table says whether the student uses its data."""
    from mau.config import load_config, parse_overrides
    from mau.student.config import StudentTrainConfig

    tcfg = load_config(StudentTrainConfig, cfg.student_train_config, parse_overrides(cfg.student_train_set))
    t = tcfg.training
    return {"dataset": str(dataset), "vote_weight": t.vote_weight, "belief_weight": t.belief_weight}


# -- the report ----------------------------------------------------------------------------------------------
def _report(cfg: QuickstartConfig, out: Path, results: dict[str, Any] | None, wall: float, con: Any) -> None:
    from mau.eval.report import summary_table
    from mau.eval.verdict import verdict_line

    eval_dir = out / "eval"
    if results is not None:
        con.print("\nResults (95% intervals). Each learner arm answers the crewmates' VOTE by scoring the "
                  "candidates; the rest of each crewmate is the scripted teacher. Detection: belief probes "
                  "before each vote (AUROC within each probe: chance 0.5).\n")
        con.print(summary_table(results))
        learner = cfg.learners[0]
        trained = [a for a in results["arms"] if a.startswith(f"{learner}_")]
        if trained:
            con.print("\n" + verdict_line(results, trained[0], learner, what=f"BC ({trained[0]})",
                                          versus_name=f"the untrained {learner}"))
    con.print(f"\nquickstart done in {wall / 60:.1f} min -> {out}")
    con.print(f"  picture: {eval_dir / 'results.png'}\n  report: {eval_dir / 'results.md'}\n"
              f"  every line of the run (library warnings included): {out / LOG_FILE}")
