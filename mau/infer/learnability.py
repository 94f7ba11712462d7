"""Can a student learn the teacher's votes from what its prompt says? (docs/detection.md, "Vote learnability")

Features of each candidate are parsed from the VOTE prompt's text alone: the Evidence block of ARIA's memory
(``mau.infer.evidence.EvidenceLog.lines``: kills flagged, who was near where each victim lay and how close,
ejections, each meeting's accusations and votes) and the current meeting's transcript (read with
``mau.infer.hearsay``): counts of each kind (``FEATURES``), and the model's log-odds of the candidate
(``logodds``): the evidence lines parsed back into items (``parse_items``) and weighed by ``mau.infer.model``
with its shipped parameters, a function of the text alone. The "Suspicion scores" line is not read: it is the
teacher's own summary, and copying it is not detection. A conditional logit over {candidates, skip} (a weight
per feature, one constant for skip) is fitted by maximum likelihood on some matches and scored on the others
(two folds by match), so the accuracy says how much of the teacher's voting is a function a student can learn
from its input; the accuracy from the counts alone is reported beside it.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import numpy as np

from mau.infer import model as infer_model
from mau.infer.evidence import ALIBI_LINE, UNKNOWN_FALL, dist_bin
from mau.infer.hearsay import STRONG, accusations

FEATURES = (
    "flag_kill", "flag_near", "near3", "near6", "near12", "first3", "first6", "first12", "near3_first",
    "near_deaths", "acc_strong", "acc_weak", "acc_by_imposter", "acc_by_crew", "accuses_strong",
    "accuses_weak", "accuses_ejected_crew", "accuses_ejected_imposter", "votes_got", "votes_cast",
    "voted_ejected_crew", "voted_ejected_imposter", "reported", "called", "now_strong", "now_weak",
    "now_accuses", "contradicted", "conflicts", "logodds",
)
_DEATH = re.compile(r"^- (\w[\w ]*?) is dead.*?Within [\d.]+ blocks of where .*?\(blocks at step ends\): "
                    r"(.*)\.$")
_NEAR = re.compile(r"(\w+) ((?:[\d.]+ at [\d.]+ s(?:, )?)+)")
_HIT = re.compile(r"([\d.]+) at ([\d.]+) s")
_SPAN = re.compile(r"from ([\d.]+) s to")
_ACC = re.compile(r"(\w+) accused (\w+) \((strong|weak)\)")
_VOTE = re.compile(r"(\w+)->(\w+)")
_EJECT = re.compile(r"^- (\w+) was ejected: an? (Imposter|Crewmate)\.$")
_MEETING = re.compile(r"^- Meeting \d+: (\w+) (reported|called)")
_FLAG = re.compile(r"^- At [\d.]+ s I flagged (\w+): (.*)$")
_SAW_KILL = re.compile(r"\bI saw (\w+) kill (\w+)\b")
_SPAN_END = re.compile(r"from ([\d.]+) s to ([\d.]+) s")
_IMPOSTERS = re.compile(r"(\d+) secret Imposters?")
_CONTRA = re.compile(r"^- Meeting \d+: (\w+) placed .*?; I (?:saw|was) ")
_CONFLICT = re.compile(r"^- Meeting \d+: (\w+) placed .*?, but (\w+) placed ")
_ALIBI = re.compile(r"^- " + re.escape(ALIBI_LINE) + r" (\w+) lay then: (.*)\.$")
STEP_S = 5.0  # game seconds between two step ends (docs/game.md, "Time")


def _text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts += [x.get("text", "") for x in c if isinstance(x, dict) and x.get("type") == "text"]
    return "\n".join(parts)


def contradicted_speakers(messages: list[dict[str, Any]]) -> set[str]:
    """The players whose claims the prompt's own Evidence block contradicts by the agent's own sightings."""
    return {m.group(1) for line in _text(messages).split("\n") for m in [_CONTRA.match(line)] if m}


def parse_items(prompt: str, me: str, roster: list[str]) -> list[dict[str, Any]]:
    """The evidence items (``mau.infer.evidence``) that the prompt's Evidence block renders, read back from
    text: what the model needs to weigh the evidence as the teacher does. A window's step ends are taken 5 s
    apart."""
    lines = prompt.split("\n")
    items: list[dict[str, Any]] = []
    ejected: list[str] = []
    for line in lines:
        m = _EJECT.match(line)
        if m:
            ejected.append(m.group(1))
            items.append({"k": "ejected", "p": m.group(1), "role": m.group(2).lower()})
    for line in lines:
        m = _FLAG.match(line)
        if m:
            k = _SAW_KILL.search(m.group(2))
            if k:
                items.append({"k": "saw_kill", "p": k.group(1), "victim": k.group(2)})
            continue
        m = re.match(r"^- (\w+) is dead", line)
        if m and m.group(1) in roster:
            victim = m.group(1)
            items.append({"k": "dead", "p": victim})
            d, span = _DEATH.match(line), _SPAN_END.search(line)
            if not d or not span:
                continue
            start, end = float(span.group(1)), float(span.group(2))
            steps = int(round((end - start) / STEP_S)) + 1
            bins = {n: [3] * steps for n in roster if n not in (me, victim) and n not in ejected}
            for name, hits in _NEAR.findall(d.group(2)):
                if name in bins:
                    for dist, t in _HIT.findall(hits):
                        j = min(steps - 1, max(0, int(round((float(t) - start) / STEP_S))))
                        bins[name][j] = dist_bin(float(dist))
            items.append({"k": "death", "victim": victim, "bins": bins,
                          **({"uniform": True} if UNKNOWN_FALL in line else {})})
            continue
        m = _CONTRA.match(line)
        if m:
            items.append({"k": "contradicted", "p": m.group(1)})
            continue
        m = _CONFLICT.match(line)
        if m:
            items.append({"k": "conflict", "p": m.group(1), "target": m.group(2)})
            continue
        m = _MEETING.match(line)
        if m:
            items.append({"k": "reported" if m.group(2) == "reported" else "called", "p": m.group(1)})
            items += [{"k": "accuse", "p": a, "target": t, "s": st} for a, t, st in _ACC.findall(line)]
            if "votes:" in line:
                cast = _VOTE.findall(line.split("votes:", 1)[1])
                items += [{"k": "vote", "p": a, "target": t} for a, t in cast if t != "skip"]
                items += [{"k": "skipped", "p": a} for a, t in cast if t == "skip"]
            continue
        m = _ALIBI.match(line)
        if m:
            items += [{"k": "alibi", "p": n.strip(), "victim": m.group(1)} for n in m.group(2).split(",")
                      if n.strip() in roster]
    return items


def model_logodds(prompt: str, me: str, roster: list[str], candidates: list[str]) -> dict[str, float]:
    """log P / (1 - P) of each candidate under the shipped model, from the evidence parsed out of the
    prompt."""
    m = _IMPOSTERS.search(prompt)
    k = int(m.group(1)) if m else 2
    bel, _ = infer_model.beliefs(
        me, roster, candidates, k, parse_items(prompt, me, roster), infer_model.Params()
    )
    return {c: math.log(min(1 - 1e-6, max(1e-6, bel[c])) / (1 - min(1 - 1e-6, max(1e-6, bel[c]))))
            for c in candidates}


def features(prompt: str, candidates: list[str], speaker_names: list[str],
             me: str | None = None) -> dict[str, dict[str, float]]:
    """{candidate: {feature: value}} from a VOTE prompt's text (``logodds`` needs ``me``, the prompt's
    agent)."""
    f = {c: dict.fromkeys(FEATURES, 0.0) for c in candidates}
    if me is not None:
        for c, v in model_logodds(prompt, me, speaker_names, candidates).items():
            f[c]["logodds"] = v
    ejected: dict[str, str] = {}
    lines = prompt.split("\n")
    for line in lines:
        m = _EJECT.match(line)
        if m:
            ejected[m.group(1)] = m.group(2).lower()
    for line in lines:
        m = _FLAG.match(line)
        if m and m.group(1) in f:
            key = "flag_kill" if " kill " in m.group(2) else "flag_near"
            f[m.group(1)][key] += 1
            continue
        m = _DEATH.match(line)
        if m:
            span = _SPAN.search(line)
            start = float(span.group(1)) if span else 0.0
            for name, hits in _NEAR.findall(m.group(2)):
                if name not in f:
                    continue
                pts = [(float(d), float(t)) for d, t in _HIT.findall(hits)]
                best = min(d for d, _ in pts)
                f[name]["near_deaths"] += 1
                f[name]["near3" if best <= 3 else "near6" if best <= 6 else "near12"] += 1
                f[name]["near3_first"] += any(d <= 3 and t <= start + 10 for d, t in pts)
                first = [d for d, t in pts if t == start]  # the step end the model weighs most (kill_decay)
                if first:
                    f[name]["first3" if first[0] <= 3 else "first6" if first[0] <= 6 else "first12"] += 1
            continue
        m = _CONTRA.match(line)
        if m:
            if m.group(1) in f:
                f[m.group(1)]["contradicted"] += 1
            continue
        m = _CONFLICT.match(line)
        if m:
            for name in m.groups():
                if name in f:
                    f[name]["conflicts"] += 1
            continue
        m = _MEETING.match(line)
        if m:
            if m.group(1) in f:
                f[m.group(1)]["reported" if m.group(2) == "reported" else "called"] += 1
            for s, t, strength in _ACC.findall(line):
                if t in f:
                    f[t][f"acc_{strength}"] += 1
                    role = ejected.get(s)
                    if role:
                        f[t][f"acc_by_{'imposter' if role == 'imposter' else 'crew'}"] += 1
                if s in f:
                    f[s][f"accuses_{strength}"] += 1
                    if t in ejected:
                        f[s][f"accuses_ejected_{'imposter' if ejected[t] == 'imposter' else 'crew'}"] += 1
            if "votes:" in line:
                for s, t in _VOTE.findall(line.split("votes:", 1)[1]):
                    if t in f and s != t:
                        f[t]["votes_got"] += 1
                    if s in f and t != "skip":
                        f[s]["votes_cast"] += 1
                        if t in ejected:
                            f[s][f"voted_ejected_{'imposter' if ejected[t] == 'imposter' else 'crew'}"] += 1
    for line in lines:  # the current meeting's transcript: `Name: "text"`
        m = re.match(r'^(\w+): "(.*)"$', line)
        if m:
            acc = accusations(m.group(2), m.group(1), speaker_names)
            for t, strength in acc.items():
                if t in f:
                    f[t]["now_strong" if strength == STRONG else "now_weak"] += 1
            if acc and m.group(1) in f:
                f[m.group(1)]["now_accuses"] += 1
    return f


def vote_rows(calls: list[dict[str, Any]], roster: list[str]) -> list[dict[str, Any]]:
    """One row per VOTE call answered by the model itself: its match, candidates, their features, the vote."""
    rows = []
    for c in calls:
        parsed = c.get("parsed") or {}
        if c.get("fallback") or "vote_target" not in parsed:
            continue
        text = _text(c.get("messages") or [])
        m = re.search(r'Answer: \{"vote_target": "<one of: ([^>]*)>"', text)
        if not m:
            continue
        cands = [x.strip() for x in m.group(1).split(",") if x.strip() != "skip"]
        rows.append(
            {
                "match": c.get("match"), "candidates": cands,
                "features": features(text, cands, roster, c.get("agent")), "vote": parsed["vote_target"],
            }
        )
    return rows


COUNTS = tuple(k for k in FEATURES if k != "logodds")


def _design(rows: list[dict[str, Any]], names: tuple[str, ...] = FEATURES
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X: rows x slots x features, mask: rows x slots, y: the chosen slot); the last slot is skip (all
    zeros)."""
    width = max((len(r["candidates"]) for r in rows), default=0) + 1
    x = np.zeros((len(rows), width, len(names)))
    mask = np.zeros((len(rows), width), bool)
    y = np.zeros(len(rows), int)
    for i, r in enumerate(rows):
        for j, c in enumerate(r["candidates"]):
            x[i, j] = [_scale(k, r["features"][c][k]) for k in names]
            mask[i, j] = True
        mask[i, -1] = True
        y[i] = r["candidates"].index(r["vote"]) if r["vote"] in r["candidates"] else width - 1
    return x, mask, y


