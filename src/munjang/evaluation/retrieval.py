"""Retrieval evaluation: score ranked document lists against relevance judgements.

`evaluate_rankings` scores any ranked lists (dense, BM25, hybrid, reranked), so every method is measured
by the same code; `InformationRetrievalEvaluator` encodes queries and corpus with an encoder, ranks the
corpus with `munjang.search.semantic_search` and scores the rankings with `evaluate_rankings`.

For a query with ranking r_1, r_2, ... and relevant documents R (grade > 0), over the top k:

    accuracy@k  = 1 if any r_i ∈ R, else 0
    precision@k = |top k ∩ R| / k
    recall@k    = |top k ∩ R| / |R|
    mrr@k       = 1 / (rank of the first relevant document), 0 if none
    ndcg@k      = DCG@k / IDCG@k with gain 1 per relevant document (or its grade, with `graded`)
    map@k       = Σ_{i ≤ k, r_i ∈ R} precision@i / min(k, |R|)

each averaged over the queries. These are the definitions (and the metric names) of sentence-transformers'
``InformationRetrievalEvaluator``; its results are reproduced exactly. BEIR's pytrec_eval differs in two
places: its nDCG uses the graded gains (``graded=True`` here) and its MAP@k divides by |R| rather than
min(k, |R|) (equal whenever a query has at most k relevant documents).

As in BEIR, MTEB and sentence-transformers, queries with no relevant document are not evaluated. A query
with relevant documents but no ranking counts as an empty ranking (every metric 0), so a method that
returns nothing for a query is penalised rather than skipped.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from ..data.beir import RetrievalData
from ..search.index.exact import semantic_search
from .base import Evaluator, SupportsEncode, check_similarity_fns, encode_texts, similarity_fns_to_compute
from .retrieval_metrics import average_precision, mrr_at_k, ndcg_at_k, recall_at_k

__all__ = ["InformationRetrievalEvaluator", "evaluate_rankings", "evaluate_rankings_per_query"]

logger = logging.getLogger(__name__)

#: Relevance judgements for one query: a collection of relevant ids, or {id: grade} (grade > 0 relevant).
Judgements = Collection[str] | Mapping[str, int]

QUERY_PROMPT_NAMES = ("query",)
CORPUS_PROMPT_NAMES = ("document", "passage", "corpus")


def _grades(judged: Judgements) -> dict[str, int]:
    """{document id: grade > 0} from a collection of ids (grade 1 each) or a graded mapping."""
    if isinstance(judged, Mapping):
        return {doc: int(grade) for doc, grade in judged.items() if grade > 0}
    if isinstance(judged, str):
        raise TypeError("relevance judgements must be a collection of ids or a mapping, not a string")
    return dict.fromkeys(judged, 1)


def _ks(values: Sequence[int] | int, what: str) -> tuple[int, ...]:
    """Sorted, de-duplicated cut-offs, each at least 1."""
    ks = (values,) if isinstance(values, int) else tuple(values)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{what} must hold integers of at least 1, got {k!r}")
    return tuple(sorted(set(ks)))


def _graded_ndcg(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """nDCG@k with the grade as the gain (pytrec_eval's ndcg_cut)."""
    dcg = sum(grades.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def _query_metrics(
    ranked: Sequence[str],
    grades: Mapping[str, int],
    k_values: tuple[int, ...],
    mrr_ks: tuple[int, ...],
    ndcg_ks: tuple[int, ...],
    map_ks: tuple[int, ...],
    graded: bool,
) -> dict[str, float]:
    relevant = grades.keys()
    out: dict[str, float] = {}
    for k in k_values:
        out[f"accuracy@{k}"] = 1.0 if mrr_at_k(ranked, relevant, k) > 0 else 0.0
    for k in k_values:
        out[f"precision@{k}"] = sum(1 for doc in ranked[:k] if doc in relevant) / k
    for k in k_values:
        out[f"recall@{k}"] = recall_at_k(ranked, relevant, k)
    for k in mrr_ks:
        out[f"mrr@{k}"] = mrr_at_k(ranked, relevant, k)
    for k in ndcg_ks:
        out[f"ndcg@{k}"] = _graded_ndcg(ranked, grades, k) if graded else ndcg_at_k(ranked, relevant, k)
    for k in map_ks:
        # average_precision divides by |R|; MAP@k divides by min(k, |R|).
        out[f"map@{k}"] = average_precision(ranked[:k], relevant) * len(relevant) / min(k, len(relevant))
    return out


def evaluate_rankings_per_query(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Judgements],
    k_values: Sequence[int] = (1, 3, 5, 10, 100),
    mrr_at_k: Sequence[int] = (10,),
    ndcg_at_k: Sequence[int] = (10,),
    map_at_k: Sequence[int] = (100,),
    *,
    graded: bool = False,
) -> dict[str, dict[str, float]]:
    """The metrics of `evaluate_rankings` for each evaluated query (for paired tests and error analysis).

    Returns ``{query id: {"ndcg@10": ..., ...}}`` for the queries of `qrels` with a relevant document.
    """
    ks = _ks(k_values, "k_values")
    mrr_ks = _ks(mrr_at_k, "mrr_at_k")
    ndcg_ks = _ks(ndcg_at_k, "ndcg_at_k")
    map_ks = _ks(map_at_k, "map_at_k")
    out: dict[str, dict[str, float]] = {}
    missing = 0
    for qid, judged in qrels.items():
        grades = _grades(judged)
        if not grades:
            continue
        ranked = rankings.get(qid)
        if ranked is None:
            missing += 1
            ranked = []
        elif isinstance(ranked, str):
            raise TypeError(f"the ranking of query {qid!r} is a string, not a list of document ids")
        elif len(set(ranked)) != len(ranked):
            raise ValueError(f"the ranking of query {qid!r} lists a document more than once")
        out[qid] = _query_metrics(list(ranked), grades, ks, mrr_ks, ndcg_ks, map_ks, graded)
    if not out:
        raise ValueError("no query has a relevant document (grade > 0), so there is nothing to evaluate")
    if missing:
        logger.warning("%d of %d evaluated queries have no ranking; they score 0", missing, len(out))
    return out


def evaluate_rankings(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Judgements],
    k_values: Sequence[int] = (1, 3, 5, 10, 100),
    mrr_at_k: Sequence[int] = (10,),
    ndcg_at_k: Sequence[int] = (10,),
    map_at_k: Sequence[int] = (100,),
    *,
    graded: bool = False,
) -> dict[str, float]:
    """Mean accuracy@k, precision@k, recall@k (for each of `k_values`), mrr@k, ndcg@k and map@k.

    `rankings` maps a query id to its document ids, best first (any method's output); `qrels` maps a query
    id to its relevant document ids, or to ``{document id: grade}`` (grade > 0 is relevant). Only queries
    with a relevant document are evaluated; one without a ranking scores 0; rankings of other queries are
    ignored. With `graded`, nDCG uses the grades as gains (as BEIR); otherwise every relevant document
    gains 1 (as sentence-transformers). Raises ValueError for a ranking that repeats a document.
    """
    per_query = evaluate_rankings_per_query(
        rankings, qrels, k_values, mrr_at_k, ndcg_at_k, map_at_k, graded=graded
    )
    names = next(iter(per_query.values())).keys()
    return {name: float(np.mean([m[name] for m in per_query.values()])) for name in names}


