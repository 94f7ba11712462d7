"""The ``hf`` backend: a local Hugging Face VLM (base + optional PEFT LoRA adapter) with micro-batching.

``config.model`` is a local folder or a hub id, loaded through ``AutoProcessor`` +
``AutoModelForImageTextToText`` (Qwen3.5: ``Qwen3VLProcessor`` + ``Qwen3_5ForConditionalGeneration``);
``config.adapter`` a PEFT LoRA adapter folder (``PeftModel.from_pretrained``, kept unmerged). The model loads
lazily, on the first call, in a worker thread, so building the backend is cheap and the event loop never
blocks on it.

Micro-batching: every ``complete`` call that arrives in the same event-loop iteration (e.g. the eight seats'
calls of one step under ``asyncio.gather``) joins one pending list; one flush, scheduled with
``loop.call_soon``, pads them on the left and calls ``generate`` once for all of them (in a thread). Calls
that arrive while a batch is generating wait and go together in the next batch. A batch holds at most
``config.concurrency`` calls, and calls with different temperatures generate separately (one ``generate`` per
temperature); ``calls_batched`` records the size of every ``generate`` call.

``model.answer: candidates`` answers VOTE without generating: each candidate (the living others and skip) is
scored as the target of the answer ``{"vote_target": "`` (``score``) and the best is the answer, so a random
or small model's vote is always parseable (the ``lm`` backend inherits it; docs/student.md).

Prompts are rendered with ``enable_thinking=False`` (the paper's Qwen setting); the answer is the new tokens
only, special tokens skipped and an empty ``<think></think>`` block stripped. Sampling (temperature > 0) is a
function of the match: each ``generate`` runs under a torch seed drawn from a ``torch.Generator`` of its own
match and stream (play, or the belief probes'), seeded from (``config.seed``, the match's seed, the stream)
when the match's first call arrives. A worker keeps the model across its matches, so one generator for the
whole backend would make a match's answers depend on the matches played before it (eval seeds [7, 8] and [8,
7] gave different votes); now they do not (batch composition within a match still matters).
One load per base: the backends of a process that name the same base (``model``, ``dtype``, ``device``,
``max_pixels``) share one loaded copy (``_SHARED``), each adapter attached to it by name (PEFT's named
adapters); a backend activates its own adapter, or disables them all for the bare base, around each batch
under the base's lock. An eval's arms (the base and its LoRA adapters) thus cost a worker one load, however
their matches alternate (``LOADS`` counts the loads of the process; ``mau eval`` prints them).
Failures never raise: a load error (bad path, missing adapter) or a generation error is returned as
``ModelResponse(text=None, error=...)``; a load error is remembered, so later calls fail fast with it.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from mau.harness.backends.base import (
    LOADS,
    ModelBackend,
    ModelConfig,
    ModelRequest,
    ModelResponse,
    ScoreResponse,
)

_EMPTY_THINK = re.compile(r"^\s*<think>\s*</think>\s*")
# One from_pretrained at a time in the process: transformers 5.24 keeps loading state in globals, and two
# backends loading at once (the arms of one eval, each in its worker thread) left it so that models built
# later in the process came out with untied embeddings (tests/test_backend_hf.py reproduces it).
_PROCESS_LOAD_LOCK = threading.Lock()


@dataclass
class _Shared:
    """One loaded base in the process, the adapters attached to it (path -> name) and the backends using
    it."""

    processor: Any
    model: Any  # the base, or the PeftModel around it once an adapter is attached
    device: str
    eos_ids: list[int]
    lock: threading.Lock = field(default_factory=threading.Lock)  # one batch at a time on this model
    adapters: dict[str, str] = field(default_factory=dict)
    users: set[int] = field(default_factory=set)

    def attach(self, path: str) -> str:
        """The name of adapter ``path`` on this base, loaded now if it is not yet (call under ``lock``)."""
        if path not in self.adapters:
            import warnings

            from peft import PeftModel

            name = f"adapter{len(self.adapters)}"
            # peft 0.21 calls a transformers method that 5.24 marks deprecated
            with warnings.catch_warnings():
                warnings.filterwarnings(
                    "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
                )
                if isinstance(self.model, PeftModel):
                    self.model.load_adapter(path, adapter_name=name)
                else:
                    self.model = PeftModel.from_pretrained(self.model, path, adapter_name=name)
            self.model.to(self.device).eval()
            self.adapters[path] = name
        return self.adapters[path]


_SHARED: dict[tuple[Any, ...], _Shared] = {}  # base key -> the process's loaded copy


@dataclass
class _Pending:
    request: ModelRequest
    future: asyncio.Future
    start: float = field(default_factory=time.perf_counter)


@dataclass
class Prepared:
    """One request turned into the processor's input: rendered prompt text and its PIL images."""

    index: int
    text: str
    images: list[Any]
    max_new_tokens: int
    temperature: float


