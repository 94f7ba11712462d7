"""A tiny Llama-architecture GGUF file written in the test (no download): a byte-level BPE vocabulary of the
256 byte symbols, a few merges and ChatML's special tokens, random float32 weights. transformers reads it as
it reads SmolLM2's file (tokenizer ``gpt2``, architecture ``llama``)."""

from __future__ import annotations

from pathlib import Path

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% "
          "endif %}")
NAMES = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin", "skip"]


def name_merges() -> list[str]:
    """Merges that make each game name (and skip) one token, as in SmolLM2's vocabulary (their first tokens
    are distinct there), built prefix by prefix."""
    out: list[str] = []
    for name in NAMES:
        for i in range(1, len(name)):
            m = f"{name[:i]} {name[i]}"
            if m not in out:
                out.append(m)
    return out


MERGES = ["t h", "a n", "i n", "e r"] + [m for m in name_merges() if m not in ("t h", "a n", "i n", "e r")]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_symbols() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_tiny_gguf(path: Path, hidden: int = 32, layers: int = 2, heads: int = 4, kv_heads: int = 2,
                    ff: int = 64, seed: int = 0) -> Path:
    import gguf
    import numpy as np

    merged = list(dict.fromkeys(m.replace(" ", "") for m in MERGES))
    tokens = SPECIALS + byte_symbols() + merged
    types = [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_context_length(512)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hidden // heads)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    w.add_chat_template(CHATML)
    rng = np.random.default_rng(seed)

    def t(*shape: int) -> "np.ndarray":
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    kv = hidden // heads * kv_heads
    w.add_tensor("token_embd.weight", t(len(tokens), hidden))
    w.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", t(hidden, hidden))
        w.add_tensor(f"blk.{i}.attn_k.weight", t(kv, hidden))
        w.add_tensor(f"blk.{i}.attn_v.weight", t(kv, hidden))
        w.add_tensor(f"blk.{i}.attn_output.weight", t(hidden, hidden))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", t(ff, hidden))
        w.add_tensor(f"blk.{i}.ffn_up.weight", t(ff, hidden))
        w.add_tensor(f"blk.{i}.ffn_down.weight", t(hidden, ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def vote_loss_before_and_after(split, cache, examples, steps: int = 8,
                               lr: float = 1e-2) -> tuple[float, float]:
    """The mean cross-entropy of the examples' targets under ``split``'s candidate read-out before and after
    ``steps`` AdamW steps on its trainable parameters (the toy training of the student's tests)."""
    import torch

    from mau.student.train import candidate_logprobs

    opt = torch.optim.AdamW(split.trainable(), lr=lr)

    def loss():
        return sum(-candidate_logprobs(split, cache.get(e), e)[e.target] for e in examples) / len(examples)

    first = float(loss().detach())
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        opt.step()
    return first, float(loss().detach())
