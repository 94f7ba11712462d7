"""LoRA SFT of a Qwen3.5 VLM on a behaviour-cloning dataset: TRL's ``SFTTrainer`` + PEFT, with the checks the
method depends on made explicit and recorded in the run folder (``checks.json``):

- the vision tower (``model.model.visual``) is frozen by hand and comes out of training bit-identical
  (SHA-256 of every tensor before and after); the trainable parameters are LoRA weights of the language
  model only (or, with ``lora.full_finetune``, language-model weights only);
- the loss covers the answer only: ``assistant_only_loss=True`` (TRL swaps Qwen3.5's chat template for its
  training copy with ``{% generation %}`` markers), checked by decoding the unmasked labels of a real batch;
- images are never truncated: ``max_length=None``, and every batch is checked to carry exactly the image
  tokens of its images (``CheckedCollator``).

The run folder: config.yaml, provenance.json, checkpoint-N/ (Trainer), trainer_log.jsonl, adapter/ (PEFT
adapter + processor) or model/ (full fine-tuning), optional merged/, checks.json, and train.json (the summary,
written last: a folder with it is a finished run). Under ``accelerate launch`` every process runs this; only
the main process writes files. Heavy imports happen inside the functions.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mau.config import dump_yaml
from mau.errors import MauError
from mau.rundir import RunDir
from mau.train.config import TrainConfig
from mau.train.data import BCData, CheckedCollator, CollatorStats, clean_messages, load_bc_data

SUMMARY = "train.json"  # written last: its presence marks a finished run
CHECKS = "checks.json"
LOG = "trainer_log.jsonl"
ADAPTER = "adapter"
FULL_MODEL = "model"
MERGED = "merged"
CHECKPOINT_PREFIX = "checkpoint-"


# ---- the run folder ---------------------------------------------------------------------------------------

def checkpoints(out: Path) -> list[Path]:
    """The folder's checkpoints, oldest first."""
    found = [
        p
        for p in out.glob(f"{CHECKPOINT_PREFIX}*")
        if p.is_dir() and p.name[len(CHECKPOINT_PREFIX) :].isdigit()
    ]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX):]))


def check_run_folder(out: Path, resume: bool, max_steps: int | None = None, what: str = "training run",
                     summary: str = SUMMARY, steps_key: str = "training.max_steps") -> bool:
    """Refuse a folder that is not ours or holds a run we were not asked to continue (a Trainer's run folder:
    ``mau train``, ``mau rl``). Returns True when training must resume from the folder's last checkpoint."""
    run = RunDir(out, what)
    if run.is_empty():
        return False
    if not run.is_ours():
        raise MauError(f"output.dir {out}: exists and is not a {what} folder; choose an empty or new folder")
    ckpts = checkpoints(out)
    if not resume:
        if (out / summary).is_file():
            raise MauError(f"output.dir {out}: holds a finished {what}; pass --resume to continue it (e.g. "
                           f"to a larger {steps_key}) or choose another output.dir")
        raise MauError(f"output.dir {out}: holds an unfinished {what} ({len(ckpts)} checkpoints); pass "
                       "--resume to continue from its last checkpoint, or choose another output.dir")
    if ckpts and max_steps:
        done = int(ckpts[-1].name[len(CHECKPOINT_PREFIX):])
        if done >= max_steps:
            # The Trainer would run one more step past the end and log "step 21/20"; there is nothing to do.
            raise MauError(f"output.dir {out}: already trained {done} of {steps_key}={max_steps} steps; "
                           f"raise {steps_key} to train on")
    return bool(ckpts)


# ---- model and processor -----------------------------------------------------------------------------------

def process_state(cfg: TrainConfig) -> Any:
    """accelerate's process state (shared by everything in the process, the Trainer included). The first call
    decides the backend, so it must already know about model.device=cpu: under torchrun that is what makes
    several CPU processes one DDP group (gloo) instead of independent runs."""
    from accelerate import PartialState

    return PartialState(cpu=cfg.model.device == "cpu")


