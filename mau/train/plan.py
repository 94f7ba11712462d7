"""``mau train --plan``: what a training config will ask of a GPU before one is booked. For a config and its
dataset: the sequence-length distribution (text and image tokens, as the processor will count them), the
optimizer steps per epoch, and the estimated peak memory per GPU for one GPU, DDP and DeepSpeed ZeRO-3, term
by term: weights, LoRA parameters + gradients + AdamW state, activations (with and without gradient
checkpointing) and the LM head over the 248k vocabulary. Heavy imports happen inside the functions.

The activation terms are bytes per token per decoder layer, written from the widths: what autograd saves for a
LoRA layer whose base weights are frozen (the inputs of every LoRA branch, the MLP's gate / up / activation,
the fp32 RMSNorm inputs, the attention's q / k / v / output, and for Gated DeltaNet the per-chunk tensors of
transformers' reference ``chunk_gated_delta_rule``). ``saved_activation_bytes`` counts what autograd really
saves, and tests/test_train_9b.py checks the formula against it and the whole estimate against the measured
peak of the reduced-depth 9B shape on the CPU. On a GPU with ``flash-linear-attention`` the DeltaNet kernel
saves less than the reference path: there the estimate is an upper bound.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mau.errors import MauError

GIB = 2**30
BF16 = 2
FP32 = 4
# fp32 LoRA weight (PEFT keeps adapters in fp32 under a bf16 base) + fp32 grad + AdamW m, v
LORA_STATE_BYTES = 16
# TRL 1.16's fused LM head: log-probabilities in tiles of at most this many tokens x this many vocabulary
# columns (trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE, trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE).
LM_HEAD_TOKEN_TILE = 4096
LM_HEAD_VOCAB_TILE = 32768
LM_HEAD_TILE_COPIES = 4  # the bf16 tile and up to three fp32 temporaries of the torch path (exp, products)
# Without Triton (the CPU) TRL folds each tile in torch (trl.kernels.chunked_logprob._backward_tile): at its
# peak the backward holds the tile, seven fp32 temporaries of its size (scaled logits, z, log p, p, the
# gradient, and the target mask's difference and product) and the boolean target mask; measured with
# mau.train.bench.heap_bytes.
LM_HEAD_TORCH_FP32_COPIES = 7
DELTANET_CHUNK = 64  # transformers' torch_chunk_gated_delta_rule chunk size


# ---- activations -------------------------------------------------------------------------------------------

def layer_activation_bytes_per_token(t: dict[str, Any], kind: str, r: int, dtype: str = "bfloat16") -> int:
    """Bytes autograd keeps per token for one decoder layer in LoRA training (frozen base), term by term as
    transformers 5.24 / PEFT 0.21 / torch 2.14 save them (counted with ``saved_activation_bytes``). ``dtype``
    bfloat16: bf16 weights under bf16 autocast (production); float32: fp32 weights without autocast (a CPU
    without native bf16, mau.train.precision)."""
    if dtype == "float32":
        return _layer_activation_bytes_fp32(t, kind, r)
    h, inter = t["hidden_size"], t["intermediate_size"]
    # MLP: gate and up outputs and the activation (bf16), the activation's fp32 upcast, down_proj's LoRA
    # input.
    mlp = 3 * BF16 * inter + FP32 * inter + BF16 * inter
    if kind == "full_attention":
        q, kv = t["num_attention_heads"] * t["head_dim"], t["num_key_value_heads"] * t["head_dim"]
        norms = 8 * FP32 * h + 2 * BF16 * h  # fp32 RMSNorm inputs / outputs, the output gate (bf16)
        lora = 6 * BF16 * h + 7 * BF16 * r  # the LoRA inputs of q, k, v, o, gate, up; the seven A outputs
        # q and k: the fp32 input of their RMSNorm and two bf16 copies (rotated, SDPA's); v and the output
        # alike.
        rotary = (
            2 * BF16 * int(t["head_dim"] * t.get("rope_parameters", {}).get("partial_rotary_factor", 1.0))
        )
        mixer = (
            (FP32 + 2 * BF16) * (q + kv)
            + rotary
            + FP32 * (2 * t["num_attention_heads"] + t["num_key_value_heads"])
        )
        return mlp + norms + lora + mixer
    vh, dk, dv = t["linear_num_value_heads"], t["linear_key_head_dim"], t["linear_value_head_dim"]
    conv = 2 * t["linear_num_key_heads"] * dk + vh * dv
    c = DELTANET_CHUNK
    norms = 7 * FP32 * h  # fp32 RMSNorm inputs / outputs and the gated RMSNorm of the output
    lora = 5 * BF16 * h + 6 * BF16 * r  # the LoRA inputs of in_proj_qkv, in_proj_z, out_proj, gate, up
    # The reference chunk_gated_delta_rule (transformers' torch path), keys repeated to the value heads:
    mixer = 2 * BF16 * conv  # the causal conv's input and output
    # q, k, v, beta-scaled copies in fp32, flat and chunked (11 fp32 + 1 bf16 per channel)
    mixer += 46 * vh * dk
    mixer += 17 * vh * dk  # bf16 per-chunk slices the chunk loop keeps (8.5 per channel)
    mixer += (2 * BF16 + FP32) * vh * dk * dv // c  # the recurrent state entering each chunk, bf16 and fp32
    mixer += (2 * BF16 + 2 * FP32 + BF16) * vh * c  # the intra-chunk (c x c) attention and decay matrices
    mixer += 34 * vh  # decays, betas and their cumulative sums
    return mlp + norms + lora + mixer


def _layer_activation_bytes_fp32(t: dict[str, Any], kind: str, r: int) -> int:
    """The float32 terms: every saved tensor is fp32, and the copies autocast's casts add (bf16 / fp32 pairs)
    are gone, so each term is its own count, not the bf16 formula times two."""
    h, inter = t["hidden_size"], t["intermediate_size"]
    mlp = 5 * FP32 * inter  # gate and up outputs, the activation, the product's input, down_proj's LoRA input
    if kind == "full_attention":
        q, kv = t["num_attention_heads"] * t["head_dim"], t["num_key_value_heads"] * t["head_dim"]
        gate = 2 if t.get("attn_output_gate", True) else 1
        norms = 10 * FP32 * h  # RMSNorm inputs / outputs, the output gate and the gated attention output
        lora = 6 * FP32 * h + 7 * FP32 * r
        rotary = (
            2 * FP32 * int(t["head_dim"] * t.get("rope_parameters", {}).get("partial_rotary_factor", 1.0))
        )
        # q_proj's output (q and its gate in one tensor, kept by q's RMSNorm), SDPA's q and output; k_proj's
        # output (kept by k's RMSNorm), SDPA's k and v.
        mixer = FP32 * (gate * q + 2 * q + 3 * kv) + rotary
        mixer += FP32 * (2 * t["num_attention_heads"] + t["num_key_value_heads"])
        return mlp + norms + lora + mixer
    vh, dk, dv = t["linear_num_value_heads"], t["linear_key_head_dim"], t["linear_value_head_dim"]
    conv = 2 * t["linear_num_key_heads"] * dk + vh * dv
    c = DELTANET_CHUNK
    norms = 7 * FP32 * h
    lora = 5 * FP32 * h + 6 * FP32 * r
    mixer = 2 * FP32 * conv  # the causal conv's input and output
    mixer += 12 * FP32 * vh * dk  # q, k, v, beta-scaled copies, flat and chunked
    mixer += 7 * FP32 * vh * dk  # per-chunk slices the chunk loop keeps
    mixer += FP32 * vh * dk * dv // c  # the recurrent state entering each chunk
    mixer += 5 * FP32 * vh * c  # the intra-chunk (c x c) attention and decay matrices
    mixer += 34 * vh  # decays, betas and their cumulative sums
    return mlp + norms + lora + mixer


def lm_head_bytes(seq_tokens: int, vocab: int, hidden: int, tiled: bool = True, act_bytes: int = BF16,
                  torch_fold: bool = False) -> int:
    """The LM head's working memory: TRL's tiles (default; ``torch_fold``: folded in torch, as on the CPU), or
    full logits as a plain loss would keep them (logits in the compute dtype of ``act_bytes``, their fp32
    upcast and fp32 log-softmax)."""
    if not tiled:
        return seq_tokens * vocab * (act_bytes + FP32 + FP32)
    n = min(seq_tokens, LM_HEAD_TOKEN_TILE)
    if torch_fold:
        tile = act_bytes + LM_HEAD_TORCH_FP32_COPIES * FP32 + 1
    else:
        tile = act_bytes + (LM_HEAD_TILE_COPIES - 1) * FP32
    return n * min(vocab, LM_HEAD_VOCAB_TILE) * tile + seq_tokens * hidden * FP32


@dataclass
class MemoryEstimate:
    """Peak memory of one process (GPU), in bytes, by term. The LM head's backward ends (its tiles freed)
    before the first decoder layer's backward starts, so the two never hold memory at once: the peak counts
    the larger."""

    layout: str
    processes: int
    weights: int
    lora_state: int
    activations: int  # kept through the backward: each layer's input (checkpointing) or its saved tensors
    # the decoder layer in backward: recomputed saved tensors + their gradients, or gradients
    layer_backward: int
    lm_head: int
    gathered: int  # ZeRO-3: the largest module gathered at once (the tied embedding / lm_head)

    @property
    def total(self) -> int:
        return (self.weights + self.lora_state + self.activations + max(self.layer_backward, self.lm_head)
                + self.gathered)

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()}
        d["total"] = self.total
        d.update({f"{k}_gib": round(v / GIB, 2) for k, v in list(d.items()) if isinstance(v, int)
                  and k not in ("processes",)})
        return d


def estimate_memory(d: dict[str, Any], seq_tokens: int, r: int, gradient_checkpointing: bool,
                    layout: str = "single", processes: int = 1, batch: int = 1,
                    dtype: str = "bfloat16", lm_head_torch: bool = False) -> MemoryEstimate:
    """Peak memory per process for a batch of ``batch`` rows of ``seq_tokens`` tokens. layout: single, ddp,
    zero3 (weights and LoRA state sharded over ``processes``; each module gathered whole when it runs). dtype:
    bfloat16 (bf16 weights under bf16 autocast) or float32 (fp32 weights and activations). ``lm_head_torch``:
    TRL folds the LM head's tiles in torch (no Triton: the CPU), not in its GPU kernels."""
    from mau.train.shapes import lora_parameters, total_parameters

    t = d["text_config"]
    params = total_parameters(d)
    lora = lora_parameters(d, r)
    tokens = seq_tokens * batch
    act = FP32 if dtype == "float32" else BF16
    weight_bytes = act
    per_layer = [layer_activation_bytes_per_token(t, k, r, dtype) for k in t["layer_types"]]
    # The layer whose backward runs holds its saved tensors and, being built, their gradients (about as
    # large).
    if gradient_checkpointing:
        # Each layer keeps its input (the hidden state); one layer at a time is recomputed with everything.
        kept, in_backward = tokens * len(per_layer) * act * t["hidden_size"], tokens * 2 * max(per_layer)
    else:
        kept, in_backward = tokens * sum(per_layer), tokens * max(per_layer)
    head = lm_head_bytes(tokens, t["vocab_size"], t["hidden_size"], act_bytes=act, torch_fold=lm_head_torch)
    n = processes if layout == "zero3" else 1
    weights = math.ceil(params * weight_bytes / n)
    lora_state = math.ceil(lora * LORA_STATE_BYTES / n)
    if layout == "ddp":
        lora_state += lora * FP32  # the gradient buckets all-reduced beside the gradients
    gathered = t["vocab_size"] * t["hidden_size"] * weight_bytes if layout == "zero3" and n > 1 else 0
    return MemoryEstimate(layout=layout, processes=processes if layout != "single" else 1, weights=weights,
                          lora_state=lora_state, activations=kept, layer_backward=in_backward, lm_head=head,
                          gathered=gathered)


