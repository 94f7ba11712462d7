"""The PettingZoo view passes PettingZoo's own API and seed tests."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from mau.env.pettingzoo import parallel_env  # noqa: E402


def test_parallel_api_test():
    parallel_api_test(parallel_env(), num_cycles=1000)


def test_parallel_api_test_privileged():
    parallel_api_test(parallel_env(state_mode="privileged"), num_cycles=300)


def test_parallel_seed_test():
    parallel_seed_test(lambda: parallel_env(), num_cycles=300)


def test_rewards_go_to_the_winning_team_and_dead_agents_leave():
    env = parallel_env()
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    total: dict[str, float] = {}
    while env.agents:
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rew, term, trunc, info = env.step(acts)
        for a, r in rew.items():
            total[a] = total.get(a, 0.0) + r
    st = env.world.state
    assert st.outcome is not None
    winners = {a for a, r in total.items() if r > 0}
    crew_won = st.outcome in ("CREWMATE WIN", "MISSION WIN")
    alive_at_end = {p.name for p in st.players if p.active}
    expected = {p.name for p in st.players if p.name in alive_at_end and (p.role == "crewmate") == crew_won}
    assert winners == expected


def test_frames_in_observations():
    from mau.env.config import FramesConfig, WorldConfig

    env = parallel_env(config=WorldConfig(frames=FramesConfig(width=64, height=36)), frames=True)
    obs, _ = env.reset(seed=0)
    assert obs["James"]["frame"].shape == (36, 64, 3)
