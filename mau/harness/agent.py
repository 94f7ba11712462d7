"""One ARIA agent: observe -> memory -> plan -> act -> reflect, with its modules as model calls.

Free roam, per step: (crewmate) SURVEILLANCE of two view directions, which may trigger EMERGENCY (bypassing
the planner); REPORT when a body is in view; (imposter) KILL when a crewmate is in view and the cooldown is
over; then the planner (reactive: one call picks the mode; hierarchical: a strategy every few steps and a plan
every step) and the module for the mode (MISSION, MOVE, KILL, REPORT). When the planner keeps the mode of the
action still running, the action runs on and the module is not asked again. Meetings: MEETING on one's turn,
VOTE, and, after the meeting, reflection (suspicion deltas clamped, skill memory).
"""

from __future__ import annotations

import time
from typing import Any

from mau.env.actions import Action
from mau.env.scripted import leave_point
from mau.harness import modules as M
from mau.harness.backends.base import Frame, ModelBackend
from mau.harness.calls import Caller, FrameStore
from mau.harness.config import SeatConfig
from mau.harness.memory import SemanticMemory, SkillMemory, Suspicion, WindowMemory
from mau.harness.prompting import PromptBuilder
from mau.infer.evidence import EvidenceLog
from mau.schema import IMPOSTER
from mau.snapshot import Parts, Restored

MODE_KINDS = {"mission": ("mission", "fake_mission"), "explore": ("goto", "follow"), "kill": ("kill",),
              "report": ("report",)}


