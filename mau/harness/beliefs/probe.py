"""Non-invasive belief probes: at chosen moments every living crewmate is asked, privately, P(imposter) of
each other living player; the ideal observer's posterior is written at the same moments in the same format.

A probe is built from the context the agent's next real call would see (its observation, memory, skills and
the meeting's transcript), is sent on its own RNG stream (``ModelRequest.stream = "probe"``), is recorded only
in ``probes.jsonl`` (never in ``calls.jsonl``, memory, history or chat) and cannot touch the match: any error
becomes a recorded fallback. Probe records are versioned (``format_version``; docs/formats.md).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.env.state import DISCUSSION, ROAM, VOTING
from mau.harness.backends.base import ModelRequest
from mau.harness.beliefs.config import ProbeConfig
from mau.harness.beliefs.perceive import Perception
from mau.harness.modules import VOTE, VOTE_PREFIX, Context, ParseError, checked_name, extract_json
from mau.infer import model as infer
from mau.snapshot import Parts, Restored

PROBE_MODULE = "probe"
PROBE_STREAM = "probe"
SOURCE_MODEL, SOURCE_IDEAL = F.PROBE_SOURCE_MODEL, F.PROBE_SOURCE_IDEAL
QUESTION = ("Private question (your answer is seen by nobody and changes nothing in the game): for each "
            "other living player, how likely is it that they are an Imposter? There {are} {k} Imposter{s} "
            "among {names}.")
FORMAT = ('Answer with JSON only: {{"beliefs": {{{example}}}, "top2": ["<most likely Imposter>", '
          '"<second most likely>"]}} with each probability a number from 0 to 1.')


def probe_messages(agent, obs: dict[str, Any], candidates: list[str], k: int) -> list[dict[str, Any]]:
    """[system, user] from the agent's own prompt parts: the same context as its next real call, read only."""
    b = agent.builder
    skills = agent.skills.render() if agent.aria.reflection == "meeting" else ""
    q = QUESTION.format(
        are="is" if k == 1 else "are", k=k, s="" if k == 1 else "s", names=", ".join(candidates)
    )
    example = ", ".join(f'"{n}": <probability>' for n in candidates)
    # the state text ends with the suspicion scores, as in every play call (issue 9's BELIEF/REFLECT keep
    # them)
    state = b.state(obs) + f"\n{agent.suspicion.render(candidates)}"
    parts = [state, agent.memory.render(), skills, b.chat(obs), q, FORMAT.format(example=example)]
    text = "\n".join(p for p in parts if p and p.strip())
    return [
        {"role": "system", "content": b.system(obs)},
        {"role": "user", "content": [{"type": "text", "text": text}]},
    ]


def normalise(raw: dict[str, float], k: int) -> dict[str, float]:
    """Scale to sum ``k`` (the living imposters), no value above 1 (the excess goes to the others in
    proportion); all zeros: uniform."""
    names = list(raw)
    if not names:
        return {}
    k = min(k, len(names))
    if k <= 0:
        return {n: 0.0 for n in names}
    out = {n: 0.0 for n in names}
    free, budget = set(names), float(k)
    while free:
        s = sum(raw[n] for n in free)
        scale = {n: (raw[n] / s if s > 0 else 1.0 / len(free)) * budget for n in free}
        capped = [n for n in free if scale[n] >= 1.0]
        if not capped:
            out.update(scale)
            break
        for n in capped:
            out[n] = 1.0
            free.discard(n)
            budget -= 1.0
    return {n: round(v, 6) for n, v in out.items()}


def top_two(beliefs: dict[str, float]) -> list[str]:
    return [n for n, _ in sorted(beliefs.items(), key=lambda kv: (-kv[1], kv[0]))[:2]]


def readout_of(cfg: ProbeConfig, backend: Any) -> str:
    """``answer`` or ``vote``: ``auto`` is vote where the backend can score (hf), answer elsewhere."""
    if cfg.readout == "auto":
        return "vote" if getattr(backend, "can_score", False) else "answer"
    return cfg.readout


