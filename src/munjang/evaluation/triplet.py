"""TripletEvaluator: how often an encoder puts the anchor closer to the positive than to the negative."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.checks import check_same_length
from ..data.example import Example
from ..similarity import PAIRWISE_FUNCTIONS, pairwise_similarity
from .base import (
    SIMILARITY_FNS,
    Evaluator,
    SupportsEncode,
    check_similarity_fns,
    encode_texts,
    similarity_fns_to_compute,
)

__all__ = ["TripletEvaluator", "check_similarity_fns", "encode_texts"]

logger = logging.getLogger(__name__)


class TripletEvaluator(Evaluator):
    """Triplet accuracy: the fraction of (anchor, positive, negative) triplets ranked the right way.

    For each similarity function f (cosine, dot, negated euclidean, negated manhattan distance, so that
    larger always means closer) and triplets (a_i, p_i, n_i),

        {f}_accuracy = (1/n) sum_i [ f(E(a_i), E(p_i)) > f(E(a_i), E(n_i)) + margin_f ]

    with a strict inequality, so a tie counts as wrong. Calling the evaluator returns
    ``{"cosine_accuracy": ..., "dot_accuracy": ..., ...}`` (key names as in sentence-transformers'
    ``TripletEvaluator``, not prefixed with `name`) and sets `primary_metric` to
    ``<main_similarity>_accuracy``, or ``<encoder.similarity_fn_name>_accuracy`` when no main similarity
    was given. Each distinct sentence is encoded once.
    """

    optional_settings = ("main_similarity", "prompt_name", "prompt")

    def __init__(
        self,
        anchors: Sequence[str],
        positives: Sequence[str],
        negatives: Sequence[str],
        name: str = "",
        batch_size: int = 32,
        similarity_fns: Sequence[str] = SIMILARITY_FNS,
        main_similarity: str | None = None,
        margin: float | Mapping[str, float] = 0.0,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
    ) -> None:
        check_same_length(anchors=anchors, positives=positives, negatives=negatives)
        if not anchors:
            raise ValueError("no triplets to evaluate")
        primary = f"{main_similarity}_accuracy" if main_similarity else None
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, primary)
        self.similarity_fns = check_similarity_fns(similarity_fns, main_similarity)
        if isinstance(margin, Mapping):
            unknown = sorted(set(margin) - set(PAIRWISE_FUNCTIONS))
            if unknown:
                raise ValueError(f"margin has unknown similarity functions {unknown}")
            self.margin = {fn: float(margin.get(fn, 0.0)) for fn in PAIRWISE_FUNCTIONS}
        else:
            self.margin = {fn: float(margin) for fn in PAIRWISE_FUNCTIONS}
        self.anchors = list(anchors)
        self.positives = list(positives)
        self.negatives = list(negatives)
        self.main_similarity = main_similarity

    @classmethod
    def from_examples(cls, examples: Sequence[Example], **kwargs: Any) -> TripletEvaluator:
        """An evaluator over (anchor, positive, negative) Examples, e.g. from `nli_triplet_examples`."""
        bad = next((i for i, e in enumerate(examples) if len(e.texts) != 3), None)
        if bad is not None:
            raise ValueError(f"examples[{bad}] has {len(examples[bad].texts)} texts, a triplet needs 3")
        return cls(
            [e.texts[0] for e in examples],
            [e.texts[1] for e in examples],
            [e.texts[2] for e in examples],
            **kwargs,
        )

    def __len__(self) -> int:
        return len(self.anchors)

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the triplets and return the accuracy for each similarity function."""
        main, fns = similarity_fns_to_compute(encoder, self.similarity_fns, self.main_similarity)
        anchors, positives, negatives = self.encode_columns(
            encoder, self.anchors, self.positives, self.negatives
        )
        metrics: dict[str, float] = {}
        for fn in fns:
            positive = np.asarray(pairwise_similarity(anchors, positives, fn))
            negative = np.asarray(pairwise_similarity(anchors, negatives, fn))
            metrics[f"{fn}_accuracy"] = float(np.mean(positive > negative + self.margin[fn]))
            logger.info(
                "Triplet %s %s accuracy: %.4f", self.name or "evaluation", fn, metrics[f"{fn}_accuracy"]
            )
        self.primary_metric = f"{main}_accuracy"
        return metrics

    def _settings(self) -> dict[str, Any]:
        """The similarity functions, and the margins unless all are zero."""
        config: dict[str, Any] = {"similarity_fns": list(self.similarity_fns)}
        if any(self.margin.values()):
            config["margin"] = dict(self.margin)
        return config

    def _describe(self) -> str:
        return f"{len(self)} triplets, similarity_fns={list(self.similarity_fns)}"
