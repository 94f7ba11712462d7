"""The sim: the embedded, pure-Python, seeded, deterministic world backend.

It moves players on the map, runs their structured actions as programs over ticks, and calls the rules
engine (``mau.env.rules``) for every change of game state. No external process; a whole match takes well
under a second. ``snapshot()`` / ``restore()`` copy the complete state: restore + the same actions gives an
identical continuation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from math import atan2, hypot
from typing import Any, Callable

from mau import schema as F
from mau.env import actions as A
from mau.env.actions import Action, ActionRun
from mau.env.config import WorldConfig
from mau.env.map import GameMap, load_map
from mau.env.observation import observe
from mau.env.rules import SKIP, Rules
from mau.env.sights import SightRecorder
from mau.env.state import DISCUSSION, ENDED, ROAM, VOTING, Body, GameState, PlayerState
from mau.env.vision import Vision
from mau.schema import TICKS_PER_SECOND
from mau.snapshot import Parts, Restored, Snapshot, freeze, thaw

LOOK_AROUND_TICKS = 40  # a full turn in 2 s


@dataclass
class StepResult:
    """What one step did: each agent's action result, and whether the match ended."""

    phase_before: str
    phase: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: bool = False
    outcome: str | None = None


class SimWorld:
    """One match on the sim. ``reset(seed)``, then ``step(actions)`` until ``done``."""

    name = "sim"
    # whether _advance skips the program of a station held to the end (off: the plain computation, for tests)
    _skip_held = True

    def __init__(self, config: WorldConfig | None = None, game_map: GameMap | None = None):
        self.config = config or WorldConfig()
        self.cfg = self.config.game
        self.map = game_map or load_map(self.config.map)
        self.rules = Rules(self.cfg, self.map, self.config.claims)
        self.vision = Vision(self.cfg, self.map)
        self.state: GameState | None = None
        self.runs: dict[str, ActionRun] = {}
        self.last_results: dict[str, dict[str, Any]] = {}
        self.tracks: list[dict[str, Any]] = []  # positions after each roam step and meeting (tracks.jsonl)
        # every player's position after each step, read lazily by privileged observations (``last_known``)
        self.positions: list[tuple[int, tuple[tuple[float, float, bool, bool], ...]]] = []
        # places and views at the sub-step rate (sights.jsonl)
        self.sights = SightRecorder(self.map, self.vision)
        # the observations' frame of the last moment observed (mau.env.observation.Frame): a pure function of
        # its key, so it outlives resets and restores without going stale
        self.observation_frame: Any = None
        # Memos of pure functions of values (right in any match, across restores; cleared at reset only to
        # stay small). Floats compare 0.0 == -0.0, so a value with a zero in it is computed anew.
        # (viewer, victim, looks around, privileged radius) -> (x, z, yaw, body x, body z) of the viewer's
        # last look that did not see that body (``_see_bodies``)
        self._unseen: dict[tuple[str, str, bool, float], tuple[float, float, float, float, float]] = {}
        # name -> (x, z, yaw) at its last track line, and that line's rounded [x, z, yaw] (``_track``: a
        # float's round(x, 2) goes through its decimal digits, costly for every player at every step)
        self._tracked: dict[str, tuple[tuple[float, float, float], tuple[float, float, int]]] = {}
        self._speed_per_tick = self.cfg.walk_speed / TICKS_PER_SECOND
        self._renderer = None
        self._programs: dict[str, Callable[[PlayerState, ActionRun, int], None]] = {
            "goto": self._run_goto, "follow": self._run_follow, "flee": self._run_flee,
            "mission": self._run_mission, "fake_mission": self._run_mission, "kill": self._run_kill,
            "report": self._run_report, "button": self._run_button, "wait": self._run_wait,
            "look_around": self._run_look_around,
        }

    # -- lifecycle -----------------------------------------------------------------------------------------
    def reset(self, seed: int) -> GameState:
        self.state = self.rules.new_game(seed)
        self.runs = {}
        self.last_results = {}
        self.tracks = []
        self.positions = []
        self._unseen.clear()
        self._tracked.clear()
        self._track("start")
        self._track_known()
        self.sights.reset()
        self.sights.record(self.state)
        return self.state

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.phase == ENDED

    @property
    def agents(self) -> list[str]:
        return [p.name for p in self.state.players]

    # -- snapshots (mau.snapshot) --------------------------------------------------------------------------
    def parts(self) -> Parts:
        """What changes: game state, running actions, last results, the sight recorder's state; the event log,
        the tracks and the sights are append-only (their lines are never changed once written); the map,
        configs and rules never change."""
        return Parts({"state": self.state, "runs": self.runs, "last_results": self.last_results,
                      "tracks": self.tracks, "sights": self.sights, "positions": self.positions},
                     shared=[self, self.map, self.cfg, self.config, self.rules, self.vision],
                     logs={"events": self.state.events, "tracks": self.tracks, "sights": self.sights.lines,
                           "positions": self.positions})

    def restore_parts(self, r: Restored) -> None:
        c = r.changing
        self.state, self.runs, self.last_results, self.tracks = (
            c["state"], c["runs"], c["last_results"], c["tracks"],
        )
        self.sights = c["sights"]
        self.positions = c["positions"]

    def snapshot(self) -> Snapshot:
        """A copy of everything that changes (restore + the same actions gives an identical continuation)."""
        return freeze(self.parts())

    def restore(self, snap: Snapshot) -> None:
        self.restore_parts(thaw(snap))

    def observe(self, name: str, mode: str = "ego") -> dict[str, Any]:
        return observe(self, name, mode)

    def renderer(self):
        if self._renderer is None:
            from mau.env.render import Renderer  # numpy raycaster; imported only when frames are asked for

            fr = self.config.frames
            self._renderer = Renderer(
                self.map, fr.width, fr.height, self.cfg.fov_vertical_deg, self.cfg.eye_height
            )
        return self._renderer

    def render(self, name: str, yaw: float | None = None):
        return self.renderer().first_person(self.state, name, yaw)

    def render_image(self, name: str, yaw: float | None = None):
        """The same frame as ``render``, as a Pillow RGB image (cheaper when it is to be encoded)."""
        return self.renderer().first_person_image(self.state, name, yaw)

    def topdown(self, scale: int = 4):
        return self.renderer().topdown(self.state, scale)

    # -- the step ------------------------------------------------------------------------------------------
    def step(self, actions: dict[str, Action | dict | None]) -> StepResult:
        """Advance one decision point. Roam: new actions replace running ones (None or absent = keep going),
        then ``step_ticks`` pass or a meeting starts. Discussion: the current speaker's ``speak``. Voting:
        every active player's ``vote`` (missing = skip)."""
        st = self.state
        if st is None:
            raise RuntimeError("call reset(seed) before step()")
        if st.phase == ENDED:
            raise RuntimeError("the match has ended; call reset(seed)")
        res = StepResult(phase_before=st.phase, phase=st.phase)
        if st.phase == ROAM:
            st.step += 1
            for p in st.players:
                raw = actions.get(p.name)
                if raw is not None:
                    res.results[p.name] = self.last_results[p.name] = self._assign(p, raw)
            self._advance(self.cfg.step_ticks)
            self.rules.check_end(st, budget_check=True)
            self._track("roam")
        elif st.phase == DISCUSSION:
            st.meeting_steps += 1
            speaker = st.player(st.meeting.speaker)
            for name, raw in actions.items():
                if raw is None:
                    continue
                action, err = self._parse(raw)
                if err is None and action.kind != "speak":
                    err = f"{action.kind} is not possible now: the meeting's discussion is under way"
                if err is None and name != speaker.name:
                    err = self.rules.check_speak(st, st.player(name))
                if name != speaker.name or err is not None:
                    res.results[name] = {"status": A.FAILED, "reason": err or "not your turn"}
            raw = actions.get(speaker.name)
            action, _ = self._parse(raw) if raw is not None else (None, None)
            said = action if action is not None and action.kind == "speak" else None
            text = said.text if said is not None else None
            if said is not None and said.claims:
                self.rules.do_speak(st, speaker, text, said.claims, said.intent)
            else:
                self.rules.do_speak(st, speaker, text)
            res.results[speaker.name] = {
                "status": A.DONE, "reason": "spoke" if text and text.strip() else "passed",
            }
        elif st.phase == VOTING:
            st.meeting_steps += 1
            for p in st.players:
                raw = actions.get(p.name)
                if raw is None:
                    continue
                action, err = self._parse(raw)
                if err is None and action.kind != "vote":
                    err = f"{action.kind} is not possible now: the vote is open"
                target = (action.target or SKIP) if err is None else SKIP
                if err is None:
                    err = self.rules.check_vote(st, p, target)
                if err is None:
                    self.rules.do_vote(st, p, target)
                    res.results[p.name] = {"status": A.DONE, "reason": f"voted {target}"}
                else:
                    res.results[p.name] = {"status": A.FAILED, "reason": err}
            self.rules.close_vote(st)
            self.sights.record(st, after_meeting=True)  # the table after the meeting: places, views
            self._see_bodies()
            self.rules.check_end(st, budget_check=True)  # a meeting in the budget's last step ends it
            self._track("meeting")
        if res.phase_before != ROAM:
            self.last_results.update(res.results)
        self._track_known()
        res.phase = st.phase
        res.ended = st.phase == ENDED
        if res.ended:
            self.sights.flush()  # the match's samples become lines in one batch (a read before flushes too)
        res.outcome = st.outcome
        return res

    def _track(self, after: str) -> None:
        """Remember where everyone is now (a line of tracks.jsonl, docs/formats.md): what a viewer draws."""
        st = self.state
        tracked = self._tracked
        where: dict[str, list[float]] = {}
        for p in st.players:
            if not p.alive or p.ejected:  # PlayerState.active
                continue
            pose = (p.x, p.z, p.yaw)
            last = tracked.get(p.name)
            if last is None or last[0] != pose or 0.0 in pose:  # moved or turned since its last line
                rounded = (round(p.x, 2), round(p.z, 2), round(math.degrees(p.yaw)) % 360)
                last = tracked[p.name] = (pose, rounded)
            where[p.name] = list(last[1])
        self.tracks.append({
            F.STEP: st.step, F.TICK: st.tick, F.TRACK_AFTER: after, F.TRACK_PLAYERS: where,
            F.TRACK_BODIES: [[b.victim, round(b.x, 2), round(b.z, 2)] for b in st.bodies]})

    def _parse(self, raw: Action | dict) -> tuple[Action | None, str | None]:
        try:
            return A.parse_action(raw), None
        except ValueError as e:
            return None, str(e)

    def _assign(self, p: PlayerState, raw: Action | dict) -> dict[str, Any]:
        st = self.state
        action, err = self._parse(raw)
        if err is None and not p.active:
            err = "dead players cannot act"
        if err is None and action.kind in A.MEETING_KINDS:
            err = f"{action.kind} is only possible in a meeting"
        if err is not None:
            return {"status": A.FAILED, "reason": err}
        old = self.runs.get(p.name)
        if old is not None and old.status == A.RUNNING:
            self._end(p, old, A.REPLACED, "a new action was chosen")
        run = ActionRun(action=action, start_tick=st.tick, stage_tick=st.tick)
        self.runs[p.name] = run
        st.emit(F.EV_ACTION_START, player=p.name, action=action.to_dict())
        return {"status": A.RUNNING, "reason": ""}

    def _end(self, p: PlayerState, run: ActionRun, status: str, reason: str = "") -> None:
        run.status, run.reason = status, reason
        self.last_results[p.name] = {"status": status, "reason": reason}
        if self.state.phase == ENDED:
            return  # match_end closes the event log
        if p.holding_station is not None and status != A.DONE:
            self.rules.on_moved(self.state, p)  # leaving a held station ends it
        self.state.emit(F.EV_ACTION_END, player=p.name, kind=run.action.kind, status=status, reason=reason)

    def _advance(self, ticks: int) -> None:
        """Run the world for ``ticks`` (or until a meeting or the end), ``substep_ticks`` at a time."""
        st = self.state
        sub = self.cfg.substep_ticks
        end_tick = st.tick + ticks
        runs, programs, running = self.runs, self._programs, A.RUNNING
        # Who is active (alive, not ejected) changes in a sub-step only by a kill, and a kill ends its
        # victim's running action (_run_kill): the active players are listed once a call, and a victim's
        # program is then passed over by the test of its action's status.
        active = [p for p in st.players if p.alive and not p.ejected]
        # The sub-step hooks are empty in the sim: called only where a subclass (a backend) overrides them.
        cls = type(self)
        begin = self._substep_begin if cls._substep_begin is not SimWorld._substep_begin else None
        move = self._substep_move if cls._substep_move is not SimWorld._substep_move else None
        held = "hold" if self._skip_held else None  # the stage whose program is skipped while held
        # The endings read who is alive, ejected and done with missions: a change to any of them is logged (a
        # kill, a mission completed, an ejection), so after the first sub-step's check they are checked again
        # only in a sub-step whose events grew.
        checked_at = -1
        while st.tick < end_tick and st.phase == ROAM:
            dt = end_tick - st.tick
            if dt > sub:
                dt = sub
            if begin is not None:
                begin()
            for p in active:
                run = runs.get(p.name)
                if run is None or run.status != running:
                    continue
                if p.holding_station is not None and run.stage == held and run.action.ticks is None:
                    # A station held to the end (a mission, or a fake one without a time): its program
                    # would do nothing while the station is held (the rules count the ticks), so it is not
                    # called. Roughly a third of the programs of a sub-step are such holds.
                    continue
                programs[run.action.kind](p, run, dt)
                if st.phase != ROAM:
                    break
            if st.phase != ROAM:
                self._interrupt_all("a meeting was called")
                break
            if move is not None:
                move(dt)
            self.rules.advance_clock(st, dt)
            self.sights.record(st)
            if st.bodies:
                self._see_bodies()
            if len(st.events) != checked_at:
                if self.rules.check_end(st):
                    break
                checked_at = len(st.events)

    def _substep_begin(self) -> None:
        """Before a sub-step's action programs run (a backend whose bodies move elsewhere resets here)."""

    def _substep_move(self, ticks: int) -> None:
        """After the programs, before the clock: move the bodies (the sim's programs move them themselves)."""

    def _interrupt_all(self, reason: str) -> None:
        for p in self.state.players:
            run = self.runs.get(p.name)
            if run is not None and run.status == A.RUNNING:
                self._end(p, run, A.INTERRUPTED, reason)

    def privileged_sees(self, viewer: PlayerState, p: PlayerState) -> bool:
        """Whether privileged state observes ``p`` now (``world.observation.privileged``): in line of sight
        within ``privileged_radius`` and alive (sight), or within the radius at all (the paper's radar)."""
        return self._privileged_sees(viewer.x, viewer.z, p.x, p.z, p.active)

    def _privileged_sees(self, vx: float, vz: float, px: float, pz: float, p_active: bool) -> bool:
        r = self.cfg.privileged_radius
        if self.config.observation.privileged == "radar":
            return math.hypot(px - vx, pz - vz) <= r
        return p_active and self.vision.sees_around_from(vx, vz, px, pz, r)

    def _track_known(self) -> None:
        """Remember everyone's position after this step, for privileged state's persistent positions
        (``last_known``, computed when a privileged observation asks: most agents never do)."""
        st = self.state
        public = st.public_dead
        self.positions.append((st.tick, tuple([(p.x, p.z, p.alive and not p.ejected,
                                                not (p.ejected or p.name in public)) for p in st.players])))

    def last_known(self, viewer: PlayerState) -> dict[str, list[float]]:
        """Privileged state's persistent positions: the viewer's last observation of each other player
        (``privileged_sees``) after a step, while active, of a player not publicly dead or ejected. With
        privileged sight a player killed out of sight stays listed at its last sighting alive, ageing like any
        player out of sight (no list tells of the death); with the radar it stays listed where it fell. The
        steps are read from ``positions`` up to now, once each (``viewer.known_upto``)."""
        known, players, sees = viewer.last_known, self.state.players, self._privileged_sees
        me = viewer.seat
        for tick, where in self.positions[viewer.known_upto:]:
            vx, vz, v_active, _ = where[me]
            if not v_active:
                continue
            for j, (px, pz, p_active, listable) in enumerate(where):
                if j != me and listable and sees(vx, vz, px, pz, p_active):
                    known[players[j].name] = [round(px, 2), round(pz, 2), tick]
        viewer.known_upto = len(self.positions)
        return known

    def _see_bodies(self) -> None:
        """Each active player sees the bodies it has not seen yet that are in its view (privileged sight:
        around it). A look is a pure function of the viewer's pose and the body's place (the map never
        changes), so a pair that was not seen is not looked at again while neither has moved or turned (a
        player holding a station, waiting or idle stands still for many sub-steps)."""
        st = self.state
        around = self.config.observation.privileged == "sight"
        r = self.cfg.privileged_radius
        sees, sees_around, unseen = self.vision.sees, self.vision.sees_around, self._unseen
        for p in st.players:
            if not p.alive or p.ejected:  # PlayerState.active: this runs every sub-step while bodies lie
                continue
            looks_around = around and p.sight == "privileged"
            for b in st.bodies:
                if b.victim in p.seen_bodies:
                    continue
                key, at = (p.name, b.victim, looks_around, r), (p.x, p.z, p.yaw, b.x, b.z)
                if unseen.get(key) == at and 0.0 not in at:
                    continue
                if sees(p, b.x, b.z, 0.5) or (looks_around and sees_around(p, b.x, b.z, r)):
                    p.seen_bodies.append(b.victim)
                    st.emit(F.EV_BODY_SEEN, player=p.name, body=b.victim, room=b.room)
                else:
                    unseen[key] = at

    # -- movement ------------------------------------------------------------------------------------------
    def _move(self, p: PlayerState, run: ActionRun, gx: float, gz: float, dt: int, stop: float = 0.0,
              replan: bool = False) -> bool:
        """Walk towards (gx, gz) for dt ticks along the map's path; True when within ``stop`` of it."""
        x = p.x  # the walk runs on locals, written back once: the same float operations
        z = p.z
        if hypot(gx - x, gz - z) <= stop + 1e-9:
            return True
        path = run.path
        if replan or not path or run.path_goal != (gx, gz):
            path = run.path = self.map.path(x, z, gx, gz)
            run.path_goal = (gx, gz)
        budget = self._speed_per_tick * dt
        yaw = None  # the heading of the last leg walked (None: not moved)
        while budget > 1e-9 and path:
            wx, wz = path[0]
            dx, dz = wx - x, wz - z
            d = hypot(dx, dz)
            if stop > 0 and len(path) == 1:
                d_eff = d - stop
                if d_eff <= 0:
                    break
                step = min(budget, d_eff)
                x += dx / d * step
                z += dz / d * step
                yaw = atan2(dz, dx)
                budget -= step
                if step >= d_eff - 1e-9:
                    break
                continue
            if d <= budget:
                x, z = wx, wz
                budget -= d
                path.pop(0)
                if d > 1e-9:
                    yaw = atan2(dz, dx)
                continue
            # part of this leg spends the whole budget (d > budget > 1e-9): the walk ends here
            x += dx / d * budget
            z += dz / d * budget
            yaw = atan2(dz, dx)
            break
        p.x = x
        p.z = z
        if yaw is not None:
            p.yaw = yaw
            if p.holding_station is not None:
                self.rules.on_moved(self.state, p)
        return hypot(gx - x, gz - z) <= stop + 1e-6

    def _timed_out(self, run: ActionRun) -> bool:
        return self.state.tick - run.stage_tick >= self.cfg.action_timeout_ticks

    def _goal_of(self, p: PlayerState, a: Action) -> tuple[float, float] | str:
        """Resolve a goto target to a point, or return a reason why it cannot be resolved."""
        if a.point is not None:
            x, z = a.point
            return (x, z) if self.map.is_floor(x, z) else f"point {list(a.point)} is not on the floor"
        if a.station is not None:
            if not 0 <= a.station < len(self.map.stations):
                return f"station {a.station} does not exist"
            return self.map.stations[a.station]
        t = a.target
        if t == "button":
            return self.map.button
        if t in self.map.room_centers:
            return self.map.room_centers[t]
        other = self.state.find(t) if t else None
        if other is not None:
            if not other.active:
                return f"{t} is not alive"
            return (other.x, other.z)
        return f"unknown target {t!r}: name a room, a player, 'button', a station or a point"

    # -- programs (one per action kind) --------------------------------------------------------------------
    def _run_goto(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        goal = run.fixed_goal
        if goal is not None:  # a goal that cannot move, resolved at the first sub-step
            arrived = self._move(p, run, goal[0], goal[1], dt)
        else:
            a = run.action
            goal = self._goal_of(p, a)
            if isinstance(goal, str):
                return self._end(p, run, A.FAILED, goal)
            # a player's name as target (the roster is fixed in a match): walk up to it, planning anew
            moving_target = a.target is not None and self.state.find(a.target) is not None
            if not moving_target:
                run.fixed_goal = goal
            arrived = self._move(p, run, *goal, dt, stop=1.5 if moving_target else 0.0, replan=moving_target)
        if arrived:
            return self._end(p, run, A.DONE)
        if self.state.tick - run.stage_tick >= self.cfg.action_timeout_ticks:  # _timed_out, inline
            self._end(p, run, A.TIMED_OUT, "not there after the action timeout")

    def _run_follow(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        other = self.state.find(run.action.target)
        if other is None or not other.active or other is p:
            return self._end(p, run, A.FAILED, f"cannot follow {run.action.target!r}")
        self._move(p, run, other.x, other.z, dt, stop=2.5, replan=True)
        if self._timed_out(run):
            self._end(p, run, A.DONE, "followed until the action timeout")

    def _run_flee(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        threat = self.state.find(run.action.target)
        if threat is None or threat is p:
            return self._end(p, run, A.FAILED, f"cannot flee from {run.action.target!r}")
        if run.path_goal is None:
            # The room that puts the most walking distance between us and the threat, relative to our own.
            best, goal = -math.inf, None
            for room, (cx, cz) in self.map.room_centers.items():
                score = self.map.path_length(threat.x, threat.z, cx, cz) - self.map.path_length(
                    p.x, p.z, cx, cz
                )
                if score > best:
                    best, goal = score, (cx, cz)
            run.path_goal = goal
            run.path = self.map.path(p.x, p.z, *goal)
        if self._move(p, run, *run.path_goal, dt):
            return self._end(p, run, A.DONE)
        if self._timed_out(run):
            self._end(p, run, A.DONE, "fled until the action timeout")

    def _run_mission(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        a, st = run.action, self.state
        if run.stage == "travel":
            goal = run.fixed_goal
            if goal is None:  # the first sub-step: the station and the role never change in a match
                if a.station is None or not 0 <= a.station < len(self.map.stations):
                    return self._end(p, run, A.FAILED, f"station {a.station} does not exist")
                if a.kind == "mission" and p.is_imposter:
                    return self._end(p, run, A.FAILED, "imposters cannot complete missions; use fake_mission")
                if a.kind == "fake_mission" and not p.is_imposter:
                    return self._end(p, run, A.FAILED, "only imposters fake missions")
                goal = run.fixed_goal = self.map.stations[a.station]
            if self._move(p, run, goal[0], goal[1], dt):
                err = self.rules.check_press_station(st, p, a.station)
                if err:
                    return self._end(p, run, A.FAILED, err)
                self.rules.do_press_station(st, p, a.station)
                run.stage, run.stage_tick = "hold", st.tick
            elif st.tick - run.stage_tick >= self.cfg.action_timeout_ticks:  # _timed_out, inline
                self._end(p, run, A.TIMED_OUT, "did not reach the station in time")
            return
        # hold: the rules count the ticks; the mission (or the fake) ends when they say so.
        if p.holding_station is None:
            self._end(p, run, A.DONE)
        elif a.kind == "fake_mission" and a.ticks is not None and st.tick - run.stage_tick >= a.ticks:
            self.rules.on_moved(st, p)
            self._end(p, run, A.DONE, "stopped faking")

    def _run_kill(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        st = self.state
        victim = st.find(run.action.target)
        if victim is None or victim is p:
            return self._end(p, run, A.FAILED, f"no player {run.action.target!r} to kill")
        if not victim.active:
            return self._end(p, run, A.FAILED, f"{victim.name} is not alive")
        if not p.is_imposter:
            return self._end(p, run, A.FAILED, "only imposters can kill")
        reach = self.cfg.kill_reach
        self._move(p, run, victim.x, victim.z, dt, stop=reach * 0.6, replan=True)
        err = self.rules.check_kill(st, p, victim)
        if err is None:
            p.yaw = math.atan2(victim.z - p.z, victim.x - p.x)
            witnesses = [w.name for w in st.players if w.active and w is not p and w is not victim
                         and self.vision.sees(w, victim.x, victim.z)]
            self.rules.do_kill(st, p, victim, witnesses)
            victim_run = self.runs.get(victim.name)
            if victim_run is not None and victim_run.status == A.RUNNING:
                self._end(victim, victim_run, A.INTERRUPTED, "killed")
            self._end(p, run, A.DONE, f"killed {victim.name}")
            if run.action.point is not None and st.phase != ENDED:  # walk away at once, not idle by the body
                # until the next decision; not when the kill ended the match (match_end closes the event log)
                leave = Action("goto", point=run.action.point, narration="leave the body behind")
                self.runs[p.name] = ActionRun(action=leave, start_tick=st.tick, stage_tick=st.tick)
                st.emit(F.EV_ACTION_START, player=p.name, action=leave.to_dict())
            return
        if self._timed_out(run):
            self._end(p, run, A.TIMED_OUT, err)

    def _body_for(self, p: PlayerState, name: str | None) -> Body | None:
        known = [b for b in self.state.bodies if b.victim in p.seen_bodies]  # only bodies it has seen
        if name is not None:
            return next((b for b in known if b.victim == name), None)
        return min(known, key=lambda b: math.hypot(b.x - p.x, b.z - p.z), default=None)

    def _run_report(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        body = self._body_for(p, run.action.target)
        if body is None:
            return self._end(p, run, A.FAILED, "no body known to report")
        if self._move(p, run, body.x, body.z, dt, stop=self.cfg.report_range * 0.75):
            err = self.rules.check_report(self.state, p, body)
            if err:
                return self._end(p, run, A.FAILED, err)
            self._end(p, run, A.DONE, f"reported {body.victim}")
            self.rules.do_report(self.state, p, body)
        elif self._timed_out(run):
            self._end(p, run, A.TIMED_OUT, "did not reach the body in time")

    def _run_button(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        if self._move(p, run, *self.map.button, dt, stop=self.cfg.button_range * 0.5):
            err = self.rules.check_button(self.state, p)
            if err:
                return self._end(p, run, A.FAILED, err)
            self._end(p, run, A.DONE, "called an emergency meeting")
            self.rules.do_button(self.state, p)
        elif self._timed_out(run):
            self._end(p, run, A.TIMED_OUT, "did not reach the button in time")

    def _run_wait(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        ticks = run.action.ticks if run.action.ticks is not None else self.cfg.step_ticks
        if self.state.tick + dt - run.start_tick >= ticks:
            self._end(p, run, A.DONE)

    def _run_look_around(self, p: PlayerState, run: ActionRun, dt: int) -> None:
        turn = 2 * math.pi * dt / LOOK_AROUND_TICKS
        p.yaw = (p.yaw + turn) % (2 * math.pi)
        run.turned += turn
        if run.turned >= 2 * math.pi - 1e-9:
            self._end(p, run, A.DONE)
