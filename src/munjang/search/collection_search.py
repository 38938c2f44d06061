"""Searching a collection: dense, lexical (BM25), sparse and hybrid retrieval over its passages, filters,
grouping into documents, and an optional cross-encoder rerank. `Collection` mixes this in; it holds
the store and the indexes (`collection.py`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..images import is_image_input
from .filters import compile_filter
from .hybrid import FUSIONS, fuse
from .results import AGGREGATES, UNITS, Ranked, SearchHit, by_document, hit
from .storage import DenseSearch, Store
from .store import Document

MODES = ("dense", "lexical", "sparse", "hybrid")
# Hybrid default: z-scored dense and BM25 scores, summed with equal weights: nothing tuned, so nothing
# fitted to one set. bench/korean_retrieval.py compares settings leave-one-set-out over five Korean
# retrieval sets (document, question, paraphrase, sentence); tuned weights and RRF lose more on the
# held-out set than this setting, which is never significantly below the better of BM25 and dense.
HYBRID_FUSION = "weighted"
HYBRID_WEIGHTS = (0.5, 0.5)
HYBRID_NORMALIZATION = "zscore"
# Passages fetched per document wanted when documents are stored as several passages, so that
# grouping passages into documents still leaves enough distinct documents to rank.
PASSAGES_PER_DOCUMENT = 4


class CollectionSearch:
    """The search half of `Collection` (see `collection.py` for the attributes it reads)."""

    store: Store
    dense: DenseSearch
    lexical: Any
    sparse: Any  # a SparseRetriever, or None for a collection without a sparse model
    config: dict[str, Any]
    _device: str | None
    _cross_encoders: dict[str, Any]

    if TYPE_CHECKING:

        def _encode(
            self, texts: Sequence[str], prompt_name: str | None, batch_size: int, progress: bool
        ) -> np.ndarray: ...

        def _tokenizer(self) -> Any: ...

    def sample(
        self, limit: int = 2000, filter: Mapping[str, Any] | None = None
    ) -> tuple[list[Document], np.ndarray]:
        """Up to `limit` documents spread evenly over the collection (in insertion order), with
        their stored vectors: what a 2-D map of the collection draws."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        labels = self.store.labels_matching(*compile_filter(filter, dialect=self.store.dialect))
        if len(labels) > limit:
            labels = labels[np.linspace(0, len(labels) - 1, limit).round().astype(np.int64)]
        docs = self.store.documents(labels.tolist())
        vectors = self.store.vectors_of(self.config["model"], self.config["dim"], labels)
        return [docs[int(label)] for label in labels], vectors

    def matched_terms(self, query: str, hits: Sequence[SearchHit]) -> list[list[str]]:
        """The query's lexical (BM25) terms that each hit's passage contains, in query order: why a
        keyword match ranked (shown beside hybrid and lexical results). Passages are read as BM25
        indexed them (their stored tokens), not tokenized again."""
        terms = list(dict.fromkeys(self._tokenizer()(query)))
        stored = self.store.tokens_of([h.label for h in hits])
        return [[t for t in terms if t in set(stored.get(h.label, ()))] for h in hits]

    def search(
        self,
        query: str | Sequence[str],
        k: int = 10,
        *,
        mode: str = "dense",
        filter: Mapping[str, Any] | None = None,
        fusion: str | None = None,
        weights: Sequence[float] | None = None,
        rrf_k: float = 60.0,
        normalization: str | None = None,
        candidates: int = 100,
        rerank: Any = None,
        rerank_k: int | None = None,
        unit: str = "document",
        aggregate: str = "max",
        batch_size: int = 32,
    ) -> Any:
        """The k best documents for a query (a list of hits) or for each of several queries.

        - mode: "dense", "lexical", "sparse" (a collection with a sparse model) or "hybrid" (the
          candidates of every retriever the collection has, `retrievers(...)`, fused by `fusion`,
          "weighted" (default) or "rrf", with `weights` (one per retriever, in that order; None:
          equal) and `normalization` for weighted (None: "zscore"); see HYBRID_FUSION for how they
          were chosen).
        - filter: metadata conditions (see `filters.py`), applied before ranking.
        - candidates: how many each retriever hands to fusion and rerank.
        - rerank: a cross-encoder (or its folder / hub id) that re-scores the best `rerank_k`
          (default `candidates`) results by reading query and document together.
        - unit: "document" (each document once, as its best passage, scored by `aggregate`: "max"
          or "sum", see `results.py`) or "passage" (passages ranked on their own).
        """
        single = isinstance(query, str) or is_image_input(query)
        queries: list[Any] = [query] if single else list(query)
        for i, q in enumerate(queries):
            if is_image_input(q) and (mode != "dense" or rerank is not None):
                raise ValueError(f"query {i} is an image: images search in dense mode, without rerank")
            if is_image_input(q):
                continue
            if not isinstance(q, str):
                raise TypeError(f"query {i} is {type(q).__name__}, not str")
            if not q.strip():
                raise ValueError(f"query {i} is empty")
        names = self.retrievers(mode)
        fusion = HYBRID_FUSION if fusion is None else fusion
        normalization = HYBRID_NORMALIZATION if normalization is None else normalization
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        if k < 1 or candidates < 1:
            raise ValueError(f"k and candidates must be at least 1 (got {k}, {candidates})")
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}; choose one of {', '.join(UNITS)}")
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}; choose one of {', '.join(AGGREGATES)}")
        pool = max(k, candidates) if (mode == "hybrid" or rerank is not None) else k
        grouped = unit == "document" and self.store.has_passages()
        fetch = pool * PASSAGES_PER_DOCUMENT if grouped else pool
        allowed = where = None
        if filter is not None:
            where = compile_filter(filter, dialect=self.store.dialect)
            if not self.dense.sql_filters or mode != "dense":
                allowed = self.store.labels_matching(*where)
        runs = {name: self._retrieve(name, queries, fetch, allowed, where, batch_size) for name in names}
        results: list[list[SearchHit]] = []
        for i, q in enumerate(queries):
            if mode == "hybrid":
                fused = fuse(
                    [runs[name][i] for name in names],
                    method=fusion,
                    weights=_hybrid_weights(len(names)) if weights is None else weights,
                    rrf_k=rrf_k,
                    normalization=normalization,
                    top_k=fetch,
                )
                ranked = [(cast(int, h.key), h.score, _stage_scores(names, h.scores, h.score)) for h in fused]
            else:
                ranked = [(label, score, {mode: score}) for label, score in runs[mode][i]]
            results.append(self._hits(q, ranked, k, rerank, rerank_k or pool, batch_size, grouped, aggregate))
        return results[0] if single else results

    def retrievers(self, mode: str) -> list[str]:
        """The retrievers a search `mode` runs: itself, or for "hybrid" every one the collection has
        (dense, lexical, and sparse when it has a sparse model), in the order hybrid `weights` take."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if mode == "sparse" and self.sparse is None:
            raise ValueError("this collection has no sparse retriever (create it with sparse_model=...)")
        if mode != "hybrid":
            return [mode]
        return ["dense", "lexical"] + (["sparse"] if self.sparse is not None else [])

    def _retrieve(
        self,
        name: str,
        queries: list[str],
        k: int,
        allowed: np.ndarray | None,
        where: tuple[str, list[Any]] | None,
        batch_size: int,
    ) -> list[list[tuple[int, float]]]:
        """One retriever's top-k (label, score) per query."""
        if name == "dense":
            return self._dense_search(queries, k, allowed, where, batch_size)
        if name == "lexical":
            return self._lexical_search(queries, k, allowed)
        results: list[list[tuple[int, float]]] = self.sparse.search(self.store, queries, k, allowed)
        return results

    def _dense_search(
        self,
        queries: list[str],
        k: int,
        allowed: np.ndarray | None,
        where: tuple[str, list[Any]] | None,
        batch_size: int,
    ) -> list[list[tuple[int, float]]]:
        self.dense.sync(self.store)
        if (allowed is not None and len(allowed) == 0) or not self.dense.index:  # empty: skip encoding
            return [[] for _ in queries]
        vectors = self._encode(queries, self.config["query_prompt_name"], batch_size, False)
        labels, scores = self.dense.search(self.store, vectors, k, allowed, where)
        return [
            [(int(x), float(s)) for x, s in zip(row_l, row_s, strict=True) if x >= 0]
            for row_l, row_s in zip(labels, scores, strict=True)
        ]

    def _lexical_search(
        self, queries: list[str], k: int, allowed: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        self.lexical.sync(self.store)
        bm25, labels = self.lexical.current()
        if len(labels) == 0:
            return [[] for _ in queries]
        tokenizer = self._tokenizer()
        rows = None if allowed is None else np.flatnonzero(np.isin(labels, allowed))
        if rows is not None and len(rows) == 0:
            return [[] for _ in queries]
        hits = bm25.search_tokens([tokenizer(q) for q in queries], k, rows=rows)
        return [[(int(labels[h.row]), float(h.score)) for h in row_hits] for row_hits in hits]

    def _hits(
        self,
        query: str,
        ranked: Ranked,
        k: int,
        rerank: Any,
        rerank_k: int,
        batch_size: int,
        grouped: bool,
        aggregate: str,
    ) -> list[SearchHit]:
        docs = self.store.documents([label for label, _, _ in ranked])
        # A label the index still had but the database no longer has was deleted meanwhile.
        ranked = [r for r in ranked if r[0] in docs]
        if grouped:
            ranked = by_document(ranked, docs, aggregate)
        if rerank is not None and ranked:
            cross = self._cross_encoder(rerank)
            head = ranked[:rerank_k]
            texts = [docs[label].text for label, _, _ in head]
            order = cross.rank(query, texts, batch_size=batch_size, show_progress_bar=False)
            ranked = [
                (head[h["corpus_id"]][0], h["score"], {**head[h["corpus_id"]][2], "rerank": h["score"]})
                for h in order
            ]
        return [hit(docs[label], score, stages) for label, score, stages in ranked[:k]]

    def _cross_encoder(self, rerank: Any) -> Any:
        if not isinstance(rerank, (str, os.PathLike)):
            return rerank
        key = str(rerank)
        if key not in self._cross_encoders:
            from ..cross_encoder import load_cross_encoder

            self._cross_encoders[key] = load_cross_encoder(key, device=self._device)
        return self._cross_encoders[key]


def _hybrid_weights(n: int) -> tuple[float, ...]:
    """Equal weights: HYBRID_WEIGHTS for dense + lexical, the same share each for more retrievers."""
    return HYBRID_WEIGHTS if n == len(HYBRID_WEIGHTS) else (1.0 / n,) * n


def _stage_scores(names: list[str], scores: Sequence[float | None], fused: float) -> dict[str, float]:
    stages = {"fused": fused}
    for name, score in zip(names, scores, strict=True):
        if score is not None:
            stages[name] = score
    return stages
