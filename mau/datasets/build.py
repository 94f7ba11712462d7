"""Build a behaviour-cloning dataset (format ``mau.dataset`` v1) from match folders, streaming.

One pass over the matches, in path order; each match goes whole to the split its id hashes to, and each call
record is read once. Rows go to one ``datasets`` ArrowWriter per split (bounded batches), so memory stays flat
however large the corpus. Everything is written into a hidden staging folder beside the output, which is
renamed into place last: after an error (a role leak, an unknown match format) nothing is left at ``out``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

from mau import schema as F
from mau.datasets.audit import Auditor, input_text
from mau.datasets.beliefs import row_beliefs
from mau.datasets.card import MAX_LISTED_PROBLEMS, BuildStats, render_card
from mau.datasets.config import DatasetConfig
from mau.datasets.filters import VOTE_MODULE, definition, is_expert_example, parse_spec, select
from mau.datasets.sources import MatchInfo, Problem, find_matches, iter_calls, load_match
from mau.errors import MauError
from mau.infer.learnability import cross_validated_accuracy, vote_rows
from mau.rundir import make_staging
from mau.schema import CREWMATE

# damaged inputs printed as they are met; all are counted and the first 100 listed in the card
PRINTED_PROBLEMS = 20
MIN_LEARNABILITY_VOTES = 20  # fewer expert votes: no learnability figure in the card (two folds need both)
BUILD_DIR = ".build"  # inside the staging folder: the per-split Arrow files before save_to_disk


def features():
    """The columns of every split (also of an empty one)."""
    from datasets import Features, Image, List, Value

    s, i64 = Value("string"), Value("int64")
    part = {F.DS_CONTENT_TYPE: s, F.DS_CONTENT_TEXT: s}
    cols: dict[str, Any] = {
        F.DS_MESSAGES: List({F.ROLE: s, F.DS_CONTENT: List(part)}), F.DS_IMAGES: List(Image()), F.MATCH: s,
        F.CALL_ID: s, F.DS_RUN: s, F.SEED: i64, F.STEP: i64, F.TICK: i64, F.PHASE: s, F.MODULE: s, F.AGENT: s,
        F.ROLE: s, F.MODEL: s, F.BACKEND: s, F.OUTCOME: s, F.DS_CREW_WON: Value("bool"),
        **{axis: s for axis in F.DS_HARNESS_AXES}, F.DS_FILTERS: List(s), F.DS_N_IMAGES: Value("int32"),
        F.DS_PARSED_JSON: s, F.DS_RECORD_JSON: s, F.DS_BELIEFS_JSON: s,
    }
    return Features(cols)


def split_of(match_id: str, seed: int, fractions: dict[str, float]) -> str:
    """train / validation / test for a match: a SHA-256 of (seed, match id) read as a number in [0, 1)."""
    h = hashlib.sha256(f"{seed}\x00{match_id}".encode()).digest()
    u = int.from_bytes(h[:8], "big") / 2**64
    edge = 0.0
    for split in F.DATASET_SPLITS:
        edge += fractions[split]
        if u < edge:
            return split
    return F.DATASET_SPLITS[-1]  # u within rounding of 1.0


def convert_messages(call: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The recorded messages in TRL's conversational vision format, plus the assistant's raw output; and the
    image paths (relative to the match folder) in the order of their placeholders."""
    out, paths = [], []
    for m in call[F.MESSAGES]:
        content = m.get(F.DS_CONTENT)
        if isinstance(content, str):
            parts = [{F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: content}]
        else:
            parts = []
            for p in content or []:
                if p.get(F.DS_CONTENT_TYPE) == "image":
                    parts.append({F.DS_CONTENT_TYPE: "image", F.DS_CONTENT_TEXT: None})
                    paths.append(str(p.get(F.IMAGE_PATH)))
                else:
                    parts.append(
                        {F.DS_CONTENT_TYPE: "text", F.DS_CONTENT_TEXT: str(p.get(F.DS_CONTENT_TEXT, ""))}
                    )
        out.append({F.ROLE: str(m.get(F.ROLE)), F.DS_CONTENT: parts})
    out.append({F.ROLE: "assistant", F.DS_CONTENT: [{F.DS_CONTENT_TYPE: "text",
                                                     F.DS_CONTENT_TEXT: call[F.RAW_OUTPUT]}]})
    return out, paths


