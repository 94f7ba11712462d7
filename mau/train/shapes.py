"""The Qwen3.5-9B architecture without its weights: the public ``config.json`` values written down here
(nothing can be downloaded in the tests), a builder of ``Qwen3_5ForConditionalGeneration`` with those shapes
at any depth and random weights, and closed-form parameter counts (total, LoRA) that extrapolate from the
reduced depth the CPU tests build to the 32 layers of the real model. Heavy imports happen inside the
functions.

Where the values come from: the ``config.json`` of the hub repository ``Qwen/Qwen3.5-9B`` as we know it (it
could not be fetched here: no network), cross-checked against the defaults of transformers 5.24's
``Qwen3_5TextConfig`` / ``Qwen3_5VisionConfig`` / ``Qwen3_5Config``, whose docstrings describe that
checkpoint (hidden 4096, 32 layers, 16/4 heads of 256, DeltaNet 16 key / 32 value heads of 128, vocabulary
248,320, image token 248056, a 27-layer vision tower of width 1152). Where the two differ we follow the
checkpoint: ``tie_word_embeddings`` (true in the checkpoint, per issue 12; false in the class defaults),
``max_position_embeddings`` 262,144, rope theta 1e7 with ``mrope_section`` [11, 11, 10] interleaved, and the
vision tower's ``out_hidden_size`` equal to the text width (4096; the class default 3584 is Qwen2.5's).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QWEN3_5_9B_ID = "Qwen/Qwen3.5-9B"
QWEN3_5_9B_LAYERS = 32
QWEN3_5_9B_VISION_DEPTH = 27

# config.json of Qwen/Qwen3.5-9B (values as published; see the module docstring for the sources).
QWEN3_5_9B_CONFIG: dict[str, Any] = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "image_token_id": 248056,
    "video_token_id": 248057, "vision_start_token_id": 248053, "vision_end_token_id": 248054,
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
        "num_hidden_layers": 32,
        # three Gated DeltaNet layers, then one full-attention layer, eight times
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 8, "full_attention_interval": 4,
        "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
        "attn_output_gate": True,  # q_proj also emits a per-head output gate: 2 x 16 x 256 outputs
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "hidden_act": "silu", "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10], "mrope_interleaved": True},
        "attention_bias": False, "tie_word_embeddings": True, "eos_token_id": 248046, "pad_token_id": 248044,
    },
    "vision_config": {
        "model_type": "qwen3_5_vision", "depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
        "num_heads": 16, "in_channels": 3, "patch_size": 16, "spatial_merge_size": 2,
        "temporal_patch_size": 2, "out_hidden_size": 4096, "num_position_embeddings": 2304,
        "hidden_act": "gelu_pytorch_tanh",
    },
}

# What LoRA targets in each layer kind (mau.train.config.LANGUAGE_MODEL_LORA_TARGETS; in_proj_a / in_proj_b,
# the DeltaNet's per-head decay and beta projections, and conv1d are left out by that regex).
DELTANET_TARGETS = ("in_proj_qkv", "in_proj_z", "out_proj")
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")


def config_dict(text_layers: int | None = None, vision_depth: int | None = None,
                token_ids: dict[str, int] | None = None) -> dict[str, Any]:
    """The 9B ``config.json`` at another depth (``text_layers`` a multiple of 4 keeps whole blocks), with
    other special-token ids if given (a locally built tokenizer has its own)."""
    c = copy.deepcopy(QWEN3_5_9B_CONFIG)
    t = c["text_config"]
    if text_layers is not None:
        if text_layers < 1:
            raise ValueError("text_layers must be >= 1")
        t["num_hidden_layers"] = text_layers
        t["layer_types"] = [t["layer_types"][i % 4] for i in range(text_layers)]
    if vision_depth is not None:
        c["vision_config"]["depth"] = vision_depth
    for k, v in (token_ids or {}).items():
        if k in ("eos_token_id", "pad_token_id"):
            t[k] = v
        else:
            c[k] = v
    return c


NARROW_DIVISORS = (1, 2, 4, 8)  # 8: still 2 query heads per key/value head (the 9B: 4)


def narrow(d: dict[str, Any], divisor: int) -> dict[str, Any]:
    """The same architecture ``divisor`` times narrower, for CPU runs of the training path: the text width,
    MLP width, vocabulary and the counts of attention, key/value and DeltaNet heads divided (at least one of
    each), the vision tower's width, MLP and heads alike (its output width follows the text width).
    Unchanged: depth and layer types, every head dimension (so rotary sections and DeltaNet chunks are as in
    the 9B), patch and merge sizes (a 640x360 frame is still 220 tokens), special-token ids (give config_dict
    a small tokenizer's ids: the 9B's are above a divided vocabulary). ``divisor`` 1 returns a copy."""
    if divisor not in NARROW_DIVISORS:
        raise ValueError(f"width divisor {divisor}: use one of {', '.join(map(str, NARROW_DIVISORS))}")
    c = copy.deepcopy(d)
    t, v = c["text_config"], c["vision_config"]
    for k in ("hidden_size", "intermediate_size", "vocab_size", "num_attention_heads", "num_key_value_heads",
              "linear_num_key_heads", "linear_num_value_heads"):
        t[k] = max(1, t[k] // divisor)
    for k in ("hidden_size", "intermediate_size", "num_heads"):
        v[k] = max(1, v[k] // divisor)
    v["out_hidden_size"] = t["hidden_size"]
    return c


def hf_config(d: dict[str, Any]) -> Any:
    """A ``Qwen3_5Config`` from a config dict."""
    from transformers import Qwen3_5Config

    d = copy.deepcopy(d)
    d.pop("architectures", None)
    d.pop("model_type", None)
    for sub in ("text_config", "vision_config"):
        d[sub].pop("model_type", None)
    return Qwen3_5Config(**d)


# ---- closed-form counts ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Linear:
    name: str
    d_in: int
    d_out: int


def layer_linears(t: dict[str, Any], kind: str) -> list[Linear]:
    """The LoRA-targeted linear layers of one decoder layer of ``kind`` (linear_attention /
    full_attention)."""
    h, inter = t["hidden_size"], t["intermediate_size"]
    mlp = [Linear("gate_proj", h, inter), Linear("up_proj", h, inter), Linear("down_proj", inter, h)]
    if kind == "linear_attention":
        key = t["linear_num_key_heads"] * t["linear_key_head_dim"]
        value = t["linear_num_value_heads"] * t["linear_value_head_dim"]
        return [Linear("in_proj_qkv", h, 2 * key + value), Linear("in_proj_z", h, value),
                Linear("out_proj", value, h), *mlp]
    q = t["num_attention_heads"] * t["head_dim"]
    kv = t["num_key_value_heads"] * t["head_dim"]
    gate = 2 if t.get("attn_output_gate", True) else 1
    return [Linear("q_proj", h, gate * q), Linear("k_proj", h, kv), Linear("v_proj", h, kv),
            Linear("o_proj", q, h), *mlp]


def lora_parameters(d: dict[str, Any], r: int, text_layers: int | None = None) -> int:
    """LoRA parameters (A: r x in, B: out x r per targeted linear) of the language model at ``text_layers``
    (default: the config's depth): sum over layers of r * (in + out) of each targeted projection."""
    t = d["text_config"]
    n = text_layers if text_layers is not None else t["num_hidden_layers"]
    kinds = (
        [t["layer_types"][i % len(t["layer_types"])] for i in range(n)] if text_layers else t["layer_types"]
    )
    return sum(r * (lin.d_in + lin.d_out) for kind in kinds for lin in layer_linears(t, kind))


def lora_modules_per_name(d: dict[str, Any], text_layers: int | None = None) -> dict[str, int]:
    """How many LoRA-wrapped modules each projection name should have at ``text_layers``."""
    t = d["text_config"]
    n = text_layers if text_layers is not None else t["num_hidden_layers"]
    out: dict[str, int] = {}
    for i in range(n):
        for lin in layer_linears(t, t["layer_types"][i % len(t["layer_types"])]):
            out[lin.name] = out.get(lin.name, 0) + 1
    return out


def layer_parameters(t: dict[str, Any], kind: str) -> int:
    """All weights of one decoder layer (projections, norms, conv1d, DeltaNet's A_log / dt_bias)."""
    h = t["hidden_size"]
    n = sum(lin.d_in * lin.d_out for lin in layer_linears(t, kind)) + 2 * h  # two RMSNorms
    if kind == "linear_attention":
        key = t["linear_num_key_heads"] * t["linear_key_head_dim"]
        value = t["linear_num_value_heads"] * t["linear_value_head_dim"]
        vh = t["linear_num_value_heads"]
        conv = 2 * key + value
        n += 2 * h * vh  # in_proj_a, in_proj_b
        n += conv * t["linear_conv_kernel_dim"]  # depthwise conv1d, no bias
        n += 2 * vh + t["linear_value_head_dim"]  # A_log, dt_bias, the gated RMSNorm's weight
    else:
        n += 2 * t["head_dim"]  # q_norm, k_norm
    return n


def vision_parameters(v: dict[str, Any]) -> int:
    """The vision tower with its merger: patch embedding (a Conv3d with bias), learned position embeddings,
    ``depth`` blocks (two LayerNorms, qkv, proj, a two-layer MLP, all with biases), the merger (LayerNorm over
    the patch width, then two linears over 4 merged patches)."""
    w, inter, p, tp = v["hidden_size"], v["intermediate_size"], v["patch_size"], v["temporal_patch_size"]
    patch = v["in_channels"] * tp * p * p * w + w
    pos = v["num_position_embeddings"] * w
    block = 2 * 2 * w + (w * 3 * w + 3 * w) + (w * w + w) + (w * inter + inter) + (inter * w + w)
    merged = w * v["spatial_merge_size"] ** 2
    merger = 2 * w + (merged * merged + merged) + (merged * v["out_hidden_size"] + v["out_hidden_size"])
    return patch + pos + v["depth"] * block + merger


def total_parameters(
    d: dict[str, Any], text_layers: int | None = None, vision_depth: int | None = None
) -> int:
    """Every weight of the model (a tied lm_head counted once)."""
    t, v = d["text_config"], dict(d["vision_config"])
    if vision_depth is not None:
        v["depth"] = vision_depth
    n = text_layers if text_layers is not None else t["num_hidden_layers"]
    layers = sum(layer_parameters(t, t["layer_types"][i % len(t["layer_types"])]) for i in range(n))
    emb = t["vocab_size"] * t["hidden_size"]
    head = 0 if d.get("tie_word_embeddings", t.get("tie_word_embeddings")) else emb
    return emb + layers + t["hidden_size"] + head + vision_parameters(v)


# ---- building ----------------------------------------------------------------------------------------------

def build_model(d: dict[str, Any], dtype: str = "bfloat16", seed: int = 0, device: str = "cpu") -> Any:
    """``Qwen3_5ForConditionalGeneration`` with the shapes of ``d`` and random weights (transformers' own
    init, seeded) in ``dtype``, built directly on ``device``."""
    import torch
    from transformers import Qwen3_5ForConditionalGeneration

    torch.manual_seed(seed)
    dt = getattr(torch, dtype)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dt)  # allocate in bf16 from the start: a float32 copy of the 9B would not fit
    try:
        with torch.device(device):
            model = Qwen3_5ForConditionalGeneration(hf_config(d))
    finally:
        torch.set_default_dtype(prev)
    return model.to(dt)


