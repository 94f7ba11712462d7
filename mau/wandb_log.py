"""Results tables to Weights & Biases for ``mau eval`` and ``mau collect`` (``mau train`` reports through the
Trainer: ``logging.report_to: wandb``). One run per invocation in the config's project (by default ``mau``,
the project ``mau train`` uses), its files under the run folder (``OUT/wandb/``); ``WANDB_MODE=offline`` works
without a network (``wandb sync OUT/wandb/offline-run-*`` uploads later). wandb is imported only when asked
for; it comes with the ``ml`` extra (``wandb`` extra)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mau.config import Model
from mau.errors import MauError


class WandbLogging(Model):
    """Where the results tables go besides the run folder (always written)."""

    report_to: Literal["none", "wandb"] = Field("none", description="none, or wandb: log the results tables "
                                                "to Weights & Biases (needs the wandb package; "
                                                "WANDB_MODE=offline works without a network).")
    wandb_project: str = Field("mau", description="wandb project (unless WANDB_PROJECT is set); mau train's "
                               "default too, so training curves and results meet in one project.")
    run_name: str | None = Field(None, description="Run name for wandb; default the run folder's name.")


def require_wandb(field: str = "logging.report_to") -> None:
    if importlib.util.find_spec("wandb") is None:
        raise MauError(f"{field}=wandb needs the wandb package: pip install -e '.[wandb]' (or set "
                       f"{field}=none)")


def log_tables(
    cfg: WandbLogging, out: Path, job_type: str, tables: dict[str, tuple[list[str], list[list[Any]]]],
    summary: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
) -> str | None:
    """Log ``tables`` (name -> (columns, rows)) and ``summary`` scalars as one wandb run of ``job_type`` with
    its files in ``out/wandb``; returns the run's local folder, or None when reporting is off."""
    if cfg.report_to != "wandb":
        return None
    require_wandb()
    import wandb

    out.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=os.environ.get("WANDB_PROJECT") or cfg.wandb_project, name=cfg.run_name or out.name,
        job_type=job_type, dir=str(out), config=config or {}, reinit="finish_previous",
    )
    try:
        for name, (columns, rows) in tables.items():
            run.log({name: wandb.Table(columns=columns, data=rows)})
        for k, v in (summary or {}).items():
            run.summary[k] = v
        return str(Path(run.dir).parent)
    finally:
        run.finish()


def read_offline_run(run_dir: str | Path) -> dict[str, Any]:
    """What an offline run recorded (its ``run-*.wandb`` file, a LevelDB-style log of protobuf records): the
    project, the run name and the history rows ({key: value}, tables as their metadata). For tests and for
    checking a run before ``wandb sync``."""
    import json
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    files = sorted(Path(run_dir).glob("run-*.wandb"))
    if not files:
        raise MauError(f"{run_dir}: no run-*.wandb file; not a wandb run folder")
    data = files[0].read_bytes()
    block, pos, buf = 32768, 7, b""  # 7: the file's own header
    out: dict[str, Any] = {"project": None, "name": None, "history": []}
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a record header is padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind in (1, 2):  # full record, first fragment
            buf = chunk
        elif kind in (3, 4):  # middle, last fragment
            buf += chunk
        if kind not in (1, 4):
            continue
        rec = pb.Record()
        rec.ParseFromString(buf)
        which = rec.WhichOneof("record_type")
        if which == "run":
            out["project"], out["name"] = rec.run.project, rec.run.display_name
        elif which == "history":
            out["history"].append({(i.key or "/".join(i.nested_key)): json.loads(i.value_json)
                                   for i in rec.history.item})
    return out
