"""A PettingZoo ``ParallelEnv`` view of the sim (install the ``pettingzoo`` extra).

Observations are the structured dicts of ``SimWorld.observe`` plus an ``action_mask`` (and, with
``frames=True``, the first-person ``frame``). Actions are indices into one ``Discrete`` vocabulary of
structured actions (``env.decode(i)`` shows which); an ``Action`` or an action dict is accepted too, so text
speech and points are possible. Reward: +1 when the match ends to every member of the winning team still
active at the end (docs/game.md; a winner killed or ejected in the ending step gets 0), else 0. An agent
leaves ``agents`` when it is killed or ejected (terminated), and everyone terminates at the ending, TIMEOUT
included (the step budget is a rule of the game, not a truncation: ``truncations`` are always False).

``action_mask`` is a legality mask from what the agent knows: an action it marks is possible now (the right
phase and role, one's own open stations, a target believed alive and not oneself or a teammate, the button
unlocked, a body in view to report, the kill cooldown over, one's turn to speak). What it cannot say without
leaking: a player killed out of the agent's sight still counts as alive, so a follow or kill of that player
can fail; an action that needs walking (a mission, a report, a kill) can still be cut short by the world.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from mau.env.actions import Action
from mau.env.config import WorldConfig
from mau.env.rules import SKIP
from mau.env.sim import SimWorld
from mau.env.state import CREW_OUTCOMES, DISCUSSION, ENDED, IMPOSTER, ROAM, VOTING


class StructuredObservation(spaces.Space):
    """The space of observation dicts (variable-length lists of players, bodies, chat)."""

    def __init__(self, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, dict) and {"name", "role", "phase", "position", "action_mask"} <= set(x)

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        raise NotImplementedError("observations come from the world, they are not sampled")


def action_vocabulary(world: SimWorld) -> list[Action | None]:
    """Index -> structured action. Index 0 keeps the running action (None)."""
    names = [p.name for p in world.cfg.players[: world.cfg.num_players]]
    vocab: list[Action | None] = [None]
    vocab += [Action("goto", target=r) for r in world.map.room_names]
    vocab += [Action("mission", station=s) for s in range(len(world.map.stations))]
    vocab += [Action("fake_mission", station=s) for s in range(len(world.map.stations))]
    for kind in ("kill", "follow", "flee"):
        vocab += [Action(kind, target=n) for n in names]
    vocab += [Action("report"), Action("button"), Action("wait"), Action("look_around")]
    vocab += [Action("speak", text=None)]  # pass
    vocab += [Action("speak", text=f"I suspect {n}.") for n in names]
    vocab += [Action("vote", target=n) for n in names] + [Action("vote", target=SKIP)]
    return vocab


class MauParallelEnv(ParallelEnv):
    metadata = {"name": "mau_among_us_v1", "render_modes": ["rgb_array"], "is_parallelizable": True}

    def __init__(self, config: WorldConfig | None = None, state_mode: str = "ego", frames: bool = False,
                 render_mode: str | None = None):
        from mau.env.backends import make_world

        self.world = make_world(config or WorldConfig())  # config.backend: the sim, or minecraft
        self.state_mode = state_mode
        self.frames = frames
        self.render_mode = render_mode
        self.possible_agents = [p.name for p in self.world.cfg.players[: self.world.cfg.num_players]]
        self.agents: list[str] = []
        self.vocab = action_vocabulary(self.world)
        self._seed_rng = random.Random(0)

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:
        return StructuredObservation()

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(len(self.vocab))

    def decode(self, index: int) -> Action | None:
        return self.vocab[int(index)]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._seed_rng = random.Random(seed)
        else:
            seed = self._seed_rng.randrange(2**31)
        self.world.reset(seed)
        self.agents = [p.name for p in self.world.state.players if p.active]
        obs = {a: self._observe(a) for a in self.agents}
        return obs, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        decoded = {}
        for agent, a in actions.items():
            if isinstance(a, (int, np.integer)):
                if not 0 <= int(a) < len(self.vocab):
                    raise ValueError(f"action {a} for {agent}: not in Discrete({len(self.vocab)})")
                decoded[agent] = self.vocab[int(a)]
            else:
                decoded[agent] = a
        before = list(self.agents)
        result = self.world.step(decoded)
        st = self.world.state
        rewards = {a: 0.0 for a in before}
        terminations = {a: False for a in before}
        truncations = {a: False for a in before}
        if st.phase == ENDED:
            crew_won = st.outcome in CREW_OUTCOMES
            for a in before:
                p = st.player(a)
                won = (p.role == IMPOSTER) != crew_won
                rewards[a] = 1.0 if won and p.active else 0.0  # docs/game.md: winners still active at the end
                terminations[a] = True
            self.agents = []
        else:
            for a in before:
                if not st.player(a).active:
                    terminations[a] = True
            self.agents = [a for a in before if not terminations[a]]
        obs = {a: self._observe(a) for a in before}
        infos = {a: {"action_result": result.results.get(a), "phase": st.phase, "outcome": st.outcome}
                 for a in before}
        return obs, rewards, terminations, truncations, infos

    def _observe(self, agent: str) -> dict[str, Any]:
        obs = self.world.observe(agent, self.state_mode)
        obs["action_mask"] = self._mask(agent, obs)
        if self.frames and obs["alive"]:
            obs["frame"] = self.world.render(agent)
        return obs

    def _mask(self, agent: str, obs: dict[str, Any]) -> np.ndarray:
        """The legality mask (module docstring): built from the observation only, so it leaks nothing."""
        mask = np.zeros(len(self.vocab), dtype=np.int8)
        if not obs["alive"]:
            mask[0] = 1
            return mask
        phase, imp = obs["phase"], obs["role"] == IMPOSTER
        mates = set(obs.get("teammates", []))
        gone = set(obs["known_dead"]) | {e["name"] for e in obs["ejections"]}
        believed_alive = {p["name"] for p in obs["roster"]} - gone - {agent}
        if imp:
            stations = {m["station"] for m in obs["fake_missions"]}
        else:
            stations = {m["station"] for m in obs["missions"] if not m["done"]}
        for i, a in enumerate(self.vocab):
            if a is None:
                ok = phase != VOTING
            elif phase == ROAM:
                k = a.kind
                if k in ("speak", "vote"):
                    ok = False
                elif k == "kill":
                    ok = imp and a.target in believed_alive - mates and obs.get("kill_cooldown_ticks", 1) == 0
                elif k == "mission":
                    ok = not imp and a.station in stations
                elif k == "fake_mission":
                    ok = imp and a.station in stations
                elif k in ("follow", "flee"):
                    ok = a.target in believed_alive
                elif k == "report":
                    ok = bool(obs["bodies_in_view"])
                elif k == "button":
                    ok = obs["button_lock_ticks"] == 0
                else:  # goto a room, wait, look_around
                    ok = True
            elif phase == DISCUSSION:
                ok = a.kind == "speak" and bool(obs["meeting"] and obs["meeting"]["your_turn"])
            else:
                alive = set(obs["meeting"]["alive_players"]) if obs["meeting"] else set()
                ok = a.kind == "vote" and (a.target == SKIP or (a.target in alive and a.target != agent))
            mask[i] = ok
        if not mask.any():
            mask[0] = 1
        return mask

    def render(self):
        return self.world.topdown()

    def close(self) -> None:
        close = getattr(self.world, "close", None)  # the minecraft backend ends its host process
        if close is not None:
            close()


def parallel_env(**kwargs: Any) -> MauParallelEnv:
    return MauParallelEnv(**kwargs)
