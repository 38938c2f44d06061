"""Retrieve and rerank: a bi-encoder fetches candidates fast, a cross-encoder re-orders them accurately.

The bi-encoder embeds the corpus once; each query costs one encode plus one similarity pass over the
corpus, and the cross-encoder then reads only the `retrieve_k` (default 100) best candidates, one
pass per (query, candidate) pair. Scores in a result are the cross-encoder's; the retrieval score and
rank are kept beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..index.exact import semantic_search


@dataclass(frozen=True)
class RerankHit:
    """A reranked result: corpus row, cross-encoder score, and where the bi-encoder had put it."""

    corpus_id: int
    score: float
    retrieval_score: float
    retrieval_rank: int
    text: str


class RetrieveAndRerank:
    """Bi-encoder retrieval over a fixed corpus, optionally followed by cross-encoder reranking.

    `encoder` is a `SentenceEncoder`, `cross_encoder` a `CrossEncoder` (None: retrieval only).
    `query_prompt_name` / `corpus_prompt_name` select the encoder's prompts (e5: "query" / "passage").
    """

    def __init__(
        self,
        encoder: Any,
        cross_encoder: Any | None,
        corpus: Sequence[str],
        *,
        retrieve_k: int = 100,
        query_prompt_name: str | None = None,
        corpus_prompt_name: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        corpus_embeddings: Any | None = None,
    ) -> None:
        if retrieve_k < 1:
            raise ValueError(f"retrieve_k must be at least 1, not {retrieve_k}")
        self.corpus = list(corpus)
        if not self.corpus:
            raise ValueError("the corpus is empty")
        for i, text in enumerate(self.corpus):
            if not isinstance(text, str):
                raise TypeError(f"corpus[{i}] is {type(text).__name__}, not str")
        if cross_encoder is not None and cross_encoder.num_labels != 1:
            raise ValueError("reranking needs a cross-encoder with one output score")
        self.encoder = encoder
        self.cross_encoder = cross_encoder
        self.retrieve_k = retrieve_k
        self.query_prompt_name = query_prompt_name
        self.batch_size = batch_size
        self.show_progress_bar = show_progress_bar
        if corpus_embeddings is None:
            corpus_embeddings = encoder.encode(
                self.corpus,
                prompt_name=corpus_prompt_name,
                batch_size=batch_size,
                show_progress_bar=show_progress_bar,
                convert_to_tensor=True,
            )
        if len(corpus_embeddings) != len(self.corpus):
            raise ValueError(f"{len(corpus_embeddings)} corpus embeddings for {len(self.corpus)} documents")
        self.corpus_embeddings = corpus_embeddings

    def retrieve(self, queries: Sequence[str], top_k: int | None = None) -> list[list[RerankHit]]:
        """The bi-encoder's top `top_k` (default `retrieve_k`) per query; `score` is its similarity."""
        k = top_k or self.retrieve_k
        vectors = self.encoder.encode(
            list(queries),
            prompt_name=self.query_prompt_name,
            batch_size=self.batch_size,
            show_progress_bar=self.show_progress_bar,
            convert_to_tensor=True,
        )
        fn = getattr(self.encoder, "similarity_fn_name", "cosine")
        results = semantic_search(vectors, self.corpus_embeddings, top_k=k, score_function=fn)
        return [
            [
                RerankHit(h.corpus_id, h.score, h.score, rank, self.corpus[h.corpus_id])
                for rank, h in enumerate(hits)
            ]
            for hits in results
        ]

    def search(
        self, queries: str | Sequence[str], top_k: int = 10, rerank: bool = True
    ) -> list[RerankHit] | list[list[RerankHit]]:
        """Top `top_k` per query: retrieved by the bi-encoder, reordered by the cross-encoder.

        One query (a string) gives one list; a list of queries gives a list per query. With
        `rerank=False` (or no cross-encoder) the bi-encoder order is returned.
        """
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {top_k}")
        single = isinstance(queries, str)
        items: list[str] = [queries] if isinstance(queries, str) else list(queries)
        for i, q in enumerate(items):
            if not isinstance(q, str):
                raise TypeError(f"queries[{i}] is {type(q).__name__}, not str")
        retrieved = self.retrieve(items, max(top_k, self.retrieve_k))
        if not rerank or self.cross_encoder is None:
            out = [hits[:top_k] for hits in retrieved]
        else:
            out = self._rerank(items, retrieved, top_k)
        return out[0] if single else out

    def _rerank(
        self, queries: list[str], retrieved: list[list[RerankHit]], top_k: int
    ) -> list[list[RerankHit]]:
        assert self.cross_encoder is not None
        candidates = [hits[: self.retrieve_k] for hits in retrieved]
        pairs = [(q, h.text) for q, hits in zip(queries, candidates, strict=True) for h in hits]
        scores = np.asarray(
            self.cross_encoder.predict(
                pairs, batch_size=self.batch_size, show_progress_bar=self.show_progress_bar
            ),
            dtype=np.float64,
        ).reshape(-1)
        out = []
        offset = 0
        for hits in candidates:
            own = scores[offset : offset + len(hits)]
            offset += len(hits)
            order = np.argsort(-own, kind="stable")[:top_k]
            out.append(
                [
                    RerankHit(
                        hits[i].corpus_id,
                        float(own[i]),
                        hits[i].retrieval_score,
                        hits[i].retrieval_rank,
                        hits[i].text,
                    )
                    for i in order.tolist()
                ]
            )
        return out
