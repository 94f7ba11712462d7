"""One model call end to end (prompt -> backend -> check or fallback -> record), the call log, and the frame
store that renders, saves and shares the frames of a step.

Every call leaves one record in ``calls.jsonl`` (docs/formats.md): the exact messages (images as paths of
saved frames), the raw output, the parsed answer, whether the fallback was used and why, latency, tokens,
model and backend. The record is the future training example, so it keeps everything.
"""

from __future__ import annotations

import io
import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

from mau import schema as F
from mau.errors import MauError
from mau.harness.backends.base import Frame, ModelBackend, ModelConfig, ModelRequest
from mau.harness.modules import PRIVATE, Context, decide
from mau.snapshot import Parts, Restored


class FrameStore:
    """Renders each (agent, step, view) once, saves it as JPEG under frames/, and hands out the same Frame
    to every call of that step that needs it."""

    def __init__(self, world, folder: Path | None, quality: int = 90):
        self.world = world
        self.folder = folder
        self.quality = quality
        self._cache: dict[tuple[str, int, int, str], Frame] = {}
        self._names: dict[str, int] = {}
        self.saved = 0
        self.seconds = 0.0  # rendering and encoding frames (writing happens in a background thread)
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None
        self._batch: list[tuple[Path, bytes]] = []

    def parts(self) -> Parts:
        """What changes: the frame names given out (a repeated step number gets a new name) and the count
        saved; rendered frames are a cache, dropped on restore."""
        return Parts({"names": self._names, "saved": self.saved}, shared=[self])

    def restore_parts(self, r: Restored) -> None:
        self._names, self.saved = r.changing["names"], r.changing["saved"]
        self._cache.clear()

    def get(self, agent: str, view: str) -> Frame:
        st = self.world.state
        key = (agent, st.step, st.meeting_steps, view)
        frame = self._cache.get(key)
        if frame is not None:
            return frame
        t0 = time.perf_counter()
        p = st.player(agent)
        yaw = p.yaw if view == "fwd" else p.yaw + 3.141592653589793
        image = self.world.render_image(agent, yaw)
        buf = io.BytesIO()
        image.save(buf, "JPEG", quality=self.quality)
        jpeg = buf.getvalue()
        rel = f"{F.FRAMES_DIR}/{st.step:04d}_{agent}_{view}.jpg"
        n = self._names.get(rel, 0) + 1  # after a meeting the step number repeats with new positions
        self._names[rel] = n
        if n > 1:
            rel = rel[: -len(".jpg")] + f"_{n}.jpg"
        if self.folder is not None:
            self._batch.append((self.folder / rel, jpeg))  # handed to the writer at the step's end (flush)
            self.saved += 1
        frame = Frame(image=image, jpeg=jpeg, path=rel)
        if len(self._cache) > 64:  # only the current step's frames are ever asked for again
            self._cache.clear()
        self._cache[key] = frame
        self.seconds += time.perf_counter() - t0
        return frame


    def _writer(self) -> "queue.Queue":
        """Files are written by a background thread: creating thousands of small files can block for
        a while in the kernel (seen: 0.4 ms each on a busy ext4 disk), and the match need not wait for
        that."""
        if self._queue is None:
            (self.folder / F.FRAMES_DIR).mkdir(exist_ok=True)
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._write_loop, name="frame-writer", daemon=True)
            self._thread.start()
        return self._queue

    def _write_loop(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            for path, data in batch:
                try:
                    path.write_bytes(data)
                except OSError as e:  # reported at close(); the match itself goes on
                    self._error = self._error or e

    def flush(self) -> None:
        """Hand the frames rendered since the last flush to the writer thread, in one go (one wake-up of the
        thread per step, not one per frame: with hundreds of matches in flight that is CPU)."""
        if self._batch:
            self._writer().put(self._batch)
            self._batch = []

    def close(self) -> None:
        """Wait until every frame is on disk (call before publishing the match folder)."""
        self.flush()
        if self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = None
        if self._error is not None:
            raise self._error


class ModelUnavailable(MauError):
    """A model call failed in a way the match must not hide behind fallbacks (``ModelResponse.fatal``): the
    match fails, its staging folder is removed, and ``--resume`` plays it again."""


class Meter:
    """The process's running totals of model calls (every match of the worker, finished or in flight): what
    the progress bar shows live and ``mau bench collect`` reads. Costs at each call's own model's prices."""

    def __init__(self) -> None:
        self.calls = self.in_flight = self.peak_in_flight = 0
        self.prompt_tokens = self.completion_tokens = self.fallbacks = self.retries = 0
        self.cost_usd = 0.0
        self.in_flight_s = 0.0  # the integral of calls in flight over time (its mean = this / elapsed)
        self._t = time.perf_counter()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.in_flight_s += self.in_flight * (now - self._t)
        self._t = now

    def start(self) -> None:
        self._tick()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def end(
        self, prompt_tokens: int, completion_tokens: int, cost: float, fallback: bool, retries: int = 0
    ) -> None:
        self._tick()
        self.retries += retries
        self.in_flight -= 1
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost_usd += cost
        self.fallbacks += fallback

    def totals(self) -> dict[str, Any]:
        self._tick()
        return {"calls": self.calls, "in_flight": self.in_flight, "peak_in_flight": self.peak_in_flight,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "tokens": self.prompt_tokens + self.completion_tokens, "cost_usd": self.cost_usd,
                "fallbacks": self.fallbacks, "retries": self.retries, "in_flight_s": self.in_flight_s}


METER = Meter()


def call_cost(model: ModelConfig, prompt_tokens: int | None, completion_tokens: int | None) -> float:
    """USD of one call at its model's configured prices."""
    return ((prompt_tokens or 0) * model.price_prompt_per_mtok
            + (completion_tokens or 0) * model.price_completion_per_mtok) / 1e6


class CallLog:
    """Appends call records to calls.jsonl as they happen, and keeps the counts for the match header."""

    def __init__(self, folder: Path | None):
        self._f = open(folder / F.CALLS_FILE, "w") if folder is not None else None
        self.n = 0
        self.fallbacks = 0
        self.errors = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd = 0.0  # at each call's model's prices
        self.by_module: dict[str, list[int]] = {}  # module -> [calls, fallbacks]
        self.by_role: dict[str, list[int]] = {}  # role -> [prompt tokens, completion tokens] (costs per side)
        # (role, source) -> [calls, fallbacks, answered]; source "model": the seat's model, "rest": the model
        # of the modules a seat's model does not answer (seats.<side>.modules). answered: the backend gave
        # text.
        self.by_source: dict[tuple[str, str], list[int]] = {}
        self.write_s = 0.0  # time spent serialising and writing records
        self.latencies: list[float] = []  # every call's latency, in order (mau bench harness reads them)
        self._held: list[tuple[tuple[int, int], F.CallRecord, str]] = []  # records of this step (hold, flush)

    def parts(self) -> Parts:
        """The counts change (the open file does not; nothing is held between two steps)."""
        return Parts({k: v for k, v in vars(self).items() if k not in ("_f", "_held")}, shared=[self])

    def restore_parts(self, r: Restored) -> None:
        vars(self).update(r.changing)

    def hold(self, order: tuple[int, int], record: F.CallRecord, source: str = "model") -> None:
        """Keep a record until ``flush``, which writes the held ones sorted by ``order`` (the caller's fixed
        order of calls: agent, then the agent's own sequence) and numbers them."""
        self._held.append((order, record, source))

    def flush(self) -> None:
        for _, record, source in sorted(self._held, key=lambda h: h[0]):
            self.add(record, source)
        self._held.clear()

    def add(self, record: F.CallRecord, source: str = "model") -> None:
        """Write one record now (numbered here when it has no call id yet)."""
        t0 = time.perf_counter()
        if record.get(F.CALL_ID) is None and record.get(F.MATCH) is not None:
            record[F.CALL_ID] = f"{record[F.MATCH]}:{self.n}"
        src = self.by_source.setdefault((record[F.ROLE], source), [0, 0, 0])
        src[0] += 1
        src[1] += record[F.FALLBACK]
        src[2] += record[F.ERROR] is None and record[F.RAW_OUTPUT] is not None
        self.n += 1
        self.latencies.append(record[F.LATENCY_S])
        fb = record[F.FALLBACK]
        self.fallbacks += fb
        self.errors += record[F.ERROR] is not None
        self.prompt_tokens += record[F.PROMPT_TOKENS] or 0
        self.completion_tokens += record[F.COMPLETION_TOKENS] or 0
        counts = self.by_module.setdefault(record[F.MODULE], [0, 0])
        counts[0] += 1
        counts[1] += fb
        tokens = self.by_role.setdefault(record[F.ROLE], [0, 0])
        tokens[0] += record[F.PROMPT_TOKENS] or 0
        tokens[1] += record[F.COMPLETION_TOKENS] or 0
        if self._f is not None:
            self._f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.write_s += time.perf_counter() - t0

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.n, "fallbacks": self.fallbacks, "errors": self.errors,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "by_module": {k: {"calls": v[0], "fallbacks": v[1]} for k, v in sorted(self.by_module.items())},
            "tokens_by_role": {
                k: {"prompt_tokens": v[0], "completion_tokens": v[1]} for k, v in sorted(self.by_role.items())
            },
            "by_side": {
                role: {
                    src: {"calls": v[0], "fallbacks": v[1], "answered": v[2]}
                    for (r, src), v in sorted(self.by_source.items())
                    if r == role
                }
                for role in sorted({r for r, _ in self.by_source})
            },
        }

    def close(self) -> None:
        self.flush()
        if self._f is not None:
            self._f.close()
            self._f = None


