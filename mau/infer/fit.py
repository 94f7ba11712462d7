"""Maximum-likelihood fit of the model's parameters on training matches (``mau beliefs --fit``).

Each probe is (the crewmate's evidence items, the other players, k, the true imposters). The fit maximises the
conditional log-likelihood sum over probes of log P(true imposter set | evidence; params): the exact posterior
of ``mau.infer.model`` is a softmax over the hypotheses, so this is a conditional-logit fit, with a small L2
penalty (``l2``) that keeps parameters finite where the training evidence separates perfectly. Everything is
vectorised over probes (numpy only); gradients are central differences over the ~16 parameters, the optimiser
a BFGS with backtracking line search. ``saw_kill_error`` is held at its value (a perfect witness in the sim
gives no finite optimum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mau.infer import evidence as E
from mau.infer.linear import Linear
from mau.infer.model import ROLE_PAIRS, Detector, Mixture, Params, Pool, components, hypotheses, posterior
from mau.schema import IMPOSTER

FIXED = ("saw_kill_error",)
N_BINS = E.FAR + 1


@dataclass
class Probe:
    """One probe's evidence with its truth: what the fit and the calibration report read."""

    items: list[dict[str, Any]]
    others: list[str]
    k: int
    truth: frozenset[str]
    candidates: list[str]


class _Compiled:
    """Probes of one shape (n others, k imposters) as arrays: linear feature counts per hypothesis, the hard
    mask, and each death's per-player one-hot bins over its window."""

    def __init__(self, probes: list[Probe], names: list[str]):
        self.n = len(probes)
        lin = [n for n in names if not n.startswith("near_") and n != "kill_decay"]
        self.lin_names = lin
        others0 = probes[0].others
        self.hyps_n = len(hypotheses(others0, probes[0].k))
        self.F = np.zeros((self.n, self.hyps_n, len(lin)))
        self.mask = np.zeros((self.n, self.hyps_n))
        self.truth = np.zeros(self.n, dtype=int)
        death_rows, death_probe, death_mem, death_uni = [], [], [], []
        J = 1
        for i, pr in enumerate(probes):
            hyps = hypotheses(pr.others, pr.k)
            self.truth[i] = hyps.index(pr.truth) if pr.truth in hyps else -1
            idx = {n: j for j, n in enumerate(sorted(pr.others))}
            for it in pr.items:
                kind = it["k"]
                if kind == E.DEATH:
                    rows = np.full((len(idx), MAXJ, N_BINS), 0.0)
                    there = np.zeros(len(idx))
                    for name, bins in it["bins"].items():
                        if name not in idx:
                            continue
                        there[idx[name]] = 1
                        for j, b in enumerate(bins[:MAXJ]):
                            rows[idx[name], j, b] = 1.0
                        J = max(J, len(bins))
                    mem = (
                        np.array([[1.0 if n in h else 0.0 for n in sorted(pr.others)] for h in hyps]) * there
                    )
                    death_rows.append(rows)
                    death_mem.append(mem)
                    death_uni.append(bool(it.get("uniform")))
                    death_probe.append(i)
                    continue
                for h_i, h in enumerate(hyps):
                    if kind == E.DEAD:
                        if it["p"] in h:
                            self.mask[i, h_i] = -np.inf
                    elif kind == E.EJECTED:
                        if (it["p"] in h) != (it["role"] == IMPOSTER):
                            self.mask[i, h_i] = -np.inf
                    elif kind == E.SAW_KILL:
                        if it["p"] not in h:
                            self.F[i, h_i, lin.index("saw_kill_error")] += 1
                    elif kind in (E.ACCUSE, E.VOTE):
                        s_imp, t_imp = it["p"] in h, it["target"] in h
                        if s_imp or t_imp:
                            pref = it["s"] if kind == E.ACCUSE else "vote"
                            self.F[
                                i, h_i, lin.index(f"{pref}_{'i' if s_imp else 'c'}{'i' if t_imp else 'c'}")
                            ] += 1
                    elif kind in (E.REPORTED, E.CALLED, E.SKIPPED, E.ALIBI):
                        if it["p"] in h:
                            self.F[i, h_i, lin.index(kind)] += 1
                    elif kind == E.CONTRADICTED:
                        if it["p"] not in h:
                            self.F[i, h_i, lin.index(kind)] += 1
                    elif kind == E.CONFLICT:
                        if it["p"] not in h and it["target"] not in h:
                            self.F[i, h_i, lin.index(kind)] += 1
        self.J = min(J, MAXJ)
        self.D = np.stack(death_rows)[:, :, :self.J, :] if death_rows else np.zeros((0, 1, self.J, N_BINS))
        self.Dmem = np.stack(death_mem) if death_mem else np.zeros((0, self.hyps_n, 1))
        self.Dprobe = np.asarray(death_probe, dtype=int)
        self.Duni = np.asarray(death_uni, dtype=bool)  # windows whose start is not the fall: uniform weights
        self.valid = self.D.sum(axis=3)  # (deaths, players, steps): 1 where the player has a bin at that step

    def scores(self, p: Params) -> np.ndarray:
        """(probes, hypotheses) log weights."""
        theta = np.array([getattr(p, n) for n in self.lin_names])
        s = self.F @ theta + self.mask
        if len(self.D):
            decay = min(1.0, max(1e-6, p.kill_decay))
            # (D, J): the prior weight of the kill at the j-th step end (uniform where the fall was not seen)
            w = np.where(self.Duni[:, None], 1.0, decay ** np.arange(self.J)[None, :])
            norm = np.maximum(np.einsum("dcj,dj->dc", self.valid, w), 1e-300)  # (D, C)
            lr_bins = np.exp(np.array(p.near()))  # (B,)
            lr = np.einsum("dcjb,dj,b->dc", self.D, w, lr_bins) / norm  # (D, C): a player's sum_j pi_j LR
            there = self.Dmem.sum(axis=2)  # (D, H) members of h that were there
            num = np.einsum("dhc,dc->dh", self.Dmem, lr)
            with np.errstate(divide="ignore", invalid="ignore"):
                f = np.where(
                    there > 0, np.log(np.maximum(num, 1e-300) / np.maximum(there, 1)), p.saw_kill_error
                )
            np.add.at(s, self.Dprobe, f)
        return s


