"""STSEvaluator: how well an encoder's similarities rank sentence pairs the way people scored them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from ..data.checks import check_same_length
from ..data.sts import STSData
from ..similarity import pairwise_similarity
from .base import SIMILARITY_FNS, Evaluator, SupportsEncode, check_similarity_fns, similarity_fns_to_compute

__all__ = ["SIMILARITY_FNS", "STSEvaluator", "SupportsEncode"]

logger = logging.getLogger(__name__)


class STSEvaluator(Evaluator):
    """Correlation between embedding similarity and gold scores on sentence pairs (STS benchmarks).

    For each similarity function f (cosine, dot, negated euclidean, negated manhattan distance) and
    pairs (a_i, b_i) with gold score g_i, the predicted score is s_i = f(E(a_i), E(b_i)), and

        pearson_f  = r(s, g)  = sum_i (s_i - mean(s)) (g_i - mean(g)) / (n std(s) std(g))
        spearman_f = r(rank(s), rank(g))   (Pearson correlation of the ranks, ties get their mean rank)

    computed with `scipy.stats.pearsonr` and `scipy.stats.spearmanr`. Spearman is the usual headline
    number for STS, since only the order of the pairs matters. Calling the evaluator returns
    ``{"pearson_cosine": ..., "spearman_cosine": ..., "pearson_dot": ..., ...}`` (plain floats, keys
    not prefixed with `name`), and sets `primary_metric` to ``spearman_<main_similarity>``, or
    ``spearman_<encoder.similarity_fn_name>`` when no main similarity was given.

    Each distinct sentence is encoded once, however often it occurs on either side.
    Modeled on sentence-transformers' ``EmbeddingSimilarityEvaluator``.
    """

    optional_settings = ("main_similarity", "prompt_name", "prompt")

    def __init__(
        self,
        sentences1: Sequence[str],
        sentences2: Sequence[str],
        scores: Sequence[float],
        name: str = "",
        batch_size: int = 32,
        similarity_fns: Sequence[str] = SIMILARITY_FNS,
        main_similarity: str | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
    ) -> None:
        check_same_length(sentences1=sentences1, sentences2=sentences2, scores=scores)
        if len(scores) < 2:
            raise ValueError(f"correlation needs at least 2 pairs, got {len(scores)}")
        gold = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(gold).all():
            raise ValueError("gold scores must be finite numbers")
        if np.all(gold == gold[0]):
            raise ValueError("all gold scores are equal, so no correlation is defined")
        self.similarity_fns = check_similarity_fns(similarity_fns, main_similarity)
        # Known now if main_similarity is given; otherwise set from the encoder on each call.
        primary = f"spearman_{main_similarity}" if main_similarity else None
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, primary)
        self.sentences1 = list(sentences1)
        self.sentences2 = list(sentences2)
        self.scores = gold.tolist()
        self.main_similarity = main_similarity

    @classmethod
    def from_data(cls, data: STSData, **kwargs: Any) -> STSEvaluator:
        """An evaluator over the pairs and scores of `data` (e.g. from `munjang.data.read_sts`)."""
        return cls(data.sentences1, data.sentences2, data.scores, **kwargs)

    def __len__(self) -> int:
        return len(self.scores)

    def embed(self, encoder: SupportsEncode) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings of both sides, (n, dim) each, encoding every distinct sentence once."""
        embeddings1, embeddings2 = self.encode_columns(encoder, self.sentences1, self.sentences2)
        return embeddings1, embeddings2

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the pairs and return Pearson and Spearman correlations for each similarity function.

        The encoder's own `similarity_fn_name`, when it is the primary one and not in `similarity_fns`, is
        computed as well. A correlation is NaN when the encoder gives every pair the same similarity.
        """
        main, fns = similarity_fns_to_compute(encoder, self.similarity_fns, self.main_similarity)
        embeddings1, embeddings2 = self.embed(encoder)
        gold = np.asarray(self.scores, dtype=np.float64)
        metrics: dict[str, float] = {}
        for fn in fns:
            predicted = np.asarray(pairwise_similarity(embeddings1, embeddings2, fn), dtype=np.float64)
            metrics[f"pearson_{fn}"] = float(pearsonr(predicted, gold)[0])
            metrics[f"spearman_{fn}"] = float(spearmanr(predicted, gold)[0])
            logger.info(
                "STS %s %s: Pearson %.4f, Spearman %.4f",
                self.name or "evaluation",
                fn,
                metrics[f"pearson_{fn}"],
                metrics[f"spearman_{fn}"],
            )
        self.primary_metric = f"spearman_{main}"
        return metrics

    def _settings(self) -> dict[str, Any]:
        return {"similarity_fns": list(self.similarity_fns)}

    def _describe(self) -> str:
        return f"{len(self)} pairs, similarity_fns={list(self.similarity_fns)}"
