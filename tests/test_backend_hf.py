"""The ``hf`` model backend on the tiny local Qwen3.5 VLM: images reach the prompt, concurrent calls generate
as one batch (and match the unbatched answers), a LoRA adapter changes the answer, sampling is reproducible,
and failures come back as error responses (never exceptions)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from mau.harness.backends import make_backend  # noqa: E402
from mau.harness.backends.base import Frame, ModelConfig, ModelRequest  # noqa: E402
from tests.ml_fixtures import tiny_adapter_dir, tiny_model_dir  # noqa: E402,F401 - fixtures

IMAGE_PADS_128 = 16  # 128x128 px, patch 16, merge 2


def _frame(seed: int = 0) -> Frame:
    image = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (128, 128, 3), dtype=np.uint8))
    return Frame(image=image, jpeg=b"", path=f"frames/{seed}.jpg")


def _request(text: str = "Who is the imposter?", image: bool = True, **kw) -> ModelRequest:
    content: list[dict] = [{"type": "text", "text": text}]
    if image:
        content.insert(0, {"type": "image", "image": 0})
    messages = [{"role": "system", "content": "You are Noah, a crewmate. Answer in JSON."},
                {"role": "user", "content": content}]
    return ModelRequest(
        messages=messages, images=[_frame()] if image else [], module="VOTE", agent="Noah", **kw
    )


def _backend(model: str, **kw):
    return make_backend(ModelConfig(**{"backend": "hf", "model": str(model), "temperature": 0.0,
                                       "max_tokens": 8, **kw}))


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return _backend(tiny_model_dir)


def test_construction_is_lazy_and_goes_through_the_registry(tiny_model_dir):
    from mau.harness.backends.hf import Backend

    b = _backend(tiny_model_dir)
    assert isinstance(b, Backend) and b.name == "hf" and b._model is None and b.calls_batched == []


def test_image_call_returns_text_and_counts_the_image_tokens(backend, tiny_model_dir):
    async def go():
        return await backend.complete(_request()), await backend.complete(_request(image=False))

    with_image, without = asyncio.run(go())
    for r in (with_image, without):
        assert r.error is None and isinstance(r.text, str) and r.model == str(tiny_model_dir)
        assert 1 <= r.completion_tokens <= 8 and r.latency_s > 0
        assert "<think>" not in r.text and "<|im_end|>" not in r.text
    # The image part becomes <|vision_start|> + 16 x <|image_pad|> + <|vision_end|>.
    assert with_image.prompt_tokens - without.prompt_tokens == IMAGE_PADS_128 + 2


def test_max_pixels_caps_the_image_tokens(tiny_model_dir):
    b = _backend(tiny_model_dir, max_pixels=64 * 64)

    async def go():
        return await b.complete(_request()), await b.complete(_request(image=False))

    with_image, without = asyncio.run(go())
    assert with_image.error is None
    assert with_image.prompt_tokens - without.prompt_tokens == 4 + 2  # 64x64 px: 2x2 merged tokens


def test_concurrent_calls_generate_as_one_batch_with_the_same_answers(backend):
    texts = [f"Step {i}: {'Noah was near the body in Electrical. ' * (i % 3)}Vote." for i in range(8)]

    async def go():
        before = len(backend.calls_batched)
        batched = await asyncio.gather(
            *[backend.complete(_request(t, image=i % 2 == 0)) for i, t in enumerate(texts)]
        )
        sizes = backend.calls_batched[before:]
        singles = [await backend.complete(_request(t, image=i % 2 == 0)) for i, t in enumerate(texts[:3])]
        return batched, sizes, singles

    batched, sizes, singles = asyncio.run(go())
    assert sizes == [8]  # eight calls of one event-loop iteration: one generate() call
    assert all(r.error is None for r in batched)
    assert len({r.prompt_tokens for r in batched}) > 1  # mixed lengths: left padding was exercised
    for b, s in zip(batched, singles):  # padding does not change a greedy answer
        assert (b.text, b.prompt_tokens, b.completion_tokens) == (
            s.text, s.prompt_tokens, s.completion_tokens,
        )


def test_adapter_is_loaded_on_the_language_model_and_changes_the_answer(tiny_model_dir, tiny_adapter_dir):
    base, tuned = (
        _backend(tiny_model_dir, max_tokens=12),
        _backend(tiny_model_dir, adapter=str(tiny_adapter_dir), max_tokens=12),
    )

    async def go():
        return await asyncio.gather(base.complete(_request()), tuned.complete(_request()))

    a, b = asyncio.run(go())
    assert a.error is None and b.error is None
    lora = [n for n, _ in tuned._model.named_modules() if n.endswith("lora_A")]
    assert lora and all(".language_model." in n for n in lora)
    assert b.model.endswith(str(tiny_adapter_dir))
    assert a.text != b.text  # greedy, same request: only the adapter differs


def test_sampling_is_reproducible_from_the_seed(tiny_model_dir):
    def run(seed: int) -> list[str]:
        b = _backend(tiny_model_dir, seed=seed)

        async def go():
            return await asyncio.gather(*[b.complete(_request(f"Call {i}", temperature=1.0, max_tokens=10))
                                          for i in range(3)])

        return [r.text for r in asyncio.run(go())]

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_bad_model_path_returns_an_error_response(tmp_path):
    b = _backend(tmp_path / "missing")

    async def go():
        first = await asyncio.gather(*[b.complete(_request()) for _ in range(2)])
        again = await b.complete(_request())
        await asyncio.sleep(0)  # the loop is still alive
        return first, again

    first, again = asyncio.run(go())
    for r in first + [again]:
        assert r.text is None and r.error.startswith("hf load failed") and "missing" in r.error


def test_bad_request_fails_alone_in_its_batch(backend):
    bad = _request()
    bad.images = []  # the message points at images[0], which is missing

    async def go():
        return await asyncio.gather(backend.complete(bad), backend.complete(_request()))

    r_bad, r_ok = asyncio.run(go())
    assert r_bad.text is None and "bad request" in r_bad.error
    assert r_ok.error is None and r_ok.text is not None


def test_frames_without_an_image_fall_back_to_their_jpeg():
    import io

    from mau.harness.backends.hf import frame_to_pil, to_processor_messages

    buf = io.BytesIO()
    _frame().image.save(buf, format="JPEG")
    frame = Frame(image=None, jpeg=buf.getvalue(), path="f.jpg")
    assert frame_to_pil(frame).size == (128, 128) and frame_to_pil(frame).mode == "RGB"
    req = _request()
    req.images = [frame]
    messages, images = to_processor_messages(req)
    assert len(images) == 1 and messages[1]["content"][0] == {"type": "image", "image": images[0]}
    assert messages[0] == {"role": "system", "content": "You are Noah, a crewmate. Answer in JSON."}


def test_probe_stream_never_shifts_the_plays_sampling(tiny_model_dir):
    """Belief probes draw from their own generator: the play's answers are the same with probes in between."""
    def run(with_probes: bool) -> list[str]:
        b = _backend(tiny_model_dir, seed=3)

        async def go():
            out = []
            for i in range(3):
                if with_probes:
                    await b.complete(_request(f"Probe {i}", image=False, temperature=1.0, max_tokens=10,
                                              stream="probe"))
                r = await b.complete(_request(f"Call {i}", image=False, temperature=1.0, max_tokens=10))
                out.append(r.text)
            return out

        return asyncio.run(go())

    assert run(False) == run(True)



