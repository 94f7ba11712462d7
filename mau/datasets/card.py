"""Statistics gathered while a dataset streams by (bounded memory), and the dataset card (README.md) made of
them."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mau import schema as F

RESERVOIR = 4096  # values kept per length statistic for its percentiles (exact below this many examples)
MAX_LISTED_PROBLEMS = 100  # damaged lines listed in the card (all are counted)


class LengthStats:
    """Count, mean, min, max exactly; median and p95 from a fixed-size reservoir sample (seeded)."""

    def __init__(self, seed: int = 0):
        self.n = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None
        self.sample: list[int] = []
        self._rng = random.Random(seed)

    def add(self, v: int) -> None:
        self.n += 1
        self.total += v
        self.min = v if self.min is None else min(self.min, v)
        self.max = v if self.max is None else max(self.max, v)
        if len(self.sample) < RESERVOIR:
            self.sample.append(v)
        else:
            j = self._rng.randrange(self.n)
            if j < RESERVOIR:
                self.sample[j] = v

    def summary(self) -> dict[str, Any]:
        if not self.n:
            return {"n": 0}
        s = sorted(self.sample)
        return {"n": self.n, "mean": round(self.total / self.n, 1), "min": self.min,
                "median": s[len(s) // 2], "p95": s[min(len(s) - 1, int(0.95 * len(s)))], "max": self.max,
                "exact_percentiles": self.n <= RESERVOIR}


@dataclass
class BuildStats:
    """Everything the card, the header and the final line report."""

    token_unit: str  # "tokens (<tokenizer>)" or "whitespace-separated words (estimate of tokens)"
    examples: Counter = field(default_factory=Counter)  # split -> n
    matches: Counter = field(default_factory=Counter)  # split -> n matches
    with_beliefs: Counter = field(default_factory=Counter)  # split -> examples whose expert recorded beliefs
    by: dict[str, Counter] = field(default_factory=lambda: {k: Counter() for k in ("filter", "module",
                                                                                   "model", "images")})
    skipped: Counter = field(
        default_factory=lambda: Counter(
            {
                k: 0
                for k in (
                    "fallback", "non_crew", "not_selected", "corrupt_lines", "missing_images", "text_only",
                    "duplicate_calls", "other_modules",
                )
            }
        )
    )
    problems: list[str] = field(default_factory=list)
    n_problems: int = 0
    matches_without_calls: int = 0
    input_chars: LengthStats = field(default_factory=LengthStats)
    output_chars: LengthStats = field(default_factory=LengthStats)
    input_tokens: LengthStats = field(default_factory=LengthStats)
    output_tokens: LengthStats = field(default_factory=LengthStats)

    def add_example(self, split: str, filters: list[str], module: str, model: str, n_images: int,
                    beliefs: bool = False) -> None:
        self.examples[split] += 1
        self.with_beliefs[split] += beliefs
        for f in filters:
            self.by["filter"][(split, f)] += 1
        self.by["module"][(split, module)] += 1
        self.by["model"][(split, model)] += 1
        self.by["images"][(split, n_images)] += 1

    def table(self, key: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (split, k), n in sorted(self.by[key].items(), key=lambda kv: (str(kv[0][1]), kv[0][0])):
            out.setdefault(str(k), {s: 0 for s in F.DATASET_SPLITS})[split] = n
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "examples": {s: self.examples[s] for s in F.DATASET_SPLITS},
            "matches": {s: self.matches[s] for s in F.DATASET_SPLITS},
            "with_beliefs": {s: self.with_beliefs[s] for s in F.DATASET_SPLITS},
            "by_filter": self.table("filter"),
            "by_module": self.table("module"), "by_model": self.table("model"),
            "by_images": self.table("images"), "skipped": dict(self.skipped), "problems": self.n_problems,
            "matches_without_calls": self.matches_without_calls,
            "lengths": {
                "unit": self.token_unit, "input_chars": self.input_chars.summary(),
                "output_chars": self.output_chars.summary(), "input_tokens": self.input_tokens.summary(),
                "output_tokens": self.output_tokens.summary(),
            },
        }


def _md_table(rows: dict[str, dict[str, int]], first: str) -> list[str]:
    head = f"| {first} | " + " | ".join(F.DATASET_SPLITS) + " | total |"
    lines = [head, "|---" * (len(F.DATASET_SPLITS) + 2) + "|"]
    for k, per in rows.items():
        lines.append(f"| {k} | " + " | ".join(str(per[s]) for s in F.DATASET_SPLITS) + f" | "
                                                                                       f"{sum(per.values())} "
                                                                                       f"|")
    if not rows:
        lines.append("| (none) |" + " 0 |" * (len(F.DATASET_SPLITS) + 1))
    return lines


def _len_row(name: str, s: dict[str, Any]) -> str:
    if not s.get("n"):
        return f"| {name} | 0 | | | | | |"
    return f"| {name} | {s['n']} | {s['mean']} | {s['min']} | {s['median']} | {s['p95']} | {s['max']} |"


def _learnability(v: dict[str, Any] | None) -> list[str]:
    """The vote-learnability line (docs/detection.md, "Vote learnability"), when the sources had enough
    votes."""
    if not v or v.get("accuracy") is None:
        return []
    return ["### Vote learnability", "",
            f"A conditional logit on features parsed from each expert VOTE prompt's text alone (its Evidence "
            f"block and the meeting transcript; not the suspicion line) predicts {100 * v['accuracy']:.1f} % "
            f"of the expert's votes, skips included, on held-out matches (n = {v['n']} votes of the sources, "
            f"kept or not; skips {100 * v['skip_share']:.1f} %; docs/detection.md).", ""]


def render_card(header: dict[str, Any], stats: BuildStats) -> str:
    """The dataset card: what the folder holds, where it came from, how it was selected."""
    s = stats.summary()
    ex = s["examples"]
    lines = [
        f"# mau behaviour-cloning dataset: `{header['filter']}`", "",
        f"Format `{F.DATASET_FORMAT}` version {F.DATASET_FORMAT_VERSION} (docs/datasets.md). "
        f"Load it with `datasets.load_from_disk(\"<this folder>\")`: a `DatasetDict` with the splits "
        f"{', '.join(F.DATASET_SPLITS)}; rows are TRL conversational vision examples (`messages`, `images`) "
        "plus metadata columns.", "", "## Filter", "", header["filter_definition"], "",
        "Only crewmate calls that the model answered itself are examples (no fallback, a raw output). "
        "Splits are by match (a hash of the split seed and the match id), never by row.", "", "## Counts", "",
        "Examples: " + ", ".join(f"{k} {v}" for k, v in ex.items()) + f" (total {sum(ex.values())}), from "
        + ", ".join(f"{k} {v}" for k, v in s["matches"].items()) + " matches.", "",
        "Examples whose expert recorded its beliefs (the `beliefs_json` column: its belief over the VOTE's "
        "candidates and skip, docs/datasets.md): "
        + ", ".join(f"{k} {v}" for k, v in s["with_beliefs"].items())
        + f" (total {sum(s['with_beliefs'].values())}).", "",
        *_learnability(header.get("vote_learnability")),
        "### Per filter (an example of a union counts under each filter that keeps it)", "",
        *_md_table(s["by_filter"], "filter"), "",
        "### Per module", "", *_md_table(s["by_module"], "module"), "",
        "### Per expert model", "", *_md_table(s["by_model"], "model"), "",
        "### Images per example", "", *_md_table(s["by_images"], "images"), "", "### Not in the dataset", "",
        "| reason | count |", "|---|---|",
        f"| crewmate calls answered by a fallback (or without raw output) | {s['skipped']['fallback']} |",
        f"| imposter calls | {s['skipped']['non_crew']} |",
        f"| crewmate expert calls that the filter did not keep | {s['skipped']['not_selected']} |",
        f"| kept calls of other modules than `modules` | {s['skipped'].get('other_modules', 0)} |",
        f"| damaged lines (calls.jsonl, events.jsonl) | {s['skipped']['corrupt_lines']} |",
        f"| examples skipped for a missing image file | {s['skipped']['missing_images']} |",
        f"| text-only examples left out (include_text_only: false) | {s['skipped']['text_only']} |",
        f"| calls seen twice (the same call id and content in two inputs; kept once) | "
        f"{s['skipped'].get('duplicate_calls', 0)} |",
        f"| matches without calls.jsonl | {s['matches_without_calls']} |", "", "## Lengths", "",
        f"Input = system + user text (S); output = the raw answer (Y); text only (no image tokens, no chat "
        f"template). Token counts are {stats.token_unit}. Median and p95 come from a reservoir sample of "
        f"{RESERVOIR} values per statistic (exact below that).", "",
        "| length | n | mean | min | median | p95 | max |", "|---|---|---|---|---|---|---|",
        _len_row("input characters", s["lengths"]["input_chars"]),
        _len_row("output characters", s["lengths"]["output_chars"]),
        _len_row(f"input {stats.token_unit.split(' (')[0]}", s["lengths"]["input_tokens"]),
        _len_row(f"output {stats.token_unit.split(' (')[0]}", s["lengths"]["output_tokens"]), "",
        "## Sources", "", *[f"- `{r}`: {n} matches" for r, n in header["sources"].items()], "",
        f"Split seed {header['split']['seed']}, fractions train {header['split']['train']}, validation "
        f"{header['split']['validation']}, test {header['split']['test']}; the matches of each split are "
        f"listed in `{F.DATASET_HEADER}`.", "",
    ]
    if stats.n_problems:
        lines += ["## Damaged inputs", "", f"{stats.n_problems} damaged inputs (file:line: what):", ""]
        lines += [f"- `{p}`" for p in stats.problems[:MAX_LISTED_PROBLEMS]]
        if stats.n_problems > MAX_LISTED_PROBLEMS:
            lines.append(f"- ... and {stats.n_problems - MAX_LISTED_PROBLEMS} more")
        lines.append("")
    lines += ["## Provenance", "", "```json", json.dumps(header["provenance"], indent=1), "```", ""]
    return "\n".join(lines)
