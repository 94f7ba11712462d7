"""The collection grid (the paper's RQ2 design): a model pool, round-robin imposter x crewmate pairings, ARIA
configuration cases, repetitions and seeds; and its deterministic split into shards."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Iterator, Literal

from pydantic import AfterValidator, Field, model_validator

from mau.config import Model
from mau.env.config import WorldConfig
from mau.harness.backends.base import ModelConfig
from mau.harness.config import AriaConfig, SeatConfig
from mau.runner import parse_shard  # re-exported: shards are the runner's
from mau.schema import CREWMATE, IMPOSTER

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _short_name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError(f"{v!r}: use letters, digits, '.', '_' or '-' (it goes into match ids and folders)")
    return v


ShortName = Annotated[str, AfterValidator(_short_name)]  # a pool entry's or a case's name


class PoolEntry(Model):
    """One model of the pool, under a short name used in match ids and tables."""

    name: ShortName = Field(description="Short unique name ([A-Za-z0-9._-]), e.g. gpt41mini or qwen35-9b.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The model: backend and settings.")


class CaseConfig(Model):
    """An ARIA configuration case: the harness of each side (the paper's 1A/1B/2A/2B)."""

    name: ShortName = Field("default", description="Short name of the case, used in match ids.")
    crewmate: AriaConfig = Field(default_factory=AriaConfig, description="The crewmates' ARIA axes.")
    imposter: AriaConfig = Field(default_factory=AriaConfig, description="The imposters' ARIA axes.")


class GridConfig(Model):
    """What to play: every (case, imposter model, crewmate model, repetition)."""

    pool: list[PoolEntry] = Field(min_length=1, description="The model pool (at least one entry).")
    self_play: bool = Field(True, description="Include pairings of a model with itself (the paper's round "
                                              "robin does).")
    imposters: list[str] | None = Field(
        None, description="Pool names that play the imposters (default: every pool model; e.g. the imposter "
                          "ladder's rungs against the teacher's temperaments).")
    crewmates: list[str] | None = Field(None, description="Pool names that play the crewmates (default: "
                                                          "every one).")
    cases: list[CaseConfig] = Field(default_factory=lambda: [CaseConfig()], description="ARIA configuration "
                                                                                        "cases.")
    repetitions: int = Field(1, ge=1, description="Matches per pairing and case.")
    seed_scheme: Literal["shared", "per_match"] = Field(
        "shared", description="shared: repetition r plays seeds[r] (or seed+r) in every pairing and case "
                              "(paired cells, but only `repetitions` role draws); per_match: match k of the "
                              "grid plays seed+k, so roles vary across cells (expert data: "
                              "docs/datasets.md).")
    seeds: list[int] | None = Field(
        None, description="Seed of each repetition (shared scheme; shared by every pairing, so arms are "
                          "paired); default seed+rep.")
    seed: int = Field(0, description="Base seed when seeds is not given (and of the per_match scheme).")

    @model_validator(mode="after")
    def _check(self) -> "GridConfig":
        for what, names in (("pool", [p.name for p in self.pool]), ("cases", [c.name for c in self.cases])):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{what}: the name {dup[0]!r} is used twice; names must be unique")
        names = [p.name for p in self.pool]
        for what in ("imposters", "crewmates"):
            bad = [n for n in getattr(self, what) or [] if n not in names]
            if bad:
                raise ValueError(f"{what}: {bad[0]!r} is not a pool name ({', '.join(names)})")
        if self.seed_scheme == "per_match" and self.seeds is not None:
            raise ValueError("seeds: a list of seeds is for seed_scheme shared; per_match plays seed+k for "
                             "match k (set seed, or remove seed_scheme)")
        if self.seeds is not None and len(self.seeds) < self.repetitions:
            raise ValueError(f"seeds: {len(self.seeds)} given for {self.repetitions} repetitions; give one "
                             f"per repetition")
        return self


@dataclass(frozen=True)
class MatchSpec:
    """One planned match of the grid."""

    index: int
    match_id: str
    seed: int
    case: str
    imposter_model: str
    crewmate_model: str
    rep: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def enumerate_grid(grid: GridConfig) -> list[MatchSpec]:
    """Every match of the grid, in a fixed order (case, imposter model, crewmate model, repetition)."""
    out = []
    imposters = [p for p in grid.pool if grid.imposters is None or p.name in grid.imposters]
    crewmates = [p for p in grid.pool if grid.crewmates is None or p.name in grid.crewmates]
    for case in grid.cases:
        for imp in imposters:
            for crew in crewmates:
                if imp.name == crew.name and not grid.self_play:
                    continue
                for rep in range(grid.repetitions):
                    k = len(out)
                    if grid.seed_scheme == "per_match":
                        seed = grid.seed + k
                    else:
                        seed = grid.seeds[rep] if grid.seeds is not None else grid.seed + rep
                    mid = f"{k:05d}_{case.name}_I-{imp.name}_C-{crew.name}_r{rep}"
                    out.append(MatchSpec(k, mid, seed, case.name, imp.name, crew.name, rep))
    return out


def describe_plan(grid: GridConfig, world: WorldConfig | None = None) -> str:
    """The plan of a grid as text (``mau collect --dry-run``): totals, per case the harness of each side, the
    pool, the pairings, the seeds and how many distinct imposter pairs they draw (``world``'s roles)."""
    from collections import Counter

    from mau.env.rules import imposters_of

    specs = enumerate_grid(grid)
    per_case = Counter(s.case for s in specs)
    pairs = Counter((s.imposter_model, s.crewmate_model) for s in specs)
    axes = ("state", "memory", "planning", "reflection", "prompt_style")
    lines = [f"plan: {len(specs)} matches = {len(pairs)} pairings (imposter x crewmate"
             f"{', self-play included' if grid.self_play else ''}) x {len(grid.cases)} cases x "
             f"{grid.repetitions} repetitions"]
    for c in grid.cases:
        crew = ", ".join(f"{a}={getattr(c.crewmate, a)}" for a in axes)
        imp = ", ".join(f"{a}={getattr(c.imposter, a)}" for a in axes)
        lines.append(f"case {c.name}: {per_case[c.name]} matches; crewmates: {crew}; imposters: {imp}")
    lines.append("pool: " + ", ".join(f"{p.name} ({p.model.backend}: {p.model.model})" for p in grid.pool))
    lines.append(f"pairings (imposter x crewmate): {len(pairs)}, {min(pairs.values())}-{max(pairs.values())} "
                 "matches each")
    if grid.seed_scheme == "per_match":
        lines.append(f"seeds: one per match, {specs[0].seed}..{specs[-1].seed}")
    else:
        reps = range(grid.repetitions)
        seeds = grid.seeds[: grid.repetitions] if grid.seeds is not None else [grid.seed + r for r in reps]
        lines.append(f"seeds per pairing and case: {seeds}")
    game = (world or WorldConfig()).game
    draws = {tuple(imposters_of(game, s)) for s in {sp.seed for sp in specs}}
    n = game.num_players
    lines.append(f"imposter pairs drawn: {len(draws)} distinct (of {math.comb(n, game.num_imposters)} "
                 f"possible; roles: {game.roles})")
    return "\n".join(lines)


def in_shard(specs: list[MatchSpec], shard: int, n_shards: int) -> Iterator[MatchSpec]:
    """Match k belongs to shard k % N: every match in exactly one shard, shards balanced."""
    return (s for s in specs if s.index % n_shards == shard)


def seats_for(grid: GridConfig, spec: MatchSpec) -> dict[str, SeatConfig]:
    pool = {p.name: p for p in grid.pool}
    case = next(c for c in grid.cases if c.name == spec.case)
    return {CREWMATE: SeatConfig(model=pool[spec.crewmate_model].model, aria=case.crewmate),
            IMPOSTER: SeatConfig(model=pool[spec.imposter_model].model, aria=case.imposter)}


__all__ = [
    "PoolEntry", "CaseConfig", "GridConfig", "MatchSpec", "enumerate_grid", "describe_plan", "parse_shard",
    "in_shard", "seats_for", "WorldConfig",
]
