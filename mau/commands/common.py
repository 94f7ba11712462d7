"""What every verb shares: its flags declared once as a table of ``Flag``s, and one function from parsed
flags to a validated config (defaults < ``--config`` YAML < ``--set`` < the verb's own flags) and run-time
options.

A flag either overrides a config key (``key``), or sets a run-time option (``option``: a ``RunOptions`` field,
never part of the config). An error in a value that came from a flag names the flag.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mau.options import RunOptions

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


@dataclass(frozen=True)
class Flag:
    """One command-line flag: ``--out`` -> config key ``out`` (or a run-time option)."""

    name: str  # "--out", or a positional name ("target")
    help: str
    key: str | None = None  # dotted config key it overrides; None for an option or a plain argument
    type: Any = str  # str, int, float, bool (a switch), list (one or more values)
    option: str | None = None  # the RunOptions field it sets
    choices: tuple[str, ...] | None = None
    default: Any = None  # only for flags that are neither key nor option (bench)

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")


def config_flags(set_example: str) -> list[Flag]:
    """--config and --set; ``set_example`` is a valid override for this verb (shown in its help)."""
    return [Flag("--config", "YAML config (its keys override the defaults; see docs/config.md)"),
            Flag("--set", f"override one config key, e.g. --set {set_example} (repeatable)", type="append")]


# Flags several verbs share, by meaning.
OUT = Flag("--out", "run folder", key="out")
RESUME = Flag("--resume", "continue the run in --out", key="resume", type=bool)
SHARD = Flag("--shard", "I/N: play shard I of N (0-based)", key="shard")
WORKERS = Flag("--workers", "worker processes", key="workers", type=int)
IN_FLIGHT = Flag("--matches-in-flight", "matches each worker plays at once (for API / vLLM experts)",
                 key="matches_in_flight", type=int)
NO_PROGRESS = Flag("--no-progress", "no progress bar (e.g. in batch logs)", type=bool, option="progress")
DRY_RUN = Flag("--dry-run", "print the plan (and for runs of matches: calls, tokens, cost and disk "
               "expected); write nothing", type=bool, option="dry_run")
MAX_FAILURES = Flag("--max-failures", "go on past N failed matches (default 0: stop at the first; a collect "
                                      "that ends with failed matches exits with code 3)",
                    type=int, option="max_failures")
FORCE = Flag("--force", "replace a finished --out", type=bool, option="force")
KEEP = Flag("--resume", "accept a finished --out folder and keep it", key="resume", type=bool)


def config_for(module: Any, args: argparse.Namespace) -> Any:
    """A verb's config from its flags: ``module.config_from_args(args)`` where the verb has special rules,
    else ``load`` of ``module.CONFIG`` ("package.module:Class", imported only now; None for verbs without
    one)."""
    if hasattr(module, "config_from_args"):
        return module.config_from_args(args)
    if module.CONFIG is None:
        return None
    import importlib

    where, name = module.CONFIG.split(":")
    return load(getattr(importlib.import_module(where), name), args, module.FLAGS)


def add_flags(p: argparse.ArgumentParser, flags: list[Flag]) -> None:
    for f in flags:
        kw: dict[str, Any] = {"help": f.help}
        if f.type is bool:
            kw["action"] = "store_true"
        elif f.type == "append":
            kw.update(action="append", default=[], metavar="KEY=VALUE")
        elif f.type is list:
            kw.update(nargs="+", metavar="DIR")
        else:
            kw["type"] = f.type
        if f.choices:
            kw["choices"] = f.choices
        if f.default is not None:
            kw["default"] = f.default
        p.add_argument(f.name, **kw)


def given(args: argparse.Namespace, f: Flag) -> bool:
    v = getattr(args, f.dest, None)
    return v is not None and v is not False  # 0 is a value given (--workers 0 must be refused, not ignored)


def overrides(args: argparse.Namespace, flags: list[Flag]) -> tuple[dict[str, Any], dict[str, str]]:
    """``--set`` items and the verb's flags as one nested override dict, and which flag set which key."""
    from mau.config import parse_overrides, set_dotted

    over = parse_overrides(getattr(args, "set", None))
    by_flag: dict[str, str] = {}
    for f in flags:
        if f.key and given(args, f):
            set_dotted(over, f.key, getattr(args, f.dest))
            by_flag[f.key] = f.name
    return over, by_flag


def options(args: argparse.Namespace, flags: list[Flag], source: str | None = None) -> RunOptions:
    """The run-time options the flags set (``--no-progress`` turns progress off)."""
    kw: dict[str, Any] = {"source": source if source is not None else getattr(args, "config", None)}
    for f in flags:
        if f.option and given(args, f):
            kw[f.option] = False if f.name == "--no-progress" else getattr(args, f.dest)
    return RunOptions(**kw)


def load(model: type[M], args: argparse.Namespace, flags: list[Flag], path: str | Path | None = None) -> M:
    """Defaults < YAML (``path``, else ``--config``) < ``--set`` < flags, validated into ``model``; an error
    names the flag, the --set item or the file that gave the bad value."""
    from pydantic import ValidationError

    from mau.config import merge, read_yaml, validation_message
    from mau.errors import ConfigError

    path = path if path is not None else getattr(args, "config", None)
    data = read_yaml(path) if path else {}
    over, by_flag = overrides(args, flags)
    try:
        return model.model_validate(merge(data, over))
    except ValidationError as e:
        loc = ".".join(str(p) for p in e.errors()[0]["loc"])
        flag = next((name for key, name in by_flag.items() if loc == key or loc.startswith(key + ".")), None)
        in_set = _has(parse_sets(args), loc)
        source = flag or ("--set" if in_set else str(path) if path else "config")
        fix = f"fix the value of {source}" if source.startswith("--") else None
        raise ConfigError(validation_message(e, source, fix)) from None


