"""Meeting speech read as accusations: who says whom is an imposter, and how strongly.

``strong``: the speaker says it saw the kill ("I saw Noah kill Steve", "Noah killed Steve") or saw the player
at the victim ("I saw Noah right next to Steve", "... near the body of Steve", "within 3 blocks of where Steve
died"); ``weak``: a bare accusation ("I suspect Noah", "vote Noah", "Noah is the imposter", "Noah is lying").
One accusation per (speaker, target) and utterance, the strongest. A sentence that names a player only to
clear it ("Noah was with me", "not Noah") is no accusation. The scripted players' sentences are built to read
exactly this way; free text from a model reads as well as these patterns allow (structured claims replace this
for models that give them).
"""

from __future__ import annotations

import re
from functools import lru_cache

STRONG, WEAK = "strong", "weak"
_SENTENCE = re.compile(r"[^.!?;]+")
_CLEAR = re.compile(r"\b(?:not|never|no|with me|innocent|crewmate|trust|cleared?)\b", re.I)


@lru_cache(maxsize=256)
def _patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    n = re.escape(name)
    strong = re.compile(
        rf"\bsaw {n} (?:kill|right next to|next to|standing (?:near|over)|near|at|by|within)\b|\b{n} killed\b"
        rf"|\b{n} (?:was|stood) (?:right )?(?:next to|near|over|by|within) (?:the body|where|[A-Z])", re.I)
    weak = re.compile(rf"\b(?:suspect|vote(?: for| out)?|accuse|watch) {n}\b|\b{n} (?:is|was|seems|looks) "
                      rf"(?:the |an? )?(?:imposter|impostor|sus|suspicious|lying|a liar)\b|\b{n} is "
                      rf"lying\b", re.I)
    return strong, weak


def accusations(text: str, speaker: str, names: list[str]) -> dict[str, str]:
    """{target: strong | weak} of one utterance; the speaker never accuses itself."""
    if not isinstance(text, str):
        return {}  # no words (None), or not words at all
    return dict(_accusations(text, speaker, tuple(names)))


@lru_cache(maxsize=1024)
def _accusations(text: str, speaker: str, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``accusations`` as a tuple, kept: every listener at the table reads the same utterance."""
    out: dict[str, str] = {}
    for sentence in _SENTENCE.findall(text):
        for name in names:
            if name == speaker or name not in sentence:
                continue
            strong, weak = _patterns(name)
            if strong.search(sentence):
                out[name] = STRONG
            elif weak.search(sentence) and not _CLEAR.search(sentence.replace(name, "")) \
                    and out.get(name) != STRONG:
                out[name] = WEAK
    return tuple(out.items())
