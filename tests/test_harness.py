"""ARIA: full matches with scripted experts, the records, each axis doing what it should, no role leak."""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from mau import schema as F
from mau.cli import main
from mau.commands.play import PlayConfig
from mau.config import load_config
from mau.env.sim import SimWorld
from mau.harness.agent import AriaAgent
from mau.harness.backends.base import ModelBackend, ModelConfig, ModelRequest, ModelResponse
from mau.harness.backends.scripted import Backend as ScriptedBackend
from mau.harness.calls import Caller, CallLog, FrameStore
from mau.harness.config import AriaConfig, SeatConfig
from mau.harness.modules import MODULES, Context, decide
from mau.harness.prompting import PromptBuilder
from tests.helpers import park_everyone, place

ARIA = "configs/play/aria_scripted.yaml"


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / F.CALLS_FILE).read_text().splitlines()]


@pytest.fixture(scope="module")
def aria_match(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aria") / "m"
    assert main(["play", "--config", ARIA, "--seed", "3", "--out", str(out)]) == 0
    return out


def test_full_aria_match_records_every_call_with_its_frames(aria_match):
    h = json.loads((aria_match / F.MATCH_HEADER).read_text())
    recs = _records(aria_match)
    assert h["calls"]["calls"] == len(recs) > 100
    assert h["calls"]["fallbacks"] == 0  # the scripted expert's answers all pass the checks
    keys = {F.CALL_ID, F.MATCH, F.STEP, F.TICK, "phase", F.AGENT, F.ROLE, F.MODULE, F.HARNESS, F.MESSAGES,
            F.RAW_OUTPUT, F.PARSED, F.FALLBACK, F.FALLBACK_REASON, F.LATENCY_S, F.PROMPT_TOKENS,
            F.COMPLETION_TOKENS, F.MODEL, F.BACKEND}
    for r in recs:
        assert keys <= set(r), keys - set(r)
        assert r[F.MESSAGES][0]["role"] == "system" and r[F.MESSAGES][1]["role"] == "user"
        for part in r[F.MESSAGES][1]["content"]:
            if part["type"] == "image":
                assert (aria_match / part["path"]).is_file()
    assert len({r[F.CALL_ID] for r in recs}) == len(recs)
    modules = {r[F.MODULE] for r in recs}
    assert {"plan", "surveillance", "mission", "meeting", "vote", "reflect"} <= modules
    with_images = [r for r in recs if any(p["type"] == "image" for p in r[F.MESSAGES][1]["content"])]
    assert with_images and h["frames_saved"] == len(list((aria_match / F.FRAMES_DIR).glob("*.jpg")))
    surv = next(r for r in recs if r[F.MODULE] == "surveillance")
    assert [p["path"].rsplit("_", 1)[1] for p in surv[F.MESSAGES][1]["content"] if p["type"] == "image"] == \
        ["fwd.jpg", "back.jpg"]


def test_memory_is_dumped_at_meeting_ends(aria_match):
    h = json.loads((aria_match / F.MATCH_HEADER).read_text())
    events = [json.loads(x) for x in (aria_match / F.EVENTS_FILE).read_text().splitlines()]
    meetings = sum(e["type"] == "meeting_end" for e in events)
    dumps = [json.loads(x) for x in (aria_match / F.MEMORY_FILE).read_text().splitlines()]
    assert meetings >= 1 and {d["meeting"] for d in dumps} <= set(range(1, meetings + 1))
    assert all(d["memory"]["kind"] == "semantic" and "beliefs" in d["memory"] for d in dumps)
    assert h["outcome"]


def test_imposter_actions_carry_private_narration(aria_match):
    events = [json.loads(x) for x in (aria_match / F.EVENTS_FILE).read_text().splitlines()]
    h = json.loads((aria_match / F.MATCH_HEADER).read_text())
    narrated = [e for e in events if e["type"] == "action_start" and e["action"].get("narration")]
    assert narrated and all(h["roles"][e["player"]] == "imposter" for e in narrated)


def _strip_timing(recs):
    return [{k: v for k, v in r.items() if k not in (F.LATENCY_S, F.HARNESS_MS)} for r in recs]


def test_aria_matches_are_deterministic(tmp_path):
    outs = []
    for k in range(2):
        out = tmp_path / f"m{k}"
        assert main(["play", "--config", ARIA, "--seed", "5", "--out", str(out),
                     "--set", "world.game.max_steps=25"]) == 0
        outs.append(out)
    a, b = (_strip_timing(_records(o)) for o in outs)
    for r in a + b:
        r[F.CALL_ID] = r[F.CALL_ID].split(":")[1]
        r[F.MATCH] = None
    assert a == b
    assert (outs[0] / F.EVENTS_FILE).read_text() == (outs[1] / F.EVENTS_FILE).read_text()


# -- one agent under test, with a backend whose answers the test chooses -------------------------------------
class FixedBackend(ModelBackend):
    """Answers each module with a fixed JSON text (or the scripted expert's, for modules not given)."""

    name = "fixed"

    def __init__(self, answers: dict[str, str]):
        super().__init__(ModelConfig())
        self.answers = answers
        self.scripted = ScriptedBackend(ModelConfig())
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if request.module in self.answers:
            return ModelResponse(text=self.answers[request.module])
        return await self.scripted.complete(request)


def _aria_world(**aria: Any):
    cfg = load_config(PlayConfig, ARIA)
    world = SimWorld(cfg.world)
    seat = SeatConfig(aria=AriaConfig(**aria))
    return world, seat


def _agent(world, seat, name, backend, folder=None):
    st = world.state
    p = st.player(name)
    caller = Caller(world, CallLog(folder), "t", {q.name: {} for q in st.players})
    return AriaAgent(name, p.role, [q.name for q in st.players], seat, backend,
                     PromptBuilder(seat.aria, world.cfg, world.map), caller, FrameStore(world, folder),
                     list(world.map.room_names))


def _user_text(req: ModelRequest) -> str:
    return req.messages[1]["content"][0]["text"]


def test_ego_prompt_never_lists_a_player_behind_a_wall_privileged_does():
    for mode in ("ego", "privileged"):
        world, seat = _aria_world(state=mode)
        world.reset(0)
        st = world.state
        crew = next(p.name for p in st.players if not p.is_imposter)
        other = next(p.name for p in st.players if p.name != crew)
        park_everyone(world)
        place(world, crew, 80.5, 84.5, yaw_deg=90)  # Cafeteria, facing the wall to Medbay
        place(world, other, 85.5, 95.5)  # in Medbay, behind that wall
        backend = FixedBackend({})
        agent = _agent(world, seat, crew, backend)
        asyncio.run(agent.roam(world.observe(crew, mode)))
        text = _user_text(backend.requests[0])
        in_view = next(line for line in text.splitlines() if line.startswith("Players in view"))
        assert other not in in_view
        positions = [line for line in text.splitlines() if line.startswith("Last known positions")]
        if mode == "ego":
            assert positions == []
        else:
            assert other in positions[0]


def test_minimal_prompts_carry_no_tactics_deterministic_ones_do():
    world, _ = _aria_world()
    world.reset(0)
    for style in ("minimal", "deterministic"):
        seat = SeatConfig(aria=AriaConfig(prompt_style=style))
        builder = PromptBuilder(seat.aria, world.cfg, world.map)
        for p in world.state.players:
            obs = world.observe(p.name, "privileged")
            system = builder.system(obs)
            assert ("Tactics" in system) == (style == "deterministic")
    det = (Path("mau/harness/prompts/deterministic/crewmate.yaml").read_text())
    tactic_lines = [ln.strip()[2:] for ln in det.splitlines() if ln.strip().startswith("- ")]
    mini = Path("mau/harness/prompts/minimal/crewmate.yaml").read_text()
    assert tactic_lines and not any(t in mini for t in tactic_lines)


def test_window_memory_is_bounded():
    world, seat = _aria_world(memory="window", window_size=4, surveillance=False)
    world.reset(1)
    backend = FixedBackend({})
    name = next(p.name for p in world.state.players if not p.is_imposter)
    agent = _agent(world, seat, name, backend)
    for _ in range(12):
        if world.state.phase != "roam":
            break
        action = asyncio.run(agent.roam(world.observe(name, "privileged")))
        world.step({name: action})
    assert len(agent.memory.steps) == 4
    last = _user_text(backend.requests[-1])
    assert len(re.findall(r"^- step \d+", last, re.M)) <= 4


def test_reflection_deltas_are_clamped():
    world, seat = _aria_world(reflection="meeting", suspicion_clamp=0.3)
    world.reset(0)
    names = [p.name for p in world.state.players]
    crew = next(p.name for p in world.state.players if not p.is_imposter)
    a, b = [n for n in names if n != crew][:2]
    answer = json.dumps({"insights": "x", "most_suspicious": a, "skill_learned": "watch closely",
                         "suspicion_updates": [{"player": a, "delta": 5.0}, {"player": b, "delta": -7}]})
    agent = _agent(world, seat, crew, FixedBackend({"reflect": answer}))
    dump = asyncio.run(agent.after_meeting(world.observe(crew, "privileged"), "nobody was ejected"))
    assert dump["suspicion_applied"] == [{"player": a, "delta": 0.3}, {"player": b, "delta": -0.3}]
    scores = agent.suspicion.scores
    assert scores[a] == 0.3 and scores[b] == 0.0  # bounded to [0, 1]
    asyncio.run(agent.after_meeting(world.observe(crew, "privileged"), "again"))
    asyncio.run(agent.after_meeting(world.observe(crew, "privileged"), "again"))
    asyncio.run(agent.after_meeting(world.observe(crew, "privileged"), "again"))
    assert scores[a] == 1.0 and dump["suspicion"][a] == 0.3
    assert agent.skills.retrieve() == ["watch closely"] * 4


def test_skill_memory_is_fifo_and_retrieves_the_most_recent():
    from mau.harness.memory import SkillMemory

    s = SkillMemory(size=50, k=5)
    for i in range(60):
        s.add(f"lesson {i}")
    assert len(s.items) == 50 and s.items[0] == "lesson 10"
    assert s.retrieve() == [f"lesson {i}" for i in range(55, 60)]


def test_reflection_off_makes_no_reflect_calls(tmp_path):
    out = tmp_path / "m"
    assert (
        main(
            [
                "play", "--config", ARIA, "--seed", "3", "--out", str(out), "--set",
                "seats.crewmate.aria.reflection=off", "--set", "seats.imposter.aria.reflection=off",
            ]
        )
        == 0
    )
    recs = _records(out)
    assert not any(r[F.MODULE] == "reflect" for r in recs)
    assert all("Lessons from earlier meetings" not in json.dumps(r[F.MESSAGES]) for r in recs)


def test_hierarchical_planning_sets_a_strategy_every_five_steps(tmp_path):
    out = tmp_path / "m"
    assert (
        main(
            [
                "play", "--config", ARIA, "--seed", "4", "--out", str(out), "--set",
                "world.game.max_steps=21", "--set", "seats.crewmate.aria.planning=hierarchical",
            ]
        )
        == 0
    )
    recs = _records(out)
    h = json.loads((out / F.MATCH_HEADER).read_text())
    crew = [n for n, r in h["roles"].items() if r == "crewmate"]
    agent = crew[0]
    strat_steps = [r[F.STEP] for r in recs if r[F.AGENT] == agent and r[F.MODULE] == "strategy"]
    short = [r for r in recs if r[F.AGENT] == agent and r[F.MODULE] == "plan_short"]
    assert strat_steps[:3] == [0, 5, 10] and short
    assert not any(r[F.MODULE] == "plan" and r[F.AGENT] in crew for r in recs)
    assert "Your strategy:" in short[1][F.MESSAGES][1]["content"][0]["text"]


def test_no_crewmate_prompt_depends_on_hidden_roles():
    """Swap the roles of two unrevealed players at many points of many matches: every crewmate's prompts
    (built from its observation) must stay exactly the same, so none can carry a hidden role."""
    from mau.env.scripted import ScriptedPolicy

    checked = 0
    for seed in range(3):
        world = SimWorld()
        world.reset(seed)
        pols = {p.name: ScriptedPolicy(p.name, world.map, seed) for p in world.state.players}
        builders = {m: PromptBuilder(AriaConfig(state=m, prompt_style="deterministic"), world.cfg, world.map)
                    for m in ("ego", "privileged")}
        while not world.done:
            st = world.state
            if (st.step + st.meeting_steps) % 4 == 0:
                revealed = {e["name"] for e in st.ejections}
                for viewer in [p for p in st.players if p.active and not p.is_imposter]:
                    hidden = [p for p in st.players if p is not viewer and p.name not in revealed]
                    imp = next((p for p in hidden if p.is_imposter), None)
                    mate = next((p for p in hidden if not p.is_imposter), None)
                    if imp is None or mate is None:
                        continue
                    for mode, builder in builders.items():
                        before = _all_prompts(builder, world, viewer.name, mode)
                        imp.role, mate.role = mate.role, imp.role
                        after = _all_prompts(builder, world, viewer.name, mode)
                        imp.role, mate.role = mate.role, imp.role
                        assert before == after
                        checked += 1
            world.step({p.name: pols[p.name].act(world.observe(p.name)) for p in st.players if p.active})
    assert checked > 200


def _all_prompts(builder: PromptBuilder, world, name: str, mode: str) -> list[Any]:
    obs = world.observe(name, mode)
    others = [n["name"] for n in obs["roster"] if n["name"] != name]
    return [
        builder.messages(module, obs, memory="", others=others)
        for module in (
            "surveillance", "emergency", "report", "plan", "plan_short", "strategy", "mission", "move",
            "meeting", "vote", "reflect",
        )
    ]


@pytest.mark.parametrize("text, reason", [
    (None, "empty answer"), ("", "empty answer"), ("I vote for Noah", "no JSON object"),
    ('{"vote_target": "Noah"', "unclosed"), ('{"vote_target": 3}', "expected a name"),
    ('{"vote_target": "Bob"}', "not one of"), ('[1, 2]', "no JSON object"),
    ('{"vote_target": "__import__(\'os\').system(\'touch /tmp/mau-pwned\')"}', "not one of"),
])
def test_bad_answers_fall_back_and_say_why(world, text, reason):
    st = world.state
    bx, bz = world.map.button
    place(world, "Steve", bx, bz)
    st.tick = 5000
    world.rules.do_button(st, st.player("Steve"))
    while st.phase == "discussion":
        world.step({})
    ctx = Context(world.observe("Jason"), list(world.map.room_names))
    answer, why = decide("vote", text, None if text is not None else "empty answer", ctx)
    assert answer == MODULES["vote"].fallback(ctx) and reason in why
    assert not os.path.exists("/tmp/mau-pwned")


def test_good_answers_are_normalised(world):
    ctx = Context(world.observe("Jason"), list(world.map.room_names))
    answer, why = decide("plan", '```json\n{"mode": "MISSION", "target": "none", "reasoning": '
                                 '"go"}\n```', None, ctx)
    assert why is None and answer["mode"] == "mission"
    answer, why = decide("mission", json.dumps({"station": str(ctx.stations[0])}), None, ctx)
    assert why is None and answer["station"] == ctx.stations[0]


def test_prompts_per_style_role_module_exist():
    from mau.harness.prompting import modules_for

    crew = set(modules_for("minimal", "crewmate"))
    imp = set(modules_for("minimal", "imposter"))
    assert crew == set(modules_for("deterministic", "crewmate"))
    assert imp == set(modules_for("deterministic", "imposter"))
    assert "kill" in imp and "kill" not in crew
    assert {"surveillance", "emergency"} <= crew and not ({"surveillance", "emergency"} & imp)


def test_a_seat_model_can_answer_only_some_modules(tmp_path):
    """modules: [vote]: the seat's model answers VOTE; every other module goes to rest_model (scripted)."""
    out = tmp_path / "m"
    assert main(["play", "--config", ARIA, "--seed", "3", "--out", str(out),
                 "--set", "seats.crewmate.modules=[vote]", "--set", "seats.crewmate.model.model=voter",
                 "--set", "seats.crewmate.rest_model.model=rest"]) == 0
    recs = _records(out)
    crew = [r for r in recs if r[F.ROLE] == "crewmate"]
    assert {r[F.MODEL] for r in crew if r[F.MODULE] == "vote"} == {"voter"}
    assert {r[F.MODEL] for r in crew if r[F.MODULE] != "vote"} == {"rest"}
    with pytest.raises(Exception, match="'voting' is not a module"):
        SeatConfig(modules=["voting"])


def test_call_records_and_observations_have_their_declared_shapes(tmp_path):
    """calls.jsonl lines carry exactly the keys of schema.CallRecord; observations only Observation's keys."""
    import json as _json

    from mau import schema as F
    from mau.cli import main as cli_main

    out = tmp_path / "m"
    assert cli_main(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "3", "--out", str(out),
                     "--set", "world.game.max_steps=6"]) == 0
    with open(out / F.CALLS_FILE) as f:
        keys = {frozenset(_json.loads(line)) for line in f}
    assert keys == {frozenset(F.CallRecord.__annotations__)}
    from mau.env.sim import SimWorld

    w = SimWorld()
    w.reset(1)
    for p in w.state.players:
        for mode in ("ego", "privileged"):
            assert set(w.observe(p.name, mode)) <= set(F.Observation.__annotations__)