class InformationRetrievalEvaluator(Evaluator):
    """Retrieval quality of an encoder: rank a corpus for each query and score it against the qrels.

    Queries and documents are encoded with the encoder (each distinct text once), every document is scored
    against every query with each of `score_functions` (cosine, dot, euclidean, manhattan) by
    `semantic_search`, and the top max-k documents are scored with `evaluate_rankings`. Calling it returns
    ``{"cosine_accuracy@1": ..., "cosine_ndcg@10": ..., "cosine_map@100": ..., ...}`` and sets
    `primary_metric` to ``<main>_ndcg@<largest ndcg k>``, where main is `main_score_function`, else the
    encoder's `similarity_fn_name`, else cosine (computed as well when not in `score_functions`).

    Prompts: queries are encoded with `query_prompt_name` / `query_prompt` and documents with
    `corpus_prompt_name` / `corpus_prompt`. When neither of a pair is given and the encoder has a prompt
    named "query" (for queries) or "document", "passage" or "corpus" (for documents, first found), it is
    used, as sentence-transformers' ``encode_query`` / ``encode_document`` do: e5 gets "query: " and
    "passage: ". (sentence-transformers 6 adds a blank "document" prompt to every model, which then wins
    over "passage", so its evaluator encodes e5 documents without "passage: " unless told
    ``corpus_prompt_name="passage"``.) Pass ``query_prompt=""`` to encode without one.

    Documents are ranked in sorted-id order, so equal scores rank the smaller id first, as in
    sentence-transformers. The corpus is encoded `corpus_chunk_size` documents at a time, keeping only the
    running top k, so memory stays bounded for large corpora. Modeled on (and numerically equal to)
    sentence-transformers' ``InformationRetrievalEvaluator``.
    """

    optional_settings = (
        "main_score_function",
        "query_prompt_name",
        "query_prompt",
        "corpus_prompt_name",
        "corpus_prompt",
    )

    def __init__(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        relevant_docs: Mapping[str, Judgements],
        k_values: Sequence[int] = (1, 3, 5, 10, 100),
        mrr_at_k: Sequence[int] = (10,),
        ndcg_at_k: Sequence[int] = (10,),
        map_at_k: Sequence[int] = (100,),
        score_functions: Sequence[str] | str = ("cosine",),
        main_score_function: str | None = None,
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        query_prompt_name: str | None = None,
        query_prompt: str | None = None,
        corpus_prompt_name: str | None = None,
        corpus_prompt: str | None = None,
        corpus_chunk_size: int = 50_000,
        graded: bool = False,
    ) -> None:
        self.k_values = _ks(k_values, "k_values")
        self.mrr_at_k = _ks(mrr_at_k, "mrr_at_k")
        self.ndcg_at_k = _ks(ndcg_at_k, "ndcg_at_k")
        self.map_at_k = _ks(map_at_k, "map_at_k")
        if not self.ndcg_at_k:
            raise ValueError("ndcg_at_k is empty, but the primary metric is nDCG")
        if corpus_chunk_size < 1:
            raise ValueError(f"corpus_chunk_size must be at least 1, not {corpus_chunk_size}")
        self.score_functions = check_similarity_fns(score_functions, main_score_function)
        primary = f"{main_score_function}_ndcg@{max(self.ndcg_at_k)}" if main_score_function else None
        super().__init__(name, batch_size, None, None, show_progress_bar, primary)
        self.main_score_function = main_score_function
        self.query_prompt_name = query_prompt_name
        self.query_prompt = query_prompt
        self.corpus_prompt_name = corpus_prompt_name
        self.corpus_prompt = corpus_prompt
        self.corpus_chunk_size = corpus_chunk_size
        self.graded = graded

        grades = {qid: _grades(judged) for qid, judged in relevant_docs.items()}
        self.relevant_docs = {qid: g for qid, g in grades.items() if g and qid in queries}
        without_text = sum(1 for qid, g in grades.items() if g and qid not in queries)
        if without_text:
            logger.warning(
                "%d queries in relevant_docs are not in queries and are not evaluated", without_text
            )
        self.query_ids = [qid for qid in queries if qid in self.relevant_docs]
        if not self.query_ids:
            raise ValueError("no query has a relevant document (grade > 0), so there is nothing to evaluate")
        self.queries = [queries[qid] for qid in self.query_ids]
        if not corpus:
            raise ValueError("the corpus is empty")
        self.corpus_ids = sorted(corpus)
        self.corpus = [corpus[doc_id] for doc_id in self.corpus_ids]

    @classmethod
    def from_data(cls, data: RetrievalData, **kwargs: Any) -> InformationRetrievalEvaluator:
        """An evaluator over `data` (e.g. from `load_beir` or `sts_retrieval_set`); documents are encoded
        as ``title + " " + text`` (`RetrievalData.corpus_texts`) and the qrels grades are kept."""
        return cls(data.queries, data.corpus_texts(), data.qrels, **kwargs)

    def __len__(self) -> int:
        return len(self.query_ids)

    @property
    def max_k(self) -> int:
        """How many documents are kept per query: the largest cut-off of any metric."""
        return max((*self.k_values, *self.mrr_at_k, *self.ndcg_at_k, *self.map_at_k))

    def _prompts(
        self, encoder: SupportsEncode, name: str | None, text: str | None, candidates: Sequence[str]
    ) -> dict[str, Any]:
        """prompt_name / prompt for one side: as given, else the encoder's first prompt among `candidates`."""
        if name is None and text is None:
            prompts = getattr(encoder, "prompts", None) or {}
            name = next((c for c in candidates if c in prompts), None)
        return {"prompt_name": name, "prompt": text}

    def rank(self, encoder: SupportsEncode, score_function: str = "cosine") -> dict[str, list[str]]:
        """Query id -> the top `max_k` document ids for `score_function`, best first."""
        return self._rank(encoder, (score_function,))[score_function]

    def _rank(
        self, encoder: SupportsEncode, score_functions: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        options: dict[str, Any] = {"batch_size": self.batch_size, "show_progress_bar": self.show_progress_bar}
        query_vectors = encode_texts(
            encoder,
            self.queries,
            **options,
            **self._prompts(encoder, self.query_prompt_name, self.query_prompt, QUERY_PROMPT_NAMES),
        )
        corpus_prompts = self._prompts(
            encoder, self.corpus_prompt_name, self.corpus_prompt, CORPUS_PROMPT_NAMES
        )
        best: dict[str, list[list[tuple[float, int]]]] = {
            fn: [[] for _ in self.queries] for fn in score_functions
        }
        for start in range(0, len(self.corpus), self.corpus_chunk_size):
            chunk = encode_texts(
                encoder, self.corpus[start : start + self.corpus_chunk_size], **options, **corpus_prompts
            )
            for fn in score_functions:
                hits = semantic_search(query_vectors, chunk, top_k=self.max_k, score_function=fn)
                for kept, query_hits in zip(best[fn], hits, strict=True):
                    kept.extend((hit.score, start + hit.corpus_id) for hit in query_hits)
                    kept.sort(key=lambda item: (-item[0], item[1]))
                    del kept[self.max_k :]
        return {
            fn: {
                qid: [self.corpus_ids[row] for _, row in kept]
                for qid, kept in zip(self.query_ids, best[fn], strict=True)
            }
            for fn in score_functions
        }

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode, rank and return every metric for each score function (keys ``<function>_<metric>@k``)."""
        main, fns = similarity_fns_to_compute(encoder, self.score_functions, self.main_score_function)
        rankings = self._rank(encoder, fns)
        metrics: dict[str, float] = {}
        for fn in fns:
            scores = evaluate_rankings(
                rankings[fn],
                self.relevant_docs,
                self.k_values,
                self.mrr_at_k,
                self.ndcg_at_k,
                self.map_at_k,
                graded=self.graded,
            )
            metrics.update({f"{fn}_{metric}": value for metric, value in scores.items()})
            k = max(self.ndcg_at_k)
            logger.info(
                "Retrieval %s %s: %d queries, %d documents, nDCG@%d %.4f",
                self.name or "evaluation",
                fn,
                len(self),
                len(self.corpus),
                k,
                scores[f"ndcg@{k}"],
            )
        self.primary_metric = f"{main}_ndcg@{max(self.ndcg_at_k)}"
        return metrics

    def _settings(self) -> dict[str, Any]:
        return {
            "score_functions": list(self.score_functions),
            "k_values": list(self.k_values),
            "mrr_at_k": list(self.mrr_at_k),
            "ndcg_at_k": list(self.ndcg_at_k),
            "map_at_k": list(self.map_at_k),
            "graded": self.graded,
        }

    def _describe(self) -> str:
        return (
            f"{len(self)} queries, {len(self.corpus)} documents, score_functions={list(self.score_functions)}"
        )