class Backend(ModelBackend):
    name = "hf"
    can_score = True

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.calls_batched: list[int] = []  # size of every generate() call, in order
        self._load_lock = threading.Lock()
        self._gen_lock = threading.Lock()  # the base's lock once loaded: one batch at a time on one model
        self._shared: _Shared | None = None
        self._adapter_name: str | None = None
        self._processor: Any = None
        self._device: str = "cpu"
        self._eos_ids: list[int] = []
        self._load_error: str | None = None
        # (match, stream) -> torch.Generator: one seed per generate
        self._rngs: dict[tuple[str, str], Any] = {}
        self._pending: list[_Pending] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._busy = False
        self._tasks: set[asyncio.Task] = set()

    @property
    def model_id(self) -> str:
        return self.config.model + (f"+{self.config.adapter}" if self.config.adapter else "")

    # ---- loading ---------------------------------------------------------------------------------------

    @property
    def _model(self) -> Any:
        """The loaded model (the shared base, or the PeftModel around it), or None before loading."""
        return self._shared.model if self._shared is not None else None

    def base_key(self) -> tuple[Any, ...]:
        c = self.config
        return (self.name, c.model, c.dtype, c.device, c.max_pixels)

    def load(self) -> None:
        """Load (or join) the base and attach the adapter, once (thread-safe). Raises on failure; ``complete``
        reports it."""
        with self._load_lock:
            if self._shared is not None:
                return
            if self._load_error is not None:
                raise RuntimeError(self._load_error)
            try:
                with _PROCESS_LOAD_LOCK:
                    shared = _SHARED.get(self.base_key())
                    if shared is None:
                        shared = _SHARED[self.base_key()] = _Shared(*self._load_base())
                        LOADS.append(self.config.model)
                    if self.config.adapter:
                        with shared.lock:
                            self._adapter_name = shared.attach(self.config.adapter)
            except Exception as e:  # remembered: a bad path does not get better by retrying every call
                self._load_error = f"hf load failed for {self.model_id!r}: {type(e).__name__}: {e}"
                raise RuntimeError(self._load_error) from e
            shared.users.add(id(self))
            self._shared, self._gen_lock = shared, shared.lock
            self._processor, self._device, self._eos_ids = shared.processor, shared.device, shared.eos_ids

    @contextmanager
    def _active(self) -> Iterator[None]:
        """This backend's adapter active on the shared model (or every adapter off, for the bare base), for
        one batch; call under the base's lock."""
        model = self._model
        if not hasattr(model, "peft_config"):
            yield
        elif self._adapter_name is None:
            with model.disable_adapter():
                yield
        else:
            if model.active_adapter != self._adapter_name:
                model.set_adapter(self._adapter_name)
            yield

    def _load_base(self) -> tuple[Any, Any, str, list[int]]:
        """(processor, model on its device in eval mode, device, stop token ids) of ``config.model``."""
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        cfg = self.config
        device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        if cfg.dtype == "auto":
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        else:
            dtype = getattr(torch, cfg.dtype, None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"model.dtype {cfg.dtype!r} is not a torch dtype (float32, bfloat16, "
                                 f"float16, auto)")
        processor = AutoProcessor.from_pretrained(cfg.model)
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None or not hasattr(processor, "image_processor"):
            # Without torchvision AutoProcessor quietly returns a bare tokenizer and images would be dropped.
            raise RuntimeError(f"AutoProcessor gave {type(processor).__name__}, not a multimodal processor "
                               "(is torchvision installed and importable?)")
        tokenizer.padding_side = "left"  # decoder-only batch generation pads on the left
        if cfg.max_pixels is not None:
            size = dict(processor.image_processor.size)
            size["longest_edge"] = cfg.max_pixels
            size["shortest_edge"] = min(size.get("shortest_edge") or cfg.max_pixels, cfg.max_pixels)
            processor.image_processor.size = size
        model = AutoModelForImageTextToText.from_pretrained(cfg.model, dtype=dtype)
        model.to(device).eval()
        return processor, model, device, stop_ids(model, tokenizer)

    async def _vote_by_candidates(self, request: ModelRequest) -> ModelResponse:
        """``model.answer: candidates``: the candidate with the highest score, as the VOTE answer's JSON
        (never unparseable; a small or random model is scored instead of failing to write JSON)."""
        import json

        from mau.harness.modules import VOTE_PREFIX

        try:
            cands = vote_candidates(request)
        except Exception as e:  # a model-side failure is an answer, never a crash
            return ModelResponse(text=None, error=f"{self.name}: {type(e).__name__}: "
                                                  f"{e}", model=self.model_id)
        scored = await self.score(request, VOTE_PREFIX, [f'{c}"' for c in cands])
        if scored.logprobs is None:
            return ModelResponse(text=None, error=scored.error or "no scores", latency_s=scored.latency_s,
                                 model=self.model_id)
        best = max(range(len(cands)), key=lambda i: scored.logprobs[i])
        return ModelResponse(text=json.dumps({"vote_target": cands[best]}), latency_s=scored.latency_s,
                             prompt_tokens=scored.prompt_tokens, completion_tokens=0, model=self.model_id)

    # ---- the async side: micro-batching -----------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.config.answer == "candidates" and request.module == "vote":
            return await self._vote_by_candidates(request)
        loop = asyncio.get_running_loop()
        # a new event loop (e.g. a second asyncio.run): state of the old one is void
        if self._loop is not loop:
            self._loop, self._pending, self._flush_scheduled, self._busy = loop, [], False, False
        item = _Pending(request, loop.create_future())
        self._pending.append(item)
        self._schedule()
        return await item.future  # _run always answers it

    def _schedule(self) -> None:
        if not self._flush_scheduled and not self._busy and self._pending and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._pending = [p for p in self._pending if not p.future.done()]  # drop cancelled calls
        if self._busy or not self._pending:
            return
        n = max(1, self.config.concurrency)
        batch, self._pending = self._pending[:n], self._pending[n:]
        self._busy = True
        task = asyncio.ensure_future(self._run(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[_Pending]) -> None:
        try:
            results = await asyncio.to_thread(self._generate_all, [p.request for p in batch])
        except asyncio.CancelledError:  # the loop is shutting down: release the waiting callers
            self._busy = False
            for p in batch:
                p.future.cancel()
            raise
        except Exception as e:  # _generate_all does not raise; belt and braces, the futures must be answered
            results = [ModelResponse(text=None, error=f"hf: {type(e).__name__}: {e}", model=self.model_id)
                       for _ in batch]
        self._busy = False
        now = time.perf_counter()
        for p, r in zip(batch, results):
            if not p.future.done():
                r.latency_s = now - p.start  # queueing included: what the caller waited
                p.future.set_result(r)
        self._schedule()  # calls that arrived while this batch was generating

    # ---- the worker-thread side: one batch --------------------------------------------------------------

    def _generate_all(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        """Answer a batch: requests that cannot be prepared fail alone; the rest generate, one call per
        temperature. Never raises."""
        out: list[ModelResponse | None] = [None] * len(requests)
        try:
            self.load()
        except Exception as e:
            return [ModelResponse(text=None, error=str(e), model=self.model_id) for _ in requests]
        with self._gen_lock, self._active():  # one batch at a time on the (shared) model
            groups: dict[tuple[str, float, str, int], list[Prepared]] = {}
            for i, r in enumerate(requests):
                try:
                    p = self._prepare(i, r)
                except Exception as e:
                    out[i] = ModelResponse(text=None, error=f"hf: bad request: {type(e).__name__}: {e}",
                                           model=self.model_id)
                    continue
                ctx = r.context or {}
                match = (str(ctx.get("match", "")), int(ctx.get("seed") or 0))
                groups.setdefault((r.stream, p.temperature, *match), []).append(p)
            self._generate_groups(groups, out)
        return [r if r is not None else ModelResponse(text=None, error="hf: no answer",
                                                      model=self.model_id) for r in out]

    def _generate_groups(self, groups: dict[tuple[str, float, str, int], list[Prepared]],
                         out: list[ModelResponse | None]) -> None:
        for (stream, temperature, match, match_seed), group in groups.items():
            try:
                for p, resp in zip(group, self._generate(group, temperature, stream, match, match_seed)):
                    out[p.index] = resp
            except Exception as e:
                for p in group:
                    out[p.index] = ModelResponse(text=None, error=f"hf: generate failed: {type(e).__name__}: "
                                                                  f"{e}",
                                                 model=self.model_id)

    def _prepare(self, index: int, request: ModelRequest) -> Prepared:
        messages, images = to_processor_messages(request)
        text = chat_text(self._processor, messages)
        temperature = request.temperature if request.temperature is not None else self.config.temperature
        return Prepared(index, text, images, request.max_tokens or self.config.max_tokens, float(temperature))

    def _stream_rng(self, stream: str, match: str = "", match_seed: int = 0) -> Any:
        """The generator of one match's stream (play, or the belief probes': a probe never shifts the play's
        draws), seeded from (config.seed, the match's seed, the stream) at the match's first call."""
        import hashlib

        import torch

        key = (match, stream)
        if key not in self._rngs:  # dropped at the match's end (end_match): matches in flight keep their own
            digest = hashlib.blake2b(
                f"{self.config.seed}|{match_seed}|{stream}".encode(), digest_size=8
            ).digest()
            self._rngs[key] = torch.Generator().manual_seed(int.from_bytes(digest, "big") >> 2)
        return self._rngs[key]

    def _generate(self, group: list[Prepared], temperature: float, stream: str = "play", match: str = "",
                  match_seed: int = 0) -> list[ModelResponse]:
        import torch

        proc, model = self._processor, self._model
        tok = proc.tokenizer
        # in prompt order: the processor consumes them in turn
        images = [im for p in group for im in p.images]
        inputs = proc(text=[p.text for p in group], images=images or None, padding=True, return_tensors="pt")
        inputs = inputs.to(self._device)
        prompt_len = inputs["input_ids"].shape[1]
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        max_new = max(p.max_new_tokens for p in group)
        gen_kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id}
        if temperature > 0:
            gen_kwargs.update(do_sample=True, temperature=temperature)
        else:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        gen_kwargs["eos_token_id"] = eos_ids = self._eos_ids
        seed = int(torch.randint(0, 2**62, (1,), generator=self._stream_rng(stream, match, match_seed)))
        devices = [torch.device(self._device).index or 0] if self._device.startswith("cuda") else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(seed)  # generate() samples from the global RNG; forked so others are untouched
            sequences = model.generate(**inputs, **gen_kwargs)
        self.calls_batched.append(len(group))
        results = []
        for row, p in enumerate(group):
            new = sequences[row, prompt_len:].tolist()[: p.max_new_tokens]
            cut = next((k + 1 for k, t in enumerate(new) if t in eos_ids), len(new))  # the stop token counts
            new = new[:cut]
            text = tok.decode(new, skip_special_tokens=True)
            text = _EMPTY_THINK.sub("", text).strip()
            results.append(ModelResponse(text=text or None, error=None if text else "empty answer",
                                         prompt_tokens=int(prompt_tokens[row]), completion_tokens=len(new),
                                         model=self.model_id))
        return results

    # ---- scoring (belief probes' vote read-out) ---------------------------------------------------------

    async def score(self, request: ModelRequest, prefix: str, continuations: list[str]) -> ScoreResponse:
        t0 = time.perf_counter()
        try:
            out = await asyncio.to_thread(self._score_sync, request, prefix, continuations)
        except Exception as e:  # a probe never touches the match: the failure is the answer
            out = ScoreResponse(None, error=f"hf: score failed: {type(e).__name__}: {e}", model=self.model_id)
        out.latency_s = time.perf_counter() - t0
        return out

    def _score_sync(self, request: ModelRequest, prefix: str, continuations: list[str]) -> ScoreResponse:
        """All continuations in one forward pass, padded on the right (a causal model's logits at the real
        tokens never see the pads). The tokens scored are those after the longest common prefix of
        prompt+prefix and prompt+prefix+continuation (a BPE merge across the boundary then counts toward the
        continuation, the same way for every one)."""
        import torch

        self.load()
        with self._gen_lock, self._active():
            p = self._prepare(0, request)
            proc, model = self._processor, self._model
            base = proc(text=[p.text + prefix], images=p.images or None, return_tensors="pt")["input_ids"][0]
            rows = [proc(text=[p.text + prefix + c], images=p.images or None, return_tensors="pt")
                    for c in continuations]
            starts = []
            for c, row in zip(continuations, rows):
                ids = row["input_ids"][0]
                n = min(len(base), len(ids))
                start = next((i for i in range(n) if int(base[i]) != int(ids[i])), n)
                if start >= len(ids):
                    raise ValueError(f"continuation {c!r} adds no token")
                starts.append(start)
            batch = _pad_right(rows, self._processor.tokenizer.pad_token_id)
            with torch.inference_mode():
                logits = model(**batch.to(self._device)).logits.float()
            logprobs: list[float] = []
            for r, (row, start) in enumerate(zip(rows, starts)):
                ids = row["input_ids"][0]
                lp = torch.log_softmax(logits[r, start - 1:len(ids) - 1], dim=-1)
                logprobs.append(float(lp.gather(1, ids[start:, None].to(lp.device)).sum()))
        return ScoreResponse(logprobs, prompt_tokens=int(len(base)), model=self.model_id)

    async def aclose(self) -> None:
        """Wait for the batches in flight. The model stays loaded: a worker's cached backend (mau.runner) is
        closed after every match and serves the next one without loading the weights again; drop the backend
        to free it."""
        for task in list(self._tasks):
            await asyncio.gather(task, return_exceptions=True)
        return None

    def end_match(self, match_id: str) -> None:
        for key in [k for k in self._rngs if k[0] == match_id]:
            del self._rngs[key]

    def release(self) -> None:
        """Stop using the shared base; the last backend to let go of it frees it."""
        with self._load_lock, self._gen_lock:
            shared, self._shared, self._processor = self._shared, None, None
            if shared is not None:
                shared.users.discard(id(self))
                if not shared.users and _SHARED.get(self.base_key()) is shared:
                    del _SHARED[self.base_key()]
        self._gen_lock = threading.Lock()


def chat_text(processor: Any, messages: list[dict[str, Any]]) -> str:
    """The prompt text a model answers from: the chat template with the assistant's turn opened, thinking off
    (the ``lm`` backend's ``TextProcessor`` and the student's examples go through it too)."""
    return processor.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )


