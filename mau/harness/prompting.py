"""Prompt rendering. Templates are files (``prompts/<style>/<role>.yaml``, one entry per module, plus the
shared ``rules.txt`` and the answer formats in ``formats.yaml``); this module fills them from an observation.

Everything a prompt says is built from the agent's own observation and memory, which never hold another
player's hidden role, so no prompt can either.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from mau.claims.config import ClaimsConfig
from mau.env.config import GameConfig
from mau.env.map import GameMap
from mau.harness.config import AriaConfig
from mau.infer.compact_reader import CANDIDATES_LINE, NO_EVIDENCE, TALLY_HEADER, tally_lines
from mau.infer.compact_reader import compact_candidates as compact_candidates  # re-exported
from mau.schema import IMPOSTER, SKIP, TICKS_PER_SECOND

PROMPTS_DIR = Path(__file__).parent / "prompts"


@lru_cache(maxsize=None)
def _templates(style: str, role: str) -> tuple[Template, dict[str, Template]]:
    data = yaml.safe_load((PROMPTS_DIR / style / f"{role}.yaml").read_text())
    return Template(data["system"].rstrip("\n")), {
        k: Template(v.rstrip("\n")) for k, v in data["modules"].items()
    }


@lru_cache(maxsize=None)
def _formats() -> dict[str, Template]:
    return {k: Template(v) for k, v in yaml.safe_load((PROMPTS_DIR / "formats.yaml").read_text()).items()}


@lru_cache(maxsize=None)
def _compact() -> tuple[Template, dict[str, Template]]:
    data = yaml.safe_load((PROMPTS_DIR / "compact.yaml").read_text())
    return Template(data["system"].rstrip("\n")), {
        k: Template(v.rstrip("\n")) for k, v in data["modules"].items()
    }


# The compact profile's budgets in characters (about 4 per token): the evidence keeps its newest lines and the
# meeting its latest words within them, so the whole prompt stays near 300 tokens (docs/harness.md) at the
# default evidence budget (aria.compact_evidence_chars; a larger one keeps more of the evidence).
COMPACT_EVIDENCE_CHARS = AriaConfig.model_fields["compact_evidence_chars"].default
COMPACT_CHAT_CHARS = 230


def _newest(lines: list[str], budget: int) -> list[str]:
    """The last lines whose lengths fit in ``budget`` characters (a line too long alone is cut at its end)."""
    kept: list[str] = []
    for line in reversed(lines):
        if sum(len(x) + 1 for x in kept) + len(line) > budget:
            if not kept:  # a quoted line keeps its closing quote (the leak audit reads quotes as speech)
                kept.append(line[: budget - 4] + '..."' if line.endswith('"') else line[: budget - 3] + "...")
            break
        kept.append(line)
    return kept[::-1]


def modules_for(style: str, role: str) -> list[str]:
    return list(_templates(style, role)[1])


def _secs(ticks: int) -> str:
    s = ticks / TICKS_PER_SECOND
    return f"{s:g}"


class PromptBuilder:
    """Builds the exact messages of one agent's calls."""

    def __init__(
        self, aria: AriaConfig, game: GameConfig, game_map: GameMap, claims: ClaimsConfig | None = None
    ):
        self.aria = aria
        self.game = game
        self.map = game_map
        self.claims = claims or ClaimsConfig()
        self.rooms = list(game_map.room_names)
        self.rules = Template((PROMPTS_DIR / "rules.txt").read_text().rstrip("\n")).substitute(
            n_players=game.num_players, n_imposters=game.num_imposters, n_crewmates=game.num_crewmates,
            rooms=", ".join(self.rooms), max_steps=game.max_steps,
            mission_seconds=_secs(game.mission_hold_ticks), kill_reach=f"{game.kill_reach:g}",
            cooldown_seconds=_secs(game.cooldown_ticks), report_range=f"{game.report_range:g}",
            spawn_room=game_map.spec.spawn_room, button_start_seconds=_secs(game.button_lock_start_ticks),
            button_after_seconds=_secs(game.button_lock_after_meeting_ticks), rounds=game.meeting_rounds,
        )
        self._system_cache: dict[tuple[str, str], str] = {}

    # -- the parts -----------------------------------------------------------------------------------------
    def system(self, obs: dict[str, Any]) -> str:
        key = (obs["name"], obs["role"])
        if key not in self._system_cache:
            tmpl, _ = _templates(self.aria.prompt_style, obs["role"])
            self._system_cache[key] = tmpl.substitute(
                rules=self.rules, name=obs["name"], color=obs["color"],
                teammates=", ".join(obs.get("teammates", [])) or "none")
        return self._system_cache[key]

    def state(self, obs: dict[str, Any]) -> str:
        o = obs
        lines = [f"Step {o['step']} of {o['max_steps']} (game time {o['time_s']:g} s)."]
        x, _, z = o["position"]
        lines.append(f"You are in {o['room']} at ({x:.1f}, {z:.1f}), facing {o['yaw_deg']:.0f} degrees.")
        if o["role"] == IMPOSTER:
            fakes = "; ".join(f"station {m['station']} in {m['room']}" for m in o["fake_missions"])
            lines.append(f"Stations where you can pretend to work: {fakes}.")
            cd = o["kill_cooldown_ticks"]
            reach = ", ".join(o.get("in_kill_reach", [])) or "nobody"
            lines.append(f"Kill cooldown: {'ready' if cd == 0 else _secs(cd) + ' s left'}. Crewmates in "
                         f"reach: {reach}.")
        else:
            ms = "; ".join(f"station {m['station']} in {m['room']} ({'done' if m['done'] else 'to do'})"
                           for m in o["missions"])
            lines.append(f"Your missions: {ms}.")
        if o["holding_station"] is not None:
            lines.append(f"You are at station {o['holding_station']}: {_secs(o['holding_ticks'])} of "
                         f"{_secs(o['mission_hold_ticks'])} s held.")
        lock = o["button_lock_ticks"]
        lines.append(f"Emergency button: {'ready' if lock == 0 else 'locked for ' + _secs(lock) + ' s'}.")
        seen = "; ".join(f"{p['name']} ({p['color']}) in {p['room']}, {p['distance']:.1f} blocks away"
                         for p in o["players_in_view"])
        lines.append(f"Players in view: {seen or 'nobody'}.")
        if "players" in o:
            known = "; ".join(f"{p['name']} in {p['room']} ({p['position'][0]:.0f}, {p['position'][1]:.0f}), "
                              + ("seen now" if p["seen_s_ago"] == 0 else f"{p['seen_s_ago']:g} s ago")
                              for p in o["players"])
            lines.append(f"Last known positions of the others: {known or 'nobody'}.")
        bodies = "; ".join(f"{b['victim']} ({b['color']}) in {b['room']}, {b['distance']:.1f} blocks away"
                           for b in o["bodies_in_view"])
        lines.append(f"Bodies in view: {bodies or 'none'}.")
        lines.append(f"Known dead: {', '.join(o['known_dead']) or 'nobody'}.")
        if o["ejections"]:
            lines.append(
                "Ejected: "
                + ", ".join(
                    f"{e['name']} (was {'an Imposter' if e['role'] == 'imposter' else 'a Crewmate'})"
                    for e in o["ejections"]
                )
                + "."
            )
        for w in o["witnessed_kills"]:
            lines.append(f"You saw {w['killer']} kill {w['victim']} in {w['room']} at {_secs(w['tick'])} s.")
        cur = o["current_action"]
        if cur:
            lines.append(f"Your current action: {_action_text(cur)} (running).")
        last = o["last_action_result"]
        if last and last.get("status") in ("failed", "timed_out"):
            lines.append(f"Your last action {last['status'].replace('_', ' ')}: {last.get('reason', '')}.")
        return "\n".join(lines)

    def chat(self, obs: dict[str, Any]) -> str:
        m = obs["meeting"]
        if not m:
            return ""
        why = f"reported the body of {m['body']}" if m["reason"] == "report" else ("pressed the emergency "
                                                                                   "button")
        lines = [f"Meeting: {m['caller']} {why}. Round {m['round']} of {m['rounds']}. "
                 f"Speaking order: {', '.join(m['order'])}."]
        lines += [f"{t['speaker']}: \"{t['text']}\"" for t in m["transcript"]] or ["Nobody has spoken yet."]
        return "\n".join(lines)

    def format(self, module: str, obs: dict[str, Any], others: list[str]) -> str:
        mates = set(obs.get("teammates", []))
        in_view = [p["name"] for p in obs["players_in_view"]]
        if obs["role"] == IMPOSTER:
            stations = [m["station"] for m in obs["fake_missions"]]
        else:
            stations = [m["station"] for m in obs["missions"] if not m["done"]]
        modes = "report, mission, explore, kill" if obs["role"] == IMPOSTER else "report, mission, explore"
        if module == "meeting" and self.claims.on:  # the answer may carry structured claims (docs/claims.md)
            module = "meeting_claims"
        return _formats()[module].substitute(
            others_or_none=", ".join(others + ["none"]), others_or_skip=", ".join(others + ["skip"]),
            crew_in_view=", ".join(n for n in in_view if n not in mates) or "nobody", modes=modes,
            strategy_every=self.aria.strategy_every, stations=", ".join(map(str, stations)) or "none",
            in_view_or_wander=", ".join(in_view + ["wander"]), clamp=f"{self.aria.suspicion_clamp:g}",
            rooms=", ".join(self.rooms), max_claims=self.claims.max_per_utterance,
        )

    def compact(self, module: str, obs: dict[str, Any], *, evidence: list[str],
                others: list[str], speech: bool = True) -> list[dict[str, Any]]:
        """The compact profile's messages (text only): the evidence in few words, this meeting's speech and
        the candidates, within the character budgets above; ``speech`` False: no transcript (the ablation)."""
        system, mods = _compact()
        m = obs.get("meeting") or {}
        said = [f'{t["speaker"]}: "{t["text"]}"' for t in m.get("transcript", [])]  # quoted: players' words
        ev = _newest(evidence, self.aria.compact_evidence_chars)
        chat = _newest(said, COMPACT_CHAT_CHARS) if speech else ["(speech not shown)"]
        text = mods[module].substitute(
            evidence="\n".join(f"- {x}" for x in ev) or NO_EVIDENCE, chat="\n".join(chat) or "nobody "
                                                                                                 "spoke",
            candidates=", ".join(others + [SKIP]))
        if self.aria.compact_tally:  # the counts the linear reader parses, shown before the candidates line
            head, sep, tail = text.rpartition("\n" + CANDIDATES_LINE)
            tally = "\n".join([TALLY_HEADER, *tally_lines(text, others)])
            text = f"{head}\n{tally}{sep}{tail}"
        return [
            {
                "role": "system",
                "content": system.substitute(
                    name=obs["name"], n_players=self.game.num_players, n_imposters=self.game.num_imposters
                ),
            },
            {"role": "user", "content": [{"type": "text", "text": text}]},
        ]

    # -- the messages --------------------------------------------------------------------------------------
    def messages(self, module: str, obs: dict[str, Any], *, memory: str, skills: str = "", others: list[str],
                 n_images: int = 0, suspicion: str = "", **extra: str) -> list[dict[str, Any]]:
        """[system, user]; the user turn has the text, then one image part per frame (index into images).
        ``suspicion``: the agent's suspicion scores, shown as the last line of the state text (both modes)."""
        _, mods = _templates(self.aria.prompt_style, obs["role"])
        if module not in mods:
            raise KeyError(f"no {module!r} prompt for a {obs['role']} in style {self.aria.prompt_style}")
        state = self.state(obs) + (f"\n{suspicion}" if suspicion else "")
        values = {"state": state, "memory": memory, "skills": skills, "chat": self.chat(obs),
                  "format": self.format(module, obs, others), "sighting": "", "body": "", "strategy": "",
                  "outcome": "", "event": "", **extra}
        text = mods[module].substitute(values)
        # empty blocks leave no blank lines
        text = "\n".join(line for line in text.split("\n") if line.strip())
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [{"type": "image", "image": i} for i in range(n_images)]
        return [{"role": "system", "content": self.system(obs)}, {"role": "user", "content": content}]


def _action_text(a: dict[str, Any]) -> str:
    parts = [a["kind"]]
    for key in ("target", "station", "point"):
        if key in a:
            parts.append(f"{key} {a[key]}")
    return " ".join(parts)
