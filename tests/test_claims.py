"""Structured claims: the grammar, the templates and their parser, the world's handling of claims (dropped
with a reason, public without their labels), claims off byte for byte, sights.jsonl, the role-blind checker
on hand-built
logs (every kind TRUE and FALSE), a role shuffle, and the scripted speakers' acceptance on a few matches."""

from __future__ import annotations

import json
import random

import pytest

from mau import schema as F
from mau.claims.check import FALSE, TRUE, UNSUPPORTED, UNVERIFIABLE, Checker, check_match
from mau.claims.config import ClaimsConfig
from mau.claims.grammar import KINDS, Scope, validate, validate_all
from mau.claims.render import parse, render, utterance
from mau.env.actions import Action
from mau.env.config import WorldConfig
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sim import SimWorld
from mau.infer.model import Params

NAMES = ("James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin")
PLACES = ("Admin", "Storage", "Upper Engine", "corridor Admin-Storage", "corridor Storage-Lower Engine")
SCOPE = Scope(NAMES, "Steve", PLACES, 20, 400.0)
ON = ClaimsConfig(mode="structured")


# -- grammar -------------------------------------------------------------------------------------------------
def test_every_kind_validates_to_its_canonical_form():
    raws = [
        {"k": "at", "who": "Steve", "room": "admin", "from_s": 300, "to_s": 345},
        {"k": "task", "who": "me", "station": 7, "at_s": 330.125},
        {"k": "saw", "who": "noah", "room": "Storage", "at_s": 310},
        {"k": "saw", "who": "Noah", "room": "Admin-Storage", "from_s": 300, "to_s": 310},
        {"k": "with", "who": "Jason", "room": "Admin", "from_s": 300, "to_s": 345},
        {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "at_s": 312},
        {"k": "body", "victim": "James", "room": "Storage", "at_s": 330, "near": ["Noah", "Ethan", "noah"]},
        {"k": "accuse", "who": "Noah"}, {"k": "vouch", "who": "Jason"},
    ]
    out = [validate(r, SCOPE) for r in raws]
    assert all(why is None for _, why in out), out
    claims = [c for c, _ in out]
    assert [c["k"] for c in claims] == [
        "at", "task", "saw", "saw", "with", "saw_kill", "body", "accuse", "vouch",
    ]
    assert set(c["k"] for c in claims) == set(KINDS)
    # own name: me
    assert claims[0] == {"k": "at", "who": "me", "room": "Admin", "from_s": 300.0, "to_s": 345.0}
    assert claims[1]["at_s"] == 330.12 and claims[2]["who"] == "Noah"
    assert claims[3]["room"] == "corridor Admin-Storage" and claims[6]["near"] == ["Noah", "Ethan"]


@pytest.mark.parametrize("raw, why", [
    ({"k": "at", "who": "me", "room": "Kitchen", "from_s": 1, "to_s": 2}, "room: 'Kitchen' is not a place"),
    ({"k": "at", "who": "me", "room": "Admin", "from_s": 20, "to_s": 2}, "from_s 20 is after to_s 2"),
    ({"k": "at", "who": "me", "room": "Admin", "from_s": 1, "to_s": 401}, "to_s: 401 s is outside the match"),
    ({"k": "at", "who": "me", "room": "Admin", "from_s": True, "to_s": 2}, "from_s: expected game seconds"),
    ({"k": "at", "who": "Bob", "room": "Admin", "from_s": 1, "to_s": 2}, "who: 'Bob' is not a player"),
    ({"k": "saw", "who": "me", "room": "Admin", "at_s": 3}, "who: must name another player"),
    ({"k": "saw", "who": "Noah", "room": "Admin", "from_s": 3}, "give both from_s and to_s, or neither"),
    ({"k": "saw", "who": "Noah", "room": "Admin", "at_s": 3, "from_s": 1, "to_s": 4}, "give one time"),
    ({"k": "at", "who": "me", "room": "Admin", "when": "end", "from_s": 1, "to_s": 4}, "give one time"),
    ({"k": "at", "who": "me", "room": "Admin", "when": "later"}, "when: one of start, end"),
    ({"k": "task", "who": "me", "station": 2, "when": "end"}, "when: unknown field"),
    ({"k": "task", "who": "me", "station": 20, "at_s": 3}, "station: expected a station number from 0 to 19"),
    ({"k": "task", "who": "me", "station": 2, "at_s": 3, "sure": 1}, "sure: unknown field"),
    ({"k": "saw_kill", "who": "Noah", "victim": "Noah", "room": "Admin", "at_s": 3}, "a player does not kill "
                                                                                     "itself"),
    ({"k": "body", "victim": "Noah", "room": "Admin", "at_s": 3, "near": ["Noah"]}, "the victim is the body"),
    ({"k": "lie"}, "k: must be one of at, task"), ({"who": "Noah"}, "k: must be one of"),
    ("I was in Admin", "a claim is an object"),
])
def test_a_bad_claim_is_dropped_with_a_one_line_reason(raw, why):
    claim, reason = validate(raw, SCOPE)
    assert claim is None and why in reason and "\n" not in reason


