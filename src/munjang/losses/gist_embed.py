"""GISTEmbedLoss (Solatorio, 2024): in-batch negatives with a guide model removing false negatives.

In-batch negatives are random texts of the batch, and some of them are in fact relevant to the
anchor (two questions about the same thing, duplicates in the data): MultipleNegativesRankingLoss
pushes those away. A guide (a strong, fixed encoder) scores the same pairs; a candidate the guide
finds closer to the anchor than the anchor's own positive is dropped from the softmax (its logit
set to −∞). With g the guide's cosine similarity, s the model's, τ the temperature and

    threshold_i = g(a_i, p_i) − m               (margin_strategy="absolute", margin m)
    threshold_i = g(a_i, p_i) − |g(a_i, p_i)|·m  (margin_strategy="relative")

each anchor a_i is scored against the positives p_j, and optionally the other anchors a_j
(`contrast_anchors`), the other positives, each against p_i (`contrast_positives`), and every
hard-negative column n_j; a candidate c is kept when g(·, c) ≤ threshold_i (its own positive p_i
always is), and

    loss = mean_i −log( exp(s(a_i, p_i)/τ) / Σ_kept exp(s(·, c)/τ) )

Columns: (anchor, positive[, hard negative 1, ..., k]); no labels. The guide runs without
gradients and is not a submodule of the loss: it is neither trained, checkpointed nor moved. When
its tokenizer differs from the model's (or it reads fewer tokens), the batch's texts are decoded
from the model's ids and tokenized again for the guide, as sentence-transformers does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import similarity as sim
from ..encoders.dense.encoder import SentenceEncoder, load_encoder
from .base import SentenceLoss, embed
from .gradient_cache import minibatch_features, minibatch_ranges

MARGIN_STRATEGIES = ("absolute", "relative")

GIST_CITATION = """@misc{solatorio2024gistembed,
    title={GISTEmbed: Guided In-sample Selection of Training Negatives for Text Embedding Fine-tuning},
    author={Aivin V. Solatorio},
    year={2024},
    eprint={2402.16829},
    archivePrefix={arXiv},
    primaryClass={cs.LG}
}"""


class GISTEmbedLoss(SentenceLoss):
    """In-batch negatives ranking where the guide's similarities mask out the false negatives.

    Args:
        model: the encoder being trained.
        guide: the guiding encoder, or a model name / folder to load on the model's device.
        temperature: τ; the scores are cosine similarities divided by it.
        margin_strategy: "absolute" (threshold − margin) or "relative" (threshold · (1 − margin)).
        margin: how far below the anchor–positive guide similarity a candidate must stay.
        contrast_anchors: also use the other anchors as negatives.
        contrast_positives: also score each positive against the other positives.
    """

    max_columns = None
    label_kind = None
    citation = GIST_CITATION
    guide: SentenceEncoder

    def __init__(
        self,
        model: SentenceEncoder,
        guide: SentenceEncoder | str,
        temperature: float = 0.01,
        margin_strategy: str = "absolute",
        margin: float = 0.0,
        contrast_anchors: bool = True,
        contrast_positives: bool = True,
    ) -> None:
        super().__init__(model)
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, not {temperature}")
        if margin_strategy not in MARGIN_STRATEGIES:
            raise ValueError(
                f"unknown margin_strategy {margin_strategy!r}; choose from {', '.join(MARGIN_STRATEGIES)}"
            )
        if model.encodes_whole_texts:
            raise ValueError(f"{type(self).__name__} trains a transformer text model")
        self.guide_name = guide if isinstance(guide, str) else str(guide.model_folder or type(guide).__name__)
        loaded = (
            load_encoder(guide, device=model.device, precision="fp32") if isinstance(guide, str) else guide
        )
        # Kept out of the submodules: the trainer must neither optimise, checkpoint nor train() it.
        self.__dict__["guide"] = loaded
        self.temperature = temperature
        self.margin_strategy = margin_strategy
        self.margin = margin
        self.contrast_anchors = contrast_anchors
        self.contrast_positives = contrast_positives
        self.must_retokenize = _must_retokenize(model, loaded)

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        self.check_columns(len(sentence_features))
        guided = self.embed_guide(sentence_features)
        return self.compute_with_guide(embed(self.model, sentence_features), guided)

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        raise TypeError(f"{type(self).__name__} needs the guide's embeddings: call it on the features")

    def embed_guide(
        self, sentence_features: Sequence[dict[str, Any]], mini_batch_size: int | None = None
    ) -> list[Tensor]:
        """The guide's embeddings of each column (no gradients), on the model's device.

        With `mini_batch_size`, the guide reads that many rows at a time.
        """
        out = []
        with torch.no_grad():
            for features in sentence_features:
                rows = int(features["input_ids"].shape[0])
                parts = []
                for begin, end in minibatch_ranges(rows, mini_batch_size or rows):
                    batch = minibatch_features(features, begin, end) if mini_batch_size else dict(features)
                    if self.must_retokenize:
                        texts = self.model.tokenizer.batch_decode(
                            batch["input_ids"], skip_special_tokens=True
                        )
                        batch = self.guide.tokenize(texts)
                    device = self.guide.device
                    batch = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in batch.items()}
                    parts.append(self.guide(batch)["sentence_embedding"])
                out.append(torch.cat(parts).to(self.model.device))
        return out

    def compute_with_guide(self, embeddings: list[Tensor], guided: list[Tensor]) -> Tensor:
        """The loss from the model's embeddings of each column and the guide's."""
        self.check_columns(len(embeddings))
        anchors, positives, negatives = embeddings[0], embeddings[1], embeddings[2:]
        guide_anchors, guide_positives, guide_negatives = guided[0], guided[1], guided[2:]
        guide_ap = sim.similarity(guide_anchors, guide_positives, "cosine")
        threshold = guide_ap.diagonal().view(-1, 1)
        if self.margin_strategy == "absolute":
            threshold = threshold - self.margin
        else:
            threshold = threshold - threshold.abs() * self.margin
        own = torch.eye(anchors.shape[0], dtype=torch.bool, device=anchors.device)

        def kept(scores: Tensor, guide_scores: Tensor, protect_own: bool = False) -> Tensor:
            masked = guide_scores > threshold
            if protect_own:
                masked = masked & ~own
            return scores.masked_fill(masked, float("-inf"))

        scores = [kept(sim.similarity(anchors, positives, "cosine"), guide_ap, protect_own=True)]
        if self.contrast_anchors:
            scores.append(
                kept(
                    sim.similarity(anchors, anchors, "cosine"),
                    sim.similarity(guide_anchors, guide_anchors, "cosine"),
                )
            )
        if self.contrast_positives:
            scores.append(
                kept(
                    sim.similarity(positives, positives, "cosine"),
                    sim.similarity(guide_positives, guide_positives, "cosine"),
                )
            )
        for negative, guide_negative in zip(negatives, guide_negatives, strict=True):
            scores.append(
                kept(
                    sim.similarity(anchors, negative, "cosine"),
                    sim.similarity(guide_anchors, guide_negative, "cosine"),
                )
            )
        logits = torch.cat(scores, dim=1) / self.temperature
        targets = torch.arange(anchors.shape[0], device=anchors.device)
        return F.cross_entropy(logits, targets)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "guide": self.guide_name,
            "temperature": self.temperature,
            "margin_strategy": self.margin_strategy,
            "margin": self.margin,
            "contrast_anchors": self.contrast_anchors,
            "contrast_positives": self.contrast_positives,
        }


def _must_retokenize(model: SentenceEncoder, guide: SentenceEncoder) -> bool:
    """Whether the guide cannot read the model's token ids: another vocabulary, or fewer tokens."""
    if guide.encodes_whole_texts:
        return True
    return bool(
        model.tokenizer.get_vocab() != guide.tokenizer.get_vocab()
        or guide.max_seq_length < model.max_seq_length
    )