def vote_beliefs(logprobs: list[float], candidates: list[str], k: int) -> dict[str, Any]:
    """The ``vote`` read-out: P(the model's VOTE names c), a softmax over the candidates' scores (skip left
    out), normalised to the living imposters like an answer."""
    top = max(logprobs)
    w = [math.exp(lp - top) for lp in logprobs]
    raw = {c: round(x / sum(w), 6) for c, x in zip(candidates, w)}
    norm = normalise(raw, k)
    return {"raw_beliefs": raw, "beliefs": norm, "top2": top_two(norm), "top2_source": "derived",
            "logprobs": {c: round(lp, 4) for c, lp in zip(candidates, logprobs)}}


def parse_probe(text: str | None, candidates: list[str], k: int) -> dict[str, Any]:
    """Check a probe answer: a number in [0, 1] for every candidate. Raises ParseError."""
    d = extract_json(text)
    bel = d.get("beliefs", d)
    if not isinstance(bel, dict):
        raise ParseError("beliefs: expected an object {name: probability}")
    raw: dict[str, float] = {}
    for key, v in bel.items():
        if not isinstance(key, str) or key.strip().lower() not in {c.lower() for c in candidates}:
            continue
        name = checked_name(key, "beliefs", candidates)
        if isinstance(v, str):
            try:
                v = float(v.strip().rstrip("%")) / (100 if v.strip().endswith("%") else 1)
            except ValueError:
                raise ParseError(f"beliefs.{name}: {v!r} is not a number") from None
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v <= 1:
            raise ParseError(f"beliefs.{name}: expected a number from 0 to 1, got {v!r}")
        raw[name] = float(v)
    missing = [c for c in candidates if c not in raw]
    if missing:
        raise ParseError(f"beliefs: no probability for {', '.join(missing)}")
    norm = normalise(raw, k)
    top, source = d.get("top2"), "answer"
    try:
        if not isinstance(top, list) or not top:
            raise ParseError("top2 missing")
        top = [checked_name(t, "top2", candidates) for t in top[:2]]
        if len(set(top)) != len(top):
            raise ParseError("top2 repeats a name")
    except ParseError:
        top, source = top_two(norm), "derived"
    return {"raw_beliefs": raw, "beliefs": norm, "top2": top, "top2_source": source}


class ProbeLog:
    """Appends probe records to probes.jsonl (and keeps them: the match's summary and tests read them)."""

    def __init__(self, folder: Path | None):
        # closed at match end
        self._f = open(folder / F.PROBES_FILE, "w") if folder is not None else None  # noqa: SIM115
        self.records: list[dict[str, Any]] = []

    def parts(self) -> Parts:
        """The records are append-only (the open file does not change)."""
        return Parts(shared=[self], logs={"records": self.records})

    def restore_parts(self, r: Restored) -> None:
        self.records = r.logs["records"]

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self._f is not None:
            self._f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def summary(self, wall_s: float) -> dict[str, Any]:
        model = [r for r in self.records if r[F.PROBE_SOURCE] == SOURCE_MODEL]
        return {"format_version": F.PROBES_FORMAT_VERSION, "model_probes": len(model),
                "fallbacks": sum(r[F.FALLBACK] for r in model),
                "prompt_tokens": sum(r[F.PROMPT_TOKENS] or 0 for r in model),
                "completion_tokens": sum(r[F.COMPLETION_TOKENS] or 0 for r in model),
                "latency_s": round(sum(r[F.LATENCY_S] or 0 for r in model), 3),
                "ideal_rows": len(self.records) - len(model), "wall_s": round(wall_s, 3)}


