"""``mau train`` on the tiny local Qwen3.5 VLM (CPU): what trains (LoRA on the language model only; with
full_finetune the language model only), the vision tower bit-identical after training, every trainable tensor
changed, every batch row carrying exactly its image tokens, labels covering exactly the answer, the run folder
(adapter + processor, checks, log, summary), the adapter reloading through the hf backend and PEFT, a merged
model, resuming after a kill, the refusal to rerun into a finished folder, the accelerate configs, and
slurm/train.sbatch on a real single-node Slurm (skipped without one)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("trl")
pytest.importorskip("peft")
pytest.importorskip("datasets")

from mau.config import load_config  # noqa: E402
from mau.train.config import TrainConfig  # noqa: E402
from tests.ml_fixtures import tiny_model_dir  # noqa: E402,F401 - the fixture

try:
    # the fixture: a real single-node Slurm (skips without
    from tests.slurm_cluster import slurm  # noqa: F401
except ImportError:  # the cluster helper is not there (yet): the Slurm test skips

    @pytest.fixture(scope="session")
    def slurm():
        pytest.skip("tests/slurm_cluster.py is missing")

REPO = Path(__file__).resolve().parents[1]
TINY_YAML = REPO / "configs" / "train" / "tiny.yaml"
THINK = "<think>\n\n</think>\n\n"  # TRL's training template writes an empty think block before every answer


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: the tiny model gains nothing from more, and several test processes on a small
    machine would otherwise oversubscribe its cores (torch's spinning threads then slow everything 100x)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def bc_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.bc_factory import build_bc_dataset

    return build_bc_dataset(tmp_path_factory.mktemp("bc") / "ds", n_train=12, n_validation=3, n_test=3)


def tiny_cfg(model_dir: Path, data_dir: Path, out: Path | None = None, **over: dict) -> TrainConfig:
    """configs/train/tiny.yaml on the given model and dataset, with section overrides."""
    base = {"model": {"path": str(model_dir)}, "data": {"dataset": str(data_dir)},
            "output": {"dir": str(out) if out else None}}
    for section, values in over.items():
        base.setdefault(section, {}).update(values)
    return load_config(TrainConfig, TINY_YAML, base)


def cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    from mau.cli import main

    rc = main(["train", "--config", str(TINY_YAML), *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# ---- what trains ------------------------------------------------------------------------------------------

def test_lora_trains_only_the_language_model(tiny_model_dir, bc_dir, tmp_path):
    import torch

    from mau.train.sft import build

    s = build(
        tiny_cfg(tiny_model_dir, bc_dir, training={"max_steps": 2, "save_steps": 100}), tmp_path / "run"
    )
    trainable = {n: p for n, p in s.trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n and ".language_model." in n for n in trainable), list(trainable)[:5]
    assert not any(".visual." in n or "lm_head" in n for n in trainable)
    # Every targeted projection of every text layer got an adapter (DeltaNet and full attention and MLP).
    layers = {n.split(".layers.")[1].split(".")[0] for n in trainable}
    assert layers == {"0", "1", "2", "3"}
    kinds = {n.split(".lora_")[0].rsplit(".", 1)[1] for n in trainable}
    assert {"in_proj_qkv", "in_proj_z", "out_proj", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
            "up_proj", "down_proj"} <= kinds
    c = s.counts
    assert c["trainable"] == c["lora"] == sum(p.numel() for p in trainable.values()) == 35328  # r=8
    assert c["vision_trainable"] == c["lm_head_trainable"] == 0 and c["vision"] > 0

    before = {n: p.detach().clone() for n, p in s.trainer.model.named_parameters()}
    # two steps: B moves in the first, A (whose gradient is zero while B is zero) in the second
    s.trainer.train()
    after = dict(s.trainer.model.named_parameters())
    assert [n for n in trainable if torch.equal(after[n], before[n])] == []  # every adapter tensor moved
    frozen = [n for n in before if n not in trainable]
    assert any(".visual." in n for n in frozen) and any("lm_head" in n for n in frozen)
    # vision, lm_head, base: bit-identical
    assert [n for n in frozen if not torch.equal(after[n], before[n])] == []


def test_a_target_regex_that_reaches_the_vision_tower_is_refused(tiny_model_dir, bc_dir, tmp_path):
    from mau.errors import MauError
    from mau.train.sft import build

    with pytest.raises(MauError, match="vision-tower parameters would train"):
        build(tiny_cfg(tiny_model_dir, bc_dir, lora={"target_modules": "all-linear"}), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_full_finetune_trains_the_language_model_and_never_the_vision_tower(tiny_model_dir, bc_dir, tmp_path):
    import torch

    from mau.train.sft import build

    s = build(tiny_cfg(tiny_model_dir, bc_dir, lora={"full_finetune": True},
                       training={"max_steps": 2, "logging_steps": 1, "save_steps": 100}), tmp_path / "run")
    model = s.trainer.model
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    lm = {n for n, _ in model.named_parameters() if n.startswith("model.language_model.")}
    assert names == lm  # every language-model weight, nothing else (no vision, no lm_head)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    s.trainer.train()
    unchanged = [n for n, p in model.named_parameters() if p.requires_grad and torch.equal(p, before[n])]
    assert not unchanged, unchanged  # TRL-style: training moved every trainable tensor
    vision = [n for n, p in model.named_parameters() if ".visual." in n]
    assert vision and all(torch.equal(dict(model.named_parameters())[n], before[n]) for n in vision)
    losses = [r["loss"] for r in s.trainer.state.log_history if "loss" in r]
    assert losses[-1] < losses[0]  # full fine-tuning learns even from a random base


# ---- batches -----------------------------------------------------------------------------------------------

def test_batches_carry_their_image_tokens_and_labels_cover_exactly_the_answer(
    tiny_model_dir, bc_dir, tmp_path
):
    from mau.train.sft import build

    s = build(tiny_cfg(tiny_model_dir, bc_dir), tmp_path / "run")
    tok = s.processor.tokenizer
    image_token = s.trainer.model.config.image_token_id
    vision_start = tok.convert_tokens_to_ids("<|vision_start|>")
    answers = {m[-1]["content"][0]["text"] for m in s.data.train["messages"]}
    merge = s.processor.image_processor.merge_size
    rows = with_images = images = 0
    for batch in s.trainer.get_train_dataloader():  # one epoch: every training row, through TRL's collator
        grid = batch.get("image_grid_thw")
        per_image = [] if grid is None else (grid.prod(-1) // merge**2).tolist()  # in row order
        k = 0
        for r in range(batch["input_ids"].shape[0]):
            ids, labels = batch["input_ids"][r], batch["labels"][r]
            n = int((ids == vision_start).sum())  # this row's images
            assert int((ids == image_token).sum()) == sum(per_image[k:k + n])  # all of its image tokens
            k += n
            decoded = tok.decode(labels[labels != -100].tolist(), skip_special_tokens=False)
            assert decoded.startswith(THINK) and decoded.endswith("<|im_end|>\n"), decoded
            # nothing else
            assert decoded.removeprefix(THINK).removesuffix("<|im_end|>\n") in answers, decoded
            rows, with_images, images = rows + 1, with_images + (n > 0), images + n
        assert k == len(per_image)
    # Rows 0 and 1 mod 3 have images (one 64x64; one 128x128, plus a 64x64 on rows 1 mod 6), rows 2 mod 3
    # none.
    assert (rows, with_images, images) == (12, 8, 10)
    st = s.collator.stats  # the collator's own per-row check saw the same rows
    assert (st.rows, st.rows_with_images, st.images) == (12, 8, 10)
    assert st.image_tokens == 4 * 4 + 2 * 16 + 2 * (16 + 4)


def test_the_collator_refuses_a_row_that_lost_image_tokens(tiny_model_dir, bc_dir, tmp_path):
    from mau.errors import MauError
    from mau.train.sft import build

    s = build(tiny_cfg(tiny_model_dir, bc_dir), tmp_path / "run")
    rows = [s.data.train[0], s.data.train[1]]
    batch = s.collator.inner([dict(r) for r in rows])
    ids = batch["input_ids"]
    ids[0][(ids[0] == s.collator.image_token_id).nonzero()[0]] = 0  # as if truncation had cut one
    with pytest.raises(MauError, match="image tokens"):
        s.collator.check(batch, [len(r["images"]) for r in rows])


def test_images_max_pixels_caps_the_processor(tiny_model_dir, bc_dir):
    from PIL import Image

    from mau.train.sft import load_processor

    p = load_processor(str(tiny_model_dir), tiny_cfg(tiny_model_dir, bc_dir, images={"max_pixels": 64 * 64}))
    out = p.image_processor(images=[Image.new("RGB", (128, 128))], return_tensors="pt")
    assert out["image_grid_thw"].tolist() == [[1, 4, 4]]  # 128x128 downscaled to 64x64: 4 tokens, not 16


# ---- the CLI run: folder, checks, reload -------------------------------------------------------------------

@pytest.fixture(scope="module")
def lora_run(tiny_model_dir, bc_dir, tmp_path_factory):
    """One CLI run in-process: 3 steps, a checkpoint every 2, a merged model too. Returns (out, rc, stdout,
    stderr)."""
    import contextlib
    import io

    from mau.cli import main

    out = tmp_path_factory.mktemp("train") / "run"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["train", "--config", str(TINY_YAML), "--set", f"model.path={tiny_model_dir}",
                   "--set", f"data.dataset={bc_dir}", "--set", "training.max_steps=3", "--set",
                   "training.save_steps=2", "--set", "output.merge=true", "--out", str(out)])
    return out, rc, stdout.getvalue(), stderr.getvalue()


def test_cli_trains_and_prints_one_line(lora_run):
    out, rc, stdout, stderr = lora_run
    assert rc == 0, stderr
    lines = stdout.strip().splitlines()
    assert lines[-1].startswith("trained steps=3 train_loss=") and "trainable_params=35328" in lines[-1], (
        stdout
    )
    assert lines[-1].endswith(f"-> adapter {out / 'adapter'}")


def test_run_folder_holds_config_provenance_checkpoints_adapter_and_log(lora_run, tiny_model_dir):
    out = lora_run[0]
    for name in (
        "config.yaml", "provenance.json", "checks.json", "train.json", "trainer_log.jsonl", "checkpoint-2",
        "checkpoint-3", "adapter/adapter_config.json", "adapter/adapter_model.safetensors",
        "adapter/processor_config.json", "adapter/tokenizer.json", "adapter/chat_template.jinja",
        "merged/config.json", "merged/processor_config.json",
    ):
        assert (out / name).exists(), name
    adapter_cfg = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert adapter_cfg["base_model_name_or_path"] == str(Path(tiny_model_dir).resolve())  # absolute
    assert adapter_cfg["r"] == 8
    log = [json.loads(line) for line in (out / "trainer_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "loss" in r] == [3]  # logging_steps=5: the last step is logged anyway
    assert any("eval_loss" in r for r in log)
    summary = json.loads((out / "train.json").read_text())
    assert summary["steps"] == 3 and summary["trainable"] == 35328 and summary["resumed_from"] is None
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["base_model"] == str(Path(tiny_model_dir).resolve()) and prov["packages"]["trl"]


def test_checks_record_frozen_vision_changed_adapter_and_the_label_mask(lora_run):
    checks = json.loads((lora_run[0] / "checks.json").read_text())
    assert checks["vision_frozen_before"] and checks["vision_unchanged"] and checks["vision_tensors"] > 30
    assert checks["trainable_changed"] == checks["trainable_tensors"] == 50  # 25 adapted layers x (A, B)
    mask = checks["label_mask"]
    assert (
        mask["ok"] and mask["decoded"].startswith(THINK + "{") and mask["decoded"].endswith("}<|im_end|>\n")
    )
    assert checks["collator"]["rows"] >= 12 and checks["collator"]["image_tokens"] > 0


def test_vision_weights_of_the_merged_model_equal_the_base(lora_run, tiny_model_dir):
    """Independent of the run's own digests: the saved merged model's vision tensors are the base's."""
    from safetensors.torch import load_file

    base = load_file(str(Path(tiny_model_dir) / "model.safetensors"))
    merged = {}
    for f in sorted((lora_run[0] / "merged").glob("*.safetensors")):
        merged.update(load_file(str(f)))
    vision = [k for k in base if ".visual." in k]
    assert vision and all(base[k].equal(merged[k]) for k in vision)
    lm = [k for k in base if "language_model" in k and k.endswith("q_proj.weight")]
    assert lm and not all(base[k].equal(merged[k]) for k in lm)  # the adapter is in the merged weights


