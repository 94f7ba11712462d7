"""The real Qwen3.5-9B architecture on the CPU (issue 12): the 9B ``config.json`` values written in the repo
(mau.train.shapes) at reduced depth: one full block of the text stack (three Gated DeltaNet layers and one
full-attention layer) and two vision layers. At the real widths, heads and 248,320-row vocabulary (on the meta
device: shapes, no memory): the architecture, the parameter formulas extrapolated to 32 layers, and the
production config's LoRA (on every intended projection and nowhere else, under the names vLLM maps) and frozen
vision tower. Training runs (``mau train`` with the production config's LoRA, freezing and image settings, two
steps on rows with a 640x360 frame; ``mau bench train``) use the same architecture narrowed 8 times
(mau.train.shapes.narrow: widths, head counts and vocabulary divided, head dimensions, layer types, patch and
merge sizes kept) in the dtype this CPU computes natively (mau.train.precision: bfloat16 with AVX512-BF16 /
AMX, else float32; MAU_NATIVE_BF16=0 forces float32), so that each takes under a minute on two cores (issue
23: in bf16 at the real widths each was killed at its 25-minute timeout on an AVX2-only CPU). The bf16 path
at the real widths is ``mau bench train`` on a GPU (docs/training.md). The plan's activation formulas are
checked against autograd's
saved tensors in both dtypes, and its whole estimate against the measured peak of ``mau bench train``."""

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
from mau.train.precision import native_dtype

REPO = Path(__file__).resolve().parents[1]
PROD_YAML = REPO / "configs" / "train" / "qwen3_5_9b.yaml"
FRAME = (640, 360)
# Qwen2-VL's resize: both sides to multiples of 32 (patch 16 x merge 2), 640 x 360 -> 640 x 352 (<= 230,400
# px), one token per 32 x 32 px: 20 x 11.
FRAME_TOKENS = (640 // 32) * (round(360 / 32) * 32 // 32)
ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}
DTYPE = native_dtype("cpu")  # the training runs' dtype: bfloat16 only where this CPU computes it natively
NARROW = 8  # the training runs' width divisor (mau.train.shapes.narrow)
# Special-token ids inside a narrowed vocabulary (the 9B's are above it) for models built here.
SMALL_IDS = {
    "image_token_id": 10, "video_token_id": 11, "vision_start_token_id": 12, "vision_end_token_id": 13,
    "eos_token_id": 1, "pad_token_id": 0,
}
# LoRA modules per projection name in one block (three DeltaNet layers, one full-attention layer): at any
# width.
LORA_PER_NAME = {
    "in_proj_qkv": 3, "in_proj_z": 3, "out_proj": 3, "q_proj": 1, "k_proj": 1, "v_proj": 1, "o_proj": 1,
    "gate_proj": 4, "up_proj": 4, "down_proj": 4,
}


