"""``mau student-curve``: the learning curve of the CPU student (docs/student.md, "The learning curve").

Each point trains the student from the same start (the upper layers restored to the base model's) on the first
N rows of the training split, its matches taken in a seeded random order (so the subsets are nested and a
match is never split between a smaller point and the rest), under one objective (weights of the vote and
belief terms), and is scored on the same held-out VOTE prompts (``mau.student.score``). Beside every point,
the linear reader of the compact prompt (``mau.infer.compact_reader``) is fitted on the same rows with the
same objective: if the student does not beat it, the student is not using its data. The expert's own beliefs
and the knows-nothing reading (0.5) are the references. One feature cache serves every point. The run folder:
config.yaml, provenance.json, features.pt, points/<objective>_<size>.json (one per point, kept by
``--resume``), curve.json, curve.csv, curve.md and curve.png (written last). Heavy imports inside."""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.config import dump_yaml
from mau.errors import MauError
from mau.rundir import RunDir, atomic_write
from mau.student.config import StudentCurveConfig

SUMMARY = "curve.json"
PALETTE = [(76, 114, 176), (221, 132, 82), (85, 168, 104), (196, 78, 82)]  # (mau.eval.plots's first four)
POINTS = "points"
TRAIN_FIT = "training_fit"  # a point's reading on as many of its own training rows as the validation has
EXPERT_ROW = "expert's beliefs"
ACCUSED_ROW = "most accused"  # a simple reader of the same prompts: accusations and votes received
LINEAR_PREFIX = "linear"
PROBE = "probe"  # a pointer point's reading before fine-tuning: its head fitted on the frozen model


def subset_order(examples: list[Any], seed: int) -> list[Any]:
    """The examples with their matches in a seeded random order (each match's rows together, in their
    order): the first N of it are the curve's subset of size N."""
    def key(e: Any) -> str:
        return hashlib.sha256(f"{seed}\0{e.meta.get(F.MATCH, e.key)}".encode()).hexdigest()

    by_match: dict[str, list[Any]] = {}
    for e in examples:
        by_match.setdefault(key(e), []).append(e)
    return [e for k in sorted(by_match) for e in by_match[k]]


def linear_rows(examples: list[Any]) -> list[dict[str, Any]]:
    """The compact reader's rows of candidate examples: prompt text, candidates, vote and belief."""
    out = []
    for e in examples:
        belief = dict(zip(e.candidates, e.soft)) if e.soft is not None else None
        vote = e.candidates[e.target] if e.target is not None else None
        out.append({"text": e.meta.get("text", ""), "candidates": e.candidates, "vote": vote,
                    "belief": belief})
    return out