def test_adapter_reloads_through_the_hf_backend_and_peft(lora_run, tiny_model_dir):
    import asyncio

    import torch
    from peft import PeftModel
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from mau.harness.backends.base import Frame, ModelConfig, ModelRequest
    from mau.harness.backends.hf import Backend

    adapter = lora_run[0] / "adapter"
    backend = Backend(ModelConfig(backend="hf", model=str(tiny_model_dir), adapter=str(adapter),
                                  temperature=0.0, max_tokens=6, device="cpu"))
    request = ModelRequest(
        messages=[
            {"role": "system", "content": "You are Noah. Answer with JSON."},
            {
                "role": "user",
                "content": [{"type": "image", "image": 0}, {"type": "text", "text": "Who do you vote for?"}],
            },
        ],
        images=[Frame(image=Image.new("RGB", (128, 128), (200, 30, 30)), jpeg=b"", path="f.jpg")],
    )

    async def go():
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    resp = asyncio.run(go())
    assert resp.error is None and resp.text and resp.completion_tokens > 0, resp
    assert resp.prompt_tokens > 16  # the image's 16 tokens reached the prompt

    # PEFT directly, with the processor saved beside the adapter: generate works and the adapter is active.
    processor = AutoProcessor.from_pretrained(adapter)
    base = AutoModelForImageTextToText.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with warnings.catch_warnings():  # peft 0.21 calls a transformers method that 5.24 marks deprecated
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        model = PeftModel.from_pretrained(base, str(adapter)).eval()
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Vote."}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False)
    inputs = processor(text=[text], images=[Image.new("RGB", (64, 64))], return_tensors="pt")
    with torch.inference_mode():
        gen = model.generate(**inputs, max_new_tokens=4, do_sample=False)
        with model.disable_adapter():
            plain = model(**inputs).logits
        tuned = model(**inputs).logits
    assert gen.shape[1] > inputs["input_ids"].shape[1]
    assert not torch.allclose(plain, tuned)


