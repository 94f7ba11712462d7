"""Names and places in free text, for the phrasing reader (``mau.claimsread.reader``): every player and place
said in an utterance becomes a token, however it was written.

- Places: as the map spells them, in any case, by common short forms ("elec", "cafe", "nav", "comms",
  "med", "sec", "upper engine"), misspelled by one letter (two in a long name: "Electical", "Cafetaria"),
  corridors said as "the corridor between Admin and Storage" or "the Admin-Storage hallway"; ``@Pi@``.
- Players: as the roster spells them, in any case, a short form ("Mike" for Michael, "Liv" for Olivia), one
  letter swapped, dropped, doubled or (capitalised, five letters or more) changed, a possessive without its
  apostrophe ("olivias body"); ``@Ni@``. A name said to address a player ("Noah, were you ...", "..., Jason?")
  is ``@Vi@``: nobody's subject, and no pronoun's antecedent.
- Pronouns: "he", "she" as the player named last before them (of that gender where the roster's names tell
  it) ``@Ni@``; "him", "her" as ``@Oi@`` (an object: a sighting's or a stance's, never a subject); "his
  body", "her body" as that player's body.
- Contractions spelled out ("I'm" -> "I am", "Noah's clear" -> "Noah is clear"; "Noah's body" stays a
  possessive).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROOM_FORMS: dict[str, tuple[str, ...]] = {
    "Cafeteria": ("cafe", "caf", "cafeteria", "cafetaria", "canteen"),
    "Electrical": ("elec", "electric", "electricals", "electrics"),
    "Navigation": ("nav", "navi", "navigations"),
    "Communications": ("comms", "comm", "coms", "communication", "comunications"),
    "O2": ("oxygen", "o2"),
    "Medbay": ("med", "med bay", "medical", "medical bay", "medbay"),
    "Security": ("sec", "security room"),
    "Admin": ("administration", "admin room"),
    "Upper Engine": ("upper engines", "top engine", "upper eng"),
    "Lower Engine": ("lower engines", "bottom engine", "lower eng"),
    "Shields": ("shield",),
    "Weapons": ("weapon", "weps"),
    "Storage": ("stor",),
}
NAME_FORMS: dict[str, tuple[str, ...]] = {"Michael": ("mike", "mikey"), "Olivia": ("liv", "livvy")}
FEMALE = {"Olivia"}  # the roster's names a pronoun can tell apart; names not listed are male
# words within one letter of a place's or a player's name that are neither
NOT_A_NAME = {"admit", "than", "then", "them", "there", "mason", "james'", "marti", "noa", "stove", "shied",
              "weapon's", "storm", "store", "stories", "steve's"}
CONTRACTIONS = [
    (r"\b(I)'m\b", r"\1 am"), (r"\b(I|we|you|they)'ve\b", r"\1 have"), (r"\b(I|we|you|they|he|she)'ll\b",
                                                                       r"\1 will"),
    (r"\b(I|we|you|they|he|she)'d\b", r"\1 would"), (r"\b(we|you|they)'re\b", r"\1 are"),
    (r"\b(he|she|it|that|what|who|there)'s\b", r"\1 is"), (r"\bim\b", "I am"), (r"\bive\b", "I have"),
    (r"\b(is|was|were|are|do|does|did|has|have|had|could|would|should)n't\b", r"\1 not"),
    (r"\b(is|was|were|are|do|does|did|has|have|had|could|would|should)nt\b", r"\1 not"),
    (r"\bcan't\b", "can not"), (r"\bcant\b", "can not"), (r"\bwon't\b", "will not"), (r"\bain't\b", "is not"),
    (r"\blet's\b", "let us"), (r"\blets\b", "let us"), (r"\bgonna\b", "going to"), (r"\bwanna\b", "want to"),
    (r"\bi\b", "I"), (r"\bu\b", "you"),
]
# after a player's name, "'s" is "is" (or "has") before these words; else it is a possessive
IS_AFTER = ("clear", "safe", "innocent", "lying", "sus", "right", "crew", "a", "an", "the", "not", "just",
            "definitely", "def", "probably", "prob", "always", "dead", "alive", "telling", "being", "acting",
            "doing", "in", "at", "with", "also", "too", "kinda", "so", "super", "really", "very", "framing",
            "making", "clearly", "totally", "sketchy", "suspicious", "good", "legit", "innocent", "fine",
            "still", "literally", "obviously")
HAS_AFTER = ("been", "got", "gone", "done")
# a window of the repair "X... I mean Y" (the speaker corrects a word)
REPAIR = re.compile(r"\b\w+\s*(?:\.\.\.|…)\s*(?:I mean|no wait|sorry),?\s+", re.I)
HEDGES = re.compile(r"\b(?:if I remember (?:right|correctly)|if I recall(?: correctly)?|if I am not mistaken|"
                    r"if memory serves)\b,?\s*", re.I)


def levenshtein1(a: str, b: str, limit: int = 1) -> bool:
    """Whether ``a`` and ``b`` differ by at most ``limit`` edits (insert, delete, change, swap)."""
    if abs(len(a) - len(b)) > limit:
        return False
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1] <= limit


def name_edit(name: str, said: str, capital: bool) -> bool:
    """``said`` as a misspelling of ``name``: same first letter, four letters or more, one letter swapped,
    dropped or doubled; a letter changed only when capitalised and five letters or more."""
    a, b = name.lower(), said.lower()
    if len(b) < (3 if capital else 4) or len(a) < 4 or a[0] != b[0] or b in NOT_A_NAME:
        return False
    if len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1:
        return capital and len(b) >= 5
    return levenshtein1(a, b)


@dataclass
class Said:
    """An utterance as tokens, with the lists the tokens index."""

    text: str
    names: list[str]
    places: list[str]


class Words:
    """Tokens for one roster and map (``tokens(text)``)."""

    def __init__(self, names: tuple[str, ...], places: tuple[str, ...]):
        self.names, self.places = list(names), list(places)
        self.rooms = [p for p in self.places if not p.startswith("corridor ")]
        forms: dict[str, str] = {}
        for room in self.rooms:
            forms[room.lower()] = room
            for f in ROOM_FORMS.get(room, ()):
                forms[f] = room
        self.room_forms = forms
        multi = sorted((f for f in forms if " " in f), key=len, reverse=True)
        self._multi = re.compile(r"\b(" + "|".join(re.escape(f) for f in multi) + r")\b", re.I) if multi \
            else None
        self.corridors: dict[tuple[str, str], str] = {}
        for p in self.places:
            if p.startswith("corridor "):
                a, b = p.removeprefix("corridor ").split("-", 1)
                self.corridors[(a.lower(), b.lower())] = self.corridors[(b.lower(), a.lower())] = p
        r = "|".join(re.escape(x) for x in sorted(self.rooms, key=len, reverse=True))
        self._corr = re.compile(
            rf"\b(?:the\s+)?(?:corridor|hallway|hall)\s+between\s+(?:the\s+)?({r})\s+and\s+(?:the\s+)?({r})\b|"
            rf"\b(?:the\s+)?(?:corridor\s+)?({r})\s*-\s*({r})(?:\s+(?:corridor|hallway|hall))?\b", re.I)
        self._place = re.compile(rf"\b(?:the\s+)?({r})\b(?!-)", re.I)
        self.male = {n for n in self.names if n not in FEMALE}

    # -- places ----------------------------------------------------------------------------------------------
    def _room_word(self, w: str, before: str) -> str | None:
        low = w.lower()
        if low == "sec" and re.search(r"\d\s*$", before):
            return None  # "10 sec": seconds
        if low in self.room_forms:
            return self.room_forms[low]
        if len(low) < 5 or low in NOT_A_NAME or low.endswith("ing"):
            return None
        for room in self.rooms:
            if " " in room:
                continue
            if levenshtein1(room.lower(), low, 2 if len(room) >= 9 else 1) and low[0] == room[0].lower():
                return room
        return None

    def canonical_rooms(self, text: str) -> str:
        """Every room as the map spells it (short forms and misspellings read)."""
        if self._multi is not None:
            text = self._multi.sub(lambda m: self.room_forms[m.group(1).lower()], text)
        out, pos = [], 0
        for m in re.finditer(r"\b[A-Za-z][A-Za-z0-9]*\b", text):
            room = self._room_word(m.group(0), text[max(0, m.start() - 6):m.start()])
            if room is not None and room != m.group(0):
                out.append(text[pos:m.start()] + room)
                pos = m.end()
        return "".join(out) + text[pos:]

    def place_tokens(self, text: str) -> str:
        def corr(m: re.Match) -> str:
            a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            p = self.corridors.get((a.lower(), b.lower()))
            return f"@P{self.places.index(p)}@" if p else m.group(0)

        text = self._corr.sub(corr, text)
        lows = [p.lower() for p in self.places]
        return self._place.sub(lambda m: f"@P{lows.index(m.group(1).lower())}@", text)

    # -- players ---------------------------------------------------------------------------------------------
    def exact(self, w: str) -> int | None:
        low = w.lower()
        hit = [i for i, n in enumerate(self.names) if n.lower() == low or low in NAME_FORMS.get(n, ())]
        return hit[0] if len(hit) == 1 else None

    def player(self, w: str) -> int | None:
        """The player ``w`` names (exactly, by a short form, or misspelled), or None."""
        i = self.exact(w)
        if i is not None:
            return i
        hit = [i for i, n in enumerate(self.names) if name_edit(n, w, w[:1].isupper())]
        return hit[0] if len(hit) == 1 else None

    def name_tokens(self, text: str) -> str:
        def one(m: re.Match) -> str:
            w = m.group(0)
            poss = ""
            if w.lower().endswith("'s"):
                w, poss = w[:-2], "'s"
            i = self.exact(w)
            if i is None and not poss and w.lower().endswith("s"):
                i = self.exact(w[:-1])  # "olivias body": a possessive without its apostrophe
                poss = "'s" if i is not None else ""
            if i is None:
                i = self.player(w)
            return m.group(0) if i is None else f"@N{i}@{poss}"

        return re.sub(r"(?<![@\w])[A-Za-z][A-Za-z]+(?:'s)?\b", one, text)

    def tokens(self, text: str) -> Said:
        """The utterance with places and players as tokens (module docstring)."""
        text = text.replace("\u2019", "'").replace("\u2018", "'")
        text = HEDGES.sub("", REPAIR.sub("", text))
        for a, b in CONTRACTIONS:
            text = re.sub(a, b, text, flags=re.I if a not in (r"\bi\b",) else 0)
        text = self.place_tokens(self.canonical_rooms(text))
        text = self.name_tokens(text)
        text = re.sub(r"(@N\d+@)'s\s+(?=(" + "|".join(IS_AFTER) + r")\b)", r"\1 is ", text)
        text = re.sub(r"(@N\d+@)'s\s+(?=(" + "|".join(HAS_AFTER) + r")\b)", r"\1 has ", text)
        text = vocatives(text)
        return Said(pronouns(text, self.names, self.male), self.names, self.places)


def vocatives(text: str) -> str:
    """A name that addresses a player (sentence-initial before a comma, or after a comma at a sentence's
    end) as ``@Vi@``."""
    text = re.sub(r"(^|[.!?]\s+)@N(\d+)@(?=\s*,(?!\s*@N))", r"\1@V\2@", text)
    return re.sub(r",\s*@N(\d+)@(?=\s*(?:[.!?]|$))", r", @V\1@", text)


PRONOUN = re.compile(r"@N(\d+)@|\b(?:(his|her)\s+(?=(?:dead\s+)?(?:body|corpse)\b)|(he|she|him|her))\b", re.I)


def pronouns(text: str, names: list[str], male: set[str]) -> str:
    """Each "he"/"she" as ``@Ni@`` and "him"/"her" as ``@Oi@`` of the player named last before it (of its
    gender); "his body" as that player's body; left as said without an antecedent."""
    out, pos = [], 0
    last: dict[str, int | None] = {"m": None, "f": None}
    for m in PRONOUN.finditer(text):
        if m.group(1) is not None:
            i = int(m.group(1))
            last["m" if names[i] in male else "f"] = i
            continue
        word = (m.group(2) or m.group(3)).lower()
        gender = "m" if word in ("he", "him", "his") else "f"
        i = last[gender]
        if i is None:
            continue
        tok = f"@N{i}@'s " if m.group(2) else (f"@N{i}@" if word in ("he", "she") else f"@O{i}@")
        out.append(text[pos:m.start()] + tok)
        pos = m.end()
    return "".join(out) + text[pos:]
