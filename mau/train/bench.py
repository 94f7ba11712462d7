"""The GPU check (``mau bench train``): the production training path (``mau.train.sft.build`` with the
settings of configs/train/qwen3_5_9b.yaml: LoRA r=16 on the language model, frozen vision tower, gradient
checkpointing, bf16, 640x360 frames) on a Qwen3.5-9B-shaped model with random bf16 weights (mau.train.shapes;
nothing is downloaded), a few LoRA SFT steps on synthetic rows shaped like BC examples (one 640x360 frame,
~2k text tokens, a JSON answer), timed. Prints tokens/s, peak memory (and the ``--plan`` estimate of it) and
MFU.

MFU counts model FLOPs only: forward 2 x (language-model matmul weights + the tied LM head) per token,
backward the same again for the input gradients (the base weights are frozen: no weight-gradient matmuls),
the LoRA branches 6 x their parameters, attention and the DeltaNet recurrence, and the frozen vision tower's
forward; the recomputation of gradient checkpointing is not counted (it is hardware work, not model work).
Heavy imports happen inside the functions.
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Dense bf16 tensor-core peaks (vendor datasheets, without sparsity), matched on the device name.
PEAK_BF16_TFLOPS = {
    "H200": 989.4, "H100": 989.4, "GH200": 989.4, "B200": 2250.0, "A100": 312.0, "L40S": 362.1, "A10": 125.0,
}
PRODUCTION_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "train" / "qwen3_5_9b.yaml"


def frame_png(width: int, height: int, rng: random.Random) -> bytes:
    """A game-like frame: a background colour and a few coloured blocks (not blank: the vision tower sees
    it)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x, y = rng.randrange(width - 40), rng.randrange(height - 40)
        draw.rectangle([x, y, x + rng.randint(10, 120), y + rng.randint(10, 80)],
                       fill=tuple(rng.randrange(256) for _ in range(3)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def state_text(tokenizer: Any, tokens: int, rng: random.Random) -> str:
    """Game-like state text of about ``tokens`` tokens under ``tokenizer``."""
    from mau.models.tiny import game_text

    lines = game_text(rng.randrange(10**6), lines=64)
    text, n = [], 0
    while n < tokens:
        line = rng.choice(lines)
        text.append(line)
        n += len(tokenizer(line + "\n", add_special_tokens=False)["input_ids"])
    return "\n".join(text)


def write_synthetic_dataset(out: Path, tokenizer: Any, rows: int = 4, width: int = 640, height: int = 360,
                            text_tokens: int = 2000, seed: int = 0) -> Path:
    """A BC dataset folder (the format of docs/formats.md, training columns only) of ``rows`` rows: system,
    user (one ``width`` x ``height`` frame + ~``text_tokens`` tokens of state), assistant (a JSON vote)."""
    from datasets import Dataset, DatasetDict, Features, Image, List, Value

    from mau import schema as F

    rng = random.Random(seed)
    s = Value("string")
    part = {F.DS_CONTENT_TYPE: s, F.DS_CONTENT_TEXT: s}
    feats = Features({F.DS_MESSAGES: List({F.ROLE: s, F.DS_CONTENT: List(part)}), F.DS_IMAGES: List(Image())})

    def row(i: int) -> dict[str, Any]:
        answer = json.dumps({"vote_target": rng.choice(["Noah", "Emma", "skip"]),
                             "reasoning": "I saw them near the body in Electrical."})
        return {F.DS_MESSAGES: [
            {F.ROLE: "system", F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "text",
                                               F.DS_CONTENT_TEXT: "You are Liam, a crewmate. Answer with "
                                                                  "JSON."}]},
            {F.ROLE: "user", F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "image", F.DS_CONTENT_TEXT: None},
                                            {F.DS_CONTENT_TYPE: "text",
                                             F.DS_CONTENT_TEXT: state_text(tokenizer, text_tokens, rng)}]},
            {F.ROLE: "assistant", F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: answer}]}],
            F.DS_IMAGES: [{"bytes": frame_png(width, height, rng), "path": f"synthetic/{i}.png"}]}

    DatasetDict({"train": Dataset.from_list([row(i) for i in range(rows)], features=feats)}).save_to_disk(
        str(out)
    )
    header = {F.FORMAT: F.DATASET_FORMAT, F.FORMAT_VERSION: F.DATASET_FORMAT_VERSION, "filter": "synthetic",
              "counts": {"train": rows}}
    (out / F.DATASET_HEADER).write_text(json.dumps(header, indent=1) + "\n")
    return out


