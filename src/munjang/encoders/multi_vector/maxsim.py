"""MaxSim, the late-interaction score: for each query token the best dot product with any document
token, summed over the query's tokens (ColBERT). With unit token vectors each term is a cosine.

    maxsim(q, d) = sum_i max_j <q_i, d_j>          meanmaxsim = maxsim / |q|

Scoring pads token sets into blocks and works through the documents in chunks, so memory stays at
about `chunk_elements` floats whatever the corpus size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

TokenSets = Sequence[Any]

DEFAULT_CHUNK_ELEMENTS = 32_000_000


def as_token_matrix(x: Any, name: str = "token vectors") -> torch.Tensor:
    """One token set as a float32 (tokens, dim) tensor."""
    t = x.detach() if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))
    if t.ndim != 2:
        raise ValueError(f"{name} must be a (tokens, dim) matrix, got shape {tuple(t.shape)}")
    return t.float()


def as_token_sets(x: Any, name: str) -> list[torch.Tensor]:
    """A list of token sets; a single (tokens, dim) matrix counts as a list of one."""
    if isinstance(x, (np.ndarray, torch.Tensor)) and x.ndim == 2:
        return [as_token_matrix(x, name)]
    if isinstance(x, (np.ndarray, torch.Tensor)) and x.ndim == 3:
        return [as_token_matrix(row, name) for row in x]
    return [as_token_matrix(row, name) for row in x]


def pad_token_sets(sets: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, longest, dim) zero-padded block and its (n, longest) mask of real tokens."""
    dim = sets[0].shape[1] if sets else 0
    width = max((s.shape[0] for s in sets), default=0)
    block = torch.zeros((len(sets), max(width, 1), dim), dtype=torch.float32)
    mask = torch.zeros((len(sets), max(width, 1)), dtype=torch.bool)
    for i, s in enumerate(sets):
        block[i, : s.shape[0]] = s
        mask[i, : s.shape[0]] = True
    return block, mask


def maxsim_padded(
    q: torch.Tensor, q_mask: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor
) -> torch.Tensor:
    """(Q, D) MaxSim of padded blocks q (Q, Tq, dim) and d (D, Td, dim); differentiable (training)."""
    sim = torch.einsum("qid,pjd->qpij", q, d)
    sim = sim.masked_fill(~d_mask[None, :, None, :], float("-inf"))
    best = sim.max(dim=-1).values
    best = torch.where(torch.isfinite(best), best, torch.zeros_like(best))
    return (best * q_mask[:, None, :].to(best.dtype)).sum(dim=-1)


def maxsim(
    queries: Any,
    documents: Any,
    length_normalize: bool = False,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> np.ndarray:
    """(queries, documents) MaxSim scores of two lists of (tokens, dim) token sets.

    `length_normalize` divides by each query's token count (MeanMaxSim). A document with no tokens
    scores 0.
    """
    qs = as_token_sets(queries, "queries")
    ds = as_token_sets(documents, "documents")
    out = np.zeros((len(qs), len(ds)), dtype=np.float32)
    if not qs or not ds:
        return out
    dims = {s.shape[1] for s in qs} | {s.shape[1] for s in ds}
    if len(dims) > 1:
        raise ValueError(f"queries and documents must share one token dimension, got {sorted(dims)}")
    q, q_mask = pad_token_sets(qs)
    per_doc = max(1, q.shape[0] * q.shape[1] * max(s.shape[0] for s in ds))
    step = max(1, chunk_elements // per_doc)
    with torch.inference_mode():
        for start in range(0, len(ds), step):
            d, d_mask = pad_token_sets(ds[start : start + step])
            out[:, start : start + d.shape[0]] = maxsim_padded(q, q_mask, d, d_mask).numpy()
    if length_normalize:
        out /= np.maximum(q_mask.sum(dim=1).numpy()[:, None], 1)
    return out


def maxsim_pairwise(queries: Any, documents: Any, length_normalize: bool = False) -> np.ndarray:
    """MaxSim of query i with document i, for two equally long lists of token sets."""
    qs = as_token_sets(queries, "queries")
    ds = as_token_sets(documents, "documents")
    if len(qs) != len(ds):
        raise ValueError(f"pairwise scoring needs as many queries as documents ({len(qs)} vs {len(ds)})")
    scores = np.zeros(len(qs), dtype=np.float32)
    for i, (q, d) in enumerate(zip(qs, ds, strict=True)):
        if d.shape[0]:
            scores[i] = float((q @ d.T).max(dim=1).values.sum())
        if length_normalize:
            scores[i] /= max(q.shape[0], 1)
    return scores
