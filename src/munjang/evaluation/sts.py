"""STSEvaluator: how well an encoder's similarities rank sentence pairs the way people scored them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from scipy.stats import pearsonr, spearmanr

from ..data.sts import STSData
from ..similarity import PAIRWISE_FUNCTIONS, pairwise_similarity

logger = logging.getLogger(__name__)

SIMILARITY_FNS = ("cosine", "dot", "euclidean", "manhattan")


class SupportsEncode(Protocol):
    """What the evaluator needs from an encoder: `encode(list_of_str, **options) -> (n, dim) array`."""

    @property
    def encode(self) -> Callable[..., Any]: ...


class STSEvaluator:
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
        if not len(sentences1) == len(sentences2) == len(scores):
            raise ValueError(
                f"sentences1, sentences2 and scores differ in length: "
                f"{len(sentences1)}, {len(sentences2)}, {len(scores)}"
            )
        if len(scores) < 2:
            raise ValueError(f"correlation needs at least 2 pairs, got {len(scores)}")
        gold = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(gold).all():
            raise ValueError("gold scores must be finite numbers")
        if np.all(gold == gold[0]):
            raise ValueError("all gold scores are equal, so no correlation is defined")
        if isinstance(similarity_fns, str):
            similarity_fns = (similarity_fns,)
        if not similarity_fns:
            raise ValueError("similarity_fns is empty")
        for fn in (*similarity_fns, *([main_similarity] if main_similarity else [])):
            if fn not in PAIRWISE_FUNCTIONS:
                raise ValueError(
                    f"unknown similarity function {fn!r}; choose from {', '.join(SIMILARITY_FNS)}"
                )
        if main_similarity is not None and main_similarity not in similarity_fns:
            raise ValueError(
                f"main_similarity {main_similarity!r} is not among similarity_fns {similarity_fns}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")

        self.sentences1 = list(sentences1)
        self.sentences2 = list(sentences2)
        self.scores = gold.tolist()
        self.name = name
        self.batch_size = batch_size
        self.similarity_fns = tuple(dict.fromkeys(similarity_fns))
        self.main_similarity = main_similarity
        self.prompt_name = prompt_name
        self.prompt = prompt
        self.show_progress_bar = show_progress_bar
        # Known now if main_similarity is given; otherwise set from the encoder on each call.
        self.primary_metric: str | None = f"spearman_{main_similarity}" if main_similarity else None

    @classmethod
    def from_data(cls, data: STSData, **kwargs: Any) -> STSEvaluator:
        """An evaluator over the pairs and scores of `data` (e.g. from `munjang.data.read_sts`)."""
        return cls(data.sentences1, data.sentences2, data.scores, **kwargs)

    def __len__(self) -> int:
        return len(self.scores)

    def embed(self, encoder: SupportsEncode) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings of both sides, (n, dim) each, encoding every distinct sentence once."""
        unique = list(dict.fromkeys([*self.sentences1, *self.sentences2]))
        options: dict[str, Any] = {"batch_size": self.batch_size, "show_progress_bar": self.show_progress_bar}
        if self.prompt_name is not None:
            options["prompt_name"] = self.prompt_name
        if self.prompt is not None:
            options["prompt"] = self.prompt
        vectors = np.asarray(encoder.encode(unique, **options), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != len(unique):
            raise ValueError(
                f"encoder returned shape {vectors.shape} for {len(unique)} sentences, "
                f"expected ({len(unique)}, dim)"
            )
        row = {sentence: i for i, sentence in enumerate(unique)}
        return (
            vectors[[row[s] for s in self.sentences1]],
            vectors[[row[s] for s in self.sentences2]],
        )

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the pairs and return Pearson and Spearman correlations for each similarity function.

        The encoder's own `similarity_fn_name`, when it is the primary one and not in `similarity_fns`, is
        computed as well. A correlation is NaN when the encoder gives every pair the same similarity.
        """
        main = self.main_similarity or getattr(encoder, "similarity_fn_name", None) or "cosine"
        fns = self.similarity_fns if main in self.similarity_fns else (*self.similarity_fns, main)
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

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the numbers (for model cards and result logs); unset ones are left out."""
        config: dict[str, Any] = {"similarity_fns": list(self.similarity_fns)}
        for key in ("main_similarity", "prompt_name", "prompt"):
            value = getattr(self, key)
            if value is not None:
                config[key] = value
        return config

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"STSEvaluator({name}{len(self)} pairs, similarity_fns={list(self.similarity_fns)})"
