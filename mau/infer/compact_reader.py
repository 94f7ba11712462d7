"""A linear reader of the compact VOTE prompt (docs/student.md, "The linear peer"): the simplest learner of
the student's own data.

Features of each candidate are counts parsed from the compact prompt's text alone
(``EvidenceLog.compact_lines`` and this meeting's quoted speech, ``mau.harness.prompting``): kills seen and
flags, each death's closest distance bin and close step ends, accusations and votes given and received (split
by the revealed role of the other side), reports and calls, contradictions and conflicts, and this meeting's
accusations (``mau.infer.hearsay``). A conditional logit over the candidates and skip (one weight per
feature, a constant for skip) is fitted by maximum likelihood on BC rows with the student's objective: the
cross-entropy of the expert's vote and/or of its belief (``mau.datasets.beliefs``), with the same weights. So
a student trained on the same rows with the same target can be compared with what a linear model makes of them
(``mau eval``'s "linear (BC rows)" row; the learning curve's linear points)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from mau.infer.hearsay import STRONG, accusations
from mau.schema import SKIP

FEATURES = (
    "saw_kill", "flagged", "listed", "near3", "near6", "near12", "close", "acc_got", "acc_got_by_imp",
    "acc_got_by_crew", "accuses", "accuses_imp", "accuses_crew", "votes_got", "votes_cast", "voted_imp",
    "voted_crew", "reported", "called", "contradicted", "conflict", "now_strong", "now_weak", "now_accuses",
)
CANDIDATES_LINE = "Candidates: "  # the compact prompt's last line but one (mau/harness/prompts/compact.yaml)
EVIDENCE_HEADER, MEETING_HEADER = "What you know:", "This meeting:"  # the lines around its evidence block
NO_EVIDENCE = "- nothing yet"  # the evidence block when there is none (mau.harness.prompting)
_KILL = re.compile(r"^- I saw (\w+) kill (\w+) in ")
_FLAG = re.compile(r"^- At [\d.]+ s I flagged (\w+): ")
_DIED = re.compile(r"^- (\w+) died(?: in [^;]*)?; near the body before it was found: (.*)\.$")
_NEAR = re.compile(r"(\w+) (\d+) blocks(?: \((\d+)x within 6\))?")
_EJECT = re.compile(r"^- (\w+) was ejected: an? (Imposter|Crewmate)\.$")
_MEETING = re.compile(r"^- Meeting \d+ \((\w+) (reported|called)\)(?:: (.*?))?(?:; votes (.*))?\.$")
_ACC = re.compile(r"(\w+) accused (\w+)")
_VOTE = re.compile(r"(\w+)->(\w+)")
_CONTRA = re.compile(r"^- (\w+) placed \w+ in .*?, but I saw ")
_CONFLICT = re.compile(r"^- (\w+) and (\w+) placed \w+ in different rooms\.$")
_SAID = re.compile(r'^(\w+): "(.*)"$')


def compact_candidates(text: str) -> list[str]:
    """The candidates named by a compact prompt's user text (its ``Candidates:`` line); [] when there is
    none."""
    for line in reversed(text.split("\n")):
        if line.startswith(CANDIDATES_LINE):
            return [c.strip() for c in line[len(CANDIDATES_LINE):].rstrip(".").split(",") if c.strip()]
    return []


def evidence_lines(text: str) -> list[str]:
    """The "- " lines of a compact prompt's evidence block (none without evidence or without the block)."""
    if EVIDENCE_HEADER not in text:
        return []
    block = text.split(EVIDENCE_HEADER + "\n", 1)[-1].split("\n" + MEETING_HEADER, 1)[0]
    return [x for x in block.split("\n") if x.startswith("- ") and x != NO_EVIDENCE]


def features(text: str, candidates: list[str]) -> dict[str, dict[str, float]]:
    """{candidate: {feature: count}} of a compact VOTE prompt's user text (skip is no candidate here)."""
    f = {c: dict.fromkeys(FEATURES, 0.0) for c in candidates if c != SKIP}
    names = list(f)  # accusations in this meeting's speech count only against the candidates
    lines = text.split("\n")
    revealed = {m.group(1): m.group(2).lower() for m in map(_EJECT.match, lines) if m}

    def add(name: str, key: str, v: float = 1.0) -> None:
        if name in f:
            f[name][key] += v

    for line in lines:
        if m := _KILL.match(line):
            add(m.group(1), "saw_kill")
        elif m := _FLAG.match(line):
            add(m.group(1), "flagged")
        elif m := _DIED.match(line):
            for name, dist, close in _NEAR.findall(m.group(2)):
                d = float(dist)
                add(name, "listed")
                add(name, "near3" if d <= 3 else "near6" if d <= 6 else "near12")
                add(name, "close", float(close or 0))
        elif m := _MEETING.match(line):
            add(m.group(1), "reported" if m.group(2) == "reported" else "called")
            for s, t in _ACC.findall(m.group(3) or ""):
                add(t, "acc_got")
                if s in revealed:
                    add(t, "acc_got_by_imp" if revealed[s] == "imposter" else "acc_got_by_crew")
                add(s, "accuses")
                if t in revealed:
                    add(s, "accuses_imp" if revealed[t] == "imposter" else "accuses_crew")
            for s, t in _VOTE.findall(m.group(4) or ""):
                if t != SKIP:
                    add(t, "votes_got")
                    add(s, "votes_cast")
                    if t in revealed:
                        add(s, "voted_imp" if revealed[t] == "imposter" else "voted_crew")
        elif m := _CONTRA.match(line):
            add(m.group(1), "contradicted")
        elif m := _CONFLICT.match(line):
            add(m.group(1), "conflict")
            add(m.group(2), "conflict")
        elif m := _SAID.match(line):
            acc = accusations(m.group(2), m.group(1), names)
            for t, strength in acc.items():
                add(t, "now_strong" if strength == STRONG else "now_weak")
            if acc:
                add(m.group(1), "now_accuses")
    return f


