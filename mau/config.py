"""Config layering: model defaults < YAML file < command line. Unknown keys are errors, reported on one line.

Command-line overrides are ``--set dotted.key=value`` (the value is read as YAML: ``--set
world.game.max_steps=50``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from mau.errors import ConfigError
from mau.options import RunOptions  # noqa: F401  (re-exported)

M = TypeVar("M", bound=BaseModel)


class Model(BaseModel):
    """Base for every config model: unknown keys are errors, never silently dropped."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["a.b=1", "c=x"]`` -> ``{"a": {"b": 1}, "c": "x"}``."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: write it as dotted.key=value")
        key, raw = item.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            value = raw
        set_dotted(out, key.strip(), value)
    return out


def set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part} is not a section")
    node[parts[-1]] = value


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Recursive merge; ``over`` wins. A list is replaced, unless the override addresses its items by index
    (``--set grid.pool.0.model.base_url=...``)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        elif isinstance(v, dict) and isinstance(out.get(k), list) and v and all(str(i).isdigit() for i in v):
            items = list(out[k])
            for i, item in v.items():
                i = int(i)
                if i >= len(items):
                    raise ConfigError(f"--set {k}.{i}: the list {k} has {len(items)} items (indices from 0)")
                items[i] = (
                    merge(items[i], item) if isinstance(item, dict) and isinstance(items[i], dict) else item
                )
            out[k] = items
        else:
            out[k] = v
    return out


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config {path}: no such file; give the path of a YAML config (see configs/)")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({str(e).splitlines()[0]}); fix the file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return data


def validation_message(err: ValidationError, source: str, fix: str | None = None) -> str:
    """The first error of a pydantic validation as one line naming the field and the fix."""
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
    if e["type"] == "extra_forbidden":
        return (f"{source}: {loc}: unknown key; remove it or fix its spelling (keys are listed in "
                f"docs/config.md)")
    got = e.get("input")
    shown = f" (got {got!r})" if got is not None and not isinstance(got, (dict, list)) else ""
    return f"{source}: {loc}: {e['msg']}{shown}; {fix or f'fix it in the YAML or with --set {loc}=...'}"


def build(model: type[M], data: dict[str, Any], source: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(validation_message(e, source)) from None


def load_config(model: type[M], path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> M:
    """Defaults < YAML at ``path`` < ``overrides`` (a nested dict), validated into ``model``."""
    data = read_yaml(path) if path else {}
    if overrides:
        data = merge(data, overrides)
    source = str(path) if path else "config"
    return build(model, data, source)


def dump_yaml(model: BaseModel) -> str:
    return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False)

