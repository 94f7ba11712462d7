"""The tiny local Qwen3.5 VLM: built without a hub, reloaded by the Auto classes as the real processor and
model class, image tokens counted and reaching the model, deterministic, and the ``mau tiny-model`` verb."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")  # without it AutoProcessor degrades to a bare tokenizer
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from tests.ml_fixtures import tiny_model_dir  # noqa: E402,F401 - a fixture

MERGE = 2


def _image(seed: int, size: int = 128) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8))


def _messages(with_image: bool = True) -> list[dict]:
    content = [{"type": "text", "text": "Who is the imposter?"}]
    if with_image:
        content.insert(0, {"type": "image"})
    return [{"role": "user", "content": content}]


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    return AutoProcessor.from_pretrained(tiny_model_dir), AutoModelForImageTextToText.from_pretrained(
        tiny_model_dir
    )


def test_auto_classes_reload_the_real_processor_and_model(loaded):
    from transformers import Qwen2VLImageProcessor, Qwen3_5ForConditionalGeneration, Qwen3VLProcessor
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer

    processor, model = loaded
    assert type(processor) is Qwen3VLProcessor  # not a bare tokenizer
    assert isinstance(processor.image_processor, Qwen2VLImageProcessor)
    assert isinstance(processor.tokenizer, Qwen3_5Tokenizer)
    assert type(model) is Qwen3_5ForConditionalGeneration and model.config.model_type == "qwen3_5"
    n = sum(p.numel() for p in model.parameters())
    assert 200_000 < n < 1_000_000, n
    assert len(processor.tokenizer) == model.config.text_config.vocab_size == 800
    layer_types = model.config.text_config.layer_types
    assert layer_types == ["linear_attention"] * 3 + ["full_attention"]  # Qwen3.5's hybrid stack


def test_config_token_ids_are_the_tokenizers_own(loaded):
    processor, model = loaded
    tok, cfg = processor.tokenizer, model.config
    assert cfg.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>") == processor.image_token_id
    assert cfg.video_token_id == tok.convert_tokens_to_ids("<|video_pad|>")
    assert cfg.vision_start_token_id == tok.convert_tokens_to_ids("<|vision_start|>")
    assert cfg.vision_end_token_id == tok.convert_tokens_to_ids("<|vision_end|>")
    for t in ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|image_pad|>"):
        assert len(tok(t)["input_ids"]) == 1, t  # never split by the BPE
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.decode(tok('{"vote_target": "Noah", "reasoning": "in Electrical"}')["input_ids"]) == \
        '{"vote_target": "Noah", "reasoning": "in Electrical"}'


def test_chat_template_renders_images_and_disables_thinking(loaded):
    processor, _ = loaded
    text = processor.apply_chat_template(
        _messages(), tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert "<|vision_start|><|image_pad|><|vision_end|>Who is the imposter?" in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    thinking = processor.apply_chat_template(_messages(), tokenize=False, add_generation_prompt=True)
    assert thinking.endswith("<|im_start|>assistant\n<think>\n")


def test_128px_image_gives_16_image_tokens_that_reach_the_model(loaded):
    import torch

    processor, model = loaded
    text = processor.apply_chat_template(
        _messages(), tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    enc = processor(text=[text], images=[_image(0)], return_tensors="pt")
    grid = enc["image_grid_thw"]
    expected = int(grid.prod()) // MERGE**2
    n_pad = int((enc["input_ids"] == model.config.image_token_id).sum())
    assert n_pad == expected == 16 and grid.tolist() == [[1, 8, 8]]
    assert enc["pixel_values"].shape[0] == int(grid.prod())
    # The image must change the logits (the vision tower's output is spliced in at the pad tokens).
    enc2 = processor(text=[text], images=[_image(1)], return_tensors="pt")
    with torch.no_grad():
        a = model(**enc).logits[0, -1]
        b = model(**enc2).logits[0, -1]
    assert not torch.allclose(a, b)


def test_cli_verb_builds_the_same_model_in_process(tmp_path, capsys, tiny_model_dir):
    from mau.cli import main

    out = tmp_path / "tiny"
    assert main(["tiny-model", "--out", str(out), "--seed", "0"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"-> {out}") and "parameters=" in lines[0], lines
    for name in (
        "model.safetensors", "tokenizer.json", "config.json", "processor_config.json", "chat_template.jinja",
    ):
        # same seed, same files
        assert (out / name).read_bytes() == (tiny_model_dir / name).read_bytes(), name


def test_another_seed_gives_other_weights_and_tokenizer(tmp_path, tiny_model_dir):
    from mau.models.tiny import build_tiny_model

    build_tiny_model(tmp_path, seed=1)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (tmp_path / name).read_bytes() != (tiny_model_dir / name).read_bytes(), name


def test_trl_recognises_the_chat_template_as_stock_qwen3_5(loaded):
    # TRL swaps in its training copy (answer-only loss) only for a template it knows, compared verbatim.
    pytest.importorskip("trl")
    from trl.chat_template_utils import get_training_chat_template

    processor, _ = loaded
    training = get_training_chat_template(processor)
    assert training and "Qwen3.5" in training