def stop_ids(model: Any, tokenizer: Any) -> list[int]:
    """The token ids that end an answer: the generation config's EOS, and the end of the turn even where the
    generation config names only <|endoftext|>."""
    eos = model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    ids |= {i for i in (tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id)
            if isinstance(i, int) and i != tokenizer.unk_token_id}
    return sorted(ids)


def _pad_right(rows: list[Any], pad_id: int) -> Any:
    """One batch from single-row processor outputs: per-token tensors padded on the right (pad id, mask 0),
    the rest (pixel values, image grids) concatenated."""
    import torch
    from transformers import BatchFeature

    width = max(r["input_ids"].shape[1] for r in rows)
    out: dict[str, Any] = {}
    for key in rows[0].keys():
        parts = [r[key] for r in rows]
        if key == "input_ids" or (parts[0].dim() == 2 and parts[0].shape == rows[0]["input_ids"].shape):
            fill = pad_id if key == "input_ids" else 0
            parts = [torch.nn.functional.pad(t, (0, width - t.shape[1]), value=fill) for t in parts]
        out[key] = torch.cat(parts, dim=0)
    return BatchFeature(out)


def to_processor_messages(request: ModelRequest) -> tuple[list[dict[str, Any]], list[Any]]:
    """Neutral messages -> the processor's chat format, with PIL images in order of appearance.
    Content is a string or a list of ``{"type": "text", "text"}`` / ``{"type": "image", "image": i}`` parts,
    ``i`` indexing ``request.images``."""
    messages: list[dict[str, Any]] = []
    images: list[Any] = []
    for m in request.messages:
        content = m.get("content")
        if content is None or isinstance(content, str):
            messages.append({"role": m["role"], "content": content or ""})
            continue
        parts = []
        for part in content:
            kind = part.get("type")
            if kind == "text":
                parts.append({"type": "text", "text": part["text"]})
            elif kind == "image":
                img = frame_to_pil(request.images[int(part["image"])])
                images.append(img)
                parts.append({"type": "image", "image": img})
            else:
                raise ValueError(f"unknown content part type {kind!r} (expected text or image)")
        messages.append({"role": m["role"], "content": parts})
    return messages, images


def frame_to_pil(frame: Any) -> Any:
    """A ``Frame`` as an RGB PIL image: its ``image``, else its JPEG bytes."""
    import io

    from PIL import Image

    image = getattr(frame, "image", None)
    if image is not None:
        return image if getattr(image, "mode", None) == "RGB" else image.convert("RGB")
    return Image.open(io.BytesIO(frame.jpeg)).convert("RGB")


def vote_candidates(request: ModelRequest) -> list[str]:
    """The VOTE's candidates of a request: the living others and skip, from its observation."""
    from mau.harness.modules import Context
    from mau.schema import SKIP

    obs = (request.context or {}).get("obs")
    if not obs:
        raise ValueError("model.answer candidates: the VOTE request carries no observation")
    return [n for n in Context(obs, []).alive if n != obs["name"]] + [SKIP]
