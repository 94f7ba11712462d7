"""The configs of the student's verbs (docs/student.md): ``mau student-train``, the candidate objective on a
BC dataset, and ``mau student-rl``, GRPO over the candidates. The student is a local text-only causal LM
(``mau student``) played by the ``lm`` backend; its trainers have their own configs, apart from ``mau train``
(SFT of a Qwen3.5 VLM) and ``mau rl`` (TRL's GRPO with forks). Light imports only: the CLI parses them before
anything heavy loads."""

from __future__ import annotations

from pydantic import Field

from mau.config import Model
from mau.replay.decisions import DecisionsSection
from mau.replay.reward import RewardConfig
from mau.train.config import DataSection, GroupSection, OptimSection

STUDENT_MODEL = "runs/student/model"  # where `mau student` materialises SmolLM2-135M (make student)
TRAIN_LAST_LAYERS = (
    "Decoder layers trained (the last N), with the final norm; the rest stay frozen and their "
    "output is cached (features.pt)."
)


class StudentModelSection(Model):
    """The student to train: a local Llama-architecture causal LM folder, loaded in float32 on the CPU."""

    path: str = Field(STUDENT_MODEL, description="The student's model folder (mau student), or a trained "
                      "student's OUT/model.")


class CandidateTraining(OptimSection):
    """The candidate objective: the cross-entropy of the expert's choice among the VOTE candidates (AdamW)."""

    train_last_layers: int = Field(4, ge=1, description=TRAIN_LAST_LAYERS)
    per_device_batch_size: int = Field(1, ge=1, description="Examples per forward pass.")
    gradient_accumulation_steps: int = Field(8, ge=1, description="Forward passes per optimizer step.")
    seed: int = Field(0, description="Seed of the data order.")
    logging_steps: int = Field(10, ge=1, description="Log (trainer_log.jsonl) every N steps.")
    eval_steps: int | None = Field(None, ge=1, description="Validation cross-entropy and accuracy every N "
                                   "steps (trainer_log.jsonl); they are always measured before and after "
                                   "training.")


class StudentOutput(Model):
    dir: str | None = Field(None, description="Run folder; default runs/student-train/<date>/<time>_<config "
                            "name> (student-rl: runs/student-rl/...).")


class StudentTrainConfig(Model):
    """``mau student-train``: the student learns the expert's VOTE as a choice among the candidates."""

    resume: bool = Field(False, description="Keep a finished run in output.dir; an unfinished one reuses its "
                                            "feature cache and trains again.")
    model: StudentModelSection = Field(default_factory=StudentModelSection, description="The student.")
    data: DataSection = Field(default_factory=DataSection, description="The BC dataset (compact VOTE "
                                                                       "prompts).")
    training: CandidateTraining = Field(default_factory=CandidateTraining, description="Optimisation.")
    output: StudentOutput = Field(default_factory=StudentOutput, description="The run folder.")


class CandidateGRPO(GroupSection):
    """GRPO over the candidates: groups sampled from the student's candidate scores, rewarded by the vote
    terms."""

    train_last_layers: int = Field(4, ge=1, description=TRAIN_LAST_LAYERS)
    feature_cache: str | None = Field(None, description="A features.pt of a student-train run whose "
                                      "lower-layer outputs are reused.")
    scale_rewards: str = Field("group", description="group: advantages divided by the group's standard "
                                                    "deviation; anything else: only centred.")
    logging_steps: int = Field(1, ge=1, description="Log every N steps.")
    seed: int = Field(0, description="Seed of sampling and data order.")


class StudentRLConfig(Model):
    """``mau student-rl``: GRPO of the student's VOTE over its candidates, rewarded by the vote terms (no
    forks)."""

    resume: bool = Field(False, description="Keep a finished run in output.dir.")
    policy: StudentModelSection = Field(default_factory=StudentModelSection, description="The start policy "
                                        "(a student-train run's OUT/model) and KL reference.")
    decisions: DecisionsSection = Field(default_factory=DecisionsSection, description="The prompts: recorded "
                                        "crewmate VOTE calls in the compact profile.")
    reward: RewardConfig = Field(default_factory=RewardConfig, description="The vote terms (the meeting and "
                                 "match terms must be 0: nothing is forked).")
    grpo: CandidateGRPO = Field(default_factory=CandidateGRPO, description="GRPO settings.")
    output: StudentOutput = Field(default_factory=StudentOutput, description="The run folder.")
