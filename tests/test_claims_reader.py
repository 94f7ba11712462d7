"""The phrasing reader on free speech (docs/claims.md, "Extraction"): sentences written for its development,
none of them from the committed evaluation set (``mau/claimsread/data/claims_speech.jsonl``, fixed before the
reader changed and scored once, at the end), each with the claims it states; and every form of speech that
states no claim of the speaker (reported speech, hearsay, questions, plans, proposals, counterfactuals, an
earlier round) read as none."""

from __future__ import annotations

import pytest

from mau.claimsread.extract import match_key
from mau.claimsread.reader import Context, spot

NAMES = ("James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin")
ROOMS = ("Cafeteria", "Weapons", "O2", "Navigation", "Shields", "Communications", "Storage", "Admin",
         "Electrical", "Lower Engine", "Upper Engine", "Reactor", "Security", "Medbay")
CORRIDORS = ("corridor Cafeteria-Weapons", "corridor Cafeteria-Medbay", "corridor Cafeteria-Admin",
             "corridor Weapons-O2", "corridor O2-Navigation", "corridor Navigation-Shields",
             "corridor Shields-Communications", "corridor Admin-Storage", "corridor Communications-Storage",
             "corridor Storage-Electrical", "corridor Electrical-Security", "corridor Storage-Lower Engine",
             "corridor Security-Lower Engine", "corridor Medbay-Upper Engine",
             "corridor Upper Engine-Reactor", "corridor Reactor-Lower Engine")


def at(room, **t):
    return {"k": "at", "who": "me", "room": room, **t}


def saw(who, room, **t):
    return {"k": "saw", "who": who, "room": room, **t}


def with_(who, room, **t):
    return {"k": "with", "who": who, "room": room, **t}


def acc(who):
    return {"k": "accuse", "who": who}


def vch(who):
    return {"k": "vouch", "who": who}


def body(victim, room, near=(), **t):
    return {"k": "body", "victim": victim, "room": room, "near": list(near), **t}


def kill(who, victim, room=None, **t):
    return {"k": "saw_kill", "who": who, "victim": victim, **({"room": room} if room else {}), **t}


def task(station, **t):
    return {"k": "task", "who": "me", "station": station, **t}


