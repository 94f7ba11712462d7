"""Every file, field and event name of mau's data formats, in one place (documented in docs/formats.md)."""

# -- match folder (format version 1) ---------------------------------------------------------------------
MATCH_FORMAT = "mau.match"
MATCH_FORMAT_VERSION = 1
MATCH_HEADER = "match.json"  # header: format, seed, roles, config, outcome, provenance
EVENTS_FILE = "events.jsonl"  # ground-truth event log, one event per line
FRAMES_DIR = "frames"  # frames/<step:04d>_<agent>.png and frames/<step:04d>_topdown.png
RESOLVED_CONFIG = "config.yaml"

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
