"""Run-time options of a verb (light: the CLI builds them before anything heavy is imported)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunOptions:
    """Run-time switches of a verb: how it runs, never what it computes (so never part of a config or of a
    run's identity)."""

    progress: bool = True  # show progress bars (off in batch logs)
    source: str | None = None  # the --config file the config came from (names default run folders)
    dry_run: bool = False  # print the plan, write nothing
    force: bool = False  # replace a finished output folder
    max_failures: int = 0  # failed matches tolerated before a run of matches stops
    plan: bool = False  # mau train --plan: print sequence lengths, steps and memory per GPU; train nothing
    plan_gpus: int = 8  # the GPUs of --plan's DDP and ZeRO-3 rows
    plan_json: bool = False  # --plan as JSON

    def tag(self, default: str) -> str:
        """The default run folder's tag: the config file's name, else ``default``."""
        return Path(self.source).stem if self.source else default