class BeliefProbes:
    """The probes of one match. The match calls ``point()`` at each decision point, before the agents act."""

    def __init__(self, world, agents: dict[str, Any], match_id: str, folder: Path | None, rooms: list[str]):
        self.world, self.agents, self.match_id, self.rooms = world, agents, match_id, rooms
        crew = [a for a in agents.values() if a.role != F.IMPOSTER]
        self.cfg: ProbeConfig = crew[0].aria.probes if crew else ProbeConfig()
        self.active = bool(crew) and (self.cfg.enabled or self.cfg.observer)
        self.log = ProbeLog(folder if self.active else None)
        modes = {a.name: a.aria.state for a in crew}
        self.perception = Perception(world, modes) if self.active else None
        self.n = 0  # probe moments so far
        self.wall_s = 0.0
        self._meeting, self._round, self._voted, self._roam = -1, 0, -1, -1

    def parts(self) -> Parts:
        """What changes: the probe moments so far and each crewmate's perceived evidence; the records are
        append-only; the world, agents and config are shared."""
        mine = {k: v for k, v in vars(self).items() if k != "log"}
        p = Parts(mine, shared=[self.world, self.agents, self.cfg, self.cfg.likelihood, self.rooms])
        return p.nest("log", self.log.parts())

    def restore_parts(self, r: Restored) -> None:
        vars(self).update({k: v for k, v in r.changing.items() if k != "log"})
        self.log.restore_parts(r.part("log"))

    async def point(self) -> None:
        """Fire the probes whose moment this is; track perception every time."""
        if not self.active:
            return
        t0 = time.perf_counter()
        try:
            self.perception.update()
            st, moments = self.world.state, self.cfg.moments
            if st.phase == ROAM and self.cfg.roam_every and st.step % self.cfg.roam_every == 0 \
                    and st.step != self._roam:
                self._roam = st.step
                await self._fire("roam", None, None)
            elif st.phase == DISCUSSION:
                if st.meetings_held != self._meeting:
                    self._meeting, self._round = st.meetings_held, st.meeting.round
                    if "meeting_start" in moments:
                        await self._fire("meeting_start", st.meetings_held, st.meeting.round)
                elif st.meeting.round != self._round:
                    done, self._round = self._round, st.meeting.round
                    if "round_end" in moments:
                        await self._fire("round_end", st.meetings_held, done)
            elif st.phase == VOTING and self._voted != st.meetings_held:
                self._voted = st.meetings_held
                if "before_vote" in moments:
                    await self._fire("before_vote", st.meetings_held, st.meeting.round)
        finally:
            self.wall_s += time.perf_counter() - t0

    async def _fire(self, moment: str, meeting: int | None, rnd: int | None) -> None:
        w, st = self.world, self.world.state
        self.n += 1
        base = {F.PROBES_VERSION_FIELD: F.PROBES_FORMAT_VERSION, F.MATCH: self.match_id, F.SEED: st.seed,
                F.STEP: st.step, F.TICK: st.tick, F.PHASE: st.phase, F.PROBE_MOMENT: moment,
                F.PROBE_SEQ: self.n, "meeting": meeting, "round": rnd}
        jobs = []
        for a in self.agents.values():
            if a.role == F.IMPOSTER or not st.player(a.name).active:
                continue
            obs = w.observe(a.name, a.aria.state)
            cands = [n for n in Context(obs, self.rooms).alive if n != a.name]
            k = w.cfg.num_imposters - sum(e["role"] == F.IMPOSTER for e in obs["ejections"])
            common = {**base, F.AGENT: a.name, F.ROLE: a.role, F.PROBE_CANDIDATES: cands, "n_imposters": k}
            if self.cfg.observer:
                self.log.add(self._ideal(a.name, common, cands))
            if self.cfg.enabled and cands:
                jobs.append(self._model(a, obs, common, cands, k))
        for rec in await asyncio.gather(*jobs):
            self.log.add(rec)

    def _ideal(self, me: str, common: dict[str, Any], cands: list[str]) -> dict[str, Any]:
        ev = self.perception.items(me)
        bel, ok = infer.beliefs(me, self.perception.roster, cands, self.world.cfg.num_imposters, ev,
                                self.cfg.likelihood)
        return {
            **common, F.PROBE_SOURCE: SOURCE_IDEAL, F.MODEL: "ideal-observer", F.BACKEND: None,
            F.PROBE_BELIEFS: bel, "raw_beliefs": None, F.PROBE_TOP2: top_two(bel), "top2_source": "derived",
            F.FALLBACK: False, F.FALLBACK_REASON: None, F.ERROR: None, "consistent": ok, "evidence": ev,
            F.LATENCY_S: 0.0, F.PROMPT_TOKENS: 0, F.COMPLETION_TOKENS: 0,
        }

    async def _model(
        self, a, obs: dict[str, Any], common: dict[str, Any], cands: list[str], k: int
    ) -> dict[str, Any]:
        """One probe call; whatever happens, a record (a failure is a recorded fallback, never a crash)."""
        t0 = time.perf_counter()
        readout = readout_of(self.cfg, a.backend)
        rec: dict[str, Any] = {
            **common, F.PROBE_SOURCE: SOURCE_MODEL, F.MODEL: a.seat.model.model, F.BACKEND: a.backend.name,
            F.MESSAGES: None, F.RAW_OUTPUT: None, F.PROBE_BELIEFS: None, "raw_beliefs": None,
            F.PROBE_TOP2: None, "top2_source": None, F.FALLBACK: True, F.FALLBACK_REASON: None, F.ERROR: None,
            F.LATENCY_S: None, F.PROMPT_TOKENS: None, F.COMPLETION_TOKENS: None, "attempts": 0,
            "temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens, F.PROBE_READOUT: readout,
        }
        try:
            vote = readout == "vote"
            messages = a.prompt(VOTE, obs) if vote else probe_messages(a, obs, cands, k)
            rec[F.MESSAGES] = messages
            st = self.world.state
            request = ModelRequest(messages=messages, images=[], module=PROBE_MODULE, agent=a.name,
                                   json_mode=a.seat.model.json_mode, temperature=self.cfg.temperature,
                                   max_tokens=self.cfg.max_tokens, stream=PROBE_STREAM,
                                   context={"obs": obs, "module": PROBE_MODULE, "match": self.match_id,
                                            "seed": st.seed, "map": self.world.config.map,
                                            "candidates": cands, "n_imposters": k})
            t1 = time.perf_counter()
            if vote:
                return await self._scored(a, request, rec, cands, k, t0, t1)
            resp = await a.backend.complete(request)
            t2 = time.perf_counter()
            rec.update(
                {
                    F.MODEL: resp.model or a.seat.model.model, F.RAW_OUTPUT: resp.text, F.ERROR: resp.error,
                    F.LATENCY_S: round(resp.latency_s, 4), F.PROMPT_TOKENS: resp.prompt_tokens,
                    F.COMPLETION_TOKENS: resp.completion_tokens, "attempts": resp.attempts,
                }
            )
            if resp.error is not None:
                rec[F.FALLBACK_REASON] = resp.error
            else:
                rec.update(parse_probe(resp.text, cands, k))
                rec[F.FALLBACK] = False
            rec[F.HARNESS_MS] = round(((t1 - t0) + (time.perf_counter() - t2)) * 1000, 3)
        except ParseError as e:
            rec[F.FALLBACK_REASON] = str(e)
        except Exception as e:  # noqa: BLE001 (a probe never touches the match)
            rec[F.FALLBACK_REASON] = f"probe failed ({type(e).__name__}: {e})"
        return rec

    async def _scored(self, a, request: ModelRequest, rec: dict[str, Any], cands: list[str], k: int,
                      t0: float, t1: float) -> dict[str, Any]:
        """The ``vote`` read-out: the model's probability of naming each candidate in its VOTE answer."""
        resp = await a.backend.score(request, VOTE_PREFIX, [f'{c}"' for c in cands])
        t2 = time.perf_counter()
        rec.update({F.MODEL: resp.model or a.seat.model.model, F.ERROR: resp.error,
                    F.LATENCY_S: round(resp.latency_s, 4), F.PROMPT_TOKENS: resp.prompt_tokens,
                    F.COMPLETION_TOKENS: 0, "attempts": 1})
        if resp.error is not None or resp.logprobs is None:
            rec[F.FALLBACK_REASON] = resp.error or "no scores"
        else:
            rec.update(vote_beliefs(resp.logprobs, cands, k))
            rec[F.FALLBACK] = False
        rec[F.HARNESS_MS] = round(((t1 - t0) + (time.perf_counter() - t2)) * 1000, 3)
        return rec

    def vote_hint(self, name: str, obs: dict[str, Any]) -> dict[str, Any] | None:
        """For the ``observer_vote`` temperament: the observer's beliefs of a crewmate (from its own
        perception) and the threshold; None when the temperament is off."""
        if not self.active or self.cfg.observer_vote is None or not self.cfg.observer:
            return None
        agent = self.agents[name]
        if agent.role == F.IMPOSTER:
            return None
        cands = [n for n in Context(obs, self.rooms).alive if n != name]
        bel, _ = infer.beliefs(name, self.perception.roster, cands, self.world.cfg.num_imposters,
                               self.perception.items(name), self.cfg.likelihood)
        return {"beliefs": bel, "threshold": self.cfg.observer_vote}

    def close(self) -> dict[str, Any] | None:
        self.log.close()
        return self.log.summary(self.wall_s) if self.active else None
