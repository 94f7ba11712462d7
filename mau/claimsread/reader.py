"""The phrasing reader (``spot``): free text read as the claims of the grammar it states, by what its clauses
mean rather than by listed phrasings (docs/claims.md, "Extraction").

An utterance is read in four passes:

1. **Words** (``mau.claimsread.words``): players, places and pronouns become tokens, however written.
2. **Sentences and clauses**: a question states nothing; reported speech and hearsay ("Noah said he was in
   Admin", "according to Jason", "supposedly") state nothing of the speaker up to a contrast ("..., but I
   saw ..."); a clause that is a plan ("I'm going to check Electrical"), a proposal ("we should", "let's":
   except a call to vote someone, which is an accusation), a counterfactual ("if", "would have") or about an
   earlier round ("last round") gives no fact. Negated words give nothing ("I was never in Navigation").
3. **Meaning in a clause**: the stances (accusations, vouches), kills seen, bodies found (with who was near),
   tasks; company ("with Noah", "Noah and I", "both were with me": the place of the clause, or the speaker's
   own place said before); then every place is given to the subject said closest before it: the speaker
   ("I", "my tasks", a clause that starts with a verb) makes an ``at``, another player, as subject ("Noah
   was hanging around Weapons") or as what the speaker saw ("I saw Noah in Admin"), a ``saw``. A place only
   passed through, headed for, or named as a topic ("about Electrical") is none.
4. **Time**: each claim gets the time of its part of the clause, else of the clause: a window, a moment, a
   relative time, or none (the untimed claim, whose meaning the checker gives).

The template sentences of ``mau.claims.render`` are read exactly first. No model, no cost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mau import schema as F
from mau.claims.grammar import ME, STANCE_KINDS, Scope, validate_all
from mau.claims.render import parse, render
from mau.claimsread.words import Said, Words


@dataclass(frozen=True)
class Context:
    """What an utterance's claims are read against."""

    speaker: str
    names: tuple[str, ...]
    places: tuple[str, ...]
    meeting_s: float
    since_s: float  # the last meeting's end (0 at the first)
    n_stations: int = 64

    def scope(self) -> Scope:
        return Scope(self.names, self.speaker, self.places, self.n_stations, self.meeting_s)


N = r"@N\d+@"
OB = r"@[NO]\d+@"  # a player as subject or object
P = r"@P\d+@"
NS = rf"{N}(?:(?:\s*,\s*|\s*,?\s+and\s+){N})*"
OS = rf"{OB}(?:(?:\s*,\s*|\s*,?\s+and\s+){OB})*"
NUM = r"(\d+(?:\.\d+)?)"
UNIT = r"\s*(?:s\b|secs?\b|seconds?\b)"
NEG = re.compile(r"\b(?:not|never|no|nobody|nothing|none|nor)\b|n't\b", re.I)

# -- time ----------------------------------------------------------------------------------------------------
WINDOW = re.compile(rf"\b(?:from|between)\s+(?:about\s+|around\s+|roughly\s+|like\s+)?{NUM}(?:{UNIT})?\s+"
                    rf"(?:to|and|until|till|-)\s+(?:about\s+|around\s+)?{NUM}(?:{UNIT})?", re.I)
MOMENT = re.compile(rf"\b(?:at|around|about|roughly)\s+(?:like\s+|about\s+|around\s+|roughly\s+|approximately"
                    rf"\s+|the\s+)*{NUM}(?:{UNIT}|\s*second mark)?(?!\s*(?:blocks?|people|players|%|percent|"
                    rf"meters?|m\b|tasks?|of\b|[.,]\d))", re.I)
REL = {
    "end": re.compile(
        r"\b(?:(?:just|right|shortly)\s+before\s+(?:the|this)\s+(?:meeting|report|body was (?:found|"
        r"reported))|"
        r"before the meeting was called|when the meeting (?:was called|started)|just now|a moment ago|"
        r"when (?:@[NO]\d+@|someone|somebody|he|she|they|it|the body) (?:was )?(?:reported|called)|"
        r"\d+\s*(?:s|secs?|seconds)\s+before the (?:report|meeting)|before the report)\b", re.I),
    "start": re.compile(
        r"\b(?:at the (?:start|beginning)(?: of the round)?|right after the (?:last )?meeting|early on|"
        r"after the last meeting ended|first thing|started (?:off |out )?(?:in|at)|at first)\b", re.I),
}


