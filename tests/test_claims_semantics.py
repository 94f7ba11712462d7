"""What claims mean when people say them (docs/claims.md, "The checker"): untimed and relative claims, windows
that must cover a kill they hold (the alibi exploit of issue 30), claims about others that need a sighting,
kills anchored to their event; the exploit counted on every kill; ``Foresight`` (what a speaker can know of
the verdict)
bounding the checker on played matches; ``mode: off`` as YAML writes it; the free mode's words and gold."""

from __future__ import annotations

import random

import pytest

from mau import schema as F
from mau.claims.check import FALSE, TRUE, UNSUPPORTED, Checker
from mau.claims.config import ClaimsConfig
from mau.claims.foresee import Foresight
from mau.claimsread.metrics import window_exploit
from mau.config import ConfigError, load_config, parse_overrides
from mau.env.config import WorldConfig
from mau.env.runner import play_match
from mau.env.scripted import ScriptedPolicy
from mau.env.sim import SimWorld
from tests.test_claims import Log


def _verdict(log: Log, speaker: str, tick: int, claim: dict) -> tuple[str, str]:
    (rec,) = log.say(speaker, tick, claim)
    return rec["verdict"], rec["reason"]


# -- untimed and relative ------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim, verdict", [
    ({"k": "at", "who": "me", "room": "Storage"}, TRUE),  # some time since the last meeting (500)
    ({"k": "at", "who": "me", "room": "Upper Engine"}, FALSE),  # never
    ({"k": "at", "who": "me", "room": "Storage", "when": "start"}, TRUE),  # the first 20 s after the meeting
    ({"k": "at", "who": "me", "room": "Storage", "when": "end"}, FALSE),  # the last 20 s: Admin
    ({"k": "at", "who": "me", "room": "Admin", "when": "end"}, TRUE),
])
def test_untimed_and_relative_place_claims(claim, verdict):
    log = Log().event(F.EV_MEETING_END, 500).at("Steve", 200, "Storage").at("Steve", 800, "Admin")
    assert _verdict(log, "Steve", 2000, claim)[0] == verdict


@pytest.mark.parametrize("stay, verdict", [
    (5, FALSE),  # one sub-step sample (0.25 s): a passing glance is no alibi
    (200, FALSE),  # 10 s in all
    (295, FALSE),  # 14.75 s
    (300, TRUE),  # 15 s: a stay
    (1200, TRUE),
])
def test_an_untimed_place_is_a_stay_not_a_glance(stay, verdict):
    """"I was in Storage" (untimed): in Storage for 15 s in all since the last meeting (docs/claims.md,
    "Untimed claims"); the roam is 75 s (500-2000)."""
    log = Log().event(F.EV_MEETING_END, 500).at("Steve", 900, "Storage").at("Steve", 900 + stay, "Admin")
    verdict_, reason = _verdict(log, "Steve", 2000, {"k": "at", "who": "me", "room": "Storage"})
    assert verdict_ == verdict, reason
    if verdict == FALSE:
        assert "15 s needed" in reason


def test_an_untimed_stay_in_two_visits_and_in_a_short_roam():
    """The stay is counted in all (two visits of 8 s); a roam shorter than 30 s asks half of it."""
    two = (Log().event(F.EV_MEETING_END, 500).at("Steve", 600, "Storage").at("Steve", 760, "Admin")
           .at("Steve", 900, "Storage").at("Steve", 1060, "Admin"))
    assert _verdict(two, "Steve", 2000, {"k": "at", "who": "me", "room": "Storage"})[0] == TRUE
    short = Log().event(F.EV_MEETING_END, 1600).at("Steve", 1500, "Storage").at("Steve", 1820, "Admin")
    # a roam of 20 s (1600-2000): 11 s in Storage is more than half of it; 9 s is not
    assert _verdict(short, "Steve", 2000, {"k": "at", "who": "me", "room": "Storage"})[0] == TRUE
    shorter = Log().event(F.EV_MEETING_END, 1600).at("Steve", 1500, "Storage").at("Steve", 1780, "Admin")
    assert _verdict(shorter, "Steve", 2000, {"k": "at", "who": "me", "room": "Storage"})[0] == FALSE


