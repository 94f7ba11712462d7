"""Golden renderings of every prompt (style x role x module) for one fixed scenario.

A template or state-text change shows up here as a diff; after checking it, refresh the files with
``MAU_UPDATE_GOLDEN=1 python -m pytest tests/test_prompts_golden.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mau.claims.config import ClaimsConfig
from mau.env.actions import Action
from mau.harness.config import AriaConfig
from mau.harness.memory import SemanticMemory, Suspicion, WindowMemory
from mau.harness.modules import MODULES
from mau.harness.prompting import PromptBuilder, modules_for
from tests.helpers import make_world, park_everyone, place

GOLDEN = Path(__file__).parent / "golden" / "prompts"
CASES = [(style, role, module) for style in ("minimal", "deterministic") for role in ("crewmate", "imposter")
         for module in modules_for(style, role)]


def _scenario(claims: bool = False):
    """James and Olivia imposters; James has just killed Steve in Cafeteria, Jason watching; then a meeting
    (with ``claims``: structured claims on, and James backs his words with two)."""
    w = make_world(roles="paper")
    if claims:
        w.config.claims = ClaimsConfig(mode="structured")
        w.rules.claims = w.config.claims
    w.reset(0)
    park_everyone(w)
    st = w.state
    st.tick = 3000
    st.step = 30
    place(w, "James", 84.5, 70.5, yaw_deg=90)
    place(w, "Steve", 84.5, 72.5)
    place(w, "Jason", 84.5, 80.5, yaw_deg=-90)
    st.player("James").kill_cooldown = 0
    w.rules.do_kill(st, st.player("James"), st.player("Steve"), ["Jason"])
    w._see_bodies()
    roam = {n: w.observe(n, "privileged") for n in ("Jason", "James")}
    ego = {n: w.observe(n, "ego") for n in ("Jason", "James")}
    w.rules.do_report(st, st.player("Jason"), st.bodies[0])
    w.step({"Jason": Action("speak", text="I saw James kill Steve in Cafeteria. Vote James.")})
    said = (
        {"k": "at", "who": "me", "room": "Admin", "from_s": 120, "to_s": 150},
        {"k": "accuse", "who": "Jason"},
    )
    w.step({"James": Action("speak", text="That is not true, I was in Admin. I suspect Jason.",
                            claims=said if claims else None, intent=("lie", None) if claims else None)})
    meeting = {n: w.observe(n, "privileged") for n in ("Jason", "James")}
    return roam, ego, meeting


def _render(style: str, role: str, module: str, claims: bool = False) -> str:
    roam, ego, meeting = _scenario(claims)
    name = "Jason" if role == "crewmate" else "James"
    obs = meeting[name] if module in ("meeting", "vote", "belief") else roam[name]
    builder = PromptBuilder(AriaConfig(prompt_style=style), make_world(roles="paper").cfg, make_world().map,
                            ClaimsConfig(mode="structured") if claims else None)
    mem = SemanticMemory(name, [p["name"] for p in obs["roster"]], 20)
    mem.observe(roam[name])
    sus = Suspicion(name, [p["name"] for p in obs["roster"]])
    sus.update("Michael", 0.2, 0.3)
    others = [p["name"] for p in obs["roster"] if p["name"] not in (name, "Steve")]
    extra = {"sighting": "Michael acting suspiciously.", "body": "Steve", "strategy": "finish missions",
             "outcome": "Meeting outcome: No one was ejected.", "event": 'Michael said: "I was in Admin."'}
    msgs = builder.messages(module, obs, memory=mem.render(), skills="Lessons from earlier meetings:\n- "
                                                                     "watch",
                            others=others, n_images=len(MODULES[module].images), suspicion=sus.render(others),
                            **extra)
    images = sum(1 for p in msgs[1]["content"] if p["type"] == "image")
    return f"{msgs[0]['content']}\n--- user ({images} images) ---\n{msgs[1]['content'][0]['text']}\n"


@pytest.mark.parametrize("style, role, module", CASES)
def test_golden_prompt(style, role, module):
    path = GOLDEN / f"{style}_{role}_{module}.txt"
    text = _render(style, role, module)
    if os.environ.get("MAU_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), (f"missing golden file {path}; run with MAU_UPDATE_GOLDEN=1 after checking the "
                            f"prompt")
    assert text == path.read_text()


@pytest.mark.parametrize("style, role", [("minimal", "crewmate"), ("deterministic", "imposter")])
def test_golden_meeting_prompt_with_claims(style, role):
    """With claims on: the transcript shows the claims rendered, the MEETING format asks for claims; no
    label."""
    path = GOLDEN / f"{style}_{role}_meeting_claims.txt"
    text = _render(style, role, "meeting", claims=True)
    if os.environ.get("MAU_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.is_file(), (f"missing golden file {path}; run with MAU_UPDATE_GOLDEN=1 after checking the "
                            f"prompt")
    assert text == path.read_text()
    assert "I was in Admin from 120 s to 150 s. I accuse Jason." in text and '"claims": [' in text
    assert "intent" not in text and "\"lie\"" not in text


def test_window_memory_renders_in_prompts():
    roam, _, _ = _scenario()
    mem = WindowMemory(10)
    mem.observe(roam["Jason"])
    assert "Recent steps:" in mem.render() and "body of Steve" in mem.render()
