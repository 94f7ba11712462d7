"""Config layering (defaults < YAML < command line), unknown keys, one-line errors."""

from __future__ import annotations

import pytest

from mau.commands.play import PlayConfig
from mau.config import load_config, parse_overrides
from mau.errors import ConfigError


def test_yaml_overrides_defaults_and_cli_overrides_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("seed: 3\nworld:\n  game:\n    max_steps: 50\n    roles: paper\n")
    cfg = load_config(PlayConfig, p, parse_overrides(["world.game.max_steps=20", "seed=9"]))
    assert cfg.seed == 9 and cfg.world.game.max_steps == 20 and cfg.world.game.roles == "paper"
    assert cfg.world.game.kill_reach == 3.0  # default kept


def test_unknown_key_fails_with_its_path(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("world:\n  game:\n    kill_reech: 4\n")
    with pytest.raises(ConfigError, match=r"world\.game\.kill_reech: unknown key"):
        load_config(PlayConfig, p)


def test_bad_value_names_field_and_fix():
    with pytest.raises(ConfigError) as e:
        load_config(PlayConfig, None, parse_overrides(["world.game.num_crewmates=0"]))
    assert "world.game.num_crewmates" in str(e.value) and "--set" in str(e.value) and "\n" not in str(e.value)


def test_bad_roles_combination():
    with pytest.raises(ConfigError, match="roles: 'paper' needs 2 imposters"):
        load_config(
            PlayConfig, None, parse_overrides(["world.game.roles=paper", "world.game.num_imposters=1"])
        )


def test_missing_config_file():
    with pytest.raises(ConfigError, match="no such file"):
        load_config(PlayConfig, "nope.yaml")


def test_shipped_configs_load():
    from pathlib import Path

    for path in Path("configs/play").glob("*.yaml"):
        load_config(PlayConfig, path)


def test_list_items_can_be_overridden_by_index(tmp_path):
    from mau.collect.run import CollectConfig

    cfg = load_config(CollectConfig, "configs/collect/smoke.yaml",
                      parse_overrides(["grid.pool.1.model.seed=7", "grid.cases.0.crewmate.memory=window"]))
    assert cfg.grid.pool[1].model.seed == 7 and cfg.grid.pool[0].model.seed == 0
    assert cfg.grid.cases[0].crewmate.memory == "window" and len(cfg.grid.pool) == 3
    with pytest.raises(ConfigError, match="the list pool has 3 items"):
        load_config(CollectConfig, "configs/collect/smoke.yaml", parse_overrides(["grid.pool.5.name=x"]))