# -- suspicion: BELIEF calls, the state text, VOTE's fallback, KILL's DEFER ----------------------------------
def _meeting_world(memory: str, **aria: Any):
    """A meeting under way (Steve reported), everyone parked; returns world, seat, a crewmate listener."""
    world, seat = _aria_world(memory=memory, **aria)
    world.reset(3)
    park_everyone(world)
    st = world.state
    crew = [p.name for p in st.players if not p.is_imposter]
    body_of = crew[0]
    st.player(body_of).alive = False
    world.rules.do_button(st, st.player(crew[1]))
    return world, seat, crew[2]


def test_semantic_memory_updates_beliefs_after_each_utterance_with_clamped_deltas():
    world, seat, me = _meeting_world("semantic")
    target = next(n for n in world.state.meeting.order if n != me)
    answer = json.dumps({"suspicion_updates": [{"player": target, "delta": 0.9}], "reasoning": "r"})
    backend = FixedBackend({"belief": answer})
    folder = Path(tempfile.mkdtemp())
    agent = _agent(world, seat, me, backend, folder)
    asyncio.run(agent.listen(world.observe(me, "privileged"), target, "I was in Admin."))
    assert agent.suspicion.scores[target] == 0.3  # clamped to the paper's +/- 0.3
    req = backend.requests[-1]
    assert req.module == "belief" and f'{target} said: "I was in Admin."' in _user_text(req)
    agent.caller.log.close()
    rec = [json.loads(x) for x in (folder / "calls.jsonl").read_text().splitlines()]
    assert rec[-1]["module"] == "belief" and not rec[-1]["fallback"]  # recorded like every call
    # a broken answer: the deterministic fallback changes nothing for an utterance
    agent2 = _agent(world, seat, me, FixedBackend({"belief": "not json"}))
    asyncio.run(agent2.listen(world.observe(me, "privileged"), target, "hello"))
    assert agent2.suspicion.scores[target] == 0.0
    # window memory makes no BELIEF call
    world_w, seat_w, me_w = _meeting_world("window")
    backend_w = FixedBackend({"belief": answer})
    asyncio.run(
        _agent(world_w, seat_w, me_w, backend_w).listen(world_w.observe(me_w, "privileged"), target, "x")
    )
    assert not backend_w.requests


