"""The paper's RQ2 grid as config (issue 9, part 2): 12 models, round robin with self-play, the four cases
with the paper's harness on both sides, 2 repetitions = 1,152 matches; the open-weight subset likewise."""

from __future__ import annotations

from collections import Counter

import pytest

from mau.collect.grid import enumerate_grid, seats_for
from mau.collect.run import CollectConfig
from mau.config import load_config

PAPER_POOL = {
    "gpt-4.1-mini", "gpt-5-mini", "gpt-5", "qwen3.5-27b", "qwen3.5-9b", "qwen3.6-27b", "kimi-k2.5",
    "gemini-2.5-flash", "gemini-3.1-flash-lite-preview", "gemini-3-flash-preview", "gemma-4-26b-a4b",
    "gemma-4-31b",
}
CREW = {"1": ("semantic", "reactive"), "2": ("window", "hierarchical")}
IMPOSTER = {
    "1A": ("semantic", "reactive"), "1B": ("window", "hierarchical"), "2A": ("window", "hierarchical"),
    "2B": ("window", "reactive"),
}


def _check_cases(cfg: CollectConfig) -> None:
    assert [c.name for c in cfg.grid.cases] == ["1A", "1B", "2A", "2B"]
    for c in cfg.grid.cases:
        for side, (memory, planning) in (("crewmate", CREW[c.name[0]]), ("imposter", IMPOSTER[c.name])):
            a = getattr(c, side)
            assert (a.memory, a.planning) == (memory, planning), (c.name, side)
            assert (a.state, a.reflection, a.prompt_style) == ("privileged", "meeting", "minimal"), (
                c.name, side,
            )


@pytest.mark.parametrize("path,n_models,n_matches", [("configs/collect/rq2.yaml", 12, 1152),
                                                      ("configs/collect/rq2_local.yaml", 5, 200)])
def test_rq2_plan(path, n_models, n_matches):
    cfg = load_config(CollectConfig, path)
    specs = enumerate_grid(cfg.grid)
    assert len(specs) == n_matches == n_models * n_models * 4 * 2
    pairs = Counter((s.imposter_model, s.crewmate_model) for s in specs)
    assert len(pairs) == n_models * n_models and set(pairs.values()) == {8}  # 4 cases x 2 reps, self-play in
    assert Counter(s.case for s in specs) == {c: n_models * n_models * 2 for c in ("1A", "1B", "2A", "2B")}
    _check_cases(cfg)
    for s in specs[:: max(1, len(specs) // 50)]:
        seats = seats_for(cfg.grid, s)
        assert seats["imposter"].aria == next(c for c in cfg.grid.cases if c.name == s.case).imposter
    assert all(p.model.backend == "openai" and p.model.api_key_env in (None, "OPENROUTER_API_KEY")
               for p in cfg.grid.pool)
    if n_models == 12:
        assert {p.model.model.split("/")[-1] for p in cfg.grid.pool} == PAPER_POOL