def test_untimed_company_is_a_stay_together():
    """"I was with Noah in Storage" (untimed): together 15 s; passing each other is not company."""
    base = Log().event(F.EV_MEETING_END, 500).view("Steve", "Noah", 500, 2000).at("Steve", 900, "Storage")
    glance = base.at("Noah", 1000, "Storage").at("Noah", 1010, "Admin")
    assert _verdict(glance, "Steve", 2000, {"k": "with", "who": "Noah", "room": "Storage"})[0] == FALSE
    stay = (Log().event(F.EV_MEETING_END, 500).view("Steve", "Noah", 500, 2000).at("Steve", 900, "Storage")
            .at("Noah", 1000, "Storage").at("Noah", 1400, "Admin"))
    assert _verdict(stay, "Steve", 2000, {"k": "with", "who": "Noah", "room": "Storage"})[0] == TRUE


def test_an_untimed_place_before_the_last_meeting_does_not_count():
    log = Log().at("Steve", 200, "Storage").at("Steve", 400, "Admin").event(F.EV_MEETING_END, 500)
    assert _verdict(log, "Steve", 2000, {"k": "at", "who": "me", "room": "Storage"})[0] == FALSE


# -- the cover rule: the alibi exploit -----------------------------------------------------------------------
def _killer(kill: bool = True, back: int | None = None) -> Log:
    """Steve in Admin from the start, in Storage from 1552 (77.6 s) where he kills James at 1800 (90 s), back
    in Admin at ``back``; the meeting at 2020 (101 s)."""
    log = Log(4000).at("Steve", 1552, "Storage")
    if back is not None:
        log.at("Steve", back, "Admin")
    if kill:
        log.event(F.EV_KILL, 1800, killer="Steve", victim="James", room="Storage", witnesses=[])
    return log


EXPLOIT = {"k": "at", "who": "me", "room": "Admin", "from_s": 41, "to_s": 101}  # in Admin 61 % of it


def test_the_window_exploit_is_false():
    """"I was in Admin 41-101 s" while killing in Storage at 90 s: in Admin 61 % of the window, so the
    majority rule alone passes it; a window holding a kill elsewhere must be covered (issue 30)."""
    verdict, reason = _verdict(_killer(), "Steve", 2020, EXPLOIT)
    assert verdict == FALSE and "the kill of James in Storage at 90 s" in reason
    assert _verdict(_killer(kill=False), "Steve", 2020, EXPLOIT)[0] == TRUE  # no kill: the majority rule
    late = dict(EXPLOIT, from_s=30, to_s=80)  # the same presence, the kill outside the window
    assert _verdict(_killer(), "Steve", 2020, late)[0] == TRUE


def test_a_covered_window_holding_another_players_kill_is_true():
    # out 40 of 1200 ticks, back by 1800
    log = Log(4000).at("Steve", 1750, "Storage").at("Steve", 1790, "Admin")
    log.event(F.EV_KILL, 1800, killer="Noah", victim="James", room="Storage", witnesses=[])
    assert _verdict(log, "Steve", 2020, EXPLOIT)[0] == TRUE
    # in Admin at the kill, 67 % of it
    half = Log(4000).at("Steve", 1300, "Storage").at("Steve", 1700, "Admin")
    half.event(F.EV_KILL, 1800, killer="Noah", victim="James", room="Storage", witnesses=[])
    verdict, reason = _verdict(half, "Steve", 2020, EXPLOIT)
    assert verdict == FALSE and "80% needed" in reason


def test_a_report_elsewhere_must_be_covered_too():
    log = Log(4000).at("Steve", 1900, "Storage").event(F.EV_REPORT, 2020, reporter="Steve", body="James",
                                                       room="Storage")
    assert _verdict(log, "Steve", 2020, EXPLOIT)[0] == FALSE


def _events(log: Log, meeting: int) -> list[dict]:
    ev = sorted(log.events + [{F.TYPE: F.EV_MEETING_START, F.TICK: meeting},
                              {F.TYPE: F.EV_MEETING_END, F.TICK: meeting},
                              {F.TYPE: F.EV_MATCH_END, F.TICK: log.end}], key=lambda e: e[F.TICK])
    return [dict(e, **{F.EVENT_INDEX: i}) for i, e in enumerate(ev)]