MAXJ = 24


def _loglik(comp: list[_Compiled], p: Params) -> tuple[float, int]:
    total, n = 0.0, 0
    for c in comp:
        s = c.scores(p)
        ok = c.truth >= 0
        top = s.max(axis=1, keepdims=True)
        lse = (top[:, 0] + np.log(np.exp(s - top).sum(axis=1)))
        t = s[np.arange(c.n), np.maximum(c.truth, 0)]
        good = ok & np.isfinite(t)
        total += float((t - lse)[good].sum())
        n += int(good.sum())
    return total, n


def compile_probes(probes: list[Probe]) -> list[_Compiled]:
    shapes: dict[tuple[int, int], list[Probe]] = {}
    for pr in probes:
        shapes.setdefault((len(pr.others), pr.k), []).append(pr)
    return [_Compiled(ps, Params.names()) for ps in shapes.values()]


def fit(probes: list[Probe], start: Params | None = None, l2: float = 0.01, iters: int = 60,
        progress: Any = None, hold: tuple[str, ...] = ()) -> dict[str, Any]:
    """Maximum-likelihood parameters; returns {params, loglik, probes, start_loglik, iterations}. ``hold``:
    parameters kept at their ``start`` values (besides ``FIXED``)."""
    comp = compile_probes(probes)
    names = [n for n in Params.names() if n not in FIXED and n not in hold]
    base = start or Params()
    x = np.array([getattr(base, n) for n in names])
    n_total = sum(c.n for c in comp)

    def unpack(v: np.ndarray) -> Params:
        d = base.to_dict()
        d.update({n: float(val) for n, val in zip(names, v)})
        d["kill_decay"] = min(1.0, max(0.02, d["kill_decay"]))
        return Params(**d)

    def f(v: np.ndarray) -> float:
        ll, n = _loglik(comp, unpack(v))
        return -ll / max(1, n) + l2 * float((v ** 2).sum()) / max(1, n) * 0 + l2 * float((v ** 2).mean())

    def grad(v: np.ndarray) -> np.ndarray:
        g = np.zeros_like(v)
        for i in range(len(v)):
            e = np.zeros_like(v)
            e[i] = 1e-4
            g[i] = (f(v + e) - f(v - e)) / 2e-4
        return g

    start_ll = -f(x)
    H = np.eye(len(x))
    fx, gx = f(x), grad(x)
    it = 0
    for it in range(1, iters + 1):
        d = -H @ gx
        if gx @ d >= 0:
            H, d = np.eye(len(x)), -gx
        step, ok = 1.0, False
        while step > 1e-8:
            xn = x + step * d
            fn = f(xn)
            if fn <= fx + 1e-4 * step * (gx @ d):
                ok = True
                break
            step /= 2
        if not ok:
            break
        gn = grad(xn)
        s, y = xn - x, gn - gx
        if s @ y > 1e-12:
            rho = 1.0 / (s @ y)
            eye = np.eye(len(x))
            H = (eye - rho * np.outer(s, y)) @ H @ (eye - rho * np.outer(y, s)) + rho * np.outer(s, s)
        x, fx, gx = xn, fn, gn
        if progress is not None:
            progress(it, -fx)
        if np.abs(gx).max() < 1e-5:
            break
    p = unpack(x)
    ll, n = _loglik(comp, p)
    return {"params": p, "loglik_per_probe": ll / max(1, n), "start_loglik_per_probe": start_ll,
            "probes": n_total, "iterations": it}


