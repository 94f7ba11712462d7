"""A tiny Qwen3.5 that already answers VOTE in the format, built by hand (no training): the start policy of the
GRPO tests. A random tiny model never answers in the format, so every completion would get the same penalty,
every group advantage would be zero and GRPO would have nothing to learn from (docs/rl.md).

Construction: every layer's output projections are zeroed, so the residual stream carries only the current
token's embedding and the model is a bigram table; lm_head is set so that the newline that ends the
generation prompt is followed by ``{"vote_target": "``, then one of the eight player names with equal odds,
then ``"}`` and ``<|im_end|>``. Sampling thus votes for a random player: some votes name an imposter, some do
not, and the rewards of a group differ. Heavy imports inside."""

from __future__ import annotations

from pathlib import Path

NAMES = ["James", "Steve", "Jason", "Michael", "Olivia", "Noah", "Ethan", "Martin"]


def build_voter_model(src: str | Path, out: str | Path, scale: float = 14.0) -> Path:
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
        succ += [(ids('Ġ"'), ids(n)) for n in NAMES] + [(ids(n), ids('"}')) for n in NAMES]
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
