"""SBERT training objectives.

Every loss is an `nn.Module` called as `loss(sentence_features, labels)`, where
`sentence_features[i] = model.tokenize(texts_of_column_i)`, and returns a scalar tensor.
`LOSSES` maps the names used in training configs to the classes; the domain-adaptation objectives
(TSDAE, masked-LM) train through `training.adaptation` instead, as they need data built for them.
"""

from __future__ import annotations

from .angle import AnglELoss, pairwise_angle_similarity
from .base import DISTANCE_METRICS, SentenceLoss, distance_function, embed, merge_plan
from .cached_gist_embed import CachedGISTEmbedLoss
from .cached_multiple_negatives_ranking import CachedMultipleNegativesRankingLoss
from .contrastive import ContrastiveLoss
from .cosent import CoSENTLoss
from .cosine_similarity import CosineSimilarityLoss
from .denoising_auto_encoder import DenoisingAutoEncoderLoss
from .gist_embed import GISTEmbedLoss
from .masked_language_modeling import MaskedLanguageModelingLoss
from .matryoshka import MatryoshkaLoss
from .mse import MSELoss
from .multiple_negatives_ranking import MultipleNegativesRankingLoss
from .online_contrastive import OnlineContrastiveLoss
from .softmax import SoftmaxLoss
from .triplet import TripletLoss

LOSSES: dict[str, type[SentenceLoss]] = {
    "softmax": SoftmaxLoss,
    "cosine": CosineSimilarityLoss,
    "cosent": CoSENTLoss,
    "angle": AnglELoss,
    "triplet": TripletLoss,
    "contrastive": ContrastiveLoss,
    "online_contrastive": OnlineContrastiveLoss,
    "mnrl": MultipleNegativesRankingLoss,
    "mse": MSELoss,
    "matryoshka": MatryoshkaLoss,
    "cached_mnrl": CachedMultipleNegativesRankingLoss,
    "gist": GISTEmbedLoss,
    "cached_gist": CachedGISTEmbedLoss,
}

__all__ = [
    "DISTANCE_METRICS",
    "LOSSES",
    "AnglELoss",
    "CachedGISTEmbedLoss",
    "CachedMultipleNegativesRankingLoss",
    "CoSENTLoss",
    "ContrastiveLoss",
    "CosineSimilarityLoss",
    "DenoisingAutoEncoderLoss",
    "GISTEmbedLoss",
    "MSELoss",
    "MaskedLanguageModelingLoss",
    "MatryoshkaLoss",
    "MultipleNegativesRankingLoss",
    "OnlineContrastiveLoss",
    "SentenceLoss",
    "SoftmaxLoss",
    "TripletLoss",
    "distance_function",
    "embed",
    "merge_plan",
    "pairwise_angle_similarity",
]