def _run(args: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    import os

    r = subprocess.run([sys.executable, "-m", "mau", *args], cwd=REPO, check=False, capture_output=True,
                       text=True, timeout=timeout, env={**os.environ, **ENV})
    assert r.returncode == 0, f"mau {' '.join(args)} failed:\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def model_9b(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The 9B shape at one text block and two vision layers, narrowed 8 times, random weights in the native
    dtype, saved with its processor."""
    out = tmp_path_factory.mktemp("qwen3_5-9b-shape")
    d = shapes.save_shaped_model(
        out, text_layers=4, vision_depth=2, seed=0, dtype=DTYPE, width_divisor=NARROW
    )
    return out, d


@pytest.fixture(scope="module")
def frame_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two BC-shaped rows, each one 640x360 frame + ~120 text tokens + a JSON answer."""
    from mau.models.tiny import build_tokenizer
    from mau.train.bench import write_synthetic_dataset

    return write_synthetic_dataset(tmp_path_factory.mktemp("frames") / "ds", build_tokenizer(0), rows=2,
                                   text_tokens=120, seed=1)


# ---- the config and the formulas (no weights) --------------------------------------------------------------

def test_the_9b_config_values_build_the_9b_architecture():
    import torch
    from transformers import Qwen3_5ForConditionalGeneration

    d = shapes.QWEN3_5_9B_CONFIG
    t, v = d["text_config"], d["vision_config"]
    assert (t["hidden_size"], t["num_hidden_layers"], t["vocab_size"]) == (4096, 32, 248320)
    assert (
        t["layer_types"].count("linear_attention") == 24 and t["layer_types"][3::4] == ["full_attention"] * 8
    )
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
    # narrowed: the training runs' widths
    for layers, depth, divisor in ((4, 2, 1), (32, 27, 1), (4, 2, NARROW)):
        d = shapes.narrow(shapes.config_dict(layers, depth, SMALL_IDS if divisor > 1 else None), divisor)
        with torch.device("meta"):
            m = Qwen3_5ForConditionalGeneration(shapes.hf_config(d))
        pm = get_peft_model(
            m, LoraConfig(r=lora.r, lora_alpha=lora.alpha, target_modules=lora.target_modules)
        )
        n = sum(p.numel() for name, p in pm.named_parameters() if "lora_" in name)
        assert n == shapes.lora_parameters(d, lora.r), (layers, divisor)
        assert sum(p.numel() for p in m.parameters()) - n == shapes.total_parameters(d), (layers, divisor)
    n9b = shapes.lora_parameters(shapes.QWEN3_5_9B_CONFIG, lora.r)
    print(f"\nQwen3.5-9B LoRA r={lora.r}: {n9b:,} trainable parameters "
          f"(one block: {shapes.lora_parameters(shapes.config_dict(4), lora.r):,}; x8 blocks)")
    assert n9b == 8 * shapes.lora_parameters(shapes.config_dict(4), lora.r) == 40_108_032


def test_native_bf16_reads_the_cpu_flags_and_the_override(monkeypatch):
    """The training runs' dtype: bfloat16 only with the CPU's bf16 instructions; MAU_NATIVE_BF16 forces either
    answer (0 reproduces an AVX2-only machine), anything else is refused."""
    import torch

    from mau.errors import MauError
    from mau.train import precision

    monkeypatch.delenv(precision.ENV, raising=False)
    caps = torch.cpu.get_capabilities()
    assert precision.native_bf16() == any(
        caps.get(f) is True for f in ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16")
    )
    monkeypatch.setattr(
        torch.cpu, "get_capabilities",
        lambda: {
            **caps, "avx512_bf16": False, "amx_bf16": False, "bf16": False, "sve_bf16": False, "avx2": True,
        },
    )
    assert precision.native_dtype() == "float32"
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {**caps, "amx_bf16": True})
    assert precision.native_dtype() == "bfloat16"
    monkeypatch.setenv(precision.ENV, "0")
    assert precision.native_dtype() == "float32"
    monkeypatch.setenv(precision.ENV, "1")
    assert precision.native_dtype() == "bfloat16"
    monkeypatch.setenv(precision.ENV, "yes")
    with pytest.raises(MauError, match="MAU_NATIVE_BF16"):
        precision.native_bf16()


# ---- LoRA and freezing at the real widths, mau train at narrowed widths ------------------------------------

def _adapter_checks(keys: list[str], shape_of: dict[str, tuple[int, ...]], d: dict, r: int) -> None:
    """What an adapter of the production config holds for model ``d``: LoRA A and B on every intended
    projection of both layer kinds (per name), of the shapes the projection's widths give, and nothing else,
    all under the language_model segment vLLM maps for Qwen3.5 (vLLM issue 49354)."""
    lora_a = [k for k in keys if ".lora_A." in k]
    per_name: dict[str, int] = {}
    for k in lora_a:
        name = k.split(".lora_A.")[0].rsplit(".", 1)[1]
        per_name[name] = per_name.get(name, 0) + 1
    assert per_name == shapes.lora_modules_per_name(d) == LORA_PER_NAME
    assert len(keys) == 2 * len(lora_a)  # A and B, nothing else (no modules_to_save, no lm_head)
    assert not [k for k in keys if ".visual." in k or "merger" in k or "lm_head" in k or "embed" in k]
    assert all(k.startswith("base_model.model.model.language_model.layers.") for k in keys), keys[:3]
    t = d["text_config"]
    for k in lora_a:
        layer = int(k.split(".layers.")[1].split(".")[0])
        name = k.split(".lora_A.")[0].rsplit(".", 1)[1]
        lin = {x.name: x for x in shapes.layer_linears(t, t["layer_types"][layer])}[name]
        assert shape_of[k] == (r, lin.d_in), k
        assert shape_of[k.replace(".lora_A.", ".lora_B.")] == (lin.d_out, r), k


