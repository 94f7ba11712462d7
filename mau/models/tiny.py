"""A tiny local Qwen3.5 VLM and its processor, built from nothing (no hub): for CPU tests of the whole
pipeline.

The tokenizer is a byte-level BPE trained on generated game text with Qwen3.5's pre-tokenizer and special
tokens, wrapped as ``Qwen3_5Tokenizer`` with the stock Qwen3.5 chat template (the one TRL ships as
``qwen3_5_think.jinja``, so TRL recognises it and swaps in its training copy). The processor is the stock
``Qwen3VLProcessor`` (``Qwen2VLImageProcessor``: patch 16, merge 2, temporal patch 2, so one image token per
32x32 px). The model is ``Qwen3_5ForConditionalGeneration`` with a ~0.5 M-parameter config and the tokenizer's
own image-token ids. Everything follows from the seed. Heavy imports happen inside the functions.
It lives outside ``mau.train`` because its tokenizer's text comes from the game (names and rooms, from
``mau.env``): ``mau.train`` imports it and never the world (docs/architecture.md). The random LoRA adapter the
tests put on it is ``tests.ml_fixtures.build_tiny_adapter``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Qwen3.5's special tokens, in the order they are appended after the BPE vocabulary (as in the real model).
SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
]
# Added but not "special" (as in Qwen3): decoding with skip_special_tokens keeps them, so a think block is
# visible.
THINK_TOKENS = ["<think>", "</think>"]

PATCH_SIZE = 16
MERGE_SIZE = 2
TEMPORAL_PATCH_SIZE = 2
MIN_PIXELS = 64 * 64  # 4 image tokens; keeps a 128x128 frame at its own size (16 tokens), never upscaled
DEFAULT_MAX_PIXELS = 256 * 256  # 64 image tokens: a 640x360 game frame is downscaled to ~8x(14 or 15) tokens

GAME_WORDS = [
    "crewmate", "imposter", "kill", "report", "vote", "skip", "meeting", "mission", "station", "body",
    "emergency", "suspect", "saw", "near", "alone", "with", "in", "the", "was", "is", "not", "I", "we",
    "follow", "wander", "explore", "defer", "stalk", "none", "true", "false", "player", "room", "task",
]
MODES = ["report", "mission", "explore", "kill"]


@dataclass
class TinyModelInfo:
    """What ``build_tiny_model`` wrote."""

    out: Path
    parameters: int
    vocab_size: int
    image_token_id: int


def game_text(seed: int, lines: int = 4000) -> list[str]:
    """Deterministic lines of game-like text: names, rooms, ARIA's JSON answers, game words, digits."""
    from mau.env.config import DEFAULT_PLAYERS
    from mau.env.map import load_map

    rng = random.Random(seed)
    names = [n for n, _ in DEFAULT_PLAYERS]
    rooms = list(load_map().room_names)

    def sentence() -> str:
        words = [rng.choice(GAME_WORDS + names + rooms) for _ in range(rng.randint(3, 12))]
        return " ".join(words) + rng.choice([".", "!", "?", ",", ";", ":"])

    makers = [
        lambda: {"vote_target": rng.choice(names + ["skip"]), "reasoning": sentence()},
        lambda: {"mode": rng.choice(MODES), "target": str(rng.randint(0, 20)), "reasoning": sentence()},
        lambda: {"target_player": rng.choice(names + ["wander"]), "reasoning": sentence()},
        lambda: {"should_report": rng.random() < 0.5, "reasoning": sentence()},
        lambda: {"should_call": rng.random() < 0.5, "reasoning": sentence()},
        lambda: {
            "response_text": sentence(), "suspicion_cast_on": rng.choice(names + ["none"]),
            "reasoning": sentence(),
        },
        lambda: {
            "players_seen": rng.sample(names, rng.randint(0, 3)), "detail": sentence(),
            "suspect": rng.choice(names),
        },
        lambda: {"strategy": sentence(), "priority_target": rng.choice(rooms), "reasoning": sentence()},
        lambda: {
            "insights": sentence(), "most_suspicious": rng.choice(names),
            "suspicion_updates": [{"player": rng.choice(names), "delta": round(rng.uniform(-0.3, 0.3), 2)}],
        },
    ]
    out: list[str] = []
    for i in range(lines):
        kind = i % 4
        if kind == 0:
            out.append(json.dumps(rng.choice(makers)()))
        elif kind == 1:
            out.append(sentence())
        elif kind == 2:
            out.append(f"{rng.choice(names)} is in {rng.choice(rooms)} at step {rng.randint(0, 999)}; "
                       f"{rng.choice(names)} went to {rng.choice(rooms)}.")
        else:
            out.append(
                " ".join(str(rng.randint(0, 10 ** rng.randint(1, 4))) for _ in range(rng.randint(1, 6)))
                + " "
                + "".join(rng.choice("{}[]():;,.!?\"'-_=+*/#@%&<>|") for _ in range(4))
            )
    return out + names + rooms + GAME_WORDS


def chat_template() -> str:
    """The stock Qwen3.5 chat template, read from TRL's copy (not imported: importing trl is slow)."""
    import importlib.util

    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the tiny model's chat template comes from trl: pip install -e '.[ml]'")
    folder = Path(list(spec.submodule_search_locations)[0]) / "chat_templates"
    return (folder / "qwen3_5_think.jinja").read_text(encoding="utf-8")