@pytest.mark.filterwarnings("ignore:.*past_key_values.*:FutureWarning")
def test_score_equals_the_token_by_token_log_probability(tiny_model_dir):
    """The vote read-out's score of a continuation (one full forward pass, the tokens after the common prefix)
    equals the sum of its tokens' log-probabilities fed one at a time through the KV cache; a continuation
    without a token is an error response, never an exception."""
    import torch

    b = _backend(tiny_model_dir)
    req = _request("Who is the imposter?", image=False)
    b.load()
    text = b._prepare(0, req).text
    prefix = '{"vote_target": "'
    base = b._processor(text=[text + prefix], return_tensors="pt")["input_ids"][0]

    def one_by_one(cont: str) -> float:
        full = b._processor(text=[text + prefix + cont], return_tensors="pt")["input_ids"]
        start = next(i for i in range(len(base)) if full[0, i] != base[i]) if not torch.equal(
            full[0, :len(base)], base) else len(base)
        total = 0.0
        # the base as b sees it (another test may have attached adapters)
        with torch.inference_mode(), b._active():
            out = b._model(input_ids=full[:, :start], use_cache=True)
            for i in range(start, full.shape[1]):
                total += float(torch.log_softmax(out.logits[0, -1].float(), -1)[full[0, i]])
                out = b._model(
                    input_ids=full[:, i : i + 1], past_key_values=out.past_key_values, use_cache=True
                )
        return total

    conts = ['Martin"', 'Noah"', 'Olivia Olivia"']  # different lengths: the batch is padded
    r = asyncio.run(b.score(req, prefix, conts))
    assert r.error is None and r.prompt_tokens == len(base) and len(r.logprobs) == 3
    assert r.logprobs == pytest.approx([one_by_one(c) for c in conts], abs=1e-3)
    assert len(set(r.logprobs)) == 3
    bad = asyncio.run(b.score(req, prefix, [""]))
    assert bad.logprobs is None and "adds no token" in bad.error


