"""Why a crewmate believes what it believes (docs/detection.md, "The teacher's reasons").

Each evidence item's pull on one player's P(imposter) is read by leaving it out: the player's log-odds under
the exact posterior with every item, less its log-odds without that item. The items that pulled hardest, in
either direction, are the reasons; ``describe`` says each one in words from the crewmate's own evidence log
(the closest sighting by a body, who accused whom, a kill it saw), so a teacher's answer carries what moved it
and not a stock phrase. Hard facts (a death, an ejection's revealed role) set which hypotheses exist; they are
never listed as reasons.
"""

from __future__ import annotations

import math
from typing import Any

from mau.infer import evidence as E
from mau.infer.linear import Linear
from mau.infer.model import Detector, Pool, PosteriorMemo, components, hypotheses, log_factor, mix, posterior
from mau.schema import IMPOSTER, TICKS_PER_SECOND

CONSTRAINTS = (E.DEAD, E.EJECTED)  # hard facts: they define the hypotheses, they are not reasons
MIN_PULL = 0.05  # log-odds: an item that moved the player less than this is no reason


def _logodds(logw: list[float], member: list[bool]) -> float:
    """log P(member) / P(not member) of a posterior given by unnormalised log weights. Not
    ``mau.infer.normalise.normalised``: normalising before summing rounds near-tied pulls otherwise and
    reorders tied reasons in recorded answers (42 of 7,962 BCvote rows of configs/collect/bc_ladder.yaml)."""
    top = max(logw)
    if top == -math.inf:
        return 0.0
    w = [math.exp(x - top) for x in logw]
    p = sum(x for x, m in zip(w, member) if m) / sum(w)
    p = min(1 - 1e-9, max(1e-9, p))
    return math.log(p / (1 - p))


def influence(me: str, roster: list[str], k: int, items: list[dict[str, Any]], p: Detector, target: str,
              memo: PosteriorMemo | None = None) -> list[tuple[int, float]]:
    """(index of the item, its pull on ``target``'s log-odds) for every item that is not a hard fact: the
    log-odds with all ``items`` less the log-odds without that one (a ``Mixture``: that item left out of every
    kind). ``memo``: the reader's memo (its kept columns; the same numbers, sooner)."""
    others = [n for n in roster if n != me]
    if target not in others or not items:
        return []
    if isinstance(p, (Linear, Pool)):
        return _whole_influence(others, k, items, p, target)
    hyps = hypotheses(others, k)
    comps = components(p)
    priors = [lp for lp, _ in comps]
    kind_cols = []
    for _, pk in comps:
        cols = memo.columns(others, k, items, pk) if memo is not None else None
        if cols is None:
            cols = [[log_factor(it, h, pk) for h in hyps] for it in items]
        kind_cols.append(cols)
    totals = [[sum(col[j] for col in cols) for j in range(len(hyps))] for cols in kind_cols]
    total = mix(totals, priors)
    member = [target in h for h in hyps]
    if max(total) == -math.inf:
        return []  # the evidence rules out every hypothesis: nothing to explain
    base = _logodds(total, member)
    out = []
    for i, it in enumerate(items):
        cols_i = [cols[i] for cols in kind_cols]
        if it["k"] in CONSTRAINTS or any(math.isinf(c) for col in cols_i for c in col):
            continue
        without = mix([[t - c for t, c in zip(tot, col)] for tot, col in zip(totals, cols_i)], priors)
        out.append((i, base - _logodds(without, member)))
    return out


def _whole_influence(others: list[str], k: int, items: list[dict[str, Any]], p: Linear | Pool,
                     target: str) -> list[tuple[int, float]]:
    """``influence`` under a detector that reads the evidence as a whole (linear, or a pool): its posterior
    with every item, less without each one."""
    def logodds(its: list[dict[str, Any]]) -> float | None:
        post, ok = posterior(others, k, its, p)
        if not ok:
            return None
        hyps = list(post)
        return _logodds([math.log(max(post[h], 1e-300)) for h in hyps], [target in h for h in hyps])

    base = logodds(items)
    if base is None:
        return []  # the evidence rules out every hypothesis: nothing to explain
    out = []
    for i, it in enumerate(items):
        if it["k"] in CONSTRAINTS:
            continue
        without = logodds(items[:i] + items[i + 1:])
        if without is not None:
            out.append((i, base - without))
    return out