def predict(probes: list[Probe], p: Detector) -> list[dict[str, float]]:
    """P(imposter) of each probe's candidates under ``p`` (vectorised: the same numbers as
    ``mau.infer.model.beliefs``; a ``Mixture`` sums each hypothesis over its kinds; a ``Linear`` detector is
    read probe by probe, as a ``Pool``)."""
    if isinstance(p, (Linear, Pool)):
        out_lin = []
        for pr in probes:
            post, _ = posterior(pr.others, pr.k, pr.items, p)
            out_lin.append({n: sum(w for h, w in post.items() if n in h) for n in pr.candidates})
        return out_lin
    out: list[dict[str, float] | None] = [None] * len(probes)
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, pr in enumerate(probes):
        shapes.setdefault((len(pr.others), pr.k), []).append(i)
    for idxs in shapes.values():
        group = [probes[i] for i in idxs]
        c = _Compiled(group, Params.names())
        per_kind = np.stack([lp + c.scores(pk) for lp, pk in components(p)])  # (kinds, probes, hypotheses)
        top_k = per_kind.max(axis=0)
        safe = np.where(np.isfinite(top_k), top_k, 0)
        with np.errstate(divide="ignore"):  # a hypothesis every kind rules out: log 0 = -inf, as meant
            s = safe + np.log(np.exp(per_kind - safe[None]).sum(axis=0))  # log sum over kinds
        s = np.where(np.isfinite(top_k), s, -np.inf)
        top = s.max(axis=1, keepdims=True)
        w = np.where(np.isfinite(top), np.exp(s - np.where(np.isfinite(top), top, 0)), 1.0)
        w = w / w.sum(axis=1, keepdims=True)
        for gi, i in enumerate(idxs):
            pr = probes[i]
            hyps = hypotheses(pr.others, pr.k)
            out[i] = {n: float(sum(w[gi, h] for h, hs in enumerate(hyps) if n in hs)) for n in pr.candidates}
    return [o or {} for o in out]


__all__ = ["Probe", "fit", "predict", "ROLE_PAIRS", "math"]


def read_params(path: str, what: str = "likelihood") -> Detector:
    """The detector of an ``observer_fit.json`` (or a folder holding one): version 1 holds one kind's
    ``params`` (a ``Params``), version 2 a ``Mixture`` (``kinds`` and their ``prior``), version 3 a ``Linear``
    detector (``linear``: its ``weights`` and ``bias``), version 4 a ``Pool`` (``pool``: its ``members``, each
    the path of another observer fit, relative to this file's folder, its ``weights`` and ``rule``); a bad
    file is a ValueError naming ``what`` (the field or flag it was given as) and the fix."""
    import json
    from pathlib import Path

    from mau import schema as F

    p = Path(path)
    p = p / F.OBSERVER_FIT if p.is_dir() else p
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{what} {path}: cannot read an observer fit ({e}); give the observer_fit.json that "
                         "mau beliefs --fit wrote") from None
    version = doc.get(F.FORMAT_VERSION) if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get(F.FORMAT) != F.FIT_FORMAT or version not in F.FIT_VERSIONS:
        raise ValueError(f"{what} {path}: not a {F.FIT_FORMAT} file of version "
                         f"{' or '.join(map(str, F.FIT_VERSIONS))} (write it with mau beliefs --fit "
                         "[--linear] or mau arms-race)")
    try:
        if version == F.FIT_POOL_VERSION:
            return _pool(doc["pool"], p, what)
        if version == F.FIT_LINEAR_VERSION:
            return Linear(**doc["linear"])
        if version == F.FIT_MIXTURE_VERSION:
            kinds = {n: Params.from_dict(d) for n, d in doc["kinds"].items()}
            return Mixture(kinds=kinds, prior=doc["prior"])
        return Params.from_dict(doc["params"])
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        errors = getattr(e, "errors", None)  # pydantic's: say each problem, not its headline
        why = "; ".join(x["msg"] for x in errors()) if callable(errors) else str(e).splitlines()[0]
        raise ValueError(f"{what} {path}: a damaged observer fit ({why}); write it again with mau beliefs "
                         "--fit or mau arms-race") from None


def _pool(doc: dict[str, Any], where: Any, what: str) -> Pool:
    """The ``Pool`` of a version 4 file at ``where``: each member read from its own file (a path relative to
    the pool file's folder); a member that is itself a pool is refused (one level keeps a file readable)."""
    members = {}
    for name, rel in doc["members"].items():
        if not isinstance(rel, str):
            raise ValueError(f"member {name!r} must be the path of an observer fit, not {type(rel).__name__}")
        m = read_params(str(where.parent / rel), f"{what} (member {name})")
        if isinstance(m, Pool):
            raise ValueError(f"member {name!r} ({rel}) is itself a pool; name its members instead")
        members[name] = m
    return Pool(members=members, weights=doc["weights"], rule=doc.get("rule", "linear"),
                learn=doc.get("learn", False))
