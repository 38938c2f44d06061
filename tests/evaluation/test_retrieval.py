"""Retrieval evaluation: parity with sentence-transformers' InformationRetrievalEvaluator on real data,
`evaluate_rankings` against hand-computed values, prompts, chunking and ties on toy encoders."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import munjang
from munjang.data import RetrievalData, sts_retrieval_set
from munjang.evaluation import InformationRetrievalEvaluator, evaluate_rankings, evaluate_rankings_per_query

FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")
KS = (1, 3, 5, 10, 100)


# -- evaluate_rankings: hand-computed values --------------------------------------------------------

QRELS: dict[str, Any] = {
    "q1": {"d1", "d3"},
    "q2": {"d2": 2, "d5": 1, "d9": 0},
    "q3": {"d4": 0},  # no relevant document: not evaluated
    "q4": ["d1"],  # no ranking: scores 0
}
RANKINGS = {
    "q1": ["d2", "d1", "d3", "d4"],
    "q2": ["d5", "d6", "d2"],
    "q3": ["d4"],
    "other": ["d1"],  # not in the qrels: ignored
}


def test_evaluate_rankings_by_hand() -> None:
    got = evaluate_rankings(RANKINGS, QRELS, k_values=(1, 3), mrr_at_k=(3,), ndcg_at_k=(3,), map_at_k=(3,))
    log2 = math.log2
    ndcg_q1 = (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3))  # hits at ranks 2 and 3, two relevant
    ndcg_q2 = (1 + 1 / log2(4)) / (1 + 1 / log2(3))  # hits at ranks 1 and 3, two relevant
    expected = {
        "accuracy@1": (0 + 1 + 0) / 3,
        "accuracy@3": (1 + 1 + 0) / 3,
        "precision@1": (0 + 1 + 0) / 3,
        "precision@3": (2 / 3 + 2 / 3 + 0) / 3,
        "recall@1": (0 + 1 / 2 + 0) / 3,
        "recall@3": (1 + 1 + 0) / 3,
        "mrr@3": (1 / 2 + 1 + 0) / 3,
        "ndcg@3": (ndcg_q1 + ndcg_q2 + 0) / 3,
        "map@3": ((1 / 2 + 2 / 3) / 2 + (1 + 2 / 3) / 2 + 0) / 3,
    }
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_graded_ndcg_uses_the_grades_as_gains() -> None:
    per_query = evaluate_rankings_per_query(
        RANKINGS, QRELS, k_values=(), mrr_at_k=(), ndcg_at_k=(3,), map_at_k=(), graded=True
    )
    # q2 ranks d5 (grade 1) first and d2 (grade 2) third; the ideal order is d2, d5.
    assert per_query["q2"] == {
        "ndcg@3": pytest.approx((1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3)), abs=1e-12)
    }
    assert set(per_query) == {"q1", "q2", "q4"}
    binary = evaluate_rankings_per_query(
        RANKINGS, QRELS, k_values=(), mrr_at_k=(), ndcg_at_k=(3,), map_at_k=()
    )
    assert binary["q1"] == per_query["q1"]  # all grades 1: the same either way
    assert binary["q2"]["ndcg@3"] != pytest.approx(per_query["q2"]["ndcg@3"])


def test_map_at_k_divides_by_min_of_k_and_relevant_count() -> None:
    got = evaluate_rankings({"q": ["a", "b", "x"]}, {"q": {"a", "b", "c"}}, k_values=(2,), map_at_k=(2, 3))
    assert got["map@2"] == pytest.approx(1.0)  # both of the top 2 relevant: (1 + 1) / min(2, 3)
    assert got["map@3"] == pytest.approx(2 / 3)  # (1 + 1) / 3
    assert got["precision@2"] == 1.0
    assert got["recall@2"] == pytest.approx(2 / 3)


def test_evaluate_rankings_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="more than once"):
        evaluate_rankings({"q": ["a", "a"]}, {"q": {"a"}})
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate_rankings({"q": ["a"]}, {"q": {"a": 0}})
    with pytest.raises(TypeError, match="is a string"):
        evaluate_rankings({"q": "a"}, {"q": {"a"}})
    with pytest.raises(ValueError, match="at least 1"):
        evaluate_rankings({"q": ["a"]}, {"q": {"a"}}, k_values=(0,))


# -- toy encoders: prompts, chunking, ties -----------------------------------------------------------


class LookupEncoder:
    """Fixed vectors per text (after any prompt is stripped); records the options of each call."""

    def __init__(self, vectors: dict[str, list[float]], prompts: dict[str, str] | None = None) -> None:
        self.vectors = vectors
        self.similarity_fn_name = "cosine"
        if prompts is not None:
            self.prompts = prompts
        self.calls: list[dict[str, Any]] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append(kwargs)
        return np.array([self.vectors[s] for s in sentences], dtype=np.float32)


def toy_set(
    n_docs: int = 40, n_queries: int = 12, dim: int = 3, seed: int = 0
) -> tuple[dict, dict, dict, dict]:
    """Small integer vectors, so many scores tie exactly."""
    rng = np.random.default_rng(seed)
    vectors = {
        f"t{i}": rng.integers(-2, 3, size=dim).astype(float).tolist() for i in range(n_docs + n_queries)
    }
    for v in vectors.values():
        v[0] = v[0] or 1.0  # no zero vectors
    corpus = {f"d{i:02d}": f"t{i}" for i in range(n_docs)}
    queries = {f"q{i}": f"t{n_docs + i}" for i in range(n_queries)}
    qrels = {f"q{i}": {f"d{(3 * i) % n_docs:02d}", f"d{(5 * i + 1) % n_docs:02d}"} for i in range(n_queries)}
    return vectors, corpus, queries, qrels


def brute_force_rankings(vectors: dict, corpus: dict, queries: dict, k: int) -> dict[str, list[str]]:
    """Cosine in float64, sorted by (-score, document id)."""
    out = {}
    for qid, text in queries.items():
        q = np.asarray(vectors[text])
        scores = {}
        for doc_id, doc_text in corpus.items():
            d = np.asarray(vectors[doc_text])
            scores[doc_id] = float(q @ d / (np.linalg.norm(q) * np.linalg.norm(d)))
        out[qid] = sorted(scores, key=lambda doc: (-round(scores[doc], 9), doc))[:k]
    return out


def test_rankings_equal_a_full_sort_whatever_the_corpus_chunk_size() -> None:
    vectors, corpus, queries, qrels = toy_set()
    expected = brute_force_rankings(vectors, corpus, queries, k=10)
    for chunk in (7, 1000):
        evaluator = InformationRetrievalEvaluator(
            queries, corpus, qrels, k_values=(1, 10), map_at_k=(10,), corpus_chunk_size=chunk
        )
        assert evaluator.rank(LookupEncoder(vectors)) == expected
        assert evaluator(LookupEncoder(vectors)) == pytest.approx(
            {f"cosine_{k}": v for k, v in evaluate_rankings(expected, qrels, (1, 10), map_at_k=(10,)).items()}
        )


def test_prompts_follow_the_encoder_like_sentence_transformers() -> None:
    vectors, corpus, queries, qrels = toy_set(n_docs=5, n_queries=2)
    evaluator = InformationRetrievalEvaluator(queries, corpus, qrels)
    e5_like = LookupEncoder(vectors, prompts={"query": "query: ", "passage": "passage: "})
    evaluator(e5_like)
    assert [(c.get("prompt_name"), c.get("prompt")) for c in e5_like.calls] == [
        ("query", None),
        ("passage", None),
    ]

    with_document = LookupEncoder(vectors, prompts={"query": "q: ", "corpus": "c: ", "document": "d: "})
    evaluator(with_document)
    assert [c.get("prompt_name") for c in with_document.calls] == ["query", "document"]

    plain = LookupEncoder(vectors)
    evaluator(plain)
    assert [(c.get("prompt_name"), c.get("prompt")) for c in plain.calls] == [(None, None), (None, None)]

    explicit = InformationRetrievalEvaluator(
        queries, corpus, qrels, query_prompt="", corpus_prompt_name="passage"
    )
    encoder = LookupEncoder(vectors, prompts={"query": "query: ", "passage": "passage: "})
    explicit(encoder)
    assert [(c.get("prompt_name"), c.get("prompt")) for c in encoder.calls] == [(None, ""), ("passage", None)]
    assert explicit.get_config_dict()["query_prompt"] == ""
    assert explicit.get_config_dict()["corpus_prompt_name"] == "passage"


def test_evaluator_settings_and_validation() -> None:
    vectors, corpus, queries, qrels = toy_set(n_docs=5, n_queries=3)
    qrels["q9"] = {"d00"}  # no query text: not evaluated
    qrels["q2"] = {}  # no relevant document: not evaluated
    evaluator = InformationRetrievalEvaluator(queries, corpus, qrels, name="toy", score_functions=("dot",))
    assert len(evaluator) == 2
    assert (
        repr(evaluator)
        == "InformationRetrievalEvaluator('toy', 2 queries, 5 documents, score_functions=['dot'])"
    )
    assert evaluator.primary_metric is None
    metrics = evaluator(LookupEncoder(vectors))
    assert evaluator.primary_metric == "cosine_ndcg@10"  # the encoder's similarity is computed too
    assert {k.split("_")[0] for k in metrics} == {"dot", "cosine"}
    assert len(metrics) == 2 * (3 * len(KS) + 3)
    assert evaluator.get_config_dict() == {
        "score_functions": ["dot"],
        "k_values": list(KS),
        "mrr_at_k": [10],
        "ndcg_at_k": [10],
        "map_at_k": [100],
        "graded": False,
    }
    main = InformationRetrievalEvaluator(
        queries, corpus, qrels, score_functions=FUNCTIONS, main_score_function="dot"
    )
    assert main.primary_metric == "dot_ndcg@10"
    with pytest.raises(ValueError, match="nothing to evaluate"):
        InformationRetrievalEvaluator(queries, corpus, {"q0": {"d00": 0}})
    with pytest.raises(ValueError, match="corpus is empty"):
        InformationRetrievalEvaluator(queries, {}, qrels)
    with pytest.raises(ValueError, match="unknown similarity"):
        InformationRetrievalEvaluator(queries, corpus, qrels, score_functions=("jaccard",))


def test_from_data_encodes_title_and_text_and_keeps_grades() -> None:
    data = RetrievalData(
        corpus={"a": {"title": "T", "text": "x"}, "b": {"title": "", "text": "y"}},
        queries={"q": "z", "r": "w"},
        qrels={"q": {"a": 2, "b": 1}, "r": {"a": 0}},
    )
    vectors = {"T x": [1.0, 0.0], "y": [0.0, 1.0], "z": [0.1, 1.0], "w": [1.0, 1.0]}
    graded = InformationRetrievalEvaluator.from_data(data, graded=True, ndcg_at_k=(2,))
    assert len(graded) == 1
    metrics = graded(LookupEncoder(vectors))
    # q ranks b (grade 1) above a (grade 2).
    assert metrics["cosine_ndcg@2"] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert metrics["cosine_recall@1"] == pytest.approx(0.5)


# -- parity with sentence-transformers ---------------------------------------------------------------


def parity_set(data_dir: Path, n_queries: int = 50, n_distractors: int = 100) -> RetrievalData:
    """The first 50 queries of the STSb dev retrieval set, their relevant documents and 100 others."""
    data = sts_retrieval_set(data_dir / "stsb" / "sts-dev.csv")
    relevant = data.relevant_docs()
    qids = list(data.queries)[:n_queries]
    docs = set().union(*(relevant[q] for q in qids)) | set(list(data.corpus)[:n_distractors])
    return RetrievalData(
        {d: data.corpus[d] for d in sorted(docs)},
        {q: data.queries[q] for q in qids},
        {q: data.qrels[q] for q in qids},
    )


def reference_metrics(model_path: Path, data: RetrievalData, **options: Any) -> dict[str, float]:
    from sentence_transformers import SentenceTransformer, util

    try:
        from sentence_transformers.sentence_transformer.evaluation import (
            InformationRetrievalEvaluator as STIR,
        )
    except ImportError:  # pragma: no cover (sentence-transformers < 6)
        from sentence_transformers.evaluation import InformationRetrievalEvaluator as STIR

    model = SentenceTransformer(str(model_path), device="cpu")
    functions = {
        "cosine": util.cos_sim,
        "dot": util.dot_score,
        "euclidean": util.euclidean_sim,
        "manhattan": util.manhattan_sim,
    }
    reference = STIR(
        data.queries,
        data.corpus_texts(),
        data.relevant_docs(),
        accuracy_at_k=list(KS),
        precision_recall_at_k=list(KS),
        score_functions=functions,
        write_csv=False,
        **options,
    )
    return reference(model)


def test_parity_with_sentence_transformers(data_dir: Path, minilm_path: Path) -> None:
    data = parity_set(data_dir)
    assert len(data.queries) == 50
    evaluator = InformationRetrievalEvaluator.from_data(data, score_functions=FUNCTIONS)
    ours = evaluator(munjang.load_encoder(minilm_path, device="cpu"))
    reference = reference_metrics(minilm_path, data)
    assert set(ours) == set(reference)
    assert len(ours) == len(FUNCTIONS) * (3 * len(KS) + 3)
    for key, value in reference.items():
        assert ours[key] == pytest.approx(value, abs=1e-6), key
    assert evaluator.primary_metric == "cosine_ndcg@10"
    assert 0.5 < ours["cosine_ndcg@10"] < 1.0  # a real ranking, neither trivial nor broken
    assert ours["cosine_recall@100"] > ours["cosine_recall@1"]


@pytest.mark.slow
def test_parity_with_sentence_transformers_e5_prompts(data_dir: Path, e5_path: Path) -> None:
    """e5 needs "query: " / "passage: " prompts; ours are picked from the model's prompts.

    sentence-transformers 6 gives every model a blank "document" prompt, which its encode_document
    prefers to "passage", so its evaluator is told the corpus prompt here.
    """
    data = sts_retrieval_set(data_dir / "korsts" / "sts-test.tsv")
    evaluator = InformationRetrievalEvaluator.from_data(data, score_functions=FUNCTIONS)
    ours = evaluator(munjang.load_encoder(e5_path, device="cpu"))
    reference = reference_metrics(e5_path, data, query_prompt_name="query", corpus_prompt_name="passage")
    assert set(ours) == set(reference)
    for key, value in reference.items():
        assert ours[key] == pytest.approx(value, abs=1e-6), key
