"""The ``openai`` model backend against a real OpenAI-compatible server: ``transformers serve`` on loopback,
serving the tiny local Qwen3.5 VLM on the CPU.

What this proves end to end: the backend's request body is accepted (messages with a base64 JPEG data URL,
``response_format``, ``chat_template_kwargs`` through ``extra_body``); the server decodes the JPEG and its
processor turns it into image tokens that reach the model (the prompt grows by exactly the processor's
``<|image_pad|>`` count + ``<|vision_start|>``/``<|vision_end|>``, and the count follows the image's size);
``enable_thinking=False`` reaches the chat template; answers are deterministic at temperature 0; a 4xx comes
back as an error response, not an exception.

Facts about ``transformers serve`` 5.24 that the test relies on (checked by hand):
- ``transformers serve DIR --host 127.0.0.1 --port P --device cpu``: DIR (the positional FORCE_MODEL) is
  loaded before uvicorn starts, so ``GET /health`` answering 200 means the model is ready (~5 s here).
- The server is then pinned to DIR: a request's ``model`` must be exactly ``str(DIR)`` (or absent); any other
  name is ``400 Server is pinned to ...``.
- ``response_format`` is accepted and ignored (the log says ``Ignoring unsupported fields in the request:
  {'response_format'}``), so ``json_mode=True`` is safe and is kept to exercise the full body.
- Without ``enable_thinking=False`` the Qwen3.5 template opens ``<think>``; the random tiny model never closes
  it, so the server puts the whole answer in ``reasoning_content`` and ``content`` is "" (the backend then
  reports "empty answer").
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sys
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")  # without it the Qwen3.5 processor silently drops the images
pytest.importorskip("transformers")
pytest.importorskip("openai")
pytest.importorskip("fastapi")  # transformers[serving]
pytest.importorskip("uvicorn")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from mau.harness.backends.base import Frame, ModelConfig, ModelRequest  # noqa: E402
from mau.harness.backends.openai import Backend  # noqa: E402
from mau.procs import ManagedProcess, free_port, http_ok  # noqa: E402
from tests.ml_fixtures import tiny_model_dir  # noqa: E402,F401 - fixture

SYSTEM = "You are Noah, a crewmate. Answer in JSON."
QUESTION = "Who is the imposter?"


def _transformers_cli() -> str | None:
    """The ``transformers`` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "transformers"
    return str(beside) if beside.exists() else shutil.which("transformers")


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):  # noqa: F811 - the imported fixture
    """``transformers serve`` pinned to the tiny model on a free loopback port; yields the base URL."""
    cli = _transformers_cli()
    if cli is None:
        pytest.skip("the `transformers` CLI is not installed (pip install 'transformers[serving]')")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "transformers-serve.log"
    cmd = [cli, "serve", str(tiny_model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
           "--log-level", "info"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with ManagedProcess(cmd, log, ready=http_ok(f"http://127.0.0.1:{port}/health"), timeout_s=120, env=env,
                        name="transformers serve") as proc:
        proc.base_url = f"http://127.0.0.1:{port}/v1"
        yield proc


def _frame(width: int = 128, height: int = 128, seed: int = 0) -> Frame:
    image = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=90)
    return Frame(image=image, jpeg=buf.getvalue(), path="frames/x.jpg")


def _request(frame: Frame | None) -> ModelRequest:
    content: list[dict] = [{"type": "text", "text": QUESTION}]
    if frame is not None:
        content.append({"type": "image", "image": 0})
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
    return ModelRequest(
        messages=messages, images=[frame] if frame is not None else [], module="VOTE", agent="Noah"
    )


def _config(server, model_dir: Path, **kw) -> ModelConfig:
    return ModelConfig(**{
        "backend": "openai", "model": str(model_dir),  # the server is pinned to this exact id
        "base_url": server.base_url, "temperature": 0, "max_tokens": 8,
        "json_mode": True,  # accepted and ignored by transformers serve (see the module docstring)
        "enable_thinking": False, "timeout_s": 120, "max_retries": 0, **kw})


def _complete(config: ModelConfig, *requests: ModelRequest):
    """Send the requests one after another on one backend, created and closed in the same event loop."""

    async def go():
        backend = Backend(config)
        try:
            return [await backend.complete(r) for r in requests]
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def processor(tiny_model_dir):  # noqa: F811
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_model_dir)


