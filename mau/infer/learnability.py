"""Can a student learn the teacher's votes from what its prompt says? (docs/detection.md, "Vote learnability")

Features of each candidate are parsed from the VOTE prompt's text alone: the Evidence block of ARIA's memory
(``mau.infer.evidence.EvidenceLog.lines``: kills flagged, who was near where each victim lay and how close,
ejections, each meeting's accusations and votes) and the current meeting's transcript (read with
``mau.infer.hearsay``). The "Suspicion scores" line is not read: it is the teacher's own summary, and copying it
is not detection. A conditional logit over {candidates, skip} (a weight per feature, one constant for skip) is
fitted by maximum likelihood on some matches and scored on the others (two folds by match), so the accuracy
says how much of the teacher's voting is a function a student can learn from its input.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from mau.infer.hearsay import STRONG, accusations

FEATURES = ("flag_kill", "flag_near", "near3", "near6", "near12", "near3_first", "near_deaths",
            "acc_strong", "acc_weak", "acc_by_imposter", "acc_by_crew", "accuses_strong", "accuses_weak",
            "accuses_ejected_crew", "accuses_ejected_imposter", "votes_got", "reported", "called", "now_strong",
            "now_weak")
_DEATH = re.compile(r"^- (\w[\w ]*?) is dead.*?Within [\d.]+ blocks of where .*?\(blocks at step ends\): (.*)\.$")
_NEAR = re.compile(r"(\w+) ((?:[\d.]+ at [\d.]+ s(?:, )?)+)")
_HIT = re.compile(r"([\d.]+) at ([\d.]+) s")
_SPAN = re.compile(r"from ([\d.]+) s to")
_ACC = re.compile(r"(\w+) accused (\w+) \((strong|weak)\)")
_VOTE = re.compile(r"(\w+)->(\w+)")
_EJECT = re.compile(r"^- (\w+) was ejected: an? (Imposter|Crewmate)\.$")
_MEETING = re.compile(r"^- Meeting \d+: (\w+) (reported|called)")
_FLAG = re.compile(r"^- At [\d.]+ s I flagged (\w+): (.*)$")


def _text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts += [x.get("text", "") for x in c if isinstance(x, dict) and x.get("type") == "text"]
    return "\n".join(parts)


def features(prompt: str, candidates: list[str], speaker_names: list[str]) -> dict[str, dict[str, float]]:
    """{candidate: {feature: value}} from a VOTE prompt's text."""
    f = {c: dict.fromkeys(FEATURES, 0.0) for c in candidates}
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
    for line in lines:  # the current meeting's transcript: `Name: "text"`
        m = re.match(r'^(\w+): "(.*)"$', line)
        if m:
            for t, strength in accusations(m.group(2), m.group(1), speaker_names).items():
                if t in f:
                    f[t]["now_strong" if strength == STRONG else "now_weak"] += 1
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
        rows.append({"match": c.get("match"), "candidates": cands, "features": features(text, cands, roster),
                     "vote": parsed["vote_target"]})
    return rows


def _design(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X: rows x slots x features, mask: rows x slots, y: the chosen slot); the last slot is skip (all zeros)."""
    width = max((len(r["candidates"]) for r in rows), default=0) + 1
    x = np.zeros((len(rows), width, len(FEATURES)))
    mask = np.zeros((len(rows), width), bool)
    y = np.zeros(len(rows), int)
    for i, r in enumerate(rows):
        for j, c in enumerate(r["candidates"]):
            x[i, j] = np.log1p([r["features"][c][k] for k in FEATURES])
            mask[i, j] = True
        mask[i, -1] = True
        y[i] = r["candidates"].index(r["vote"]) if r["vote"] in r["candidates"] else width - 1
    return x, mask, y


def _scores(w: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = x @ w[:-1]
    s[:, -1] = w[-1]  # skip: one constant
    return np.where(mask, s, -np.inf)


def fit_vote_model(rows: list[dict[str, Any]], l2: float = 1e-3, iters: int = 400) -> np.ndarray:
    """Weights (features + the skip constant) of the conditional logit, by gradient ascent (Adam)."""
    x, mask, y = _design(rows)
    w = np.zeros(len(FEATURES) + 1)
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


def predict(w: np.ndarray, row: dict[str, Any]) -> str:
    x, mask, _ = _design([row])
    i = int(np.argmax(_scores(w, x, mask)[0]))
    return row["candidates"][i] if i < len(row["candidates"]) else "skip"


def cross_validated_accuracy(rows: list[dict[str, Any]], folds: int = 2) -> dict[str, Any]:
    """Accuracy of the vote model on held-out matches (folds by a hash of the match id), with its n."""
    def fold(r: dict[str, Any]) -> int:
        return int(hashlib.sha256(str(r["match"]).encode()).hexdigest(), 16) % folds

    hits = n = 0
    for k in range(folds):
        train = [r for r in rows if fold(r) != k]
        test = [r for r in rows if fold(r) == k]
        if not train or not test:
            continue
        w = fit_vote_model(train)
        hits += sum(predict(w, r) == r["vote"] for r in test)
        n += len(test)
    skips = sum(r["vote"] == "skip" for r in rows)
    return {"accuracy": hits / n if n else None, "n": n, "skip_share": skips / len(rows) if rows else None}