def build_tokenizer(seed: int = 0, vocab_size: int = 800) -> Any:
    """A byte-level BPE on game text with Qwen3.5's pre-tokenizer, as a ``Qwen3_5Tokenizer``.
    ``vocab_size`` counts everything, special tokens included."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import AddedToken
    from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX, Qwen3_5Tokenizer

    n_added = len(SPECIAL_TOKENS) + len(THINK_TOKENS)
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - n_added, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    bpe.train_from_iterator(game_text(seed), trainer=trainer)
    state = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]

    vocab = dict(state["vocab"])
    # fixed ids after the BPE vocabulary, in order, as in the real model
    for t in SPECIAL_TOKENS + THINK_TOKENS:
        vocab[t] = len(vocab)
    tok = Qwen3_5Tokenizer(vocab=vocab, merges=merges, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                           unk_token=None, model_max_length=262144)
    # Mark them as added tokens (never split by BPE); they keep the ids given above.
    tok.add_tokens(
        [AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS], special_tokens=True
    )
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    tok.chat_template = chat_template()
    return tok


def build_processor(
    tokenizer: Any, max_pixels: int = DEFAULT_MAX_PIXELS, min_pixels: int = MIN_PIXELS
) -> Any:
    """The stock ``Qwen3VLProcessor``: ``Qwen2VLImageProcessor`` (torchvision) + ``Qwen3VLVideoProcessor``."""
    from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

    if max_pixels < min_pixels:
        raise ValueError(f"image max_pixels {max_pixels} is below min_pixels {min_pixels}")
    common = dict(patch_size=PATCH_SIZE, merge_size=MERGE_SIZE, temporal_patch_size=TEMPORAL_PATCH_SIZE,
                  image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])  # Qwen3-VL's normalisation
    image = Qwen2VLImageProcessor(size={"shortest_edge": min_pixels, "longest_edge": max_pixels}, **common)
    video = Qwen3VLVideoProcessor(
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels * 4}, **common
    )
    return Qwen3VLProcessor(image_processor=image, tokenizer=tokenizer, video_processor=video,
                            chat_template=tokenizer.chat_template)


def tiny_config(tokenizer: Any, hidden: int = 64, layers: int = 4, vision_depth: int = 2) -> Any:
    """The small Qwen3.5 config of ml_stack.md, with the tokenizer's own special-token ids."""
    from transformers import Qwen3_5Config

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        full_attention_interval=4,  # 3 Gated DeltaNet layers per full-attention layer, as in the real model
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
        linear_conv_kernel_dim=4, max_position_embeddings=4096, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"], bos_token_id=None,
    )
    vision = dict(depth=vision_depth, hidden_size=hidden, intermediate_size=2 * hidden, num_heads=4,
                  out_hidden_size=hidden, patch_size=PATCH_SIZE, spatial_merge_size=MERGE_SIZE,
                  temporal_patch_size=TEMPORAL_PATCH_SIZE, num_position_embeddings=256)
    return Qwen3_5Config(
        text_config=text, vision_config=vision, tie_word_embeddings=False,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )


def build_tiny_model(
    out: str | Path, seed: int = 0, vocab_size: int = 800, max_pixels: int = DEFAULT_MAX_PIXELS,
    hidden: int = 64, layers: int = 4, vision_depth: int = 2,
) -> TinyModelInfo:
    """Build and save (``save_pretrained``) a tiny Qwen3.5 VLM + processor into ``out``, deterministically
    from ``seed``; ``AutoProcessor`` / ``AutoModelForImageTextToText.from_pretrained(out)`` reload them."""
    import torch
    from transformers import GenerationConfig, Qwen3_5ForConditionalGeneration

    out = Path(out)
    tokenizer = build_tokenizer(seed, vocab_size)
    processor = build_processor(tokenizer, max_pixels=max_pixels)
    config = tiny_config(tokenizer, hidden=hidden, layers=layers, vision_depth=vision_depth)
    torch.manual_seed(seed)  # the random init is the only other source of variation
    model = Qwen3_5ForConditionalGeneration(config).to(torch.float32).eval()
    im_end, eot = (tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>"))
    # Greedy by default; stop on <|im_end|> (end of turn) or <|endoftext|>, like Qwen3.5's generation config.
    model.generation_config = GenerationConfig(eos_token_id=[im_end, eot], pad_token_id=eot, do_sample=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return TinyModelInfo(out=out, parameters=sum(p.numel() for p in model.parameters()),
                         vocab_size=len(tokenizer), image_token_id=config.image_token_id)




VOTER_NAMES = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin"]


def build_voter_model(src: str | Path, out: str | Path, scale: float = 14.0) -> Path:
    """A copy of the tiny model at ``src`` that already answers VOTE in the format (no training): the start
    policy of GRPO tests and benches (a random tiny model never answers in the format, so every completion
    would get the same penalty and GRPO would have nothing to learn from). Every layer's output projections
    are zeroed, so the residual stream carries only the current token's embedding (a bigram model), and
    lm_head is set so that the newline ending the generation prompt is followed by ``{"vote_target": "``, one
    of the eight default players' names with equal odds, ``"}`` and ``<|im_end|>``."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(src)
    tok = proc.tokenizer
    model = AutoModelForImageTextToText.from_pretrained(src, dtype=torch.float32)
    lm = model.model.language_model
    with torch.no_grad():
        for name, p in lm.named_parameters():
            if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                p.zero_()
        ids = tok.convert_tokens_to_ids
        chain = ["Ċ", '{"', "vote", "_target", '":', 'Ġ"']
        succ: list[tuple[int, int]] = [(ids(a), ids(b)) for a, b in zip(chain, chain[1:])]
        succ += [(ids('Ġ"'), ids(n)) for n in VOTER_NAMES] + [(ids(n), ids('"}')) for n in VOTER_NAMES]
        succ.append((ids('"}'), ids("<|im_end|>")))
        emb = lm.embed_tokens.weight
        head = model.lm_head.weight
        head.zero_()
        for a, b in succ:
            h = lm.norm(emb[a][None, None, :])[0, 0]
            head[b] += scale * h / (h @ h)
    out = Path(out)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    return out
