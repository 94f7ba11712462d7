"""mau info

Print mau's version, the git commit, package versions and the built-in maps and backends, for bug reports.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def config_from_args(args: argparse.Namespace) -> None:
    return None


def main(cfg: None = None) -> int:
    import json

    from mau.env.backends import available
    from mau.env.map import MAPS_DIR
    from mau.provenance import provenance

    info = provenance()
    info.pop("argv", None)
    info["backends"] = available()
    info["maps"] = sorted(p.stem for p in MAPS_DIR.glob("*.yaml"))
    print(json.dumps(info, indent=1))
    return 0