def model_folder_run(out: str, label: str, verb: str, planned: str, kept: str, resume: bool,
                     opts: RunOptions) -> Any:
    """The start of a verb that writes a local model folder (``mau student``, ``mau tiny-model``): its run
    folder, or None when there is nothing to do (a dry run prints ``planned``; a finished folder kept prints
    ``kept``, ``{run}`` in them replaced by the folder). Otherwise the ml extra is checked and the hub's
    progress bars are off (the verb's output is its one line)."""
    from mau.rundir import RunDir

    run = RunDir(out, label)
    if opts.dry_run:
        print(f"{verb} --dry-run: {planned.replace('{run}', str(run))}")
        return None
    if run.keep_finished((run / "config.json").is_file(), resume, opts.force):
        print(kept.replace("{run}", str(run)))
        return None
    require_modules(verb)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return run


def require_modules(verb: str, modules: tuple[str, ...] = ("torch", "transformers")) -> None:
    """A one-line error naming the first missing module when a verb needs the ml extra (heavy imports stay out
    of start-up: this only asks importlib where they are)."""
    import importlib.util

    from mau.errors import MauError

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MauError(f"{verb} needs the ml extra ({missing[0]} is missing): pip install -e '.[ml]'")


EXTRACT_FLAGS = [
    Flag("--extract-model", "read utterances without structured claims with this model ('spot': no model; a "
                            "local folder for --extract-backend lm or hf)", key="extract_model"),
    Flag("--extract-backend", "backend of --extract-model (default openai)", key="extract_backend"),
    Flag("--extract-base-url", "endpoint of --extract-model, e.g. http://127.0.0.1:8000/v1",
         key="extract_base_url"),
    Flag("--extract-api-key-env", "environment variable holding the key of --extract-model's endpoint",
         key="extract_api_key_env"),
    Flag("--extract-max-tokens", "the extractor's completion budget per utterance (default 512)",
         key="extract_max_tokens", type=int),
    Flag("--extract-retries", "asks again after an answer without a claims list (default 2)",
         key="extract_retries", type=int),
    Flag("--extract-corpus", "labelled file the extractor's F1 is measured on (default: the evaluation set "
                             "of free speech, mau/claimsread/data/claims_speech.jsonl; docs/claims.md)",
         key="extract_corpus"),
    Flag("--extract-split", "the split of that file it is measured on (default: every line; the synthetic "
                            "corpus mau/claimsread/data/claims_corpus.jsonl has dev and held)",
         key="extract_split"),
    Flag("--extract-limit", "measure on the first N sentences of the split only (slow local models)",
         key="extract_limit", type=int),
    Flag("--allow-weak-extractor", "go on even when the extractor's F1 is below 0.9 (the report says so)",
         key="allow_weak_extractor", type=bool),
]


def check_extract(cfg: Any) -> None:
    """The extraction flags of ``mau claims`` and ``mau judge`` (``ExtractFields``)."""
    from mau.errors import ConfigError

    if cfg.extract_corpus and not Path(cfg.extract_corpus).is_file():
        raise ConfigError(f"--extract-corpus {cfg.extract_corpus}: no such file; give a labelled corpus "
                          "(docs/claims.md, 'The labelled corpus')")
    if cfg.extract_model and cfg.extract_model != "spot" and cfg.extract_backend == "openai" \
            and not cfg.extract_base_url:
        raise ConfigError("--extract-base-url: needed for --extract-model with the openai backend (the "
                          "endpoint that serves it)")
    if cfg.extract_limit is not None and cfg.extract_limit < 1:
        raise ConfigError("--extract-limit: must be at least 1")
    if cfg.extract_retries < 0:
        raise ConfigError("--extract-retries: must be 0 or more")


def check_run_folders(runs: list[str], resamples: int | None = None) -> None:
    """The RUN arguments of the report verbs (beliefs, claims, judge) are folders; ``--resamples`` at least
    1."""
    from mau.errors import ConfigError

    for r in runs:
        if not Path(r).is_dir():
            raise ConfigError(f"RUN {r}: no such folder; give a collect or eval run folder or a match folder")
    if resamples is not None and resamples < 1:
        raise ConfigError("--resamples: must be at least 1")


def require_matches(runs: list[str]) -> None:
    """What the report verbs read before writing anything: each RUN a run folder or a match folder with a
    finished match (a folder that is no run is refused, never reported as 0 matches)."""
    from mau import schema as F
    from mau.errors import MauError
    from mau.matchdir import finished_matches

    for r in runs:
        if not (Path(r) / F.MATCH_HEADER).is_file() and not (Path(r) / F.MATCHES_DIR).is_dir():
            raise MauError(f"RUN {r}: neither a run folder (with {F.MATCHES_DIR}/) nor a match folder (with "
                           f"{F.MATCH_HEADER}); give a collect or eval run folder or a match folder")
        if not finished_matches(r):
            raise MauError(f"RUN {r}: no finished match in it (every match failed or is still playing); give "
                           "a run with finished matches")


def parse_sets(args: argparse.Namespace) -> dict[str, Any]:
    from mau.config import parse_overrides

    return parse_overrides(getattr(args, "set", None))


def _has(tree: dict[str, Any], dotted: str) -> bool:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True
from mau.rundir import dated_run_dir  # noqa: E402,F401  (re-exported for older callers)
