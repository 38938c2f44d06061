"""SoftmaxLoss: the classification objective SBERT was trained with on NLI.

For a pair (a, b) with embeddings u and v, a linear classifier reads the concatenation of the
selected features and is trained with cross-entropy against the class label:

    o = softmax(W · [u; v; |u − v|; u ∗ v])      W ∈ R^{labels × p·n}  (p parts of n dims)

(u, v) and |u − v| are on by default, u ∗ v off, as in the paper (Reimers & Gurevych, 2019,
which found |u − v| the most important part). The classifier is only a training aid: it is not
part of the saved encoder, so `save` / `load_classifier` keep it separately when it is wanted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from ..encoders.dense.encoder import SentenceEncoder
from .base import SBERT_CITATION, SentenceLoss, embed


class SoftmaxLoss(SentenceLoss):
    """Cross-entropy of a linear classifier over (u, v, |u − v|, u ∗ v) — the selected parts.

    Labels: one class index per pair (NLI: 0 entailment, 1 neutral, 2 contradiction), or a
    (batch, num_labels) tensor of class probabilities.
    """

    label_kind = "class"
    citation = SBERT_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        num_labels: int,
        concatenation_sentence_rep: bool = True,
        concatenation_sentence_difference: bool = True,
        concatenation_sentence_multiplication: bool = False,
    ) -> None:
        super().__init__(model)
        if num_labels < 2:
            raise ValueError(f"num_labels must be at least 2 (a classifier over classes), not {num_labels}")
        parts = 2 * concatenation_sentence_rep + concatenation_sentence_difference
        parts += concatenation_sentence_multiplication
        if parts == 0:
            raise ValueError(
                "SoftmaxLoss needs at least one of concatenation_sentence_rep, "
                "concatenation_sentence_difference or concatenation_sentence_multiplication"
            )
        self.num_labels = num_labels
        self.concatenation_sentence_rep = concatenation_sentence_rep
        self.concatenation_sentence_difference = concatenation_sentence_difference
        self.concatenation_sentence_multiplication = concatenation_sentence_multiplication
        dim = model.get_embedding_dimension()
        self.classifier = nn.Linear(parts * dim, num_labels, device=model.device)
        self.cross_entropy = nn.CrossEntropyLoss()

    def classifier_input(self, u: Tensor, v: Tensor) -> Tensor:
        """The concatenated features the classifier reads."""
        parts: list[Tensor] = []
        if self.concatenation_sentence_rep:
            parts += [u, v]
        if self.concatenation_sentence_difference:
            parts.append(torch.abs(u - v))
        if self.concatenation_sentence_multiplication:
            parts.append(u * v)
        return torch.cat(parts, dim=1).to(self.classifier.weight.dtype)

    def logits(self, sentence_features: Sequence[dict[str, Any]]) -> Tensor:
        """Class scores (batch, num_labels) for pairs, e.g. for an accuracy evaluator."""
        self.check_columns(len(sentence_features))
        u, v = embed(self.model, sentence_features)
        return self.classifier(self.classifier_input(u, v))

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        if labels is None:
            raise ValueError("SoftmaxLoss needs labels, got None")
        u, v = embeddings
        output = self.classifier(self.classifier_input(u, v))
        labels = labels.to(output.device)
        if labels.shape == output.shape and labels.is_floating_point():
            return self.cross_entropy(output, labels.to(output.dtype))  # class probabilities
        labels = self.check_labels(labels, u.shape[0])
        return self.cross_entropy(output, labels.long())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the classifier weights to a safetensors file."""
        state = {k: v.detach().cpu().contiguous() for k, v in self.classifier.state_dict().items()}
        save_file(state, os.fspath(path))

    def load_classifier(self, path: str | os.PathLike[str]) -> None:
        """Read classifier weights written by `save`; their shape must match this loss's classifier."""
        state = load_file(os.fspath(path))
        expected = tuple(self.classifier.weight.shape)
        found = tuple(state["weight"].shape) if "weight" in state else None
        if found != expected:
            raise ValueError(
                f"{os.fspath(path)}: classifier weight has shape {found}, this loss needs {expected} "
                "(check num_labels, the concatenation options and the embedding dimension)"
            )
        self.classifier.load_state_dict(state)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "num_labels": self.num_labels,
            "concatenation_sentence_rep": self.concatenation_sentence_rep,
            "concatenation_sentence_difference": self.concatenation_sentence_difference,
            "concatenation_sentence_multiplication": self.concatenation_sentence_multiplication,
        }