def load_images(match: MatchInfo, call: dict[str, Any], paths: list[str],
                problem: Callable[[Problem], None]) -> list[dict[str, Any]] | None:
    """The JPEG bytes as recorded (``Image()`` values with embedded bytes), or None if one is missing."""
    images = []
    for rel in paths:
        p = match.path / rel
        # Only files inside the match folder (a record is data, never a path to anywhere else).
        if os.path.isabs(rel) or ".." in Path(rel).parts or not p.is_file():
            problem(Problem("missing_image", str(match.path / rel), 0,
                            f"missing image file of call {call[F.CALL_ID]}; example skipped"))
            return None
        images.append({"bytes": p.read_bytes(), "path": f"{match.match_id}/{rel}"})
    return images


def make_row(call: dict[str, Any], match: MatchInfo, tags: list[str], messages: list[dict[str, Any]],
             images: list[dict[str, Any]]) -> dict[str, Any]:
    harness = call.get(F.HARNESS) or {}
    record = {k: v for k, v in call.items() if k != F.MESSAGES}
    return {
        F.DS_MESSAGES: messages, F.DS_IMAGES: images,
        F.MATCH: match.match_id, F.CALL_ID: str(call[F.CALL_ID]), F.DS_RUN: match.run,
        F.SEED: int(call.get(F.SEED, match.header.get(F.SEED, -1))), F.STEP: int(call.get(F.STEP, -1)),
        F.TICK: int(call[F.TICK]), F.PHASE: call.get(F.PHASE), F.MODULE: str(call[F.MODULE]),
        F.AGENT: str(call[F.AGENT]), F.ROLE: str(call[F.ROLE]), F.MODEL: call.get(F.MODEL),
        F.BACKEND: call.get(F.BACKEND), F.OUTCOME: match.outcome, F.DS_CREW_WON: match.crew_won,
        **{axis: harness.get(axis) for axis in F.DS_HARNESS_AXES},
        F.DS_FILTERS: tags, F.DS_N_IMAGES: len(images),
        F.DS_PARSED_JSON: json.dumps(call.get(F.PARSED)), F.DS_RECORD_JSON: json.dumps(record),
        F.DS_BELIEFS_JSON: row_beliefs(call),
    }


class TokenCounter:
    """Tokens of a tokenizer (``tokenizer: <path>``), else whitespace-separated words as an estimate."""

    def __init__(self, path: str | None):
        self.tok = None
        if path:
            from transformers import AutoTokenizer

            try:
                self.tok = AutoTokenizer.from_pretrained(path)
            except (OSError, ValueError) as e:
                raise MauError(f"tokenizer {path}: cannot be loaded ({str(e).splitlines()[0][:120]}); "
                               "give a local tokenizer or model folder, or leave tokenizer unset") from None
        self.unit = f"tokens ({path})" if path else "whitespace-separated words (an estimate of tokens)"

    def __call__(self, text: str) -> int:
        if self.tok is None:
            return len(text.split())
        return len(self.tok(text, add_special_tokens=False)["input_ids"])


def read_dataset_header(path: str | Path) -> dict[str, Any]:
    """Read and check a dataset folder's header; refuse a format or version this mau does not know."""
    from mau.formats import read_versioned_header

    return read_versioned_header(
        Path(path) / F.DATASET_HEADER, fmt=F.DATASET_FORMAT, version=F.DATASET_FORMAT_VERSION, what="dataset",
        missing=f"{path}: no {F.DATASET_HEADER}; not a mau dataset folder (or an unfinished build)",
        redo="build it again",
        other_version="rebuild it with `mau dataset` from its match folders, or install the mau version that "
                      "wrote it (see docs/datasets.md)")


def is_dataset_dir(path: str | Path) -> bool:
    return (Path(path) / F.DATASET_HEADER).is_file()


class Built(NamedTuple):
    """What a build wrote: the dataset header and the build's counts."""

    header: dict[str, Any]
    stats: BuildStats


