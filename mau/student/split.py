"""A Llama-like causal LM cut in two: frozen lower layers whose output is computed once per prompt (a feature
cache), and the last ``train_last`` decoder layers, the final norm and the candidates' rows of the output
head, which the candidate objective trains. Exact: ``upper(lower(ids))`` equals the full model's
last-position logits (tests/test_student.py). Heavy imports inside."""

from __future__ import annotations

from typing import Any


class SplitLM:
    def __init__(self, model: Any, train_last: int):
        inner = model.model
        n = len(inner.layers)
        if not 1 <= train_last <= n:
            raise ValueError(f"train_last_layers: {train_last} is not between 1 and the model's {n} layers")
        self.model, self.inner, self.k = model, inner, n - train_last
        self.head: Any = None  # a PointerHead (mau.harness.candidate_head): candidates read at their names

    def trainable(self) -> list[Any]:
        """The trained parameters: the upper layers and the final norm (the tied embedding/output head stays
        frozen: the cached features were made with it)."""
        params = [p for layer in self.inner.layers[self.k:] for p in layer.parameters()]
        head = self.head.parameters() if self.head is not None else []
        return params + list(self.inner.norm.parameters()) + head

    def freeze_lower(self) -> None:
        for p in self.model.parameters():
            p.requires_grad_(False)
        for p in self.trainable():
            p.requires_grad_(True)

    def _run(self, h: Any, layers: Any, last_only: bool = False) -> Any:
        """The layers over one unpadded sequence ``h`` (1, T, H): causal attention, no mask. ``last_only``:
        the final layer computes the last position alone (its keys and values from every position), the only
        one the candidate objective reads; it returns (1, 1, H) then."""
        import torch

        pos = torch.arange(h.shape[1], device=h.device)[None]
        pe = self.inner.rotary_emb(h, pos)
        layers = list(layers)
        fast = last_only and layers and _is_llama(layers[-1])
        for layer in layers[:-1] if fast else layers:
            h = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
        return _last_position(layers[-1], h, pe) if fast else h

    def lower(self, ids: list[int]) -> Any:
        """The hidden states entering the first trained layer, (T, H), without gradients."""
        import torch

        with torch.inference_mode():
            h = self.inner.embed_tokens(torch.tensor([ids], device=self.model.device))
            return self._run(h, self.inner.layers[: self.k])[0].clone()

    def upper_hidden(self, features: Any) -> Any:
        """The final (normed) hidden states at every position, (T, H), from cached features: the upper layers
        over every position (gradients flow to them)."""
        h = self._run(features[None].to(self.model.device), self.inner.layers[self.k:])
        return self.inner.norm(h[0])

    def upper(self, features: Any, token_ids: list[int]) -> Any:
        """Logits of ``token_ids`` at the last position, from cached features (gradients flow to the upper
        layers)."""
        h = self._run(features[None].to(self.model.device), self.inner.layers[self.k:], last_only=True)
        last = self.inner.norm(h[0, -1])
        return self.model.lm_head.weight[token_ids] @ last


def _is_llama(layer: Any) -> bool:
    """A Llama decoder layer (SmolLM2's): the one whose arithmetic ``_last_position`` repeats."""
    return type(layer).__name__ == "LlamaDecoderLayer"


def _last_position(layer: Any, h: Any, pe: Any) -> Any:
    """A Llama decoder layer's output at the last position only, (B, 1, H): the query, the output projection
    and the MLP of one position, the keys and values of all (the same arithmetic as the layer;
    tests/test_student.py compares it with the full model)."""
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    attn = layer.self_attn
    b, t, _ = h.shape
    x = layer.input_layernorm(h)
    q = attn.q_proj(x[:, -1:]).view(b, 1, -1, attn.head_dim).transpose(1, 2)
    k = attn.k_proj(x).view(b, t, -1, attn.head_dim).transpose(1, 2)
    v = attn.v_proj(x).view(b, t, -1, attn.head_dim).transpose(1, 2)
    cos, sin = pe
    q, _ = apply_rotary_pos_emb(q, q, cos[:, -1:], sin[:, -1:])
    k, _ = apply_rotary_pos_emb(k, k, cos, sin)
    groups = q.shape[1] // k.shape[1]  # grouped-query attention: each key head serves this many query heads
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    # the last query sees all
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=attn.scaling)
    h = h[:, -1:] + attn.o_proj(out.transpose(1, 2).reshape(b, 1, -1))
    return h + layer.mlp(layer.post_attention_layernorm(h))
