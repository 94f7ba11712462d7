"""mau play --config configs/play/scripted.yaml --seed 1 --out runs/play/seed1

Play one whole match and write its match folder (docs/formats.md): header with seed, roles, config and outcome;
the ground-truth event log; first-person frames with ``--frames``. Prints the outcome on one line.
With ``policy: aria`` (e.g. ``configs/play/aria_scripted.yaml``) every seat is an ARIA agent whose modules call
its seat's model; the folder then also holds every call record (calls.jsonl), the frames the calls saw, and
each agent's memory at meeting ends (memory.jsonl). Rerunning into a finished match folder needs ``--resume``
(which keeps the finished match).
"""

from __future__ import annotations

import argparse
from typing import Literal

from pydantic import Field, field_validator

from mau.commands.common import add_config_arguments, dated_run_dir
from mau.env.config import Model, WorldConfig
from mau.harness.config import SeatConfig


def _default_seats() -> dict[str, SeatConfig]:
    return {"crewmate": SeatConfig(), "imposter": SeatConfig()}


class PlayConfig(Model):
    """``mau play``: one match."""

    seed: int = Field(0, description="Match seed: roles, missions and every scripted choice follow from it.")
    out: str | None = Field(None, description="Match folder; default runs/play/<date>/<time>_seed<N>.")
    resume: bool = Field(False, description="Allow --out to be a finished match folder (it is kept as it is).")
    policy: Literal["scripted", "aria"] = Field(
        "scripted", description="scripted: the scripted policy, no harness; aria: ARIA agents calling each seat's model.")
    state_mode: Literal["ego", "privileged"] = Field("ego", description="scripted policy: observation state mode.")
    seats: dict[str, SeatConfig] = Field(
        default_factory=_default_seats,
        description="aria: the model and harness of each side ('crewmate', 'imposter'), or of one player by name.")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The world: backend, map, rules, frames.")

    @field_validator("seats")
    @classmethod
    def _both_sides(cls, v: dict[str, SeatConfig]) -> dict[str, SeatConfig]:
        missing = [k for k in ("crewmate", "imposter") if k not in v]
        if missing:
            raise ValueError(f"seats needs a '{missing[0]}' entry (the model of that side)")
        return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--seed", type=int, help="match seed")
    p.add_argument("--out", help="match folder to write")
    p.add_argument("--frames", action="store_true", help="save every player's first-person frame at every step")
    p.add_argument("--resume", action="store_true", help="accept a finished --out folder and keep it")


def config_from_args(args: argparse.Namespace) -> PlayConfig:
    from mau.config import load_config, parse_overrides, set_dotted

    over = parse_overrides(args.set)
    if args.seed is not None:
        over["seed"] = args.seed
    if args.out is not None:
        over["out"] = args.out
    if args.resume:
        over["resume"] = True
    if args.frames:
        set_dotted(over, "world.frames.save", True)
    cfg = load_config(PlayConfig, args.config, over)
    unknown = [k for k in cfg.seats if k not in ("crewmate", "imposter") and k not in
               {p.name for p in cfg.world.game.players}]
    if unknown:
        from mau.errors import ConfigError

        raise ConfigError(f"seats.{unknown[0]}: not a side (crewmate, imposter) nor a player's name; fix the key")
    return cfg


def main(cfg: PlayConfig) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.env.backends import make_world
    from mau.env.runner import play_match, write_match
    from mau.env.scripted import ScriptedPolicy
    from mau.errors import MauError
    from mau.matchdir import MatchWriter, is_match_dir, read_header
    from mau.provenance import provenance

    out = Path(cfg.out or dated_run_dir("play", f"seed{cfg.seed}"))
    if is_match_dir(out):
        if not cfg.resume:
            raise MauError(f"--out {out}: already holds a finished match; pass --resume to keep it, or choose another --out")
        h = read_header(out)
        print(f"{h['outcome']} seed={h['seed']} steps={h['steps']} (already finished) -> {out}")
        return 0
    if out.exists() and any(out.iterdir()):
        raise MauError(f"--out {out}: exists and is not a match folder; choose an empty or new folder")
    world = make_world(cfg.world)
    writer = MatchWriter(out)
    extra: dict = {}
    try:
        if cfg.policy == "aria":
            from mau.harness.backends import make_backend
            from mau.harness.match import AriaMatch

            backends = {k: make_backend(s.model) for k, s in cfg.seats.items()}
            match = AriaMatch(world, cfg.seats, backends, writer.staging, out.name)
            result = asyncio.run(_play(match, cfg.seed, backends.values()))
            extra = match.header_extra()
        else:
            policies = {p.name: ScriptedPolicy(p.name, world.map, cfg.seed) for p in cfg.world.game.players}
            result = play_match(world, policies, cfg.seed, cfg.state_mode, writer, frames=cfg.world.frames.save,
                                topdown=cfg.world.frames.topdown)
        folder = write_match(writer, world, result, cfg, provenance(), extra)
    except BaseException:
        writer.abort()
        raise
    st = world.state
    summary = {"ejections": len(st.ejections), "kills": sum(1 for p in st.players if p.death_tick is not None),
               "meetings": st.meetings_held}
    if extra:
        summary.update(calls=extra["calls"]["calls"], fallbacks=extra["calls"]["fallbacks"])
    print(f"{result.outcome} seed={cfg.seed} steps={result.steps} game_s={result.ticks / 20:.0f} "
          f"wall_s={result.wall_seconds:.2f} {json.dumps(summary)} -> {folder}")
    return 0


async def _play(match, seed: int, backends):
    """Play, then close the backends in the same event loop (their HTTP clients belong to it)."""
    try:
        return await match.play(seed)
    finally:
        for b in backends:
            await b.aclose()
