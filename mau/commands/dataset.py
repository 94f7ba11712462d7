"""mau dataset --runs runs/collect/smoke --filter bcwin --out runs/datasets/smoke-bcwin

Build a behaviour-cloning dataset (format ``mau.dataset`` v1, docs/datasets.md) from match folders: one
(X, S, Y) example per crewmate call that the model answered itself (X the call's frames, S its messages, Y its
raw output), kept by a filter (``bcwin``, ``bcvote`` or the union ``bcwin+vote``), split by match into
train / validation / test. ``--runs`` takes collect runs, match folders, or any folder holding match folders.
The output is a ``datasets.DatasetDict`` (``datasets.load_from_disk(out)``) in TRL's conversational vision
format, with a dataset card (README.md), the resolved config and a versioned header (dataset.json). Every
build runs the role-leak audit; a leak fails it and writes nothing. Damaged lines are reported and counted.
Rebuilding into a finished dataset folder needs ``--resume`` (which keeps it as it is). Needs the ``ml`` extra
(``datasets``).
"""

from __future__ import annotations

from mau.commands.common import DRY_RUN, FORCE, KEEP, NO_PROGRESS, Flag, config_flags
from mau.datasets.config import DatasetConfig, SplitConfig  # noqa: F401  (re-exported)
from mau.options import RunOptions

FLAGS = [*config_flags("split.seed=1"),
         Flag("--runs", "collect runs, match folders or folders of them", key="runs", type=list),
         Flag("--filter", "bcwin, bcvote, bcwin+vote or all (default bcwin)", key="filter"),
         Flag("--out", "dataset folder to write", key="out"),
         KEEP, FORCE, NO_PROGRESS, DRY_RUN]
CONFIG = "mau.datasets.config:DatasetConfig"


def main(cfg: DatasetConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.datasets.build import build_dataset, is_dataset_dir, read_dataset_header
    from mau.errors import ConfigError, MauError
    from mau.rundir import RunDir

    run = RunDir.choose(cfg.out, "datasets", cfg.filter.replace("+", "-"), "dataset")
    out = run.path
    if opts.dry_run:
        from mau.datasets.sources import find_matches

        found = find_matches(cfg.runs) if cfg.runs else []
        state = "finished (kept with --resume)" if is_dataset_dir(out) else "to build"
        print(f"mau dataset --dry-run: filter {cfg.filter} over {len(found)} match folders from "
              f"{len(cfg.runs)} inputs -> {out} ({state}; nothing written)")
        return 0
    if run.keep_finished(is_dataset_dir(out), cfg.resume, opts.force):
        h = read_dataset_header(out)
        ex = h["examples"]
        print(f"{h['filter']}: " + " ".join(f"{k}={v}" for k, v in ex.items()) + f" (already finished) -> "
                                                                                 f"{out}")
        return 0
    if not cfg.runs:
        raise ConfigError("runs: no input; give --runs DIR [DIR ...] (collect runs or match folders)")
    try:
        import datasets  # noqa: F401
    except ImportError:
        raise MauError("mau dataset needs the datasets package: pip install -e '.[ml]'") from None
    cfg = cfg.model_copy(update={"out": str(out)})
    _, stats = build_dataset(cfg, out, progress=opts.progress)
    s = stats.summary()
    ex, sk = s["examples"], s["skipped"]
    skipped = " ".join(f"{k}={v}" for k, v in sk.items() if v or k != "text_only")
    print(f"{cfg.filter}: " + " ".join(f"{k}={v}" for k, v in ex.items())
          + f" examples from {sum(s['matches'].values())} matches; skipped: {skipped}; "
          f"damaged inputs: {stats.n_problems} -> {out}")
    return 0