def clause_time(s: str) -> tuple[str, Any] | None:
    """The time a piece of a clause says: ("window", (a, b)), ("moment", x), ("when", w), or None."""
    m = WINDOW.search(s)
    if m:
        return "window", (float(m.group(1)), float(m.group(2)))
    if REL["end"].search(s):
        return "when", "end"
    m = MOMENT.search(s)
    if m:
        return "moment", float(m.group(1))
    if REL["start"].search(s):
        return "when", "start"
    return None


def timed(c: dict[str, Any], t: tuple[str, Any] | None, now: float) -> dict[str, Any]:
    """``c`` with the time ``t`` in the fields its kind takes (untimed where it takes none of that form, or
    where the time said lies after the meeting)."""
    if t is None or c["k"] in STANCE_KINDS:
        return c
    form, v = t
    k = c["k"]
    if form == "when":
        return dict(c, when=v) if k in F.CLAIM_WHEN_KINDS else c
    if form == "window":
        a, b = v
        if not 0 <= a <= b <= now:
            return c
        if k in F.CLAIM_PLACED_KINDS:
            return dict(c, from_s=a, to_s=b)
        return dict(c, at_s=b)
    if not 0 <= v <= now:
        return c
    if k in ("at", "with"):
        return dict(c, from_s=v, to_s=v)
    return dict(c, at_s=v)


# -- what a sentence or clause is ----------------------------------------------------------------------------
REPORTED = re.compile(
    r"(?<!\bI )\b(?:said|says|say|saying|claims?|claimed|claiming|told|tells|mentioned|mentions|stated|"
    r"states|"
    r"insists|insisted|swears|swore|thinks|reckons|admitted|asked|asks|asking)\b|\baccording to\b|"
    r"\bsupposedly\b|\bapparently\b|\ballegedly\b|\b(?:heard|hear)\b|\b(?:story|alibi|account|version) "
    r"(?:is|was) that\b|\b(?:was|were|got) seen\b|\bput (?:@[NO]\d+@|him|her|them) (?:at|in|near)\b", re.I)
CONTRAST = re.compile(r"^(?:but|however|though|although|whereas|yet)\b", re.I)
PLAN = re.compile(
    r"\b(?:I am going to|I will|I shall|going to (?!@P)|plan(?:ning)? to|about to|intend to|I want to|I need "
    r"to|I have to|next round|next time|next(?!\s+to)|later on|after this (?:meeting|vote)|"
    r"after the vote|after we "
    r"vote|tomorrow)\b", re.I)
PROPOSAL = re.compile(
    r"\b(?:let us|we should|we could|we need to|we must|we have to|should we|shall we|how about|why do not "
    r"we|why not|maybe we|someone should|somebody should|anyone want|everyone should|we can)\b", re.I)
COUNTER = re.compile(
    r"\b(?:if|unless|had I|would have|could have|should have|would be|what if|in case|suppose|supposing|"
    r"imagine|hypothetically|otherwise|were the imposter|would of|could of)\b", re.I)
EARLIER = re.compile(
    r"\b(?:last round|previous round|the round before|first round|second round|last time|the time before|"
    r"last game|in round \d+|"
    r"(?<!since )(?<!after )(?<!since the )(?<!after the )(?<!end of the )last meeting|"
    r"first meeting|previous "
    r"meeting|the meeting before|before the last meeting|earlier rounds?)\b", re.I)
SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[!?])(?=\S)|\n+")
CLAUSE = re.compile(
    r"(;|,\s*(?:but|however|though|although|so|because|since|while|whereas)\b|\bbut\b|\bhowever\b|"
    r"\bthough\b|,\s*(?:and\s+)?then\b|\band then\b|\bthen\b(?!\s+(?:the\s+)?@P)|,\s*and\b|"
    rf",\s*(?=(?:and\s+)?(?:I|{NS})\s+(?:is|was|were|are|am|seems|looks|had|has|have|did|do|ran|went|came|"
    r"stayed|saw|found|spotted|noticed|finished|completed|walked|got|just|also|literally|was|wasn't|can|"
    r"could)"
    r"\b)|,\s*(?=(?:and\s+)?(?:did|went|finished|walked|came|headed|checked|completed|stayed|spent|got|"
    r"found|saw|spotted|noticed|started|ran|left|passed)\b)|,\s*(?=(?:but\s+)?(?:this|last|previous|"
    r"next) (?:round|time)\b))", re.I)


