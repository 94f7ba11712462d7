"""The rules of the game, in one place. Every backend (the sim, later Minecraft) calls these and nothing else
to change the game state; each change is written to the ground-truth event log.

A rule check returns ``None`` when the move is allowed, else a short reason; the matching ``do_*`` function
applies the move and assumes the check passed.
"""

from __future__ import annotations

import math
import random
from typing import Any

from mau import schema as F
from mau.claims.config import ClaimsConfig
from mau.claims.grammar import Scope, validate_all
from mau.claims.render import utterance
from mau.env.config import PAPER_IMPOSTERS, GameConfig
from mau.env.map import GameMap
from mau.env.state import (
    CREWMATE,
    CREWMATE_WIN,
    DISCUSSION,
    ENDED,
    IMPOSTER,
    IMPOSTER_WIN,
    MISSION_WIN,
    ROAM,
    TIMEOUT,
    VOTING,
    Body,
    GameState,
    Meeting,
    PlayerState,
)
from mau.schema import SKIP, TICKS_PER_SECOND  # noqa: F401  (SKIP re-exported for the env's users)


def _draw_imposters(cfg: GameConfig, rng: random.Random) -> list[str]:
    names = [p.name for p in cfg.players[: cfg.num_players]]
    if cfg.roles == "paper":
        return list(PAPER_IMPOSTERS)
    return sorted(rng.sample(names, cfg.num_imposters), key=names.index)


def imposters_of(cfg: GameConfig, seed: int) -> list[str]:
    """The imposters a match of ``seed`` will have (the first draw of its set-up), without playing it."""
    return _draw_imposters(cfg, random.Random(f"mau-setup-{seed}"))


