"""slurm/serve_vllm.sbatch serves with an API key (issue 12), run as a plain script (no Slurm needed) with a
stub ``vllm`` that, like ``vllm serve``, takes the key from VLLM_API_KEY in its environment and serves mau's
mock OpenAI server: a request without the key is refused (401), one with it answers, mau's openai backend
reaches it through the variable its config names (model.api_key_env), the key is on no command line and in no
log; no
key means no server unless ALLOW_NO_API_KEY=1; a server without LORA_MODULES runs without --enable-lora."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVE = REPO / "slurm" / "serve_vllm.sbatch"
SECRET = "sk-serve-test-do-not-print-7719"


def _stub(folder: Path) -> tuple[Path, Path]:
    stub, record = folder / "vllm", folder / "vllm-argv.json"
    stub.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open({str(record)!r}, "w") as f:
    json.dump({{"argv": args, "key_in_env": bool(os.environ.get("VLLM_API_KEY"))}}, f)
host, port = args[args.index("--host") + 1], args[args.index("--port") + 1]
key = ["--api-key-env", "VLLM_API_KEY"] if os.environ.get("VLLM_API_KEY") else []  # as vllm serve does
os.execv(sys.executable,
         [sys.executable, "-m", "mau.harness.mock_server", "--host", host, "--port", port, *key])
""")
    stub.chmod(0o755)
    return stub, record


def _free_port() -> int:
    from mau.procs import free_port

    return free_port()


def _get(url: str, key: str | None = None) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _start(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen, Path, Path, Path, int]:
    stub, record = _stub(tmp_path)
    endpoint, log = tmp_path / "endpoint", tmp_path / "serve.log"
    port = _free_port()
    base = {
        k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "MAU_SERVE_KEY", "ALLOW_NO_API_KEY")
    }
    full = {**base, "PYTHONPATH": str(REPO), "VLLM_BIN": str(stub), "ENDPOINT_FILE": str(endpoint),
            "READY_POLL_S": "0.2", "VLLM_HOST": "127.0.0.1", **env}
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", str(SERVE), "Qwen/Qwen3.5-9B", str(port)], cwd=tmp_path, env=full,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, endpoint, log, record, port


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_endpoint(proc: subprocess.Popen, endpoint: Path, log: Path) -> None:
    deadline = time.monotonic() + 30
    while not endpoint.is_file():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def test_a_request_without_the_key_is_refused(tmp_path):
    # The key lives in a variable the operator names (API_KEY_ENV); the clients' config names the same one.
    proc, endpoint, log, record, port = _start(
        tmp_path, {"API_KEY_ENV": "MAU_SERVE_KEY", "MAU_SERVE_KEY": SECRET}
    )
    try:
        _wait_endpoint(proc, endpoint, log)
        url = f"http://127.0.0.1:{port}/v1"
        assert _get(url + "/models") == 401  # no key
        assert _get(url + "/models", key="sk-wrong") == 401
        assert _get(url + "/models", key=SECRET) == 200

        import asyncio

        from mau.harness.backends import make_backend
        from mau.harness.backends.base import ModelConfig

        async def ask(key_env: str | None) -> str:
            backend = make_backend(ModelConfig(backend="openai", model="Qwen/Qwen3.5-9B", base_url=url,
                                               api_key_env=key_env, max_retries=0))
            try:
                r = await backend.client().chat.completions.create(
                    model="Qwen/Qwen3.5-9B", messages=[{"role": "user", "content": "Answer: {\"x\": "
                                                                                   "\"<a|b>\"}"}])
                return r.choices[0].message.content
            finally:
                await backend.aclose()

        os.environ["MAU_SERVE_KEY"] = SECRET
        try:
            assert json.loads(asyncio.run(ask("MAU_SERVE_KEY")))
            import openai

            with pytest.raises(openai.AuthenticationError):
                asyncio.run(ask(None))  # a config that names no key variable is refused
        finally:
            del os.environ["MAU_SERVE_KEY"]
        rec = json.loads(record.read_text())
        assert rec["key_in_env"] and SECRET not in " ".join(rec["argv"])
        assert "--enable-lora" not in rec["argv"]  # the baseline server: no LoRA
        assert "--api-key" not in rec["argv"]  # the key reaches vLLM through its environment only
    finally:
        _stop(proc)
    text = log.read_text()
    assert "ready after" in text and SECRET not in text, text
    assert not any(SECRET in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()
                   and p.name != "vllm")


def test_no_key_no_server(tmp_path):
    proc, endpoint, log, record, port = _start(tmp_path, {})
    try:
        assert proc.wait(timeout=20) == 2
    finally:
        _stop(proc)
    text = log.read_text()
    assert "no API key: export VLLM_API_KEY" in text and "ALLOW_NO_API_KEY=1" in text, text
    assert not record.exists() and not endpoint.exists()  # vLLM never started


def test_allow_no_api_key_serves_open(tmp_path):
    proc, endpoint, log, record, port = _start(tmp_path, {"ALLOW_NO_API_KEY": "1"})
    try:
        _wait_endpoint(proc, endpoint, log)
        assert _get(f"http://127.0.0.1:{port}/v1/models") == 200
    finally:
        _stop(proc)
    assert "WITHOUT an API key" in log.read_text()