def build_dataset(cfg: DatasetConfig, out: Path, warn: Callable[[str], None] | None = None,
                  progress: bool = True) -> Built:
    """Build ``cfg`` (a ``DatasetConfig``) into ``out`` (which must not hold a dataset); return the header and
    the statistics. Raises MauError (one line) on a role leak or an unreadable match; then nothing is
    written."""
    import yaml
    from datasets.arrow_writer import ArrowWriter
    from tqdm import tqdm

    from mau.provenance import provenance

    filters = parse_spec(cfg.filter)
    fractions = {s: getattr(cfg.split, s) for s in F.DATASET_SPLITS}
    matches = find_matches(cfg.runs)
    tokens = TokenCounter(cfg.tokenizer)
    stats = BuildStats(token_unit=tokens.unit)
    feats = features()
    warn = warn or (lambda line: tqdm.write(line, file=sys.stderr))

    def problem(p: Problem) -> None:
        stats.n_problems += 1
        if p.kind == "corrupt_line":
            stats.skipped["corrupt_lines"] += 1
        if len(stats.problems) < MAX_LISTED_PROBLEMS:
            stats.problems.append(str(p))
        if stats.n_problems <= PRINTED_PROBLEMS:
            warn(f"mau dataset: warning: {p}")
        elif stats.n_problems == PRINTED_PROBLEMS + 1:
            warn("mau dataset: warning: more damaged inputs; all are counted in the card")

    staging = make_staging(out)  # with the user's umask: the dataset is not private
    try:
        (staging / BUILD_DIR).mkdir()
        arrow = {s: staging / BUILD_DIR / f"{s}.arrow" for s in F.DATASET_SPLITS}
        writers = {s: ArrowWriter(features=feats, path=str(arrow[s]), writer_batch_size=cfg.writer_batch_size)
                   for s in F.DATASET_SPLITS}
        split_matches: dict[str, list[str]] = {s: [] for s in F.DATASET_SPLITS}
        sources: dict[str, int] = {}
        seen_calls: dict[str, str] = {}  # match id + call id -> digest of the call: the same run given twice
        votes: list[dict[str, Any]] = []  # every expert crewmate VOTE, kept or not: the learnability check
        for match_dir, run in tqdm(matches, desc="matches", unit="match", disable=None if progress else True,
                                   file=sys.stderr):
            match = load_match(match_dir, run, problem)
            split = split_of(match.match_id, cfg.split.seed, fractions)
            split_matches[split].append(str(match_dir))
            sources[run] = sources.get(run, 0) + 1
            stats.matches[split] += 1
            if not (match_dir / F.CALLS_FILE).is_file():
                stats.matches_without_calls += 1
                continue
            auditor = Auditor(match)
            dup_warned = False
            for call in iter_calls(match, problem):
                if _seen_before(call, match, match_dir, seen_calls):
                    stats.skipped["duplicate_calls"] += 1
                    if not dup_warned:
                        warn(f"mau dataset: warning: {match_dir}: its calls were already read from another "
                             f"input "
                             "(the same run given twice?); each is kept once")
                        dup_warned = True
                    continue
                if call[F.ROLE] != CREWMATE:
                    stats.skipped["non_crew"] += 1
                    continue
                expert = is_expert_example(call)
                if expert and call.get(F.MODULE) == VOTE_MODULE:
                    votes += vote_rows([call], list(match.roles))
                tags = _kept(call, match, filters, cfg, stats) if expert else _counted(stats, "fallback")
                if tags:
                    _emit(
                        call, match, tags, split, auditor, writers[split], feats, stats, tokens, cfg, problem
                    )
                auditor.observe(call)
        _finish_writers(writers, arrow, stats)
        _publish_arrow(staging, arrow, feats)
        header = {
            F.FORMAT: F.DATASET_FORMAT, F.FORMAT_VERSION: F.DATASET_FORMAT_VERSION, "filter": cfg.filter,
            "filters": [f.name for f in filters], "filter_definition": definition(cfg.filter),
            "split": {**fractions, "seed": cfg.split.seed}, "columns": list(feats), **stats.summary(),
            "problem_list": stats.problems, "sources": sources, "match_dirs": split_matches,
            "vote_learnability": cross_validated_accuracy(votes)
            if len(votes) >= MIN_LEARNABILITY_VOTES
            else None, F.CONFIG: cfg.model_dump(mode="json"), "provenance": provenance(),
        }
        (staging / F.RESOLVED_CONFIG).write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
        (staging / F.DATASET_CARD).write_text(render_card(header, stats))
        # The header goes last: a staging folder without it is incomplete by construction.
        (staging / F.DATASET_HEADER).write_text(json.dumps(header, indent=1))
        if out.exists():
            out.rmdir()  # an empty folder (main refuses any other)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Built(header, stats)


def _counted(stats: BuildStats, reason: str) -> None:
    """A call that is no example, counted under its reason."""
    stats.skipped[reason] += 1


