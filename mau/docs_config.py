"""Render the config reference (docs/config.md) from the config models' field descriptions.

Used by ``tests/test_docs.py`` to keep docs/config.md in step with the code:
``python -m mau.docs_config > docs/config.md``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

HEADER = """# Config reference

Every verb reads a YAML config over documented defaults: **defaults < YAML (`--config`) < command line**
(`--set dotted.key=value`, plus each verb's own flags such as `--seed` and `--out`). Unknown keys are errors.
Each run writes its resolved config into its own folder. This page is generated from the code
(`python -m mau.docs_config > docs/config.md`); a test fails when it is out of date.
"""


def _default(field: Any) -> str:
    if field.is_required():
        return "(required)"
    if field.default_factory is not None:
        value = field.default_factory()
        if isinstance(value, BaseModel):
            return "(section)"
        if isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
            return "{" + ", ".join(f"{k}: (section)" for k in value) + "}"
        if isinstance(value, list) and value and isinstance(value[0], BaseModel):
            return json.dumps([v.model_dump() for v in value])[:60] + "..."
        return json.dumps(value)
    return json.dumps(field.default)


def table(model: type[BaseModel], prefix: str = "") -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            rows.append(f"| `{key}` | (section) | {field.description or ''} |")
            rows += table(ann, key + ".")
        # dict[str, Model]
        elif len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], BaseModel):
            rows.append(f"| `{key}` | `{_default(field)}` | {field.description or ''} |")
            rows += table(args[1], key + ".<key>.")
        elif len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):  # list[Model]
            default = "(required)" if field.is_required() else f"{len(field.default_factory())} item(s)"
            rows.append(f"| `{key}` | {default} | {field.description or ''} |")
            rows += table(args[0], key + "[i].")
        else:
            rows.append(f"| `{key}` | `{_default(field)}` | {field.description or ''} |")
    return rows


def render() -> str:
    from mau.claimsread.config import ClaimsConfig, JudgeConfig
    from mau.collect.arms_race import ArmsRaceConfig
    from mau.collect.run import CollectConfig
    from mau.commands.fork import ForkConfig
    from mau.commands.quickstart import QuickstartConfig
    from mau.commands.tiny_model import TinyModelConfig
    from mau.datasets.config import DatasetConfig
    from mau.eval.config import EvalConfig
    from mau.eval.report_configs import BeliefsConfig
    from mau.rl.config import RLConfig
    from mau.runner import PlayConfig
    from mau.student.config import StudentCurveConfig, StudentRLConfig, StudentTrainConfig
    from mau.train.config import TrainConfig

    sections = [("mau play", PlayConfig), ("mau collect", CollectConfig), ("mau dataset", DatasetConfig),
                ("mau train", TrainConfig), ("mau eval", EvalConfig), ("mau quickstart", QuickstartConfig),
                ("mau fork", ForkConfig), ("mau rl", RLConfig), ("mau student-train", StudentTrainConfig),
                ("mau student-curve", StudentCurveConfig),
                ("mau student-rl", StudentRLConfig), ("mau tiny-model", TinyModelConfig),
                ("mau beliefs", BeliefsConfig), ("mau arms-race", ArmsRaceConfig),
                ("mau claims", ClaimsConfig), ("mau judge", JudgeConfig)]
    out = [HEADER]
    for title, model in sections:
        out += [f"## `{title}`", "", (model.__doc__ or "").strip(), "", "| key | default | meaning "
                                                                        "|", "|---|---|---|"]
        out += table(model)
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