END, START = {"when": "end"}, {"when": "start"}
# (speaker, text, the claims it states); the meeting at 200 s, the last one ended at 100 s
READ = [
    ("Jason", "I spent the round in Reactor, then wandered over to Upper Engine.", [at("Reactor"),
                                                                                   at("Upper Engine")]),
    ("Jason", "went from comms to storage, then down to elec", [at("Communications"), at("Storage"),
                                                                  at("Electrical")]),
    ("Noah", "I did the fuel in storage and then carried it over to lower engine.", [at("Storage"),
                                                                                    at("Lower Engine")]),
    ("Ethan", "my tasks are all in nav and shields tbh", [at("Navigation"), at("Shields")]),
    ("Olivia", "Spent ages in medbay waiting for the scan.", [at("Medbay")]),
    ("Steve", "I was hanging out in Cafeteria until someone hit the button.", [at("Cafeteria")]),
    ("Steve", "Started off in admin right after the last meeting.", [at("Admin", **START)]),
    ("Martin", "I was in reactor from 120 to 170 s, then headed to security.", [
        at("Reactor", from_s=120.0, to_s=170.0), at("Security")]),
    ("Martin", "I was in Weapons at 150 and saw Noah leave toward O2.", [
        at("Weapons", from_s=150.0, to_s=150.0), saw("Noah", "Weapons", at_s=150.0)]),
    ("James", "Michael was loitering in Shields doing nothing.", [saw("Michael", "Shields")]),
    ("James", "steve was running out of elec when i got there", [saw("Steve", "Electrical"),
                                                                at("Electrical")]),
    ("Ethan", "I caught noah sneaking around lower engine.", [saw("Noah", "Lower Engine")]),
    ("Olivia", "Jason and Martin were both hanging around Navigation.", [saw("Jason", "Navigation"),
                                                                         saw("Martin", "Navigation")]),
    ("Michael", "Ethan and I were doing tasks together in Electrical, he's clean.", [
        with_("Ethan", "Electrical"), vch("Ethan")]),
    ("Michael", "I stayed in O2. Steve and Jason were with me the entire time.", [
        with_("Steve", "O2"), with_("Jason", "O2")]),
    ("Noah", "me and liv were in security together", [with_("Olivia", "Security")]),
    ("Noah", "I was in Admin with mike the whole time.", [with_("Michael", "Admin")]),
    ("Steve", "I'm with Jason on this one, vote Olivia.", [acc("Olivia")]),
    ("James", "i was in cafe", [at("Cafeteria")]),
    ("James", "I was in comms, the Comms-Storage hallway was empty.", [at("Communications")]),
    ("Olivia", "I saw Micheal in Navigaton at like 180 seconds.", [saw("Michael", "Navigation", at_s=180.0)]),
    ("Olivia", "I saw Ethan in the hallway between Admin and Storage just now.", [
        saw("Ethan", "corridor Admin-Storage", **END)]),
    ("Martin", "Found Jason's body in Reactor, Noah was standing right over it.", [
        body("Jason", "Reactor", ["Noah"])]),
    ("Martin", "I walked into Storage and James was lying there dead, Olivia was next to him.", [
        body("James", "Storage", ["Olivia"])]),
    ("Ethan", "There's a body in Navigation and it's Steve's, I found it at 190s.", [
        body("Steve", "Navigation", at_s=190.0)]),
    ("Jason", "I watched Noah stab Olivia in Security!", [kill("Noah", "Olivia", "Security")]),
    ("Jason", "Olivia killed Steve right next to me in O2 at 160.", [
        kill("Olivia", "Steve", "O2", at_s=160.0)]),
    ("Michael", "I completed station 4 and station 9 before the meeting.", [task(4), task(9)]),
    ("Michael", "I finished my task at station 6 around 170 seconds.", [task(6, at_s=170.0)]),
    ("Steve", "I think Ethan is the imposter.", [acc("Ethan")]),
    ("Steve", "ethan sus af", [acc("Ethan")]),
    ("Steve", "Not gonna lie, Jason is acting sus.", [acc("Jason")]),
    ("Steve", "I don't trust Martin at all.", [acc("Martin")]),
    ("Steve", "I'm voting for James.", [acc("James")]),
    ("Steve", "Martin is innocent, I watched him do a task.", [vch("Martin")]),
    ("Steve", "I don't think it's Olivia.", [vch("Olivia")]),
    ("Steve", "Noah is definitely not the imposter.", [vch("Noah")]),
    ("Steve", "I believe Ethan.", [vch("Ethan")]),
    ("Steve", "Olivia is right about Noah.", []),
    ("Olivia", "I wasn't in Storage at all, I was in Medbay.", [at("Medbay")]),
    ("Olivia", "I never saw James anywhere near Admin.", []),
    ("Olivia", "I'm not accusing Noah yet.", []),
    ("Noah", "Was Jason with you in Medbay, Ethan? I saw him in Security.", [saw("Jason", "Security")]),
    ("Noah", "I saw Steve vent... I mean leave Weapons fast.", [saw("Steve", "Weapons")]),
    ("Noah", "I was in Electrical when the body was reported.", [at("Electrical", **END)]),
    ("Noah", "I was in Admin. Steve was there too.", [at("Admin"), saw("Steve", "Admin")]),
    ("Ethan", "I passed through Storage on my way to Electrical.", []),
    ("Ethan", "I walked past Admin and then did wires in Electrical.", [at("Electrical")]),
    ("Ethan", "This round I was in Shields, last round I was in O2.", [at("Shields")]),
    ("Ethan", "I was in Cafeteria when the meeting was called. I saw Michael near where Steve died (0 blocks "
              "away at 151.75 s). Vote Michael.", [at("Cafeteria", **END), acc("Michael")]),
    ("Ethan", "Honestly, I've been doing tasks in Medbay and Upper Engine this whole round.", [
        at("Medbay"), at("Upper Engine")]),
    ("Ethan", "I can confirm Steve was in Admin, I saw him swipe his card.", [saw("Steve", "Admin")]),
    ("Ethan", "I was with Noah most of the time in Navigation, so I can vouch for him.", [
        with_("Noah", "Navigation"), vch("Noah")]),
    ("Ethan", "After the meeting I headed straight to O2.", [at("O2")]),
    ("Ethan", "I saw someone in Weapons but couldn't tell who.", []),
    ("Ethan", "I reported Noah's body, it was in Lower Engine.", [body("Noah", "Lower Engine")]),
    ("Ethan", "Martin, you were in Security, right?", []),
    ("Ethan", "James was with Olivia in Shields.", [saw("James", "Shields"), saw("Olivia", "Shields")]),
    ("Ethan", "I didn't see anything, I was doing wires in Electrical the whole time.", [at("Electrical")]),
    ("Ethan", "I only saw Steve once, in Cafeteria.", [saw("Steve", "Cafeteria")]),
    ("Ethan", "Steve, Jason and I were all in Cafeteria at the start.", [
        with_("Steve", "Cafeteria", **START), with_("Jason", "Cafeteria", **START)]),
    ("Ethan", "I think it was Michael, he was the only one near Reactor.", [acc("Michael"),
                                                                            saw("Michael", "Reactor")]),
    ("Ethan", "I was in Admin and Noah walked in around 150s.", [
        at("Admin"), saw("Noah", "Admin", at_s=150.0)]),
    ("Ethan", "Martin came into Medbay while I was scanning.", [saw("Martin", "Medbay")]),
    ("Ethan", "Jason is my top suspect.", [acc("Jason")]),
    ("Ethan", "My vote goes to Olivia.", [acc("Olivia")]),
    ("Ethan", "I'll vote Noah.", [acc("Noah")]),
    ("Ethan", "I trust Jason and Michael, they were with me.", [vch("Jason"), vch("Michael")]),
    ("Ethan", "Olivia was in Weapons with me at 130 seconds.", [with_("Olivia", "Weapons", from_s=130.0,
                                                                      to_s=130.0)]),
    ("Ethan", "i saw noah and martin in admin and they looked fine", [
        saw("Noah", "Admin"), saw("Martin", "Admin")]),
    ("Ethan", "Michael is definitely crew, I watched him do the asteroids in Weapons.", [
        vch("Michael"), saw("Michael", "Weapons")]),
    ("Ethan", "It could be Jason, I'm not sure.", []),
    ("Ethan", "Olivia and Noah are both sus.", [acc("Olivia"), acc("Noah")]),
    ("Ethan", "Skip vote from me.", []),
    ("Ethan", "I was in Navigation, charting the course, around the 170 mark.", [
        at("Navigation", from_s=170.0, to_s=170.0)]),
    ("Ethan", "Body in Shields! It's Michael. Jason was standing right next to it.", [
        body("Michael", "Shields", ["Jason"])]),
    ("Ethan", "i finished wires in elec then swiped card in admin", [at("Electrical"), at("Admin")]),
]
# speech that states no claim of the speaker, one list per form
NONE = {
    "reported speech": [
        "Olivia said she was in Shields the whole round.", "Martin says he saw Noah in Storage.",
        "Jason claims he was with Ethan in Admin.", "Steve's alibi is that he was in Reactor.",
        "Noah told us he found the body in Electrical.", "Ethan keeps saying he finished station 3.",
    ],
    "hearsay": [
        "According to Olivia, Jason killed Steve in O2.", "Apparently Michael was in Weapons.",
        "I heard that Noah was seen near Medbay.", "Supposedly James and Martin were together in Admin.",
        "Michael thinks Olivia is the imposter.",
    ],
    "question": [
        "Where was everyone when the lights went off?", "Jason, were you in Navigation?",
        "Did anyone see Martin in Storage?", "Who found the body in Reactor?",
        "Noah, why were you in Security?",
    ],
    "plan": [
        "I'm going to do my tasks in Admin after this.", "Next round I'll stay with Steve in Cafeteria.",
        "I'm gonna check Medbay after the vote.", "I will follow Noah to Storage.",
    ],
    "proposal": [
        "Let's all go to Electrical together.", "We should check Admin before voting.",
        "Maybe we should stay in Cafeteria as a group.", "How about we split up between Shields and O2?",
        "Let's make sure Noah and I stay in Admin together.",
    ],
    "counterfactual": [
        "If I had been in Storage I would have seen who did it.",
        "If Noah was really in Admin, Steve would have seen him.",
        "Had Jason been in Weapons, he would have found the body.", "Ethan could have been in Reactor.",
    ],
    "earlier round": [
        "Last round I was in Medbay with Olivia.", "In the first round I saw James in Weapons.",
        "Last time I found a body in Storage.", "Last round, I was in O2.",
    ],
    "on the way": [
        "I was heading to Storage when the meeting was called.", "I was on my way to Admin.",
        "I was walking towards Navigation.",
    ],
}