@dataclass
class Clause:
    text: str
    facts: bool = True  # whether it may state facts (a plan, proposal, counterfactual: no)
    stances: bool = True


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(text) if s and s.strip()]


def clauses(sentence: str) -> list[Clause]:
    """The clauses of a sentence with what each may state (module docstring, pass 2)."""
    if sentence.rstrip().endswith("?"):
        return []
    parts = CLAUSE.split(sentence)
    out: list[Clause] = []
    reported = earlier_next = False
    lead = ""
    for i, part in enumerate(parts):
        if i % 2 == 1:
            lead = part.strip(" ,;").lower()
            continue
        s = part.strip(" ,;")
        if not s:
            continue
        if reported and (CONTRAST.match(lead) or lead.startswith(("but", "however", "though"))) \
                and re.match(r"^(?:I|@[NO]\d+@)\b", s):
            reported = False
        reported = reported or bool(REPORTED.search(s))
        earlier, was_earlier = bool(EARLIER.search(s)), earlier_next
        earlier_next = earlier and bool(re.fullmatch(r"(?:(?:in|during|back in|back|"
                                                     r"since)\s+)?(?:the\s+)?(?:last|previous|"
                                                     r"first|second)\s+(?:round|time|meeting)", s, re.I))
        if reported or earlier or was_earlier or COUNTER.search(s):
            continue
        out.append(Clause(s, facts=not (PLAN.search(s) or PROPOSAL.search(s))))
    return out


# -- meanings in a clause ------------------------------------------------------------------------------------
STANCES: list[tuple[str, bool, re.Pattern[str]]] = [
    (k, neg_ok, re.compile(p, re.I)) for k, neg_ok, p in [
        ("accuse", True, rf"\bI (?:do not|can not|cannot|dont) (?:trust|believe) (?P<who>{OS})"),
        ("vouch", True, rf"(?P<who>{NS}) (?:is|was|are|were)(?: \w+)? not (?:the |an |a )?(?:imposter|"
                        rf"impostor|"
                        r"killer|sus|suspicious)"),
        ("vouch", True, rf"\bI (?:do not|dont) think (?:it (?:is|was) (?P<who>{NS})|(?P<who2>{NS}) (?:did it|"
                        rf"killed|(?:is|was) (?:the |an |a )?(?:imposter|impostor|killer|sus|suspicious)))"),
        ("vouch", True, rf"(?P<who>{NS}) (?:did not|could not have|could not|would not|can not) (?:have )?"
                        r"(?:do|done|killed)"),
        ("vouch", False, rf"\b(?:vouch(?:ing)?|vouches) for (?P<who>{OS})"),
        ("vouch", False, rf"\bI (?:fully |totally |completely |do )?(?:trust|believe|"
                         rf"clear) (?P<who>{OS})(?=\s*(?:"
                         r"[.,!;]|$|completely|fully|100|too|on this))"),
        ("vouch", False, rf"(?P<who>{NS}) (?:is|was|are|were|seems|looks)(?: \w+){{0,2}}? (?:innocent|"
                         rf"safe|clean|"
                         r"clear|cleared|crew|a crewmate|crewmates?|legit|trustworthy|telling the truth|"
                         r"honest)\b"),
        ("vouch", False, rf"(?P<who>{NS}) would never\b"),
        ("accuse", False, rf"\bI (?:would |will )?(?:suspect|accuse|blame|say|pick|guess|"
                          rf"go with) (?P<who>{OS})"
                          r"(?![\w@])(?! (?:was|is|were|did|and I))"),
        ("accuse", False, rf"\b(?:sus|suspicious) (?:of|about) (?P<who>{OS})"),
        ("accuse", False, rf"\b(?:vote|voting|votes|voted|eject|kick)(?: for| out| off)? (?P<who>{OS})"),
        ("accuse", False, rf"\b(?:leaning|lean) (?:towards?|to|on) (?P<who>{OS})"),
        ("accuse", False, rf"\bI think it (?:is|was) (?P<who>{NS})"),
        ("accuse", False, rf"(?P<who>{NS}) (?:is|was|are|were|seems?|looks?|sounds?|has been|is being|"
                          rf"been|keeps)"
                          r"(?: \w+){0,3}? (?:sus|suss|suspicious|sketchy|shady|the imposter|an imposter|the "
                          r"impostor|an impostor|imposters?|impostors?|the killer|a killer|"
                          r"lying(?! (?:there|dead|on|in|down|next|by))|"
                          r"a liar|faking|"
                          r"framing|acting (?:weird|strange|strangely|sus|suspicious|shady)|"
                          r"changing (?:his|her|"
                          r"their) story)\b"),
        ("accuse", False, rf"(?P<who>{NS}) sus\b"),
        ("accuse", False, rf"(?P<who>{NS}) (?:is|are|remains?) (?:my |the )?(?:top|main|prime|biggest|"
                          rf"number one|#1) "
                          r"suspects?"),
        ("accuse", False, rf"\bmy (?:top |main |prime |biggest )?(?:vote|suspect|money|bet) (?:goes |"
                          rf"is going |is )?(?:to |"
                          rf"for |on )?(?P<who>{OS})"),
        ("accuse", False, rf"(?P<who>{N})'s (?:story|explanation|alibi|excuse)s? (?:does|do|"
                          rf"did) not (?:add up|"
                          r"make sense|check out)"),
    ]
]
PERCEIVE = (r"(?:saw|seen|see|seeing|spotted|spot|noticed|notice|caught sight of|watched|watching|"
            r"showed|show|"
            r"witnessed|witness|caught|"
            r"ran into|bumped into|passed|met|found)")