def resolve_base(cfg: TrainConfig) -> str:
    """The base model as PEFT should record it: an absolute path for a local folder (built first if asked),
    else the hub id as given."""
    p = Path(cfg.model.path).expanduser()
    if p.exists():
        return str(p.resolve())
    if cfg.model.build_tiny_model_if_missing:
        from mau.models.tiny import build_tiny_model

        with process_state(cfg).main_process_first():  # one process builds, the others then find it
            if not p.exists():
                build_tiny_model(p)
        return str(p.resolve())
    if cfg.model.path.startswith((".", "/", "~")) or cfg.model.path.count("/") != 1:
        raise MauError(f"model.path {cfg.model.path}: no such folder and not a hub id (owner/name); fix the "
                       f"path, "
                       "or set model.build_tiny_model_if_missing=true for the tiny local model")
    return cfg.model.path


def torch_dtype(cfg: TrainConfig) -> Any:
    import torch

    if cfg.model.dtype == "auto":
        gpu = torch.cuda.is_available() and cfg.model.device != "cpu"
        return torch.bfloat16 if gpu else torch.float32
    return getattr(torch, cfg.model.dtype)


def load_processor(base: str, cfg: Any) -> Any:
    """AutoProcessor with the image-size caps of ``cfg.images`` applied (a train or RL config; they travel
    with the processor saved beside the adapter)."""
    from transformers import AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(base)
    except (OSError, ValueError) as e:
        raise MauError(f"model.path {base}: the processor does not load "
                       f"({str(e).splitlines()[0][:160]})") from None
    if getattr(processor, "tokenizer", None) is None or not hasattr(processor, "image_processor"):
        # Without torchvision AutoProcessor quietly returns a bare tokenizer: training would drop every image.
        raise MauError(f"AutoProcessor gave {type(processor).__name__}, not a multimodal processor (is "
                       f"torchvision "
                       "installed and importable?)")
    lo, hi = cfg.images.min_pixels, cfg.images.max_pixels
    if lo is not None or hi is not None:
        # Qwen2VLImageProcessor (transformers 5.24) reads its pixel bounds from size: shortest_edge =
        # min_pixels, longest_edge = max_pixels (pixel counts, not edge lengths).
        size = dict(processor.image_processor.size)
        if hi is not None:
            size["longest_edge"] = hi
            size["shortest_edge"] = min(size.get("shortest_edge") or hi, hi)
        if lo is not None:
            size["shortest_edge"] = lo
        processor.image_processor.size = size
    return processor


def load_model(base: str, cfg: TrainConfig) -> Any:
    from transformers import AutoModelForImageTextToText

    kwargs: dict[str, Any] = {"dtype": torch_dtype(cfg)}
    if cfg.model.attn_implementation:
        kwargs["attn_implementation"] = cfg.model.attn_implementation
    try:
        model = AutoModelForImageTextToText.from_pretrained(base, **kwargs)
    except (OSError, ValueError) as e:
        raise MauError(f"model.path {base}: the model does not load "
                       f"({str(e).splitlines()[0][:160]})") from None
    return model


# ---- the trainer -------------------------------------------------------------------------------------------

