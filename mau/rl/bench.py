"""Speed of GRPO on the CPU (``mau bench rl``; see mau/commands/bench.py): a few ``mau rl`` steps with the
tiny Qwen3.5 made to vote in the format (``mau.models.tiny.build_voter_model``) on the VOTE decisions of a
played match."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


def bench_rl(seed: int, steps: int) -> dict[str, Any]:
    import contextlib
    import io
    import shutil
    import sys

    from mau.config import load_config, parse_overrides
    from mau.models.tiny import build_tiny_model, build_voter_model
    from mau.replay.bench import voted_matches
    from mau.rl.config import RLConfig
    from mau.rl.grpo import train_rl

    Path("runs").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-rl-", dir="runs"))
    try:
        m = voted_matches(tmp, 1, seed)[0]
        build_tiny_model(tmp / "tiny", seed=0)
        voter = build_voter_model(tmp / "tiny", tmp / "voter")
        cfg = load_config(
            RLConfig, "configs/rl/tiny.yaml",
            parse_overrides(
                [
                    f"decisions.runs=[{m}]", f"policy.path={voter}", f"grpo.max_steps={steps}",
                    "output.merge=false",
                ]
            ),
        )
        with (
            contextlib.redirect_stderr(io.StringIO()) if not sys.stderr.isatty() else contextlib.nullcontext()
        ):
            s = train_rl(cfg, tmp / "rl")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    g = cfg.grpo
    return {"bench": "rl", "steps": s["steps"], "train_s": s["train_s"],
            "s_per_step": round(s["train_s"] / s["steps"], 2),
            "steps_per_minute": s["steps_per_minute"], "completions_per_step": g.per_device_batch_size,
            "num_generations": g.num_generations, "max_completion_length": g.max_completion_length,
            "forks": s["forks"], "fork_seconds": s["fork_seconds"], "model": "tiny Qwen3.5 (0.55 M, voter)",
            "cores": 1}
