"""The minecraft backend against a real flying-squid server and mineflayer bots on loopback.

Optional component (README): these tests skip when the Node side is not installed (`make minecraft`), except
where MAU_REQUIRE_MINECRAFT=1 (CI sets it), where a missing install fails them.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mau.env.config import COLOR_RGB, GameConfig, WorldConfig
from mau.env.minecraft.host import POOL, frames_installed, installed
from mau.env.state import DISCUSSION, ENDED, OUTCOMES, ROAM
from mau.errors import MauError
from tests.helpers import finished_matches, kill_group_when

REQUIRED = os.environ.get("MAU_REQUIRE_MINECRAFT") == "1"
_missing = installed()
if _missing and not REQUIRED:
    pytest.skip(f"the minecraft backend is not installed: {_missing}", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _remove_host_logs():
    """The worlds keep their host's log in a temp folder after a match (for diagnosis); the tests' go."""
    import glob
    import shutil
    import tempfile

    pattern = str(Path(tempfile.gettempdir()) / "mau-minecraft-*")
    before = set(glob.glob(pattern))
    yield
    for d in set(glob.glob(pattern)) - before:
        shutil.rmtree(d, ignore_errors=True)


def _world(**game):
    from mau.env.backends import make_world

    return make_world(WorldConfig(backend="minecraft", game=GameConfig(**game)))


def _host_pids() -> set[int]:
    """Running processes of the Node host (any match), from /proc."""
    pids = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(c.endswith(b"minecraft/host.js") for c in cmd):
            pids.add(int(d.name))
    return pids


class RulesRecorder:
    """Wraps a world's rules so that every kill, report and button press is recorded with the positions and
    clock at that moment; ``check`` then verifies them independently of the rules code."""

    def __init__(self, world):
        self.world, self.kills, self.reports, self.buttons = world, [], [], []
        rules = world.rules
        orig_kill, orig_report, orig_button = rules.do_kill, rules.do_report, rules.do_button

        def do_kill(st, killer, victim, witnesses):
            dist = math.hypot(killer.x - victim.x, killer.z - victim.z)
            self.kills.append((st.tick, killer.name, killer.kill_cooldown, dist))
            orig_kill(st, killer, victim, witnesses)

        def do_report(st, p, body):
            self.reports.append((st.tick, p.name, math.hypot(p.x - body.x, p.z - body.z)))
            orig_report(st, p, body)

        def do_button(st, p):
            bx, bz = world.map.button
            self.buttons.append((st.tick, p.name, st.last_meeting_end_tick, math.hypot(p.x - bx, p.z - bz)))
            orig_button(st, p)

        rules.do_kill, rules.do_report, rules.do_button = do_kill, do_report, do_button

    def check(self) -> None:
        cfg, st = self.world.cfg, self.world.state
        last_kill: dict[str, int] = {}
        for tick, killer, cooldown, dist in self.kills:
            assert cooldown == 0 and dist <= cfg.kill_reach + 1e-9, (tick, killer, cooldown, dist)
            assert tick >= cfg.kill_cooldown_initial_ticks
            if killer in last_kill:
                assert tick - last_kill[killer] >= cfg.cooldown_ticks
            last_kill[killer] = tick
        for tick, name, dist in self.reports:
            assert dist <= cfg.report_range + 1e-9, (tick, name, dist)
        for tick, name, last_end, dist in self.buttons:
            assert dist <= cfg.button_range + 1e-9 and tick >= cfg.button_lock_start_ticks
            if last_end is not None:
                assert tick >= last_end + cfg.button_lock_after_meeting_ticks
        # The dead never act: no event of a player after its death (kill) or its ejection.
        gone: dict[str, int] = {}
        acting = {"action_start": "player", "mission_start": "player", "fake_mission_start": "player",
                  "utterance": "speaker", "pass": "speaker", "report": "reporter", "emergency": "caller",
                  "kill": "killer"}
        for e in st.events:
            who = e.get(acting.get(e["type"], ""), None)
            if who is not None:
                assert who not in gone, f"{who} acted after leaving the game: {e}"
            if e["type"] == "vote" and not e.get("missing"):
                assert e["voter"] not in gone, e
            if e["type"] == "kill":
                gone[e["victim"]] = e["tick"]
            if e["type"] == "meeting_end" and e.get("ejected"):
                gone[e["ejected"]] = e["tick"]


@pytest.fixture(scope="module")
def played():
    """One scripted match on minecraft (seed 1), with the rules recorder on."""
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy

    POOL.close_all()  # a fresh host
    w = _world()
    rec = RulesRecorder(w)
    policies = {p.name: ScriptedPolicy(p.name, w.map, 1) for p in w.cfg.players}
    result = play_match(w, policies, 1)
    return w, rec, result


def test_scripted_match_reaches_an_ending_and_obeys_the_rules(played):
    w, rec, result = played
    assert w.state.phase == ENDED and result.outcome in OUTCOMES
    assert w.state.events[-1]["type"] == "match_end"
    assert rec.kills, "the scripted imposters killed nobody: the rules checks saw nothing"
    rec.check()
    assert w.host is None  # the world let go of its host with the match (the pool keeps it for the next)
    log = w.log_files()[0].read_text()
    assert "8 bots joined" in log and "match reset" not in log


def test_rules_recorder_catches_a_kill_out_of_reach(played):
    w, rec, _ = played
    rec.kills.append((10**6, "James", 0, w.cfg.kill_reach + 1))
    try:
        with pytest.raises(AssertionError):
            rec.check()
    finally:
        rec.kills.pop()


def test_bodies_walk_in_minecraft_and_the_walls_hold():
    """Positions come from the physics: a goto across Cafeteria takes about distance / walk speed, the
    players stay on the floor, and a point behind a wall is reached only through the doorways."""
    from mau.env.actions import Action

    w = _world(roles="paper")
    try:
        w.reset(0)
        st = w.state
        a = st.player("Steve")
        start = (a.x, a.z)
        w.step({"Steve": Action("goto", target="Weapons")})
        moved = math.hypot(a.x - start[0], a.z - start[1])
        assert 0.5 * w.cfg.walk_speed * 5 < moved <= w.cfg.walk_speed * 5 + 0.5
        for _ in range(12):
            w.step({})
            assert w.map.is_floor(a.x, a.z)
        assert w.map.room_at(a.x, a.z) == "Weapons"
        seen = w._call("seen")["seen"]
        assert all(len(v) == 7 for v in seen.values()), seen  # every bot knows the seven others
    finally:
        w.close()


def test_meeting_teleports_everyone_to_the_table():
    from mau.env.actions import Action

    w = _world(roles="paper", button_lock_start_ticks=0)
    try:
        w.reset(0)
        st = w.state
        bx, bz = w.map.button
        w.step({"Noah": Action("button")})
        for _ in range(20):
            if st.phase != ROAM:
                break
            w.step({})
        assert st.phase == DISCUSSION
        while st.phase != ROAM and st.phase != ENDED:
            w.step({})
        positions = w._call("positions")["positions"]
        for p in st.players:
            if p.active:
                x, _, z, _ = positions[p.name]
                assert math.hypot(x - bx, z - bz) == pytest.approx(3.0, abs=0.01)
    finally:
        w.close()


def test_snapshot_is_refused_with_a_reason():
    w = _world()
    with pytest.raises(MauError, match="snapshot"):
        w.snapshot()


def _count(frame: np.ndarray, rgb, tol: int = 6) -> int:
    return int((np.abs(frame.astype(int) - np.array(rgb)).max(axis=2) <= tol).sum())


@pytest.mark.skipif(frames_installed() is not None and not REQUIRED, reason="minecraft frames not installed")
def test_frames_show_a_player_in_front_not_one_behind_a_wall_and_a_body():
    w = _world(roles="paper")
    try:
        w.reset(0)
        st = w.state
        for i, p in enumerate(st.players):  # everyone else far away in Cafeteria's corner
            p.x, p.z = 79.5 + (i % 4), 85.5 - (i // 4)
        viewer, front, behind = st.player("Steve"), st.player("Jason"), st.player("Michael")
        viewer.x, viewer.z, viewer.yaw = 82.5, 75.5, 0.0  # in Cafeteria, looking along +x
        front.x, front.z = 88.5, 75.5  # 6 blocks ahead, same room
        w._sync_from_rules()
        f = w.render("Steve")
        assert f.shape == (w.config.frames.height, w.config.frames.width, 3)
        assert _count(f, COLOR_RGB[front.color]) > 200
        # Behind the wall the player changes no pixel: the frame is the one with it far behind the viewer. (A
        # difference, not a colour count: a block seen through a doorway can shade within a few levels of a
        # player's colour on one CPU's software renderer and not on another's.)
        corner = (behind.x, behind.z)
        behind.x, behind.z = 99.5, 75.5  # east of Cafeteria's wall (x = 97): outside, behind it
        w._sync_from_rules()
        hidden = w.render("Steve").astype(int)
        behind.x, behind.z = corner
        w._sync_from_rules()
        away = w.render("Steve").astype(int)
        assert (np.abs(hidden - away).max(axis=2) > 30).sum() == 0
        # The same player in the open is seen, in its colour: the test can fail.
        behind.x, behind.z = 91.5, 73.5
        w._sync_from_rules()
        seen = w.render("Steve").astype(int)
        changed = np.abs(seen - away).max(axis=2) > 30
        assert changed.sum() > 100
        assert _count(seen.astype(np.uint8), COLOR_RGB[behind.color]) > 100
        # A kill leaves a body (a carpet of the victim's colour) that frames show; without the carpet the
        # same frame lacks exactly those pixels.
        w.rules.do_kill(st, st.player("James"), front, [])
        w._sync_from_rules()
        with_body = w.render("Steve").astype(int)
        x, z = math.floor(front.x), math.floor(front.z)
        w._call("set_blocks", blocks=[[x, w.map.floor_y, z, "air"]])
        w._frames.clear()
        without = w.render("Steve").astype(int)
        changed = np.abs(with_body - without).max(axis=2) > 30
        assert changed.sum() > 50
        mean = with_body[changed].mean(axis=0)
        assert np.abs(mean - np.array(COLOR_RGB[front.color])).max() < 40, mean  # the body's colour
    finally:
        w.close()


def test_no_host_outlives_a_match_even_a_failing_one():
    from mau.env.actions import Action

    POOL.close_all()  # no idle host to reuse: this match starts its own
    before = _host_pids()
    w = _world(roles="paper")
    w.reset(0)
    mine = _host_pids() - before
    assert mine

    def broken(*args):
        raise RuntimeError("a program fails in the middle of a step")

    w._programs["goto"] = broken  # the host's connection stays open: only the world's own cleanup ends it
    with pytest.raises(RuntimeError):
        w.step({"Steve": Action("goto", target="Weapons")})
    deadline = time.monotonic() + 10
    while _host_pids() & mine and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_host_pids() & mine)
    assert not POOL._idle  # a failed match's host is not kept for the next


def test_sigint_and_sigkill_of_the_driver_end_the_host(tmp_path):
    code = ("import sys, time\n"
            "from mau.env.backends import make_world\nfrom mau.env.config import WorldConfig\n"
            "w = make_world(WorldConfig(backend='minecraft'))\nw.reset(0)\n"
            "print(w.host.proc.pid, flush=True)\ntime.sleep(120)\n")
    for sig in (signal.SIGINT, signal.SIGKILL):
        before = _host_pids()
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        line = p.stdout.readline()
        assert line.strip(), "the driver did not start a host"
        mine = _host_pids() - before
        assert mine
        p.send_signal(sig)
        p.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _host_pids() & mine and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not (_host_pids() & mine), f"host outlived its driver after {sig!r}"



def test_a_driver_killed_while_its_host_starts_leaves_no_host():
    code = ("from mau.env.backends import make_world\nfrom mau.env.config import WorldConfig\n"
            "make_world(WorldConfig(backend='minecraft')).reset(0)\n")
    before = _host_pids()
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while not (_host_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    mine = _host_pids() - before
    assert mine, "no host started"
    p.kill()  # SIGKILL before the handshake: no control connection exists yet
    p.wait()
    deadline = time.monotonic() + 15
    while _host_pids() & mine and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_host_pids() & mine), "a host outlived a driver killed during its start-up"


COLLECT = """
workers: 2
grid:
  pool:
    - {name: scripted, model: {backend: scripted, model: scripted, seed: 0}}
  self_play: true
  cases:
    - name: 1A
      crewmate: {state: privileged, memory: semantic, planning: reactive, reflection: meeting,
                 prompt_style: minimal}
      imposter: {state: privileged, memory: semantic, planning: reactive, reflection: meeting,
                 prompt_style: deterministic}
  repetitions: 4
  seeds: [11, 12, 13, 14]
