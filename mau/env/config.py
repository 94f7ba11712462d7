"""Game and world configuration: every rule constant of the game, documented, with the paper's defaults.

Durations are in game ticks (20 per second), distances in blocks. See ``docs/game.md`` for the rules they set.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mau.claims.config import ClaimsConfig
from mau.config import Model  # re-exported: the base of every config model lives in mau.config

# The paper's eight players (name, colour) in seat order, with Minecraft-like RGB colours.
DEFAULT_PLAYERS: list[tuple[str, str]] = [
    ("James", "red"), ("Steve", "blue"), ("Jason", "green"), ("Michael", "yellow"),
    ("Olivia", "pink"), ("Noah", "white"), ("Ethan", "light blue"), ("Martin", "black"),
]
COLOR_RGB: dict[str, tuple[int, int, int]] = {
    "red": (176, 46, 38), "blue": (60, 68, 170), "green": (94, 124, 22), "yellow": (254, 216, 61),
    "pink": (243, 139, 170), "white": (249, 255, 254), "light blue": (58, 179, 218), "black": (29, 29, 33),
    "orange": (249, 128, 29), "purple": (137, 50, 184), "cyan": (22, 156, 156), "brown": (131, 84, 50),
}
PAPER_IMPOSTERS = ("James", "Olivia")


class PlayerSpec(Model):
    name: str
    color: str

    @model_validator(mode="after")
    def _known_color(self) -> "PlayerSpec":
        if self.color not in COLOR_RGB:
            raise ValueError(f"color {self.color!r} is unknown; use one of {sorted(COLOR_RGB)}")
        return self


class GameConfig(Model):
    """The rules' constants. Defaults are the paper's sandbox (SPEC section 1)."""

    players: list[PlayerSpec] = Field(
        default_factory=lambda: [PlayerSpec(name=n, color=c) for n, c in DEFAULT_PLAYERS],
        description="All players in seat order; the first num_imposters + num_crewmates take part.")
    num_imposters: int = Field(2, ge=1, description="Imposters per match (they know each other).")
    num_crewmates: int = Field(6, ge=1, description="Crewmates per match: 6 (2:6), 5 (2:5) or 4 (2:4).")
    roles: Literal["seeded", "paper"] = Field(
        "seeded", description="seeded: imposters drawn from the match seed; paper: James and Olivia, as in "
                              "the paper's code.")
    missions_per_crewmate: int = Field(3, ge=1, description="Stations assigned to each crewmate (imposters "
                                                            "get as many to fake).")
    mission_hold_ticks: int = Field(1200, ge=1, description="Ticks a player must stay still at a pressed "
                                                            "station.")
    station_range: float = Field(1.5, gt=0, description="How close to a station's centre a player must "
                                                        "stand to press it.")
    kill_reach: float = Field(3.0, gt=0, description="Melee reach of a kill.")
    kill_cooldown_ticks: int | None = Field(
        None, ge=0, description="Cooldown after a kill; None = 3600 with 6 crewmates, 1200 in the smaller "
                                "variants.")
    kill_cooldown_initial_ticks: int = Field(600, ge=0, description="Cooldown at match start (not given by "
                                                                    "the paper; 30 s).")
    report_range: float = Field(2.0, gt=0, description="How close to a body a player must be to report it.")
    button_range: float = Field(2.0, gt=0, description="How close to the button a player must be to press "
                                                       "it.")
    button_lock_start_ticks: int = Field(2400, ge=0, description="No emergency meeting in the first ticks of "
                                                                 "a match.")
    button_lock_after_meeting_ticks: int = Field(1200, ge=0, description="No emergency meeting for this "
                                                                         "long after a meeting.")
    meeting_rounds: int = Field(3, ge=1, description="Speaking rounds per meeting at most; a round where "
                                                     "nobody speaks ends the talk.")
    max_steps: int = Field(200, ge=1, description="Step budget; when spent the match ends in TIMEOUT "
                                                  "(counted for the imposters).")
    step_ticks: int = Field(100, ge=1, description="Ticks between two decision points (one step); see "
                                                   "docs/game.md.")
    substep_ticks: int = Field(5, ge=1, description="Ticks the sim advances between two rule checks (0.25 "
                                                    "s, the paper's resume).")
    action_timeout_ticks: int = Field(600, ge=1, description="An action that has not finished after this "
                                                             "long times out (30 s).")
    walk_speed: float = Field(4.317, gt=0, description="Blocks per second (Minecraft walking speed).")
    eye_height: float = Field(1.62, gt=0, description="Camera height above the floor.")
    ego_view_distance: float = Field(36.0, gt=0, description="Ego state: players farther than this are not "
                                                             "seen.")
    privileged_radius: float = Field(96.0, gt=0, description="Privileged state: players within this radius "
                                                             "are listed.")
    fov_vertical_deg: float = Field(70.0, gt=0, lt=180, description="Vertical field of view (Minecraft's "
                                                                    "default).")
    view_aspect: float = Field(16 / 9, gt=0, description="Width / height of the view; sets the horizontal "
                                                         "field of view.")
    teleport_after_meeting: bool = Field(True, description="Everyone returns to the table around the "
                                                           "button after a meeting.")

    @model_validator(mode="after")
    def _enough_players(self) -> "GameConfig":
        need = self.num_imposters + self.num_crewmates
        if len(self.players) < need:
            raise ValueError(f"players: {len(self.players)} listed but num_imposters + num_crewmates = "
                             f"{need}; list more players")
        names = [p.name for p in self.players]
        if len(set(names)) != len(names):
            raise ValueError("players: two players share a name; names must be unique")
        if self.roles == "paper":
            missing = [n for n in PAPER_IMPOSTERS if n not in names[:need]]
            if missing or self.num_imposters != 2:
                raise ValueError("roles: 'paper' needs 2 imposters and James and Olivia among the players; "
                                 "use roles: seeded")
        return self

    @property
    def num_players(self) -> int:
        return self.num_imposters + self.num_crewmates

    @property
    def cooldown_ticks(self) -> int:
        if self.kill_cooldown_ticks is not None:
            return self.kill_cooldown_ticks
        return 3600 if self.num_crewmates >= 6 else 1200

    @property
    def fov_horizontal_rad(self) -> float:
        import math

        half_v = math.radians(self.fov_vertical_deg) / 2
        return 2 * math.atan(math.tan(half_v) * self.view_aspect)


class FramesConfig(Model):
    """First-person frames."""

    width: int = Field(640, ge=16, le=4096, description="Frame width in pixels (the paper: 640).")
    height: int = Field(360, ge=16, le=4096, description="Frame height in pixels (the paper: 360).")
    save: bool = Field(False, description="Write every alive player's frame at every decision point as PNG.")
    topdown: bool = Field(False, description="Also write a top-down image of the whole state at every step.")


class ObservationConfig(Model):
    """What an observation may say beyond what a player perceives (docs/game.md, "Observations")."""

    witness_text: bool = Field(
        False, description="Ablation only: tell a player in words who killed whom when it had the victim in "
                           "view (witnessed_kills, and the harness's 'You saw X kill Y'). Off: kills are "
                           "perceived only through frames and bodies, as in the paper.")
    privileged: Literal["sight", "radar"] = Field(
        "sight", description="What privileged state perceives beyond ego: sight (every player and body in "
                             "line of sight within privileged_radius, in every direction, and each player's "
                             "last sighting: no list tells of a death the player did not perceive) or radar "
                             "(the paper's: every player within privileged_radius through walls; a player "
                             "killed out of sight stays listed, still, where it fell: a tell, kept for "
                             "replication only; docs/game.md).")


class WorldConfig(Model):
    """Which world runs the rules, on which map."""

    backend: str = Field(
        "sim", description="World backend from the registry (mau.env.backends): sim, or minecraft "
                           "(docs/minecraft.md).")
    map: str = Field("skeld", description="A built-in map name or a path to a map YAML file.")
    game: GameConfig = Field(default_factory=GameConfig, description="The rules' constants (docs/game.md).")
    frames: FramesConfig = Field(default_factory=FramesConfig, description="First-person frames.")
    observation: ObservationConfig = Field(default_factory=ObservationConfig,
                                           description="Observation options (ablations of perception).")
    claims: ClaimsConfig = Field(default_factory=ClaimsConfig,
                                 description="Structured claims in meeting speech (docs/claims.md).")
