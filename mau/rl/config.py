"""The config of ``mau rl``: decision-level GRPO (TRL's GRPOTrainer) of the crewmate, rewards from forks of
the sim. Light imports only: the CLI parses it before anything heavy loads."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mau.config import Model
from mau.replay.decisions import DecisionsSection
from mau.replay.reward import RewardConfig
from mau.train.config import GroupSection, ImagesSection, LoggingSection, LoraSection


class PolicySection(Model):
    """Where the policy starts. With ``adapter`` (a BC LoRA from ``mau train``), the adapter is merged into
    ``path`` and that merged model is both the start and the KL reference; a fresh LoRA is trained on it."""

    path: str = Field("Qwen/Qwen3.5-9B", description="Base model (hub id or folder), or a fully "
                                                     "fine-tuned BC model (mau train's OUT/model).")
    adapter: str | None = Field(None, description="The BC LoRA adapter to start from (merged into path; "
                                                  "the KL reference).")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="auto: bfloat16 on a GPU, float32 on the CPU.")
    device: Literal["auto", "cpu"] = Field("auto", description="cpu: train on the CPU even where a GPU "
                                                               "is visible.")
    attn_implementation: str | None = Field(None, description="Attention kernel; unset: the transformers "
                                                              "default.")


class GRPOSection(GroupSection):
    """GRPO (passed to TRL's GRPOConfig)."""

    max_completion_length: int = Field(64, ge=4, description="Max new tokens of a completion.")
    loss_type: str = Field("dapo", description="TRL loss_type (grpo, dapo, dr_grpo, bnpo).")
    scale_rewards: str = Field("group", description="TRL scale_rewards: group, batch or none.")
    logging_steps: int = Field(1, ge=1, description="Log every N steps.")
    save_steps: int = Field(100, ge=1, description="Checkpoint every N steps.")
    seed: int = Field(0, description="Seed of sampling, data order and LoRA init.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass.")
    use_vllm: bool = Field(False, description="Generate with vLLM (GPU nodes; needs the vllm package).")
    vllm_mode: Literal["colocate", "server"] = Field("colocate", description="vLLM in this process "
                                                                             "(colocate) or a trl vllm-serve "
                                                                             "server.")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1, description="colocate: the GPU memory "
                                                                            "share of vLLM.")
    bf16: bool | None = Field(None, description="bfloat16 mixed precision; unset: on when the weights "
                                                "load as bfloat16.")


class RLOutput(Model):
    dir: str | None = Field(None, description="Run folder; default runs/rl/<date>/<time>_<config name>.")
    merge: bool = Field(True, description="Also write OUT/model: the start policy with the trained LoRA "
                                          "merged in (servable by the hf backend and mau eval).")


class RLConfig(Model):
    """``mau rl``: decision-level GRPO of the crewmate inside the sim."""

    resume: bool = Field(False, description="Continue the run in output.dir from its last checkpoint (also "
                                            "after a kill; a finished run continues to a larger "
                                            "grpo.max_steps).")
    policy: PolicySection = Field(default_factory=PolicySection, description="The start policy and KL "
                                                                             "reference.")
    lora: LoraSection = Field(default_factory=LoraSection, description="The LoRA trained by GRPO "
                                                                       "(language model only).")
    decisions: DecisionsSection = Field(default_factory=DecisionsSection, description="The prompts.")
    reward: RewardConfig = Field(default_factory=RewardConfig, description="The reward of a completion, "
                                                                           "from a fork of its decision.")
    grpo: GRPOSection = Field(default_factory=GRPOSection, description="GRPO settings.")
    images: ImagesSection = Field(default_factory=ImagesSection, description="Image sizing on the processor.")
    output: RLOutput = Field(default_factory=RLOutput, description="The run folder.")
    logging: LoggingSection = Field(default_factory=LoggingSection, description="Metrics reporting.")