def _image_pads(processor, frame: Frame) -> int:
    """How many <|image_pad|> tokens the model's processor makes for the frame as the server sees it: the
    JPEG."""
    decoded = Image.open(io.BytesIO(frame.jpeg)).convert("RGB")
    grid = processor.image_processor(images=[decoded], return_tensors="pt")["image_grid_thw"]
    return int(grid.prod()) // processor.image_processor.merge_size ** 2


def _local_prompt_tokens(processor, frame: Frame | None) -> int:
    """The prompt length by the model's own chat template, with enable_thinking=False."""
    content: list[dict] = [{"type": "text", "text": QUESTION}]
    if frame is not None:
        content.append({"type": "image", "image": Image.open(io.BytesIO(frame.jpeg)).convert("RGB")})
    messages = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
        {"role": "user", "content": content},
    ]
    out = processor.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, enable_thinking=False, return_dict=True
    )
    ids = out["input_ids"]
    return len(ids[0] if ids and isinstance(ids[0], list) else ids)


def test_server_lists_the_pinned_model(server, tiny_model_dir):  # noqa: F811
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as r:
        models = json.load(r)["data"]
    assert [m["id"] for m in models] == [str(tiny_model_dir)]


def test_image_tokens_reach_the_model_through_the_server(server, tiny_model_dir, processor):  # noqa: F811
    frame = _frame()
    with_image, without = _complete(_config(server, tiny_model_dir), _request(frame), _request(None))
    for r in (with_image, without):
        assert r.error is None, f"{r.error}; server log: {server.tail(10)}"
        assert isinstance(r.text, str) and r.text
        assert r.model == str(tiny_model_dir) and r.attempts == 1 and r.latency_s > 0
        assert 1 <= r.completion_tokens <= 8
    pads = _image_pads(processor, frame)
    assert pads == 16  # 128x128 px, patch 16, merge 2 (the tiny processor keeps 128x128 at its own size)
    # The server decoded the base64 JPEG and its processor expanded the image into
    # <|vision_start|> + pads x <|image_pad|> + <|vision_end|>.
    assert with_image.prompt_tokens - without.prompt_tokens == pads + 2, server.tail(10)
    # Both prompts are exactly what the model's own template makes with enable_thinking=False: so
    # chat_template_kwargs reached the server (with thinking on, each prompt is 4 tokens shorter).
    assert (with_image.prompt_tokens, without.prompt_tokens) == (_local_prompt_tokens(processor, frame),
                                                                 _local_prompt_tokens(processor, None))


def test_the_image_token_count_follows_the_jpeg_size(server, tiny_model_dir, processor):  # noqa: F811
    """A 128x64 frame makes fewer image tokens than a 128x128 one: the server reads the real image bytes."""
    frame = _frame(width=128, height=64, seed=1)
    with_image, without = _complete(_config(server, tiny_model_dir), _request(frame), _request(None))
    assert with_image.error is None and without.error is None
    pads = _image_pads(processor, frame)
    assert pads == 8  # 4 x 2 merged patches
    assert with_image.prompt_tokens - without.prompt_tokens == pads + 2


def test_answers_are_deterministic_at_temperature_zero(server, tiny_model_dir):  # noqa: F811
    frame = _frame()
    first, second = _complete(_config(server, tiny_model_dir), _request(frame), _request(frame))
    assert first.error is None and second.error is None
    assert first.text == second.text
    assert (first.prompt_tokens, first.completion_tokens) == (second.prompt_tokens, second.completion_tokens)


def test_a_client_error_comes_back_as_an_error_response(server, tiny_model_dir):  # noqa: F811
    """A model name the pinned server refuses is a final 400: no retry, no exception."""
    (r,) = _complete(
        _config(server, tiny_model_dir, model="not-the-served-model", max_retries=2), _request(None)
    )
    assert r.text is None and r.error == "HTTP 400" and r.attempts == 1
