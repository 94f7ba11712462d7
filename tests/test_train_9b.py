"""The real Qwen3.5-9B architecture on the CPU (issue 12): the 9B ``config.json`` values written in the repo
(mau.train.shapes) at reduced depth: one full block of the text stack (three Gated DeltaNet layers and one
full-attention layer) at the real widths, heads and 248,320-row vocabulary, two vision layers of width 1152,
random bf16 weights. ``mau train`` with the production config's LoRA, freezing and image settings runs two
steps on rows with a 640x360 frame; the adapter's saved keys show LoRA on every intended projection and
nowhere else, under the names vLLM maps; the parameter formulas extrapolate to 32 layers; ``mau train --plan``
and its memory estimate are checked against autograd's saved tensors and the measured peak; ``mau bench
train`` runs at reduced depth.

Memory: the reduced model is ~1.96 B parameters (the tied embedding alone ~1.02 B), ~3.9 GB in bf16; one copy is
alive at a time (the fixture saves it and frees it; the training runs in a subprocess)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("trl")
pytest.importorskip("peft")
pytest.importorskip("datasets")

from mau.train import shapes

REPO = Path(__file__).resolve().parents[1]
PROD_YAML = REPO / "configs" / "train" / "qwen3_5_9b.yaml"
FRAME = (640, 360)
# Qwen2-VL's resize: both sides to multiples of 32 (patch 16 x merge 2), 640 x 360 -> 640 x 352 (<= 230,400 px),
# one token per 32 x 32 px: 20 x 11.
FRAME_TOKENS = (640 // 32) * (round(360 / 32) * 32 // 32)
ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}


def _run(args: list[str], timeout: int = 1500) -> subprocess.CompletedProcess:
    import os

    r = subprocess.run([sys.executable, "-m", "mau", *args], cwd=REPO, check=False, capture_output=True,
                       text=True, timeout=timeout, env={**os.environ, **ENV})
    assert r.returncode == 0, f"mau {' '.join(args)} failed:\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def model_9b(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The 9B shape at one text block and two vision layers, random bf16 weights, saved with its processor."""
    out = tmp_path_factory.mktemp("qwen3_5-9b-shape")
    d = shapes.save_shaped_model(out, text_layers=4, vision_depth=2, seed=0)
    return out, d


@pytest.fixture(scope="module")
def frame_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two BC-shaped rows, each one 640x360 frame + ~120 text tokens + a JSON answer."""
    from mau.tiny import build_tokenizer
    from mau.train.bench import write_synthetic_dataset

    return write_synthetic_dataset(tmp_path_factory.mktemp("frames") / "ds", build_tokenizer(0), rows=2,
                                   text_tokens=120, seed=1)


# ---- the config and the formulas (no weights) ----------------------------------------------------------------

def test_the_9b_config_values_build_the_9b_architecture():
    import torch
    from transformers import Qwen3_5ForConditionalGeneration

    d = shapes.QWEN3_5_9B_CONFIG
    t, v = d["text_config"], d["vision_config"]
    assert (t["hidden_size"], t["num_hidden_layers"], t["vocab_size"]) == (4096, 32, 248320)
    assert t["layer_types"].count("linear_attention") == 24 and t["layer_types"][3::4] == ["full_attention"] * 8
    assert (v["depth"], v["hidden_size"], v["out_hidden_size"]) == (27, 1152, 4096)
    with torch.device("meta"):  # the full 9B on the meta device: shapes only, no memory
        m = Qwen3_5ForConditionalGeneration(shapes.hf_config(d))
    assert m.lm_head.weight is m.model.language_model.embed_tokens.weight  # tied
    assert sum(p.numel() for p in m.parameters()) == shapes.total_parameters(d) == 8_392_695_024
    assert sum(p.numel() for p in m.model.visual.parameters()) == shapes.vision_parameters(v)
    kinds = [type(layer.linear_attn if hasattr(layer, "linear_attn") else layer.self_attn).__name__
             for layer in m.model.language_model.layers]
    assert kinds[:4] == ["Qwen3_5GatedDeltaNet"] * 3 + ["Qwen3_5Attention"]


def test_lora_formula_extrapolates_to_32_layers():
    """The closed form r * sum(in + out) over the targeted projections equals PEFT's count on the meta-device
    model, at one block and at the full 32 layers (printed: the 9B figure)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3_5ForConditionalGeneration

    from mau.config import load_config
    from mau.train.config import TrainConfig

    lora = load_config(TrainConfig, PROD_YAML, {}).lora
    for layers, depth in ((4, 2), (32, 27)):
        d = shapes.config_dict(layers, depth)
        with torch.device("meta"):
            m = Qwen3_5ForConditionalGeneration(shapes.hf_config(d))
        pm = get_peft_model(m, LoraConfig(r=lora.r, lora_alpha=lora.alpha, target_modules=lora.target_modules))
        n = sum(p.numel() for name, p in pm.named_parameters() if "lora_" in name)
        assert n == shapes.lora_parameters(d, lora.r), layers
    n9b = shapes.lora_parameters(shapes.QWEN3_5_9B_CONFIG, lora.r)
    print(f"\nQwen3.5-9B LoRA r={lora.r}: {n9b:,} trainable parameters "
          f"(one block: {shapes.lora_parameters(shapes.config_dict(4), lora.r):,}; x8 blocks)")
    assert n9b == 8 * shapes.lora_parameters(shapes.config_dict(4), lora.r) == 40_108_032