KILL_VERB = r"(?:kill|killing|killed|murder|murdering|murdered|stab|stabbing|stabbed|slash|slashing|slashed)"
KILLS = [re.compile(p, re.I) for p in (
    rf"\b{PERCEIVE} (?P<who>{OB}) (?:just )?{KILL_VERB} (?P<victim>{OB})",
    rf"(?P<who>{N}) (?:just |literally )?(?:killed|murdered|stabbed|slashed|took out|"
    rf"eliminated) (?P<victim>{OB})",
)]
FIND = r"(?:found|find|discovered|discover|came across|come across|saw|see|reported|report|spotted|noticed)"
BODIES = [re.compile(p, re.I) for p in (
    rf"\b{FIND} (?:the |a )?(?:dead )?(?:body of (?P<v1>{OB})|(?P<v2>{OB})'s (?:dead )?(?:body|corpse)|"
    rf"(?P<v3>{OB}) (?:dead|lying dead))",
    rf"(?P<v4>{N}) (?:was|is) (?:already |just )?(?:lying )?(?:there |@P\d+@ )?dead\b(?=.*\bI\b)|"
    rf"(?<=\bI )(?:.*)"
    rf"(?P<v5>{N}) (?:was|is) (?:already |just )?(?:lying )?(?:there |@P\d+@ )?dead\b",
    rf"(?P<v6>{N})'s (?:dead )?body (?:was|lay|is) (?:in|at) (?P<room>{P}) when I",
    rf"\bbody(?:\s*:|\s+was)?\s+(?P<v7>{N})(?:'s)?\s*,?\s*(?:in|at)\s+(?P<room2>{P})",
    rf"\bbody (?:in|at) (?P<room3>{P})(?: \w+){{0,3}}?,? (?:it is|it was|that is|that was) (?P<v8>{N})",
)]
NEAR = [re.compile(p, re.I) for p in (
    rf"\bwith (?P<who>{NS}) (?:nearby|near it|near the body|around|close by|next to it|standing close|by the "
    r"body|right there)",
    rf"(?P<who>{NS}) (?:was|were) (?:\S+ ){{0,3}}?(?:next to|near|by|beside|over|around|"
    rf"close to)\s+(?:(?:it|the "
    rf"body|the corpse|them)\b|{OB})",
    rf"(?P<who>{NS}) (?:was|were) (?:\S+ ){{0,2}}?(?:standing )?close\b",
    rf"\b(?:near|next to|by|beside) (?:it|the body|{OB}) (?:was|were|stood) (?P<who>{NS})",
)]
TASK = re.compile(
    r"\b(?P<verb>finished|did|completed|done|got|fixed|done with|finish|complete)\s+(?:(?:the|my|a|with)\s+)?"
    r"(?:tasks?|missions?)?\s*(?:at\s+|in\s+|on\s+)?station\s+(?P<station>\d+)|\bstation\s+(?P<station2>\d+)"
    r"\s+(?:is\s+)?(?:done|finished|complete|completed)\b", re.I)
