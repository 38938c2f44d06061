"""Retrieval test sets built from sentence-pair (STS) data, for Korean (KorSTS) and English (STSb).

A pair scored at least `min_score` (4 of 5: "mostly equivalent") makes its sentence1 a query whose relevant
document is its sentence2; the corpus is every sentence2 of the split, paraphrases and distractors alike.
A model that ranks the paraphrase of each query first over ~1,300 candidates retrieves well.
"""

from __future__ import annotations

import os

from .beir import RetrievalData
from .sts import STSData, read_sts


def sts_retrieval_set(
    source: str | os.PathLike[str] | STSData,
    min_score: float = 4.0,
    format: str = "auto",
    *,
    identical_relevant: bool = True,
) -> RetrievalData:
    """A retrieval set from the STS pairs of `source` (a file read with `read_sts`, or an `STSData`).

    - Queries: the sentence1 of every pair with score >= `min_score`. Pairs sharing the same sentence1 text
      make one query, relevant to all of their sentence2 documents: identical texts get identical
      embeddings and rankings, so separate queries would count each other's paraphrase as a miss.
    - Corpus: every distinct sentence2 text of the split (all pairs, whatever their score), one document
      per text; a query whose sentence2 occurs several times is relevant to that single document.
    - Qrels: grade 1 from each query to its sentence2 documents. With `identical_relevant`, a document
      whose text equals the query's text (from another pair) is relevant too: no judgement could call an
      exact copy irrelevant, and every retriever ranks it first.
    - Ids: ``q0001``, ``d0001``, ... numbered in file order, zero-padded so string order is file order;
      the same file always gives the same set.

    `counts` of the result has ``pairs``, ``relevant_pairs`` (score >= min_score), ``queries``,
    ``merged_pairs`` (pairs whose sentence1 was already a query), ``corpus``, ``duplicate_corpus_texts``
    (sentence2 occurrences folded into an earlier document), ``multi_relevant_queries`` (queries with more
    than one relevant document), ``identical_pairs`` (relevant pairs with sentence1 == sentence2) and
    ``identical_text_qrels`` (qrels added by `identical_relevant`).
    """
    data = source if isinstance(source, STSData) else read_sts(source, format=format)
    origin = data.source if isinstance(source, STSData) else os.fspath(source)
    doc_ids: dict[str, str] = {}
    texts2 = list(dict.fromkeys(data.sentences2))
    width = len(str(len(texts2)))
    for i, text in enumerate(texts2, start=1):
        doc_ids[text] = f"d{i:0{width}d}"

    kept = [
        (s1, s2)
        for s1, s2, score in zip(data.sentences1, data.sentences2, data.scores, strict=True)
        if score >= min_score
    ]
    if not kept:
        raise ValueError(f"no pair in {origin or 'the data'} has a score of at least {min_score:g}")
    query_texts = list(dict.fromkeys(s1 for s1, _ in kept))
    qwidth = len(str(len(query_texts)))
    query_ids = {text: f"q{i:0{qwidth}d}" for i, text in enumerate(query_texts, start=1)}

    qrels: dict[str, dict[str, int]] = {query_ids[text]: {} for text in query_texts}
    for s1, s2 in kept:
        qrels[query_ids[s1]][doc_ids[s2]] = 1
    added = 0
    if identical_relevant:
        for text, qid in query_ids.items():
            same = doc_ids.get(text)
            if same is not None and same not in qrels[qid]:
                qrels[qid][same] = 1
                added += 1

    corpus = {doc_id: {"title": "", "text": text} for text, doc_id in doc_ids.items()}
    queries = {qid: text for text, qid in query_ids.items()}
    counts = {
        "pairs": len(data),
        "relevant_pairs": len(kept),
        "queries": len(queries),
        "merged_pairs": len(kept) - len(queries),
        "corpus": len(corpus),
        "duplicate_corpus_texts": len(data.sentences2) - len(corpus),
        "multi_relevant_queries": sum(1 for judged in qrels.values() if len(judged) > 1),
        "identical_pairs": sum(1 for s1, s2 in kept if s1 == s2),
        "identical_text_qrels": added,
    }
    return RetrievalData(corpus, queries, qrels, source=origin, counts=counts)
