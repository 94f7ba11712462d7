"""The scripted expert as a model backend: it answers every ARIA module with the scripted brain's decision
(``mau.env.scripted.ScriptedBrain``), as JSON text, so its calls are parsed and recorded exactly like a
model's and it can stand in for a model anywhere. Its model name picks the temperament (``scripted-cautious``,
``scripted-accusatory``, ``scripted-mission``; any other name: ``expert``; ``mau.env.scripted.TEMPERAMENTS``).
It reads the structured observation the prompt was built from (in ``request.context``), not the prompt text.
No model, no network."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from mau.env.map import load_map
from mau.env.scripted import NONE, ScriptedBrain, read_likelihood, temperament_of
from mau.harness import modules as M
from mau.harness.backends.base import ModelBackend, ModelRequest, ModelResponse
from mau.schema import IMPOSTER
from mau.snapshot import Parts, Restored


class Backend(ModelBackend):
    name = "scripted"

    def __init__(self, config):
        super().__init__(config)
        # match id -> agent -> brain: a worker plays many matches at once on one backend (docs/collect.md)
        self._brains: dict[str, dict[str, ScriptedBrain]] = {}
        likelihood = getattr(config, "likelihood", None)
        self._params = read_likelihood(likelihood, "likelihood")
        self._against = read_likelihood(getattr(config, "plans_against", None), "plans_against")

    def parts(self) -> Parts:
        """The brains of the matches being played (their memories, suspicions and random streams) change;
        their maps do not."""
        return Parts({"brains": self._brains},
                     shared=[self, *(b.map for per in self._brains.values() for b in per.values())])

    def restore_parts(self, r: Restored) -> None:
        self._brains = r.changing["brains"]

    def reset(self) -> None:
        self._brains.clear()

    def end_match(self, match_id: str) -> None:
        self._brains.pop(match_id, None)

    def _brain(self, request: ModelRequest) -> ScriptedBrain:
        ctx = request.context
        per = self._brains.setdefault(ctx["match"], {})
        if request.agent not in per:
            per[request.agent] = ScriptedBrain(
                request.agent, load_map(ctx["map"]), ctx["seed"] + self.config.seed,
                temperament_of(self.config.model), params=self._params, claims=ctx.get("claims"),
                plans_against=self._against,
            )
        return per[request.agent]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        t0 = time.perf_counter()
        brain = self._brain(request)
        if request.module == "probe":  # a belief probe reads a copy of the brain: the play is untouched
            answer = self.probe(brain, request.context)
        else:
            brain.observe(request.context["obs"])
            brain.perceive(request.context.get("seen_kills", []))
            answer = self.answer(brain, request.module, request.context)
        private = answer.pop(M.PRIVATE, None)  # the claims' intent labels: to the harness, never in the text
        text = json.dumps(answer)
        return ModelResponse(text=text, latency_s=time.perf_counter() - t0, prompt_tokens=0,
                             completion_tokens=0, model=self.config.model, private=private)

    @staticmethod
    def probe(brain: ScriptedBrain, context: dict[str, Any]) -> dict[str, Any]:
        """The brain's posterior P(imposter) of each candidate (the model over the evidence it took in),
        computed on a copy that has taken in the observation so far; no random draw."""
        b = copy.deepcopy(brain)
        b.observe(context["obs"])
        b.perceive(context.get("seen_kills", []))
        bel = b.posterior(context["candidates"])
        top = [n for n, _ in sorted(bel.items(), key=lambda kv: (-kv[1], kv[0]))[:2]]
        return {"beliefs": bel, "top2": top}

    @staticmethod
    def answer(brain: ScriptedBrain, module: str, context: dict[str, Any]) -> dict[str, Any]:
        obs = context["obs"]
        extra = context.get("extra", {})
        if module == M.SURVEILLANCE:
            return brain.surveillance(obs)
        if module == M.EMERGENCY:
            return {"should_call": brain.emergency(obs), "reasoning": "I saw it myself."}
        if module == M.REPORT:
            return {"should_report": brain.report(obs, extra.get("body", "")), "reasoning": "A body must be "
                                                                                            "reported."}
        if module == M.KILL:
            decision, target = brain.kill(obs)
            return {"decision": decision, "target": target, "reasoning": f"{decision.lower()} {target}"}
        if module in (M.PLAN, M.PLAN_SHORT):
            mode, target = brain.plan(obs)
            out = {"mode": mode, "target": target, "reasoning": f"{mode} now"}
            if module == M.PLAN_SHORT:
                out["plan"] = context.get("strategy", "")
            return out
        if module == M.STRATEGY:
            return {**brain.strategy(obs), "reasoning": "keep it simple"}
        if module == M.MISSION:
            return {"station": brain.mission(obs), "reasoning": "nearest first"}
        if module == M.MOVE:
            last = obs.get("last_action_result") or {}
            if obs["role"] == IMPOSTER and last.get("reason", "").startswith("killed"):
                return {"target_player": M.WANDER, "room": brain.far_room(obs), "reasoning": "leave the body "
                                                                                             "behind"}
            target, room = brain.move(obs)
            return {"target_player": target, "room": room, "reasoning": "look around"}
        if module == M.MEETING:
            text, on, claims, intent = brain.say(obs)
            out = {"response_text": text, "suspicion_cast_on": on or NONE,
                   "reasoning": brain.suspicion_reasoning(obs, on or NONE)}
            if claims is not None:  # claims on (world.claims.mode structured)
                out["claims"] = claims
                out[M.PRIVATE] = {"intent": intent}
            return out
        if module == M.VOTE:
            hint = context.get("observer")
            if hint and obs["role"] != IMPOSTER:  # the observer_vote temperament (docs/harness.md)
                brain.read_transcript(obs)
                bel = hint["beliefs"]
                top = max(sorted(bel), key=lambda n: bel[n]) if bel else None
                target = top if top is not None and bel[top] >= hint["threshold"] else M.SKIP
                return {"vote_target": target, "reasoning": "the ideal observer's posterior",
                        "beliefs": {n: round(p, 3) for n, p in bel.items()}}
            return brain.vote_answer(obs)
        if module == M.REFLECT:
            return brain.reflect(obs)
        if module == M.BELIEF:
            return {"suspicion_updates": brain.belief(obs), "reasoning": brain.suspicion_reasoning(obs)}
        raise ValueError(f"scripted expert: unknown module {module!r}")