def model_flops_per_step(d: dict[str, Any], text_tokens: int, image_tokens: int, lora: int) -> float:
    """Model FLOPs of one training step on one row (see the module docstring)."""
    from mau.train.shapes import layer_parameters, vision_parameters

    t, v = d["text_config"], d["vision_config"]
    seq = text_tokens + image_tokens
    matmul = sum(layer_parameters(t, k) for k in t["layer_types"]) + t["vocab_size"] * t["hidden_size"]
    dense = 4 * matmul * seq + 6 * lora * seq
    attn = 0.0
    for kind in t["layer_types"]:
        if kind == "full_attention":  # QK^T and AV over a causal mask: half of 2 x 2 x seq^2 x heads x dim
            attn += 2 * seq * seq * t["num_attention_heads"] * t["head_dim"]
        else:  # chunked delta rule: per token, state read + update (dk x dv per head), intra-chunk attention
            vh, dk, dv = t["linear_num_value_heads"], t["linear_key_head_dim"], t["linear_value_head_dim"]
            attn += seq * vh * (4 * dk * dv + 2 * 64 * (dk + dv))
    patches = image_tokens * v["spatial_merge_size"] ** 2
    vision = 2 * vision_parameters(v) * patches + 4 * patches * patches * v["hidden_size"] * v["depth"]
    return dense + 3 * attn + vision  # attention: forward + backward (2x); the vision tower: forward only


def _peak_tflops(device_name: str) -> float | None:
    for key, tf in PEAK_BF16_TFLOPS.items():
        if key in device_name:
            return tf
    return None


def rss_bytes() -> int:
    """This process's resident memory (/proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def heap_bytes() -> int | None:
    """Bytes in use in this process's C heap (glibc ``mallinfo2``: in-use chunks + mmapped blocks, every
    arena), where torch's CPU tensors live: unlike RSS it leaves out memory freed but kept by the allocator
    and code
    pages, so it is the CPU's counterpart of ``torch.cuda.max_memory_allocated``. None without glibc >=
    2.33."""
    fn = _mallinfo2()
    if fn is None:
        return None
    m = fn()
    return int(m.uordblks + m.hblkhd)


@functools.cache
def _mallinfo2() -> Any:
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    fn.restype = Mallinfo2
    return fn


class Peak:
    """The peak of ``read()`` (bytes) while running, sampled every 5 ms in a thread."""

    def __init__(self, read: Any) -> None:
        self.read = read
        self.peak = read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.read())
            time.sleep(0.005)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.read())


def _bench_inputs(work: Path, layers: int, vision_depth: int, steps: int, text_tokens: int, seed: int,
                  width_divisor: int) -> tuple[dict[str, Any], Path, Any, Path]:
    """The model's shape dict, its folder (config + processor only: the weights are built in memory, never
    written), the processor and a synthetic dataset of ``steps`` rows."""
    from mau.models.tiny import SPECIAL_TOKENS, build_processor, build_tokenizer
    from mau.train import shapes

    tok = build_tokenizer(seed)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    d = shapes.narrow(shapes.config_dict(layers, vision_depth, {
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
        "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]}), width_divisor)
    model_dir = work / "model"
    shapes.hf_config(d).save_pretrained(model_dir)
    processor = build_processor(tok, max_pixels=640 * 360)
    processor.save_pretrained(model_dir)
    data_dir = write_synthetic_dataset(work / "data", tok, rows=steps, text_tokens=text_tokens, seed=seed)
    return d, model_dir, processor, data_dir


def _step_timer(times: list[float], cuda: bool) -> Any:
    """A trainer callback that appends each step's wall time to ``times`` (synchronising a GPU first)."""
    import torch
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - self.t0)

    return Timer()


def _cpu_memory(
    built: dict[str, float], rss: Any, rss_start: int, hp: Any, heap_start: int | None
) -> dict[str, Any]:
    """The CPU's peak: the weights as built + the peak while training over its start, as C heap in use (else
    resident memory)."""
    out: dict[str, Any] = {
        "weights_rss_bytes": int(built.get("weights_rss", 0)),
        "train_rss_increase_bytes": rss.peak - rss_start,
        "peak_memory_bytes": int(built.get("weights_rss", 0)) + rss.peak - rss_start, "memory_measure": "rss",
    }
    if hp:
        out.update({"weights_heap_bytes": int(built.get("weights_heap", 0)),
                    "train_heap_increase_bytes": hp.peak - heap_start,
                    "peak_memory_bytes": int(built.get("weights_heap", 0)) + hp.peak - heap_start,
                    "memory_measure": "heap"})
    return out


def _train_watching_memory(trainer: Any, heap: bool, cuda: bool) -> tuple[Any, Any, int, int | None]:
    """Train, sampling resident memory (and the C heap where it can be read) for their peaks: (rss peak, heap
    peak or None, rss at the start, heap at the start)."""
    if cuda:
        import torch

        torch.cuda.reset_peak_memory_stats()
    rss_start, heap_start = rss_bytes(), heap_bytes()
    rss = Peak(rss_bytes)
    hp = Peak(heap_bytes) if heap else None
    for p in (rss, hp):
        if p:
            p.start()
    try:
        trainer.train()
    finally:
        for p in (rss, hp):
            if p:
                p.stop()
    return rss, hp, rss_start, heap_start


