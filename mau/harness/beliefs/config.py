"""Settings of belief probes and of the ideal observer's likelihood model (``seats.<side>.aria.probes``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mau.config import Model

MOMENTS = ("meeting_start", "round_end", "before_vote", "roam")


class ObserverConfig(Model):
    """The ideal observer's likelihood model (docs/evaluation.md, "The ideal observer"). Each factor multiplies
    the likelihood of every imposter pair; 1.0 makes a kind of evidence count for nothing."""

    witness_error: float = Field(
        0.0, ge=0, le=1,
        description="Likelihood of a kill seen by me when the killer is NOT an imposter of the pair (0: certain).")
    near_body_radius: float = Field(
        8.0, gt=0, description="Blocks: players in my view this close to a body when I first see it are near it.")
    near_body_lr: float = Field(
        2.0, gt=0, description="Likelihood ratio imposter : crewmate of being seen near a body I found.")
    full_hold_lr: float = Field(
        0.3, gt=0, description="Likelihood ratio imposter : crewmate of being seen holding a station a full mission.")
    hold_seen_fraction: float = Field(
        0.5, gt=0, le=1,
        description="Share of the hold's step ends at which I must have seen the player (and at its end).")
    vote_weights: dict[str, float] = Field(
        default_factory=lambda: {"crew_on_imposter": 1.0, "crew_on_crew": 1.0, "imposter_on_crew": 1.0,
                                 "imposter_on_imposter": 0.25},
        description="Public votes (unverified): relative likelihood of a vote by voter role on target role.")


class ProbeConfig(Model):
    """Non-invasive belief probes of crewmates (docs/harness.md, "Belief probes")."""

    enabled: bool = Field(
        False, description="Ask every living crewmate's model P(imposter) of each other living player.")
    moments: list[Literal["meeting_start", "round_end", "before_vote"]] = Field(
        default_factory=lambda: ["meeting_start", "round_end", "before_vote"],
        description="Meeting moments of a probe: meeting_start, round_end (each round but the last), before_vote.")
    readout: Literal["answer", "vote", "auto"] = Field(
        "answer",
        description="answer: ask the question, parse the JSON answer; vote: no question, score each candidate's "
                    "name as the target of the agent's VOTE prompt (needs backend hf; for models never taught "
                    "the question, e.g. BC on votes); auto: vote where the backend can score, else answer.")
    roam_every: int | None = Field(
        None, ge=1, description="Also probe at the start of every N-th roam step (None: never).")
    observer: bool = Field(
        True, description="Write the ideal observer's posterior at the same moments (no model calls).")
    temperature: float = Field(0.0, ge=0, description="Sampling temperature of probe calls (their own RNG stream).")
    max_tokens: int = Field(200, ge=16, description="Max new tokens of a probe answer.")
    likelihood: ObserverConfig = Field(
        default_factory=ObserverConfig, description="The ideal observer's likelihood model.")
    observer_vote: float | None = Field(
        None, gt=0, le=1,
        description="Scripted-expert crewmates vote the ideal observer's top player when its P(imposter) is at "
                    "least this, else skip (None: off; needs observer).")
