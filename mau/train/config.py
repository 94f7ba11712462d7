"""The config of ``mau train``: one pydantic model with a section per concern (model, lora, data, training,
images, output, logging). Hyperparameters only: how many processes and GPUs run the job is the launcher's
business (``configs/accelerate/*.yaml``). Light imports only: the CLI parses it before anything heavy
loads."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mau.config import Model

# LoRA on the language model only (ml_stack.md): "all-linear" would also hit the vision tower.
LANGUAGE_MODEL_LORA_TARGETS = (
    r".*\.language_model\..*\.(q_proj|k_proj|v_proj|o_proj|in_proj_qkv|in_proj_z|out_proj"
    r"|gate_proj|up_proj|down_proj)$"
)


class ModelSection(Model):
    """The base model (a Qwen3.5 VLM) and how it is loaded."""

    path: str = Field("Qwen/Qwen3.5-9B", description="Base model: a hub id or a local folder written by "
                      "save_pretrained (AutoModelForImageTextToText + AutoProcessor). A local path is "
                      "recorded as an absolute path in the adapter's adapter_config.json.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="Weights' dtype on load; auto: bfloat16 on a GPU, float32 on the CPU.")
    attn_implementation: str | None = Field(
        None, description="Attention kernel (sdpa, eager, flash_attention_2); unset: the transformers "
                          "default.")
    device: Literal["auto", "cpu"] = Field(
        "auto", description="cpu: train on the CPU even where a GPU is visible; auto: the launcher's device.")
    build_tiny_model_if_missing: bool = Field(
        False, description="If path does not exist, build the tiny local Qwen3.5 VLM there first "
        "(mau.models.tiny.build_tiny_model, seed 0): CPU runs and quickstart need no hub.")


class LoraSection(Model):
    """The LoRA adapter (PEFT), on the language model only; or full fine-tuning of the language model."""

    r: int = Field(16, ge=1, description="LoRA rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha (the update is scaled by alpha / r).")
    dropout: float = Field(0.05, ge=0, lt=1, description="Dropout on the LoRA input.")
    target_modules: str = Field(
        LANGUAGE_MODEL_LORA_TARGETS, description="Regex (PEFT target_modules) of the linear layers that get "
        "LoRA; the default matches the language model's attention, DeltaNet and MLP projections and never "
        "the vision tower ('all-linear' would).")
    full_finetune: bool = Field(
        False, description="Train every language-model weight instead of a LoRA adapter (never the vision "
        "tower nor lm_head); the result is a full model in OUT/model. For CPU experiments with the tiny "
        "model, whose frozen random base LoRA alone cannot bend far.")


class DataSection(Model):
    """The behaviour-cloning dataset (``mau dataset`` output)."""

    dataset: str = Field("runs/datasets/smoke-bcwin", description="Dataset folder written by mau dataset "
                         "(datasets.load_from_disk + dataset.json).")
    filter: str | None = Field(None, description="The filter the dataset was built with (bcwin, bcvote, "
                               "bcwin+vote), recorded for provenance; if set it must match dataset.json.")
    train_split: str = Field("train", description="Split to train on.")
    eval_split: str | None = Field("validation", description="Split for the evaluation loss; unset: none.")
    max_train_examples: int | None = Field(None, ge=1, description="Use only the first N training rows.")
    max_eval_examples: int | None = Field(None, ge=1, description="Use only the first N evaluation rows.")


class OptimSection(Model):
    """The optimiser's schedule (AdamW), shared by ``mau train`` and ``mau student-train``."""

    epochs: float = Field(1.0, gt=0, description="Passes over the training split (unless max_steps is set).")
    max_steps: int | None = Field(None, ge=1, description="Optimizer steps in all; overrides epochs.")
    learning_rate: float = Field(1e-4, gt=0, description="Peak learning rate (AdamW).")
    lr_scheduler: str = Field("cosine", description="transformers scheduler name: cosine, linear, constant, "
                                                    "...")
    warmup: float = Field(0.03, ge=0, description="Warmup: a fraction of all steps if < 1, else a step "
                                                  "count.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")


