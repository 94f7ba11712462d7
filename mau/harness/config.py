"""ARIA's configuration: the five ablation axes and their constants, and who sits in each seat."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mau.config import Model
from mau.harness.backends.base import ModelConfig
from mau.harness.beliefs.config import ProbeConfig

# The paper's per-call temperatures of its harness (meeting 0.7, vote 0.2, planner and reflector 0.3).
PAPER_MODULE_TEMPERATURE = {"meeting": 0.7, "vote": 0.2, "plan": 0.3, "plan_short": 0.3, "strategy": 0.3,
                            "reflect": 0.3}


COMPACT_MODULES = ("vote",)  # modules with a compact prompt (prompts/compact.yaml)


class AriaConfig(Model):
    """The five axes of ARIA (SPEC section 3). Defaults: the paper's first crewmate setting (semantic memory,
    reactive planner, meeting reflection with skill memory, minimal prompts, privileged state)."""

    state: Literal["ego", "privileged"] = Field(
        "privileged", description="ego: players in view now; privileged: positions of all players within 96 "
                                  "blocks.")
    memory: Literal["window", "semantic"] = Field(
        "semantic", description="window: the last window_size steps; semantic: beliefs per player, meetings, "
                                "notes.")
    planning: Literal["reactive", "hierarchical"] = Field(
        "reactive", description="reactive: one call picks the mode; hierarchical: a strategy every "
                                "strategy_every steps + a per-step plan.")
    reflection: Literal["off", "meeting"] = Field(
        "meeting", description="meeting: reflect after each meeting (suspicion deltas, skill memory); off: "
                               "neither.")
    prompt_style: Literal["deterministic", "minimal"] = Field(
        "minimal", description="deterministic: role- and phase-specific tactics spelled out; minimal: "
                               "rules, role, format.")
    prompt_profile: dict[str, Literal["full", "compact", "compact_nospeech"]] = Field(
        default_factory=dict,
        description="Per module: full (the prompts above, the default) or compact (text only, about 300 "
                    "tokens: the evidence in few words, this meeting's speech, the candidates; only vote has "
                    "one). For small models read out over candidates (docs/student.md). compact_nospeech: "
                    "the compact prompt with the speech removed (no transcript, no accusations or votes in "
                    "the evidence): an ablation.")

    compact_evidence_chars: int = Field(
        380, ge=40, le=20000,
        description="The compact VOTE prompt's evidence budget in characters: its newest lines that fit. 380 "
                    "keeps the whole prompt within about 300 tokens (the demo's setting) but cuts the older "
                    "lines of nearly half the prompts on the ladder; 1200 cuts almost none (docs/student.md, "
                    "\"What the compact prompt cuts\").")

    compact_tally: bool = Field(
        False,
        description="The compact VOTE prompt gains a Counts block before its candidates line: one line per "
                    "candidate with the counts the linear reader parses from the prompt's own text "
                    "(mau.infer.compact_reader.tally_lines). A reading aid for the small student: the same "
                    "evidence, counted (docs/student.md, \"A reading aid: the counts in the prompt\").")

    @field_validator("prompt_profile")
    @classmethod
    def _compact_modules(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [m for m, p in v.items() if p.startswith("compact") and m not in COMPACT_MODULES]
        if bad:
            raise ValueError(f"prompt_profile: {bad[0]!r} has no compact prompt; only "
                             f"{', '.join(COMPACT_MODULES)} do")
        return v

    @field_validator("reflection", mode="before")
    @classmethod
    def _yaml_booleans(cls, v: object) -> object:
        # YAML reads a bare off / on as a boolean; the paper's names for the axis are none/off and meeting/on.
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
        return {False: "off", True: "meeting", "none": "off", "on": "meeting"}.get(v, v)

    window_size: int = Field(10, ge=1, description="Steps kept by window memory.")
    strategy_every: int = Field(5, ge=1, description="Hierarchical planning: steps between long-term "
                                                     "strategy calls.")
    skill_memory_size: int = Field(50, ge=1, description="Skill memory entries kept (FIFO).")
    skill_retrieve: int = Field(5, ge=0, description="Most recent skills put in prompts.")
    suspicion_clamp: float = Field(0.3, gt=0, le=1, description="Suspicion deltas (BELIEF and REFLECT) are "
                                                                "clamped to +/- this (paper: 0.3).")
    notes_limit: int = Field(20, ge=1, description="Semantic memory: notes kept (oldest dropped).")
    evidence_memory: bool = Field(
        True, description="Crewmates: memory keeps an Evidence block for the whole match (who was near where "
                          "each victim fell, kills flagged, accusations and votes; docs/harness.md). Ours; "
                          "off: the paper's memory only.")
    claims_memory: bool = Field(
        False, description="Crewmates with evidence memory: also list the placing claims heard in earlier "
                            "meetings (who placed whom where and when, as said; the newest 12; never a "
                            "verdict; docs/claims.md). Off: only the current meeting's transcript and the "
                            "agent's own cross-checks.")
    surveillance: bool = Field(True, description="Crewmates scan two view directions after each step "
                                                 "(SURVEILLANCE).")
    frames: bool = Field(True, description="Send first-person frames with the calls that take images "
                                           "(docs/harness.md).")
    module_temperature: dict[str, float] = Field(
        default_factory=lambda: dict(PAPER_MODULE_TEMPERATURE),
        description="Per-module temperature overrides (the paper's harness); other modules use the seat's.")
    probes: ProbeConfig = Field(default_factory=ProbeConfig,
                                description="Crewmates: belief probes and the ideal observer "
                                            "(docs/harness.md).")


class SeatConfig(Model):
    """A side of the table: the model that plays it and its ARIA configuration."""

    model: ModelConfig = Field(default_factory=ModelConfig, description="The model (backend and settings).")
    aria: AriaConfig = Field(default_factory=AriaConfig, description="The harness configuration.")
    modules: list[str] | None = Field(
        None, description="Only these modules ask `model` (e.g. [vote]); the others ask `rest_model`. None: "
                          "all.")
    rest_model: ModelConfig = Field(default_factory=ModelConfig,
                                    description="The model of the modules not in `modules` (default the "
                                                "scripted expert).")

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, v: list[str] | None) -> list[str] | None:
        return known_modules(v)


def known_modules(v: list[str] | None) -> list[str] | None:
    """A list of ARIA module names, checked (a config validator's body: harness seats, eval arms)."""
    from mau.harness.modules import ALL_MODULES

    bad = [m for m in v or [] if m not in ALL_MODULES]
    if bad:
        raise ValueError(f"{bad[0]!r} is not a module; use some of {', '.join(ALL_MODULES)}")
    return v
