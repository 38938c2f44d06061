"""TranslationEvaluator: is each sentence's nearest neighbour in the other language its translation?"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.checks import check_same_length
from ..data.parallel import ParallelData
from ..similarity import MATRIX_FUNCTIONS, similarity
from .base import Evaluator, SupportsEncode

logger = logging.getLogger(__name__)

# Rows of the similarity matrix computed at once, so that large sets do not need an n x n matrix.
CHUNK_ROWS = 1024


class TranslationEvaluator(Evaluator):
    """Translation matching accuracy in both directions over parallel sentences.

    With source embeddings s_1..s_n, target embeddings t_1..t_n (t_i translates s_i) and similarity f
    (cosine by default),

        src2trg_accuracy = (1/n) sum_i [ targets[argmax_j f(s_i, t_j)] == targets[i] ]
        trg2src_accuracy = (1/n) sum_j [ sources[argmax_i f(s_i, t_j)] == sources[j] ]
        mean_accuracy    = (src2trg_accuracy + trg2src_accuracy) / 2     (the primary metric)

    A match counts when the retrieved sentence has the same text as the expected one, so repeated
    sentences do not count against the encoder; ties go to the first candidate. Key names as in
    sentence-transformers' ``TranslationEvaluator`` (not prefixed with `name`). The similarity matrix
    is computed in blocks of rows, never whole.
    """

    def __init__(
        self,
        source_sentences: Sequence[str],
        target_sentences: Sequence[str],
        name: str = "",
        batch_size: int = 32,
        similarity_fn: str = "cosine",
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
    ) -> None:
        check_same_length(source_sentences=source_sentences, target_sentences=target_sentences)
        if not source_sentences:
            raise ValueError("no sentence pairs to evaluate")
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, "mean_accuracy")
        if similarity_fn not in MATRIX_FUNCTIONS:
            raise ValueError(
                f"unknown similarity function {similarity_fn!r}; choose from {', '.join(MATRIX_FUNCTIONS)}"
            )
        self.source_sentences = list(source_sentences)
        self.target_sentences = list(target_sentences)
        self.similarity_fn = similarity_fn

    @classmethod
    def from_data(cls, data: ParallelData, **kwargs: Any) -> TranslationEvaluator:
        """An evaluator over the pairs of `data` (e.g. from `read_parallel` or `align_stsb_korsts`)."""
        return cls(data.sources, data.targets, **kwargs)

    def __len__(self) -> int:
        return len(self.source_sentences)

    def _matches(self, queries: np.ndarray, candidates: np.ndarray, expected: list[str]) -> float:
        """Fraction of queries whose most similar candidate has the text of `expected[query]`."""
        correct = 0
        for start in range(0, len(queries), CHUNK_ROWS):
            scores = np.asarray(
                similarity(queries[start : start + CHUNK_ROWS], candidates, self.similarity_fn)
            )
            best = np.argmax(scores, axis=1)
            correct += sum(expected[start + i] == expected[int(j)] for i, j in enumerate(best))
        return correct / len(queries)

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode both sides and return the matching accuracy in each direction and their mean."""
        sources, targets = self.encode_columns(encoder, self.source_sentences, self.target_sentences)
        src2trg = self._matches(sources, targets, self.target_sentences)
        trg2src = self._matches(targets, sources, self.source_sentences)
        logger.info(
            "Translation matching %s: src2trg %.4f, trg2src %.4f", self.name or "evaluation", src2trg, trg2src
        )
        return {
            "src2trg_accuracy": src2trg,
            "trg2src_accuracy": trg2src,
            "mean_accuracy": (src2trg + trg2src) / 2,
        }

    def _settings(self) -> dict[str, Any]:
        return {"similarity_fn": self.similarity_fn}

    def _describe(self) -> str:
        return f"{len(self)} sentence pairs, similarity_fn={self.similarity_fn!r}"
