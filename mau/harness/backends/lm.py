"""The ``lm`` backend: a local text-only causal language model (``AutoModelForCausalLM`` +
``AutoTokenizer``), e.g. the CPU student SmolLM2-135M-Instruct that ``mau student`` writes (docs/student.md).

It is the ``hf`` backend (micro-batching, per-match seeded sampling, failures returned not raised) with a
tokenizer in place of a multimodal processor: a request with an image part fails with a clear error (use
``aria.frames: false`` or the compact prompt profile, which sends none). Two additions:

- ``model.answer: candidates`` (inherited from ``hf``) answers VOTE without generating: each candidate (the
  living others and skip) is scored as the target of the VOTE answer and the best one is the answer, so the
  vote is always parseable (the same read-out as the belief probes' ``readout: vote``).
- Scoring reads one forward pass: where the candidates' first answer tokens are distinct (the game's names are
  one token each in SmolLM2's vocabulary), a candidate's score is the log-probability of its first token after
  the prompt and ``{"vote_target": "``; otherwise every continuation is scored in full as in ``hf``. The
  candidate training objective (``mau.student.train``) is the cross-entropy over the same first-token scores.
"""

from __future__ import annotations

from typing import Any

from mau.harness.backends.base import ModelRequest, ScoreResponse
from mau.harness.backends.hf import Backend as HfBackend
from mau.harness.backends.hf import Prepared, stop_ids
from mau.harness.modules import VOTE_PREFIX as VOTE_PREFIX  # re-exported (tests)

TEXT_ONLY = ("the lm backend is text-only: this request has images (set aria.frames: false or "
             "aria.prompt_profile: {vote: compact})")


class TextProcessor:
    """A tokenizer behind the processor interface the ``hf`` backend calls: text in, token ids out."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(text_messages(messages), **kwargs)

    def __call__(self, text: list[str], images: Any = None, **kwargs: Any) -> Any:
        if images:
            raise ValueError(TEXT_ONLY)
        return self.tokenizer(text, **kwargs)


def text_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Chat messages with string contents (text parts joined); an image part is an error."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            if any(p.get("type") == "image" for p in content):
                raise ValueError("the lm backend is text-only: a message has an image part")
            content = "\n".join(str(p.get("text", "")) for p in content)
        out.append({"role": m["role"], "content": content or ""})
    return out


def load_text_model(path: str, dtype: Any = None) -> tuple[Any, Any]:
    """(tokenizer, model) of a local causal LM folder; the tokenizer pads on the left with its EOS if it has
    no pad token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, **({"dtype": dtype} if dtype is not None else {}))
    return tokenizer, model


class Backend(HfBackend):
    name = "lm"
    can_score = True

    def __init__(self, config: Any):
        super().__init__(config)
        self._scored: dict[tuple[Any, ...], Any] = {}  # prompt ids -> next-token log-softmax, or states
        self._head: Any = None  # a pointer student's head (mau.harness.candidate_head), from the model folder

    def _load_base(self) -> tuple[Any, Any, str, list[int]]:
        import torch

        cfg = self.config
        device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = None if cfg.dtype == "auto" else getattr(torch, cfg.dtype, None)
        if cfg.dtype != "auto" and not isinstance(dtype, torch.dtype):
            raise ValueError(f"model.dtype {cfg.dtype!r} is not a torch dtype (float32, bfloat16, float16, "
                             f"auto)")
        if cfg.adapter:
            raise ValueError("model.adapter: the lm backend loads full models only (mau train writes "
                             "OUT/model)")
        tokenizer, model = load_text_model(cfg.model, dtype)
        model.to(device).eval()
        from mau.harness.candidate_head import PointerHead

        self._head = PointerHead.load(cfg.model)  # a pointer student scores candidates at their names
        return TextProcessor(tokenizer), model, device, stop_ids(model, tokenizer)

    def _prepare(self, index: int, request: ModelRequest) -> Prepared:
        if request.images:
            raise ValueError(TEXT_ONLY)
        return super()._prepare(index, request)

    def _score_sync(self, request: ModelRequest, prefix: str, continuations: list[str]) -> ScoreResponse:
        """One forward pass where the continuations' first tokens are distinct (their log-probabilities after
        the shared prompt); else every continuation in full (``hf``)."""
        import torch

        self.load()
        with self._gen_lock, self._active():
            tok = self._processor.tokenizer
            p = self._prepare(0, request)
            if self._head is not None:
                return self._score_at_names(tok, p.text + prefix, continuations)
            ids, firsts = first_tokens(tok, p.text + prefix, continuations)
            if firsts is not None:
                # Keyed by the prompt alone: the probe before a vote reads the vote's prompt with other
                # continuations (the candidates without skip), so one forward pass serves both.
                key = tuple(ids)
                if key not in self._scored:
                    with torch.inference_mode():
                        logits = self._model(input_ids=torch.tensor([ids], device=self._device),
                                             logits_to_keep=1).logits[0, -1].float()
                    if len(self._scored) >= 64:
                        self._scored.clear()
                    self._scored[key] = torch.log_softmax(logits, dim=-1).cpu()
                lp = self._scored[key]
                return ScoreResponse(
                    [float(lp[t]) for t in firsts], prompt_tokens=len(ids), model=self.model_id
                )
        return super()._score_sync(request, prefix, continuations)

    def _score_at_names(self, tok: Any, context: str, continuations: list[str]) -> ScoreResponse:
        """A pointer student's scores (``candidate_head``): its head on the final hidden states at the
        candidates' names in the prompt's Candidates line, and at their earlier mentions where it reads them
        (a continuation is a name and its closing quote)."""
        import torch

        from mau.harness.candidate_head import NAMES, candidate_positions, name_mentions

        names = [c.removesuffix('"') for c in continuations]
        pos = candidate_positions(tok, context, names)
        if pos is None:
            return ScoreResponse(None, error="lm: a pointer student reads candidates at their names in the "
                                             "prompt's Candidates line, and this prompt has none (use the "
                                             "compact VOTE prompt)", model=self.model_id)
        ids = tok(context, add_special_tokens=False)["input_ids"]
        key = ("states", *ids)
        if key not in self._scored:  # the probe before a vote and the vote read one forward pass
            with torch.inference_mode():
                out = self._model.model(input_ids=torch.tensor([ids], device=self._device))
            if len(self._scored) >= 64:
                self._scored.clear()
            self._scored[key] = out.last_hidden_state[0].float().cpu()
        with torch.inference_mode():
            mentions = name_mentions(tok, context, names) if self._head.reads != NAMES else None
            inputs = self._head.inputs(self._scored[key], pos, mentions)
            scores = self._head.scores(inputs, names)
        return ScoreResponse([float(x) for x in scores], prompt_tokens=len(ids), model=self.model_id)


def first_tokens(
    tokenizer: Any, context: str, continuations: list[str]
) -> tuple[list[int], list[int] | None]:
    """(ids of ``context``, the first token id of each continuation after it), or None for the second where
    two continuations open with the same token or a token merges across the boundary."""
    base = tokenizer(context, add_special_tokens=False)["input_ids"]
    firsts = []
    for c in continuations:
        ids = tokenizer(context + c, add_special_tokens=False)["input_ids"]
        if ids[: len(base)] != base or len(ids) <= len(base):
            return base, None
        firsts.append(ids[len(base)])
    return base, (firsts if len(set(firsts)) == len(firsts) else None)
