"""Every file, field and event name of mau's data formats, in one place (documented in docs/formats.md)."""

# -- roles, outcomes and the words a vote or an accusation uses (match headers, events, call records) --------
CREWMATE = "crewmate"
IMPOSTER = "imposter"
ROLE_NAMES = (CREWMATE, IMPOSTER)
# The claim kinds of meeting speech (docs/claims.md): facts, stances, and the facts that put a player in a
# place during a window (and those of them that can be said with a relative time, "just before the meeting").
CLAIM_FACT_KINDS = ("at", "task", "saw", "with", "saw_kill", "body")
CLAIM_STANCE_KINDS = ("accuse", "vouch")
CLAIM_PLACED_KINDS = ("at", "saw", "with", "saw_kill")
CLAIM_WHEN_KINDS = ("at", "saw", "with")
# The four endings (the paper's game.log RESULT lines).
IMPOSTER_WIN = "IMPOSTER WIN"
TIMEOUT = "TIMEOUT"
CREWMATE_WIN = "CREWMATE WIN"
MISSION_WIN = "MISSION WIN"
OUTCOMES = (IMPOSTER_WIN, TIMEOUT, CREWMATE_WIN, MISSION_WIN)
CREW_OUTCOMES = (CREWMATE_WIN, MISSION_WIN)
TICKS_PER_SECOND = 20  # the game clock: every tick count in events, sights and tracks is in 1/20 s
NONE = "none"  # no one (an accusation, a target)
SKIP = "skip"  # a vote for no one

# -- match folder (format version 1) ---------------------------------------------------------------------
MATCH_FORMAT = "mau.match"
MATCH_FORMAT_VERSION = 1
MATCH_HEADER = "match.json"  # header: format, seed, roles, config, outcome, provenance
EVENTS_FILE = "events.jsonl"  # ground-truth event log, one event per line
FRAMES_DIR = "frames"  # frames/<step:04d>_<agent>.png and frames/<step:04d>_topdown.png
RESOLVED_CONFIG = "config.yaml"
# tracks.jsonl (an optional part of match format 1, with its own version in the header's "tracks"): every
# active player's position after the reset, after each roam step and after each meeting; what `mau view` draws
TRACKS_FILE = "tracks.jsonl"
TRACKS = "tracks"  # header: {"version": TRACKS_VERSION, "lines": n}
TRACKS_VERSION = 1
TRACK_AFTER = "after"  # "start", "roam" or "meeting"
TRACK_PLAYERS = "players"  # {name: [x, z, yaw in degrees]} of the active players
TRACK_BODIES = "bodies"  # [[victim, x, z], ...] bodies lying on the map
# sights.jsonl (an optional part of match format 1, with its own version in the header's "sights"): between
# step ends, at the sub-step rate, every change of a player's place and of who has whom in view
# (docs/formats.md)
SIGHTS_FILE = "sights.jsonl"
SIGHTS = "sights"  # header: {"version": SIGHTS_VERSION, "lines": n}
SIGHTS_VERSION = 1
SIGHTS_VERSION_FIELD = "version"  # the first line, the legend: {version, players, places}
SIGHT_PLAYERS = "players"  # legend: the players in seat order (a player is written as its index here)
SIGHT_PLACE_NAMES = "places"  # legend: the map's places (a place is written as its index here)
SIGHT_TICK = "t"  # the tick of the sample
SIGHT_PLACES = "at"  # [[player, place or null (dead or ejected)], ...] of the players whose place changed
SIGHT_GAINED = "see"  # [[viewer, seen], ...] pairs that came into view
SIGHT_LOST = "lost"  # [[viewer, seen], ...] pairs that went out of view
SIGHT_AFTER_MEETING = "meeting"  # true on the sample of the table after a meeting (same tick as the call)
# claims.jsonl (an optional part of match format 1, with its own version in the header's "claims"): the
# role-blind checker's verdict on every claim of the match (docs/claims.md, docs/formats.md)
CLAIMS_FILE = "claims.jsonl"
CLAIMS_HEADER = "claims"  # header: {"version": CLAIMS_VERSION, "lines": n, "verdicts": {verdict: n}}
CLAIMS_VERSION = 2  # 2: the issue-30 rules (time forms, cover rule, sightings for claims about others)

# -- header fields ---------------------------------------------------------------------------------------
FORMAT = "format"
FORMAT_VERSION = "format_version"
SEED = "seed"
ROLES = "roles"
PLAYERS = "players"
CONFIG = "config"
OUTCOME = "outcome"
END_REASON = "end_reason"
STEPS = "steps"
TICKS = "ticks"
MAP = "map"
BACKEND = "backend"
WALL_SECONDS = "wall_seconds"
N_EVENTS = "n_events"
N_FRAMES = "n_frames"

