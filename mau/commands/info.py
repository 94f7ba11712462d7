"""mau info

Print mau's version, the git commit, package versions, the accelerator training and local models would use,
and the built-in maps and backends, for bug reports.
"""

from __future__ import annotations

from mau.options import RunOptions

FLAGS: list = []  # no flags
CONFIG = None  # no config


def accelerator() -> str:
    """The GPUs torch sees (names and memory), else what else it would use; "cpu" when none."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "unknown (torch is not installed; pip install -e '.[ml]')"
    import torch

    if torch.cuda.is_available():
        names = [f"{torch.cuda.get_device_name(i)} "
                 f"({torch.cuda.get_device_properties(i).total_memory / 2**30:.0f} GiB)"
                 for i in range(torch.cuda.device_count())]
        return f"cuda: {torch.cuda.device_count()} x " + ", ".join(names)
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps (Apple GPU)"
    return "cpu (no GPU visible to torch)"


def main(cfg: None = None, opts: RunOptions = RunOptions()) -> int:
    import json

    from mau.env.backends import available
    from mau.env.map import MAPS_DIR
    from mau.provenance import provenance

    info = provenance()
    info.pop("argv", None)
    info["accelerator"] = accelerator()
    info["backends"] = available()
    info["maps"] = sorted(p.stem for p in MAPS_DIR.glob("*.yaml"))
    print(json.dumps(info, indent=1))
    return 0
