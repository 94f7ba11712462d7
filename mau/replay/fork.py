"""``mau fork``: counterfactual branches of one recorded decision.

The match is replayed up to the world step of the decision and snapshotted there (world and every agent's
harness state); each branch restores the snapshot, answers the decision with its alternative, lets the other
agents of that same step answer as recorded, and plays on live with the seats' models (recorded or
configured) to the end of the match (or of the meeting). Each branch can be written as a match folder whose
header links it to its parent and decision; the fork report gives the outcome distribution per answer.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.harness.backends.base import Frame, ModelRequest
from mau.replay.record import RecordedMatch
from mau.replay.session import BranchOutcome, Session
from mau.stats import wilson

FORK_HEADER, FORK_REPORT, BRANCHES_DIR = F.FORK_HEADER, F.FORK_REPORT, F.BRANCHES_DIR


def request_from_record(rec: RecordedMatch, call: dict[str, Any], max_tokens: int | None = None,
                        temperature: float | None = None) -> ModelRequest:
    """The decision's exact request, rebuilt from its record (images read back from the match's frames/)."""
    messages, frames = [], []
    for m in call[F.MESSAGES]:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image":
                    path = rec.path / part[F.IMAGE_PATH]
                    if not path.is_file():
                        raise MauError(f"{path}: the decision's frame is missing; a model cannot see it "
                                       f"(record "
                                       "the match with frames on, or fork a text-only module such as vote)")
                    from PIL import Image

                    jpeg = path.read_bytes()
                    frames.append(Frame(image=Image.open(io.BytesIO(jpeg)).convert("RGB"), jpeg=jpeg,
                                        path=part[F.IMAGE_PATH]))
                    parts.append({"type": "image", "image": len(frames) - 1})
                else:
                    parts.append(part)
            content = parts
        messages.append({"role": m["role"], "content": content})
    return ModelRequest(messages=messages, images=frames, module=call[F.MODULE], agent=call[F.AGENT],
                        temperature=temperature if temperature is not None else call.get("temperature"),
                        max_tokens=max_tokens or call.get("max_tokens"))


async def sample_answers(rec: RecordedMatch, call: dict[str, Any], model, n: int) -> list[str | None]:
    """``n`` answers of ``model`` to the recorded decision (sent together: one batch on a local model)."""
    from mau.harness.backends import make_backend

    if model.backend == "scripted":
        raise MauError("fork model: the scripted expert answers from the live observation, not from a "
                       "prompt; give --answers, or a model backend (hf, openai)")
    backend = make_backend(model)
    try:
        req = request_from_record(rec, call, max_tokens=model.max_tokens, temperature=model.temperature)
        responses = await asyncio.gather(*(backend.complete(req) for _ in range(n)))
    finally:
        await backend.aclose()
    return [r.text if r.error is None else None for r in responses]


def answer_key(b: BranchOutcome) -> str:
    """The group a branch belongs to in the report: the vote target, else the parsed answer, or 'fallback'."""
    if b.fallback:
        return "fallback"
    if b.vote_target is not None:
        return b.vote_target
    p = {k: v for k, v in (b.parsed or {}).items() if k != "reasoning"}
    return json.dumps(p, sort_keys=True)


def summarize(branches: list[BranchOutcome], recorded_key: str | None) -> list[dict[str, Any]]:
    groups: dict[str, list[BranchOutcome]] = {}
    for b in branches:
        groups.setdefault(answer_key(b), []).append(b)
    rows = []
    for key, bs in groups.items():
        n = len(bs)
        ended = [b for b in bs if b.ended]
        wins = sum(1 for b in ended if b.crew_win)
        imp = sum(1 for b in bs if b.meeting_ejected_role == F.IMPOSTER)
        crew = sum(1 for b in bs if b.meeting_ejected_role == "crewmate")
        outcomes: dict[str, int] = {}
        for b in bs:
            outcomes[b.outcome or "unfinished"] = outcomes.get(b.outcome or "unfinished", 0) + 1
        ejected: dict[str, int] = {}
        for b in bs:
            ejected[b.meeting_ejected or "nobody"] = ejected.get(b.meeting_ejected or "nobody", 0) + 1
        rows.append(
            {
                "answer": key, "recorded": key == recorded_key, "n": n,
                "outcomes": dict(sorted(outcomes.items())),
                "crew_win": {
                    "k": wins, "n": len(ended), "rate": wins / len(ended) if ended else None,
                    "ci95": list(wilson(wins, len(ended))) if ended else None,
                },
                "meeting_ejected": dict(sorted(ejected.items())),
                "meeting_ejected_imposter": {"k": imp, "n": n, "rate": imp / n, "ci95": list(wilson(imp, n))},
                "meeting_ejected_crewmate": {
                    "k": crew, "n": n, "rate": crew / n, "ci95": list(wilson(crew, n)),
                },
                "mean_ejections_after_fork": sum(len(b.ejections) for b in bs) / n,
            }
        )
    return rows


def report_md(header: dict[str, Any]) -> str:
    d = header["decision"]
    lines = [f"# Fork of {header['parent']}", "",
             f"Decision {d['call_id']}: {d['agent']} ({d['role']}), {d['module']} at step {d['step']}; "
             f"recorded answer {d['recorded_answer']!r}. Horizon: {header['horizon']}. Branches: "
             f"{len(header['branches'])}.",
             "", "| answer | n | crew win | fork meeting ejects an imposter | ejects a crewmate | outcomes |",
             "|---|---|---|---|---|---|"]

    def pct(x: dict[str, Any]) -> str:
        if x["rate"] is None:
            return "n/a"
        return (f"{100 * x['rate']:.1f} % [{100 * x['ci95'][0]:.1f}, {100 * x['ci95'][1]:.1f}] "
                f"({x['k']}/{x['n']})")

    for r in header["summary"]:
        name = r["answer"] + (" (recorded)" if r["recorded"] else "")
        outs = ", ".join(f"{k} {v}" for k, v in r["outcomes"].items())
        lines.append(f"| {name} | {r['n']} | {pct(r['crew_win'])} | {pct(r['meeting_ejected_imposter'])} | "
                     f"{pct(r['meeting_ejected_crewmate'])} | {outs} |")
    lines += ["", "Intervals: 95 % Wilson over the branches of each answer."]
    return "\n".join(lines) + "\n"


def write_branch(session: Session, folder: Path, parent: RecordedMatch, decision: dict[str, Any], k: int,
                 outcome: BranchOutcome) -> Path:
    """The branch as a match folder (mau.match v1) whose header links it to its parent and decision."""
    from mau.config import dump_yaml
    from mau.env.runner import MatchResult, match_header
    from mau.matchdir import MatchWriter
    from mau.provenance import provenance
    from mau.replay.record import ReplayConfig

    match_id = folder.name
    writer = MatchWriter(folder)
    try:
        st = session.world.state
        writer.write_events(st.events)
        cfg = ReplayConfig(seats=session.seats, world=parent.world)
        writer.write_text(F.RESOLVED_CONFIG, dump_yaml(cfg))
        with open(writer.staging / F.CALLS_FILE, "w") as f:
            for n, r in enumerate(session.match.log.records):
                r = {**r, F.CALL_ID: f"{match_id}:{n}", F.MATCH: match_id}
                f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
        with open(writer.staging / F.MEMORY_FILE, "w") as f:
            for d in session.match.memory_dumps:
                f.write(json.dumps(d, separators=(",", ":")) + "\n")
        result = MatchResult(parent.seed, st.outcome, st.end_reason, st.step, st.tick, 0.0, None)
        header = match_header(session.world, result, cfg, provenance())
        header.update({F.MATCH_ID: match_id, "calls": session.match.log.summary(),
                       "seats": {k2: v.model_dump(mode="json") for k2, v in session.seats.items()},
                       F.FORK: {"parent": str(parent.path), "parent_match_id": parent.match_id,
                                "decision": decision, "branch": k, "answer": outcome.answer,
                                "ended": outcome.ended}})
        return writer.publish(header)
    except BaseException:
        writer.abort()
        raise


def decision_info(rec: RecordedMatch, call: dict[str, Any]) -> dict[str, Any]:
    return {
        "call_id": call[F.CALL_ID], "step": call[F.STEP], "tick": call[F.TICK], "phase": call.get("phase"),
        "agent": call[F.AGENT], "role": call[F.ROLE], "module": call[F.MODULE],
        "recorded_answer": call[F.RAW_OUTPUT], "recorded_parsed": call[F.PARSED],
    }


async def run_fork(
    rec: RecordedMatch, call: dict[str, Any], answers: list[str | None], *, horizon: str = "match",
    repeats: int = 1, seats=None, frames: bool = False, live_models: bool = True, out: Path | None = None,
    progress=None,
) -> dict[str, Any]:
    """Play every answer ``repeats`` times from the decision; write the branches (with ``out``)."""
    t0 = time.perf_counter()
    session = Session(rec, seats=seats, frames=frames, live_models=live_models)
    decision = decision_info(rec, call)
    branches: list[dict[str, Any]] = []
    outcomes: list[BranchOutcome] = []
    try:
        snap = await session.prepare_fork(call[F.CALL_ID])
        t_fork = time.perf_counter()
        k = 0
        for a in answers:
            for _ in range(repeats):
                o = await session.branch(snap, a if a is not None else "", horizon)
                outcomes.append(o)
                row = {"branch": k, **o.as_dict()}
                if out is not None:
                    row["folder"] = str(
                        write_branch(session, out / BRANCHES_DIR / f"{k:04d}", rec, decision, k, o)
                    )
                branches.append(row)
                k += 1
                if progress is not None:
                    progress(k)
        play_s = time.perf_counter() - t_fork
    finally:
        await session.close()
    recorded = session.rec.call(call[F.CALL_ID])
    recorded_key = answer_key(
        BranchOutcome(
            recorded[F.RAW_OUTPUT], recorded[F.PARSED], bool(recorded[F.FALLBACK]), False, None, None, None,
            None, None,
        )
    )
    header = {F.FORMAT: F.FORK_FORMAT, F.FORMAT_VERSION: F.FORK_FORMAT_VERSION, "parent": str(rec.path),
              "parent_match_id": rec.match_id,
              "parent_outcome": rec.header.get(F.OUTCOME), "decision": decision, "horizon": horizon,
              "repeats": repeats, "branches": branches, "summary": summarize(outcomes, recorded_key),
              "prepare_s": round(t_fork - t0, 3), "play_s": round(play_s, 3),
              "branches_per_second": round(len(outcomes) / play_s, 2) if play_s > 0 else None}
    return header


def read_answers(path: str | Path) -> list[str]:
    """An answers file: JSON lines, each a string (the raw answer text) or an object (sent as its JSON)."""
    p = Path(path)
    if not p.is_file():
        raise MauError(f"--answers {path}: no such file; give a JSON-lines file of answers")
    out = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except json.JSONDecodeError:
            raise MauError(f"{path}:{n}: not JSON; write each answer as a JSON string or object") from None
        out.append(v if isinstance(v, str) else json.dumps(v))
    if not out:
        raise MauError(f"--answers {path}: no answers in the file")
    return out