def save_shaped_model(
    out: str | Path, text_layers: int = 4, vision_depth: int = 2, seed: int = 0, dtype: str = "bfloat16",
    max_pixels: int = 640 * 360, width_divisor: int = 1,
) -> dict[str, Any]:
    """Save a 9B-shaped model at reduced depth (random ``dtype`` weights; ``width_divisor`` > 1: narrowed, see
    ``narrow``) with a local processor into ``out``, loadable by ``mau train`` (``model.path``). The
    tokenizer is the tiny local BPE (the real one cannot be downloaded): its special-token ids replace the
    checkpoint's, and
    the embedding keeps all 248,320 rows (divided by ``width_divisor``). Returns the config dict used."""
    import gc

    from transformers import GenerationConfig

    from mau.models.tiny import SPECIAL_TOKENS, build_processor, build_tokenizer

    tok = build_tokenizer(seed)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    d = narrow(config_dict(text_layers, vision_depth, {
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
        "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]}), width_divisor)
    model = build_model(d, dtype=dtype, seed=seed)
    eot = ids["<|endoftext|>"]
    model.generation_config = GenerationConfig(eos_token_id=[ids["<|im_end|>"], eot], pad_token_id=eot,
                                               do_sample=False)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    del model
    gc.collect()
    build_processor(tok, max_pixels=max_pixels).save_pretrained(out)
    return d
