"""Decision-level GRPO of the crewmate: TRL's ``GRPOTrainer`` (its loss, its KL term; nothing hand-written)
on recorded decision contexts, each completion rewarded by forking the sim at its decision with that
completion as the answer (``mau.replay.reward``).

Prompts are the exact messages of recorded crewmate calls (VOTE first); a row carries its match folder and
call id, which TRL hands to the reward function. The policy starts from a BC model: a LoRA adapter from
``mau train`` is merged into its base, and a fresh LoRA is trained on the merged model, so the KL reference
(TRL: the model with the adapter disabled) is exactly the BC policy. The run folder: config.yaml,
provenance.json, trainer_log.jsonl (TRL's metrics: reward mean / std per function, KL, loss, ...),
rewards.jsonl (every completion: its decision, answer, reward and the reward's terms), checks.json, adapter/,
model/ (merged, servable by the hf backend) and rl.json (the summary, written last). Heavy imports inside.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from mau.config import dump_yaml
from mau.errors import MauError
from mau.replay.decisions import decision_rows
from mau.rl.config import RLConfig
from mau.rundir import RunDir

SUMMARY = "rl.json"
LOG = "trainer_log.jsonl"
REWARDS_LOG = "rewards.jsonl"
CHECKS = "checks.json"


def completion_text(c: Any) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, list) and c:
        content = c[-1].get("content", "")
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content or ""
    return ""


class ForkReward:
    """TRL reward function: forks the sim at each completion's decision with the completion as the answer."""

    def __init__(self, rewarder, log_path: Path | None):
        self.__name__ = "fork_reward"  # TRL names the metric after the function
        self.rewarder, self.log_path = rewarder, log_path
        self.calls = 0

    def __call__(self, prompts, completions, match, call_id, **kw) -> list[float]:
        texts = [completion_text(c) for c in completions]
        results = self.rewarder.rewards(list(zip(match, call_id, texts)))
        state = kw.get("trainer_state")
        step = state.global_step if state is not None else self.calls
        self.calls += 1
        if self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as f:
                for cid, text, (r, terms, o) in zip(call_id, texts, results):
                    f.write(
                        json.dumps(
                            {
                                "step": step, "call_id": cid, "answer": text, "reward": r, "terms": terms,
                                "fallback": o.fallback, "vote_target": o.vote_target,
                                "meeting_ejected": o.meeting_ejected,
                            }
                        )
                        + "\n"
                    )
        return [r for r, _, _ in results]


def _processor(base: str, cfg: RLConfig):
    from mau.train.sft import load_processor

    processor = load_processor(base, cfg)
    processor.tokenizer.padding_side = "left"  # generation pads on the left
    return processor


def _start_model(cfg: RLConfig, dtype):
    """The start policy: the base, with the BC adapter merged in when there is one."""
    from transformers import AutoModelForImageTextToText

    kwargs: dict[str, Any] = {"dtype": dtype}
    if cfg.policy.attn_implementation:
        kwargs["attn_implementation"] = cfg.policy.attn_implementation
    try:
        model = AutoModelForImageTextToText.from_pretrained(cfg.policy.path, **kwargs)
    except (OSError, ValueError) as e:
        first = str(e).splitlines()[0][:160]
        raise MauError(f"policy.path {cfg.policy.path}: the model does not load ({first})") from None
    if cfg.policy.adapter:
        from peft import PeftModel

        if not Path(cfg.policy.adapter).is_dir():
            raise MauError(f"policy.adapter {cfg.policy.adapter}: no such folder; give mau train's "
                           f"OUT/adapter")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            model = PeftModel.from_pretrained(model, cfg.policy.adapter).merge_and_unload()
    return model


def grpo_args(cfg: RLConfig, out: Path, bf16: bool):
    from trl import GRPOConfig

    g = cfg.grpo
    if (g.per_device_batch_size * g.gradient_accumulation_steps) % g.num_generations:
        raise MauError(f"grpo.per_device_batch_size x gradient_accumulation_steps ({g.per_device_batch_size} "
                       f"x {g.gradient_accumulation_steps}) must be a multiple of grpo.num_generations "
                       f"({g.num_generations})")
    extra: dict[str, Any] = {}
    if g.use_vllm:
        extra.update(
            use_vllm=True, vllm_mode=g.vllm_mode, vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization
        )
    return GRPOConfig(
        output_dir=str(out), num_generations=g.num_generations,
        per_device_train_batch_size=g.per_device_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps, max_steps=g.max_steps,
        learning_rate=g.learning_rate, beta=g.beta, temperature=g.temperature,
        max_completion_length=g.max_completion_length, loss_type=g.loss_type, scale_rewards=g.scale_rewards,
        logging_steps=g.logging_steps, save_steps=g.save_steps, seed=g.seed, bf16=bf16, fp16=False,
        use_cpu=cfg.policy.device == "cpu", gradient_checkpointing=g.gradient_checkpointing,
        chat_template_kwargs={"enable_thinking": False},
        report_to=["wandb"] if cfg.logging.report_to == "wandb" else [],
        run_name=cfg.logging.run_name or out.name, disable_tqdm=True, log_level="warning", **extra,
    )