def test_the_exploit_is_counted_on_every_kill():
    """mau claims' count: kills whose killer has a majority-rule alibi to the meeting (applies), and of those
    the ones the checker passes (none)."""
    log = _killer()
    assert window_exploit(_events(log, 2020), log.sights()) == {"kills": 1, "applies": 1, "passes": 0}
    far = Log(4000).at("Steve", 1780, "Storage").at("Steve", 1820, "Admin")  # away only around the kill
    far.event(F.EV_KILL, 1800, killer="Steve", victim="James", room="Storage", witnesses=[])
    assert window_exploit(_events(far, 2020), far.sights()) == {"kills": 1, "applies": 1, "passes": 0}
    # Steve stood in Admin all along and killed James across the doorway: "I was in Admin" is true, no alibi
    door = Log(4000).at("James", 0, "Storage").event(F.EV_KILL, 1800, killer="Steve", victim="James",
                                                     room="Storage", witnesses=[])
    assert window_exploit(_events(door, 2020), door.sights())["applies"] == 0
    assert _verdict(door, "Steve", 2020, EXPLOIT)[0] == TRUE


# -- claims about others need a sighting; kills anchored to their event --------------------------------------
@pytest.mark.parametrize("speaker, claim, verdict", [
    ("Steve", {"k": "at", "who": "Noah", "room": "Storage", "from_s": 25, "to_s": 45}, TRUE),
    # never seen
    ("Jason", {"k": "at", "who": "Noah", "room": "Storage", "from_s": 25, "to_s": 45}, UNSUPPORTED),
    ("Steve", {"k": "at", "who": "Noah", "room": "Upper Engine", "from_s": 25, "to_s": 45}, FALSE),
    ("Steve", {"k": "at", "who": "Noah", "room": "Storage"}, TRUE),
    ("Steve", {"k": "saw", "who": "Noah", "room": "Storage"}, TRUE),
    ("Jason", {"k": "saw", "who": "Noah", "room": "Storage"}, UNSUPPORTED),
])
def test_a_claim_placing_another_player_needs_a_sighting(speaker, claim, verdict):
    log = Log().at("Noah", 400, "Storage").at("Noah", 1000, "Admin").view("Steve", "Noah", 500, 700)
    assert _verdict(log, speaker, 2000, claim)[0] == verdict


@pytest.mark.parametrize("speaker, claim, verdict", [
    # untimed: the event
    ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage"}, TRUE),
    ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James"}, TRUE),  # no room said
    ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Admin"}, FALSE),
    ("Steve", {"k": "saw_kill", "who": "Noah", "victim": "James", "at_s": 95}, FALSE),  # 45 s off
    ("Steve", {"k": "saw_kill", "who": "Ethan", "victim": "James"}, FALSE),
    ("Jason", {"k": "saw_kill", "who": "Noah", "victim": "James", "room": "Storage"}, UNSUPPORTED),
])
def test_a_kill_seen_is_anchored_to_the_kill(speaker, claim, verdict):
    """"I saw Noah kill James in Storage", said by a witness 50 s later, is the kill of James: TRUE (the
    default window of the old extractor made it FALSE)."""
    log = (
        Log()
        .event(F.EV_MEETING_END, 100)
        .event(F.EV_KILL, 1000, killer="Noah", victim="James", room="Storage", witnesses=["Steve"])
    )
    assert _verdict(log, speaker, 2000, claim)[0] == verdict


@pytest.mark.parametrize("claim, verdict", [
    # near: from my first sight on
    ({"k": "body", "victim": "James", "room": "Storage", "near": ["Noah"]}, TRUE),
    # not then
    ({"k": "body", "victim": "James", "room": "Storage", "at_s": 60, "near": ["Noah"]}, UNSUPPORTED),
    ({"k": "task", "who": "me", "station": 3}, TRUE), ({"k": "task", "who": "me", "station": 4}, FALSE),
])
def test_untimed_bodies_and_tasks(claim, verdict):
    log = (Log().event(F.EV_KILL, 1000, killer="Noah", victim="James", room="Storage", witnesses=[])
           .event(F.EV_BODY_SEEN, 1200, player="Steve", body="James", room="Storage")
           .event(F.EV_MISSION_COMPLETE, 1000, player="Steve", station=3)
           .at("Noah", 1100, "Storage").view("Steve", "Noah", 1400, 1450))
    assert _verdict(log, "Steve", 2000, claim)[0] == verdict


# -- what a speaker can foresee ------------------------------------------------------------------------------
ON = ClaimsConfig(mode="structured")