def test_production_lora_and_freezing_at_the_real_widths():
    """The production config's LoRA on the 9B shape at one block and two vision layers, real widths (meta
    device: what mau.train.sft.build does before the trainer, without the memory): the trainable parameters
    are exactly the LoRA weights the closed form counts, none in the vision tower or lm_head, and the
    adapter's
    state (what PEFT saves) has LoRA on every intended projection, of the real shapes, and nowhere else."""
    import torch
    from peft import get_peft_model, get_peft_model_state_dict

    from mau.config import load_config
    from mau.train import freeze
    from mau.train.config import TrainConfig

    lora = load_config(TrainConfig, PROD_YAML, {}).lora
    d = shapes.config_dict(4, 2)
    model = shapes.build_model(d, device="meta")
    pm = get_peft_model(model, freeze.prepare_for_tuning(model, lora))
    freeze.check_trainable(pm, full_finetune=False)
    c = freeze.parameter_counts(pm)
    assert c["trainable"] == c["lora"] == shapes.lora_parameters(d, 16) == 5_013_504
    assert c["vision_trainable"] == c["lm_head_trainable"] == 0 and c["vision"] == shapes.vision_parameters(
        {**d["vision_config"], "depth": 2})
    assert c["total"] - c["lora"] == shapes.total_parameters(d)
    state = get_peft_model_state_dict(pm)
    assert all(v.device == torch.device("meta") for v in state.values())
    _adapter_checks(list(state), {k: tuple(v.shape) for k, v in state.items()}, d, lora.r)


def test_mau_train_on_the_9b_shape(model_9b, frame_data, tmp_path):
    """Two steps of `mau train` with the production config (LoRA r=16 on the language model, vision frozen,
    gradient checkpointing, 640x360 frames) on the narrowed 9B shape in the native dtype; the run's checks
    (what trained, the vision tower bit-identical, the image tokens) and what the saved adapter holds."""
    from safetensors import safe_open

    model_dir, d = model_9b
    out = tmp_path / "run"
    # Production settings except: this model and data, the CPU, its native dtype (bf16 mixed precision only
    # where bf16 is native), two steps without accumulation (16 forward passes would take the CPU minutes)
    # and without warmup (3% of two steps is one step at learning rate 0, and LoRA's A matrices move only
    # from the step after B has), no evaluation split, no data-loader workers.
    r = _run(
        [
            "train", "--config", str(PROD_YAML), "--out", str(out), "--set", f"model.path={model_dir}",
            "--set", "model.device=cpu", "--set", f"model.dtype={DTYPE}", "--set",
            f"training.bf16={str(DTYPE == 'bfloat16').lower()}", "--set", f"data.dataset={frame_data}",
            "--set", "data.filter=synthetic", "--set", "data.eval_split=null", "--set",
            "training.max_steps=2", "--set", "training.warmup=0", "--set",
            "training.gradient_accumulation_steps=1", "--set", "training.dataloader_num_workers=0", "--set",
            "training.save_steps=1000", "--set", "training.logging_steps=1",
        ],
        timeout=600,
    )
    assert r.stdout.startswith("trained steps=2 "), r.stdout
    checks = json.loads((out / "checks.json").read_text())
    summary = json.loads((out / "train.json").read_text())
    c = checks["parameters"]
    assert c["trainable"] == c["lora"] == shapes.lora_parameters(d, 16) == 630_784
    assert c["vision_trainable"] == c["lm_head_trainable"] == 0
    assert c["total"] - c["lora"] == shapes.total_parameters(d)
    assert checks["vision_unchanged"] and checks["trainable_changed"] == checks["trainable_tensors"]
    col = checks["collator"]
    assert col["images"] == 2 and col["image_tokens"] == 2 * FRAME_TOKENS == 440  # 220 per 640x360 frame
    assert summary["steps"] == 2 and all(math.isfinite(x) for x in [summary["train_loss"]])

    with safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt") as f:
        shape_of = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    _adapter_checks(list(shape_of), shape_of, d, 16)


