"""CrossEncoderRerankingEvaluator: MRR@k, nDCG@k and MAP after re-ordering each query's candidates.

Each sample is a query, its relevant documents and a candidate list (for example a bi-encoder's top
100). The cross-encoder scores (query, candidate) for every candidate, and the candidates are ranked
by that score; relevant documents missing from the candidates count as not found. The same metrics
for the candidates' given order are reported with a `base_` prefix, so one call shows what
reranking adds. Definitions in `munjang.evaluation.retrieval_metrics`; primary metric: ndcg@k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ....evaluation.retrieval_metrics import average_precision, mrr_at_k, ndcg_at_k
from .base import CrossEncoderEvaluator, SupportsPredict


class CrossEncoderRerankingEvaluator(CrossEncoderEvaluator):
    """Reranking quality over samples `{"query": str, "positive": [str], "documents": [str]}`."""

    def __init__(
        self,
        samples: Sequence[Mapping[str, Any]],
        *,
        at_k: int = 10,
        name: str = "",
        batch_size: int = 64,
        show_progress_bar: bool | None = None,
    ) -> None:
        super().__init__(name, batch_size, show_progress_bar, f"ndcg@{at_k}")
        if at_k < 1:
            raise ValueError(f"at_k must be at least 1, not {at_k}")
        if not samples:
            raise ValueError("no samples to evaluate")
        self.samples = []
        for i, sample in enumerate(samples):
            missing = {"query", "positive", "documents"} - set(sample)
            if missing:
                raise ValueError(f"samples[{i}] lacks {', '.join(sorted(missing))}")
            if not sample["positive"]:
                raise ValueError(f"samples[{i}] has no positive document")
            self.samples.append(
                (str(sample["query"]), set(sample["positive"]), [str(d) for d in sample["documents"]])
            )
        self.at_k = at_k

    def __len__(self) -> int:
        return len(self.samples)

    def __call__(self, model: SupportsPredict) -> dict[str, float]:
        pairs = [(query, doc) for query, _, docs in self.samples for doc in docs]
        scores = self.scores(model, pairs) if pairs else np.zeros(0)
        k = self.at_k
        reranked, given = [], []
        offset = 0
        for _, positives, docs in self.samples:
            own = scores[offset : offset + len(docs)]
            offset += len(docs)
            order = np.argsort(-own, kind="stable")
            reranked.append(([docs[i] for i in order], positives))
            given.append((docs, positives))
        out: dict[str, float] = {}
        for prefix, rankings in (("", reranked), ("base_", given)):
            out[f"{prefix}mrr@{k}"] = float(np.mean([mrr_at_k(r, p, k) for r, p in rankings]))
            out[f"{prefix}ndcg@{k}"] = float(np.mean([ndcg_at_k(r, p, k) for r, p in rankings]))
            out[f"{prefix}map"] = float(np.mean([average_precision(r, p) for r, p in rankings]))
        return out

    def get_config_dict(self) -> dict[str, Any]:
        return {"at_k": self.at_k}