def reasons(me: str, roster: list[str], k: int, items: list[dict[str, Any]], p: Detector, target: str,
            log: E.EvidenceLog | None, n: int = 3, memo: PosteriorMemo | None = None) -> list[str]:
    """The ``n`` items that pulled ``target``'s P(imposter) hardest, strongest first, in words (``describe``);
    ties by the items' order."""
    pulls = [(i, x) for i, x in influence(me, roster, k, items, p, target, memo) if abs(x) >= MIN_PULL]
    pulls.sort(key=lambda ix: (-abs(ix[1]), ix[0]))
    out: list[str] = []
    for i, _ in pulls:
        text = describe(items[i], log, target)
        if text not in out:
            out.append(text)
        if len(out) == n:
            break
    return out


def _as(name: str, log: E.EvidenceLog | None) -> str:
    """A player's name, with its revealed role when an ejection showed it (an imposter's word counts
    otherwise)."""
    role = (log.ejected.get(name) if log is not None else None)
    if role is None:
        return name
    return f"{name}, an ejected {'imposter' if role == IMPOSTER else 'crewmate'},"


def describe(item: dict[str, Any], log: E.EvidenceLog | None, target: str) -> str:
    """One evidence item as the crewmate would say it, about ``target`` where the item concerns it."""
    k, who, to = item["k"], item.get("p"), item.get("target")
    if k == E.SAW_KILL:
        return f"I saw {who} kill {item.get('victim')}"
    if k == E.DEATH:
        return _death(item, log, target)
    if k == E.ACCUSE:
        how = "said they saw" if item.get("s") == "strong" else "suspected"
        return f"{_as(who, log)} {how} {to}"
    if k == E.VOTE:
        return f"{_as(who, log)} voted for {to}"
    if k == E.REPORTED:
        return f"{who} reported a body"
    if k == E.CALLED:
        return f"{who} called an emergency meeting"
    if k == E.CONTRADICTED:
        return f"{who} placed someone where I saw otherwise"
    if k == E.CONFLICT:
        return f"{who} and {to} placed the same player in different rooms"
    if k == E.SKIPPED:
        return f"{who} withheld a vote"
    if k == E.ALIBI:
        return f"I saw {who} away from where {item.get('victim')} lay"
    return f"{k} {who or ''}".strip()


def _death(item: dict[str, Any], log: E.EvidenceLog | None, target: str) -> str:
    """Who I saw near where the victim lay: the target's closest sighting, else the closest of anyone's."""
    victim = item["victim"]
    d = log.deaths.get(victim) if log is not None else None
    if d is None:
        near = target if any(b < E.FAR for b in item["bins"].get(target, [])) else None
        if near:
            return f"{near} was near where {victim} lay"
        return f"{target} was not seen near where {victim} lay"

    def closest(name: str) -> tuple[float, int] | None:
        hits = [(x, t) for x, t in zip(d.dists.get(name, []), d.ticks) if x is not None]
        return min(hits) if hits else None

    mine = closest(target)
    if mine is not None and mine[0] <= E.NEAR_BINS[-1]:
        return f"{target} was {mine[0]:g} blocks from where {victim} lay at {mine[1] / TICKS_PER_SECOND:g} s"
    best = min(((c, n) for n in d.dists for c in [closest(n)] if c is not None and c[0] <= E.NEAR_BINS[-1]),
               default=None)
    if best is None:
        return f"nobody I saw was near where {victim} lay"
    (x, t), name = best
    return (f"{target} was not seen near where {victim} lay; {name} was {x:g} blocks from it at "
            f"{t / TICKS_PER_SECOND:g} s")