COMPANY = [re.compile(p, re.I) for p in (
    rf"(?<!agree )(?<!agreed )(?<!side )(?<!go )(?<!going )(?<!I am )\b(?:together with|along with|with) "
    rf"(?P<who>{OS})(?! on (?:this|that))",
    rf"(?P<who>{NS}) and I\b(?! (?:agree|think|believe))",
    rf"\bme and (?P<who>{NS})",
    rf"(?P<who>{NS}) (?:was|were|is|are|has been|had been|stayed)(?: \S+){{0,3}}? with me\b",
)]
OTHER_VERB = (r"(?:is|was|were|are|has|had|been|did|does|ran|running|run|walked|walking|walk|came|"
              r"coming|went|"
              r"going|left|leaving|stayed|staying|kept|hung|hanging|stood|standing|lingering|lingered|"
              r"hiding|hid|"
              r"passed|passing|entered|entering|headed|heading|vented|followed|following|doing|fixing|moved|"
              r"moving|sat|sitting|camping|camped|chilling|waited|waiting|leave|pass|run|doing|got|showed|"
              r"comes|goes)")
NOBODY = (r"(?:someone|somebody|nobody|no one|everyone|everybody|anyone|anybody|you|we|they|people|the "
          r"imposter|the killer|something|nothing|them|it|him|her|he|she)\b")
ADVERB = r"(?:just|also|then|still|definitely|probably|literally|already|always|really|clearly|even|too)"
ME_START = re.compile(
    r"^(?:(?:and|then|so|also|yeah|yes|ok|okay|oh|well|honestly|lol|tbh|just|literally|bruh|yo|guys|hey|"
    r"um|uh|"
    r"right|plus|basically|anyway|confirming)\W+)*(?:was|went|walked|finished|did|done|checked|"
    r"completed|spent|"
    r"came|headed|started|stayed|got|been|doing|fixed|uploaded|downloaded|scanned|hung|ran|left|stuck|"
    r"chilled|"
    r"chilling|worked|emptied|swiped|cleaned|fueled|been)\b", re.I)
GOES_ON = re.compile(  # a clause that goes on with the subject before ("..., then down to Electrical")
    r"^(?:(?:and|then|so|also|later|after that|afterwards)\W+)*(?:down|up|over|back|across|into|onto|to|"
    r"wandered|carried|moved|walked|went|headed|ran|came|stayed|got|made (?:my|his|her) way)\b", re.I)
ME_SUBJECT = re.compile(r"\bI\b(?! (?:think|mean|guess|believe|feel|bet|reckon|suppose|agree)\b)|\bmy "
                        r"(?:tasks?|missions?|jobs?)\b(?= (?:were|are|is|was|all)\b)|\bme and\b", re.I)
NOT_AT = re.compile(  # a place the subject did not (or not yet) stay in
    r"(?:\b(?:about|toward|towards|instead of|than|except|not|never|to go to|way to|way towards|"
    r"heading (?:to|for|"
    r"towards)|headed (?:for|towards)|going to|walking to|running to|moving to|before)\s+(?:the\s+)?$)", re.I)
PASSAGE = re.compile(r"\b(?:passed|passing|pass|walked|walking|went|going|ran|running|cut|came|coming|was)\s+"
                     r"(?:right\s+)?(?:by|through|past)\s+(?:the\s+)?$", re.I)
ARRIVE = re.compile(r"^\s*(?:\w+\s+)?(?:came|walked|wandered|ran|showed)\s+(?:in|up|by|over)\b", re.I)


@dataclass
class Anchor:
    pos: int  # where it ends in the clause
    who: list[str]  # [ME] or players
    seen: bool = False  # players the speaker saw (an object of its perception)
    end: int = 0  # where its part of the clause ends


@dataclass
class Reading:
    """The claims read so far in one utterance, and what later clauses refer back to."""

    ctx: Context
    said: Said
    out: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    my_place: tuple[str, dict[str, Any]] | None = None  # the speaker's last place and its claim
    dropped: list[int] = field(default_factory=list)  # ids of at claims another claim stands for
    last_task: bool = False
    last_who: list[str] | None = None  # the last subject said: a clause without one goes on with it
    pending_body: str | None = None  # "Body in Navigation!" (the victim said next)

    def name(self, tok: str) -> str:
        return self.said.names[int(tok[2:-1])]

    def place(self, tok: str) -> str:
        return self.said.places[int(tok[2:-1])]

    def names_in(self, s: str) -> list[str]:
        return [self.name(t) for t in re.findall(OB, s)]

    def add(self, c: dict[str, Any], t: tuple[str, Any] | None) -> dict[str, Any]:
        c = timed(c, t, self.ctx.meeting_s)
        self.out.append(c)
        return c