def ctx(speaker: str) -> Context:
    return Context(speaker, NAMES, ROOMS + CORRIDORS, 200.0, 100.0)


def keys(claims):
    return sorted(map(repr, map(match_key, claims)))


@pytest.mark.parametrize("speaker,text,gold", READ, ids=[t[:40] for _, t, _ in READ])
def test_the_reader_reads_what_free_speech_states(speaker, text, gold):
    assert keys(spot(text, ctx(speaker))) == keys(gold)


@pytest.mark.parametrize("form,text", [(f, t) for f, ts in NONE.items() for t in ts])
def test_speech_that_states_no_claim_of_the_speaker_gives_none(form, text):
    assert spot(text, ctx("Steve")) == [], form


def test_the_scripted_lines_say_where_the_speaker_stood_at_the_call():
    """The scripted players' alibi and stance lines name the room they stood in when the meeting was called;
    their words say so, and are read so (a claim of the last 20 s: docs/claims.md, "Untimed claims"), never as
    a stay the speaker did not make."""
    from mau.env.speech import ALIBI, POOLS, STANCE

    for form in POOLS[ALIBI] + POOLS[STANCE]:
        text = form.format(room="Admin")
        assert keys(spot(text, ctx("Steve"))) == keys([at("Admin", **END)]), text
