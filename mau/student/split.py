"""A Llama-like causal LM cut in two: frozen lower layers whose output is computed once per prompt (a feature
cache), and the last ``train_last`` decoder layers, the final norm and the candidates' rows of the output head,
which the candidate objective trains. Exact: ``upper(lower(ids))`` equals the full model's last-position logits
(tests/test_student.py). Heavy imports inside."""

from __future__ import annotations

from typing import Any


class SplitLM:
    def __init__(self, model: Any, train_last: int):
        inner = model.model
        n = len(inner.layers)
        if not 1 <= train_last <= n:
            raise ValueError(f"train_last_layers: {train_last} is not between 1 and the model's {n} layers")
        self.model, self.inner, self.k = model, inner, n - train_last

    def trainable(self) -> list[Any]:
        """The trained parameters: the upper layers and the final norm (the tied embedding/output head stays
        frozen: the cached features were made with it)."""
        params = [p for layer in self.inner.layers[self.k:] for p in layer.parameters()]
        return params + list(self.inner.norm.parameters())

    def freeze_lower(self) -> None:
        for p in self.model.parameters():
            p.requires_grad_(False)
        for p in self.trainable():
            p.requires_grad_(True)

    def _run(self, h: Any, layers: Any) -> Any:
        import torch

        pos = torch.arange(h.shape[1], device=h.device)[None]
        pe = self.inner.rotary_emb(h, pos)
        for layer in layers:  # one unpadded sequence: no mask, causal attention
            h = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
        return h

    def lower(self, ids: list[int]) -> Any:
        """The hidden states entering the first trained layer, (T, H), without gradients."""
        import torch

        with torch.inference_mode():
            h = self.inner.embed_tokens(torch.tensor([ids], device=self.model.device))
            return self._run(h, self.inner.layers[: self.k])[0].clone()

    def upper(self, features: Any, token_ids: list[int]) -> Any:
        """Logits of ``token_ids`` at the last position, from cached features (gradients flow to the upper
        layers)."""
        h = self._run(features[None].to(self.model.device), self.inner.layers[self.k:])
        last = self.inner.norm(h[0, -1])
        return self.model.lm_head.weight[token_ids] @ last
