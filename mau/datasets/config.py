"""The config of ``mau dataset`` (beside the builder that reads it)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from mau.config import Model


class SplitConfig(Model):
    """How matches are assigned to splits (whole matches, never rows)."""

    train: float = Field(0.8, ge=0, le=1, description="Fraction of matches in the train split.")
    validation: float = Field(0.1, ge=0, le=1, description="Fraction of matches in the validation split.")
    test: float = Field(0.1, ge=0, le=1, description="Fraction of matches in the test split.")
    seed: int = Field(0, description="Split seed: a match's split is a SHA-256 hash of (seed, match id), so "
                                     "it is the same in every build with this seed.")

    @model_validator(mode="after")
    def _sum_to_one(self) -> "SplitConfig":
        total = self.train + self.validation + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + validation + test must be 1 (got {total:g})")
        return self


class DatasetConfig(Model):
    """``mau dataset``: a behaviour-cloning dataset from match folders."""

    runs: list[str] = Field(default_factory=list, description="Collect run folders, match folders, or "
                            "folders holding match folders (searched recursively for match.json; hidden "
                            "folders skipped).")
    filter: str = Field("bcwin", description="bcwin (crewmate calls of matches the crew won), bcvote "
                        "(crewmate votes for a true imposter), bcwin+vote (their union), or all (every "
                        "crewmate expert call); registered names joined by '+' give their union.")
    vote_skips: bool = Field(True, description="bcvote keeps the expert's own skips (a skip is the scripted "
                             "teacher's abstention when no player is likely enough; docs/datasets.md); "
                             "false: only votes for a true imposter.")
    out: str | None = Field(None, description="Dataset folder; default runs/datasets/<date>/<time>_<filter>.")
    resume: bool = Field(False, description="Allow --out to be a finished dataset folder (it is kept as it "
                                            "is).")
    split: SplitConfig = Field(default_factory=SplitConfig, description="Split fractions and seed.")
    modules: list[str] | None = Field(None, description="Keep only the calls of these modules among what the "
                                      "filter keeps (e.g. [vote]: BCwin's VOTE rows, all the CPU student "
                                      "learns); None: every module.")
    include_text_only: bool = Field(True, description="Keep examples without images (text-only modules: "
                                    "mission, meeting, vote, reflect, strategy).")
    writer_batch_size: int = Field(100, ge=1, description="Rows buffered per split before they are written "
                                   "(bounds memory: rows carry their JPEG bytes).")
    tokenizer: str | None = Field(None, description="Local tokenizer or model folder for token statistics in "
                                  "the card; unset: whitespace-separated words as an estimate.")

    @field_validator("filter")
    @classmethod
    def _known_filter(cls, v: str) -> str:
        from mau.datasets.filters import parse_spec

        parse_spec(v)
        return v