def test_concurrent_loads_leave_later_models_tied(tiny_model_dir, tiny_adapter_dir):
    """Two backends loading at once (an eval's arms, each in a worker thread) must not leave transformers'
    loading state behind: a model built afterwards in the process still ties its embeddings."""
    import torch
    from transformers import Qwen3_5ForConditionalGeneration

    from mau.train import shapes

    base, tuned = _backend(tiny_model_dir), _backend(tiny_model_dir, adapter=str(tiny_adapter_dir))

    async def go():
        return await asyncio.gather(
            base.complete(_request(image=False)), tuned.complete(_request(image=False))
        )

    assert all(r.error is None for r in asyncio.run(go()))
    with torch.device("meta"):
        m = Qwen3_5ForConditionalGeneration(shapes.hf_config(shapes.QWEN3_5_9B_CONFIG))
    assert m.lm_head.weight is m.model.language_model.embed_tokens.weight


def test_a_closed_backend_answers_the_next_match_without_loading_again(tiny_model_dir):
    """Collect and eval workers close their cached backends after every match (each match has its own event
    loop); an hf backend keeps its weights, so the next match does not load them again."""
    b = _backend(tiny_model_dir)

    async def one_match() -> str | None:
        try:
            return (await b.complete(_request(image=False))).text
        finally:
            await b.aclose()

    first = asyncio.run(one_match())
    model = b._model
    assert model is not None and asyncio.run(one_match()) == first and b._model is model



def test_a_worker_keeps_only_the_models_its_next_match_uses(tiny_model_dir):
    """mau.runner.release_unused: before a match, cached backends it does not use free their weights."""
    from mau import runner

    cfg_a, cfg_b = (
        ModelConfig(backend="hf", model=str(tiny_model_dir), temperature=0.0, max_tokens=4, seed=s)
        for s in (11, 12)
    )
    a, b = runner.backend_for(cfg_a), runner.backend_for(cfg_b)
    try:
        a.load(), b.load()
        runner.release_unused([cfg_b])
        assert a._model is None and b._model is not None
        assert asyncio.run(a.complete(_request(image=False))).error is None  # loads again when called
    finally:
        for c in (cfg_a, cfg_b):
            runner.BACKENDS.pop(c.model_dump_json(), None)


def test_arms_on_one_base_share_one_load_and_answer_as_if_loaded_alone(tiny_model_dir, tiny_adapter_dir):
    """The base and its adapter, asked alternately, load the base once; each answers as a backend that loaded
    the model alone (greedy; the adapter attached by name, disabled for the bare base)."""
    from mau.harness.backends import hf
    from mau.harness.backends.base import LOADS

    def ask(b: hf.Backend) -> str | None:
        async def one() -> str | None:
            return (await b.complete(_request("Who is the imposter?", image=False))).text
        return asyncio.run(one())

    saved = dict(hf._SHARED)
    try:
        hf._SHARED.clear()
        alone_tuned = ask(
            _backend(tiny_model_dir, adapter=str(tiny_adapter_dir), max_tokens=10, temperature=0.0)
        )
        hf._SHARED.clear()
        alone_base = ask(_backend(tiny_model_dir, max_tokens=10, temperature=0.0))
        hf._SHARED.clear()
        n = len(LOADS)
        base = _backend(tiny_model_dir, max_tokens=10, temperature=0.0)
        tuned = _backend(tiny_model_dir, adapter=str(tiny_adapter_dir), max_tokens=10, temperature=0.0)
        answers = [ask(b) for b in (base, tuned, base, tuned)]
        assert len(LOADS) == n + 1 and base._model is tuned._model
        assert answers == [alone_base, alone_tuned] * 2 and alone_base != alone_tuned
    finally:
        hf._SHARED.clear()
        hf._SHARED.update(saved)