def test_rerun_into_a_finished_folder_fails_with_one_line(lora_run, capsys):
    out = lora_run[0]
    rc, stdout, stderr = cli(capsys, "--out", str(out))
    assert rc == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "finished training run; pass --resume" in stderr, stderr


# ---- resume ------------------------------------------------------------------------------------------------

def test_resume_after_a_kill_continues_the_global_step(tiny_model_dir, bc_dir, tmp_path, capsys):
    from transformers import TrainerCallback

    from mau.train.sft import train

    class Kill(TrainerCallback):
        """Dies right after checkpoint-2 is written, like a job killed mid-run."""

        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    out = tmp_path / "run"
    cfg = tiny_cfg(
        tiny_model_dir, bc_dir, out, training={"max_steps": 4, "save_steps": 1, "logging_steps": 1},
        data={"eval_split": None},
    )
    with pytest.raises(KeyboardInterrupt):
        train(cfg, callbacks=[Kill()])
    assert (out / "checkpoint-2").is_dir() and not (out / "train.json").exists()

    rc, _, stderr = cli(capsys, "--out", str(out), "--set", f"model.path={tiny_model_dir}",
                        "--set", f"data.dataset={bc_dir}")
    assert rc == 2 and "unfinished training run" in stderr and "--resume" in stderr

    args = [
        "--out", str(out), "--set", f"model.path={tiny_model_dir}", "--set", f"data.dataset={bc_dir}",
        "--set", "training.save_steps=1", "--set", "training.logging_steps=1", "--set",
        "data.eval_split=null",
    ]
    rc, stdout, stderr = cli(capsys, *args, "--set", "training.max_steps=4", "--resume")
    assert rc == 0, stderr
    assert stdout.strip().splitlines()[-1].startswith("trained steps=4 ")
    steps = [json.loads(line)["step"] for line in (out / "trainer_log.jsonl").read_text().splitlines()
             if "loss" in json.loads(line)]
    assert steps == [1, 2, 3, 4]  # 1, 2 before the kill; 3, 4 after: continued, not restarted
    assert json.loads((out / "train.json").read_text())["resumed_from"] == "checkpoint-2"

    # A finished run continues to a larger max_steps with --resume.
    rc, stdout, stderr = cli(capsys, *args, "--set", "training.max_steps=5", "--resume")
    assert rc == 0 and stdout.strip().splitlines()[-1].startswith("trained steps=5 "), stderr
    assert json.loads((out / "train.json").read_text())["resumed_from"] == "checkpoint-4"


