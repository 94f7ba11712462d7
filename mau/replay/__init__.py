"""Exact replay of recorded sim matches and counterfactual forks of their decisions (docs/replay.md)."""
