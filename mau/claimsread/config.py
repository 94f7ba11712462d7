"""The configs of ``mau claims`` and ``mau judge``, which read finished runs and write a report beside them.
Their flags are the whole configuration (no YAML); the cross-field checks that need the file system are the
verbs' (``config_from_args``). Light imports only."""

from __future__ import annotations

from pydantic import Field

from mau.config import Model

RUNS = "Collect or eval run folders, or match folders."
OUT = "Where the report files go (default: the first of runs)."


class ExtractFields(Model):
    """How utterances without structured claims are read as claims (``mau claims``, ``mau judge``), and the
    labelled file the reader's F1 is measured on first (the gate)."""

    extract_model: str | None = Field(None, description="Reader of utterances without structured claims: "
                                      "'spot' (no model) or a model of extract_backend; none: not read.")
    extract_backend: str = Field("openai", description="Backend of extract_model.")
    extract_base_url: str | None = Field(None, description="Endpoint of extract_model (openai backend).")
    extract_api_key_env: str | None = Field(None, description="Environment variable holding the endpoint's "
                                                              "key.")
    extract_max_tokens: int = Field(512, description="The extractor's completion budget per utterance.")
    extract_retries: int = Field(2, description="Asks again after an answer without a claims list (0 or "
                                                "more).")
    extract_corpus: str | None = Field(None, description="Labelled file the extractor's F1 is measured on "
                                       "(default: the shipped one).")
    extract_split: str | None = Field(None, description="The split of the labelled file it is measured on "
                                      "(none: every line; the synthetic corpus has dev and held).")
    extract_limit: int | None = Field(None, description="Measure on the first N sentences of the split only.")
    allow_weak_extractor: bool = Field(False, description="Print lie rates even when the extractor's F1 is "
                                       "below the gate.")


class ClaimsConfig(ExtractFields):
    """``mau claims``: every claim of the runs checked role-blind; with ``extract_model``, free text read as
    claims first (the reader's F1 measured on the labelled corpus)."""

    runs: list[str] = Field(min_length=1, description=RUNS)
    out: str | None = Field(None, description=OUT)
    resamples: int = Field(1000, description="Bootstrap resamples (at least 1).")
    seed: int = Field(0, description="Bootstrap seed.")


class JudgeConfig(ExtractFields):
    """``mau judge``: the paper's 23 deception atoms, from the logs where decidable, else an LLM judge; the
    speech of free-text matches read as claims first (``extract_model``, default the phrasing reader)."""

    extract_model: str | None = Field("spot", description="Reader of the speech of free-text matches (no "
                                      "structured claims): 'spot' (no model) or a model of extract_backend; "
                                      "none: their verbal atoms from structured claims only (none).")

    runs: list[str] = Field(min_length=1, description=RUNS)
    out: str | None = Field(None, description=OUT)
    judge_model: str | None = Field(None, description="The LLM judge's model (none or 'spot': the decidable "
                                    "atoms only).")
    judge_backend: str = Field("openai", description="Backend of judge_model.")
    judge_base_url: str | None = Field(None, description="Endpoint of judge_model (openai backend).")
    judge_api_key_env: str | None = Field(None, description="Environment variable holding the endpoint's "
                                                            "key.")
    judge_max_tokens: int = Field(4096, description="The judge's completion budget per pass.")
    price_prompt: float = Field(0.0, description="USD per million prompt tokens of the judge.")
    price_completion: float = Field(0.0, description="USD per million completion tokens of the judge.")
    max_matches: int | None = Field(None, description="Judge at most N matches (the first N, sorted).")