# ---- mau train on the real widths ------------------------------------------------------------------------------

def test_mau_train_on_the_9b_shape(model_9b, frame_data, tmp_path):
    """Two steps of `mau train` with the production config (LoRA r=16 on the language model, vision frozen,
    gradient checkpointing, bf16, 640x360 frames); what the adapter holds, per projection name."""
    from safetensors import safe_open

    model_dir, d = model_9b
    out = tmp_path / "run"
    # Production settings except: this model and data, the CPU, two steps without accumulation (16 forward
    # passes of a 2 B model would take the CPU minutes) and without warmup (3% of two steps is one step at
    # learning rate 0, and LoRA's A matrices move only from the step after B has), no evaluation split, no
    # data-loader workers.
    r = _run(["train", "--config", str(PROD_YAML), "--out", str(out), "--set", f"model.path={model_dir}",
              "--set", "model.device=cpu", "--set", f"data.dataset={frame_data}", "--set", "data.filter=synthetic",
              "--set", "data.eval_split=null", "--set", "training.max_steps=2", "--set", "training.warmup=0", "--set",
              "training.gradient_accumulation_steps=1", "--set", "training.dataloader_num_workers=0",
              "--set", "training.save_steps=1000", "--set", "training.logging_steps=1"])
    assert r.stdout.startswith("trained steps=2 "), r.stdout
    checks = json.loads((out / "checks.json").read_text())
    summary = json.loads((out / "train.json").read_text())
    c = checks["parameters"]
    assert c["trainable"] == c["lora"] == shapes.lora_parameters(d, 16) == 5_013_504
    assert c["vision_trainable"] == c["lm_head_trainable"] == 0
    assert c["total"] - c["lora"] == shapes.total_parameters(d)
    assert checks["vision_unchanged"] and checks["trainable_changed"] == checks["trainable_tensors"]
    col = checks["collator"]
    assert col["images"] == 2 and col["image_tokens"] == 2 * FRAME_TOKENS == 440  # 220 per 640x360 frame
    assert summary["steps"] == 2 and all(math.isfinite(x) for x in [summary["train_loss"]])

    keys = list(safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt").keys())
    lora_a = [k for k in keys if ".lora_A." in k]
    per_name: dict[str, int] = {}
    for k in lora_a:
        name = k.split(".lora_A.")[0].rsplit(".", 1)[1]
        per_name[name] = per_name.get(name, 0) + 1
    assert per_name == shapes.lora_modules_per_name(d) == {
        "in_proj_qkv": 3, "in_proj_z": 3, "out_proj": 3, "q_proj": 1, "k_proj": 1, "v_proj": 1, "o_proj": 1,
        "gate_proj": 4, "up_proj": 4, "down_proj": 4}
    assert len(keys) == 2 * len(lora_a)  # A and B, nothing else (no modules_to_save, no lm_head)
    assert not [k for k in keys if ".visual." in k or "merger" in k or "lm_head" in k or "embed" in k]
    # vLLM maps Qwen3.5 adapter weights only under the language_model segment (vLLM issue 49354).
    assert all(k.startswith("base_model.model.model.language_model.layers.") for k in keys), keys[:3]


# ---- the plan and its memory estimate ----------------------------------------------------------------------------

def test_activation_formula_matches_what_autograd_saves():
    """The per-layer activation terms of the plan against autograd's saved tensors (parameters excluded), on
    one block at the real widths (the vocabulary shrunk: the embedding plays no part here), seq 256, LoRA as
    in production. The first layer saves less (its input needs no gradient): the formula is an upper bound
    there; layers 2-4 must match within 3% (the per-step casts of the LoRA weights are not per-token)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from mau.config import load_config
    from mau.train import plan as P
    from mau.train.config import TrainConfig

    lora = load_config(TrainConfig, PROD_YAML, {}).lora
    d = shapes.config_dict(4, 1)
    d["text_config"].update(vocab_size=1024, pad_token_id=0, eos_token_id=1)
    t = d["text_config"]
    model = shapes.build_model(d)
    model = get_peft_model(model, LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                             target_modules=lora.target_modules))
    model.train()
    seq = 256
    ids = torch.randint(0, 1000, (1, seq), generator=torch.Generator().manual_seed(0))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        saved = P.saved_activation_bytes(model, {"input_ids": ids, "labels": ids})
    for i, kind in enumerate(t["layer_types"]):
        est = P.layer_activation_bytes_per_token(t, kind, lora.r) * seq
        if i == 0:
            assert saved[i] <= est * 1.03, (i, kind, saved[i], est)
        else:
            assert abs(saved[i] - est) <= 0.03 * saved[i], (i, kind, saved[i], est)


def test_plan_prints_lengths_steps_and_memory(frame_data):
    """`mau train --plan` on the production config (model config from the repo's 9B values): image tokens of
    the 640x360 frame, steps per epoch, memory for 1 GPU / DDP / ZeRO-3 with and without checkpointing."""
    r = _run(["train", "--config", str(PROD_YAML), "--plan", "--plan-gpus", "2", "--set",
              f"data.dataset={frame_data}", "--set", "data.filter=synthetic", "--set", "data.eval_split=null"],
             timeout=300)
    text = r.stdout
    assert "image tokens  min 220  p50 220" in text.replace("image tokens", "image tokens"), text
    from mau.config import load_config
    from mau.train import plan as P
    from mau.train.config import TrainConfig

    cfg = load_config(TrainConfig, PROD_YAML, {"data": {"dataset": str(frame_data), "filter": "synthetic",
                                                        "eval_split": None}})
    p = P.plan(cfg, processes=2)
    assert p["tokens"]["image"]["max"] == FRAME_TOKENS
    assert p["parameters"] == {"total": 8_392_695_024, "lora": 40_108_032}
    # 2 rows, batch 1 x accumulation 8: one (partial) optimizer step per epoch, 2 epochs.
    assert p["layouts"]["single"]["steps_per_epoch"] == 1 and p["layouts"]["single"]["steps"] == 2
    single, zero3 = p["layouts"]["single"], p["layouts"]["zero3"]
    w = single["memory_with_checkpointing"]
    assert w["weights"] == 8_392_695_024 * 2 and w["lora_state"] == 40_108_032 * 16
    assert zero3["memory_with_checkpointing"]["weights"] == 8_392_695_024  # sharded over 2
    assert single["memory_without_checkpointing"]["activations"] > w["activations"]
    assert "x2" in text and "zero3" in text and "steps/epoch" in text


def test_bench_train_runs_at_reduced_depth_and_the_estimate_holds():
    """`mau bench train` on the CPU at one block (the GPU check's code path): steps, tokens/s, the measured
    peak memory and the plan's estimate of it. Tolerance: on the CPU the measure is the process's resident
    memory (weights as built + the rise while training), which also holds allocator slack and the per-step
    casts of the LoRA weights; the estimate must be within 15% of it (the weights, 3.9 GB, are ~85% of both:
    a wrong activation or LM-head term of the size that matters here would move the total by more)."""
    r = _run(["bench", "train", "--layers", "4", "--vision-depth", "2", "--train-steps", "2", "--text-tokens", "200",
              "--device", "cpu"])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["steps"] == 2 and out["image_tokens"] == FRAME_TOKENS and out["tokens_per_second"] > 0
    assert out["mfu"] is None and out["trainable"] == 5_013_504
    ratio = out["estimated_peak_bytes"] / out["peak_memory_bytes"]
    print(f"\nbench train (CPU, 4 layers): {json.dumps(out)}")
    assert 0.85 <= ratio <= 1.15, out
    # the weights term alone: built bf16 weights vs resident memory after the build
    assert abs(out["estimate"]["weights"] - out["weights_rss_bytes"]) <= 0.05 * out["estimate"]["weights"], out
