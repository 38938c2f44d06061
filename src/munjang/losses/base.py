"""Shared pieces of the training objectives: embedding the columns of a batch, the pairwise
distances the metric losses use, and `SentenceLoss`, the base class every loss follows.

Calling convention (the same as sentence-transformers, so a trainer can call any loss alike):
`loss(sentence_features, labels)`, where `sentence_features[i] = model.tokenize(column_i_texts)`
and `labels` is a tensor with one entry per example (or None for losses that need no labels).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..encoders.dense.encoder import SentenceEncoder

SBERT_CITATION = """@inproceedings{reimers-2019-sentence-bert,
    title = "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing",
    year = "2019",
    publisher = "Association for Computational Linguistics",
    url = "https://arxiv.org/abs/1908.10084",
}"""


# What one more pass through the model costs in training, in padded tokens (kernel launches and the
# per-layer work, forward and backward): columns share a pass when that pads fewer tokens than this.
# KorSTS pairs of similar lengths gain about 9 % from one pass, e5-small on 2 CPU cores; an NLI premise
# with its short hypotheses ran 1.6x slower as one pass than as separate ones (bench/train_speed_korean.py).
PASS_COST = 256


def embed(
    model: SentenceEncoder, sentence_features: Sequence[dict[str, Any]], pass_cost: int = PASS_COST
) -> list[Tensor]:
    """One (batch, dim) embedding tensor per column, with gradients.

    Columns of similar lengths go through the model as one padded batch (padding is masked, so each
    row's result is the same), which saves a pass; a column much longer than the others gets its own
    pass, so short columns are not padded to its length (`merge_plan` with `pass_cost`). Columns whose
    features differ (other keys or prompt length) take one pass each. Tensors are moved to the model's
    device; the caller's dicts are left unchanged.
    """
    device = model.device
    moved = [
        {k: v.to(device) if isinstance(v, Tensor) else v for k, v in f.items()} for f in sentence_features
    ]
    if len(moved) == 1 or not _mergeable(moved):
        return [model(features)["sentence_embedding"] for features in moved]
    widths = [f["input_ids"].shape[1] for f in moved]
    rows = [f["input_ids"].shape[0] for f in moved]
    out: list[Tensor] = [torch.empty(0)] * len(moved)
    for group in merge_plan(widths, rows, pass_cost):
        if len(group) == 1:
            out[group[0]] = model(moved[group[0]])["sentence_embedding"]
            continue
        merged = model(_padded_together([moved[i] for i in group], model.transformer.pad_token_id))
        parts = torch.split(merged["sentence_embedding"], [rows[i] for i in group])
        for i, part in zip(group, parts, strict=True):
            out[i] = part
    return out


def merge_plan(widths: Sequence[int], rows: Sequence[int], pass_cost: int = PASS_COST) -> list[list[int]]:
    """Columns (indices) grouped into passes: widest first, cut where padded tokens plus `pass_cost` per
    pass are least (an exact dynamic programme over the width-sorted columns)."""
    order = sorted(range(len(widths)), key=lambda i: -widths[i])
    best = [0.0] + [float("inf")] * len(order)
    cut = [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        for i in range(j):
            cost = best[i] + sum(rows[k] for k in order[i:j]) * widths[order[i]] + pass_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = len(order)
    while j > 0:
        groups.append(sorted(order[cut[j] : j]))
        j = cut[j]
    return groups[::-1]


def _padded_together(features: Sequence[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """The columns' features as one batch, each padded to the widest."""
    width = max(f["input_ids"].shape[1] for f in features)
    merged: dict[str, Any] = {k: v for k, v in features[0].items() if not isinstance(v, Tensor)}
    for key in (k for k, v in features[0].items() if isinstance(v, Tensor)):
        fill = pad_id if key == "input_ids" else 0
        merged[key] = torch.cat([F.pad(f[key], (0, width - f[key].shape[1]), value=fill) for f in features])
    return merged


def _mergeable(features: Sequence[dict[str, Any]]) -> bool:
    first = features[0]
    tensors = {k for k, v in first.items() if isinstance(v, Tensor)}
    if "input_ids" not in tensors or any(first[k].dim() != 2 for k in tensors):
        return False
    for other in features[1:]:
        if {k for k, v in other.items() if isinstance(v, Tensor)} != tensors:
            return False
        if any(other[k] != first[k] for k in first if k not in tensors):
            return False
    return True


def _cosine_distance(a: Tensor, b: Tensor) -> Tensor:
    return 1 - (F.normalize(a, p=2, dim=-1) * F.normalize(b, p=2, dim=-1)).sum(dim=-1)


def _euclidean_distance(a: Tensor, b: Tensor) -> Tensor:
    return torch.linalg.vector_norm(a - b, ord=2, dim=-1)


def _manhattan_distance(a: Tensor, b: Tensor) -> Tensor:
    return (a - b).abs().sum(dim=-1)


DISTANCE_METRICS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "cosine": _cosine_distance,
    "euclidean": _euclidean_distance,
    "manhattan": _manhattan_distance,
}


def distance_function(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    """Row-by-row distance by name: cosine (1 − cos), euclidean (L2) or manhattan (L1)."""
    if name not in DISTANCE_METRICS:
        raise ValueError(f"unknown distance metric {name!r}; choose from {', '.join(DISTANCE_METRICS)}")
    return DISTANCE_METRICS[name]


# What a loss reads as each example's label: a number (a similarity score, or 1 / 0 for a similar /
# dissimilar pair), a class index, a teacher's embedding, or nothing (None: the columns say it all).
LABEL_KINDS = ("number", "class", "vector", None)


class SentenceLoss(nn.Module, ABC):
    """Base of the munjang losses: embeds each column once, then `compute_from_embeddings`.

    Subclasses set `min_columns` / `max_columns` (None: no upper bound), `label_kind` (what each
    example's label must be, one of LABEL_KINDS: training configs check their data against it),
    `citation` (BibTeX, optional), and implement
    `compute_from_embeddings`; wrappers such as `MatryoshkaLoss` reuse that method on embeddings
    they have transformed.
    """

    min_columns: int = 2
    max_columns: int | None = 2
    label_kind: str | None = "number"
    citation: str | None = None

    def __init__(self, model: SentenceEncoder) -> None:
        super().__init__()
        self.model = model

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The scalar loss of one batch: `sentence_features[i]` is `model.tokenize(column_i)`."""
        self.check_columns(len(sentence_features))
        return self.compute_from_embeddings(embed(self.model, sentence_features), labels)

    @abstractmethod
    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss from one (batch, dim) embedding tensor per column."""

    def check_columns(self, count: int) -> None:
        """Raise ValueError when a batch has a number of columns this loss cannot use."""
        low, high = self.min_columns, self.max_columns
        if count >= low and (high is None or count <= high):
            return
        if high is None:
            wanted = f"at least {low}"
        elif low == high:
            wanted = str(low)
        else:
            wanted = f"{low} to {high}"
        raise ValueError(f"{type(self).__name__} takes {wanted} text columns per example, got {count}")

    def check_labels(self, labels: Tensor | None, batch_size: int) -> Tensor:
        """Labels as a flat tensor with one entry per example, or ValueError."""
        if labels is None:
            raise ValueError(f"{type(self).__name__} needs labels, got None")
        if labels.numel() != batch_size:
            raise ValueError(
                f"{type(self).__name__} expects {batch_size} labels (one per example), "
                f"got {labels.numel()} with shape {tuple(labels.shape)}"
            )
        return labels.reshape(-1)

    def get_config_dict(self) -> dict[str, Any]:
        """The hyper-parameters, for model cards and training logs."""
        return {}