def test_two_cpu_processes_train_one_ddp_run(tiny_model_dir, bc_dir, tmp_path):
    """``torchrun --nproc_per_node 2 -m mau train`` with model.device cpu: one DDP group over gloo; the main
    process alone writes the folder and prints the line, and the checks hold."""
    import os
    import subprocess

    out = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "mau",
        "train", "--config", str(TINY_YAML), "--set", f"model.path={tiny_model_dir}", "--set",
        f"data.dataset={bc_dir}", "--set", "training.max_steps=2", "--out", str(out),
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert [line for line in r.stdout.splitlines() if line.startswith("trained ")] == [r.stdout.strip()]
    summary = json.loads((out / "train.json").read_text())
    assert summary["processes"] == 2 and summary["steps"] == 2
    checks = json.loads((out / "checks.json").read_text())
    assert checks["vision_unchanged"] and checks["trainable_changed"] == checks["trainable_tensors"]
    assert (out / "adapter" / "adapter_model.safetensors").is_file()


# ---- config and launch files -------------------------------------------------------------------------------

def test_config_rejects_unknown_keys_and_the_shipped_configs_load():
    from mau.errors import ConfigError

    with pytest.raises(ConfigError, match="lora.rank: unknown key"):
        load_config(TrainConfig, TINY_YAML, {"lora": {"rank": 4}})
    prod = load_config(TrainConfig, REPO / "configs" / "train" / "qwen3_5_9b.yaml")
    assert prod.model.path == "Qwen/Qwen3.5-9B" and prod.model.dtype == "bfloat16" and prod.training.bf16
    assert (prod.lora.r, prod.lora.alpha, prod.training.learning_rate) == (16, 32, 1e-4)
    assert prod.training.gradient_checkpointing and prod.images.max_pixels == 640 * 360