def test_the_limit_per_utterance_and_a_claims_field_that_is_no_list():
    ok = {"k": "accuse", "who": "Noah"}
    kept, where, dropped = validate_all([ok, {"k": "x"}, ok, ok], SCOPE, limit=2)
    assert kept == [ok, ok] and where == [0, 2]
    assert [d["reason"].split(" ")[0] for d in dropped] == ["k:", "over"]
    assert validate_all({"k": "at"}, SCOPE, 6)[2][0]["reason"] == "claims: expected a list of claims"


# -- templates -----------------------------------------------------------------------------------------------
def _random_claim(rng: random.Random) -> dict:
    k = rng.choice(KINDS)
    t = sorted(round(rng.uniform(0, 400) * 4) / 4 for _ in range(2))
    who = rng.choice(["me"] + [n for n in NAMES if n != "Steve"])
    other = rng.choice([n for n in NAMES if n != "Steve"])
    window = rng.choice([{"from_s": t[0], "to_s": rng.choice(t)}, {}, {"when": "start"}, {"when": "end"}])
    moment = rng.choice([{"at_s": t[1]}, {"from_s": t[0], "to_s": t[1]}, {}, {"when": "end"}])
    raw = {
        "at": {"k": "at", "who": who, "room": rng.choice(PLACES), **window},
        "task": {"k": "task", "who": who, "station": rng.randrange(20), **rng.choice([{"at_s": t[0]}, {}])},
        "saw": {"k": "saw", "who": other, "room": rng.choice(PLACES), **moment},
        "with": {"k": "with", "who": other, "room": rng.choice(PLACES), **window},
        "saw_kill": {
            "k": "saw_kill", "who": other,
            "victim": rng.choice([n for n in NAMES if n not in (other, "Steve")]),
            **rng.choice([{"room": rng.choice(PLACES)}, {}]),
            **rng.choice([{"at_s": t[1]}, {"from_s": t[0], "to_s": t[1]}, {}]),
        },
        "body": {
            "k": "body", "victim": other, "room": rng.choice(PLACES), **rng.choice([{"at_s": t[1]}, {}]),
            "near": rng.sample([n for n in NAMES if n not in (other, "Steve")], rng.randrange(4)),
        },
        "accuse": {"k": "accuse", "who": other}, "vouch": {"k": "vouch", "who": other},
    }[k]
    claim, why = validate(raw, SCOPE)
    assert why is None, (raw, why)
    return claim


def test_render_then_parse_gives_every_claim_back():
    rng = random.Random(0)
    claims = [_random_claim(rng) for _ in range(2000)]
    for c in claims:
        assert parse(render(c), list(NAMES), list(PLACES), "Steve") == [c], render(c)
    text = utterance("I was doing my missions near Admin. I suspect Noah.", claims[:6])
    assert parse(text, list(NAMES), list(PLACES), "Steve") == claims[:6]


def test_the_parser_reads_templates_only():
    text = ("I was in Electrical doing my missions. I was in Admin. I saw Noah near Storage. Steve was in "
            "Admin from 3 s to 4 s. I saw Noah kill James in Storage at 12 s.")
    assert parse(text, list(NAMES), list(PLACES), "Steve") == [
        {"k": "at", "who": "me", "room": "Admin", "from_s": 3.0, "to_s": 4.0},
        {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "at_s": 12.0}]
    assert render({"k": "at", "who": "me", "room": "Admin", "from_s": 5.0, "to_s": 5.0}) == ("I was in Admin "
                                                                                             "at 5 s.")
    assert render({"k": "at", "who": "me", "room": "Admin"}) == ("I was in Admin for a while since the last "
                                                                 "meeting.")  # a stay (docs/claims.md)
    glance = "I saw Noah in Admin at some time since the last meeting."
    assert render({"k": "saw", "who": "Noah", "room": "Admin"}) == glance
    old = "I was in Admin at some time since the last meeting."  # the words before issue 44, still read back
    assert parse(old, list(NAMES), list(PLACES), "Steve") == [{"k": "at", "who": "me", "room": "Admin"}]
    assert render({"k": "saw", "who": "Noah", "room": "Admin", "when": "end"}) == \
        "I saw Noah in Admin just before the meeting."
    assert render({"k": "saw_kill", "who": "Noah", "victim": "James"}) == ("I saw Noah kill James before "
                                                                           "this "
                                                                           "meeting.")
    assert (
        render(
            {
                "k": "body", "victim": "James", "room": "Admin", "at_s": 302.25,
                "near": ["Noah", "Ethan", "Jason"],
            }
        )
        == "I found the body of James in Admin at 302.25 s, with Noah, Ethan and Jason nearby."
    )