def log_callback(path: Path) -> Any:
    """A TrainerCallback that appends every log entry (TRL's metrics: loss, grad_norm, learning_rate, entropy,
    mean_token_accuracy, num_tokens, eval_loss, ...) to ``path`` as one JSON line with its step, and prints a
    short progress line to stderr (stdout is the verb's one result line). It also logs the last step (the
    Trainer logs only every logging_steps), so the final training loss is always known."""
    from transformers import TrainerCallback

    class JsonlLog(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.max_steps and state.global_step >= state.max_steps:
                control.should_log = True
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not (state.is_world_process_zero and logs):
                return
            row = {"step": state.global_step, "epoch": state.epoch, "time": round(time.time(), 3), **logs}
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            shown = " ".join(f"{k}={v:.4g}" for k, v in logs.items() if isinstance(v, (int, float)))
            print(f"step {state.global_step}/{state.max_steps} {shown}", file=sys.stderr, flush=True)

    return JsonlLog()


def sft_config(cfg: TrainConfig, out: Path, has_eval: bool, bf16: bool) -> Any:
    """TRL's SFTConfig for this run. The settings that matter for a Qwen3.5 VLM with images:
    ``max_length=None`` (truncation could cut image tokens), ``assistant_only_loss=True``, no packing, no
    padding-free (both refused for vision data)."""
    from trl import SFTConfig

    t = cfg.training
    gc = t.gradient_checkpointing
    eval_steps = t.eval_steps if has_eval and t.eval_steps else None
    report = ["wandb"] if cfg.logging.report_to == "wandb" else "none"
    return SFTConfig(
        output_dir=str(out), max_length=None, assistant_only_loss=True, packing=False, padding_free=False,
        num_train_epochs=t.epochs, max_steps=t.max_steps or -1, learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler, warmup_steps=t.warmup, weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm, per_device_train_batch_size=t.per_device_batch_size,
        per_device_eval_batch_size=t.per_device_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        # Both names: transformers 5.24 renamed gradient_checkpointing (TRL still reads the old name). Its
        # default is non-reentrant checkpointing; TRL switches to reentrant itself under PEFT + ZeRO-3.
        gradient_checkpointing=gc, activation_checkpointing=gc, bf16=bf16, fp16=False,
        use_cpu=cfg.model.device == "cpu", seed=t.seed, logging_steps=t.logging_steps, save_strategy="steps",
        save_steps=t.save_steps, save_total_limit=t.save_total_limit,
        eval_strategy="steps" if eval_steps else "no", eval_steps=eval_steps, report_to=report,
        run_name=cfg.logging.run_name or out.name, dataloader_num_workers=t.dataloader_num_workers,
        disable_tqdm=True,  # log_callback prints progress lines to stderr instead
        log_level="warning",
    )


@dataclass
class Setup:
    """Everything built before training starts (the tests inspect it without training)."""

    cfg: TrainConfig
    out: Path
    base: str
    processor: Any
    trainer: Any
    collator: CheckedCollator
    data: BCData
    resume_from_checkpoint: bool
    vision_before: dict[str, str]
    trainable_before: dict[str, str]
    counts: dict[str, int]


def build(cfg: TrainConfig, out: Path, resume_from_checkpoint: bool = False,
          callbacks: list[Any] | None = None) -> Setup:
    """Load data, processor and model; freeze the vision tower; build the SFTTrainer (PEFT wraps the model
    there) and check what is trainable. Nothing is trained or written here; on failure no empty run folder
    is left behind (the Trainer creates its output_dir)."""
    created = not out.exists()
    try:
        return _build(cfg, out, resume_from_checkpoint, callbacks)
    except BaseException:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise


def _build(cfg: TrainConfig, out: Path, resume_from_checkpoint: bool, callbacks: list[Any] | None) -> Setup:
    import torch
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils import logging as hf_logging
    from trl import SFTTrainer

    from mau.train import freeze

    hf_logging.disable_progress_bar()
    data = load_bc_data(cfg.data)
    base = resolve_base(cfg)
    processor = load_processor(base, cfg)
    bf16 = cfg.training.bf16 if cfg.training.bf16 is not None else torch_dtype(cfg) == torch.bfloat16
    # The SFTConfig comes before the model: under DeepSpeed ZeRO-3 it sets up zero.Init, which from_pretrained
    # then uses to load the weights already partitioned.
    args = sft_config(cfg, out, has_eval=data.eval is not None, bf16=bf16)
    model = load_model(base, cfg)

    peft_config = freeze.prepare_for_tuning(model, cfg.lora)
    vision_before = freeze.vision_digests(model)

    with warnings.catch_warnings():  # peft 0.21 calls a transformers method that 5.24 marks deprecated
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        try:
            trainer = SFTTrainer(
                model=model, args=args, train_dataset=data.train, eval_dataset=data.eval,
                processing_class=processor, peft_config=peft_config, callbacks=callbacks or None,
            )
        except ValueError as e:  # TRL's refusals (e.g. a chat template it cannot patch) are one-line facts
            raise MauError(f"SFTTrainer: {str(e).splitlines()[0]}") from None
    # The Trainer's printer / progress bar would write every log entry to stdout; log_callback reports
    # instead.
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    collator = CheckedCollator(trainer.data_collator, image_token_id=model.config.image_token_id,
                               merge_size=processor.image_processor.merge_size)
    trainer.data_collator = collator  # the Trainer reads it when it builds each dataloader

    freeze.check_trainable(trainer.model, cfg.lora.full_finetune)
    counts = freeze.parameter_counts(trainer.model)
    return Setup(
        cfg=cfg, out=out, base=base, processor=processor, trainer=trainer, collator=collator, data=data,
        resume_from_checkpoint=resume_from_checkpoint, vision_before=vision_before,
        trainable_before=freeze.trainable_digests(trainer.model), counts=counts,
    )


def label_mask_check(setup: Setup, row: int = 0) -> dict[str, Any]:
    """Collate training row ``row`` and decode its unmasked labels; they must equal the assistant turn as the
    training chat template renders it (everything after the last ``<|im_start|>assistant\\n``)."""
    from trl.data_utils import prepare_multimodal_messages

    example = setup.data.train[row]
    batch = setup.collator([example])
    tok = setup.processor.tokenizer
    labels = batch["labels"][0]
    decoded = tok.decode(labels[labels != -100].tolist(), skip_special_tokens=False)
    messages = prepare_multimodal_messages(clean_messages(example["messages"]), images=example["images"])
    template = setup.collator.inner.chat_template  # TRL's training copy (None: the processor's own)
    text = setup.processor.apply_chat_template(messages, chat_template=template, tokenize=False)
    marker = "<|im_start|>assistant\n"
    expected = text[text.rindex(marker) + len(marker):] if marker in text else None
    return {
        "row": row, "ok": decoded == expected, "expected": expected, "decoded": decoded,
        "answer_tokens": int((labels != -100).sum()),
        "sequence_tokens": int(batch["attention_mask"][0].sum()),
    }


# ---- the run -----------------------------------------------------------------------------------------------

@dataclass
class TrainResult:
    out: Path
    steps: int
    train_loss: float | None  # the last logged training loss
    mean_train_loss: float | None  # TRL's average over this invocation's steps
    eval_loss: float | None
    trainable: int
    saved: Path  # the adapter (or the full model)
    merged: Path | None
    resumed_from: str | None
    wall_s: float

    def line(self) -> str:
        loss = f"{self.train_loss:.4f}" if self.train_loss is not None else "n/a"
        ev = f" eval_loss={self.eval_loss:.4f}" if self.eval_loss is not None else ""
        what = "model" if self.saved.name == FULL_MODEL else "adapter"
        return (f"trained steps={self.steps} train_loss={loss}{ev} trainable_params={self.trainable} "
                f"wall_s={self.wall_s:.1f} -> {what} {self.saved}")


def _write_json(path: Path, data: Any) -> None:
    from mau.rundir import atomic_write

    atomic_write(path, json.dumps(data, indent=1, default=str) + "\n")


def _wandb_env(cfg: TrainConfig, out: Path) -> None:
    if cfg.logging.report_to != "wandb":
        return
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise MauError("logging.report_to=wandb needs the wandb package: pip install -e '.[wandb]' (or set "
                       "logging.report_to=none; metrics are in trainer_log.jsonl either way)")
    os.environ.setdefault("WANDB_PROJECT", cfg.logging.wandb_project)
    os.environ.setdefault("WANDB_DIR", str(out))


def train(cfg: TrainConfig, out: Path | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """The whole run into ``out`` (the verb's RunDir; default ``output.dir``): folder checks, build, checks
    before, train (or resume), save, checks after, summary."""
    from mau.train import freeze

    t0 = time.perf_counter()
    state = process_state(cfg)
    out = Path(out or cfg.output.dir or "")
    if not str(out) or str(out) == ".":
        raise MauError("output.dir is unset: give the run folder (--out DIR)")
    resume_ckpt = check_run_folder(out, cfg.resume, cfg.training.max_steps)
    state.wait_for_everyone()  # every process has looked at the folder before the main one writes into it
    _wandb_env(cfg, out)
    main = state.is_main_process
    # Build first (data, model, trainer: it writes nothing), so that a bad path or config leaves no folder
    # behind.
    setup = build(cfg, out, resume_ckpt, [log_callback(out / LOG), *(callbacks or [])])
    mask = label_mask_check(setup)
    if not mask["ok"]:
        raise MauError(f"the loss mask does not cover exactly the answer: labels decode to "
                       f"{mask['decoded'][:80]!r}, expected {str(mask['expected'])[:80]!r}")
    setup.collator.stats = CollatorStats()  # count only the batches collated for training
    checks: dict[str, Any] = {"parameters": setup.counts, "label_mask": mask,
                              "vision_frozen_before": setup.counts["vision_trainable"] == 0}
    trainer = setup.trainer
    resumed_from = checkpoints(out)[-1].name if resume_ckpt else None
    if main:
        out.mkdir(parents=True, exist_ok=True)
        (out / SUMMARY).unlink(missing_ok=True)  # a resumed run is unfinished until it finishes
        RunDir(out, "training run").write_config(
            dump_yaml(cfg), base_model=setup.base, dataset=str(setup.data.path.resolve()),
            dataset_filter=setup.data.header.get("filter"), resumed_from=resumed_from)

    output = trainer.train(resume_from_checkpoint=True if resume_ckpt else None)

    vision_after = freeze.vision_digests(trainer.model)
    changed_vision = freeze.compare_digests(setup.vision_before, vision_after)
    trainable_after = freeze.trainable_digests(trainer.model)
    unchanged = [k for k in setup.trainable_before if setup.trainable_before[k] == trainable_after.get(k)]
    checks.update({
        "vision_tensors": len(vision_after), "vision_unchanged": not changed_vision,
        "vision_changed": changed_vision[:20],
        "trainable_tensors": len(trainable_after), "trainable_changed": len(trainable_after) - len(unchanged),
        "trainable_unchanged": unchanged[:20], "collator": setup.collator.stats.as_dict(),
    })
    eval_loss = None
    if setup.data.eval is not None and cfg.training.eval_at_end:
        eval_loss = trainer.evaluate().get("eval_loss")

    saved = out / (FULL_MODEL if cfg.lora.full_finetune else ADAPTER)
    trainer.save_model(str(saved))  # PEFT: the adapter only; full fine-tuning: the whole model
    merged = None
    if main:
        setup.processor.save_pretrained(str(saved))
        _write_json(out / CHECKS, checks)
    if changed_vision:
        raise MauError(f"{len(changed_vision)} vision-tower tensors changed in training (e.g. "
                       f"{changed_vision[0]}); see {out / CHECKS}")
    if cfg.output.merge and not cfg.lora.full_finetune:
        state.wait_for_everyone()
        if main:
            from mau.train.merge import merge_adapter

            merged = merge_adapter(setup.base, saved, out / MERGED, dtype=cfg.model.dtype)
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    result = TrainResult(
        out=out, steps=trainer.state.global_step, train_loss=losses[-1] if losses else None,
        mean_train_loss=output.training_loss, eval_loss=eval_loss, trainable=setup.counts["trainable"],
        saved=saved, merged=merged, resumed_from=resumed_from, wall_s=time.perf_counter() - t0,
    )
    if main:
        _write_json(out / SUMMARY, {**result.__dict__, "processes": state.num_processes,
                                    "parameters": setup.counts, "metrics": output.metrics})
    if cfg.logging.report_to == "wandb" and main:
        import wandb

        if wandb.run is not None:  # the Trainer leaves its run open: close it so the run folder is complete
            wandb.finish()
    state.wait_for_everyone()
    return result
