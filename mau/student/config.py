"""The configs of the student's verbs (docs/student.md): ``mau student-train``, the candidate objective on a
BC dataset, and ``mau student-rl``, GRPO over the candidates. The student is a local text-only causal LM
(``mau student``) played by the ``lm`` backend; its trainers have their own configs, apart from ``mau train``
(SFT of a Qwen3.5 VLM) and ``mau rl`` (TRL's GRPO with forks). Light imports only: the CLI parses them before
anything heavy loads."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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
    vote_weight: float = Field(1.0, ge=0, description="Weight of the vote objective: the cross-entropy of "
                               "the expert's choice among the candidates.")
    belief_weight: float = Field(0.0, ge=0, description="Weight of the belief objective: the KL divergence "
                                 "from the expert's belief over the candidates and skip (the dataset's "
                                 "beliefs_json) to the student's softmax over them; rows without a belief "
                                 "count for the vote objective only.")
    readout: Literal["token", "pointer"] = Field("token", description="How a candidate is scored: token, "
                                                 "the log-probability of its first answer token at the "
                                                 "prompt's end (the lm backend's read-out); pointer, a "
                                                 "linear head on the state at its name in the Candidates "
                                                 "line, fitted as a probe first, then trained with the "
                                                 "layers (docs/student.md, \"A reader at the names\").")
    head_reads: Literal["names", "names+mentions"] = Field(
        "names+mentions", description="readout pointer: what the head reads per candidate: names, the "
        "state at its name in the Candidates line; names+mentions, beside it the mean of its states at every "
        "earlier mention of its name (docs/student.md, \"Reading every mention\").")
    head_l2: float = Field(0.03, ge=0, description="readout pointer: the L2 weight of the head's probe fit "
                           "(on standardised states).")
    feature_cache: str | None = Field(None, description="A features.pt shared by several runs over the same "
                                      "student and cut (read where it holds a prompt, extended with what it "
                                      "lacks and saved back); unset: the run folder's own features.pt.")
    per_device_batch_size: int = Field(1, ge=1, description="Examples per forward pass.")
    gradient_accumulation_steps: int = Field(8, ge=1, description="Forward passes per optimizer step.")
    seed: int = Field(0, description="Seed of the data order.")
    logging_steps: int = Field(10, ge=1, description="Log (trainer_log.jsonl) every N steps.")
    eval_steps: int | None = Field(None, ge=1, description="Validation cross-entropy and accuracy every N "
                                   "steps (trainer_log.jsonl); they are always measured before and after "
                                   "training.")

    def readout_record(self) -> dict[str, str]:
        """How candidates are read, for a run's summary: the read-out, and a pointer head's inputs."""
        pointer = {"head_reads": self.head_reads} if self.readout == "pointer" else {}
        return {"readout": self.readout, **pointer}


class StudentOutput(Model):
    dir: str | None = Field(None, description="Run folder; default runs/student-train/<date>/<time>_<config "
                            "name> (student-rl: runs/student-rl/...).")


class HeldoutSection(Model):
    """Held-out matches scored after training (mau.student.score): the detection reading of docs/student.md's
    learning curve."""

    runs: list[str] = Field(default_factory=list, description="Run or match folders of held-out matches "
                            "(compact VOTE prompts); empty: none scored.")
    exclude_seeds: list[int] = Field(default_factory=list, description="Matches with these seeds are left "
                                     "out.")


class StudentTrainConfig(Model):
    """``mau student-train``: the student learns the expert's VOTE as a choice among the candidates."""

    resume: bool = Field(False, description="Keep a finished run in output.dir; an unfinished one reuses its "
                                            "feature cache and trains again.")
    model: StudentModelSection = Field(default_factory=StudentModelSection, description="The student.")
    data: DataSection = Field(default_factory=DataSection, description="The BC dataset (compact VOTE "
                                                                       "prompts).")
    training: CandidateTraining = Field(default_factory=CandidateTraining, description="Optimisation.")
    heldout: HeldoutSection = Field(default_factory=HeldoutSection, description="Held-out matches scored "
                                    "after training (heldout.json).")
    output: StudentOutput = Field(default_factory=StudentOutput, description="The run folder.")

    @model_validator(mode="after")
    def _some_objective(self) -> "StudentTrainConfig":
        if self.training.vote_weight == 0 and self.training.belief_weight == 0:
            raise ValueError("training.vote_weight and training.belief_weight are both 0: nothing to learn; "
                             "set one of them > 0")
        return self


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