class AriaAgent:
    def __init__(self, name: str, role: str, roster: list[str], seat: SeatConfig, backend: ModelBackend,
                 builder: PromptBuilder, caller: Caller, frames: FrameStore, rooms: list[str],
                 rest_backend: ModelBackend | None = None):
        self.name, self.role = name, role
        self.seat, self.aria, self.backend = seat, seat.aria, backend
        self.rest_backend = rest_backend  # answers the modules not in seat.modules
        self.builder, self.caller, self.frames, self.rooms = builder, caller, frames, rooms
        if self.aria.memory == "window":
            self.memory: WindowMemory | SemanticMemory = WindowMemory(self.aria.window_size)
        else:
            self.memory = SemanticMemory(name, roster, self.aria.notes_limit)
        self.suspicion = Suspicion(name, roster)
        self.evidence: EvidenceLog | None = None
        if self.aria.evidence_memory and role != IMPOSTER:
            self.evidence = self.memory.evidence = EvidenceLog(name, roster)
            self.memory.claims_memory = self.aria.claims_memory
        self.skills = SkillMemory(self.aria.skill_memory_size, self.aria.skill_retrieve)
        self.strategy: str = ""
        self.strategy_step: int | None = None
        self.decided_bodies: set[str] = set()
        self.kills_seen = 0

    def parts(self) -> Parts:
        """What changes: memory, suspicion, skills, strategy and bookkeeping. The seat, backends, prompt
        builder, caller, frame store and rooms never change during a match."""
        return Parts(
            dict(vars(self)),
            shared=[
                self.seat, self.aria, self.backend, self.rest_backend, self.builder, self.caller, self.frames,
                self.rooms,
            ],
        )

    def restore_parts(self, r: Restored) -> None:
        vars(self).update(r.changing)

    @property
    def imposter(self) -> bool:
        return self.role == IMPOSTER

    # -- one call ------------------------------------------------------------------------------------------
    async def call(self, module: str, obs: dict[str, Any], flagged: str | None = None,
                   context: dict[str, Any] | None = None, **extra: str) -> dict[str, Any]:
        """``context``: request context for the backend only (never in the prompt), e.g. the ideal
        observer."""
        if self.evidence is not None and obs["alive"]:
            self.evidence.observe(obs)  # what the prompt's evidence memory shows is up to date with obs
        ctx = M.Context(obs, self.rooms, suspicion=self.suspicion.dump(), flagged=flagged)
        compact = self.aria.prompt_profile.get(module, "full").startswith("compact")  # text only
        views = M.MODULES[module].images if self.aria.frames and obs["alive"] and not compact else ()
        frames: list[Frame] = [self.frames.get(self.name, v) for v in views]
        t_start = time.perf_counter()  # harness time starts after the frames (world work, timed on its own)
        messages = self.prompt(module, obs, n_images=len(frames), **extra)
        backend, model, source = self.backend, self.seat.model, "model"
        if (
            self.seat.modules is not None
            and module not in self.seat.modules
            and self.rest_backend is not None
        ):
            backend, model, source = self.rest_backend, self.seat.rest_model, "rest"
        return await self.caller.call(
            agent=self.name, role=self.role, module=module, obs=obs, messages=messages, frames=frames,
            backend=backend, model=model, ctx=ctx, temperature=self.aria.module_temperature.get(module),
            extra_context={"extra": extra, "strategy": self.strategy, **(context or {})}, t_start=t_start,
            source=source,
        )

    def prompt(
        self, module: str, obs: dict[str, Any], n_images: int = 0, **extra: str
    ) -> list[dict[str, Any]]:
        """The messages of a ``module`` call from the agent's current memory, skills and suspicion (read only:
        building them changes nothing; belief probes read the VOTE prompt through this)."""
        others = [n for n in M.Context(obs, self.rooms).alive if n != self.name]
        profile = self.aria.prompt_profile.get(module, "full")
        if profile.startswith("compact"):
            speech = profile == "compact"  # compact_nospeech: the ablation without what was said
            evidence = self.evidence.compact_lines(speech=speech) if self.evidence is not None else []
            return self.builder.compact(module, obs, evidence=evidence, others=others, speech=speech)
        skills = self.skills.render() if self.aria.reflection == "meeting" else ""
        return self.builder.messages(module, obs, memory=self.memory.render(), skills=skills, others=others,
                                     n_images=n_images, suspicion=self.suspicion.render(others), **extra)

    def _narrate(self, answer: dict[str, Any]) -> str | None:
        """Imposters' private one-line note of intent: the reasoning behind the action."""
        return (answer.get("reasoning") or None) if self.imposter else None

    # -- free roam -----------------------------------------------------------------------------------------
    async def roam(self, obs: dict[str, Any]) -> Action | None:
        self.memory.observe(obs)
        if not self.imposter and self.aria.surveillance:
            action = await self._surveil(obs)
            if action is not None:
                return action
        body = next(
            (b["victim"] for b in obs["bodies_in_view"] if b["victim"] not in self.decided_bodies), None
        )
        if body is not None:
            self.decided_bodies.add(body)
            ans = await self.call(M.REPORT, obs, body=body)
            if ans["should_report"]:
                return Action("report", target=body, narration=self._narrate(ans))
        ctx = M.Context(obs, self.rooms)
        kill_checked = False
        if self.imposter and obs["kill_cooldown_ticks"] == 0 and ctx.crew_in_view:
            kill_checked = True
            action = await self._kill(obs)
            if action is not None:
                return action
        mode, target, plan = await self._plan(obs)
        current = obs["current_action"]
        if current and current["kind"] in MODE_KINDS.get(mode, ()):
            return None  # the running action already does what the plan says
        if mode == "kill" and not kill_checked and ctx.crew_in_view:
            action = await self._kill(obs)
            if action is not None:
                return action
        if mode == "report" and obs["bodies_in_view"]:
            return Action("report", target=obs["bodies_in_view"][0]["victim"], narration=self._narrate(plan))
        if mode == "mission" and ctx.stations:
            ans = await self.call(M.MISSION, obs)
            if ans["station"] is not None:
                kind = "fake_mission" if self.imposter else "mission"
                return Action(kind, station=ans["station"], narration=self._narrate(ans))
        ans = await self.call(M.MOVE, obs)
        if ans["target_player"] != M.WANDER:
            return Action("follow", target=ans["target_player"], narration=self._narrate(ans))
        room = ans["room"] or (target if target in self.rooms else M.fallback_move(ctx)["room"])
        return Action("goto", target=room, narration=self._narrate(ans))

    async def _surveil(self, obs: dict[str, Any]) -> Action | None:
        ans = await self.call(M.SURVEILLANCE, obs)
        new_kill = len(obs["witnessed_kills"]) > self.kills_seen
        self.kills_seen = len(obs["witnessed_kills"])
        if ans["suspect"] != M.NONE:
            if self.evidence is not None:  # kept for the whole match in the evidence block
                self.evidence.flag(obs["tick"], ans["suspect"], ans["detail"] or "suspicious")
            else:
                self.memory.note(f"step {obs['step']}: {ans['detail'] or 'suspicious'} (suspect "
                                 f"{ans['suspect']})")
            await self._update_beliefs(obs, f"you flagged {ans['suspect']} in surveillance: "
                                            f"{ans['detail'] or 'suspicious'}", flagged=ans["suspect"])
        notable = ans["suspect"] != M.NONE or new_kill
        if notable and obs["button_lock_ticks"] == 0:
            sighting = ans["detail"] or f"{ans['suspect']} acting suspiciously"
            if new_kill:
                w = obs["witnessed_kills"][-1]
                sighting = f"{w['killer']} killed {w['victim']} in {w['room']}. " + (ans["detail"] or "")
            e = await self.call(M.EMERGENCY, obs, sighting=sighting.strip())
            if e["should_call"]:
                return Action("button")
        return None

    async def _kill(self, obs: dict[str, Any]) -> Action | None:
        ans = await self.call(M.KILL, obs)
        if ans["decision"] == "KILL":  # after the strike it walks away at once (docs/harness.md, "KILL")
            return Action(
                "kill", target=ans["target"], point=leave_point(self.builder.map, obs, ans["target"]),
                narration=self._narrate(ans),
            )
        if ans["decision"] == "STALK":
            return Action("follow", target=ans["target"], narration=self._narrate(ans))
        # DEFER with a witness in view (more than one crewmate there): move away from the nearest one, as the
        # paper's KILL module does; alone with one crewmate, the planner decides.
        crew = set(M.Context(obs, self.rooms).crew_in_view)
        seen = sorted((p["distance"], p["name"]) for p in obs["players_in_view"] if p["name"] in crew)
        if len(seen) >= 2:
            return Action("flee", target=seen[0][1], narration=self._narrate(ans) or "a witness is here; "
                                                                                     "move away")
        return None

    async def _update_beliefs(self, obs: dict[str, Any], event: str,
                              flagged: str | None = None) -> list[dict[str, Any]]:
        """Semantic memory: one BELIEF call, its deltas clamped. Window memory: a flag's fixed raise, no
        call."""
        if isinstance(self.memory, SemanticMemory):
            ups = (await self.call(M.BELIEF, obs, flagged=flagged, event=event))["suspicion_updates"]
        else:
            ups = [{"player": flagged, "delta": M.FLAG_DELTA}] if flagged else []
        applied = []
        for u in ups:
            d = self.suspicion.update(u["player"], u["delta"], self.aria.suspicion_clamp)
            if d is not None:
                applied.append({"player": u["player"], "delta": d})
        return applied

    async def listen(self, obs: dict[str, Any], speaker: str, text: str) -> None:
        """Another player spoke in the meeting: semantic memory updates its beliefs on it (one BELIEF
        call)."""
        if isinstance(self.memory, SemanticMemory) and obs["alive"] and speaker != self.name:
            await self._update_beliefs(obs, f'{speaker} said: "{text}"')

    async def _plan(self, obs: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        if self.aria.planning == "reactive":
            ans = await self.call(M.PLAN, obs)
            return ans["mode"], ans["target"], ans
        if self.strategy_step is None or obs["step"] - self.strategy_step >= self.aria.strategy_every:
            s = await self.call(M.STRATEGY, obs)
            priority = f" (priority: {s['priority_target']})" if s["priority_target"] != M.NONE else ""
            self.strategy = s["strategy"] + priority
            self.strategy_step = obs["step"]
        ans = await self.call(M.PLAN_SHORT, obs, strategy=self.strategy)
        return ans["mode"], ans["target"], ans

    # -- meetings ------------------------------------------------------------------------------------------
    async def speak(self, obs: dict[str, Any]) -> Action:
        ans = await self.call(M.MEETING, obs)
        if ans["suspicion_cast_on"] != M.NONE:
            self.memory.note(f"I cast suspicion on {ans['suspicion_cast_on']} in a meeting.")
        if ans.get("claims"):  # structured claims; a scripted stand-in's private labels come unrecorded
            intent = (ans.get(M.PRIVATE) or {}).get("intent")
            return Action("speak", text=ans["response_text"] or None, claims=tuple(ans["claims"]),
                          intent=tuple(intent) if intent else None)
        return Action("speak", text=ans["response_text"] or None)

    async def vote(self, obs: dict[str, Any], observer: dict[str, Any] | None = None) -> Action:
        """``observer``: the ideal observer's beliefs for the observer_vote temperament of the scripted expert
        (request context only: never in the prompt)."""
        ans = await self.call(M.VOTE, obs, context={"observer": observer} if observer else None)
        return Action("vote", target=ans["vote_target"])

    async def after_meeting(self, obs: dict[str, Any], outcome: str) -> dict[str, Any]:
        """Remember the meeting; reflect on it when reflection is on. Returns the memory dump."""
        self.memory.on_meeting(outcome)
        applied: list[dict[str, Any]] = []
        if self.aria.reflection == "meeting" and obs["alive"]:
            ans = await self.call(M.REFLECT, obs, outcome=f"Meeting outcome: {outcome}")
            for u in ans["suspicion_updates"]:
                d = self.suspicion.update(u["player"], u["delta"], self.aria.suspicion_clamp)
                if d is not None:
                    applied.append({"player": u["player"], "delta": d})
            if ans["insights"]:
                self.memory.note(ans["insights"])
            self.skills.add(ans["skill_learned"])
        return {"agent": self.name, "role": self.role, "memory": self.memory.dump(),
                "suspicion": self.suspicion.dump(), "skills": list(self.skills.items),
                "strategy": self.strategy, "suspicion_applied": applied}
