"""Late chunking (Günther et al. 2024): passage vectors that have read their neighbours.

Plain chunking encodes each passage alone, so "it" in one passage cannot see what the previous one
named. Late chunking runs the transformer once over a window of the document holding several
passages, then mean-pools each passage's own tokens: every token embedding has attended to the
whole window, so each passage vector carries its context, at the cost of one pass per window
instead of one per passage (fewer, longer inputs).

Only models whose sentence vector is the mean of their token embeddings (a Transformer, mean
Pooling, optionally Normalize: e5, MiniLM, most SBERT models) can be late-chunked; others are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .passages import Passage  # a passage's character span: `start`, `end`

CountTokens = Callable[[list[str]], list[int]]


def check_late_chunking(encoder: Any) -> None:
    """Refuse encoders whose vectors are not a mean of token embeddings."""
    modules = [type(m).__name__ for m in encoder] if isinstance(encoder, Iterable) else []
    pooling = getattr(encoder, "pooling", None)
    modes = tuple(getattr(pooling, "modes", ()))
    if modules[:2] != ["Transformer", "Pooling"] or set(modules[2:]) - {"Normalize"} or modes != ("mean",):
        raise ValueError(
            "late chunking needs a model that mean-pools its token embeddings "
            f"(Transformer, Pooling(mean), Normalize); this one is {' -> '.join(modules) or 'unknown'}"
            f"{f' with pooling {modes}' if modes else ''}"
        )


def windows(text: str, passages: Sequence[Passage], count: CountTokens, budget: int) -> list[list[int]]:
    """Consecutive passages grouped so that each group's span of the text fits `budget` tokens."""
    groups: list[list[int]] = []
    for i, passage in enumerate(passages):
        if groups:
            first = passages[groups[-1][0]]
            if count([text[first.start : passage.end]])[0] <= budget:
                groups[-1].append(i)
                continue
        groups.append([i])
    return groups


def late_vectors(
    encoder: Any,
    text: str,
    passages: Sequence[Passage],
    count: CountTokens,
    budget: int,
    prefix: str = "",
    prompt_name: str | None = None,
    batch_size: int = 16,
) -> np.ndarray:
    """One vector per passage: the mean of its tokens' embeddings from a pass over its window.
    `prefix` (a title line) is read in front of every window but pooled into no passage."""
    groups = windows(text, passages, count, budget)
    spans = [(passages[g[0]].start, passages[g[-1]].end) for g in groups]
    inputs = [prefix + text[a:b] for a, b in spans]
    tokens = encoder.encode(
        inputs, output_value="token_embeddings", prompt_name=prompt_name, batch_size=batch_size
    )
    prompts = getattr(encoder, "prompts", {}) or {}
    prompt = prompts.get(prompt_name, "") if prompt_name else ""
    shift = len(prompt) + len(prefix)
    out = np.zeros((len(passages), encoder.get_embedding_dimension()), dtype=np.float32)
    for group, (a, _), embedded, window_text in zip(groups, spans, tokens, inputs, strict=True):
        offsets = encoder.tokenizer(
            prompt + window_text,
            return_offsets_mapping=True,
            truncation=True,
            max_length=encoder.max_seq_length,
        )["offset_mapping"]
        if len(offsets) != len(embedded):
            raise RuntimeError(f"late chunking: {len(offsets)} offsets for {len(embedded)} token embeddings")
        starts = np.array([s for s, _ in offsets])
        ends = np.array([e for _, e in offsets])
        real = ends > starts
        for i in group:
            lo, hi = passages[i].start - a + shift, passages[i].end - a + shift
            own = real & (starts >= lo) & (ends <= hi)
            if not own.any():  # a passage of only whitespace or cut off: its overlapping tokens
                own = real & (starts < hi) & (ends > lo)
            out[i] = (
                np.asarray(embedded)[own].mean(axis=0) if own.any() else np.asarray(embedded).mean(axis=0)
            )
    if getattr(encoder, "normalizes", False):
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out
