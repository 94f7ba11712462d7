"""mau fork runs/play/seed1 --step 32 --module vote --answers answers.jsonl --out runs/fork/seed1-s32

Counterfactual forks of one recorded decision. The match is replayed from its folder up to the decision
(``--step``, ``--agent`` (default the first crewmate that made it), ``--module``, default vote), the world and
every agent's harness state are snapshotted there, and each branch answers the decision with an alternative
(``--answers FILE``: JSON lines, each a raw answer string or a JSON object; or ``--model``: N answers sampled
from a model given the decision's recorded prompt), lets the other agents of that step answer as recorded and
plays on live with the recorded seats' models (or ``--set seats...``) to the end of the match (``--horizon
meeting``: of the meeting). Writes OUT/fork.json and OUT/fork.md (per answer: crew win rate, the meeting's
ejection, endings, with 95% Wilson intervals) and each branch as a match folder OUT/branches/NNNN whose
header links it to its parent and decision (docs/replay.md).
"""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import Field

from mau.commands.common import FORCE, Flag, config_flags
from mau.config import Model
from mau.harness.backends.base import ModelConfig
from mau.harness.config import SeatConfig
from mau.options import RunOptions


class ForkConfig(Model):
    """``mau fork``: branches of one recorded decision."""

    match: str = Field(description="The recorded match folder (sim backend, policy aria).")
    step: int = Field(description="The roam step of the decision (the call record's step).")
    agent: str | None = Field(None, description="Who decided; default the first crewmate with that "
                                                "module at that step.")
    module: str = Field("vote", description="The decision's module (vote, meeting, report, ...).")
    n: int | None = Field(None, ge=1, description="Answers to sample from model (or: use only the first "
                                                  "n of --answers).")
    answers: str | None = Field(None, description="JSON-lines file of alternative answers (strings or "
                                                  "objects).")
    include_recorded: bool = Field(True, description="Add a branch with the recorded answer (the control).")
    model: ModelConfig | None = Field(None, description="Sample the alternatives from this model (hf, "
                                                        "openai).")
    repeats: int = Field(1, ge=1, description="Plays of each answer (live models that sample give "
                                              "different plays).")
    horizon: Literal["match", "meeting"] = Field("match", description="Play each branch to the end of "
                                                                      "the match, "
                                                 "or of the first meeting that ends after the fork.")
    seats: dict[str, SeatConfig] | None = Field(None, description="Who plays on after the fork; default "
                                                                  "the recorded seats.")
    frames: bool = Field(False, description="Render frames for live calls after the fork (a live VLM "
                                            "needs them).")
    out: str | None = Field(None, description="Fork folder; default runs/fork/<date>/<time>_<match>_s<step>.")
    write_branches: bool = Field(True, description="Write every branch as a match folder.")


FLAGS = [*config_flags("horizon=meeting"),
         Flag("match", "recorded match folder", key="match"),
         Flag("--step", "roam step of the decision", key="step", type=int),
         Flag("--agent", "who decided (default: the first crewmate)", key="agent"),
         Flag("--module", "the decision's module (default vote)", key="module"),
         Flag("--n", "answers to sample (with --model), or the first n of --answers", key="n", type=int),
         Flag("--answers", "JSON-lines file of alternative answers", key="answers"),
         Flag("--model", "sample answers from this model (hf backend: a local path or hub "
                         "id)", key="model.model"),
         Flag("--adapter", "with --model: a LoRA adapter", key="model.adapter"),
         Flag("--horizon", "play to the end of the match or of the meeting", key="horizon",
              choices=("match", "meeting")),
         Flag("--repeats", "plays of each answer", key="repeats", type=int),
         Flag("--out", "fork folder", key="out"),
         FORCE]


def config_from_args(args: argparse.Namespace) -> ForkConfig:
    """The flags, with ``--model`` meaning the hf backend unless ``--set model.backend=...`` says
    otherwise."""
    from mau.commands.common import load, parse_sets

    cfg = load(ForkConfig, args, FLAGS)
    if args.model is not None and "backend" not in (parse_sets(args).get("model") or {}):
        cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"backend": "hf"})})
    return cfg


def main(cfg: ForkConfig, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json

    from mau import schema as F
    from mau.errors import ConfigError, MauError
    from mau.replay.fork import FORK_HEADER, FORK_REPORT, read_answers, report_md, run_fork, sample_answers
    from mau.replay.record import read_match
    from mau.rundir import RunDir

    rec = read_match(cfg.match)
    if rec.policy != "aria":
        raise MauError(f"{cfg.match}: a scripted-policy match has no model decisions to fork; fork an ARIA "
                       f"match")
    call = rec.find_decision(cfg.step, cfg.agent, cfg.module)
    if cfg.answers is None and cfg.model is None:
        raise ConfigError("give the alternatives: --answers FILE, or --model (with --n) to sample them")
    if cfg.answers is not None:
        answers: list[str | None] = list(read_answers(cfg.answers))[: cfg.n or None]
    else:
        answers = asyncio.run(sample_answers(rec, call, cfg.model, cfg.n or 8))
    if cfg.include_recorded:
        answers = [call[F.RAW_OUTPUT]] + answers
    run = RunDir.choose(cfg.out, "fork", f"{rec.path.name}_s{cfg.step}", "fork")
    run.keep_finished((run / FORK_HEADER).is_file(), False, opts.force)
    out = run.path
    out.mkdir(parents=True, exist_ok=True)
    header = asyncio.run(
        run_fork(
            rec, call, answers, horizon=cfg.horizon, repeats=cfg.repeats, seats=cfg.seats, frames=cfg.frames,
            out=out if cfg.write_branches else None,
        )
    )
    header["config"] = cfg.model_dump(mode="json")
    (out / FORK_HEADER).write_text(json.dumps(header, indent=1))
    (out / FORK_REPORT).write_text(report_md(header))
    print(report_md(header))
    print(f"fork: {len(header['branches'])} branches of {call[F.CALL_ID]} ({header['branches_per_second']} "
          f"branches/s) -> {out}/{FORK_REPORT}")
    return 0