TALLY_HEADER = "Counts:"  # the compact prompt's tally block (aria.compact_tally), after this meeting's speech


def tally_lines(text: str, candidates: list[str]) -> list[str]:
    """The compact prompt's tally (``aria.compact_tally``): one line per candidate with the nonzero counts
    that ``features`` parses from ``text`` (the prompt without its tally), by feature name ("- Noah: acc_got
    2, votes_got 1"; "- Noah: none"). The student is shown, as text, exactly what the linear reader reads."""
    fs = features(text, candidates)
    out = []
    for c, counts in fs.items():
        said = [f"{k} {counts[k]:g}" for k in FEATURES if counts[k]]
        out.append(f"- {c}: {', '.join(said) or 'none'}")
    return out


def design(rows: list[tuple[str, list[str]]]) -> tuple[np.ndarray, np.ndarray]:
    """(X: rows x slots x features on a log scale, mask: rows x slots) of (prompt text, candidates with skip
    last) rows; the last slot is skip (all zeros)."""
    width = max((len(c) for _, c in rows), default=1)
    x = np.zeros((len(rows), width, len(FEATURES)))
    mask = np.zeros((len(rows), width), bool)
    for i, (text, cands) in enumerate(rows):
        fs = features(text, cands)
        for j, c in enumerate(cands):
            mask[i, j if c != SKIP else width - 1] = True
            if c != SKIP:
                x[i, j] = [math.log1p(fs[c][k]) for k in FEATURES]
    return x, mask


def _probs(w: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = x @ w[:-1]
    s[:, -1] = w[-1]  # skip: one constant
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def fit(x: np.ndarray, mask: np.ndarray, target: np.ndarray, l2: float = 1e-3,
        iters: int = 500) -> np.ndarray:
    """Weights (features + the skip constant) minimising the mean cross-entropy of ``target`` (rows x slots:
    each row a distribution over its slots, e.g. the expert's vote as one-hot, its belief, or a weighted mix)
    under the conditional logit, plus ``l2``; by Adam."""
    w = np.zeros(x.shape[2] + 1)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    n = max(1, len(x))
    weight = target.sum(axis=1)  # a row's total weight (the objective's weights)
    for t in range(1, iters + 1):
        p = _probs(w, x, mask)
        resid = target - p * weight[:, None]
        g = np.empty_like(w)
        g[:-1] = np.einsum("rs,rsf->f", resid, x) / n
        g[-1] = resid[:, -1].sum() / n
        g -= 2 * l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w += 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def targets(rows: list[dict[str, Any]], width: int, vote_weight: float, belief_weight: float) -> np.ndarray:
    """The objective's target per row: ``vote_weight`` x one-hot(the vote) + ``belief_weight`` x the belief
    (where the row has one), on the slots of ``design`` (skip last). Rows: {candidates, vote, belief}."""
    out = np.zeros((len(rows), width))
    for i, r in enumerate(rows):
        slot = {c: (j if c != SKIP else width - 1) for j, c in enumerate(r["candidates"])}
        if vote_weight and r.get("vote") in slot:
            out[i, slot[r["vote"]]] += vote_weight
        if belief_weight and r.get("belief"):
            for c, q in r["belief"].items():
                if c in slot:
                    out[i, slot[c]] += belief_weight * q
    return out


class LinearReader:
    """The fitted conditional logit: ``probs(text, candidates)`` over the candidates (skip last as given)."""

    def __init__(self, weights: np.ndarray):
        self.w = weights

    @classmethod
    def fit_rows(cls, rows: list[dict[str, Any]], vote_weight: float = 1.0,
                 belief_weight: float = 1.0) -> LinearReader:
        """Fit on rows {text, candidates (skip last), vote, belief}; rows without a target are left out."""
        x, mask = design([(r["text"], r["candidates"]) for r in rows])
        t = targets(rows, x.shape[1], vote_weight, belief_weight)
        keep = t.sum(axis=1) > 0
        return cls(fit(x[keep], mask[keep], t[keep]))

    def probs(self, text: str, candidates: list[str]) -> list[float]:
        x, mask = design([(text, candidates)])
        p = _probs(self.w, x, mask)[0]
        width = x.shape[1]
        return [float(p[j if c != SKIP else width - 1]) for j, c in enumerate(candidates)]

    def to_dict(self) -> dict[str, float]:
        out = {k: round(float(v), 4) for k, v in zip(FEATURES, self.w[:-1])}
        return {**out, SKIP: round(float(self.w[-1]), 4)}