def _negated(s: str, start: int, end: int) -> bool:
    """Whether a negation governs s[start:end]: one in its own words or in the words before it since the last
    comma ("I was never in Navigation", "I do not suspect Noah"; not "I was in O2 and did not see anyone")."""
    return bool(NEG.search(s[s.rfind(",", 0, start) + 1: end]))


def _consume(s: str, m: re.Match) -> str:
    """``s`` with the words of ``m`` blanked (kept in length, so that positions hold)."""
    return s[:m.start()] + re.sub(r"\S", "_", m.group(0)) + s[m.end():]


def _stances(r: Reading, c: Clause, s: str) -> str:
    """Accusations and vouches (a call to vote someone is one even in a proposal); their words consumed."""
    for kind, neg_ok, rx in STANCES:
        for m in list(rx.finditer(s)):
            if not neg_ok and _negated(s, m.start(), m.end()):
                continue
            who = next(v for k, v in m.groupdict().items() if k.startswith("who") and v)
            for n in r.names_in(who):
                r.out.append({"k": kind, "who": n})
            s = _consume(s, m)
    return s


def _kills_and_bodies(r: Reading, s: str, t: tuple[str, Any] | None) -> str:
    """Kills seen and bodies found (with who was near), their words consumed."""
    for rx in KILLS:
        for m in list(rx.finditer(s)):
            if _negated(s, m.start(), m.end()):
                continue
            room = re.search(rf"^\W*(?:\w+\W+){{0,6}}?(?:in|at|inside|near|by)\s+(?:the\s+)?({P})",
                             s[m.end():])
            c = {"k": "saw_kill", "who": r.name(m.group("who")), "victim": r.name(m.group("victim"))}
            if room:
                c["room"] = r.place(room.group(1))
            r.add(c, t)
            s = _consume(s, m)
            if room:
                s = s[:m.end() + room.start(1)] + "_" * len(room.group(1)) + s[m.end() + room.end(1):]
    for rx in BODIES:
        for m in list(rx.finditer(s)):
            if _negated(s, m.start(), m.end()):
                continue
            g = {k: v for k, v in m.groupdict().items() if v}
            vkey = next(k for k in g if k.startswith("v"))
            victim = r.name(g[vkey])
            room = g.get("room") or g.get("room2") or g.get("room3")
            after = re.search(P, s[m.end():])
            if room is None:
                before = re.findall(P, s[:m.start(vkey)])
                room = after.group(0) if after else (before[-1] if before else None)
            if room is None:
                continue
            c = r.add({"k": "body", "victim": victim, "room": r.place(room), "near": []}, t)
            r.bodies.append(c)
            s = _consume(s, m)
            if after and after.group(0) == room:
                i = m.end() + after.start()
                s = s[:i] + "_" * len(room) + s[i + len(room):]
    s = _pending_body(r, s, t)
    for rx in NEAR:
        for m in list(rx.finditer(s)):
            if r.bodies:
                r.bodies[-1]["near"] += [n for n in r.names_in(m.group("who")) if n != r.bodies[-1]["victim"]]
                s = _consume(s, m)
    return s


MORE_STATIONS = re.compile(r"(?:\s*,\s*|\s+and\s+|\s+then\s+|\s*,?\s+and then\s+)(?:also\s+)?station\s+(\d+)",
                           re.I)


def _pending_body(r: Reading, s: str, t: tuple[str, Any] | None) -> str:
    """ "Body in Navigation! It's Jason." and "I found it at 190 s": a body said before its victim or its
    time."""
    m = re.search(rf"\b(?:a |the )?(?:dead )?body (?:in|at) ({P})", s, re.I)
    if m and not _negated(s, m.start(), m.end()):
        r.pending_body = r.place(m.group(1))
        s = _consume(s, m)
    m = re.search(rf"(?:^|\b(?:it is|it was|that is|that was|its)\s+)({N})(?:'s)?(?=\W*$|\W+(?:body|"
                  rf"I\b))", s, re.I)
    if r.pending_body and m:
        c = {"k": "body", "victim": r.name(m.group(1)), "room": r.pending_body, "near": []}
        r.bodies.append(r.add(c, t))
        r.pending_body = None
        s = _consume(s, m)
    m = re.search(r"\b(?:found|discovered|reported|saw|spotted) it\b", s, re.I)
    if m and t is not None and r.bodies and not ({"at_s"} & r.bodies[-1].keys()):
        r.bodies[-1].update(timed({"k": "body"}, t, r.ctx.meeting_s))
        r.bodies[-1].pop("k")
        r.bodies[-1]["k"] = "body"
    return s