def run_curve(cfg: StudentCurveConfig, out: Path) -> dict[str, Any]:
    import torch

    from mau.harness.backends.lm import load_text_model
    from mau.student.examples import from_dataset_rows
    from mau.student.score import examples_of, expert_probs, read_probes, score
    from mau.student.split import SplitLM
    from mau.student.train import (
        EXAMPLE_COLUMNS,
        FEATURES,
        LOG,
        FeatureCache,
        _optimise,
        evaluate,
        student_probs,
        usable,
    )
    from mau.train.data import load_bc_data

    t0 = time.perf_counter()
    out = Path(out)
    # A resumed curve is summarised anew from its point files: a run that computed some objectives only
    # (``objectives.X.sizes=[]``) must not leave its partial summary as the curve's.
    if (out / SUMMARY).is_file() and not cfg.resume:
        raise MauError(f"{out} holds a finished learning curve; choose another --out (or --resume to keep "
                       "its points and summarise them again)")
    if (out / POINTS).is_dir() and not cfg.resume:
        raise MauError(f"{out} holds an unfinished learning curve; pass --resume to keep its finished "
                       "points, or choose another --out")
    base = cfg.model.path
    if not (Path(base) / "config.json").is_file():
        raise MauError(f"model.path {base}: not a local model folder (make it with mau student --out DIR)")
    data = load_bc_data(cfg.data, EXAMPLE_COLUMNS)
    tokenizer, model = load_text_model(base, torch.float32)
    split = SplitLM(model, cfg.training.train_last_layers)
    split.freeze_lower()
    pool = subset_order(from_dataset_rows(tokenizer, data.train), cfg.subset_seed)
    evals = from_dataset_rows(tokenizer, data.eval) if data.eval is not None else []
    probes = read_probes(cfg.heldout.runs, set(cfg.heldout.exclude_seeds))
    held = examples_of(tokenizer, probes)
    (out / POINTS).mkdir(parents=True, exist_ok=True)
    RunDir(out, "learning curve").write_config(dump_yaml(cfg), base_model=str(base),
                                               dataset=str(Path(cfg.data.dataset).resolve()),
                                               dataset_filter=data.header.get("filter"), resumed_from=None)
    cache_path = Path(cfg.training.feature_cache) if cfg.training.feature_cache else out / FEATURES
    cache = FeatureCache(split, cache_path)
    used = pool[:max(cfg.sizes)]  # nested subsets: the largest point's rows hold every point's
    cache.fill(split, used + evals + held, desc="features (train, validation, held-out)", path=cache_path)
    start = {n: p.detach().clone() for n, p in _trainable(split)}
    references = {EXPERT_ROW: score(probes, expert_probs(probes)),
                  ACCUSED_ROW: score(probes, accused_probs(held))}
    saved_sizes = set(cfg.save_sizes if cfg.save_sizes is not None else [max(cfg.sizes)])
    points = []
    for size in cfg.sizes:
        n = min(size, len(pool))
        for name, obj in cfg.objectives.items():
            if obj.sizes is not None and size not in obj.sizes:
                continue
            path = out / POINTS / f"{_slug(name)}_{size}.json"
            t = cfg.training.model_copy(update={"vote_weight": obj.vote_weight,
                                                "belief_weight": obj.belief_weight})
            rows = [e for e in pool[:n] if usable(e, t.vote_weight, t.belief_weight)]
            val = [e for e in evals if usable(e, t.vote_weight, t.belief_weight)]
            if path.is_file():
                points.append(_finished_point(path, split, cache, cache_path, _fit_rows(rows, val)))
                continue
            probe = _start_point(split, start, cache, t, rows, val, probes, held)
            torch.manual_seed(t.seed)
            model.train()
            tp = time.perf_counter()
            steps, loss = _optimise(split, cache, rows, val, t, out / POINTS / f"{_slug(name)}_{size}_{LOG}")
            model.eval()
            point = {"objective": name, "weights": {"vote": t.vote_weight, "belief": t.belief_weight},
                     "size": size, **t.readout_record(), "examples": len(rows),
                     "matches": len({e.meta.get(F.MATCH) for e in rows}),
                     "steps": steps, "train_loss": loss, "validation": evaluate(split, cache, val),
                     # the same reading on as many of its own training rows: beside the validation's, it
                     # says whether the student underfits (the two alike) or overfits (training far better)
                     TRAIN_FIT: evaluate(split, cache, _fit_rows(rows, val)),
                     "heldout": score(probes, student_probs(split, cache, held)),
                     "train_s": round(time.perf_counter() - tp, 1)}
            point.update({PROBE: probe} if probe is not None else {})
            if size in saved_sizes:
                point["model"] = _save(model, tokenizer, out / POINTS / f"{_slug(name)}_{size}_model",
                                       split.head)
            if cfg.linear:
                point.update(_linear_peer(rows, t, probes, held))
            atomic_write(path, json.dumps(point, default=str, indent=1) + "\n")
            points.append(point)
    summary = {"points": points, "references": references, "pool": len(pool),
               "heldout": {"runs": cfg.heldout.runs, "probes": len(probes),
                           "matches": len({p.match for p in probes}),
                           "evidence_chars": evidence_chars([e.meta.get("text", "") for e in held])},
               "wall_s": round(time.perf_counter() - t0, 1)}
    rungs = [k for k in references[EXPERT_ROW]]
    atomic_write(out / "curve.md", "\n".join(markdown(summary, rungs)) + "\n")
    atomic_write(out / "curve.csv", csv_text(summary))
    plot(summary).save(out / "curve.png")
    atomic_write(out / SUMMARY, json.dumps(summary, default=str, indent=1) + "\n")
    return summary