# -- event fields ----------------------------------------------------------------------------------------
EVENT_INDEX = "i"
TICK = "tick"
STEP = "step"
TYPE = "type"

# -- event types -----------------------------------------------------------------------------------------
EV_MATCH_START = "match_start"
EV_ACTION_START = "action_start"
EV_ACTION_END = "action_end"
EV_MISSION_START = "mission_start"
EV_MISSION_CANCEL = "mission_cancel"
EV_MISSION_COMPLETE = "mission_complete"
EV_FAKE_MISSION_START = "fake_mission_start"
EV_FAKE_MISSION_END = "fake_mission_end"
EV_KILL = "kill"
EV_BODY_SEEN = "body_seen"
EV_REPORT = "report"
EV_EMERGENCY = "emergency"
EV_MEETING_START = "meeting_start"
EV_UTTERANCE = "utterance"
EV_PASS = "pass"
EV_VOTING_START = "voting_start"
EV_VOTE = "vote"
EV_EJECTION = "ejection"
EV_MEETING_END = "meeting_end"
EV_MATCH_END = "match_end"
# utterance events with world.claims.mode structured (docs/claims.md); the transcript line has CLAIMS too
CLAIMS = "claims"  # the claims kept (canonical; public)
CLAIM_INTENT = "intent"  # a private label per kept claim ("lie", "mistake" or null): events.jsonl only
CLAIMS_DROPPED = "claims_dropped"  # [{claim, reason}] of the claims the grammar refused
# world.claims.mode free: the claims a scripted speaker said in words (the gold an extractor is scored on),
# with their INTENT labels; events.jsonl only, never in the transcript or an observation
CLAIMS_GOLD = "gold_claims"
INTENT_LIE, INTENT_MISTAKE = "lie", "mistake"
EVENT_TYPES = (
    EV_MATCH_START, EV_ACTION_START, EV_ACTION_END, EV_MISSION_START, EV_MISSION_CANCEL, EV_MISSION_COMPLETE,
    EV_FAKE_MISSION_START, EV_FAKE_MISSION_END, EV_KILL, EV_BODY_SEEN, EV_REPORT, EV_EMERGENCY,
    EV_MEETING_START, EV_UTTERANCE, EV_PASS, EV_VOTING_START, EV_VOTE, EV_EJECTION, EV_MEETING_END,
    EV_MATCH_END,
)

# -- ARIA call records (match format version 1: calls.jsonl, memory.jsonl) --------------------------------
CALLS_FILE = "calls.jsonl"  # one record per model call
MEMORY_FILE = "memory.jsonl"  # each agent's memory and beliefs at each meeting end
CALL_ID = "call_id"
MATCH = "match"
AGENT = "agent"
ROLE = "role"
MODULE = "module"
HARNESS = "harness"
MODEL = "model"
MESSAGES = "messages"
RAW_OUTPUT = "raw_output"
PARSED = "parsed"
FALLBACK = "fallback"
FALLBACK_REASON = "fallback_reason"
ERROR = "error"
LATENCY_S = "latency_s"
HARNESS_MS = "harness_ms"
PROMPT_TOKENS = "prompt_tokens"
COMPLETION_TOKENS = "completion_tokens"
MATCH_ID = "match_id"

# -- collect run folder (format version 1; docs/formats.md) ------------------------------------------------
RUN_FORMAT = "mau.collect"
RUN_FORMAT_VERSION = 1
RUN_HEADER = "run.json"  # format, version, grid size, created
PROVENANCE_FILE = "provenance.json"
GRID_FILE = "grid.jsonl"  # every planned match: match_id, seed, imposter, crewmate, case, rep, shard
MATCHES_DIR = "matches"  # matches/<match_id>/ : match folders (mau.match v1)
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
MATCHUPS_CSV = "matchups.csv"
MATCHUPS_PNG = "matchups.png"
LOGS_DIR = "logs"
# grid fields (also in each match header under "grid")
GRID = "grid"
IMPOSTER_MODEL = "imposter_model"
CREWMATE_MODEL = "crewmate_model"
CASE = "case"
REP = "rep"
SHARD = "shard"