class GroupSection(Model):
    """GRPO's groups and optimiser, shared by ``mau rl`` (completions sampled by TRL) and ``mau student-rl``
    (candidates sampled from the student's scores)."""

    num_generations: int = Field(4, ge=2, description="Samples per prompt (G: completions, or candidates for "
                                                      "the student): the group the advantages are relative "
                                                      "to.")
    per_device_batch_size: int = Field(4, ge=1, description="Samples per device per step (a multiple of "
                                                            "num_generations).")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Forward passes per optimizer step.")
    max_steps: int = Field(20, ge=1, description="Optimizer steps.")
    learning_rate: float = Field(1e-5, gt=0, description="Peak learning rate (AdamW).")
    beta: float = Field(0.04, ge=0, description="KL coefficient to the reference (the start policy); 0 "
                                                "loads no reference (mau rl).")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of the samples.")


class TrainingSection(OptimSection):
    """Optimisation and checkpointing (passed to TRL's SFTConfig)."""

    per_device_batch_size: int = Field(1, ge=1, description="Examples per device per forward pass.")
    gradient_accumulation_steps: int = Field(8, ge=1, description="Forward passes per optimizer step (the "
                                             "global batch is batch x accumulation x processes).")
    gradient_checkpointing: bool = Field(True, description="Recompute activations in the backward pass "
                                         "(less memory, ~20% slower).")
    bf16: bool | None = Field(None, description="bfloat16 mixed precision; unset: on when the weights load "
                              "as bfloat16.")
    seed: int = Field(0, description="Seed of the LoRA init, data order and dropout.")
    logging_steps: int = Field(10, ge=1, description="Log (trainer_log.jsonl, wandb) every N steps.")
    save_steps: int = Field(200, ge=1, description="Write a checkpoint (OUT/checkpoint-N) every N steps.")
    save_total_limit: int | None = Field(3, ge=1, description="Keep only the newest N checkpoints; unset: "
                                                              "all.")
    eval_steps: int | None = Field(None, ge=1, description="Evaluation loss on the eval split every N steps; "
                                   "unset: only at the end (if eval_at_end).")
    eval_at_end: bool = Field(True, description="Evaluation loss on the eval split after training.")
    dataloader_num_workers: int = Field(0, ge=0, description="Worker processes decoding images per process.")


class ImagesSection(Model):
    """Image sizing on the processor (saved with the adapter, so inference sizes frames the same way)."""

    max_pixels: int | None = Field(None, ge=1024, description="Cap on an image's pixels (the image "
                                   "processor's size.longest_edge); larger frames are downscaled, one token "
                                   "per 32x32 px. Unset: the processor's own cap.")
    min_pixels: int | None = Field(None, ge=1024, description="Floor on an image's pixels "
                                   "(size.shortest_edge); unset: the processor's own.")


class OutputSection(Model):
    """The run folder."""

    dir: str | None = Field(None, description="Run folder; default runs/train/<date>/<time>_<config name>.")
    merge: bool = Field(False, description="Also write OUT/merged: the base with the adapter merged in "
                        "(merge_and_unload) and the processor, servable without adapter support.")


class LoggingSection(Model):
    """Where metrics go besides OUT/trainer_log.jsonl (always written)."""

    report_to: Literal["none", "wandb"] = Field("none", description="none, or wandb (needs the wandb "
                                                "package; WANDB_MODE=offline works without a network).")
    wandb_project: str = Field("mau", description="wandb project (unless WANDB_PROJECT is set).")
    run_name: str | None = Field(None, description="Run name for wandb; default the run folder's name.")


class TrainConfig(Model):
    """``mau train``: LoRA SFT (TRL + PEFT) of a Qwen3.5 VLM crewmate on a BC dataset."""

    resume: bool = Field(False, description="Continue in an existing run folder: from its last checkpoint if "
                         "it has one (a finished run continues to a larger max_steps / epochs).")
    model: ModelSection = Field(default_factory=ModelSection, description="The base model.")
    lora: LoraSection = Field(default_factory=LoraSection, description="LoRA on the language model.")
    data: DataSection = Field(default_factory=DataSection, description="The BC dataset.")
    training: TrainingSection = Field(default_factory=TrainingSection, description="Optimisation, "
                                                                                   "checkpoints.")
    images: ImagesSection = Field(default_factory=ImagesSection, description="Image sizing.")
    output: OutputSection = Field(default_factory=OutputSection, description="The run folder.")
    logging: LoggingSection = Field(default_factory=LoggingSection, description="Metrics reporting.")

    @model_validator(mode="after")
    def _pixels(self) -> "TrainConfig":
        lo, hi = self.images.min_pixels, self.images.max_pixels
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"images.min_pixels ({lo}) is above images.max_pixels ({hi})")
        return self