def _start_point(split: Any, start: dict[str, Any], cache: Any, t: Any, rows: list[Any], val: list[Any],
                 probes: list[Any], held: list[Any]) -> dict[str, Any] | None:
    """Every point starts from the base model's upper layers; a pointer point fits its own head on them (the
    linear probe, then trained along) and returns the probe's readings: what fine-tuning adds is the rest."""
    import torch

    from mau.student.score import score
    from mau.student.train import evaluate, student_probs

    split.head = None
    with torch.no_grad():
        for pn, p in _trainable(split):
            p.copy_(start[pn])
    if t.readout != "pointer":
        return None
    from mau.student.pointer import fit_pointer_head

    split.head = fit_pointer_head(split, cache, rows, t)
    return {"validation": evaluate(split, cache, val),
            "heldout": score(probes, student_probs(split, cache, held))}


def _save(model: Any, tokenizer: Any, folder: Path, split_head: Any = None) -> str:
    """A point's student, whole (model and tokenizer), playable by mau eval's lm backend."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if split_head is not None:
        split_head.save(folder)
    return str(folder)


def _linear_peer(rows: list[Any], t: Any, probes: list[Any], held: list[Any]) -> dict[str, Any]:
    """The linear reader of the compact prompt fitted on a point's rows with its objective, scored on the
    held-out prompts."""
    from mau.infer.compact_reader import LinearReader
    from mau.student.score import score

    reader = LinearReader.fit_rows(linear_rows(rows), t.vote_weight, t.belief_weight)
    return {"linear": score(probes, [reader.probs(e.meta.get("text", ""), e.candidates) for e in held]),
            "linear_weights": reader.to_dict()}


def evidence_chars(texts: list[str]) -> dict[str, Any]:
    """The length in characters of the compact prompts' evidence (its lines joined by newlines, without the
    "- " bullets, as the budget counts them): median, 90th percentile, max, and the share longer than the
    default budget (``aria.compact_evidence_chars``), i.e. what that budget would cut. Prompts recorded with a
    smaller budget than their evidence are already cut: record with a large one to measure."""
    from mau.harness.prompting import COMPACT_EVIDENCE_CHARS
    from mau.infer.compact_reader import evidence_lines

    n = sorted(len("\n".join(x[2:] for x in evidence_lines(t))) for t in texts)
    if not n:
        return {"n": 0}
    return {"n": len(n), "median": n[len(n) // 2], "p90": n[int(0.9 * len(n))], "max": n[-1],
            "budget": COMPACT_EVIDENCE_CHARS,
            "over_budget": round(sum(x > COMPACT_EVIDENCE_CHARS for x in n) / len(n), 4)}


def accused_probs(held: list[Any]) -> list[list[float]]:
    """"Most accused" at each held-out prompt: each candidate's accusations and votes received in the compact
    prompt (earlier meetings and this one's speech), plus a half count, as shares (skip 0): the simple reader
    that needs no fit, as beside every detection table (``mau.eval.baselines``)."""
    from mau.infer.compact_reader import features

    out = []
    for e in held:
        living = [c for c in e.candidates if c != F.SKIP]
        f = features(e.meta.get("text", ""), living)
        got = [0.5 + sum(f[c][k] for k in ("acc_got", "votes_got", "now_strong", "now_weak")) for c in living]
        total = sum(got)
        out.append([got[living.index(c)] / total if c != F.SKIP else 0.0 for c in e.candidates])
    return out


def _finished_point(path: Path, split: Any, cache: Any, cache_path: Path,
                    fit_rows: list[Any]) -> dict[str, Any]:
    """A point of an earlier run, as saved; one of an older curve without ``TRAIN_FIT`` gets it from its saved
    student, read on its own rows as new points are (and saved back)."""
    from mau.student.train import evaluate

    point = json.loads(path.read_text())
    if TRAIN_FIT not in point and point.get("model") and _load_trainable(split, point["model"]):
        cache.fill(split, fit_rows, desc="features (training fit)", path=cache_path)
        point[TRAIN_FIT] = evaluate(split, cache, fit_rows)
        atomic_write(path, json.dumps(point, default=str, indent=1) + "\n")
    return point


def _fit_rows(rows: list[Any], val: list[Any]) -> list[Any]:
    """The training rows a point's fit is read on: as many as the validation rows (the first in the curve's
    order), or up to 1,000 when there is no validation."""
    return rows[:len(val) or 1000]


def _load_trainable(split: Any, folder: str) -> bool:
    """The trained layers of a saved point's student into ``split`` (False when its weights are gone)."""
    import torch
    from safetensors.torch import load_file

    f = Path(folder) / "model.safetensors"
    if not f.is_file():
        return False
    from mau.harness.candidate_head import PointerHead

    saved = load_file(str(f))
    with torch.no_grad():
        for n, p in _trainable(split):
            if n not in saved:
                return False
            p.copy_(saved[n])
    split.head = PointerHead.load(folder)  # a pointer student's head, saved beside its weights
    return True