# -- behaviour-cloning dataset folder (format version 2; docs/datasets.md) ---------------------------------
DATASET_FORMAT = "mau.dataset"
DATASET_FORMAT_VERSION = 2  # 2: the beliefs_json column
DATASET_HEADER = "dataset.json"  # format, version, filter, counts, splits' matches, provenance
DATASET_CARD = "README.md"  # the dataset card (counts, lengths, sources, filter definition)
DATASET_SPLITS = ("train", "validation", "test")
# columns (one row per (X, S, Y) example; TRL's conversational vision format plus metadata)
DS_MESSAGES = "messages"  # [system, user (image placeholders + text), assistant (the raw output)]
DS_IMAGES = "images"  # the call's JPEG frames, embedded bytes, in the order of the user message's image parts
DS_CONTENT = "content"
DS_CONTENT_TYPE = "type"  # "text" or "image"
DS_CONTENT_TEXT = "text"
DS_RUN = "run"  # the collect run (or folder) the match came from
DS_CREW_WON = "crew_won"
DS_HARNESS_AXES = ("state", "memory", "planning", "reflection", "prompt_style")
DS_PARSED_JSON = "parsed_json"  # the checked answer, as a JSON string
DS_RECORD_JSON = "record_json"  # the whole call record except its messages, as a JSON string
DS_FILTERS = "filters"  # the filters of the registry that selected this example (e.g. ["bcwin", "bcvote"])
DS_N_IMAGES = "n_images"
# the expert's belief over the VOTE's candidates and skip (sums to 1; mau.datasets.beliefs), as a JSON string;
# null where the expert recorded none
DS_BELIEFS_JSON = "beliefs_json"
# fields of the match folder that the dataset builder reads (docs/formats.md)
EJECTED = "ejected"  # ejection event: the ejected player (or null)
SPEAKER = "speaker"  # utterance event
KILLER = "killer"  # kill event: the imposter who killed
VICTIM = "victim"  # kill event: the player killed
UTTERANCE_TEXT = "text"  # utterance event
PHASE = "phase"  # call record
IMAGE_PATH = "path"  # image part of a recorded user message: "frames/..."
VOTE_TARGET = "vote_target"  # VOTE answer
# VOTE answer, optional: {living other: P(imposter)} (the scripted teacher's posterior)
VOTE_BELIEFS = "beliefs"

# -- eval run folder (format version 1; docs/formats.md, docs/evaluation.md) ---------------------------------
# run.json (with this format), config.yaml, provenance.json, grid.jsonl and matches/ as in a collect run,
# plus:
EVAL_FORMAT = "mau.eval"
EVAL_FORMAT_VERSION = 1
RESULTS_MD = "results.md"  # the tables (Appendix U shape) and the paired comparisons
RESULTS_CSV = "results.csv"  # long format: arm, imposter, metric, value, ci_low, ci_high, n, method
RESULTS_JSON = "results.json"
RESULTS_PNG = "results.png"  # at a glance: within-probe AUROC and crew win rate per arm, 95% intervals
RESULTS_PANELS_PNG = "results_panels.png"  # every headline metric per arm by imposter model, 95% intervals
ARM = "arm"  # eval: the crewmates' arm (match header and grid line)
EVAL_IMPOSTER = "imposter"  # eval grid line: the imposters' model name
# Results tables (eval and detection cells, results.csv, collect matchups, the claims report's groups, the
# viewer's rows): the column of the imposter model.
IMPOSTER_COLUMN = "imposter"