def bench_train(layers: int = 32, vision_depth: int = 27, steps: int = 4, text_tokens: int = 2000,
                device: str = "auto", gradient_checkpointing: bool = True, peak_tflops: float | None = None,
                seed: int = 0, workdir: str | Path | None = None, dtype: str = "bfloat16",
                width_divisor: int = 1) -> dict[str, Any]:
    """Build, train ``steps`` steps (one row each), measure. The first step (compilation, allocator warm-up,
    optimizer state) is reported apart and left out of the rates. ``dtype`` bfloat16 is the production path
    (bf16 weights, bf16 mixed precision); float32 (fp32 weights, no autocast) is for CPUs without native bf16
    (mau.train.precision), with ``width_divisor`` > 1 (mau.train.shapes.narrow) to keep a CPU run short."""
    import torch

    from mau.config import load_config
    from mau.train import plan as P
    from mau.train import sft, shapes
    from mau.train.config import TrainConfig

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cuda = torch.cuda.is_available() and device != "cpu"
    dev = "cuda" if cuda else "cpu"
    Path("runs").mkdir(exist_ok=True)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="bench-train-", dir="runs"))
    work.mkdir(parents=True, exist_ok=True)
    d, model_dir, processor, data_dir = _bench_inputs(work, layers, vision_depth, steps, text_tokens, seed,
                                                      width_divisor)
    over = {
        "model": {"path": str(model_dir), "device": "auto" if cuda else "cpu", "dtype": dtype},
        "data": {"dataset": str(data_dir), "eval_split": None, "filter": None},
        "training": {
            "max_steps": steps, "gradient_accumulation_steps": 1, "per_device_batch_size": 1,
            "logging_steps": 1, "save_steps": 10**6, "eval_at_end": False, "dataloader_num_workers": 0,
            "gradient_checkpointing": gradient_checkpointing, "warmup": 0, "bf16": dtype == "bfloat16",
        },
        "output": {"dir": str(work / "run")}, "logging": {"report_to": "none"},
    }
    cfg = load_config(TrainConfig, PRODUCTION_CONFIG, over)

    heap = heap_bytes() is not None  # the CPU's measure: the C heap in use, else resident memory
    built: dict[str, float] = {}

    def load_model(base: str, c: TrainConfig) -> Any:
        # Instantiate the model once on the meta device (no storage) first: transformers' one-off
        # initialisation on first use (~40 MB of heap) then falls outside the weights' measure.
        shapes.build_model(d, dtype=dtype, seed=seed, device="meta")
        rss_before, heap_before = rss_bytes(), heap_bytes()
        t0 = time.perf_counter()
        m = shapes.build_model(d, dtype=dtype, seed=seed, device=dev)
        if cfg.model.attn_implementation:
            m.config._attn_implementation = cfg.model.attn_implementation
        built["build_s"] = time.perf_counter() - t0
        built["weights_rss"] = rss_bytes() - rss_before
        if heap:
            built["weights_heap"] = heap_bytes() - heap_before
        return m

    times: list[float] = []
    original = sft.load_model
    sft.load_model = load_model
    try:
        setup = sft.build(cfg, work / "run", callbacks=[_step_timer(times, cuda)])
    finally:
        sft.load_model = original
    lengths = P.sequence_lengths(setup.data.train, processor, processor.image_processor.size["shortest_edge"],
                                 640 * 360)
    rss, hp, rss_train_start, heap_train_start = _train_watching_memory(setup.trainer, heap, cuda)
    seq = lengths["total"]
    rates = times[1:] or times
    tokens = sum(seq[1:len(times)]) or sum(seq)
    per_step = [
        model_flops_per_step(d, t, i, setup.counts["lora"]) for t, i in zip(lengths["text"], lengths["image"])
    ]
    flops = sum(per_step[1:len(times)]) or sum(per_step)
    wall = sum(rates)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    peak = peak_tflops or (_peak_tflops(name) if cuda and dtype == "bfloat16" else None)
    est = P.estimate_memory(d, max(seq), cfg.lora.r, gradient_checkpointing, "single", dtype=dtype,
                            lm_head_torch=not cuda)
    out: dict[str, Any] = {
        "bench": "train", "device": name, "dtype": dtype, "text_layers": layers, "vision_depth": vision_depth,
        "width_divisor": width_divisor, "parameters": setup.counts["total"],
        "trainable": setup.counts["trainable"], "steps": len(times),
        "first_step_s": round(times[0], 3) if times else None, "step_s": round(wall / len(rates), 3),
        "text_tokens": lengths["text"][0], "image_tokens": lengths["image"][0],
        "tokens_per_second": round(tokens / wall, 1), "model_tflops_per_step": round(per_step[0] / 1e12, 3),
        "achieved_tflops": round(flops / wall / 1e12, 3), "peak_tflops": peak,
        "mfu": round(flops / wall / (peak * 1e12), 4) if peak else None,
        "gradient_checkpointing": gradient_checkpointing, "build_s": round(built.get("build_s", 0.0), 1),
        "loss": [r["loss"] for r in setup.trainer.state.log_history if "loss" in r],
        "estimated_peak_bytes": est.total, "estimate": est.as_dict(),
    }
    if cuda:
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        out["peak_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()
    else:
        out.update(_cpu_memory(built, rss, rss_train_start, hp, heap_train_start))
    out["peak_memory_gib"] = round(out["peak_memory_bytes"] / 2**30, 2)
    out["estimate_ratio"] = round(est.total / out["peak_memory_bytes"], 3)
    if workdir is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return out
