"""The training data: a ``mau dataset`` folder read back for TRL, and a checked wrapper around TRL's vision
collator. Heavy imports happen inside the functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError

TRAIN_COLUMNS = [F.DS_MESSAGES, F.DS_IMAGES]  # TRL's conversational vision format; metadata is dropped


@dataclass
class BCData:
    """The splits to train and evaluate on (only ``messages`` and ``images``) and the dataset's header."""

    train: Any
    eval: Any | None
    header: dict[str, Any]
    path: Path


def read_header(path: Path) -> dict[str, Any]:
    """``dataset.json`` of a dataset folder, checked for the format and version this code reads."""
    from mau.datasets.build import read_dataset_header

    return read_dataset_header(path)


def load_bc_data(cfg: Any, columns: list[str] = TRAIN_COLUMNS) -> BCData:
    """Load ``cfg.data`` (a ``DataSection``): check the header, keep ``columns`` (TRL's two training columns;
    the candidate objective reads others), cap the rows."""
    from datasets import load_from_disk

    path = Path(cfg.dataset)
    if not path.is_dir():
        raise MauError(f"data.dataset {path}: no such folder; build it with mau dataset, or fix the path")
    header = read_header(path)
    if cfg.filter is not None and header.get("filter") not in (None, cfg.filter):
        raise MauError(f"data.filter is {cfg.filter!r} but {path} was built with filter "
                       f"{header.get('filter')!r}; "
                       "fix data.filter or data.dataset")
    dd = load_from_disk(str(path))
    splits = list(dd.keys())

    def split(name: str, limit: int | None) -> Any:
        if name not in dd:
            raise MauError(f"{path}: no split {name!r} (it has {', '.join(splits)}); fix data.train_split / "
                           f"eval_split")
        ds = dd[name]
        missing = [c for c in columns if c not in ds.column_names]
        if missing:
            raise MauError(f"{path} split {name}: no column {missing[0]!r}; not a BC dataset of mau dataset")
        ds = ds.select_columns(columns)  # metadata columns must not reach the trainer
        if limit is not None and limit < len(ds):
            ds = ds.select(range(limit))
        return ds

    train = split(cfg.train_split, cfg.max_train_examples)
    if len(train) == 0:
        raise MauError(f"{path}: the {cfg.train_split} split is empty; nothing to train on")
    ev = split(cfg.eval_split, cfg.max_eval_examples) if cfg.eval_split else None
    if ev is not None and len(ev) == 0:
        ev = None  # a small dataset may have an empty validation split: train anyway, without eval loss
    return BCData(train=train, eval=ev, header=header, path=path)


def clean_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Arrow gives every content part every key of the column's struct (an image part comes back as
    ``{"type": "image", "text": None}``); drop the None values, since the chat template and TRL test for keys
    (``'image' in part``) and would misread a part that carries ``"image": None``."""
    out = []
    for m in messages:
        content = m.get(F.DS_CONTENT)
        if isinstance(content, list):
            content = [{k: v for k, v in part.items() if v is not None} for part in content]
        out.append({**m, F.DS_CONTENT: content})
    return out


@dataclass
class CollatorStats:
    """What the checked collator saw (written to checks.json)."""

    batches: int = 0
    rows: int = 0
    rows_with_images: int = 0
    images: int = 0
    image_tokens: int = 0
    answer_tokens: int = 0
    max_sequence_length: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class CheckedCollator:
    """TRL's ``DataCollatorForVisionLanguageModeling`` (its chat template, its assistant mask) plus checks on
    every batch: each row carries exactly the image tokens of its own images (none cut: ``max_length=None``),
    and each row has answer tokens in its labels. A failed check raises: a silently wrong batch would train
    the model on the wrong thing."""

    inner: Any
    image_token_id: int
    merge_size: int
    stats: CollatorStats = field(default_factory=CollatorStats)

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        examples = [{**ex, F.DS_MESSAGES: clean_messages(ex[F.DS_MESSAGES])} for ex in examples]
        n_images = [len(ex.get(F.DS_IMAGES) or []) for ex in examples]
        batch = self.inner(examples)
        self.check(batch, n_images)
        return batch

    def check(self, batch: dict[str, Any], n_images: list[int]) -> None:
        ids, labels = batch["input_ids"], batch["labels"]
        grid = batch.get("image_grid_thw")
        per_image = [] if grid is None else (grid.prod(dim=-1) // self.merge_size ** 2).tolist()
        if len(per_image) != sum(n_images):
            raise MauError(f"collator: {sum(n_images)} images in the batch but {len(per_image)} processed")
        k = 0
        for row, n in enumerate(n_images):
            expected = sum(per_image[k:k + n])
            k += n
            got = int((ids[row] == self.image_token_id).sum())
            if got != expected:
                raise MauError(f"collator: row {row} has {got} image tokens for {n} images that need "
                               f"{expected} "
                               "(truncated? max_length must be None)")
            answer = int((labels[row] != -100).sum())
            if answer == 0:
                raise MauError(f"collator: row {row} has no answer tokens in its labels (assistant mask "
                               f"empty)")
            s = self.stats
            s.rows += 1
            s.rows_with_images += n > 0
            s.images += n
            s.image_tokens += got
            s.answer_tokens += answer
        self.stats.batches += 1
        self.stats.max_sequence_length = max(self.stats.max_sequence_length, int(ids.shape[1]))
