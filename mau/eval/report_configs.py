"""The config of ``mau beliefs``, which reads finished runs and writes a report beside them (those of ``mau
claims`` and ``mau judge`` are in ``mau.claimsread.config``). Its flags are the whole configuration (no YAML);
the cross-field checks that need the file system or the observer's parameter names are the verb's
(``config_from_args``). Light imports only."""

from __future__ import annotations

from pydantic import Field

from mau.config import Model

RUNS = "Collect or eval run folders, or match folders."
OUT = "Where the report files go (default: the first of runs)."


class BeliefsConfig(Model):
    """``mau beliefs``: the detection report of runs from their belief probes, or the ideal observer's fit."""

    runs: list[str] = Field(min_length=1, description=RUNS)
    out: str | None = Field(None, description=OUT)
    baseline: str | None = Field(None, description="The row the others are compared with (default: the first "
                                 "arm).")
    resamples: int = Field(1000, description="Bootstrap resamples (at least 1).")
    seed: int = Field(0, description="Bootstrap seed.")
    match: str | None = Field(None, description="Match folder of the belief-curve plot (default: the first "
                              "with model probes).")
    fit: bool = Field(False, description="Fit the ideal observer's likelihoods on the runs: "
                                         "observer_fit.json.")
    l2: float | None = Field(None, description="The fit's L2 penalty (0 or more; default 0.01 on the log "
                             "likelihood ratios, 1.0 on a linear detector's weights, as the linear "
                             "baseline's).")
    linear: bool = Field(False, description="With fit: fit the linear detector (mau.infer.linear: a logistic "
                         "model of per-player evidence counts on the truth) instead of the likelihoods.")
    params: str | None = Field(None, description="An observer_fit.json (or its folder): re-score the ideal "
                               "observer with its likelihoods.")
    ablate: list[str] | None = Field(None, description="Parameters of the model (or groups speech, "
                                     "positions, claims, unsteerable) compared away, paired.")
    without: list[str] | None = Field(None, description="With fit: log likelihood ratios held at 0 (names or "
                                      "groups); with linear: features held at 0 (names or the group "
                                      "own_acts).")
    leave_one_out: bool = Field(False, description="Fit on every imposter model but one, score on that one, "
                                "for each.")
    bc_rows: str | None = Field(None, description="A BC dataset: add the 'linear (BC rows)' row, the linear "
                                "reader of the compact VOTE prompt fitted on its training rows (vote and "
                                "belief, weights 1 and 1).")

