"""CachedGISTEmbedLoss: GISTEmbedLoss through GradCache, for large batches in small memory.

The objective of `GISTEmbedLoss` (the guide masking false in-batch negatives), with the model
embedding `mini_batch_size` texts at a time (see `gradient_cache`); the guide reads the batch in
mini-batches too, without gradients. Same loss and gradients as GISTEmbedLoss at the same batch.
KURE-v1 (a strong Korean retriever) was trained with this loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .gist_embed import GIST_CITATION, GISTEmbedLoss
from .gradient_cache import GRADCACHE_CITATION, cached_loss, check_model


class CachedGISTEmbedLoss(GISTEmbedLoss):
    """GISTEmbedLoss with large batches in small memory (GradCache), on one process.

    Args: those of `GISTEmbedLoss`, and `mini_batch_size`: texts per forward pass (memory grows
    with it, the loss does not change).
    """

    citation = GIST_CITATION + "\n\n" + GRADCACHE_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        guide: SentenceEncoder | str,
        temperature: float = 0.01,
        mini_batch_size: int = 32,
        margin_strategy: str = "absolute",
        margin: float = 0.0,
        contrast_anchors: bool = True,
        contrast_positives: bool = True,
    ) -> None:
        super().__init__(
            model, guide, temperature, margin_strategy, margin, contrast_anchors, contrast_positives
        )
        check_model(model, type(self).__name__, mini_batch_size)
        self.mini_batch_size = mini_batch_size

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        self.check_columns(len(sentence_features))
        guided = self.embed_guide(sentence_features, self.mini_batch_size)
        return cached_loss(
            self.model,
            sentence_features,
            self.mini_batch_size,
            lambda embeddings: self.compute_with_guide(embeddings, guided),
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "mini_batch_size": self.mini_batch_size}