def _recorded_messages(messages: list[dict[str, Any]], frames: list[Frame]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [
                {"type": "image", "path": frames[part["image"]].path} if part.get("type") == "image" else part
                for part in content
            ]
        out.append({"role": m["role"], "content": content})
    return out


def seen_kills(world, agent: str) -> list[dict[str, Any]]:
    """The kills ``agent``'s frames showed, as structure: request context for a scripted reader of frames (the
    scripted expert), never in a prompt; a model sees them in the frames themselves."""
    return [dict(w) for w in world.state.player(agent).witnessed]


class Caller:
    """Makes the calls of one match and records them.

    Records are written at the end of each world step (``flush``), in a fixed order: by agent (roster order),
    then in the order each agent made its calls (an agent's calls are sequential), and numbered then. The
    order in which answers arrive depends on the server and on what else is in flight; the file does not."""

    def __init__(self, world, log: CallLog, match_id: str, harness_of: dict[str, dict[str, Any]]):
        self.world = world
        self.log = log
        self.match_id = match_id
        self.harness_of = harness_of  # agent -> its ARIA axes, for the record
        self._rank = {a: i for i, a in enumerate(harness_of)}
        self._seq: dict[str, int] = {}  # agent -> calls it started since the last flush

    def flush(self) -> None:
        """Write the step's records (between two world steps; nothing is pending at a snapshot)."""
        self.log.flush()
        self._seq.clear()

    async def call(
        self, *, agent: str, role: str, module: str, obs: dict[str, Any], messages: list[dict[str, Any]],
        frames: list[Frame], backend: ModelBackend, model: ModelConfig, ctx: Context,
        temperature: float | None, extra_context: dict[str, Any] | None = None, t_start: float | None = None,
        source: str = "model",
    ) -> dict[str, Any]:
        st = self.world.state
        t0 = t_start if t_start is not None else time.perf_counter()
        order = (self._rank.get(agent, len(self._rank)), self._seq.get(agent, 0))
        self._seq[agent] = order[1] + 1
        request = ModelRequest(
            messages=messages, images=frames, module=module, agent=agent, json_mode=model.json_mode,
            temperature=temperature, max_tokens=model.max_tokens,
            context={
                "obs": obs, "module": module, "match": self.match_id, "seed": st.seed,
                "map": self.world.config.map, "seen_kills": seen_kills(self.world, agent),
                "claims": self.world.config.claims, **(extra_context or {}),
            },
        )
        t1 = time.perf_counter()
        METER.start()
        try:
            response = await backend.complete(request)
        except BaseException:
            METER.end(0, 0, 0.0, False)
            raise
        t2 = time.perf_counter()
        cost = call_cost(model, response.prompt_tokens, response.completion_tokens)
        if response.fatal:
            METER.end(
                response.prompt_tokens or 0, response.completion_tokens or 0, cost, True,
                response.attempts - 1,
            )
            raise ModelUnavailable(f"{agent}'s {module} call to {model.backend} model {model.model!r} "
                                   f"failed: {response.error}")
        answer, fallback_reason = decide(module, response.text, response.error, ctx)
        METER.end(
            response.prompt_tokens or 0, response.completion_tokens or 0, cost, fallback_reason is not None,
            response.attempts - 1,
        )
        record: F.CallRecord = {  # type: ignore[misc]  (keys are schema's names of the same fields)
            F.CALL_ID: None, F.MATCH: self.match_id,
            F.SEED: st.seed,  # numbered at flush
            F.STEP: st.step, F.TICK: st.tick, F.PHASE: st.phase, F.AGENT: agent, F.ROLE: role,
            F.MODULE: module, F.HARNESS: self.harness_of[agent], F.MODEL: response.model or model.model,
            F.BACKEND: backend.name, F.MESSAGES: _recorded_messages(messages, frames),
            F.RAW_OUTPUT: response.text, F.PARSED: answer, F.FALLBACK: fallback_reason is not None,
            F.FALLBACK_REASON: fallback_reason, F.ERROR: response.error,
            F.LATENCY_S: round(response.latency_s, 4), F.PROMPT_TOKENS: response.prompt_tokens,
            F.COMPLETION_TOKENS: response.completion_tokens, "attempts": response.attempts,
            "temperature": temperature if temperature is not None else model.temperature,
            "max_tokens": model.max_tokens,
        }
        # Harness time: prompt building (from t_start), request, check and record; not the model, not the
        # frames.
        record[F.HARNESS_MS] = round(((t1 - t0) + (time.perf_counter() - t2)) * 1000, 3)
        self.log.cost_usd += cost  # prices are the model's, which the record does not carry
        self.log.hold(order, record, source)
        if response.private and fallback_reason is None:  # handed to the agent only, after the record
            answer = {**answer, PRIVATE: response.private}
        return answer