def _trainable(split: Any) -> list[tuple[str, Any]]:
    ids = {id(p) for p in split.trainable()}
    return [(n, p) for n, p in split.model.named_parameters() if id(p) in ids]


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


def _auroc(res: dict[str, Any], rung: str = "all") -> float | None:
    return ((res.get(rung) or {}).get("auroc_within") or {}).get("value")


def markdown(summary: dict[str, Any], rungs: list[str]) -> list[str]:
    """The curve as a table: per point, the student's and the linear reader's held-out within-probe AUROC."""
    lines = ["| objective | examples | student AUROC within (held-out) | 95 % interval | linear, same rows | "
             "student vote agreement | validation KL | training KL | validation / training vote accuracy |",
             "|---" * 9 + "|"]
    for p in summary["points"]:
        e = p["heldout"]["all"]["auroc_within"]
        lin = _auroc(p.get("linear") or {})
        val, fit = p.get("validation") or {}, p.get(TRAIN_FIT) or {}
        vote_acc = "-" if val.get("acc") is None or fit.get("acc") is None else \
            f"{100 * val['acc']:.1f} % / {100 * fit['acc']:.1f} %"
        label = p['objective'] + (" (pointer)" if p.get("readout") == "pointer" else "")
        lines.append(f"| {label} | {p['examples']} | {e['value']:.3f} | [{e['ci_low']:.3f}, "
                     f"{e['ci_high']:.3f}] | {'-' if lin is None else f'{lin:.3f}'} | "
                     f"{100 * p['heldout']['all']['agree_vote']:.1f} % | {_fmt(val.get('kl'))} | "
                     f"{_fmt(fit.get('kl'))} | {vote_acc} |")
    for p in summary["points"]:
        if p.get(PROBE):  # what the pointer head read before the layers were trained
            pe = p[PROBE]["heldout"]["all"]["auroc_within"]
            lines += ["", f"{p['objective']} (pointer), {p['examples']} rows: its head fitted on the frozen "
                      f"model (the probe, before fine-tuning) reads {pe['value']:.3f} [{pe['ci_low']:.3f}, "
                      f"{pe['ci_high']:.3f}], validation KL {_fmt(p[PROBE]['validation'].get('kl'))}."]
    ref = summary["references"][EXPERT_ROW]
    acc = summary["references"].get(ACCUSED_ROW)
    lines += ["", f"The expert's own beliefs on the same probes: {_auroc(ref):.3f}; "
              + (f"most accused (no fit): {_auroc(acc):.3f}; " if acc else "") + "knowing nothing: 0.500. "
              f"{summary['heldout']['probes']} held-out VOTE prompts of {summary['heldout']['matches']} "
              "matches." + _evidence_note(summary['heldout'].get("evidence_chars") or {}),
              "", "By imposter rung (held-out within-probe AUROC):", ""]
    lines.append("| row | " + " | ".join(rungs) + " |")
    lines.append("|---" * (len(rungs) + 1) + "|")
    lines.append(f"| {EXPERT_ROW} | " + " | ".join(_fmt(_auroc(ref, r)) for r in rungs) + " |")
    if acc:
        lines.append(f"| {ACCUSED_ROW} | " + " | ".join(_fmt(_auroc(acc, r)) for r in rungs) + " |")
    for p in summary["points"]:
        lines.append(f"| {p['objective']} @ {p['examples']} | "
                     + " | ".join(_fmt(_auroc(p["heldout"], r)) for r in rungs) + " |")
        if p.get("linear"):
            lines.append(f"| {LINEAR_PREFIX} {p['objective']} @ {p['examples']} | "
                         + " | ".join(_fmt(_auroc(p["linear"], r)) for r in rungs) + " |")
    return lines


