"""``mau student-rl``: GRPO of the student's VOTE over its candidates (docs/student.md).

The policy at a recorded crewmate VOTE decision is the softmax, at ``grpo.temperature``, of the candidates'
scores (the ``lm`` backend's read-out); a group is ``num_generations`` candidates sampled from it; each earns
the vote terms of ``reward`` (``vote_imposter``, ``vote_crewmate``, ``vote_skip``), read from the match's
roles: the candidate objective forks nothing, so the meeting and crew-win terms must be 0. Advantages are the
rewards less the group mean, divided by the group's standard deviation (``scale_rewards: group``); the loss is
``-mean(A * log pi(c))`` plus ``beta`` times the exact KL from the start policy (the BC student) over the
candidates. One update per group: on-policy, so GRPO's clipped ratio is 1. ``frac_reward_zero_std`` is the
share of groups whose rewards were all equal (no signal). The lower layers are frozen: their outputs are read
from ``grpo.feature_cache`` (a ``mau student-train`` run's ``features.pt``) where they are there, else
computed. The run folder: config.yaml, provenance.json, trainer_log.jsonl, model/ and rl.json (written last).
Heavy imports inside.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.config import dump_yaml
from mau.errors import MauError
from mau.rundir import RunDir, atomic_write
from mau.student.config import StudentRLConfig

SUMMARY = "rl.json"
LOG = "trainer_log.jsonl"


def decisions(cfg: Any, tokenizer: Any) -> list[Any]:
    """Candidate examples of the recorded crewmate VOTE calls of ``cfg.decisions``
    (``mau.replay.decisions.decision_rows``: the same runs, seeds left out and ``max_decisions`` as ``mau
    rl``); ``meta['roles']``: the match's roles, from its header."""
    from mau.matchdir import read_header
    from mau.replay.decisions import decision_rows
    from mau.student.examples import make_example

    if cfg.decisions.modules != ["vote"]:
        raise MauError(f"decisions.modules {cfg.decisions.modules}: the candidate objective trains VOTE "
                       f"only; set "
                       "[vote]")
    roles: dict[str, dict[str, str]] = {}
    out = []
    for row in decision_rows(cfg.decisions):
        if row["match"] not in roles:
            roles[row["match"]] = read_header(Path(row["match"])).get(F.ROLES) or {}
        e = make_example(tokenizer, row["call_id"], row["prompt"], None)
        e.meta["roles"] = roles[row["match"]]
        out.append(e)
    return out


def train_candidates_rl(cfg: StudentRLConfig, out: Path) -> dict[str, Any]:
    import torch

    from mau.harness.backends.lm import load_text_model
    from mau.replay.reward import vote_term
    from mau.student.split import SplitLM
    from mau.student.train import FULL_MODEL, FeatureCache

    t0 = time.perf_counter()
    out = Path(out)
    if (out / SUMMARY).is_file():
        if not cfg.resume:
            raise MauError(f"{out} holds a finished rl run; choose another --out (or --resume to keep it)")
        return json.loads((out / SUMMARY).read_text())
    r, g = cfg.reward, cfg.grpo
    terms = {k: getattr(r, k) for k in ("meeting_ejects_imposter", "meeting_ejects_crewmate", "crew_win")}
    if any(terms.values()):
        bad = next(k for k, v in terms.items() if v)
        raise MauError(f"reward.{bad} is {terms[bad]}: the candidate objective forks nothing and rewards the "
                       f"vote terms only; set reward.{bad}: 0")
    from mau.harness.candidate_head import HEAD_FILE

    if (Path(cfg.policy.path) / HEAD_FILE).is_file():  # its read-out would be dropped without a word
        raise MauError(f"policy.path {cfg.policy.path}: a pointer student (it has {HEAD_FILE}); mau "
                       "student-rl trains first-token students (train the start policy with "
                       "training.readout: token)")
    torch.manual_seed(g.seed)
    tokenizer, model = load_text_model(cfg.policy.path, torch.float32)
    split = SplitLM(model, g.train_last_layers)
    split.freeze_lower()
    examples = decisions(cfg, tokenizer)
    out.mkdir(parents=True, exist_ok=True)
    RunDir(out, "rl run").write_config(dump_yaml(cfg), start_policy=cfg.policy.path, decisions=len(examples))
    cache = FeatureCache(split, Path(g.feature_cache) if g.feature_cache else None)
    computed = cache.fill(split, examples)
    with torch.inference_mode():  # the start policy (the KL reference), at the sampling temperature
        ref = {
            e.key: torch.log_softmax(split.upper(cache.get(e), e.tokens) / g.temperature, -1)
            for e in examples
        }
    params = split.trainable()
    opt = torch.optim.AdamW(params, lr=g.learning_rate)
    rng, gen = random.Random(g.seed), torch.Generator().manual_seed(g.seed)
    prompts_per_step = max(1, g.per_device_batch_size // g.num_generations) * g.gradient_accumulation_steps
    order: list[Any] = []
    history = []
    from tqdm import tqdm

    with open(out / LOG, "w") as log:
        for step in tqdm(range(1, g.max_steps + 1), desc="grpo (candidates)", unit="step"):
            loss_sum, rewards, zero, kls = 0.0, [], 0, []
            for _ in range(prompts_per_step):
                if not order:
                    order = examples[:]
                    rng.shuffle(order)
                e = order.pop()
                lp = torch.log_softmax(split.upper(cache.get(e), e.tokens) / g.temperature, -1)
                picks = torch.multinomial(
                    lp.detach().exp(), g.num_generations, replacement=True, generator=gen
                )
                rw = torch.tensor([vote_term(e.candidates[int(i)], e.meta["roles"], r)[1] for i in picks])
                std = float(rw.std())
                zero += int(std == 0.0)
                adv = (rw - rw.mean()) / (std + 1e-4) if g.scale_rewards == "group" else rw - rw.mean()
                kl = (lp.exp() * (lp - ref[e.key])).sum()
                loss = (-(adv * lp[picks]).mean() + g.beta * kl) / prompts_per_step
                loss.backward()
                loss_sum += float(loss.detach())
                rewards += rw.tolist()
                kls.append(float(kl.detach()))
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            row = {"step": step, "loss": round(loss_sum, 5), "reward": sum(rewards) / len(rewards),
                   "frac_reward_zero_std": zero / prompts_per_step, "kl": sum(kls) / len(kls)}
            history.append(row)
            if step % g.logging_steps == 0 or step == g.max_steps:
                log.write(json.dumps(row) + "\n")
                log.flush()
    model.eval()
    saved = out / FULL_MODEL
    model.save_pretrained(saved)
    tokenizer.save_pretrained(saved)
    k = max(1, len(history) // 5)
    summary = {
        "objective": "candidates", "steps": g.max_steps, "decisions": len(examples),
        "features_computed": computed, "prompts_per_step": prompts_per_step,
        "num_generations": g.num_generations, "temperature": g.temperature,
        "frac_reward_zero_std": sum(h["frac_reward_zero_std"] for h in history) / len(history),
        "reward_first": sum(h["reward"] for h in history[:k]) / k,
        "reward_last": sum(h["reward"] for h in history[-k:]) / k, "kl_last": history[-1]["kl"],
        "saved": str(saved), "merged": None, "forks": 0,
        "steps_per_minute": round(60 * g.max_steps / (time.perf_counter() - t0), 2),
        "trainable_changed": sum(p.numel() for p in params), "wall_s": round(time.perf_counter() - t0, 1),
    }
    atomic_write(out / SUMMARY, json.dumps(summary, indent=1) + "\n")
    return summary
