"""The eval config: the crewmate arms, the fixed imposter models, the shared seeds, each side's ARIA axes, the
world; and the plan of matches it defines (every arm x imposter model x seed), split into shards like collect.

Arms and imposters are mappings ``name -> ModelConfig`` (ordered as written) so that one field of one arm can
be set from the command line (``--set arms.bcwin.adapter=runs/train/bcwin/adapter``); the list form
``[{name, model}, ...]`` is accepted too. Layering merges mappings, so an override in mapping form adds arms
to the YAML's; to replace the YAML's arms, override with the list form (a list replaces).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from mau import schema as F
from mau.config import Model
from mau.env.config import WorldConfig
from mau.harness.backends.base import ModelConfig
from mau.harness.config import AriaConfig, SeatConfig, known_modules
from mau.runner import RunConfig
from mau.wandb_log import WandbLogging

# Names become parts of folder names and of --set keys (so no '.'); '+' is allowed for arms like "bcwin+vote".
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*$")
POOLED = "all"  # the column of every imposter model together (reserved: no imposter may be called so)
EVAL_CASE = "eval"  # the "case" of every eval match (collect's grid field), for tools that read collect runs


def _named_models(v: Any, what: str) -> Any:
    """Accept ``[{name, model}, ...]`` as well as ``{name: model}``; check the names."""
    if isinstance(v, list):
        out: dict[str, Any] = {}
        for item in v:
            if not isinstance(item, dict) or "name" not in item or set(item) - {"name", "model"}:
                raise ValueError(f"{what}: each list item is {{name: ..., model: {{...}}}}")
            if item["name"] in out:
                raise ValueError(f"{what}: the name {item['name']!r} is used twice; names must be unique")
            out[item["name"]] = item.get("model", {})
        v = out
    if isinstance(v, dict):
        for name in v:
            if not isinstance(name, str) or not _NAME.match(name):
                raise ValueError(f"{what}: {name!r}: use letters, digits, '_', '+' or '-' (it becomes part "
                                 f"of folder names and --set keys)")
    return v


class BCRowsSection(Model):
    """The linear peer of a BC student (``mau.eval.baselines``, "linear (BC rows)"): the linear reader of the
    compact VOTE prompt fitted on a BC dataset's training rows with the student's objective."""

    dataset: str = Field(description="The BC dataset folder (mau dataset) the student was trained on.")
    vote_weight: float = Field(1.0, ge=0, description="Weight of the expert's vote in the fit (as the "
                                                     "student's training.vote_weight).")
    belief_weight: float = Field(1.0, ge=0, description="Weight of the expert's belief in the fit (as the "
                                                       "student's training.belief_weight).")
    max_rows: int | None = Field(None, ge=1, description="Fit on the first N training rows only.")


class EvalConfig(RunConfig):
    """``mau eval``: crewmate arms against fixed imposter models on one list of seeds shared by every arm."""

    report_only: bool = Field(False, description="Play nothing: recompute the report from the run folder's "
                                                 "matches.")
    arms: dict[str, ModelConfig] = Field(
        min_length=1, description="The crewmate arms: name -> the model of the six crewmate seats "
                                  "(baseline, adapters, ...).")
    imposters: dict[str, ModelConfig] = Field(
        min_length=1, description="The fixed imposter models: name -> the model of the two imposter seats.")
    arm_modules: list[str] | None = Field(
        None, description="Only these modules ask the arm's model (e.g. [vote]: a tuned VOTE), in every arm; "
                          "the others ask arm_rest_model. None: all.")
    arm_rest_model: ModelConfig = Field(
        default_factory=ModelConfig, description="With arm_modules: the crewmates' model of the other "
                                                 "modules (default the scripted expert).")
    probe_arms: list[str] | None = Field(
        None, description="With crewmate_aria.probes.enabled: the arms whose models are probed (e.g. not a "
                          "model never trained to answer a probe). None: every arm.")
    baseline: str | None = Field(None, description="The arm the others are compared with (paired, same "
                                                   "seeds); default the first arm.")
    seeds: list[int] | None = Field(None, description="The match seeds, shared by every arm and imposter "
                                                      "model (pairs the arms).")
    n_seeds: int | None = Field(None, ge=1, description="Without seeds: play seeds seed, seed+1, ..., "
                                                        "seed+n_seeds-1.")
    seed: int = Field(0, description="Base seed when seeds is not given.")
    arm_seeds: dict[str, int] = Field(default_factory=dict, description="Arm -> play only the first N seeds "
                                      "of the list (a row that needs fewer matches; pairs with other arms "
                                      "are those seeds). Unlisted arms play every seed.")
    crewmate_aria: AriaConfig = Field(default_factory=AriaConfig,
                                      description="The crewmates' ARIA axes (default: the paper's crewmate "
                                                  "setting 1).")
    imposter_aria: AriaConfig = Field(default_factory=AriaConfig, description="The imposters' ARIA axes.")
    max_fallback_share: float = Field(
        0.5, ge=0, le=1, description="An arm whose own calls fell back more than this share (or that never "
                                     "got an answer) fails the eval: a warning and a non-zero exit unless "
                                     "allow_fallbacks.")
    allow_fallbacks: bool = Field(False, description="Exit 0 even when an arm is over max_fallback_share "
                                                     "(--allow-fallbacks).")
    bootstrap_resamples: int = Field(2000, ge=100, description="Resamples of the match-level (and paired, "
                                                               "seed-level) bootstrap intervals.")
    bootstrap_seed: int = Field(0, description="Seed of the bootstrap resampling (the report is "
                                               "deterministic).")
    world: WorldConfig = Field(default_factory=WorldConfig, description="The world every match is played in.")
    adapter_guard: bool = Field(True, description="Before playing, ask the baseline and every adapter arm "
                                "the fixed guard prompts at temperature 0 and stop if an arm answers exactly "
                                "as the baseline (its adapter is not active; mau.eval.guard).")
    logging: WandbLogging = Field(default_factory=WandbLogging, description="Where the results tables also "
                                  "go (wandb, in mau train's project).")
    bc_rows: BCRowsSection | None = Field(None, description="Add the 'linear (BC rows)' baseline: the linear "
                                          "reader fitted on the BC rows of a student (None: not shown).")

    @field_validator("arms", "imposters", mode="before")
    @classmethod
    def _names(cls, v: Any, info: ValidationInfo) -> Any:
        return _named_models(v, info.field_name)

    @field_validator("arm_modules")
    @classmethod
    def _known_modules(cls, v: list[str] | None) -> list[str] | None:
        return known_modules(v)

    @model_validator(mode="after")
    def _check(self) -> "EvalConfig":
        if POOLED in self.imposters:
            raise ValueError(f"imposters: the name {POOLED!r} is reserved for the pooled column; choose "
                             f"another")
        bad = [a for a in self.probe_arms or [] if a not in self.arms]
        if bad:
            raise ValueError(f"probe_arms: {bad[0]!r} is not an arm (arms: {', '.join(self.arms)})")
        bad = [a for a in self.arm_seeds if a not in self.arms]
        if bad:
            raise ValueError(f"arm_seeds: {bad[0]!r} is not an arm (arms: {', '.join(self.arms)})")
        if any(n < 1 for n in self.arm_seeds.values()):
            raise ValueError("arm_seeds: give each listed arm at least 1 seed")
        if self.baseline is not None and self.baseline not in self.arms:
            raise ValueError(f"baseline: {self.baseline!r} is not an arm (arms: {', '.join(self.arms)})")
        if self.seeds is None and self.n_seeds is None:
            raise ValueError("seeds: give the list of seeds, or n_seeds (and seed, the first one)")
        if self.seeds is not None:
            if not self.seeds:
                raise ValueError("seeds: the list is empty; give at least one seed")
            if len(set(self.seeds)) != len(self.seeds):
                dup = next(s for s in self.seeds if self.seeds.count(s) > 1)
                raise ValueError(f"seeds: {dup} is listed twice; every seed once (pairs are matched by seed)")
            if self.n_seeds is not None and self.n_seeds != len(self.seeds):
                raise ValueError(f"n_seeds: {self.n_seeds} but {len(self.seeds)} seeds listed; give one of "
                                 f"the two")
        return self

    @property
    def baseline_arm(self) -> str:
        return self.baseline or next(iter(self.arms))

    def seed_list(self) -> list[int]:
        return (
            list(self.seeds) if self.seeds is not None else [self.seed + i for i in range(self.n_seeds or 0)]
        )

    def identity(self) -> dict[str, Any]:
        """What defines the matches: shards, resumed runs and the report must agree on it. Where a model is
        served and how it is reached (``ModelConfig.identity``) may differ (a restarted server on another
        node), and so may the report's settings."""
        d = self.model_dump(mode="json", include={"arm_modules", "crewmate_aria", "imposter_aria", "world",
                                                  "probe_arms"})
        d["arms"] = {name: m.identity() for name, m in self.arms.items()}
        d["imposters"] = {name: m.identity() for name, m in self.imposters.items()}
        d["arm_rest_model"] = self.arm_rest_model.identity()
        d["seeds"] = self.seed_list()
        if self.arm_seeds:
            d["arm_seeds"] = dict(self.arm_seeds)
        return d