# -- belief probes (match folder: probes.jsonl, format mau.probes v1; docs/formats.md) ----------------------
PROBES_FILE = "probes.jsonl"  # one record per probe (a model's answer or the ideal observer's posterior)
PROBES_FORMAT = "mau.probes"
OBSERVER_FIT = "observer_fit.json"  # mau beliefs --fit: the ideal observer's fitted likelihoods
FIT_FORMAT, FIT_VERSION = "mau.observer_fit", 1  # its format (docs/formats.md): one kind's params
FIT_MIXTURE_VERSION = 2  # the same format holding a mixture over the imposters' kinds (kinds, prior)
FIT_LINEAR_VERSION = 3  # the same format holding a linear detector (linear: weights, bias; mau.infer.linear)
FIT_POOL_VERSION = 4  # the same format holding a pool of detectors (pool: members as paths, weights, rule)
FIT_VERSIONS = (FIT_VERSION, FIT_MIXTURE_VERSION, FIT_LINEAR_VERSION, FIT_POOL_VERSION)
PROBES_FORMAT_VERSION = 3
# the metrics read all; the observer's evidence changed in 2 and 3 (formats.md)
PROBES_READABLE_VERSIONS = (1, 2, 3)
# mau beliefs --fit / --params: 3 adds evidence kinds to 2's, same meaning otherwise
PROBES_FIT_VERSIONS = (2, 3)
PROBES_VERSION_FIELD = "format_version"  # in every probe record
PROBE_SOURCE = "source"  # PROBE_SOURCE_MODEL or PROBE_SOURCE_IDEAL
PROBE_SOURCE_MODEL, PROBE_SOURCE_IDEAL = "model", "ideal"  # a seat's model; the ideal observer
PROBE_MOMENT = "moment"  # meeting_start, round_end, before_vote, roam
PROBE_SEQ = "seq"  # the probe moment's number within the match (1, 2, ...)
PROBE_CANDIDATES = "candidates"  # the players the crewmate believes alive (whom it is asked about)
PROBE_BELIEFS = "beliefs"  # {name: P(imposter)} normalised to the living imposters; null on a fallback
PROBE_TOP2 = "top2"
PROBE_READOUT = "readout"  # model probes: "answer" (asked, JSON) or "vote" (the VOTE answer's scored names)
HEADER_PROBES = "probes"  # match header: the probes' counts and costs
# the detection report (`mau beliefs`; docs/formats.md): tables, their numbers, long format, plots
BELIEFS_MD, BELIEFS_JSON, BELIEFS_CSV = "beliefs.md", "beliefs.json", "beliefs.csv"
CALIBRATION_PNG, CURVES_PNG = "calibration.png", "belief_curves.png"

# -- declared shapes of the central records (writer and readers share them) ----------------------------------
# TypedDicts carry the keys above as literal names (a TypedDict cannot take constants); tests check that the
# writers produce exactly these keys.
from typing import Any, TypedDict  # noqa: E402


class CallRecord(TypedDict):
    """One line of calls.jsonl (match format version 1), written by ``mau.harness.calls.Caller``."""

    call_id: str
    match: str
    seed: int
    step: int
    tick: int
    phase: str
    agent: str
    role: str
    module: str
    harness: dict[str, Any]
    model: str
    backend: str
    messages: list[dict[str, Any]]
    raw_output: str | None
    parsed: dict[str, Any]
    fallback: bool
    fallback_reason: str | None
    error: str | None
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int
    temperature: float
    max_tokens: int
    harness_ms: float


class Observation(TypedDict, total=False):
    """What one player observes (``mau.env.observation.observe``); the keys a player may lack (an imposter's
    ``teammates``, ``in_kill_reach``; ``missions`` or ``fake_missions``) make it partial."""

    name: str
    color: str
    role: str
    alive: bool
    state_mode: str
    phase: str
    step: int
    max_steps: int
    tick: int
    time_s: float
    position: list[float]
    yaw_deg: float
    room: str
    roster: list[dict[str, str]]
    n_imposters: int
    walk_speed: float  # the world's walking speed (blocks/s) and view distance: public rules of movement
    view_distance: float
    missions: list[dict[str, Any]]
    fake_missions: list[dict[str, Any]]
    teammates: list[str]
    holding_station: int | None
    holding_ticks: int
    mission_hold_ticks: int
    kill_cooldown_ticks: int
    button_lock_ticks: int
    at_button: bool
    players: list[dict[str, Any]]  # privileged: last known position of each player not known dead
    privileged: str  # privileged: "sight" (line of sight all round + last sightings) or "radar" (the paper's)
    players_in_view: list[dict[str, Any]]
    bodies_in_view: list[dict[str, Any]]
    reportable_bodies: list[str]
    in_kill_reach: list[str]
    known_dead: list[str]
    ejections: list[dict[str, str]]
    meetings_public: list[dict[str, Any]]  # finished meetings: n, caller, reason, body, votes, ejected
    witnessed_kills: list[dict[str, Any]]  # empty unless world.observation.witness_text (an ablation)
    current_action: dict[str, Any] | None
    last_action_result: dict[str, Any] | None
    meeting: dict[str, Any] | None
# -- fork folder (format version 1; docs/replay.md, docs/formats.md) -----------------------------------------
FORK_FORMAT = "mau.fork"
FORK_FORMAT_VERSION = 1
FORK_HEADER = "fork.json"  # the decision, every branch's outcome, the summary per answer
FORK_REPORT = "fork.md"  # the summary as a table with intervals
BRANCHES_DIR = "branches"  # branches/<k:04d>/ : one match folder (mau.match v1) per branch
FORK = "fork"  # match header of a branch: {parent, parent_match_id, decision, branch, answer, ended}