class Rules:
    def __init__(self, config: GameConfig, game_map: GameMap, claims: ClaimsConfig | None = None):
        self.cfg = config
        self.map = game_map
        self.claims = claims or ClaimsConfig()
        self.places = tuple(dict.fromkeys(r.name for r in game_map.regions))

    # -- set-up --------------------------------------------------------------------------------------------
    def new_game(self, seed: int) -> GameState:
        """Seat the players around the button, draw roles and missions from the seed, log the start."""
        rng = random.Random(f"mau-setup-{seed}")
        cfg = self.cfg
        specs = cfg.players[: cfg.num_players]
        imposters = _draw_imposters(cfg, rng)
        spawns = self.map.spawn_points(len(specs))
        players = []
        n_st = len(self.map.stations)
        k = min(cfg.missions_per_crewmate, n_st)
        for seat, (spec, (x, z)) in enumerate(zip(specs, spawns)):
            role = IMPOSTER if spec.name in imposters else CREWMATE
            stations = rng.sample(range(n_st), k)
            bx, bz = self.map.button
            players.append(PlayerState(
                name=spec.name, color=spec.color, seat=seat, role=role, x=x, z=z,
                yaw=math.atan2(z - bz, x - bx),  # facing away from the table, into the room
                missions=stations, missions_done=[False] * k,
                kill_cooldown=cfg.kill_cooldown_initial_ticks if role == IMPOSTER else 0,
            ))
        state = GameState(players=players, seed=seed)
        state.emit(F.EV_MATCH_START, seed=seed, roles={p.name: p.role for p in players},
                   missions={p.name: list(p.missions) for p in players})
        return state

    # -- clock ---------------------------------------------------------------------------------------------
    def advance_clock(self, state: GameState, ticks: int) -> None:
        """Count down cooldowns and count up held missions; complete missions that reach the hold time."""
        state.tick += ticks
        hold = self.cfg.mission_hold_ticks
        # This runs every sub-step: the activity test (PlayerState.active, inline) is made only for a player
        # with a cooldown or a held station (about half of them).
        for p in state.players:
            if p.kill_cooldown > 0 and p.alive and not p.ejected:
                cooldown = p.kill_cooldown - ticks  # max(0, cooldown - ticks) without the builtin's call
                p.kill_cooldown = cooldown if cooldown > 0 else 0
            if p.holding_station is not None and p.alive and not p.ejected:
                held = p.holding_ticks = p.holding_ticks + ticks
                if held >= hold:
                    self._finish_mission(state, p)

    # -- missions ------------------------------------------------------------------------------------------
    def check_press_station(self, state: GameState, p: PlayerState, station: int) -> str | None:
        if not p.active:
            return "dead players cannot act"
        if state.phase != ROAM:
            return "no missions during a meeting"
        if not 0 <= station < len(self.map.stations):
            return f"station {station} does not exist"
        sx, sz = self.map.stations[station]
        if math.hypot(p.x - sx, p.z - sz) > self.cfg.station_range:
            return f"not at station {station}"
        if p.is_imposter:
            return None  # imposters may press (fake) any station; it completes nothing
        if station not in p.missions:
            return f"station {station} is not one of your missions"
        if p.missions_done[p.missions.index(station)]:
            return f"mission at station {station} is already done"
        return None

    def do_press_station(self, state: GameState, p: PlayerState, station: int) -> None:
        p.holding_station, p.holding_ticks, p.holding_fake = station, 0, p.is_imposter
        kind = F.EV_FAKE_MISSION_START if p.is_imposter else F.EV_MISSION_START
        state.emit(
            kind, player=p.name, station=station, room=self.map.station_rooms[station], position=_pos(p)
        )

    def on_moved(self, state: GameState, p: PlayerState) -> None:
        """Moving cancels a held mission (a fake one ends)."""
        if p.holding_station is None:
            return
        station, held = p.holding_station, p.holding_ticks
        p.holding_station, p.holding_ticks = None, 0
        if p.holding_fake:
            state.emit(F.EV_FAKE_MISSION_END, player=p.name, station=station, held_ticks=held)
        else:
            state.emit(F.EV_MISSION_CANCEL, player=p.name, station=station, held_ticks=held)

    def _finish_mission(self, state: GameState, p: PlayerState) -> None:
        station = p.holding_station
        p.holding_station, p.holding_ticks = None, 0
        if p.holding_fake:
            state.emit(
                F.EV_FAKE_MISSION_END, player=p.name, station=station, held_ticks=self.cfg.mission_hold_ticks
            )
            return
        p.missions_done[p.missions.index(station)] = True
        state.emit(
            F.EV_MISSION_COMPLETE, player=p.name, station=station, room=self.map.station_rooms[station],
            done=sum(p.missions_done), of=len(p.missions),
        )

    # -- kills ---------------------------------------------------------------------------------------------
    def check_kill(self, state: GameState, killer: PlayerState, victim: PlayerState) -> str | None:
        if not killer.active:
            return "dead players cannot act"
        if state.phase != ROAM:
            return "no kills during a meeting"
        if not killer.is_imposter:
            return "only imposters can kill"
        if not victim.active:
            return f"{victim.name} is not alive"
        if victim.is_imposter:
            return "imposters cannot kill imposters"
        if killer.kill_cooldown > 0:
            return f"kill cooldown: {killer.kill_cooldown} ticks left"
        if math.hypot(killer.x - victim.x, killer.z - victim.z) > self.cfg.kill_reach:
            return f"{victim.name} is out of reach"
        return None

    def do_kill(
        self, state: GameState, killer: PlayerState, victim: PlayerState, witnesses: list[str]
    ) -> None:
        victim.alive = False
        victim.death_tick = state.tick
        victim.holding_station, victim.holding_ticks = None, 0
        killer.kill_cooldown = self.cfg.cooldown_ticks
        room = self.map.place_name(victim.x, victim.z)
        state.bodies.append(Body(victim.name, victim.color, victim.x, victim.z, room, state.tick, victim.yaw))
        state.emit(F.EV_KILL, killer=killer.name, victim=victim.name, x=round(victim.x, 2),
                   z=round(victim.z, 2), room=room, witnesses=list(witnesses), position=_pos(killer))
        for name in witnesses:
            w = state.player(name)
            w.witnessed.append(
                {F.TICK: state.tick, "killer": killer.name, "victim": victim.name, "room": room}
            )
            if victim.name not in w.seen_bodies:
                w.seen_bodies.append(victim.name)
        self.check_end(state)

    # -- bodies and meetings -------------------------------------------------------------------------------
    def bodies_in_range(self, state: GameState, p: PlayerState) -> list[Body]:
        r = self.cfg.report_range
        return [b for b in state.bodies if math.hypot(p.x - b.x, p.z - b.z) <= r]

    def check_report(self, state: GameState, p: PlayerState, body: Body | None) -> str | None:
        if not p.active:
            return "dead players cannot act"
        if state.phase != ROAM:
            return "already in a meeting"
        if body is None or body not in state.bodies:
            return "no body to report"
        if math.hypot(p.x - body.x, p.z - body.z) > self.cfg.report_range:
            return f"the body of {body.victim} is more than {self.cfg.report_range} blocks away"
        return None

    def do_report(self, state: GameState, p: PlayerState, body: Body) -> None:
        state.emit(F.EV_REPORT, reporter=p.name, body=body.victim, room=body.room, position=_pos(p),
                   body_position=[round(body.x, 2), round(body.z, 2)])
        self._start_meeting(state, p, "report", body.victim)

    def button_lock_left(self, state: GameState) -> int:
        """Ticks until the emergency button can be pressed (0 = now)."""
        left = self.cfg.button_lock_start_ticks - state.tick
        if state.last_meeting_end_tick is not None:
            left = max(
                left, state.last_meeting_end_tick + self.cfg.button_lock_after_meeting_ticks - state.tick
            )
        return max(0, left)

    def check_button(self, state: GameState, p: PlayerState) -> str | None:
        if not p.active:
            return "dead players cannot act"
        if state.phase != ROAM:
            return "already in a meeting"
        bx, bz = self.map.button
        if math.hypot(p.x - bx, p.z - bz) > self.cfg.button_range:
            return "not at the button"
        left = self.button_lock_left(state)
        if left:
            return f"the button is locked for {left} more ticks"
        return None

    def do_button(self, state: GameState, p: PlayerState) -> None:
        state.emit(F.EV_EMERGENCY, caller=p.name, position=_pos(p))
        self._start_meeting(state, p, "emergency", None)

    def _start_meeting(self, state: GameState, caller: PlayerState, reason: str, body: str | None) -> None:
        active = [p for p in state.players if p.active]
        order = [caller.name] + [p.name for p in active if p is not caller]
        for p in active:  # pressing a station is interrupted by the meeting
            if p.holding_station is not None:
                self.on_moved(state, p)
        newly_dead = [p.name for p in state.players if not p.alive and p.name not in state.public_dead]
        state.public_dead.extend(newly_dead)
        state.bodies.clear()  # bodies stay until a meeting starts
        state.meeting = Meeting(
            caller=caller.name, reason=reason, body=body, order=order, start_tick=state.tick
        )
        state.phase = DISCUSSION
        state.meetings_held += 1
        state.emit(F.EV_MEETING_START, caller=caller.name, reason=reason, body=body, order=order,
                   announced_dead=newly_dead)

    def check_speak(self, state: GameState, p: PlayerState) -> str | None:
        if not p.active:
            return "dead players cannot speak"
        if state.phase != DISCUSSION or state.meeting is None:
            return "nobody speaks outside a meeting's discussion"
        if state.meeting.speaker != p.name:
            return f"it is {state.meeting.speaker}'s turn to speak"
        return None

    def do_speak(self, state: GameState, p: PlayerState, text: str | None, claims: Any = None,
                 intent: Any = None) -> None:
        """The current speaker says ``text`` (None or blank = pass) and, with claims on, its structured
        claims: each is checked against the grammar (a bad one is dropped with its reason, in the event), the
        kept ones are public (in the transcript, and rendered after the text); ``intent`` (a private label
        per claim, in the order given) goes to the event log only. Then the turn moves on."""
        m = state.meeting
        assert m is not None
        text = (text or "").strip()
        kept: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        if (self.claims.on or self.claims.free) and claims is not None:
            scope = Scope(tuple(q.name for q in state.players), p.name, self.places, len(self.map.stations),
                          state.tick / TICKS_PER_SECOND)
            kept, where, dropped = validate_all(claims, scope, self.claims.max_per_utterance)
            if self.claims.on:
                text = utterance(text, kept)
            if kept:  # structured: public; free: what the words say, private (the extractor's gold)
                extra[F.CLAIMS if self.claims.on else F.CLAIMS_GOLD] = kept
                labels = [
                    intent[i] if isinstance(intent, (list, tuple)) and i < len(intent) else None
                    for i in where
                ]
                if any(labels):
                    extra[F.CLAIM_INTENT] = labels
            if dropped:
                extra[F.CLAIMS_DROPPED] = dropped
        if text:
            line = {"speaker": p.name, "text": text, "round": m.round}
            if kept and self.claims.on:
                line[F.CLAIMS] = kept
            m.transcript.append(line)
            m.spoke_this_round = True
            state.emit(F.EV_UTTERANCE, speaker=p.name, text=text, round=m.round, **extra)
        else:
            state.emit(F.EV_PASS, speaker=p.name, round=m.round, **extra)
        m.turn += 1
        if m.turn == len(m.order):
            if m.round >= self.cfg.meeting_rounds or not m.spoke_this_round:
                state.phase = VOTING
                state.emit(F.EV_VOTING_START, voters=list(m.order))
            else:
                m.round += 1
                m.turn = 0
                m.spoke_this_round = False

    def check_vote(self, state: GameState, p: PlayerState, target: str) -> str | None:
        if not p.active:
            return "dead players cannot vote"
        if state.phase != VOTING or state.meeting is None:
            return "no vote is open"
        if p.name in state.meeting.votes:
            return "already voted"
        if target != SKIP:
            t = state.find(target)
            if t is None or not t.active:
                return f"{target!r} is not an alive player; vote for one or skip"
        return None

    def do_vote(self, state: GameState, p: PlayerState, target: str) -> None:
        assert state.meeting is not None
        state.meeting.votes[p.name] = target
        state.emit(F.EV_VOTE, voter=p.name, target=target)

    def close_vote(self, state: GameState) -> None:
        """Count the votes (a missing vote counts as skip); plurality ejects; any tie, skip included, does
        not."""
        m = state.meeting
        assert m is not None
        tally: dict[str, int] = {}
        for name in m.order:
            target = m.votes.get(name, SKIP)
            if name not in m.votes:
                state.emit(F.EV_VOTE, voter=name, target=SKIP, missing=True)
            tally[target] = tally.get(target, 0) + 1
        top = max(tally.values())
        leaders = [t for t, n in tally.items() if n == top]
        ejected = leaders[0] if len(leaders) == 1 and leaders[0] != SKIP else None
        role = None
        if ejected is not None:
            victim = state.player(ejected)
            victim.ejected = True
            victim.holding_station, victim.holding_ticks = None, 0
            role = victim.role
            state.ejections.append({"name": ejected, "role": role, F.TICK: state.tick})
        what = "an Imposter" if role == IMPOSTER else "a Crewmate"
        text = f"{ejected} was {what}." if ejected else "No one was ejected."
        state.emit(F.EV_EJECTION, ejected=ejected, role=role, tally=dict(sorted(tally.items())), text=text)
        state.meeting_log.append(
            {
                "n": state.meetings_held, "caller": m.caller, "reason": m.reason, "body": m.body,
                "votes": {n: m.votes.get(n, SKIP) for n in m.order}, "ejected": ejected,
            }
        )
        state.emit(F.EV_MEETING_END, caller=m.caller, reason=m.reason, ejected=ejected)
        state.meeting = None
        state.last_meeting_end_tick = state.tick
        state.phase = ROAM
        if self.cfg.teleport_after_meeting:
            bx, bz = self.map.button
            for p, (x, z) in zip(state.players, self.map.spawn_points(len(state.players))):
                if p.active:
                    p.x, p.z = x, z
                    p.yaw = math.atan2(z - bz, x - bx)
        self.check_end(state)

    # -- endings -------------------------------------------------------------------------------------------
    def check_end(self, state: GameState, budget_check: bool = False) -> str | None:
        """Apply the four endings; return the outcome if the match just ended. TIMEOUT is checked only where
        the caller says a step is over (``budget_check``), so the last step of the budget runs in full."""
        if state.phase == ENDED:
            return state.outcome
        # state.active_crew / active_imposters, counted in one pass: this runs every substep
        n_crew = n_imps = 0
        missions_left = False
        for p in state.players:
            if p.alive and not p.ejected:
                if p.role == IMPOSTER:
                    n_imps += 1
                else:
                    n_crew += 1
                    missions_left = missions_left or not all(p.missions_done)
        outcome = reason = None
        if not n_imps:
            outcome, reason = CREWMATE_WIN, "all imposters ejected"
        elif n_crew <= n_imps:
            outcome, reason = IMPOSTER_WIN, f"{n_crew} crewmates left against {n_imps} imposters"
        elif n_crew and not missions_left:
            outcome, reason = MISSION_WIN, "every living crewmate finished all missions"
        if outcome is None and budget_check and state.phase == ROAM and state.step >= self.cfg.max_steps:
            outcome, reason = TIMEOUT, f"step budget of {self.cfg.max_steps} spent"
        if outcome is None:
            return None
        state.phase = ENDED
        state.meeting = None
        state.outcome, state.end_reason = outcome, reason
        alive = [p for p in state.players if p.alive and not p.ejected]
        state.emit(F.EV_MATCH_END, outcome=outcome, reason=reason,
                   alive_crewmates=[p.name for p in alive if p.role != IMPOSTER],
                   alive_imposters=[p.name for p in alive if p.role == IMPOSTER])
        return outcome


def _pos(p: PlayerState) -> list[float]:
    """The acting player's [x, z] in an event (ground truth for the distance rules)."""
    return [round(p.x, 2), round(p.z, 2)]