class Objective(Model):
    """One objective of the learning curve: the weights of the vote and belief terms."""

    vote_weight: float = Field(1.0, ge=0, description="Weight of the vote cross-entropy.")
    belief_weight: float = Field(0.0, ge=0, description="Weight of the belief KL.")
    sizes: list[int] | None = Field(None, description="Only at these of the curve's sizes (an ablation at "
                                    "one size); None: at every size.")


def _default_objectives() -> dict[str, Objective]:
    return {"vote": Objective(vote_weight=1.0, belief_weight=0.0),
            "vote+belief": Objective(vote_weight=1.0, belief_weight=1.0)}


class StudentCurveConfig(Model):
    """``mau student-curve``: the student trained on nested subsets of a BC dataset under each objective,
    every point scored on the same held-out VOTE prompts, beside the linear reader of the same rows."""

    resume: bool = Field(False, description="Keep the finished points of an unfinished curve in output.dir "
                                            "(each point is a file) and compute the rest.")
    model: StudentModelSection = Field(default_factory=StudentModelSection, description="The student.")
    data: DataSection = Field(default_factory=DataSection, description="The BC dataset (compact VOTE "
                                                                       "prompts).")
    heldout: HeldoutSection = Field(default_factory=HeldoutSection, description="Held-out matches every "
                                    "point is scored on (required).")
    training: CandidateTraining = Field(default_factory=CandidateTraining, description="Optimisation of "
                                        "every point (its vote_weight and belief_weight are the "
                                        "objective's).")
    sizes: list[int] = Field(default_factory=lambda: [250, 1000, 3000, 7000], description="Training "
                             "examples of each point: the first N rows of the training split with its "
                             "matches in a seeded random order (nested subsets); a size above the split is "
                             "the whole split.")
    objectives: dict[str, Objective] = Field(default_factory=_default_objectives, description="Name -> the "
                                             "weights of the vote and belief terms.")
    subset_seed: int = Field(0, description="Seed of the matches' order for the nested subsets.")
    save_sizes: list[int] | None = Field(None, description="Save the students of these sizes "
                                         "(points/<objective>_<size>_model/: the whole model and tokenizer, "
                                         "as mau student-train's OUT/model), to play them in mau eval; "
                                         "unset: the largest of sizes; []: none.")
    linear: bool = Field(True, description="Also fit the linear reader of the compact prompt "
                         "(mau.infer.compact_reader) on each point's rows with its objective, and score it.")
    output: StudentOutput = Field(default_factory=StudentOutput, description="The run folder (default "
                                  "runs/student-curve/...).")

    @model_validator(mode="after")
    def _check(self) -> "StudentCurveConfig":
        if not self.heldout.runs:
            raise ValueError("heldout.runs is empty: every point of the curve is scored on held-out matches; "
                             "give collect runs (configs/collect/heldout_ladder.yaml)")
        if not self.sizes or any(n < 1 for n in self.sizes):
            raise ValueError("sizes: give one or more positive numbers of training examples")
        for name, o in self.objectives.items():
            if o.vote_weight == 0 and o.belief_weight == 0:
                raise ValueError(f"objectives.{name}: vote_weight and belief_weight are both 0; set one > 0")
            bad = [n for n in o.sizes or [] if n not in self.sizes]
            if bad:
                raise ValueError(f"objectives.{name}.sizes: {bad[0]} is not one of sizes {self.sizes}")
        bad = [n for n in self.save_sizes or [] if n not in self.sizes]
        if bad:  # a size no point is trained at would be saved by none, silently
            raise ValueError(f"save_sizes: {bad[0]} is not one of sizes {self.sizes}; save sizes the curve "
                             "trains")
        return self