# -- the world -----------------------------------------------------------------------------------------------
def _meeting_world(claims: ClaimsConfig = ON) -> SimWorld:
    w = SimWorld(WorldConfig(claims=claims))
    w.reset(0)
    st = w.state
    st.tick = 4000
    w.rules.do_button(st, st.players[0])
    return w


def test_the_world_keeps_good_claims_public_drops_bad_ones_and_keeps_labels_private():
    w = _meeting_world()
    st = w.state
    speaker = st.meeting.speaker
    good = {"k": "at", "who": "me", "room": "Admin", "from_s": 150, "to_s": 190}
    w.step({speaker: Action("speak", text="I was busy.", claims=(good, {"k": "saw", "who": "Nobody"},
                                                                  {"k": "accuse", "who": "Noah"}),
                            intent=("lie", None, None))})
    e = st.events[-1]
    assert e[F.TYPE] == F.EV_UTTERANCE
    assert e[F.UTTERANCE_TEXT] == "I was busy. I was in Admin from 150 s to 190 s. I accuse Noah."
    assert e[F.CLAIMS] == [{**good, "from_s": 150.0, "to_s": 190.0}, {"k": "accuse", "who": "Noah"}]
    assert e[F.CLAIM_INTENT] == ["lie", None]
    assert e[F.CLAIMS_DROPPED] == [{"claim": {"k": "saw", "who": "Nobody"}, "reason": "who: 'Nobody' is not "
                                    "a player (James, Steve, Jason, Michael, Olivia, Noah, Ethan, Martin)"}]
    obs = w.observe(st.meeting.order[1], "privileged")
    line = obs["meeting"]["transcript"][0]
    assert line[F.CLAIMS] == e[F.CLAIMS] and "intent" not in json.dumps(obs)
    line[F.CLAIMS][0]["room"] = "Storage"  # an agent's copy: the world's transcript is untouched
    assert st.meeting.transcript[0][F.CLAIMS][0]["room"] == "Admin"


def test_claims_only_and_all_dropped():
    w = _meeting_world()
    st = w.state
    w.step({st.meeting.speaker: Action("speak", claims=({"k": "accuse", "who": "Noah"},))})
    assert st.events[-1][F.UTTERANCE_TEXT] == "I accuse Noah."
    w.step({st.meeting.speaker: Action("speak", claims=({"k": "accuse"},))})
    e = st.events[-1]
    assert e[F.TYPE] == F.EV_PASS and e[F.CLAIMS_DROPPED][0]["reason"] == "who: missing"


def test_claims_off_ignores_claims():
    w = _meeting_world(ClaimsConfig())
    st = w.state
    w.step({st.meeting.speaker: Action("speak", text="Hi.", claims=({"k": "accuse", "who": "Noah"},),
                                       intent=("lie",))})
    assert st.events[-1] == {
        F.EVENT_INDEX: st.events[-1][F.EVENT_INDEX], F.TICK: 4000, F.STEP: 0, F.TYPE: F.EV_UTTERANCE,
        "speaker": st.events[-1]["speaker"], "text": "Hi.", "round": 1,
    }


