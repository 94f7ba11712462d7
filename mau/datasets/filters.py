"""The filters of behaviour cloning (SPEC section 4), in one registry: a new filter is one function.

A filter sees one call record that is already an expert example (a crewmate's call answered by the model
itself: ``fallback`` false and a ``raw_output``), the facts of its match and the dataset config (its filter
options), and says whether to keep it.
A filter spec joins registered names with ``+`` for their union (``bcwin+vote``: each call at most once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mau import schema as F
from mau.datasets.sources import MatchInfo
from mau.schema import CREWMATE, SKIP

VOTE_MODULE = "vote"


@dataclass(frozen=True)
class Filter:
    name: str
    definition: str  # one sentence for the dataset card and docs/datasets.md
    keep: Callable[[dict[str, Any], MatchInfo, Any], bool]


FILTERS: dict[str, Filter] = {}


def register(name: str, definition: str):
    def deco(fn: Callable[[dict[str, Any], MatchInfo, Any], bool]):
        FILTERS[name] = Filter(name, definition, fn)
        return fn
    return deco


@register("bcwin", "BCwin: every crewmate call of the matches the crewmates won (outcome CREWMATE WIN or "
                   "MISSION WIN); trajectory level.")
def bcwin(call: dict[str, Any], match: MatchInfo, options: Any = None) -> bool:
    return match.crew_won


def _vote_target(call: dict[str, Any]) -> Any:
    """The vote target of a VOTE call's parsed answer; None for another module or an unparsed answer."""
    parsed = call.get(F.PARSED)
    if call.get(F.MODULE) != VOTE_MODULE or not isinstance(parsed, dict):
        return None
    return parsed.get(F.VOTE_TARGET)


@register("bcvote", "BCvote: crewmate VOTE calls (module 'vote') whose vote target (the answer's "
                    "vote_target) was a true imposter (roles from the match header), whatever the outcome, "
                    "and the expert's own skips (its abstentions when not confident; vote_skips: false drops "
                    "them).")
def bcvote(call: dict[str, Any], match: MatchInfo, options: Any = None) -> bool:
    target = _vote_target(call)
    return target in match.imposters or (target == SKIP and getattr(options, "vote_skips", True))


@register("bcclaims", "BCclaims: crewmate VOTE calls whose vote target was a true imposter whose claim the "
                      "voter's own sightings contradicted (a contradiction line of its prompt's Evidence "
                      "block; world.claims.mode structured).")
def bcclaims(call: dict[str, Any], match: MatchInfo, options: Any = None) -> bool:
    from mau.infer.learnability import contradicted_speakers

    target = _vote_target(call)
    return target in match.imposters and target in contradicted_speakers(call.get(F.MESSAGES) or [])


@register("all", "all: every crewmate call answered by the model itself, whatever the outcome (for other "
                 "readings of the data and for benchmarks; not one of the paper's filters).")
def all_calls(call: dict[str, Any], match: MatchInfo, options: Any = None) -> bool:
    return True


# The paper's union is spelled with its short name.
ALIASES = {"bcwin+vote": "bcwin+bcvote"}


def is_expert_example(call: dict[str, Any]) -> bool:
    """A crewmate's call that the model answered itself (no fallback, a raw output)."""
    return call.get(F.ROLE) == CREWMATE and not call.get(F.FALLBACK) and call.get(F.RAW_OUTPUT) is not None


def parse_spec(spec: str) -> list[Filter]:
    """``"bcwin+vote"`` -> [bcwin, bcvote]; an unknown name is a ValueError naming the known ones."""
    names = ALIASES.get(spec, spec).split("+")
    unknown = [n for n in names if n not in FILTERS]
    if unknown or not spec:
        known = sorted(FILTERS) + sorted(ALIASES)
        raise ValueError(f"unknown filter {(unknown or [spec])[0]!r}; use one of {known} (or names joined by "
                         f"'+')")
    return [FILTERS[n] for n in dict.fromkeys(names)]


def select(call: dict[str, Any], match: MatchInfo, filters: list[Filter], options: Any = None) -> list[str]:
    """The names of the filters that keep this call (empty: the call is not in the dataset); ``options``: the
    dataset config (filter options such as ``vote_skips``)."""
    return [f.name for f in filters if f.keep(call, match, options)]


def definition(spec: str) -> str:
    fs = parse_spec(spec)
    text = " ".join(f.definition for f in fs)
    return text if len(fs) == 1 else f"The union of {len(fs)} filters (each call at most once). {text}"
