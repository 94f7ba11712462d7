"""``mau student-train``: the student learns the expert's VOTE as a choice among the candidates
(docs/student.md).

The loss of one example is the cross-entropy of the expert's choice under the softmax of the candidates'
scores (the log-probability of each candidate's first answer token after the compact prompt and
``{"vote_target": "``: the ``lm`` backend's read-out), skip included. The lower layers stay frozen, so their
output is computed once per prompt (the feature cache, ``features.pt``, which ``mau student-rl`` reuses); the
last ``train_last_layers`` decoder layers and the final norm are trained with AdamW. The run folder:
config.yaml, provenance.json, trainer_log.jsonl, features.pt, model/ (the whole model and tokenizer: the
``lm`` backend plays it) and train.json (written last). Heavy imports inside.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.config import dump_yaml
from mau.errors import MauError
from mau.rundir import RunDir, atomic_write
from mau.student.config import StudentTrainConfig
from mau.student.examples import CandidateExample
from mau.student.objective import belief_kl, example_loss  # noqa: F401 (re-exported)

SUMMARY = "train.json"
LOG = "trainer_log.jsonl"
FEATURES = "features.pt"
SAVE_EVERY = 2000  # new prompts between two saves of a feature cache being filled (about 0.25 MB a prompt)
FULL_MODEL = "model"
# the dataset columns a candidate example is made of (examples.from_dataset_rows)
EXAMPLE_COLUMNS = [F.DS_MESSAGES, F.DS_PARSED_JSON, F.CALL_ID, F.MATCH, F.MODULE, F.DS_BELIEFS_JSON]
# training examples scored after training beside the validation split (train.json: after_on_train)
TRAIN_SAMPLE = 128


@dataclass
class CandidateResult:
    out: Path
    steps: int
    train_loss: float | None
    before: dict[str, float]
    after: dict[str, float]
    trainable: int
    saved: Path
    wall_s: float

    def line(self) -> str:
        loss = f"{self.train_loss:.4f}" if self.train_loss is not None else "n/a"
        return (f"trained steps={self.steps} train_loss={loss} eval_ce "
                f"{self.before.get('ce', float('nan')):.3f}->{self.after.get('ce', float('nan')):.3f} "
                f"eval_acc "
                f"{self.before.get('acc', float('nan')):.3f}->{self.after.get('acc', float('nan')):.3f} "
                f"trainable_params={self.trainable} wall_s={self.wall_s:.1f} -> model {self.saved}")


class FeatureCache:
    """Lower-layer outputs by prompt: key = digest of (the frozen lower weights' fingerprint, token ids), so
    the base model and every model trained from it over the same cut share them. Saved as one file."""

    def __init__(self, split: Any, path: Path | None = None):
        self.tag = fingerprint(split)
        self.data: dict[str, Any] = {}
        if path is not None and path.is_file():
            import torch

            saved = torch.load(path, map_location="cpu")
            if saved.get("tag") == self.tag:
                self.data = saved["features"]

    def key(self, ids: list[int]) -> str:
        return hashlib.blake2b(f"{self.tag}|{ids}".encode(), digest_size=12).hexdigest()

    def fill(self, split: Any, examples: list[CandidateExample], desc: str = "features",
             path: Path | None = None, save_every: int = SAVE_EVERY) -> int:
        """Compute what is missing (progress bar); returns how many were computed. With ``path``, the cache is
        saved there every ``save_every`` new prompts and at the end, so a long fill that is stopped keeps
        what it computed (a rerun computes only the rest)."""
        from tqdm import tqdm

        todo = [e for e in examples if self.key(e.ids) not in self.data]
        for i, e in enumerate(tqdm(todo, desc=desc, unit="prompt", disable=not todo), 1):
            self.data[self.key(e.ids)] = split.lower(e.ids).to(dtype=_store_dtype())
            if path is not None and i % save_every == 0:
                self.save(path)
        if path is not None and (todo or not path.is_file()):
            self.save(path)
        return len(todo)

    def get(self, e: CandidateExample) -> Any:
        import torch

        return self.data[self.key(e.ids)].to(torch.float32)

    def save(self, path: Path) -> None:
        """Written beside and renamed into place: a stopped save never leaves a damaged cache, and two runs
        sharing the cache never write into one partial file (the last save wins whole)."""
        import os

        import torch

        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        torch.save({"tag": self.tag, "features": self.data}, tmp)
        os.replace(tmp, path)


def fingerprint(split: Any) -> str:
    """A digest of the frozen part (embeddings and the lower layers: a sample of every tensor) and the cut."""
    h = hashlib.blake2b(digest_size=12)
    h.update(str(split.k).encode())
    mods = [split.inner.embed_tokens, *split.inner.layers[: split.k]]
    for p in (p for m in mods for p in m.parameters()):
        h.update(p.detach().flatten()[:512].float().cpu().numpy().tobytes())
    return h.hexdigest()


def _store_dtype() -> Any:
    import torch

    return torch.float16  # half the memory; the upper layers compute in float32


def candidate_logprobs(split: Any, features: Any, e: CandidateExample) -> Any:
    """Log-softmax over the candidates of their scores: the first-token logits, or with a pointer head
    (``split.head``) the head on the states at the candidates' names."""
    import torch

    if split.head is not None:
        if e.positions is None:
            raise MauError(f"call {e.key}: its prompt has no Candidates line naming every candidate; the "
                           "pointer read-out needs one (training.readout: token reads any compact prompt)")
        inputs = split.head.inputs(split.upper_hidden(features), e.positions, e.mentions)
        return torch.log_softmax(split.head.scores(inputs, e.candidates), dim=-1)
    return torch.log_softmax(split.upper(features, e.tokens), dim=-1)


def student_probs(split: Any, cache: Any, examples: list[Any]) -> list[list[float]]:
    """The student's softmax over each example's candidates (from the cached lower-layer features)."""
    import torch

    out = []
    with torch.inference_mode():
        for e in examples:
            out.append([float(x) for x in candidate_logprobs(split, cache.get(e), e).exp()])
    return out


def usable(e: CandidateExample, vote_weight: float, belief_weight: float) -> bool:
    """Whether the objective has a target in this example."""
    return bool((vote_weight and e.target is not None) or (belief_weight and e.soft is not None))


def evaluate(split: Any, cache: FeatureCache, examples: list[CandidateExample]) -> dict[str, float]:
    """Mean cross-entropy of the expert's choice, the share of examples whose argmax is that choice, and the
    mean KL from the expert's belief (over the examples that have one)."""
    import torch

    voted = [e for e in examples if e.target is not None]
    if not examples:
        return {}
    ce, hits, kl, n_soft = 0.0, 0, 0.0, 0
    with torch.inference_mode():
        for e in examples:
            lp = candidate_logprobs(split, cache.get(e), e)
            if e.target is not None:
                ce -= float(lp[e.target])
                hits += int(int(lp.argmax()) == e.target)
            if e.soft is not None:
                kl += float(belief_kl(lp, e.soft))
                n_soft += 1
    out = {"n": float(len(examples))}
    if voted:
        out.update({"ce": ce / len(voted), "acc": hits / len(voted),
                    "chance_ce": sum(math.log(len(e.candidates)) for e in voted) / len(voted)})
    if n_soft:
        out.update({"kl": kl / n_soft, "n_beliefs": float(n_soft)})
    return out


def train_candidates(cfg: StudentTrainConfig, out: Path) -> CandidateResult:
    import torch

    from mau.harness.backends.lm import load_text_model
    from mau.student.examples import from_dataset_rows
    from mau.student.split import SplitLM

    t0 = time.perf_counter()
    out = Path(out)
    if (out / SUMMARY).is_file() and not cfg.resume:
        raise MauError(f"{out} holds a finished training run; choose another --out (or --resume to keep it)")
    if ((out / FEATURES).is_file() or (out / LOG).is_file()) and not (out / SUMMARY).is_file() \
            and not cfg.resume:
        raise MauError(f"{out} holds an unfinished training run; pass --resume to continue it (its feature "
                       "cache is reused, training starts over), or choose another --out")
    if (out / SUMMARY).is_file():
        s = json.loads((out / SUMMARY).read_text())
        return CandidateResult(out, s["steps"], s["train_loss"], s["before"], s["after"], s["trainable"],
                               out / FULL_MODEL, 0.0)
    t = cfg.training
    torch.manual_seed(t.seed)
    from mau.train.data import load_bc_data

    # what an example is made of
    data = load_bc_data(cfg.data, EXAMPLE_COLUMNS)
    train_rows, eval_rows, header = data.train, data.eval, data.header
    base = cfg.model.path
    if not (Path(base) / "config.json").is_file():
        raise MauError(f"model.path {base}: not a local model folder; mau student-train trains the text-only "
                       "student (make it with mau student --out DIR)")
    tokenizer, model = load_text_model(base, torch.float32)
    model.train()
    split = SplitLM(model, t.train_last_layers)
    split.freeze_lower()
    vw, bw = t.vote_weight, t.belief_weight
    train = [e for e in from_dataset_rows(tokenizer, train_rows) if usable(e, vw, bw)]
    evals = [e for e in from_dataset_rows(tokenizer, eval_rows) if usable(e, vw, bw)] if eval_rows else []
    if not train:
        what = ("names one of its candidates" if not bw else
                "has a target (a vote among its candidates or the expert's beliefs_json)")
        raise MauError(f"{cfg.data.dataset}: no training example {what}; for the belief objective, build the "
                       "dataset from matches whose expert recorded beliefs (the scripted teacher)")
    out.mkdir(parents=True, exist_ok=True)
    RunDir(out, "training run").write_config(dump_yaml(cfg), base_model=str(base),
                                             dataset=str(Path(cfg.data.dataset).resolve()),
                                             dataset_filter=header.get("filter"), resumed_from=None)
    heldout = None
    if cfg.heldout.runs:
        from mau.student.score import examples_of, read_probes

        probes = read_probes(cfg.heldout.runs, set(cfg.heldout.exclude_seeds))
        heldout = (probes, examples_of(tokenizer, probes))
    cache_path = Path(t.feature_cache) if t.feature_cache else out / FEATURES
    cache = FeatureCache(split, cache_path)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    cache.fill(split, train + evals + (heldout[1] if heldout else []), path=cache_path)
    if t.readout == "pointer":  # the head's linear probe on the frozen model: "before" reads through it
        from mau.student.pointer import fit_pointer_head

        split.head = fit_pointer_head(split, cache, train, t)
    before = evaluate(split, cache, evals)
    steps, last_loss = _optimise(split, cache, train, evals, t, out / LOG)
    model.eval()
    after = evaluate(split, cache, evals)
    fit = evaluate(split, cache, train[:TRAIN_SAMPLE])  # the same on training examples: under-, over-fitting
    if heldout is not None:
        from mau.student.score import HELDOUT, score

        atomic_write(out / HELDOUT, json.dumps({"runs": cfg.heldout.runs, "student": score(
            heldout[0], student_probs(split, cache, heldout[1]))}, indent=1) + "\n")
    saved = out / FULL_MODEL
    model.save_pretrained(saved)
    tokenizer.save_pretrained(saved)
    if split.head is not None:
        split.head.save(saved)
    n_trainable = sum(p.numel() for p in split.trainable())
    wall = time.perf_counter() - t0
    result = CandidateResult(out, steps, last_loss, before, after, n_trainable, saved, wall)
    summary = {**result.__dict__, "after_on_train": fit, "objective": "candidates",
               "weights": {"vote": vw, "belief": bw},
               "examples": {"train": len(train), "eval": len(evals),
                            "train_with_beliefs": sum(e.soft is not None for e in train)},
               "train_last_layers": t.train_last_layers, **t.readout_record()}
    atomic_write(out / SUMMARY, json.dumps(summary, default=str, indent=1) + "\n")
    return result


def _optimise(split: Any, cache: FeatureCache, train: list[CandidateExample], evals: list[CandidateExample],
              t: Any, log_path: Path) -> tuple[int, float | None]:
    """AdamW over the trainable layers (the training section ``t``), logged to ``log_path``: (steps, last
    loss)."""
    import torch
    from tqdm import tqdm
    from transformers import get_scheduler

    params = split.trainable()
    per_step = t.per_device_batch_size * t.gradient_accumulation_steps
    steps = t.max_steps or max(1, math.ceil(len(train) * t.epochs / per_step))
    opt = torch.optim.AdamW(params, lr=t.learning_rate, weight_decay=t.weight_decay)
    warm = int(t.warmup * steps) if t.warmup < 1 else int(t.warmup)
    sched = get_scheduler(t.lr_scheduler, opt, num_warmup_steps=warm, num_training_steps=steps)
    rng = random.Random(t.seed)
    order: list[CandidateExample] = []
    last_loss = None
    with open(log_path, "w") as log:
        for step in tqdm(range(1, steps + 1), desc="train (candidates)", unit="step"):
            total = 0.0
            for _ in range(per_step):
                if not order:
                    order = train[:]
                    rng.shuffle(order)
                e = order.pop()
                lp = candidate_logprobs(split, cache.get(e), e)
                loss = example_loss(lp, e, t.vote_weight, t.belief_weight) / per_step
                loss.backward()
                total += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(params, t.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            last_loss = total
            if step % t.logging_steps == 0 or step == steps:
                row = {"step": step, "loss": round(total, 5), "lr": sched.get_last_lr()[0]}
                if t.eval_steps and step % t.eval_steps == 0 and evals:
                    row.update({f"eval_{k}": v for k, v in evaluate(split, cache, evals).items()})
                log.write(json.dumps(row) + "\n")
                log.flush()
    return steps, last_loss
