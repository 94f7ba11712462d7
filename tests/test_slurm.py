"""The sbatch scripts of slurm/ on a real single-node Slurm (tests/slurm_cluster.py; skipped without Slurm).

- ``collect_array.sbatch``: a 3-task array plays a (shrunk) smoke grid into one run folder; every task
  COMPLETED, every match of grid.jsonl has exactly one finished folder, the shards together played each match
  once; resubmitting the same array (a requeue) plays nothing again; with ENDPOINT_FILE the tasks wait for it.
- ``serve_vllm.sbatch`` with a stub ``vllm`` (records its argv, then serves mau's mock OpenAI server): the
  endpoint file appears once /v1/models answers, the flags (LoRA, TP from the GPUs of the node, limits) reach
  the server, a request without the API key is refused, the key is never on a command line or in the log;
  scancel ends the job and removes the endpoint file; a server that dies before it is ready fails the job.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[1]
COLLECT = REPO / "slurm" / "collect_array.sbatch"
SERVE = REPO / "slurm" / "serve_vllm.sbatch"
SECRET = "sk-test-never-print-me-4242"


def _read_logs(folder: Path) -> str:
    return "\n".join(f"--- {p.name} "
                     f"---\n{p.read_text(errors='replace')}" for p in sorted(folder.glob("*.out")))


def test_collect_array_plays_every_match_once(slurm, tmp_path):  # noqa: F811 - the fixture
    run, logs = tmp_path / "run", tmp_path / "logs"
    logs.mkdir()
    # The smoke grid, shrunk to keep the test fast: 18 matches of 10 steps, one worker per task.
    extra = ["--set", "grid.repetitions=1", "--set", "world.game.max_steps=10", "--workers", "1"]
    args = [
        "--array=0-2", "--cpus-per-task=1", "--time=5", f"--chdir={REPO}", f"--output={logs}/%x-%A_%a.out",
        COLLECT, "configs/collect/smoke.yaml", run, *extra,
    ]
    env = {"OPENROUTER_API_KEY": SECRET}  # exported to the tasks (--export=ALL), never printed

    states = slurm.wait(slurm.submit(args, env=env), timeout=90)
    assert states == {"0": "COMPLETED", "1": "COMPLETED", "2": "COMPLETED"}, f"{states}\n{_read_logs(logs)}"

    grid = [json.loads(line) for line in (run / "grid.jsonl").read_text().splitlines() if line.strip()]
    ids = [g["match_id"] for g in grid]
    assert len(ids) == 18 and len(set(ids)) == len(ids), ids
    folders = sorted(p.name for p in (run / "matches").iterdir())
    assert folders == sorted(ids), f"match folders differ from the grid\n{_read_logs(logs)}"  # no leftovers
    assert all((run / "matches" / i / "match.json").is_file() for i in ids)
    text = _read_logs(logs)
    played = {int(i): int(n) for i, n in re.findall(r"shard (\d)/3: (\d+) played now", text)}
    assert played == {0: 6, 1: 6, 2: 6}, text  # k % 3 == I: six each, so every match was played once
    assert SECRET not in text

    # A requeued or resubmitted array continues the same run (--resume is always passed): nothing to play.
    # With ENDPOINT_FILE the tasks first wait for a model server's endpoint file to appear.
    for p in logs.iterdir():
        p.unlink()
    endpoint = tmp_path / "endpoint"
    job = slurm.submit(args, env={**env, "ENDPOINT_FILE": str(endpoint)})
    time.sleep(1)
    assert set(slurm.states(job).values()) <= {"PENDING", "RUNNING"}, _read_logs(logs)
    endpoint.write_text("node7:8123\n")
    states = slurm.wait(job, timeout=60)
    assert set(states.values()) == {"COMPLETED"}, f"{states}\n{_read_logs(logs)}"
    text = _read_logs(logs)
    assert text.count("the model server is ready at http://node7:8123/v1") == 3, text
    assert {int(i): int(n) for i, n in re.findall(r"shard (\d)/3: (\d+) played "
                                                  r"now", text)} == {0: 0, 1: 0, 2: 0}, text
    assert sorted(p.name for p in (run / "matches").iterdir()) == sorted(ids)


def _stub_vllm(folder: Path, fail: bool = False) -> tuple[Path, Path]:
    """A ``vllm`` executable: writes its argv (and the GPU count it saw) to a file, then serves the mock
    OpenAI server on the --host/--port it was given (or exits 3 with ``fail``)."""
    stub, record = folder / "vllm", folder / "vllm-argv.json"
    stub.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open({str(record)!r}, "w") as f:
    json.dump({{"argv": args, "gpus_on_node": os.environ.get("SLURM_GPUS_ON_NODE")}}, f)
if {fail!r}:
    print("stub vllm: failing on purpose", flush=True)
    sys.exit(3)
host, port = args[args.index("--host") + 1], args[args.index("--port") + 1]
key = ["--api-key-env", "VLLM_API_KEY"] if os.environ.get("VLLM_API_KEY") else []  # as vllm serve does
os.execv(sys.executable,
         [sys.executable, "-m", "mau.harness.mock_server", "--host", host, "--port", port, *key])
""")
    stub.chmod(0o755)
    return stub, record