@dataclass(frozen=True)
class EvalMatch:
    """One planned match: an arm's crewmates against one imposter model on one seed."""

    index: int
    match_id: str
    seed: int
    rep: int  # the seed's position in the seed list
    arm: str
    imposter: str

    def to_dict(self) -> dict[str, Any]:
        """The grid line (also the match header's "grid"): collect's fields too, so collect tools read it."""
        return {
            **asdict(self), F.CASE: EVAL_CASE, F.IMPOSTER_MODEL: self.imposter, F.CREWMATE_MODEL: self.arm,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalMatch":
        return cls(**{k: d[k] for k in ("index", "match_id", "seed", "rep", "arm", F.EVAL_IMPOSTER)})


def plan(cfg: EvalConfig) -> list[EvalMatch]:
    """Every match, seed-major (seed, imposter, arm): a run stopped early has the same seeds for every
    cell."""
    out: list[EvalMatch] = []
    for rep, seed in enumerate(cfg.seed_list()):
        for imp in cfg.imposters:
            for arm in cfg.arms:
                if rep >= cfg.arm_seeds.get(arm, rep + 1):
                    continue
                k = len(out)
                out.append(EvalMatch(k, f"{k:05d}_A-{arm}_I-{imp}_s{seed}", seed, rep, arm, imp))
    return out


def seats_for(cfg: EvalConfig, m: EvalMatch) -> dict[str, SeatConfig]:
    """The six crewmate seats play the arm's model (for arm_modules only, if given), the two imposter seats
    the fixed model."""
    aria = cfg.crewmate_aria
    if cfg.probe_arms is not None and m.arm not in cfg.probe_arms and aria.probes.enabled:
        aria = aria.model_copy(update={"probes": aria.probes.model_copy(update={"enabled": False})})
    return {"crewmate": SeatConfig(model=cfg.arms[m.arm], aria=aria, modules=cfg.arm_modules,
                                   rest_model=cfg.arm_rest_model),
            F.IMPOSTER: SeatConfig(model=cfg.imposters[m.imposter], aria=cfg.imposter_aria)}