def saved_activation_bytes(model: Any, batch: dict[str, Any]) -> dict[int, int]:
    """Run one forward of ``model`` on ``batch`` and count, per decoder layer, the bytes of every tensor
    autograd saves for backward (each storage once; parameters excluded): the measurement the formula is
    checked with."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    layers = base.model.language_model.layers
    seen: dict[int, dict[int, int]] = {}
    current: list[int | None] = [None]

    def pack(x: Any) -> Any:
        if current[0] is not None and isinstance(x, torch.Tensor):
            st = x.untyped_storage()
            if st.data_ptr() not in params:
                seen.setdefault(current[0], {})[st.data_ptr()] = st.nbytes()
        return x

    hooks = []
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_pre_hook(lambda m, a, i=i: current.__setitem__(0, i)))
        hooks.append(layer.register_forward_hook(lambda m, a, o: current.__setitem__(0, None)))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            model(**batch)
    finally:
        for h in hooks:
            h.remove()
    return {i: sum(v.values()) for i, v in sorted(seen.items())}


# ---- the dataset's sequences -------------------------------------------------------------------------------

def image_tokens(width: int, height: int, patch: int, merge: int, min_pixels: int, max_pixels: int) -> int:
    """Tokens of one image after the Qwen2-VL image processor's resize (one token per (patch*merge)^2 px)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=patch * merge, min_pixels=min_pixels, max_pixels=max_pixels)
    return (h // patch) * (w // patch) // (merge * merge)


def _quantiles(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    s = sorted(values)

    def q(p: float) -> int:
        return s[min(len(s) - 1, round(p * (len(s) - 1)))]

    return {"n": len(s), "min": s[0], "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": s[-1],
            "mean": round(sum(s) / len(s), 1)}


def sequence_lengths(rows: Any, processor: Any, min_pixels: int, max_pixels: int) -> dict[str, list[int]]:
    """Per row: text tokens (the chat template rendered as in training, image placeholders excluded), image
    tokens and their sum."""
    from trl.data_utils import prepare_multimodal_messages

    from mau import schema as F
    from mau.train.data import clean_messages

    ip = processor.image_processor
    patch, merge = ip.patch_size, ip.merge_size
    tok = processor.tokenizer
    pad_id = tok.convert_tokens_to_ids("<|image_pad|>")
    out: dict[str, list[int]] = {"text": [], "image": [], "total": []}
    for row in rows:
        images = row[F.DS_IMAGES] or []
        messages = prepare_multimodal_messages(clean_messages(row[F.DS_MESSAGES]), images=images)
        text = processor.apply_chat_template(messages, tokenize=False)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        n_text = sum(1 for i in ids if i != pad_id)
        n_img = sum(image_tokens(im.width, im.height, patch, merge, min_pixels, max_pixels) for im in images)
        out["text"].append(n_text)
        out["image"].append(n_img)
        out["total"].append(n_text + n_img)
    return out


def model_config_dict(path: str) -> tuple[dict[str, Any], str]:
    """The base model's config.json: from a local folder, else the 9B values written in mau.train.shapes."""
    from mau.train.shapes import QWEN3_5_9B_CONFIG, QWEN3_5_9B_ID

    p = Path(path).expanduser()
    if (p / "config.json").is_file():
        return json.loads((p / "config.json").read_text()), str(p / "config.json")
    if path == QWEN3_5_9B_ID:
        return QWEN3_5_9B_CONFIG, "mau.train.shapes.QWEN3_5_9B_CONFIG (written in the repo)"
    raise MauError(f"model.path {path}: --plan needs its config.json (a local folder) or {QWEN3_5_9B_ID}")


def _processor(cfg: Any) -> tuple[Any, str]:
    """The base model's processor if it loads without a network; else the tiny local BPE's (text counts are
    then approximate: it splits game text into more tokens than Qwen's 248k vocabulary does)."""
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(cfg.model.path), "the model's own"
    except (OSError, ValueError):
        from mau.models.tiny import build_processor, build_tokenizer

        return build_processor(build_tokenizer(0)), ("the tiny local BPE (the model's tokenizer is not on "
                                                     "this machine): text counts are an overestimate")


def plan_dtype(cfg: Any) -> str:
    """The dtype the estimate counts in: float32 for ``model.dtype: float32`` (and ``auto`` on ``model.device:
    cpu``), else bfloat16 (float16 is counted as bf16: two-byte weights under autocast)."""
    if cfg.model.dtype == "float32" or (cfg.model.dtype == "auto" and cfg.model.device == "cpu"):
        return "float32"
    return "bfloat16"


def plan(cfg: Any, processes: int = 8) -> dict[str, Any]:
    """The whole plan for a ``TrainConfig``: sequences, steps per epoch, memory per layout."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from mau.train.data import load_bc_data

    d, config_source = model_config_dict(cfg.model.path)
    processor, tokenizer_source = _processor(cfg)
    ip = processor.image_processor
    size = getattr(ip, "size", None) or {}
    min_pixels = cfg.images.min_pixels or size.get("shortest_edge") or 56 * 56
    max_pixels = cfg.images.max_pixels or size.get("longest_edge") or 16384 * 28 * 28
    data = load_bc_data(cfg.data)
    lengths = sequence_lengths(data.train, processor, min_pixels, max_pixels)
    t = cfg.training
    rows = len(data.train)
    longest = max(lengths["total"])
    dtype = plan_dtype(cfg)
    layouts = {}
    for layout, n in (("single", 1), ("ddp", processes), ("zero3", processes)):
        batches = math.ceil(rows / (t.per_device_batch_size * n))
        steps = max(
            batches // t.gradient_accumulation_steps + int(batches % t.gradient_accumulation_steps > 0), 1
        )
        est = {gc: estimate_memory(d, longest, cfg.lora.r, gc, layout, n, t.per_device_batch_size, dtype)
               for gc in (True, False)}
        layouts[layout] = {"processes": n, "steps_per_epoch": steps,
                           "steps": t.max_steps or math.ceil(steps * t.epochs),
                           "global_batch": t.per_device_batch_size * t.gradient_accumulation_steps * n,
                           "memory_with_checkpointing": est[True].as_dict(),
                           "memory_without_checkpointing": est[False].as_dict()}
    from mau.train.shapes import lora_parameters, total_parameters

    tt = d["text_config"]
    return {
        "model": cfg.model.path, "config_from": config_source, "tokenizer": tokenizer_source,
        "dataset": str(data.path), "split": cfg.data.train_split, "rows": rows,
        "image_pixels": {"min": min_pixels, "max": max_pixels},
        "tokens": {k: _quantiles(v) for k, v in lengths.items()},
        "parameters": {"total": total_parameters(d), "lora": lora_parameters(d, cfg.lora.r)},
        "gradient_checkpointing": t.gradient_checkpointing, "dtype": dtype,
        "full_logits_gib_longest_row": round(lm_head_bytes(longest, tt["vocab_size"], tt["hidden_size"],
                                                           tiled=False, act_bytes=FP32 if dtype == "float32"
                                                           else BF16) / GIB, 2),
        "layouts": layouts,
    }


def render(p: dict[str, Any]) -> str:
    """The plan as a few readable lines."""
    tk = p["tokens"]
    lines = [(f"plan: {p['model']} ({p['parameters']['total'] / 1e9:.2f} B parameters, LoRA "
              f"{p['parameters']['lora'] / 1e6:.1f} M); config from {p['config_from']}"),
             f"dataset {p['dataset']} [{p['split']}]: {p['rows']} rows; tokenizer: {p['tokenizer']}"]
    for k in ("text", "image", "total"):
        q = tk[k]
        lines.append(f"  {k:5s} tokens  min {q['min']}  p50 {q['p50']}  p90 {q['p90']}  p99 {q['p99']}  "
                     f"max {q['max']}  mean {q['mean']}")
    lines.append(f"  (full logits of the longest row would take {p['full_logits_gib_longest_row']} GiB; TRL "
                 f"scores "
                 "the vocabulary in tiles)")
    lines.append(f"peak memory per GPU at the longest row in {p['dtype']}, GiB (weights + LoRA state + "
                 f"activations "
                 "kept + the larger of the layer in backward and the LM head [+ gathered]):")
    for name, lay in p["layouts"].items():
        for label, key in (("checkpointing", "memory_with_checkpointing"), ("no checkpointing",
                                                                             "memory_without_checkpointing")):
            m = lay[key]
            extra = f" + {m['gathered_gib']}" if m["gathered"] else ""
            head = f"  {name:6s} x{lay['processes']:<2d}"
            lines.append(f"{head} {label:16s} {m['total_gib']:7.2f} = {m['weights_gib']} + "
                         f"{m['lora_state_gib']} + {m['activations_gib']} + max({m['layer_backward_gib']}, "
                         f"{m['lm_head_gib']}){extra}")
        lines.append(f"  {name:6s} x{lay['processes']:<2d} steps/epoch {lay['steps_per_epoch']}, "
                     f"steps {lay['steps']}, global batch {lay['global_batch']}")
    return "\n".join(lines)