def _get_json(url: str, key: str | None = None) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
        return json.loads(r.read())


def _after(args: list[str], flag: str, n: int = 1) -> list[str]:
    i = args.index(flag)
    return args[i + 1:i + 1 + n]


def test_serve_vllm_writes_endpoint_and_stops_on_scancel(slurm, tmp_path):  # noqa: F811 - the fixture
    stub, record = _stub_vllm(tmp_path)
    endpoint_file, log = tmp_path / "ep" / "endpoint", tmp_path / "serve.out"
    env = {
        "VLLM_BIN": str(stub), "ENDPOINT_FILE": str(endpoint_file), "READY_POLL_S": "0.2",
        "LORA_MODULES": "crew=/adapters/crew imp=/adapters/imp", "MAX_LORA_RANK": "64",
        "MAX_MODEL_LEN": "8192", "LIMIT_MM_PER_PROMPT": '{"image": 8}', "VLLM_API_KEY": SECRET,
    }
    # PORT "" picks a free one; what follows goes to `vllm serve` as is. Two (fake) GPUs: tensor parallel 2.
    job = slurm.submit(["--gpus-per-node=2", "--cpus-per-task=1", f"--chdir={tmp_path}", f"--output={log}",
                        SERVE, "Qwen/Qwen3.5-9B", "", "--dtype", "bfloat16"], env=env)
    try:
        deadline = time.monotonic() + 30
        while not endpoint_file.is_file():
            states = slurm.states(job)
            assert time.monotonic() < deadline and not set(states.values()) & {
                "FAILED", "COMPLETED", "CANCELLED",
            }, f"no endpoint file; job {states}\n{log.read_text() if log.exists() else ''}\n{slurm.logs()}"
            time.sleep(0.1)
        host, port = endpoint_file.read_text().strip().rsplit(":", 1)
        assert host == socket.gethostname() and port.isdigit()
        try:
            socket.getaddrinfo(host, int(port))
        except socket.gaierror:  # the node's name does not resolve here: the port still must answer
            host = "127.0.0.1"
        models = _get_json(f"http://{host}:{port}/v1/models", key=SECRET)
        assert models["data"], models
        with pytest.raises(urllib.error.HTTPError) as refused:  # no key: refused
            _get_json(f"http://{host}:{port}/v1/models")
        assert refused.value.code == 401

        args = json.loads(record.read_text())["argv"]
        assert args[:2] == ["serve", "Qwen/Qwen3.5-9B"]
        assert _after(args, "--port") == [port] and _after(args, "--host") == ["0.0.0.0"]
        assert _after(args, "--tensor-parallel-size") == ["2"]
        assert "--enable-lora" in args
        assert _after(args, "--lora-modules", 2) == ["crew=/adapters/crew", "imp=/adapters/imp"]
        assert _after(args, "--max-lora-rank") == ["64"] and _after(args, "--max-model-len") == ["8192"]
        assert _after(args, "--limit-mm-per-prompt") == ['{"image": 8}']
        assert args[-2:] == ["--dtype", "bfloat16"]
        assert SECRET not in " ".join(args)
    finally:
        slurm.cmd(["scancel", job], check=False)
    states = slurm.wait(job, timeout=20)
    assert states == {job: "CANCELLED"}, states
    assert not endpoint_file.exists(), "the endpoint file outlived the server"
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
    text = log.read_text()
    assert "ready after" in text and SECRET not in text, text


def test_serve_vllm_fails_when_the_server_dies_before_ready(slurm, tmp_path):  # noqa: F811 - the fixture
    stub, record = _stub_vllm(tmp_path, fail=True)
    endpoint_file, log = tmp_path / "endpoint", tmp_path / "serve.out"
    env = {"VLLM_BIN": str(stub), "ENDPOINT_FILE": str(endpoint_file), "READY_POLL_S": "0.2",
           "ALLOW_NO_API_KEY": "1"}
    job = slurm.submit(["--gpus-per-node=1", "--cpus-per-task=1", f"--chdir={tmp_path}", f"--output={log}",
                        SERVE, "some/model", "18123"], env=env)
    states = slurm.wait(job, timeout=30)
    text = log.read_text()
    assert states == {job: "FAILED"}, f"{states}\n{text}"
    assert "exited with code 3 before it answered /v1/models" in text, text
    assert not endpoint_file.exists()
    args = json.loads(record.read_text())["argv"]
    assert "--enable-lora" not in args and _after(args, "--tensor-parallel-size") == ["1"]