world:
  backend: minecraft
  game: {max_steps: 6}
"""


_finished = finished_matches


def test_collect_on_minecraft_two_workers_sigkill_then_resume(tmp_path):
    from mau.cli import main

    cfg = tmp_path / "mc.yaml"
    cfg.write_text(COLLECT)
    run = tmp_path / "run"
    before = _host_pids()
    cmd = [sys.executable, "-m", "mau", "collect", "--config", str(cfg), "--out", str(run), "--workers", "2",
           "--no-progress"]
    err = tmp_path / "collect.err"
    with open(err, "w") as f:
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=f, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    # until one match is finished, then kill -9 the whole collect
    kill_group_when(proc, lambda: bool(_finished(run)), 300, why=err.read_text)
    done = _finished(run)
    assert 1 <= len(done) < 4
    deadline = time.monotonic() + 20
    while (_host_pids() - before) and time.monotonic() < deadline:  # orphaned hosts see their driver gone
        time.sleep(0.2)
    assert not (_host_pids() - before), "a minecraft host outlived its killed collect worker"
    assert main(["collect", "--config", str(cfg), "--out", str(run), "--resume", "--workers", "2",
                 "--no-progress"]) == 0
    assert len(_finished(run)) == 4
    for m in _finished(run):
        folder = run / "matches" / m
        assert json.loads((folder / "match.json").read_text())["backend"] == "minecraft"
        assert "bots joined" in (folder / "logs" / "minecraft-host.log").read_text()
        assert json.loads((folder / "events.jsonl").read_text().splitlines()[-1])["type"] == "match_end"
    assert not (_host_pids() - before)
    # The ARIA calls saw Minecraft frames, and in some of them another player (by its colour; white and black
    # are left out, the map's textures have such pixels).
    from PIL import Image

    colours = [np.array(COLOR_RGB[c]) for c in ("red", "blue", "green", "yellow", "pink", "light blue")]
    frames = sorted(run.glob("matches/*/frames/*_fwd.jpg"))
    assert frames
    seen = 0
    for f in frames:
        name = f.stem.split("_")[1]
        a = np.asarray(Image.open(f).convert("RGB")).astype(int)
        own = np.array(COLOR_RGB[dict((p.name, p.color) for p in GameConfig().players)[name]])
        seen += any((np.abs(a - c).max(axis=2) <= 12).sum() > 100 for c in colours if not (c == own).all())
    assert seen > 0


def test_pettingzoo_view_runs_on_minecraft():
    from mau.env.pettingzoo import MauParallelEnv

    env = MauParallelEnv(WorldConfig(backend="minecraft"), frames=frames_installed() is None)
    try:
        obs, _ = env.reset(seed=3)
        assert set(obs) == set(env.possible_agents)
        goto = next(i for i, a in enumerate(env.vocab) if a is not None and a.kind == "goto")
        for _ in range(2):
            obs, rew, term, trunc, _ = env.step({a: goto for a in env.agents})
        assert env.world.name == "minecraft" and env.world.host is not None
        if frames_installed() is None:
            assert obs[env.agents[0]]["frame"].shape == (360, 640, 3)
    finally:
        env.close()
    assert env.world.host is None
    assert not POOL._idle  # closed in the middle of a match: its host is ended, not kept for the next


def test_two_runs_of_one_seed_play_the_same_match(played):
    """The physics is stepped by hand and the policies are seeded: the event logs of two fresh hosts are
    identical."""
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy

    w1, _, _ = played
    POOL.close_all()
    w2 = _world()
    play_match(w2, {p.name: ScriptedPolicy(p.name, w2.map, 1) for p in w2.cfg.players}, 1)
    assert "match reset" not in w2.log_files()[0].read_text()  # a fresh host
    assert w2.state.events == w1.state.events


def test_a_reused_host_plays_the_match_a_fresh_one_plays(played):
    """Matches of one process share a host: the next match resets it (the bodies' carpets go, the bots'
    physics state as at ready, everyone to the start) and plays exactly as on a fresh host."""
    from mau.env.runner import play_match
    from mau.env.scripted import ScriptedPolicy

    class Silent(ScriptedPolicy):
        """Never reports a body, and (temperament mission) never presses the button: the bodies lie to the
        end."""

        def act(self, obs):
            a = super().act(obs)
            return None if a is not None and a.kind in ("report", "button") else a

    fresh, _, _ = played
    POOL.close_all()
    w = _world()
    play_match(w, {p.name: Silent(p.name, w.map, 0, "mission") for p in w.cfg.players}, 0)  # bodies, the dead
    first = w.log_files()[0].read_text()
    carpets = [[math.floor(b.x), w.map.floor_y, math.floor(b.z)] for b in w.state.bodies]
    assert carpets, "seed 0 left no body: the reset of carpets is not exercised"
    (host,) = [h for h, _ in POOL._idle.values()]
    assert all(name.endswith("_carpet") for name in host.call("blocks", at=carpets)["blocks"])
    w.reset(1)
    assert w.host is host
    assert not any(name.endswith("_carpet") for name in w._call("blocks", at=carpets)["blocks"])
    policies = {p.name: ScriptedPolicy(p.name, w.map, 1) for p in w.cfg.players}
    while w.state.phase != ENDED:  # play_match's loop, without its reset
        w.step({p.name: policies[p.name].act(w.observe(p.name)) for p in w.state.players if p.active})
    assert [h for h, _ in POOL._idle.values()] == [host] and host.matches == 2  # one host, two matches
    second = w.log_files()[0].read_text()
    assert "match reset" in second and "match reset" not in first and "8 bots joined" in second
    assert w.state.events == fresh.state.events


def test_an_idle_host_in_the_pool_is_ended():
    """A host handed back and not taken again within ``idle_s`` is ended (process group gone)."""
    from mau.env.minecraft.host import HostPool

    w = _world()
    pool = HostPool(idle_s=0.5)
    before = _host_pids()
    host = pool.acquire(w._host_config(), frames=False)
    mine = _host_pids() - before
    assert mine and host.matches == 0
    pool.release(host)
    # taken again at once
    assert host.proc is not None and pool.acquire(w._host_config(), frames=False) is host
    pool.release(host)
    deadline = time.monotonic() + 15
    while (_host_pids() & mine or host.proc is not None) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_host_pids() & mine) and host.proc is None and not pool._idle


def test_eval_runs_on_minecraft_with_only_the_backend_changed(tmp_path, capsys):
    """`mau eval` of the smoke config (scripted arms and imposters) with `--set world.backend=minecraft` and
    nothing else: every planned match is played on Minecraft (one host for all: workers 1) and reported."""
    from mau import schema as F
    from mau.cli import main

    POOL.close_all()  # the first match starts the host
    run = tmp_path / "eval"
    assert main(["eval", "--config", str(ROOT / "configs" / "eval" / "smoke.yaml"), "--out", str(run),
                 "--workers", "1", "--set", "world.backend=minecraft", "--set", "seeds=[5]",
                 "--set", "world.game.max_steps=4", "--no-progress"]) == 0
    assert "4 played now of 4" in capsys.readouterr().out
    res = json.loads((run / F.RESULTS_JSON).read_text())
    assert res["matches"] == 4
    assert {(c["arm"], c["imposter"]) for c in res["cells"]} == {
        (a, i) for a in ("baseline", "scripted-b") for i in ("scripted-i1", "scripted-i2", "all")}
    folders = sorted(p for p in (run / F.MATCHES_DIR).iterdir() if (p / F.MATCH_HEADER).is_file())
    assert len(folders) == 4
    logs = []
    for folder in folders:
        assert json.loads((folder / F.MATCH_HEADER).read_text())["backend"] == "minecraft"
        assert json.loads((folder / "events.jsonl").read_text().splitlines()[-1])["type"] == "match_end"
        logs.append((folder / "logs" / "minecraft-host.log").read_text())
    # one host, started once, reset for each later match
    assert sum("match reset" in log for log in logs) == 3


def test_minecraft_records_sights_through_the_shared_substep_loop(played):
    """sights.jsonl on minecraft (docs/claims.md): the shared sub-step loop samples places and views of the
    bodies the host moved; at the end (after a meeting: the table, one tick on), every active player is where
    the world has it."""
    from mau.claims.sights import Timeline

    w, _, _ = played
    lines = w.sights.lines
    assert lines[0]["players"] == [p.name for p in w.state.players] and len(lines) > 50
    tl = Timeline(lines, w.state.tick)
    assert sum(len(v) for v in tl.views.values()) > 0
    for p in w.state.players:
        if p.active:
            assert tl.in_place(p.name, w.map.place_name(p.x, p.z), w.state.tick, w.state.tick + 1), p.name