class _Claimer(ScriptedPolicy):
    """A scripted player that always adds claims of its structured speaker to what it says, whatever the
    world's claims mode (the world decides whether they count)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._shadow = ScriptedPolicy(*a, **{**kw, "claims": ON})

    def act(self, obs):
        action = super().act(obs)
        if obs.get("meeting") is None:
            self._shadow.speaker.observe(obs)
        if action is not None and action.kind == "speak":
            claims, intent = self._shadow.speaker.claims(obs, None)
            return Action("speak", text=action.text, claims=tuple(claims), intent=tuple(intent))
        return action


def _events(world: SimWorld) -> str:
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in world.state.events)


@pytest.mark.parametrize("seed", [1, 3])
def test_claims_off_reproduces_the_events_of_play_without_claims_byte_for_byte(seed):
    plain = SimWorld()
    play_match(plain, {p.name: ScriptedPolicy(p.name, plain.map, seed) for p in plain.cfg.players}, seed)
    off = SimWorld(WorldConfig(claims=ClaimsConfig(mode="off", honest_error=0.5)))
    play_match(off, {p.name: _Claimer(p.name, off.map, seed, claims=ClaimsConfig(mode="off"))
                     for p in off.cfg.players}, seed)
    assert plain.state.meetings_held > 0
    assert _events(off) == _events(plain)
    on = SimWorld(WorldConfig(claims=ON))
    deaf = Params(contradicted=0.0, conflict=0.0)  # crewmates that give claims no weight as evidence
    play_match(
        on, {p.name: ScriptedPolicy(p.name, on.map, seed, params=deaf, claims=ON) for p in on.cfg.players},
        seed,
    )
    assert any(F.CLAIMS in e for e in on.state.events)  # the same seed with claims on does carry claims
    # ... and, with claims given no weight, plays the same match: only what was said differs (the speaker
    # draws from its own stream); with the shipped weights the crewmates also vote on what the claims reveal
    said = (F.UTTERANCE_TEXT, F.CLAIMS, F.CLAIM_INTENT, F.CLAIMS_DROPPED)
    assert [{k: v for k, v in e.items() if k not in said} for e in on.state.events] == \
        [{k: v for k, v in e.items() if k not in said} for e in plain.state.events]


# -- sights --------------------------------------------------------------------------------------------------
def test_sights_agree_with_what_observations_show_and_stay_small():
    w = SimWorld(WorldConfig(claims=ON))
    seed = 3
    pols = {p.name: ScriptedPolicy(p.name, w.map, seed, claims=ON) for p in w.cfg.players}
    # (tick, viewer, seen, room) from ego observations at step ends
    shown: list[tuple[int, str, str, str]] = []

    def watch(st):
        if st.phase == "roam":
            for p in st.players:
                if p.active:
                    for q in w.observe(p.name, "ego")["players_in_view"]:
                        shown.append((st.tick, p.name, q["name"], q["room"]))

    play_match(w, pols, seed, on_step=watch)
    c = Checker(w.state.events, w.sights.lines)
    assert shown
    for tick, v, s, room in shown:
        assert c.tl.in_view(v, s, tick, tick), (tick, v, s)
        assert c.tl.in_place(s, room, tick, tick), (tick, s, room)
    size = len("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in w.sights.lines))
    assert 0 < size < 60_000


def test_pairs_in_view_is_sees_for_every_pair():
    w = SimWorld()
    st = w.reset(0)
    rng = random.Random(1)
    x0, z0 = w.map.origin
    for _ in range(300):
        for p in st.players:
            while True:
                p.x, p.z = rng.uniform(x0, x0 + w.map.size[0]), rng.uniform(z0, z0 + w.map.size[1])
                if w.map.is_floor(p.x, p.z):
                    break
            p.yaw = rng.uniform(-7, 7)
        want = {
            (v.name, q.name)
            for v in st.players
            for q in st.players
            if q is not v and w.vision.sees(v, q.x, q.z)
        }
        assert w.vision.pairs_in_view(st.players) == want


# -- the checker on hand-built logs --------------------------------------------------------------------------
class Log:
    """A hand-built match: places and views per player over ticks, and events. Tick 0 to ``end``."""

    def __init__(self, end: int = 2000):
        self.end = end
        self.places: dict[str, list[tuple[int, str | None]]] = {n: [(0, "Admin")] for n in NAMES}
        self.views: list[tuple[int, str, str, bool]] = []
        self.events: list[dict] = [
            {F.TYPE: F.EV_MATCH_START, F.TICK: 0, "roles": {n: "crewmate" for n in NAMES}}
        ]

    def at(self, name: str, tick: int, place: str | None) -> "Log":
        self.places[name].append((tick, place))
        return self

    def view(self, viewer: str, seen: str, start: int, stop: int) -> "Log":
        self.views += [(start, viewer, seen, True), (stop, viewer, seen, False)]
        return self

    def event(self, type_: str, tick: int, **kw) -> "Log":
        self.events.append({F.TYPE: type_, F.TICK: tick, **kw})
        return self

    def say(self, speaker: str, tick: int, *claims: dict) -> list[dict]:
        self.events.append({F.TYPE: F.EV_MEETING_START, F.TICK: tick})
        scope = Scope(NAMES, speaker, PLACES, 20, tick / 20)
        kept, _, dropped = validate_all(list(claims), scope, 20)
        assert not dropped, dropped
        self.events.append(
            {F.TYPE: F.EV_UTTERANCE, F.TICK: tick, F.SPEAKER: speaker, "round": 1, F.CLAIMS: kept}
        )
        self.events.append({F.TYPE: F.EV_MATCH_END, F.TICK: self.end})
        events = [
            dict(e, **{F.EVENT_INDEX: i}) for i, e in enumerate(sorted(self.events, key=lambda e: e[F.TICK]))
        ]
        return check_match(events, self.sights())

    def sights(self) -> list[dict]:
        ticks = sorted({t for ch in self.places.values() for t, _ in ch} | {t for t, *_ in self.views})
        lines = [{F.SIGHTS_VERSION_FIELD: 1, F.SIGHT_PLAYERS: list(NAMES), F.SIGHT_PLACE_NAMES: list(PLACES)}]
        for t in ticks:
            line: dict = {F.SIGHT_TICK: t}
            at = [[NAMES.index(n), None if p is None else PLACES.index(p)] for n, ch in self.places.items()
                  for tt, p in ch if tt == t]
            see = [[NAMES.index(v), NAMES.index(s)] for tt, v, s, on in self.views if tt == t and on]
            lost = [[NAMES.index(v), NAMES.index(s)] for tt, v, s, on in self.views if tt == t and not on]
            for key, val in ((F.SIGHT_PLACES, at), (F.SIGHT_GAINED, see), (F.SIGHT_LOST, lost)):
                if val:
                    line[key] = val
            lines.append(line)
        return lines


def _one(records: list[dict]) -> tuple[str, str]:
    assert len(records) == 1
    return records[0]["verdict"], records[0]["epistemic"]


@pytest.mark.parametrize("claim, verdict", [
    ({"k": "at", "who": "me", "room": "Storage", "from_s": 10, "to_s": 40}, TRUE),  # 30 s of 30 s there
    ({"k": "at", "who": "me", "room": "Storage", "from_s": 5, "to_s": 60}, TRUE),  # 30 of 55 s: a majority
    ({"k": "at", "who": "me", "room": "Storage", "from_s": 0, "to_s": 80}, FALSE),  # 30 of 80 s: a near miss
    ({"k": "at", "who": "me", "room": "Upper Engine", "from_s": 10, "to_s": 40}, FALSE),
    ({"k": "at", "who": "me", "room": "Admin", "from_s": 12, "to_s": 12}, TRUE),  # an instant: within +/- 5 s
    ({"k": "at", "who": "me", "room": "Admin", "from_s": 20, "to_s": 20}, FALSE),
    # Martin was gone
    ({"k": "at", "who": "Martin", "room": "Admin", "from_s": 80, "to_s": 90}, UNVERIFIABLE),
])
def test_at(claim, verdict):
    log = Log().at("Steve", 200, "Storage").at("Steve", 800, "Admin").at("Martin", 1000, None)
    assert _one(log.say("Steve", 2000, claim))[0] == verdict


def test_at_epistemic_labels():
    log = Log().at("Steve", 200, "Storage")
    assert _one(log.say("Steve", 2000, {"k": "at", "who": "me", "room": "Upper "
                                                                        "Engine", "from_s": 10, "to_s": 40})
                ) == (FALSE, "known_false")


@pytest.mark.parametrize("claim, verdict", [
    ({"k": "task", "who": "me", "station": 3, "at_s": 50}, TRUE),
    ({"k": "task", "who": "me", "station": 3, "at_s": 46}, TRUE),  # within 5 s of the completion
    ({"k": "task", "who": "me", "station": 3, "at_s": 40}, FALSE),  # before it was done
    ({"k": "task", "who": "me", "station": 4, "at_s": 50}, FALSE),
    ({"k": "task", "who": "Noah", "station": 3, "at_s": 50}, FALSE),
])
def test_task(claim, verdict):
    log = Log().event(F.EV_MISSION_COMPLETE, 1000, player="Steve", station=3)
    assert _one(log.say("Steve", 2000, claim))[0] == verdict


@pytest.mark.parametrize("claim, verdict, epistemic", [
    ({"k": "saw", "who": "Noah", "room": "Storage", "at_s": 30}, TRUE, None),
    ({"k": "saw", "who": "Noah", "room": "Storage", "from_s": 0, "to_s": 90}, TRUE, None),
    # there, not in view
    ({"k": "saw", "who": "Noah", "room": "Storage", "at_s": 45}, UNSUPPORTED, "fabrication"),
    # in view, elsewhere
    ({"k": "saw", "who": "Noah", "room": "Upper Engine", "at_s": 30}, FALSE, "known_false"),
    ({"k": "saw", "who": "Noah", "room": "Storage", "at_s": 80}, FALSE, "honest_error"),  # a stale sighting
    ({"k": "saw", "who": "Jason", "room": "Storage", "at_s": 30}, FALSE, "fabrication"),  # never in view
])
def test_saw(claim, verdict, epistemic):
    log = Log().at("Noah", 400, "Storage").at("Noah", 1000, "Admin").view("Steve", "Noah", 500, 700)
    assert _one(log.say("Steve", 2000, claim)) == (verdict, epistemic)


@pytest.mark.parametrize("claim, verdict", [
    ({"k": "with", "who": "Noah", "room": "Storage", "from_s": 20, "to_s": 45}, TRUE),
    ({"k": "with", "who": "Noah", "room": "Storage", "from_s": 20, "to_s": 90}, FALSE),  # together 40 % of it
    ({"k": "with", "who": "Jason", "room": "Storage", "from_s": 20, "to_s": 45}, FALSE),
    ({"k": "with", "who": "Noah", "room": "Admin", "from_s": 10, "to_s": 10}, TRUE),  # an instant, +/- 5 s
    ({"k": "with", "who": "Noah", "room": "Storage"}, TRUE),  # untimed: a stay together (30 s; 15 s needed)
    # never in view
    ({"k": "with", "who": "Ethan", "room": "Storage", "from_s": 20, "to_s": 45}, UNSUPPORTED),
])
def test_with(claim, verdict):
    log = (Log().at("Steve", 400, "Storage").at("Noah", 400, "Storage").at("Ethan", 400, "Storage")
           .at("Steve", 1000, "Admin").view("Steve", "Noah", 100, 900))
    assert _one(log.say("Steve", 2000, claim))[0] == verdict


@pytest.mark.parametrize(
    "speaker, claim, verdict",
    [
        ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "at_s": 50}, TRUE),
        (
            "Steve",
            {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "from_s": 40, "to_s": 60},
            TRUE,
        ),
        (
            "Jason", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "at_s": 50},
            UNSUPPORTED,
        ),
        ("Steve", {"k": "saw_kill", "who": "Ethan", "victim": "James", "room": "Storage", "at_s": 50}, FALSE),
        ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Admin", "at_s": 50}, FALSE),
        ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage", "at_s": 70}, FALSE),
        ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "Olivia", "room": "Storage", "at_s": 50}, FALSE),
    ],
)
def test_saw_kill(speaker, claim, verdict):
    log = Log().event(F.EV_KILL, 1000, killer="Noah", victim="James", room="Storage", witnesses=["Steve"])
    assert _one(log.say(speaker, 2000, claim))[0] == verdict


@pytest.mark.parametrize("claim, verdict", [
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 60}, TRUE),
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 60, "near": ["Noah"]}, TRUE),
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 60, "near": ["Jason"]}, UNSUPPORTED),
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 60, "near": ["Ethan"]}, FALSE),
    ({"k": "body", "victim": "James", "room": "Admin", "at_s": 60}, FALSE),
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 40}, FALSE),  # before it saw the body
    ({"k": "body", "victim": "Olivia", "room": "Storage", "at_s": 60}, FALSE),
])
def test_body(claim, verdict):
    log = (Log().event(F.EV_KILL, 1000, killer="Noah", victim="James", room="Storage", witnesses=[])
           .event(F.EV_BODY_SEEN, 1200, player="Steve", body="James", room="Storage")
           .at("Noah", 1100, "Storage").at("Jason", 1100, "Storage").view("Steve", "Noah", 1150, 1250))
    assert _one(log.say("Steve", 2000, claim))[0] == verdict


def test_stances_are_unverifiable_and_say_whether_they_are_grounded():
    log = (Log().event(F.EV_MEETING_END, 500).view("Steve", "Noah", 600, 700)
           .event(F.EV_KILL, 1000, killer="Noah", victim="James", room="Storage", witnesses=[])
           .at("Jason", 900, "Storage").view("Steve", "Jason", 950, 1000))
    recs = log.say("Steve", 2000, {"k": "accuse", "who": "Noah"}, {"k": "vouch", "who": "Ethan"},
                   {"k": "accuse", "who": "Jason"})
    assert [(r["verdict"], r["grounded"]) for r in recs] == [(UNVERIFIABLE, True), (UNVERIFIABLE, False),
                                                             (UNVERIFIABLE, True)]
    assert recs[2]["support"]["near_a_body"] and not recs[1]["support"]["saw_since_last_meeting"]


def test_nothing_after_the_meeting_counts():
    """The table after a meeting (tick of the call + 1) is no evidence for what was said at that meeting."""
    log = Log().at("Noah", 400, "Storage").view("Steve", "Noah", 400, 2000).at("Noah", 2001, "Admin")
    assert _one(log.say("Steve", 2000, {"k": "saw", "who": "Noah", "room": "Admin", "at_s": 99}))[0] == FALSE


# -- played matches ------------------------------------------------------------------------------------------
def _played(seed: int, claims: ClaimsConfig = ON) -> SimWorld:
    w = SimWorld(WorldConfig(claims=claims))
    play_match(w, {p.name: ScriptedPolicy(p.name, w.map, seed, claims=claims) for p in w.cfg.players}, seed)
    return w


def test_the_checker_reads_no_role():
    w = _played(3)
    events = w.state.events
    before = check_match(events, w.sights.lines)
    assert {r["verdict"] for r in before} >= {TRUE, FALSE}
    rng = random.Random(0)
    for trial in range(3):
        shuffled = json.loads(json.dumps(events))
        names = list(shuffled[0]["roles"])
        roles = list(shuffled[0]["roles"].values())
        rng.shuffle(roles)
        shuffled[0]["roles"] = dict(zip(names, roles))
        for e in shuffled:
            if e[F.TYPE] == F.EV_EJECTION and e.get("role"):
                e["role"] = rng.choice(["imposter", "crewmate"])
            e.pop(F.CLAIM_INTENT, None)  # nor the private labels
            if e[F.TYPE] in (F.EV_FAKE_MISSION_START, F.EV_FAKE_MISSION_END):
                e[F.TYPE] = "renamed"  # nor the fake missions, which only imposters make
        assert check_match(shuffled, w.sights.lines) == before


@pytest.mark.parametrize("honest_error", [0.0, 0.2])
def test_scripted_speakers_truth_and_lies(honest_error):
    """Unlabelled facts are TRUE; every lie is FALSE or UNSUPPORTED; with honest error, every non-TRUE crew
    fact is labelled a mistake (the acceptance figures on 200 matches are in docs/claims.md)."""
    cfg = ClaimsConfig(mode="structured", honest_error=honest_error)
    n = {"unlabelled": 0, "lie": 0, "mistake": 0}
    for seed in range(4):
        w = _played(seed, cfg)
        roles = {p.name: p.role for p in w.state.players}
        labels = {e[F.EVENT_INDEX]: e.get(F.CLAIM_INTENT) for e in w.state.events if e.get(F.CLAIMS)}
        names = [p.name for p in w.state.players]
        for e in w.state.events:
            if e.get(F.CLAIMS):
                said = e[F.UTTERANCE_TEXT]
                assert parse(said, names, list(w.rules.places), e[F.SPEAKER]) == e[F.CLAIMS]
        for r in check_match(w.state.events, w.sights.lines):
            if r["kind"] != "fact":
                continue
            label = (labels[r["i"]] or [None] * 20)[r["n"]]
            n["unlabelled" if label is None else label] += 1
            if label is None:
                assert r["verdict"] == TRUE, r
            elif label == "lie":
                assert roles[r["speaker"]] == "imposter" and r["verdict"] in (FALSE, UNSUPPORTED), r
            else:
                assert roles[r["speaker"]] == "crewmate"
    assert n["unlabelled"] > 50 and n["lie"] > 5 and (n["mistake"] > 5) == (honest_error > 0)


# -- what agents see and what is recorded --------------------------------------------------------------------
def test_no_label_or_verdict_in_any_observation():
    seen: list[str] = []

    class Watcher(ScriptedPolicy):
        def act(self, obs):
            seen.append(json.dumps(obs))
            return super().act(obs)

    w = SimWorld(WorldConfig(claims=ON))
    play_match(w, {p.name: Watcher(p.name, w.map, 3, claims=ON) for p in w.cfg.players}, 3)
    assert any(F.CLAIM_INTENT in e for e in w.state.events)  # there were labels to leak
    with_claims = [s for s in seen if '"claims": [{' in s]
    assert with_claims and not any(k in s for s in seen for k in ('"intent"', '"verdict"', '"epistemic"'))


def test_an_aria_match_with_claims_labels_its_events_and_records_no_label(tmp_path):
    """The scripted expert behind the harness: its claims reach the world through the MEETING answer, their
    labels through the backend's private channel (events.jsonl only): no call record carries them."""
    from mau.cli import main as cli
    from mau.datasets.audit import claim_label_leak

    out = tmp_path / "aria"
    assert cli(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "3", "--set",
                "world.claims.mode=structured", "--set", "world.game.max_steps=60", "--out", str(out)]) == 0
    events = [json.loads(x) for x in (out / F.EVENTS_FILE).read_text().splitlines()]
    calls = [json.loads(x) for x in (out / F.CALLS_FILE).read_text().splitlines()]
    labelled = [e for e in events if F.CLAIM_INTENT in e]
    assert labelled and all(len(e[F.CLAIM_INTENT]) == len(e[F.CLAIMS]) for e in labelled)
    meeting = [c for c in calls if c["module"] == "meeting" and c["parsed"].get("claims")]
    assert meeting and all("_private" not in c["parsed"] for c in meeting)
    assert [c for c in calls if claim_label_leak(c) is not None] == []
    said = [e for e in events if e.get(F.CLAIMS)]
    places = tuple(json.loads((out / F.SIGHTS_FILE).read_text().splitlines()[0])["places"])
    assert [e[F.CLAIMS] for e in said] == [
        [
            validate(x, Scope(tuple(NAMES), c["agent"], places, 64, c["tick"] / 20))[0]
            for x in c["parsed"]["claims"]
        ]
        for c in meeting
    ]