def test_accelerate_configs_load():
    from accelerate.commands.config.config_args import load_config_from_file

    kinds = {f.stem: load_config_from_file(str(f)).distributed_type.value
             for f in (REPO / "configs" / "accelerate").glob("*.yaml")}
    assert kinds == {"single_gpu": "NO", "multi_gpu": "MULTI_GPU", "deepspeed_zero2": "DEEPSPEED",
                     "deepspeed_zero3": "DEEPSPEED", "fsdp": "FSDP"}


def test_tiny_model_is_built_when_missing(bc_dir, tmp_path):
    from mau.train.sft import resolve_base

    path = tmp_path / "models" / "tiny"
    cfg = tiny_cfg(path, bc_dir)
    assert cfg.model.build_tiny_model_if_missing
    assert resolve_base(cfg) == str(path.resolve()) and (path / "config.json").is_file()


# ---- Slurm -------------------------------------------------------------------------------------------------

def test_train_sbatch_runs_the_tiny_config_on_a_cpu_slurm(  # noqa: F811
        slurm, tiny_model_dir, bc_dir, tmp_path):
    pytest.importorskip("tests.slurm_cluster")
    out, logs = tmp_path / "run", tmp_path / "logs"
    logs.mkdir()
    args = [
        "--cpus-per-task=1", "--time=5", f"--chdir={REPO}", f"--output={logs}/%x-%j.out",
        REPO / "slurm" / "train.sbatch", "configs/train/tiny.yaml", out, "--set",
        f"model.path={tiny_model_dir}", "--set", f"data.dataset={bc_dir}", "--set", "training.max_steps=2",
    ]
    job = slurm.submit(args, env={"HF_HUB_OFFLINE": "1", "MAU_PYTHON": sys.executable})
    states = slurm.wait(job, timeout=120)
    text = "\n".join(p.read_text(errors="replace") for p in logs.glob("*.out"))
    assert states == {job: "COMPLETED"}, f"{states}\n{text}"
    assert (out / "adapter" / "adapter_model.safetensors").is_file() and (out / "train.json").is_file()
    assert "no GPU" in text and "trained steps=2 " in text, text