def _scale(name: str, v: float) -> float:
    return v if name == "logodds" else math.log1p(v)  # counts on a log scale; the log-odds as they are


def _scores(w: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = x @ w[:-1]
    s[:, -1] = w[-1]  # skip: one constant
    return np.where(mask, s, -np.inf)


def fit_vote_model(rows: list[dict[str, Any]], l2: float = 1e-3, iters: int = 400,
                   names: tuple[str, ...] = FEATURES) -> np.ndarray:
    """Weights (features + the skip constant) of the conditional logit, by gradient ascent (Adam)."""
    x, mask, y = _design(rows, names)
    w = np.zeros(len(names) + 1)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    n = max(1, len(rows))
    idx = np.arange(len(rows))
    skip_col = np.zeros(x.shape[1])
    skip_col[-1] = 1.0
    for t in range(1, iters + 1):
        s = _scores(w, x, mask)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = np.empty_like(w)
        g[:-1] = (x[idx, y].sum(axis=0) - np.einsum("rs,rsf->f", p, x)) / n
        g[-1] = ((y == x.shape[1] - 1).sum() - (p @ skip_col).sum()) / n
        g -= 2 * l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w += 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def predict(w: np.ndarray, row: dict[str, Any], names: tuple[str, ...] = FEATURES) -> str:
    x, mask, _ = _design([row], names)
    i = int(np.argmax(_scores(w, x, mask)[0]))
    return row["candidates"][i] if i < len(row["candidates"]) else "skip"


def cross_validated_accuracy(rows: list[dict[str, Any]], folds: int = 2) -> dict[str, Any]:
    """Accuracy of the vote model on held-out matches (folds by a hash of the match id), with its n; with
    every feature (``accuracy``) and with the counts alone (``accuracy_counts``: no model log-odds)."""
    def fold(r: dict[str, Any]) -> int:
        return int(hashlib.sha256(str(r["match"]).encode()).hexdigest(), 16) % folds

    def accuracy(names: tuple[str, ...]) -> tuple[float | None, int]:
        hits = n = 0
        for k in range(folds):
            train = [r for r in rows if fold(r) != k]
            test = [r for r in rows if fold(r) == k]
            if not train or not test:
                continue
            w = fit_vote_model(train, names=names)
            hits += sum(predict(w, r, names) == r["vote"] for r in test)
            n += len(test)
        return (hits / n if n else None), n

    acc, n = accuracy(FEATURES)
    counts, _ = accuracy(COUNTS)
    skips = sum(r["vote"] == "skip" for r in rows)
    return {"accuracy": acc, "accuracy_counts": counts, "n": n,
            "skip_share": skips / len(rows) if rows else None}