def _tasks(r: Reading, s: str, t: tuple[str, Any] | None) -> str:
    found = False
    for m in list(TASK.finditer(s)):
        if _negated(s, m.start(), m.end()):
            continue
        before = re.findall(rf"({N})\s+(?:\w+\s+)?$", s[:m.start()])
        who = r.name(before[0]) if before else ME
        r.add({"k": "task", "who": who, "station": int(m.group("station") or m.group("station2"))}, t)
        s, found = _consume(s, m), True
        more = MORE_STATIONS.match(s, m.end())
        while more:  # "station 4 and station 9"
            r.add({"k": "task", "who": who, "station": int(more.group(1))}, t)
            s = _consume(s, more)
            more = MORE_STATIONS.match(s, more.end())
    m = re.match(r"^(?:and\s+)?station\s+(\d+)\b", s, re.I)  # "... station 5 and then station 8"
    if m and r.last_task:
        r.add({"k": "task", "who": ME, "station": int(m.group(1))}, t)
        s, found = _consume(s, m), True
    r.last_task = found
    return s


def _company(r: Reading, s: str, t: tuple[str, Any] | None) -> tuple[str, list[str]]:
    """``with`` claims: the companions, at the clause's place or else the speaker's place said before; the
    ``at`` that place stands for is dropped (a with claim says where the speaker was)."""
    places = [r.place(p) for p in re.findall(P, s) if not NOT_AT.search(s[:s.find(p)])]
    done: list[str] = []
    for rx in COMPANY:
        for m in list(rx.finditer(s)):
            if _negated(s, m.start(), m.end()):
                continue
            before = _anchors(r, s[:m.start()])
            if rx is COMPANY[0] and before and before[-1].who != [ME]:
                continue  # "I saw Olivia with Noah": their company, not mine
            room = places[0] if places else (r.my_place[0] if r.my_place else None)
            if room is None:
                continue
            if not places and r.my_place:
                r.dropped.append(id(r.my_place[1]))
            for n in r.names_in(m.group("who")):
                r.add({"k": "with", "who": n, "room": room}, t)
                done.append(room)
            s = _consume(s, m)
    return s, done


def _with_them(r: Reading, s: str, pos: int) -> list[str]:
    """Players said to be with a player the speaker places ("James was with Olivia in Shields")."""
    m = re.match(rf"(?:\s+\w+){{0,2}}?\s+with\s+({OS})", s[pos:])
    return r.names_in(m.group(1)) if m else []


def _anchors(r: Reading, s: str) -> list[Anchor]:
    """The subjects of a clause in order: the speaker, other players as subjects, players the speaker saw."""
    out: list[Anchor] = []
    if ME_START.match(s) or (r.last_who and GOES_ON.match(s)):
        out.append(Anchor(0, list(r.last_who) if r.last_who and not ME_START.match(s) else [ME]))
    for m in ME_SUBJECT.finditer(s):
        out.append(Anchor(m.end(), [ME]))
    for m in re.finditer(rf"\b{PERCEIVE}\s+(?:that\s+|how\s+)?(?P<who>{OS})", s, re.I):
        out.append(Anchor(m.end(), r.names_in(m.group("who")) + _with_them(r, s, m.end()), seen=True))
    for m in re.finditer(rf"\b{PERCEIVE}\s+(?:{NOBODY}|(?:a|the) body\b)|\b{NOBODY}(?=\s+(?:{ADVERB}\s+)*"
                         rf"{OTHER_VERB}\b)", s, re.I):
        out.append(Anchor(m.end(), []))  # "I saw someone in Weapons": nobody's claim
    for m in re.finditer(rf"(?P<who>{NS})(?=\s+(?:{ADVERB}\s+)*{OTHER_VERB}\b)", s, re.I):
        if not re.search(rf"{PERCEIVE}\s+(?:that\s+|how\s+)?(?:{OS}(?:\s*,\s*|\s*,?\s+and\s+))*$",
                         s[:m.start()], re.I):
            out.append(Anchor(m.end(), r.names_in(m.group("who")) + _with_them(r, s, m.end())))
    out.sort(key=lambda a: a.pos)
    for a, b in zip(out, out[1:] + [None]):
        a.end = b.pos if b is not None else len(s)
    return out