def _evidence_note(ev: dict[str, Any]) -> str:
    if not ev.get("n"):
        return ""
    return (f" Their evidence: median {ev['median']} characters, 90th percentile {ev['p90']}, "
            f"max {ev['max']}; "
            f"{100 * ev['over_budget']:.1f} % longer than the default budget of {ev['budget']} (cut there).")


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def csv_text(summary: dict[str, Any]) -> str:
    """Long format: detector, objective, examples, rung, auroc_within, ci_low, ci_high, n."""
    rows = ["detector,objective,examples,rung,auroc_within,ci_low,ci_high,n"]

    def add(det: str, obj: str, n: Any, res: dict[str, Any]) -> None:
        for rung, cell in res.items():
            e = cell["auroc_within"]
            rows.append(f"{det},{obj},{n},{rung},{e['value']},{e['ci_low']},{e['ci_high']},{e['n']}")

    for p in summary["points"]:
        add("student", p["objective"], p["examples"], p["heldout"])
        if p.get("linear"):
            add(LINEAR_PREFIX, p["objective"], p["examples"], p["linear"])
    add("expert", "-", "-", summary["references"][EXPERT_ROW])
    if ACCUSED_ROW in summary["references"]:
        add("most_accused", "-", "-", summary["references"][ACCUSED_ROW])
    return "\n".join(rows) + "\n"


def plot(summary: dict[str, Any]):
    """Held-out within-probe AUROC against training examples (log scale): the student per objective (solid),
    the linear reader of the same rows (dashed), the expert's beliefs and chance (grey lines); Pillow only."""
    from PIL import Image, ImageDraw

    w, h, left, top, right, bottom = 640, 400, 60, 40, 190, 50
    img = Image.new("RGB", (w + right, h), "white")
    d = ImageDraw.Draw(img)
    d.text((8, 8), "Learning curve: held-out within-probe AUROC (chance 0.5)", fill="black")
    pts = summary["points"]
    xs = [p["examples"] for p in pts] or [1]
    x0, x1 = math.log10(max(1, min(xs)) * 0.8), math.log10(max(xs) * 1.25)
    y0, y1 = 0.4, 1.0

    def xy(x: float, y: float) -> tuple[float, float]:
        fx = (math.log10(max(1, x)) - x0) / max(1e-9, x1 - x0)
        return left + fx * (w - left - 20), top + (1 - (y - y0) / (y1 - y0)) * (h - top - bottom)

    d.rectangle([left, top, w - 20, h - bottom], outline="black")
    for y in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        d.text((left - 34, xy(1, y)[1] - 6), f"{y:.1f}", fill="black")
    for x in sorted(set(xs)):
        d.text((xy(x, y0)[0] - 12, h - bottom + 6), str(x), fill="black")
    d.text((left + 180, h - 22), "training examples (log scale)", fill="black")

    def hline(y: float | None, col: tuple[int, int, int], label: str, k: int) -> None:
        if y is None:
            return
        a, b = xy(10 ** x0, y), xy(10 ** x1, y)
        d.line([a[0], a[1], b[0], b[1]], fill=col, width=1)
        d.text((w - 10, 30 + 16 * k), f"-- {label} {y:.3f}", fill=col)

    hline(0.5, (150, 150, 150), "knows nothing", 0)
    hline(_auroc(summary["references"][EXPERT_ROW]), (60, 60, 60), "expert's beliefs", 1)
    objs = list(dict.fromkeys(p["objective"] for p in pts))
    for k, obj in enumerate(objs):
        col = PALETTE[k % len(PALETTE)]
        mine = sorted((p for p in pts if p["objective"] == obj), key=lambda p: p["examples"])
        for series, dashed in (("heldout", False), ("linear", True)):
            line = [(p["examples"], _auroc(p.get(series) or {})) for p in mine]
            line = [(x, y) for x, y in line if y is not None]
            for (xa, ya), (xb, yb) in zip(line, line[1:]):
                a, b = xy(xa, ya), xy(xb, yb)
                if dashed:
                    for s in range(0, 10, 2):
                        d.line([a[0] + (b[0] - a[0]) * s / 10, a[1] + (b[1] - a[1]) * s / 10,
                                a[0] + (b[0] - a[0]) * (s + 1) / 10, a[1] + (b[1] - a[1]) * (s + 1) / 10],
                               fill=col, width=2)
                else:
                    d.line([*a, *b], fill=col, width=2)
            for x, y in line:
                cx, cy = xy(x, y)
                d.ellipse([cx - 3, cy - 3, cx + 3, cy + 3], fill=col if not dashed else "white", outline=col)
        d.text((w - 10, 62 + 32 * k), f"o student: {obj}", fill=col)
        d.text((w - 10, 78 + 32 * k), f"- - linear: {obj}", fill=col)
    return img