def test_scripted_crewmates_weigh_a_claim_their_own_sightings_contradict():
    """With the shipped weights a crewmate whose eyes contradict a speaker's claim suspects that speaker more
    than the same crewmate giving claims no weight (docs/claims.md, "Detection that uses claims")."""
    from mau.infer import model as M

    w = SimWorld(WorldConfig(claims=ON))
    pols = {p.name: ScriptedPolicy(p.name, w.map, 3, claims=ON) for p in w.cfg.players}
    play_match(w, pols, 3)
    roles = {p.name: p.role for p in w.state.players}
    caught = [(b, c) for b in pols.values() if b.ev is not None for c in b.ev.contradictions]
    assert caught, "no crewmate caught a lie in this match"
    assert all(roles[c["speaker"]] == "imposter" for _, c in caught)  # scripted crewmates tell the truth
    compared = 0
    for brain, c in caught:
        items, cands = brain.ev.items(), [n for n in brain.ev.others if n not in brain.ev.dead]
        if c["speaker"] not in cands:
            continue
        k = brain.n_imposters
        with_claims = M.beliefs(brain.name, brain.ev.roster, cands, k, items, M.Params())[0]
        without = M.beliefs(
            brain.name, brain.ev.roster, cands, k, items, M.Params(contradicted=0.0, conflict=0.0)
        )[0]
        if without[c["speaker"]] < 0.999:  # not sure of it already from other evidence
            assert with_claims[c["speaker"]] > without[c["speaker"]]
            compared += 1
    assert compared


