"""The retrieval sets of the Korean benchmarks (bench/korean_retrieval.py and the scripts that reuse its
sets): each read from the shared data into a corpus, queries and their relevant documents.

All from the shared data; nothing is copied into the repository.

- autorag: AutoRAG-ko, 114 questions over 720 OCR'd pages (query -> its page).
- chatbot: ChatbotData, question -> its answer; corpus = every distinct answer text (a question is
  relevant to the one document holding its answer text, shared by every question with that answer).
  By default (DEFAULT_QUERIES) a seeded sample of 2,000 distinct questions.
- parakqc: ParaKQC, 1,000 sets of 10 paraphrases; sentence 0 of a set is the query, its other 9 the
  relevant documents; corpus = every non-query sentence (9,000 lines, distinct texts). Seeded sample of
  500 sets as queries.
- question-pair: Korean question pairs, train + test. "Same question" pairs (is_duplicate == 0: the
  label is inverted, see its README) whose two texts differ make question1 a query and question2 its
  relevant document; corpus = every distinct question2 (all labels). Built with sts_retrieval_set
  (same = 5, different = 0), so a query whose text equals a document is relevant to it too. Seeded
  sample of 2,000 queries.
- korsts / stsb: munjang.data.sts_retrieval_set on the test split (as bench/search_quality.py).
  stsb (English) is reported but kept out of the selection.

The chatbot and question-pair CSVs use standard CSV quoting (quoted fields hold commas); only the
STS/NLI TSV/CSV files need csv.QUOTE_NONE (read by munjang.data.read_sts).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common import shared_data_dir
from munjang.data import STSData, sts_retrieval_set

KOREAN = ("autorag", "chatbot", "parakqc", "question-pair", "korsts")
SETS = (*KOREAN, "stsb")
DEFAULT_QUERIES = {"chatbot": 2000, "parakqc": 500, "question-pair": 2000}


# -- the sets ----------------------------------------------------------------------------------------------
@dataclass
class RetrievalSet:
    corpus: dict[str, str]  # doc id -> text
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, set[str]]  # query id -> relevant doc ids
    notes: dict[str, Any] = field(default_factory=dict)

    def sample(self, n: int | None, seed: int) -> RetrievalSet:
        """At most `n` queries (a seeded sample, kept in id order); the corpus stays whole."""
        qids = sorted(q for q in self.qrels if self.qrels[q] and self.queries[q].strip())
        if n is not None and n < len(qids):
            qids = sorted(random.Random(seed).sample(qids, n))
        keep = set(qids)
        return RetrievalSet(
            self.corpus,
            {q: t for q, t in self.queries.items() if q in keep},
            {q: r for q, r in self.qrels.items() if q in keep},
            {**self.notes, "queries_available": len(self.qrels), "queries_used": len(qids)},
        )


def _from_retrieval_data(data: Any, notes: dict[str, Any]) -> RetrievalSet:
    return RetrievalSet(dict(data.corpus_texts()), dict(data.queries), data.relevant_docs(), notes)


def load_autorag() -> RetrievalSet:
    import pandas as pd

    folder = shared_data_dir() / "autorag-ko"
    pages = pd.read_parquet(folder / "ocr_corpus_v3.parquet")
    qa = pd.read_parquet(folder / "qa_v4.parquet")
    corpus = {str(d): str(t) for d, t in zip(pages["doc_id"], pages["contents"], strict=True)}
    queries, qrels = {}, {}
    for qid, query, gt in zip(qa["qid"], qa["query"], qa["retrieval_gt"], strict=True):
        flat = {str(d) for group in gt for d in group}
        missing = flat - corpus.keys()
        if missing:
            raise ValueError(f"AutoRAG question {qid} names pages not in the corpus: {sorted(missing)}")
        queries[str(qid)], qrels[str(qid)] = str(query), flat
    return RetrievalSet(corpus, queries, qrels, {"query": "question", "document": "OCR page"})


def load_chatbot() -> RetrievalSet:
    with open(shared_data_dir() / "chatbot-qa" / "ChatbotData.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))  # standard quoting: quoted answers contain commas
    if len(rows) != 11823 or any(None in r for r in rows):
        raise ValueError(f"ChatbotData.csv parsed into {len(rows)} rows, expected 11,823 of 3 fields")
    q = [r["Q"].strip() for r in rows]
    a = [r["A"].strip() for r in rows]
    data = sts_retrieval_set(STSData(q, a, [5.0] * len(q), "chatbot-qa"))
    return _from_retrieval_data(data, {"query": "question", "document": "answer", **data.counts})


def load_parakqc() -> RetrievalSet:
    lines = (shared_data_dir() / "parakqc" / "paraKQC_v1.txt").read_text(encoding="utf-8").splitlines()
    sentences = [line.split("\t")[2].strip() for line in lines]
    if len(sentences) != 10000:
        raise ValueError(f"paraKQC_v1.txt has {len(sentences)} lines, expected 10,000")
    doc_ids: dict[str, str] = {}
    for i, text in enumerate(sentences):
        if i % 10:
            doc_ids.setdefault(text, f"d{i:05d}")
    queries, qrels = {}, {}
    for s in range(1000):
        query = sentences[10 * s]
        relevant = {doc_ids[sentences[10 * s + j]] for j in range(1, 10)}
        if query in doc_ids:  # an exact copy of the query is relevant whatever set it sits in
            relevant.add(doc_ids[query])
        queries[f"q{s:04d}"], qrels[f"q{s:04d}"] = query, relevant
    corpus = {d: t for t, d in doc_ids.items()}
    notes = {"query": "sentence 0 of a set", "document": "sentences 1-9", "corpus_lines": 9000}
    return RetrievalSet(corpus, queries, qrels, {**notes, "corpus": len(corpus)})


def load_question_pair() -> RetrievalSet:
    folder = shared_data_dir() / "question-pair"
    s1, s2, scores = [], [], []
    identical = 0
    for name in ("kor_pair_train.csv", "kor_Pair_test.csv"):
        with open(folder / name, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            label = r["is_duplicate"].strip()
            if label not in ("0", "1"):
                raise ValueError(f"{name}: unexpected is_duplicate {label!r}")
            q1, q2 = r["question1"].strip(), r["question2"].strip()
            if q1 == q2:  # identical strings: trivial for every retriever, left out
                identical += 1
                continue
            s1.append(q1)
            s2.append(q2)
            scores.append(5.0 if label == "0" else 0.0)  # 0 means "same question" (inverted label)
    data = sts_retrieval_set(STSData(s1, s2, scores, "question-pair"))
    notes = {
        "query": "question1 of a same pair",
        "document": "question2",
        "identical_pairs_dropped": identical,
    }
    return _from_retrieval_data(data, {**notes, **data.counts})


def _sts(path: str) -> Callable[[], RetrievalSet]:
    def load() -> RetrievalSet:
        data = sts_retrieval_set(shared_data_dir() / path)
        return _from_retrieval_data(data, {"query": "sentence1 (score >= 4)", "document": "sentence2"})

    return load


LOADERS: dict[str, Callable[[], RetrievalSet]] = {
    "autorag": load_autorag,
    "chatbot": load_chatbot,
    "parakqc": load_parakqc,
    "question-pair": load_question_pair,
    "korsts": _sts("korsts/sts-test.tsv"),
    "stsb": _sts("stsb/sts-test.csv"),
}
