"""Exact replay of recorded matches, forks of their decisions, and the fork reward (docs/replay.md)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main
from mau.replay.check import check
from mau.replay.fork import run_fork
from mau.replay.record import read_match
from mau.replay.reward import ForkRewarder, RewardConfig, score
from mau.replay.session import BranchOutcome

ARIA = "configs/play/aria_scripted.yaml"
SCRIPTED = "configs/play/scripted.yaml"
NO_FRAMES = ["--set", "seats.crewmate.aria.frames=false", "--set", "seats.imposter.aria.frames=false"]


def play(out: Path, seed: int, config: str = ARIA, *sets: str) -> Path:
    assert main(["play", "--config", config, "--seed", str(seed), "--out", str(out), *sets]) == 0
    return out


@pytest.fixture(scope="module")
def voted(tmp_path_factory) -> Path:
    """An ARIA match (scripted expert) with a meeting and its votes (seed 1)."""
    return play(tmp_path_factory.mktemp("voted") / "m", 1, ARIA, *NO_FRAMES)


def crew_vote(rec) -> dict:
    return next(c for c in rec.calls if c[F.MODULE] == "vote" and c[F.ROLE] == "crewmate")


# -- replay --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["ego", "privileged"])
def test_replay_is_exact_on_scripted_policy_matches(tmp_path, mode):
    for seed in (1, 2, 3):
        m = play(tmp_path / f"s{seed}", seed, SCRIPTED, "--set", f"state_mode={mode}")
        r = check(m)
        assert r["ok"] and r["events_identical"] and r["events_replayed"] == r["events_recorded"] > 50, r


@pytest.mark.parametrize("mode", ["ego", "privileged"])
def test_replay_is_exact_on_aria_matches(tmp_path, mode):
    state = ["--set", f"seats.crewmate.aria.state={mode}", "--set", f"seats.imposter.aria.state={mode}"]
    for seed in (1, 4, 6):
        m = play(tmp_path / f"a{seed}", seed, ARIA, *NO_FRAMES, *state)
        r = check(m)
        assert r["ok"], r
        assert r["memory_identical"] and r["calls"]["parsed_mismatches"] == 0
        assert r["calls"]["replayed"] == r["calls"]["recorded"] > 100


@pytest.mark.parametrize("config", [SCRIPTED, ARIA])
def test_replay_is_exact_with_claims(tmp_path, config):
    """Claims on (docs/claims.md): the replayed events carry the same claims and the same private labels,
    which the record never held (the scripted expert, asked anyway, hands them over again)."""
    m = play(tmp_path / "c", 3, config, *(NO_FRAMES if config == ARIA else []), "--set",
             "world.claims.mode=structured", "--set", "world.game.max_steps=80")
    events = [json.loads(x) for x in (m / F.EVENTS_FILE).read_text().splitlines()]
    assert any(F.CLAIM_INTENT in e for e in events)
    r = check(m)
    assert r["ok"] and r["events_identical"], r


def test_replay_is_exact_with_frames_and_other_harness_axes(tmp_path):
    m = play(
        tmp_path / "m", 2, ARIA, "--set", "world.game.max_steps=30", "--set",
        "seats.crewmate.aria.memory=window", "--set", "seats.crewmate.aria.planning=hierarchical", "--set",
        "seats.imposter.aria.reflection=off",
    )
    assert (m / F.FRAMES_DIR).is_dir()
    assert check(m)["ok"]


def test_replay_needs_no_model_and_is_exact_when_answers_arrive_out_of_order(tmp_path):
    """A match against an OpenAI-compatible server with jittered latency (the calls of a step finish in
    another order than they were asked) and malformed answers (fallbacks): replay feeds the records back, no
    server."""
    from mau.harness.mock_server import mock_server

    with mock_server(
        str(tmp_path / "mock.log"), latency_ms=2, jitter_ms=6, faults="malformed=0.2", seed=3
    ) as srv:
        m = play(tmp_path / "m", 7, ARIA, *NO_FRAMES, "--set", "world.game.max_steps=12",
                 "--set", "seats.crewmate.model.backend=openai",
                 "--set", f"seats.crewmate.model.base_url={srv.base_url}",
                 "--set", "seats.crewmate.model.model=mock", "--set", "seats.crewmate.model.max_retries=0")
    recs = [json.loads(x) for x in (m / F.CALLS_FILE).read_text().splitlines()]
    assert any(r[F.FALLBACK] for r in recs) and any(r[F.BACKEND] == "openai" for r in recs)
    seat = {p["name"]: p["seat"] for p in json.loads((m / F.MATCH_HEADER).read_text())[F.PLAYERS]}
    written: dict[int, list[str]] = {}  # per step, the agents in the order of their records
    for r in recs:
        if r[F.PHASE] == "roam" and r[F.AGENT] not in written.setdefault(r[F.STEP], []):
            written[r[F.STEP]].append(r[F.AGENT])
    # The answers arrived in any order; the records of a step are written in seat order (mau.harness.calls).
    assert all(order == sorted(order, key=seat.get) for order in written.values()) and len(written) > 5
    assert max(r["latency_s"] for r in recs) > 0.004  # the jitter was there
    r = check(m)  # the server is gone: every openai answer comes from the record
    assert r["ok"], r


def test_replay_reports_the_first_differing_event(tmp_path, voted, capsys):
    m = tmp_path / "tampered"
    import shutil

    shutil.copytree(voted, m)
    lines = (m / F.CALLS_FILE).read_text().splitlines()
    rec = read_match(voted)
    vote = crew_vote(rec)
    new_target = next(n for n, role in rec.header[F.ROLES].items()
                      if n not in (vote[F.PARSED]["vote_target"], vote[F.AGENT]) and role == "imposter")
    k = next(i for i, x in enumerate(lines) if json.loads(x)[F.CALL_ID] == vote[F.CALL_ID])
    d = json.loads(lines[k])
    d[F.RAW_OUTPUT] = json.dumps({"vote_target": new_target})
    lines[k] = json.dumps(d)
    (m / F.CALLS_FILE).write_text("\n".join(lines) + "\n")
    r = check(m)
    assert not r["ok"] and not r["events_identical"]
    events = [json.loads(x) for x in (voted / F.EVENTS_FILE).read_text().splitlines()]
    first_vote = next(e for e in events if e[F.TYPE] == "vote" and e["voter"] == vote[F.AGENT])
    assert r["first_difference"]["index"] == first_vote["i"]
    assert new_target in r["first_difference"]["replayed"]
    assert main(["replay", str(m), "--check"]) == 1
    assert "first differing event" in capsys.readouterr().err
    assert main(["replay", str(voted), "--check"]) == 0


# -- forks ---------------------------------------------------------------------------------------------------
def test_fork_with_the_recorded_answer_reproduces_the_parent_exactly(tmp_path, voted):
    rec = read_match(voted)
    vote = crew_vote(rec)
    out = tmp_path / "fork"
    # The recorded answer second: its branch starts from a snapshot restored after another branch played out.
    h = asyncio.run(run_fork(rec, vote, [json.dumps({"vote_target": "skip"}), vote[F.RAW_OUTPUT]], out=out))
    b = Path(h["branches"][1]["folder"])
    assert (b / F.EVENTS_FILE).read_bytes() == (voted / F.EVENTS_FILE).read_bytes()
    assert (b / F.MEMORY_FILE).read_bytes() == (voted / F.MEMORY_FILE).read_bytes()
    assert h["branches"][1]["outcome"] == rec.header[F.OUTCOME]
    header = json.loads((b / F.MATCH_HEADER).read_text())
    assert header["fork"]["parent"] == str(voted) and header["fork"]["decision"]["call_id"] == vote[F.CALL_ID]
    assert check(b)["ok"]  # a branch is a match folder that itself replays exactly


def test_fork_with_another_vote_changes_the_tally_as_expected(voted):
    rec = read_match(voted)
    vote = crew_vote(rec)
    was = vote[F.PARSED]["vote_target"]
    ej = next(json.loads(x) for x in rec.event_lines if b'"ejection"' in x)
    h = asyncio.run(run_fork(rec, vote, [json.dumps({"vote_target": "skip"}), "no json "
                                                                              "here"], horizon="meeting"))
    for br in h["branches"]:
        # the new vote: skip, or for the fallback (docs/harness.md) the highest suspicion above zero, else
        # skip
        new = br["parsed"]["vote_target"]
        assert br["fallback"] or new == "skip"
        expected = dict(ej["tally"])
        expected[was] -= 1
        expected[new] = expected.get(new, 0) + 1
        assert {k: v for k, v in br["meeting_tally"].items() if v} == {k: v for k, v in expected.items() if v}
    assert h["branches"][1]["fallback"] and not h["branches"][0]["fallback"]
    assert all(not br["ended"] for br in h["branches"])  # horizon meeting: stopped at its end


def test_fork_cli_writes_branches_and_a_report(tmp_path, voted):
    rec = read_match(voted)
    vote = crew_vote(rec)
    answers = tmp_path / "answers.jsonl"
    recorded = vote[F.PARSED]["vote_target"]
    imp = next(n for n, r in rec.header[F.ROLES].items() if r == "imposter")
    alt = "skip" if recorded != "skip" else imp  # an answer other than the recorded one
    answers.write_text(json.dumps({"vote_target": alt}) + "\n" + json.dumps("garbage") + "\n")
    out = tmp_path / "fork"
    assert main(["fork", str(voted), "--step", str(vote[F.STEP]), "--agent", vote[F.AGENT], "--answers",
                 str(answers), "--repeats", "2", "--out", str(out)]) == 0
    h = json.loads((out / "fork.json").read_text())
    assert len(h["branches"]) == 6 and len(list((out / "branches").iterdir())) == 6
    keys = {r["answer"]: r for r in h["summary"]}
    assert set(keys) == {recorded, alt, "fallback"} and keys[alt]["n"] == 2
    assert keys[vote[F.PARSED]["vote_target"]]["recorded"]
    assert "crew win" in (out / "fork.md").read_text()
    assert (
        main(["fork", str(voted), "--step", "999", "--answers", str(answers), "--out", str(tmp_path / "x")])
        == 2
    )


# -- rewards -------------------------------------------------------------------------------------------------
ROLES = {"James": "imposter", "Olivia": "imposter", "Noah": "crewmate", "Steve": "crewmate"}


def outcome(
    vote: str | None, ejected: str | None = None, crew_win: bool | None = None, fallback: bool = False
):
    parsed = None if vote is None else {"vote_target": vote, "reasoning": ""}
    return BranchOutcome(answer="x", parsed=parsed, fallback=fallback, ended=crew_win is not None,
                         outcome=None, crew_win=crew_win, meeting_ejected=ejected,
                         meeting_ejected_role=ROLES.get(ejected) if ejected else None, meeting_tally=None,
                         roles=ROLES)


def test_reward_terms_on_hand_built_decisions():
    cfg = RewardConfig(vote_imposter=1.0, vote_crewmate=-0.25, vote_skip=0.1, meeting_ejects_imposter=0.5,
                       meeting_ejects_crewmate=-0.5, crew_win=2.0, unparseable=-1.0)
    assert score(outcome("James", "James", True), cfg) == (
        3.5, {"vote_imposter": 1.0, "meeting_ejects_imposter": 0.5, "crew_win": 2.0},
    )
    assert score(outcome("Noah", "Noah", False), cfg)[0] == pytest.approx(-0.75)
    assert score(outcome("skip"), cfg)[0] == pytest.approx(0.1)
    assert score(outcome("Steve", "James"), cfg)[0] == pytest.approx(0.25)
    assert score(outcome("James", fallback=True), cfg) == (-1.0, {"unparseable": -1.0})


def test_fork_rewards_follow_the_vote(voted):
    rec = read_match(voted)
    vote = crew_vote(rec)
    roles = rec.header[F.ROLES]
    imp = next(n for n, r in roles.items() if r == "imposter")
    text = json.dumps(vote[F.MESSAGES])
    alive = re.search(r"<one of: ([^>]*)>", text).group(1).split(", ")  # the vote's candidates
    crew = next(n for n in alive if roles.get(n) == "crewmate")  # alive, and a crewmate in this match
    rw = ForkRewarder(RewardConfig())
    got = rw.rewards([(str(voted), vote[F.CALL_ID], json.dumps({"vote_target": imp})),
                      (str(voted), vote[F.CALL_ID], json.dumps({"vote_target": crew})),
                      (str(voted), vote[F.CALL_ID], "{not json")])
    assert got[0][1]["vote_imposter"] == 1.0 and "vote_crewmate" in got[1][1]
    assert got[2][0] == -1.0 and got[0][0] > got[1][0] > got[2][0]
    assert rw.forks == 3 and len(rw._cache) == 1  # one replay served every answer