THERE = re.compile(r"\bthere\b(?!\s+(?:is|was|were|are|has|had)\b)", re.I)


def _places(r: Reading, s: str, t: tuple[str, Any] | None, company: list[str], bodies: list[str]) -> None:
    """Every place to the subject said closest before it (module docstring, pass 3), each with the time of
    that subject's part of the clause."""
    anchors = _anchors(r, s)
    pt = clause_time(s[:anchors[0].pos]) if anchors else None
    for a in anchors:
        part = s[a.pos:a.end]
        pt = clause_time(part) or pt
        found = False
        for m in re.finditer(rf"{P}|{THERE.pattern}", part, re.I):
            tok = m.group(0)
            if tok.lower() == "there":
                if r.my_place is None and not r.out:
                    continue
                room = _last_place(r)
                if room is None:
                    continue
            else:
                room = r.place(tok)
            lead = part[:m.start()]
            if NOT_AT.search(lead) or _negated(s, a.pos + m.start(), a.pos + m.end()):
                continue
            if re.match(r"\s+(?:was|is|were|seemed|looked|had)\b", part[m.end():]) and not re.search(
                    r"\b(?:in|at|to|into|from|near|around|by|through|inside)\s+(?:the\s+)?$", lead, re.I):
                continue  # "the hallway was empty": the place is the subject
            if a.who == [ME]:
                if PASSAGE.search(lead):
                    continue
                c = r.add({"k": "at", "who": ME, "room": room}, pt)
                if room in company or room in bodies:
                    r.dropped.append(id(c))
                r.my_place = (room, c)
            else:
                for n in a.who:
                    r.add({"k": "saw", "who": n, "room": room}, pt)
            found = True
        if a.who and not (a.seen and not found):
            r.last_who = a.who
        if not found and a.who != [ME] and (a.seen or ARRIVE.match(part)) and not _negated(s, a.pos, a.end):
            here = _place_before(r, s[:a.pos])
            if here is not None:  # "I was in Admin and saw Noah", "Jason walked in at 440"
                for n in a.who:
                    r.add({"k": "saw", "who": n, "room": here}, pt)


def _last_place(r: Reading) -> str | None:
    for c in reversed(r.out):
        if c.get("room"):
            return c["room"]
    return None


def _place_before(r: Reading, s: str) -> str | None:
    """The place said before a sighting in its own clause ("I was in Admin and saw Noah"): never one of an
    earlier sentence ("I was in Admin. I saw Noah near where Steve died" places Noah nowhere)."""
    before = re.findall(P, s)
    return r.place(before[-1]) if before else None


def read_clause(r: Reading, c: Clause) -> None:
    """The claims of one clause (module docstring, pass 3)."""
    s = c.text
    if c.stances:
        s = _stances(r, c, s)
    if not c.facts:
        return
    t = clause_time(s)
    n_bodies = len(r.bodies)
    s = _kills_and_bodies(r, s, t)
    s = _tasks(r, s, t)
    s, company = _company(r, s, t)
    _places(r, s, t, company, [b["room"] for b in r.bodies[n_bodies:]])


def spot(text: str, ctx: Context) -> list[dict[str, Any]]:
    """The template sentences of ``text``, then the claims the rest states (module docstring); all checked by
    the grammar."""
    if not isinstance(text, str):
        return []
    raw = parse(text, list(ctx.names), list(ctx.places), ctx.speaker)
    rest = text
    for c in raw:  # take the template sentences out
        rest = rest.replace(render(c), ". ")
    said = Words(ctx.names, ctx.places).tokens(rest)
    r = Reading(ctx, said)
    for sentence in sentences(said.text):
        for clause in clauses(sentence):
            read_clause(r, clause)
    out = raw + [c for c in r.out if id(c) not in r.dropped]
    unique: list[dict[str, Any]] = []
    for c in out:  # a claim said twice is one claim
        if c["k"] == "body":
            c["near"] = list(dict.fromkeys(n for n in c.get("near", []) if n != c["victim"]))
        if c not in unique:
            unique.append(c)
    kept, _, _ = validate_all(unique, ctx.scope(), limit=50)
    return kept