def train_rl(cfg: RLConfig, out: Path) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOTrainer

    from mau.replay.reward import ForkRewarder
    from mau.train import freeze
    from mau.train.sft import check_run_folder, log_callback

    t0 = time.perf_counter()
    hf_logging.disable_progress_bar()
    resume_ckpt = check_run_folder(out, cfg.resume, cfg.grpo.max_steps, "GRPO run", SUMMARY, "grpo.max_steps")
    if cfg.lora.full_finetune and cfg.policy.adapter:
        raise MauError("lora.full_finetune with policy.adapter: merge the adapter first (mau train "
                       "output.merge) and give the merged model as policy.path")
    rows = decision_rows(cfg.decisions)
    dataset = Dataset.from_list(rows)
    gpu = torch.cuda.is_available() and cfg.policy.device != "cpu"
    dtype = {"auto": torch.bfloat16 if gpu else torch.float32}.get(cfg.policy.dtype) or getattr(
        torch, cfg.policy.dtype
    )
    bf16 = cfg.grpo.bf16 if cfg.grpo.bf16 is not None else dtype == torch.bfloat16
    processor = _processor(cfg.policy.path, cfg)
    model = _start_model(cfg, dtype)
    peft_config = freeze.prepare_for_tuning(model, cfg.lora)
    (out / SUMMARY).unlink(missing_ok=True)  # a resumed run is unfinished until it finishes
    RunDir(out, "GRPO run").write_config(dump_yaml(cfg), decisions=len(rows))
    rewarder = ForkRewarder(cfg.reward)
    reward = ForkReward(rewarder, out / REWARDS_LOG)
    args = grpo_args(cfg, out, bf16)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                              processing_class=processor, peft_config=peft_config,
                              callbacks=[log_callback(out / LOG)])
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    freeze.check_trainable(trainer.model, cfg.lora.full_finetune)
    counts = freeze.parameter_counts(trainer.model)
    before = freeze.trainable_digests(trainer.model)
    vision_before = freeze.vision_digests(trainer.model)
    t_train = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if resume_ckpt else None)
    train_s = time.perf_counter() - t_train
    after = freeze.trainable_digests(trainer.model)
    changed = sum(1 for k in before if before[k] != after.get(k))
    vision_changed = freeze.compare_digests(vision_before, freeze.vision_digests(trainer.model))
    saved = out / ("model" if cfg.lora.full_finetune else "adapter")
    trainer.save_model(str(saved))
    processor.save_pretrained(str(saved))
    merged = None
    if cfg.output.merge and not cfg.lora.full_finetune:
        merged = out / "model"
        m = trainer.model.merge_and_unload()
        m.save_pretrained(str(merged))
        processor.save_pretrained(str(merged))
    history = trainer.state.log_history
    curve = [
        {
            "step": r["step"], "reward": r.get("reward"), "reward_std": r.get("reward_std"),
            "kl": r.get("kl"), "loss": r.get("loss"),
        }
        for r in history
        if "reward" in r
    ]
    checks = {"parameters": counts, "trainable_tensors": len(after), "trainable_changed": changed,
              "vision_unchanged": not vision_changed}
    (out / CHECKS).write_text(json.dumps(checks, indent=1))
    steps = trainer.state.global_step
    summary = {"out": str(out), "steps": steps, "decisions": len(rows), "train_s": round(train_s, 2),
               "steps_per_minute": round(60 * steps / train_s, 2) if train_s else None,
               "forks": rewarder.forks, "fork_seconds": round(rewarder.fork_seconds, 2),
               "reward_first": curve[0]["reward"] if curve else None,
               "reward_last": curve[-1]["reward"] if curve else None,
               "reward_curve": curve, "trainable_changed": changed, "saved": str(saved),
               "merged": str(merged) if merged else None, "wall_s": round(time.perf_counter() - t0, 2)}
    if vision_changed:
        raise MauError(f"{len(vision_changed)} vision-tower tensors changed in GRPO; see {out / CHECKS}")
    (out / SUMMARY).write_text(json.dumps(summary, indent=1, default=str))
    print(f"rl: {steps} steps, reward {summary['reward_first']} -> {summary['reward_last']}", file=sys.stderr)
    return summary
