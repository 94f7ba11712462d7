"""Settings of belief probes and of the ideal observer's likelihood model (``seats.<side>.aria.probes``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mau.config import Model
from mau.infer.model import Params

MOMENTS = ("meeting_start", "round_end", "before_vote", "roam")


class ObserverConfig(Params):
    """The ideal observer's likelihood model (docs/detection.md, "The model"): the log likelihood ratios of
    ``mau.infer.model.Params``. The defaults are the fit the scripted teacher reasons with too; ``mau beliefs
    --fit RUN...`` fits them on training matches."""


class ProbeConfig(Model):
    """Non-invasive belief probes of crewmates (docs/harness.md, "Belief probes")."""

    enabled: bool = Field(
        False, description="Ask every living crewmate's model P(imposter) of each other living player.")
    moments: list[Literal["meeting_start", "round_end", "before_vote"]] = Field(
        default_factory=lambda: ["meeting_start", "round_end", "before_vote"],
        description="Meeting moments of a probe: meeting_start, round_end (each round but the last), "
                    "before_vote.")
    readout: Literal["answer", "vote", "auto"] = Field(
        "answer",
        description="answer: ask the question, parse the JSON answer; vote: no question, score each "
                    "candidate's name as the target of the agent's VOTE prompt (needs backend hf; for models "
                    "never taught the question, e.g. BC on votes); auto: vote where the backend can score, "
                    "else answer.")
    roam_every: int | None = Field(
        None, ge=1, description="Also probe at the start of every N-th roam step (None: never).")
    observer: bool = Field(
        True, description="Write the ideal observer's posterior at the same moments (no model calls).")
    temperature: float = Field(0.0, ge=0, description="Sampling temperature of probe calls (their own RNG "
                                                      "stream).")
    max_tokens: int = Field(200, ge=16, description="Max new tokens of a probe answer.")
    likelihood: ObserverConfig = Field(
        default_factory=ObserverConfig, description="The ideal observer's likelihood model.")
    observer_vote: float | None = Field(
        None, gt=0, le=1,
        description="Scripted-expert crewmates vote the ideal observer's top player when its P(imposter) is "
                    "at least this, else skip (None: off; needs observer).")
