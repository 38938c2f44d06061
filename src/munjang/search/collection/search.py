"""Searching a collection: dense, lexical (BM25), sparse, multi-vector, hybrid and bge-m3 retrieval over
its passages, filters, grouping into documents, and an optional cross-encoder rerank. `Collection`
holds a `Searcher` over its store and indexes (`collection.py`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..._util.tracing import carry, span
from ...images import is_image_input
from ..backends.base import (
    Counts,
    DenseSearch,
    Document,
    Filter,
    LexicalSearch,
    Queries,
    Retriever,
    Store,
    TopK,
)
from ..backends.filters import compile_filter
from ..index.fusion import FUSIONS, fuse
from .encoding import Encoding

if TYPE_CHECKING:
    from .retrievers import ExtraRetriever
from .results import AGGREGATES, UNITS, Ranked, SearchHit, by_document, hit

# The characters of a query that BM25 analyses: the dense side reads no more than its model's token
# limit (512 tokens, ~1,000-2,000 characters), and Korean analysis costs ~50 µs a character on a
# run without spaces, so a 100,000-character query held a core for seconds; 4,096 keeps any
# paragraph-long question whole and bounds the analysis to a fraction of a second.
MAX_QUERY_CHARS = 4_096

MODES = ("dense", "lexical", "sparse", "multi_vector", "hybrid", "m3")
# Hybrid default: z-scored dense and BM25 scores, summed with equal weights: nothing tuned, so nothing
# fitted to one set. bench/korean_retrieval.py compares settings leave-one-set-out over five Korean
# retrieval sets (document, question, paraphrase, sentence); tuned weights and RRF lose more on the
# held-out set than this setting, which is never significantly below the better of BM25 and dense.
HYBRID_FUSION = "weighted"
HYBRID_WEIGHTS = (0.5, 0.5)
HYBRID_NORMALIZATION = "zscore"
# Passages fetched per document wanted when documents are stored as several passages, so that
# grouping passages into documents still leaves enough distinct documents to rank: up to 4, reached
# when a tenth of the passages are documents' later passages (`passages_to_fetch`).
PASSAGES_PER_DOCUMENT = 4
FULL_FETCH_SHARE = 0.1


def passages_to_fetch(pool: int, counts: Counts | None) -> int:
    """How many passages to fetch for `pool` documents of a collection whose documents are stored as
    several passages: `pool` times 1 + 3 x (the share of passages that are a document's later
    passages) / `FULL_FETCH_SHARE`, at most `PASSAGES_PER_DOCUMENT` (and that when the counts are
    unknown). A collection of many short documents and a few long ones asks for barely more than
    one of short documents only; one of long documents, 4 per document (`bench/fusion_depth.py`:
    deeper lists help long pages and not short passages)."""
    if counts is None or counts.passages <= 0:
        return pool * PASSAGES_PER_DOCUMENT
    later = max(counts.passages - counts.documents, 0) / counts.passages
    factor = 1 + (PASSAGES_PER_DOCUMENT - 1) * min(1.0, later / FULL_FETCH_SHARE)
    return min(pool * PASSAGES_PER_DOCUMENT, math.ceil(pool * factor))


class Searcher:
    """How a collection answers searches: its retrievers, filters, fusion, grouping of passages into
    documents and reranking. `Collection` holds one and hands it the parts it searches."""

    def __init__(
        self,
        store: Store,
        config: dict[str, Any],
        encoding: Encoding,
        dense: DenseSearch,
        lexical: LexicalSearch,
        extras: dict[str, ExtraRetriever],
        m3: Any,
    ) -> None:
        self.store, self.config, self.encoding = store, config, encoding
        self.dense, self.lexical = dense, lexical
        self.extras = extras  # the extra retrievers by mode name (`retrievers.py`)
        self.m3 = m3  # a bge-m3 collection's OnePass (`m3_pass.py`), else None
        self._cross_encoders: dict[str, Any] = {}
        self.generation = int(config.get("analysis_generation") or 0)
        # the one thread a dense index searching apart runs on (started at first use)
        self._beside = ThreadPoolExecutor(1, thread_name_prefix="munjang-dense")

    def close(self) -> None:
        self._beside.shutdown()

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

    def follow_analysis(self) -> None:
        """Take the analysis settings as stored, when another process (or the server) changed them:
        one small read, so every search answers with the collection's current analysis."""
        generation = int(self.store.meta_value("analysis_generation") or 0)
        if generation != self.generation:
            self.config["analysis"] = self.store.meta_value("analysis")
            self.config["analysis_generation"] = self.generation = generation

    def matched_terms(self, query: str, hits: Sequence[SearchHit]) -> list[list[str]]:
        """The query's lexical (BM25) terms that each hit's passage contains, in query order: why a
        keyword match ranked (shown beside hybrid and lexical results). Passages are read as BM25
        indexed them (their stored tokens, with the default chunking those of the passage's window),
        not tokenized again."""
        self.follow_analysis()
        terms = list(dict.fromkeys(self.encoding.query_tokenizer()(query[:MAX_QUERY_CHARS])))
        stored = self.store.tokens_of([h.label for h in hits])
        kept = [set(stored.get(h.label, ())) for h in hits]
        return [[t for t in terms if t in tokens] for tokens in kept]

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
        """`Collection.search` (see there)."""
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
        pool = max(k, candidates) if (mode in ("hybrid", "m3") or rerank is not None) else k
        counts = self.store.counts() if unit == "document" else None
        if unit != "document":
            grouped = False
        elif counts is not None:  # a document of several passages makes more passages than documents
            grouped = counts.passages > counts.documents
        else:
            grouped = self.store.has_passages()
        fetch = passages_to_fetch(pool, counts) if grouped else pool
        # Each retriever runs the filter in the form it can (`Filter`): SQL in its database's query,
        # its engine's own filter, or the labels it allows, read once for all that need them.
        where = None if filter is None else Filter(filter, self.store, compile_filter)
        shared = self.m3 is not None and mode in ("hybrid", "m3")  # bge-m3: a query encoded once for all
        with self.m3.shared() if shared else nullcontext():
            runs = self._retrieve_all(names, queries, fetch, where, batch_size, not shared)
            m3_queries = self.m3.encode(queries) if mode == "m3" else None
        results: list[list[SearchHit]] = []
        for i, q in enumerate(queries):
            if m3_queries is not None:
                m3_weights = self.config["m3"]["weights"] if weights is None else weights
                ranked = self._m3_ranked(m3_queries, i, [runs[name][i] for name in names], m3_weights, fetch)
            elif mode == "hybrid":
                with span("fusion", method=fusion, retrievers=len(names), candidates=fetch):
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
        (dense, lexical, then sparse and multi_vector when it has them), in the order hybrid `weights`
        take; for "m3", the three whose candidates bge-m3's score ranks."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if mode in ("sparse", "multi_vector") and mode not in self.extras:
            raise ValueError(f"this collection has no {mode} retriever (create it with {mode}_model=...)")
        if mode == "m3":
            if self.m3 is None:
                raise ValueError("this collection has no bge-m3 model (create it with m3_model=...)")
            return ["dense", "sparse", "multi_vector"]
        if mode != "hybrid":
            return [mode]
        return ["dense", "lexical", *self.extras]

    def _retrieve_all(
        self,
        names: list[str],
        queries: list[str],
        k: int,
        where: Filter | None,
        batch_size: int,
        may_part: bool,
    ) -> dict[str, TopK]:
        """Every retriever's top-k per query, by name. A dense index that searches apart (a
        database's, on a second connection: `DenseSearch.apart`) runs on this searcher's second
        thread while the others run on this one, so their waits on the database overlap."""
        twin = self.dense.apart() if may_part and "dense" in names and len(names) > 1 else None
        pending = None
        if twin is not None:
            pending = self._beside.submit(carry(self._retrieve), "dense", queries, k, where, batch_size, twin)
        try:
            runs = {
                name: self._retrieve(name, queries, k, where, batch_size)
                for name in names
                if pending is None or name != "dense"
            }
        except BaseException:
            if pending is not None:
                wait([pending])  # its connection is free again before the error leaves the search
            raise
        if pending is not None:
            runs["dense"] = pending.result()
        return {name: runs[name] for name in names}

    def _retrieve(
        self,
        name: str,
        queries: list[str],
        k: int,
        where: Filter | None,
        batch_size: int,
        retriever: Retriever | None = None,
    ) -> TopK:
        """One retriever's top-k (label, score) per query, the queries encoded by its model only if
        it has something to search; `retriever`: the one to ask (default: the collection's)."""
        if retriever is None:
            retriever = self.retriever(name)
        with span(f"retrieve.{name}", retriever=name, k=k, queries=len(queries), filtered=where is not None):
            return retriever.retrieve(self.store, Queries(queries, self._encoder(name, batch_size)), k, where)

    def retriever(self, name: str) -> Retriever:
        """The retriever of a search mode: "dense", "lexical", or an extra one's index."""
        if name == "dense":
            return self.dense
        if name == "lexical":
            return self.lexical
        return self.extras[name].engine

    def _encoder(self, name: str, batch_size: int) -> Callable[[list[Any]], Any]:
        """How the queries of retriever `name` are encoded: dense vectors, BM25 tokens, or the extra
        retriever's model's query side."""
        if name == "dense":
            prompt = self.config["query_prompt_name"]

            def encode(texts: list[Any]) -> Any:
                with span("encode", queries=len(texts)):
                    return self.encoding.encode(texts, prompt, batch_size, False, queries=True)

            return encode
        if name == "lexical":
            self.follow_analysis()

            def analyse(texts: list[Any]) -> Any:
                with span("tokenize", queries=len(texts)):
                    tokenize = self.encoding.query_tokenizer()
                    return [tokenize(q[:MAX_QUERY_CHARS]) for q in texts]

            return analyse
        extra = self.extras[name]

        def encode_extra(texts: list[Any]) -> Any:
            with span("encode", queries=len(texts), retriever=name):
                return extra.encode_queries(texts)

        return encode_extra

    def _m3_ranked(
        self, queries: Any, i: int, runs: list[list[tuple[int, float]]], weights: Sequence[float], k: int
    ) -> Ranked:
        """The union of the three retrievers' candidates for query i, scored by bge-m3's weighted sum
        of dense, sparse and ColBERT scores from the stored vectors (`m3_pass.m3_scores`)."""
        from ...encoders.m3.encoder import M3Output
        from .m3_pass import m3_scores

        labels = np.array(sorted({label for run in runs for label, _ in run}), dtype=np.int64)
        query = M3Output(queries.dense[i : i + 1], queries.sparse[i : i + 1], queries.colbert[i : i + 1])
        parts = m3_scores(
            query,
            self.store.vectors_of(self.config["model"], self.config["dim"], labels),
            self.retriever("sparse").stored(self.store, labels.tolist()),
            self.retriever("multi_vector").stored(self.store, labels.tolist()),
            weights,
        )
        order = np.lexsort((labels, -parts["m3"]))[:k]
        return [
            (int(labels[j]), float(parts["m3"][j]), {name: float(parts[name][j]) for name in parts})
            for j in order
        ]

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
        ranked, docs = self._head(ranked, rerank_k if rerank is not None else k, grouped, aggregate)
        if grouped:
            ranked = by_document(ranked, docs, aggregate)
        if rerank is not None and ranked:
            cross = self._cross_encoder(rerank)
            head = ranked[:rerank_k]
            texts = [docs[label].text for label, _, _ in head]
            with span("rerank", candidates=len(texts)):
                order = cross.rank(query, texts, batch_size=batch_size, show_progress_bar=False)
            ranked = [
                (head[h["corpus_id"]][0], h["score"], {**head[h["corpus_id"]][2], "rerank": h["score"]})
                for h in order
            ]
        return [hit(docs[label], score, stages) for label, score, stages in ranked[:k]]

    def _head(
        self, ranked: Ranked, need: int, grouped: bool, aggregate: str
    ) -> tuple[Ranked, dict[int, Document]]:
        """The best of `ranked` that still exist, with their documents, read best first in growing
        rounds until `need` hits are found (`grouped`: `need` documents; summing over a document's
        passages reads them all): a search of 10 hits reads about 10 rows, not the whole pool of
        candidates (4 per candidate when passages are grouped). A label the index still had but the
        store no longer has was deleted meanwhile, and is dropped."""
        docs: dict[int, Document] = {}
        end, step = 0, len(ranked) if grouped and aggregate == "sum" else max(2 * need, 32)
        while end < len(ranked):
            docs.update(self.store.documents([label for label, _, _ in ranked[end : end + step]]))
            end, step = end + step, 2 * step
            found = [docs[label].id for label, _, _ in ranked[:end] if label in docs]
            if len(set(found) if grouped else found) >= need:
                break
        return [r for r in ranked[:end] if r[0] in docs], docs

    def _cross_encoder(self, rerank: Any) -> Any:
        if not isinstance(rerank, (str, os.PathLike)):
            return rerank
        key = str(rerank)
        if key not in self._cross_encoders:
            from ...encoders.cross import load_cross_encoder

            self._cross_encoders[key] = load_cross_encoder(key, device=self.encoding.device)
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