def _kept(call: dict[str, Any], match: MatchInfo, filters: list[Any], cfg: DatasetConfig,
          stats: BuildStats) -> list[str] | None:
    """The filters that keep an expert call, or None (counted: no filter kept it, or not in ``modules``)."""
    tags = select(call, match, filters, cfg)
    if not tags:
        return _counted(stats, "not_selected")
    if cfg.modules is not None and call.get(F.MODULE) not in cfg.modules:
        return _counted(stats, "other_modules")
    return tags


def _seen_before(call: dict[str, Any], match: Any, match_dir: Path, seen_calls: dict[str, str]) -> bool:
    """True for a call already read from another input with the same content (the same run given twice); a
    MauError when the content differs (two runs share match ids)."""
    digest = _digest(call)
    first = seen_calls.setdefault(f"{match.match_id}\0{call[F.CALL_ID]}", digest)
    if first is digest:
        return False
    if first != digest:
        raise MauError(f"{match_dir}: call {call[F.CALL_ID]} also appears in an earlier input with other "
                       f"content "
                       "(two runs share match ids); give them as separate builds or rename one run's matches")
    return True


def _finish_writers(writers: dict[str, Any], arrow: dict[str, Path], stats: BuildStats) -> None:
    """Close every split's Arrow writer; its row count must be what the build counted."""
    for s, w in writers.items():
        written, _ = w.finalize()
        w.close()
        if written != stats.examples[s]:
            raise MauError(f"{arrow[s]}: {written} rows written, {stats.examples[s]} counted; report this "
                           f"with "
                           "`mau info`")


def _digest(call: dict[str, Any]) -> str:
    """What makes a call record the same call: its id, when, who, its input and its output."""
    import hashlib

    key = [call.get(k) for k in (F.CALL_ID, F.MATCH, F.TICK, F.AGENT, F.MODULE, F.RAW_OUTPUT)]
    return hashlib.sha256(
        json.dumps([key, call.get(F.MESSAGES)], sort_keys=True, default=str).encode()
    ).hexdigest()


def _publish_arrow(staging: Path, arrow: dict[str, Path], feats: Any) -> None:
    """Lay the per-split Arrow files out as ``DatasetDict.save_to_disk`` does, without copying them (a copy
    through the memory map would grow the resident set with the size of the dataset): ``datasets`` writes the
    folder of an empty DatasetDict with these features (its JSON files), and each empty data file is then
    replaced by the one written during the build."""
    from datasets import Dataset, DatasetDict, disable_progress_bars, enable_progress_bars

    disable_progress_bars()
    try:
        empty = DatasetDict(
            {s: Dataset.from_dict({k: [] for k in feats}, features=feats) for s in F.DATASET_SPLITS}
        )
        empty.save_to_disk(str(staging), num_shards={s: 1 for s in F.DATASET_SPLITS})
    finally:
        enable_progress_bars()
    for s in F.DATASET_SPLITS:
        files = json.loads((staging / s / "state.json").read_text())["_data_files"]
        if len(files) != 1:
            raise MauError(f"datasets wrote {len(files)} data files for one shard; this mau expects 1 "
                           f"(datasets version?)")
        os.replace(arrow[s], staging / s / files[0]["filename"])
    (staging / BUILD_DIR).rmdir()
    # No read-back here: datasets.load_from_disk walks the whole Arrow stream through its memory map, and the
    # resident set would grow with the size of the dataset (the tests load every built folder).


def _emit(call, match, tags, split, auditor, writer, feats, stats, tokens, cfg, problem) -> None:
    """Audit one selected call, load its frames and write its row."""
    auditor.check(call)  # raises on a leak: the build stops
    messages, paths = convert_messages(call)
    if not paths and not cfg.include_text_only:
        stats.skipped["text_only"] += 1
        return
    images = load_images(match, call, paths, problem)
    if images is None:
        stats.skipped["missing_images"] += 1
        return
    # The row is already in Arrow storage form (images as {bytes, path}), so no Features.encode_example pass.
    row = make_row(call, match, tags, messages, images)
    writer.write(row)
    stats.add_example(split, tags, str(call[F.MODULE]), str(call.get(F.MODEL)), len(images),
                      row[F.DS_BELIEFS_JSON] is not None)
    s_text, y_text = input_text(call[F.MESSAGES]), call[F.RAW_OUTPUT]
    stats.input_chars.add(len(s_text))
    stats.output_chars.add(len(y_text))
    stats.input_tokens.add(tokens(s_text))
    stats.output_tokens.add(tokens(y_text))
