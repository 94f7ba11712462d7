"""mau replay runs/play/seed1 --check

Replay recorded sim matches from their folders alone: the seed and resolved config recreate the world, and
every model call is answered with its recorded raw output (``calls.jsonl``) in place of the model, so no model
or server is needed; scripted-policy matches rerun their seeded policies. The replayed event log is compared
with ``events.jsonl`` byte for byte (and, for ARIA matches, the memory dumps and each call's parsed answer).
Prints one JSON line per match; with ``--check`` the exit status is 1 when any match differs, and the first
differing event is printed (docs/replay.md).
"""

from __future__ import annotations

from pydantic import Field

from mau.commands.common import Flag
from mau.config import Model
from mau.options import RunOptions


class ReplayCmdConfig(Model):
    """``mau replay``: replay recorded matches exactly."""

    matches: list[str] = Field(min_length=1, description="Match folders (or collect / eval run folders) to "
                                                         "replay.")
    check: bool = Field(False, description="Exit with status 1 if any replay differs from its record.")


FLAGS = [Flag("matches", "match folders, or run folders (their matches/ are "
                         "replayed)", key="matches", type=list),
         Flag("--check", "exit 1 when a replay differs from its record", key="check", type=bool)]
CONFIG = "mau.commands.replay:ReplayCmdConfig"


def main(cfg: ReplayCmdConfig, opts: RunOptions = RunOptions()) -> int:
    import json
    import sys

    from mau.replay.check import check
    from mau.replay.record import match_folders

    bad = 0
    for m in match_folders(cfg.matches):
        r = check(m)
        print(json.dumps(r), flush=True)
        if not r["ok"]:
            bad += 1
            d = r["first_difference"]
            if d is not None:
                print(f"{m}: first differing event #{d['index']}:\n  recorded: {d['recorded']}\n  replayed: "
                      f"{d['replayed']}", file=sys.stderr)
            if r["divergence"]:
                print(f"{m}: {r['divergence']}", file=sys.stderr)
    return 1 if cfg.check and bad else 0
