"""TripletEvaluator: how often an encoder puts the anchor closer to the positive than to the negative."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..similarity import PAIRWISE_FUNCTIONS, pairwise_similarity
from ..training.examples import Example
from .sts import SIMILARITY_FNS, SupportsEncode

logger = logging.getLogger(__name__)


def encode_texts(
    encoder: SupportsEncode,
    texts: Sequence[str],
    *,
    batch_size: int,
    prompt_name: str | None = None,
    prompt: str | None = None,
    show_progress_bar: bool | None = None,
) -> np.ndarray:
    """Embeddings of `texts` as a float64 (len(texts), dim) array, encoding each distinct text once.

    `prompt_name` and `prompt` are passed to `encoder.encode` only when set, so encoders without
    prompt support work too. Shared by the evaluators.
    """
    unique = list(dict.fromkeys(texts))
    options: dict[str, Any] = {"batch_size": batch_size, "show_progress_bar": show_progress_bar}
    if prompt_name is not None:
        options["prompt_name"] = prompt_name
    if prompt is not None:
        options["prompt"] = prompt
    vectors = np.asarray(encoder.encode(unique, **options), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise ValueError(
            f"encoder returned shape {vectors.shape} for {len(unique)} sentences, "
            f"expected ({len(unique)}, dim)"
        )
    row = {text: i for i, text in enumerate(unique)}
    return vectors[[row[t] for t in texts]]


def check_similarity_fns(similarity_fns: Sequence[str] | str, main_similarity: str | None) -> tuple[str, ...]:
    """Validated, de-duplicated similarity function names (a single name may be given as a string)."""
    if isinstance(similarity_fns, str):
        similarity_fns = (similarity_fns,)
    if not similarity_fns:
        raise ValueError("similarity_fns is empty")
    for fn in (*similarity_fns, *([main_similarity] if main_similarity else [])):
        if fn not in PAIRWISE_FUNCTIONS:
            raise ValueError(f"unknown similarity function {fn!r}; choose from {', '.join(SIMILARITY_FNS)}")
    if main_similarity is not None and main_similarity not in similarity_fns:
        raise ValueError(
            f"main_similarity {main_similarity!r} is not among similarity_fns {list(similarity_fns)}"
        )
    return tuple(dict.fromkeys(similarity_fns))


class TripletEvaluator:
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
        if not len(anchors) == len(positives) == len(negatives):
            raise ValueError(
                f"anchors, positives and negatives differ in length: "
                f"{len(anchors)}, {len(positives)}, {len(negatives)}"
            )
        if not anchors:
            raise ValueError("no triplets to evaluate")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
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
        self.name = name
        self.batch_size = batch_size
        self.main_similarity = main_similarity
        self.prompt_name = prompt_name
        self.prompt = prompt
        self.show_progress_bar = show_progress_bar
        self.primary_metric: str | None = f"{main_similarity}_accuracy" if main_similarity else None

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
        main = self.main_similarity or getattr(encoder, "similarity_fn_name", None) or "cosine"
        fns = self.similarity_fns if main in self.similarity_fns else (*self.similarity_fns, main)
        n = len(self.anchors)
        vectors = encode_texts(
            encoder,
            [*self.anchors, *self.positives, *self.negatives],
            batch_size=self.batch_size,
            prompt_name=self.prompt_name,
            prompt=self.prompt,
            show_progress_bar=self.show_progress_bar,
        )
        anchors, positives, negatives = vectors[:n], vectors[n : 2 * n], vectors[2 * n :]
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

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the numbers; unset ones and a zero margin are left out."""
        config: dict[str, Any] = {"similarity_fns": list(self.similarity_fns)}
        if any(self.margin.values()):
            config["margin"] = dict(self.margin)
        for key in ("main_similarity", "prompt_name", "prompt"):
            value = getattr(self, key)
            if value is not None:
                config[key] = value
        return config

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"TripletEvaluator({name}{len(self)} triplets, similarity_fns={list(self.similarity_fns)})"