@pytest.mark.parametrize("seed", [1, 3])
def test_foresight_bounds_the_checker_on_played_matches(seed):
    """For every scripted speaker at every meeting, candidate claims (its own place in every room and time
    form, sightings, tasks): the checker's verdict is always among those ``Foresight`` allows, and many are
    certain."""
    w = SimWorld(WorldConfig(claims=ON))
    pols = {p.name: ScriptedPolicy(p.name, w.map, seed, claims=ON) for p in w.cfg.players}
    play_match(w, pols, seed)
    ch = Checker(w.state.events, w.sights.lines)
    rng = random.Random(seed)
    checked = sure = 0
    for now in ch.facts.meetings:
        start = ch.facts.since_last_meeting(now)
        for name, pol in pols.items():
            if pol.speaker is None or not ch.tl.was_active(name, now, now):
                continue
            fs = Foresight(pol.speaker, now)
            other = rng.choice([n for n in pols if n != name])
            for room in w.map.room_names:
                a = rng.randint(start, now) / 20
                for c in (
                    {"k": "at", "who": "me", "room": room},
                    {"k": "at", "who": "me", "room": room, "when": "end"},
                    {"k": "at", "who": "me", "room": room, "from_s": start / 20, "to_s": now / 20},
                    {"k": "at", "who": "me", "room": room, "from_s": a, "to_s": a},
                    {"k": "saw", "who": other, "room": room, "at_s": a},
                    {"k": "task", "who": "me", "station": rng.randrange(20)},
                ):
                    allowed = fs.possible(c)
                    assert ch.check(c, name, now).verdict in allowed, (c, allowed)
                    checked += 1
                    sure += len(allowed) == 1
    assert checked > 500 and sure > checked / 3


# -- config --------------------------------------------------------------------------------------------------
def test_mode_off_is_accepted_as_written():
    """YAML reads an unquoted off as false: --set world.claims.mode=off means off; on names no mode."""
    cfg = load_config(WorldConfig, None, {"claims": parse_overrides(["mode=off"])})
    assert cfg.claims.mode == "off" and not cfg.claims.on
    with pytest.raises(ConfigError, match="write structured, free or off"):
        load_config(WorldConfig, None, {"claims": parse_overrides(["mode=on"])})


# -- free mode: claims in words, gold kept private -----------------------------------------------------------
def test_free_mode_says_claims_in_words_and_keeps_their_gold_private():
    from mau.claimsread.extract import Context, match_key, spot

    free = ClaimsConfig(mode="free")
    w = SimWorld(WorldConfig(claims=free))
    play_match(w, {p.name: ScriptedPolicy(p.name, w.map, 3, claims=free) for p in w.cfg.players}, 3)
    said = [e for e in w.state.events if e[F.TYPE] == F.EV_UTTERANCE]
    gold = [e for e in said if e.get(F.CLAIMS_GOLD)]
    assert gold and not any(F.CLAIMS in e for e in said)  # nothing structured is public
    assert any(e.get(F.CLAIM_INTENT) for e in gold)  # the lies are labelled, in the event log only
    names, places = [p.name for p in w.cfg.players], list(w.sights.lines[0][F.SIGHT_PLACE_NAMES])
    for e in gold:
        read = spot(
            e[F.UTTERANCE_TEXT], Context(e[F.SPEAKER], tuple(names), tuple(places), e[F.TICK] / 20, 0.0)
        )
        assert sorted(map(match_key, read)) == sorted(map(match_key, e[F.CLAIMS_GOLD])), e[F.UTTERANCE_TEXT]


def test_free_mode_keeps_the_words_and_no_claim_in_the_transcript():
    import json

    from mau.env.actions import Action
    from tests.test_claims import _meeting_world

    w = _meeting_world(ClaimsConfig(mode="free"))
    st = w.state
    good = {"k": "at", "who": "me", "room": "Admin", "from_s": 150, "to_s": 190}
    w.step({st.meeting.speaker: Action("speak", text="I was in Admin from 150 to 190 s.", claims=(good,),
                                       intent=("lie",))})
    e = st.events[-1]
    assert e[F.UTTERANCE_TEXT] == "I was in Admin from 150 to 190 s." and F.CLAIMS not in e
    assert e[F.CLAIMS_GOLD] == [{**good, "from_s": 150.0, "to_s": 190.0}] and e[F.CLAIM_INTENT] == ["lie"]
    obs = w.observe(st.meeting.order[1], "privileged")
    assert F.CLAIMS not in obs["meeting"]["transcript"][0] and "gold_claims" not in json.dumps(obs)
    assert "lie" not in json.dumps(obs["meeting"])
