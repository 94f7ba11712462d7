"""mau dataset --runs runs/collect/smoke --filter bcwin --out runs/datasets/smoke-bcwin

Build a behaviour-cloning dataset (format ``mau.dataset`` v1, docs/datasets.md) from match folders: one
(X, S, Y) example per crewmate call that the model answered itself (X the call's frames, S its messages, Y its
raw output), kept by a filter (``bcwin``, ``bcvote`` or the union ``bcwin+vote``), split by match into
train / validation / test. ``--runs`` takes collect runs, match folders, or any folder holding match folders.
The output is a ``datasets.DatasetDict`` (``datasets.load_from_disk(out)``) in TRL's conversational vision
format, with a dataset card (README.md), the resolved config and a versioned header (dataset.json). Every
build runs the role-leak audit; a leak fails it and writes nothing. Damaged lines are reported and counted.
Rebuilding into a finished dataset folder needs ``--resume`` (which keeps it as it is). Needs the ``ml`` extra
(``datasets``).
"""

from __future__ import annotations

import argparse

from pydantic import Field, field_validator, model_validator

from mau.commands.common import add_config_arguments, dated_run_dir
from mau.env.config import Model


class SplitConfig(Model):
    """How matches are assigned to splits (whole matches, never rows)."""

    train: float = Field(0.8, ge=0, le=1, description="Fraction of matches in the train split.")
    validation: float = Field(0.1, ge=0, le=1, description="Fraction of matches in the validation split.")
    test: float = Field(0.1, ge=0, le=1, description="Fraction of matches in the test split.")
    seed: int = Field(0, description="Split seed: a match's split is a SHA-256 hash of (seed, match id), so it "
                                     "is the same in every build with this seed.")

    @model_validator(mode="after")
    def _sum_to_one(self) -> "SplitConfig":
        total = self.train + self.validation + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + validation + test must be 1 (got {total:g})")
        return self


class DatasetConfig(Model):
    """``mau dataset``: a behaviour-cloning dataset from match folders."""

    runs: list[str] = Field(default_factory=list, description="Collect run folders, match folders, or folders "
                            "holding match folders (searched recursively for match.json; hidden folders skipped).")
    filter: str = Field("bcwin", description="bcwin (crewmate calls of matches the crew won), bcvote (crewmate "
                        "votes for a true imposter), bcwin+vote (their union), or all (every crewmate expert call); "
                        "registered names joined by '+' give their union.")
    out: str | None = Field(None, description="Dataset folder; default runs/datasets/<date>/<time>_<filter>.")
    resume: bool = Field(False, description="Allow --out to be a finished dataset folder (it is kept as it is).")
    split: SplitConfig = Field(default_factory=SplitConfig, description="Split fractions and seed.")
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--runs", nargs="+", metavar="DIR", help="collect runs, match folders or folders of them")
    p.add_argument("--filter", help="bcwin, bcvote or bcwin+vote (default bcwin)")
    p.add_argument("--out", help="dataset folder to write")
    p.add_argument("--resume", action="store_true", help="accept a finished --out folder and keep it")


def config_from_args(args: argparse.Namespace) -> DatasetConfig:
    from mau.config import load_config, parse_overrides

    over = parse_overrides(args.set)
    for key in ("runs", "filter", "out"):
        if getattr(args, key) is not None:
            over[key] = getattr(args, key)
    if args.resume:
        over["resume"] = True
    return load_config(DatasetConfig, args.config, over)


def main(cfg: DatasetConfig) -> int:
    from pathlib import Path

    from mau.datasets.build import build_dataset, is_dataset_dir, read_dataset_header
    from mau.errors import ConfigError, MauError

    out = Path(cfg.out or dated_run_dir("datasets", cfg.filter.replace("+", "-")))
    if is_dataset_dir(out):
        if not cfg.resume:
            raise MauError(f"--out {out}: already holds a finished dataset; pass --resume to keep it, or choose another --out")
        h = read_dataset_header(out)
        ex = h["examples"]
        print(f"{h['filter']}: " + " ".join(f"{k}={v}" for k, v in ex.items()) + f" (already finished) -> {out}")
        return 0
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MauError(f"--out {out}: exists and is not a dataset folder; choose an empty or new folder")
    if not cfg.runs:
        raise ConfigError("runs: no input; give --runs DIR [DIR ...] (collect runs or match folders)")
    try:
        import datasets  # noqa: F401
    except ImportError:
        raise MauError("mau dataset needs the datasets package: pip install -e '.[ml]'") from None
    cfg = cfg.model_copy(update={"out": str(out)})
    _, stats = build_dataset(cfg, out)
    s = stats.summary()
    ex, sk = s["examples"], s["skipped"]
    skipped = " ".join(f"{k}={v}" for k, v in sk.items() if v or k != "text_only")
    print(f"{cfg.filter}: " + " ".join(f"{k}={v}" for k, v in ex.items())
          + f" examples from {sum(s['matches'].values())} matches; skipped: {skipped}; "
          f"damaged inputs: {stats.n_problems} -> {out}")
    return 0
