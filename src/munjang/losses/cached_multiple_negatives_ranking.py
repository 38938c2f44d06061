"""CachedMultipleNegativesRankingLoss: MultipleNegativesRankingLoss through GradCache.

The same objective, value and gradients as `MultipleNegativesRankingLoss` at the same batch
(in-batch negatives, optional hard-negative columns, cosine or dot similarity, `symmetric`), but
the model sees `mini_batch_size` texts at a time (see `gradient_cache`): a batch of 256 or 4,096
pairs, whose negatives make a better retriever, trains in the memory of a batch of 32. The price is
a second forward pass per step.

The batch's scores are still computed at once: (batch) × ((columns − 1) · batch) numbers, small
next to the activations a transformer keeps for backward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .gradient_cache import GRADCACHE_CITATION, cached_loss, check_model
from .multiple_negatives_ranking import HENDERSON_CITATION, MultipleNegativesRankingLoss


class CachedMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """MultipleNegativesRankingLoss with large batches in small memory (GradCache), on one process.

    Args:
        model: the encoder being trained.
        scale: inverse temperature λ of the scores (20 for cosine; 1 is usual for dot).
        similarity_fct: "cosine" or "dot".
        symmetric: also score each positive against all anchors, and average the two directions.
        mini_batch_size: texts per forward pass; memory grows with it, the loss does not change.
    """

    citation = HENDERSON_CITATION + "\n\n" + GRADCACHE_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        scale: float = 20.0,
        similarity_fct: str = "cosine",
        symmetric: bool = False,
        mini_batch_size: int = 32,
    ) -> None:
        super().__init__(model, scale, similarity_fct, symmetric, gather_across_devices=False)
        check_model(model, type(self).__name__, mini_batch_size)
        self.mini_batch_size = mini_batch_size

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        self.check_columns(len(sentence_features))
        return cached_loss(
            self.model,
            sentence_features,
            self.mini_batch_size,
            lambda embeddings: self.compute_from_embeddings(embeddings, labels),
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "similarity_fct": self.similarity_fct,
            "symmetric": self.symmetric,
            "mini_batch_size": self.mini_batch_size,
        }