def test_surveillance_flag_updates_suspicion_in_both_memories_and_the_state_text_shows_it():
    for memory in ("semantic", "window"):
        for mode in ("ego", "privileged"):
            world, seat = _aria_world(memory=memory, state=mode)
            world.reset(0)
            st = world.state
            crew = next(p.name for p in st.players if not p.is_imposter)
            other = next(p.name for p in st.players if p.name != crew)
            flag = json.dumps({"players_seen": [], "detail": "lurking", "suspect": other})
            backend = FixedBackend({"surveillance": flag, "belief": "broken"})  # BELIEF falls back: +0.1
            agent = _agent(world, seat, crew, backend)
            asyncio.run(agent.roam(world.observe(crew, mode)))
            assert agent.suspicion.scores[other] == 0.1, (memory, mode)
            assert [r.module for r in backend.requests].count("belief") == (memory == "semantic")
            last = _user_text(backend.requests[-1])
            line = next(x for x in last.splitlines() if x.startswith("Suspicion scores"))
            assert f"{other} 0.10" in line, (memory, mode)


def test_vote_fallback_is_the_highest_suspicion_above_zero_and_never_a_teammate():
    from mau.harness import modules as M

    world, seat = _aria_world()
    world.reset(0)
    st = world.state
    imp = next(p for p in st.players if p.is_imposter)
    mate = next(p.name for p in st.players if p.is_imposter and p is not imp)
    crew = [p.name for p in st.players if not p.is_imposter]
    obs = world.observe(imp.name, "privileged")
    ctx = M.Context(obs, list(world.map.room_names), suspicion={mate: 0.9, crew[0]: 0.2, crew[1]: 0.4})
    assert M.fallback_vote(ctx)["vote_target"] == crew[1]
    ctx = M.Context(obs, list(world.map.room_names), suspicion={mate: 0.9, crew[0]: 0.0})
    assert M.fallback_vote(ctx)["vote_target"] == "skip"
    ans, why = M.decide(
        "vote", "garbage", None, M.Context(obs, list(world.map.room_names), suspicion={crew[2]: 0.5})
    )
    assert why and ans["vote_target"] == crew[2]


def test_kill_defer_with_a_witness_moves_away():
    world, seat = _aria_world()
    world.reset(0)
    st = world.state
    park_everyone(world)
    imp = next(p.name for p in st.players if p.is_imposter)
    a, b = [p.name for p in st.players if not p.is_imposter][:2]
    place(world, imp, 84.5, 70.5, yaw_deg=90)
    place(world, a, 84.5, 73.5)
    place(world, b, 84.5, 76.5)
    st.player(imp).kill_cooldown = 0
    defer = json.dumps({"decision": "DEFER", "target": "none", "reasoning": "a witness"})
    agent = _agent(world, seat, imp, FixedBackend({"kill": defer}))
    action = asyncio.run(agent.roam(world.observe(imp, "privileged")))
    assert action is not None and action.kind == "flee" and action.target == a
