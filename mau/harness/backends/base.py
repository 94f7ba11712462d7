"""The model-backend contract: a request in a neutral chat format, a response, and the per-seat model config.

Messages use OpenAI's chat shape, except that an image is ``{"type": "image", "image": i}``: the index of
``ModelRequest.images[i]``. Each backend turns that into what it needs (a base64 data URL for an
OpenAI-compatible server, a PIL image for a local processor); call records store the frame's file path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, field_validator

from mau.config import Model
from mau.snapshot import Parts, Restored


@dataclass
class Frame:
    """One image of a call: a Pillow RGB image, its JPEG bytes (as saved and as sent to servers), and its path
    inside the match folder."""

    image: Any  # PIL.Image.Image, RGB
    jpeg: bytes
    path: str
    _url: str | None = field(default=None, repr=False, compare=False)

    def data_url(self) -> str:
        """The JPEG as a base64 data URL, made once (the calls of a step that send this frame share it)."""
        if self._url is None:
            import base64

            self._url = "data:image/jpeg;base64," + base64.b64encode(self.jpeg).decode("ascii")
        return self._url

    @property
    def array(self) -> Any:
        """The frame as an (H, W, 3) uint8 numpy array."""
        import numpy as np

        return np.asarray(self.image)


@dataclass
class ModelRequest:
    messages: list[dict[str, Any]]
    images: list[Frame] = field(default_factory=list)
    module: str = ""
    agent: str = ""
    json_mode: bool = True
    temperature: float | None = None  # None: the seat's configured temperature
    max_tokens: int | None = None
    # structured inputs (the scripted expert reads these)
    context: dict[str, Any] = field(default_factory=dict)
    stream: str = "play"  # the RNG stream: belief probes ("probe") never draw from the play's stream


@dataclass
class ModelResponse:
    text: str | None  # None when the call failed
    error: str | None = None  # e.g. "timeout after 30.0 s", "HTTP 429", "empty answer"
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1
    model: str = ""
    # What a scripted stand-in hands the harness beside its answer (the private intent label of each claim):
    # never recorded in calls.jsonl, never in a prompt (docs/claims.md).
    private: dict[str, Any] | None = None
    # The endpoint failed in a way no fallback should hide: still failing after the retry budget (a dead
    # server, a rate limit that never lifted) or refusing every call alike (401, 403, 404). The harness fails
    # the match.
    fatal: bool = False


@dataclass
class ScoreResponse:
    """The log-probability of each continuation after the prompt (``ModelBackend.score``); None on failure."""

    logprobs: list[float] | None
    error: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    model: str = ""


# ModelConfig fields about reaching a model (endpoint, key variable, timeouts, limits, prices), not about
# which model answers.
TRANSPORT = (
    "base_url", "api_key_env", "timeout_s", "max_retries", "backoff_s", "max_backoff_s", "retry_budget_s",
    "concurrency", "http_client", "device", "price_prompt_per_mtok", "price_completion_per_mtok",
)


class ModelConfig(Model):
    """One seat's model: which backend and its settings. Secrets are never here: only the *name* of the
    environment variable that holds the API key."""

    backend: str = Field("scripted", description="Model backend: a file of mau/harness/backends (openai, "
                                                 "hf, scripted).")
    model: str = Field("scripted-expert", description="Model id for the server, or a local path / hub id for "
                                                      "hf.")
    adapter: str | None = Field(None, description="hf: path of a LoRA adapter to load on top of the model.")
    base_url: str | None = Field(None, description="openai: the endpoint, e.g. http://127.0.0.1:8000/v1.")
    api_key_env: str | None = Field(None, description="openai: name of the environment variable holding the "
                                                      "API key.")
    temperature: float = Field(0.7, ge=0, description="Sampling temperature (paper: 0.7 Qwen/Gemma, 0.1 "
                                                      "GPT-4.1-mini, 1.0 GPT-5).")
    max_tokens: int = Field(256, ge=1, description="Max new tokens per call (paper: 256; >= 8192 for the "
                                                   "GPT-5 family).")
    json_mode: bool = Field(True, description="Ask for response_format=json_object where the backend "
                                              "supports it.")
    enable_thinking: bool | None = Field(None, description="Qwen: False sends "
                                                           "chat_template_kwargs.enable_thinking=false.")
    reasoning_effort: str | None = Field(None, description="openai: reasoning_effort for reasoning models "
                                                           "(e.g. minimal).")
    timeout_s: float = Field(60.0, gt=0, description="Per-call timeout in seconds.")
    max_retries: int = Field(8, ge=0, description="Retries of one call on timeouts, connection errors, 429 "
                                                  "and 5xx (jittered exponential backoff); still failing "
                                                  "after them, the match fails loudly. Waits the server asks "
                                                  "for (Retry-After) count against retry_budget_s only.")
    backoff_s: float = Field(1.0, ge=0, description="Backoff before the first retry: a uniform draw up to "
                                                    "this, doubling on each retry.")
    max_backoff_s: float = Field(60.0, ge=0, description="Cap on one backoff (and on a Retry-After "
                                                         "honoured).")
    retry_budget_s: float = Field(300.0, gt=0, description="Seconds one call may spend on attempts and waits "
                                                           "before its match fails loudly.")
    concurrency: int = Field(16, ge=1, description="Calls in flight at once per endpoint (base_url), shared "
                                                   "by the matches in flight of a worker (split between "
                                                   "workers).")
    http_client: Literal["mau", "openai"] = Field(
        "mau", description="openai backend: mau (a lean HTTP/1.1 client, a fraction of the CPU per call; no "
                           "proxy support) or openai (the openai package's client; honours HTTPS_PROXY).")
    device: str = Field("auto", description="hf: cpu, cuda or auto.")
    dtype: str = Field("auto", description="hf: float32, bfloat16 or auto.")
    max_pixels: int | None = Field(None, description="hf: cap on image pixels for the processor.")
    answer: Literal["generate", "candidates"] = Field(
        "generate", description="hf, lm: candidates answers VOTE by scoring each candidate as the answer's "
                                "target and taking the best (always parseable; docs/student.md); generate: "
                                "the model writes it.")
    seed: int = Field(0, description="Sampling seed (hf; and the scripted expert's stream).")
    likelihood: str | None = Field(None, description="scripted: an observer_fit.json (or its folder) whose "
                                   "likelihoods the scripted crewmates reason with (default: the shipped "
                                   "ones; docs/detection.md).")
    plans_against: str | None = Field(None, description="scripted-adversarial: the observer_fit.json (or "
                                      "its folder) of the detector the imposter plans against, its evidence "
                                      "kinds and weights (default: the likelihoods it reasons with, the "
                                      "shipped teacher's unless likelihood is set; docs/detection.md, "
                                      "\"Exploitability\").")
    price_prompt_per_mtok: float = Field(0.0, ge=0, description="USD per million prompt tokens (cost "
                                                                "estimates).")
    price_completion_per_mtok: float = Field(0.0, ge=0, description="USD per million completion tokens.")

    @field_validator("likelihood", "plans_against")
    @classmethod
    def _likelihood_exists(cls, v: str | None) -> str | None:
        from pathlib import Path

        if v is not None and not Path(v).exists():
            raise ValueError(f"{v}: no such file; give the observer_fit.json (or its folder) of mau beliefs "
                             f"--fit (or a file of configs/observer/)")
        return v

    def identity(self) -> dict[str, Any]:
        """Which model answers, without where it is served and how it is reached (``TRANSPORT``): a run's
        identity, so a resumed run may point at a restarted server on another node."""
        return self.model_dump(mode="json", exclude=set(TRANSPORT))


# every local model load of this process, in order (the eval prints how many a run made)
LOADS: list[str] = []


class ModelBackend:
    """Base class. ``complete`` never raises for a model-side failure: it returns a response with ``error``
    (and ``fatal`` where the endpoint itself is gone; the harness then fails the match)."""

    name = "base"
    can_score = False  # True where ``score`` is implemented (belief probes' readout: auto picks vote)

    def __init__(self, config: ModelConfig):
        self.config = config

    async def complete(self, request: ModelRequest) -> ModelResponse:  # pragma: no cover - interface
        raise NotImplementedError

    async def score(self, request: ModelRequest, prefix: str, continuations: list[str]) -> ScoreResponse:
        """log P(prefix + c | prompt) - log P(prefix | prompt) for each continuation ``c``, the answer opening
        with ``prefix``: a read-out without generation (belief probes' ``readout: vote``). Backends that can
        score override this; never raises."""
        return ScoreResponse(None, error=f"backend {self.name!r} cannot score continuations "
                                         "(probes.readout=vote needs backend hf; use probes.readout=answer)")

    async def aclose(self) -> None:
        return None

    # -- snapshots (mau.snapshot): a backend with state of its own (the scripted expert) overrides these -----
    def parts(self) -> Parts:
        """What of the backend changes during a match: nothing (a model is stateless between calls)."""
        return Parts(shared=[self])

    def restore_parts(self, r: Restored) -> None:
        pass

    def reset(self) -> None:
        """Forget every match played so far (a replay that starts over)."""

    def release(self) -> None:
        """Free what the backend holds between matches (local weights); it loads again when next called."""
        return None

    def end_match(self, match_id: str) -> None:
        """The match ``match_id`` is over: drop what the backend kept for it (a worker plays many matches at
        once on one backend, so per-match state is keyed by match, never "the current one")."""
        return None