def test_placement_names_who_a_claim_puts_where_and_when():
    """What the viewer draws for a claim: its subjects (``me`` resolved), its place or station, its window."""
    from mau.claims.grammar import placement

    assert placement({"k": "at", "who": "me", "room": "Admin", "from_s": 3.0, "to_s": 9.0}, "Noah") == {
        "subjects": ["Noah"], "place": "Admin", "station": None, "from_s": 3.0, "to_s": 9.0}
    assert placement({"k": "with", "who": "Emma", "room": "O2", "from_s": 1.0, "to_s": 2.0}, "Noah")[
        "subjects"
    ] == ["Noah", "Emma"]
    kill = placement({"k": "saw_kill", "who": "Emma", "victim": "Liam", "room": "O2", "at_s": 40.0}, "Noah")
    assert kill["subjects"] == ["Emma", "Liam"] and kill["from_s"] == kill["to_s"] == 40.0
    task = placement({"k": "task", "who": "me", "station": 7, "at_s": 5.0}, "Noah")
    assert task["station"] == 7 and task["place"] is None
    body = placement({"k": "body", "victim": "Liam", "room": "O2", "at_s": 9.0, "near": ["Emma"]}, "Noah")
    assert body["subjects"] == ["Noah", "Emma"]
    assert placement({"k": "accuse", "who": "Emma"}, "Noah") is None