# ---- the plan and its memory estimate ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_activation_formula_matches_what_autograd_saves(dtype):
    """The per-layer activation terms of the plan against autograd's saved tensors (parameters excluded), on
    one block of the 9B narrowed 8 times (the vocabulary shrunk: the embedding plays no part here), seq 256,
    LoRA as in production; bfloat16: bf16 weights under bf16 autocast (production; one forward, cheap at
    these widths even where bf16 is emulated), float32: without autocast (the CPU training runs). The first
    layer saves less (its input needs no gradient): the formula is an upper bound there; layers 2-4 must
    match within 3% (the per-step casts of the LoRA weights are not per-token)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from mau.config import load_config
    from mau.train import plan as P
    from mau.train.config import TrainConfig

    lora = load_config(TrainConfig, PROD_YAML, {}).lora
    d = shapes.config_dict(4, 1)
    d["text_config"].update(vocab_size=1024 * NARROW, pad_token_id=0, eos_token_id=1)
    d = shapes.narrow(d, NARROW)
    t = d["text_config"]
    model = shapes.build_model(d, dtype=dtype)
    model = get_peft_model(model, LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                             target_modules=lora.target_modules))
    model.train()
    seq = 256
    ids = torch.randint(0, 1000, (1, seq), generator=torch.Generator().manual_seed(0))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
        saved = P.saved_activation_bytes(model, {"input_ids": ids, "labels": ids})
    for i, kind in enumerate(t["layer_types"]):
        est = P.layer_activation_bytes_per_token(t, kind, lora.r, dtype) * seq
        if i == 0:
            assert saved[i] <= est * 1.03, (i, kind, saved[i], est)
        else:
            assert abs(saved[i] - est) <= 0.03 * saved[i], (i, kind, saved[i], est)


def test_plan_prints_lengths_steps_and_memory(frame_data):
    """`mau train --plan` on the production config (model config from the repo's 9B values): image tokens of
    the 640x360 frame, steps per epoch, memory for 1 GPU / DDP / ZeRO-3 with and without checkpointing."""
    r = _run(
        [
            "train", "--config", str(PROD_YAML), "--plan", "--plan-gpus", "2", "--set",
            f"data.dataset={frame_data}", "--set", "data.filter=synthetic", "--set", "data.eval_split=null",
        ],
        timeout=300,
    )
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
    assert w["total"] == w["weights"] + w["lora_state"] + w["activations"] + max(
        w["layer_backward"], w["lm_head"]
    )
    assert "x2" in text and "zero3" in text and "steps/epoch" in text
    # The estimate counts in the config's dtype: bf16 here; float32 configs (and auto on the CPU) in fp32.
    assert p["dtype"] == "bfloat16" and "in bfloat16" in text
    for model, dtype in (
        ({"dtype": "float32", "device": "auto"}, "float32"), ({"dtype": "auto", "device": "cpu"}, "float32"),
        ({"dtype": "auto", "device": "auto"}, "bfloat16"),
        ({"dtype": "bfloat16", "device": "cpu"}, "bfloat16"),
    ):
        assert P.plan_dtype(load_config(TrainConfig, PROD_YAML, {"model": model})) == dtype, model
    fp32 = P.estimate_memory(shapes.QWEN3_5_9B_CONFIG, 2000, 16, True, dtype="float32")
    assert fp32.weights == 8_392_695_024 * 4 and fp32.activations == 2000 * 32 * 4 * 4096  # fp32 layer inputs


def test_bench_train_runs_at_reduced_depth_and_the_estimate_holds():
    """`mau bench train` on the CPU at one block, narrowed 8 times, in the native dtype (the GPU check's code
    path): steps, tokens/s, the measured peak memory and the plan's estimate of it. On the CPU the measure is
    the C heap in use (glibc mallinfo2; resident memory without glibc): the weights as built + the peak rise
    while training, which also holds what is not a tensor (the batch, Python objects) and the per-step casts
    of the LoRA weights. The estimate must be within 15% of it: at these widths the LM head's tiles (TRL's
    torch fold on the
    CPU) are ~70% of the estimate and the weights ~25%, so a wrong LM-head or weights term moves it by
    more."""
    r = _run(
        [
            "bench", "train", "--layers", "4", "--vision-depth", "2", "--train-steps", "2", "--text-tokens",
            "40", "--device", "cpu", "--dtype", DTYPE, "--width-divisor", str(NARROW),
        ],
        timeout=600,
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["steps"] == 2 and out["image_tokens"] == FRAME_TOKENS and out["tokens_per_second"] > 0
    d = shapes.narrow(shapes.config_dict(4, 2), NARROW)
    assert out["mfu"] is None and out["trainable"] == shapes.lora_parameters(d, 16) == 630_784
    assert out["dtype"] == DTYPE and out["parameters"] - out["trainable"] == shapes.total_parameters(d)
    ratio = out["estimated_peak_bytes"] / out["peak_memory_bytes"]
    print(f"\nbench train (CPU, 4 layers, widths / {NARROW}, {DTYPE}): {json.dumps(out)}")
    assert 0.85 <= ratio <= 1.15, out
    # the weights term alone: the built weights vs the memory the build took (heap or resident)
    built = out["weights_heap_bytes"] if out["memory_measure"] == "heap" else out["weights_rss_bytes"]
    assert abs(out["estimate"]["weights"] - built) <= 0.05 * out["estimate"]["weights"], out
