"""Retrieve and rerank, hard-negative mining, ranking metrics and the `rerank` / `search` commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from munjang import load_cross_encoder
from munjang.evaluation.retrieval_metrics import (
    average_precision,
    mean_metrics,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
)
from munjang.search import RetrieveAndRerank, semantic_search
from munjang.training import mine_hard_negatives
from tests.helpers.cli import run_cli
from tests.helpers.training import tiny_bert

CORPUS = [
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "Two dogs run across a field.",
    "The stock market fell sharply today.",
    "A child rides a bicycle in the park.",
    "Someone is playing an acoustic guitar on stage.",
    "한 남자가 기타를 연주하고 있다.",
    "주식 시장이 오늘 급락했다.",
]


@pytest.fixture(scope="module")
def cross(tmp_path_factory: pytest.TempPathFactory):
    return load_cross_encoder(tiny_bert(tmp_path_factory.mktemp("ce"), dropout=0.0), device="cpu")


def test_metrics_by_hand_and_against_sklearn() -> None:
    ranked = ["d3", "d1", "d7", "d2"]
    relevant = {"d1", "d2"}
    assert mrr_at_k(ranked, relevant, 10) == 0.5
    assert mrr_at_k(ranked, relevant, 1) == 0.0
    assert recall_at_k(ranked, relevant, 2) == 0.5
    assert average_precision(ranked, relevant) == pytest.approx((1 / 2 + 2 / 4) / 2)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(ranked, relevant, 10) == pytest.approx(expected)
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores = rng.permutation(30).astype(float)  # no ties: sklearn and a ranking agree exactly
        gains = (rng.random(30) < 0.2).astype(float)
        gains[rng.integers(30)] = 1.0
        order = list(np.argsort(-scores))
        rel = set(np.flatnonzero(gains).tolist())
        for k in (1, 5, 10):
            ours = ndcg_at_k(order, rel, k)
            assert ours == pytest.approx(ndcg_score([gains], [scores], k=k), abs=1e-12)
    table = mean_metrics([ranked, ["d2"]], [relevant, {"d2"}], ks=(10,))
    assert table["mrr@10"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="at least one relevant"):
        ndcg_at_k(ranked, set(), 10)


def test_retrieval_only_equals_semantic_search(encoder) -> None:
    pipeline = RetrieveAndRerank(encoder, None, CORPUS, retrieve_k=5)
    hits = pipeline.search("Who plays the guitar?", top_k=3)
    reference = semantic_search(encoder.encode(["Who plays the guitar?"]), encoder.encode(CORPUS), top_k=3)[0]
    assert [h.corpus_id for h in hits] == [h.corpus_id for h in reference]
    np.testing.assert_allclose([h.score for h in hits], [h.score for h in reference], atol=1e-5)
    assert [h.retrieval_rank for h in hits] == [0, 1, 2]
    assert hits[0].text == CORPUS[hits[0].corpus_id]


def test_rerank_reorders_the_candidates_by_cross_encoder_score(encoder, cross) -> None:
    pipeline = RetrieveAndRerank(encoder, cross, CORPUS, retrieve_k=4)
    queries = ["Who plays the guitar?", "market crash"]
    results = pipeline.search(queries, top_k=4)
    retrieved = pipeline.retrieve(queries, 4)
    for query, hits, candidates in zip(queries, results, retrieved, strict=True):
        assert {h.corpus_id for h in hits} == {c.corpus_id for c in candidates}
        expected = cross.rank(query, [c.text for c in candidates])
        assert [h.corpus_id for h in hits] == [candidates[e["corpus_id"]].corpus_id for e in expected]
        np.testing.assert_allclose([h.score for h in hits], [e["score"] for e in expected], atol=1e-6)
    top1 = pipeline.search("Who plays the guitar?", top_k=1)
    assert len(top1) == 1


def test_pipeline_errors(encoder, cross) -> None:
    with pytest.raises(ValueError, match="corpus is empty"):
        RetrieveAndRerank(encoder, cross, [])
    with pytest.raises(TypeError, match=r"corpus\[1\] is int"):
        RetrieveAndRerank(encoder, cross, ["a", 3])
    pipeline = RetrieveAndRerank(encoder, cross, CORPUS)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        pipeline.search("q", top_k=0)
    with pytest.raises(TypeError, match=r"queries\[0\] is NoneType"):
        pipeline.search([None])


def test_mined_negatives_are_close_and_never_a_positive(encoder) -> None:
    anchors = ["Who plays the guitar?", "market crash"]
    positives = [CORPUS[0], CORPUS[3]]
    examples = mine_hard_negatives(encoder, anchors, positives, CORPUS, num_negatives=2)
    assert [e.label for e in examples] == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    guitar_negatives = [e.texts[1] for e in examples[1:3]]
    assert CORPUS[0] not in guitar_negatives
    assert CORPUS[5] in guitar_negatives  # the other guitar sentence is the hardest negative
    triplets = mine_hard_negatives(
        encoder, anchors, positives, CORPUS, num_negatives=1, output_format="triplet"
    )
    assert [len(t.texts) for t in triplets] == [3, 3]
    # margin: a candidate scoring above positive − margin is skipped as a likely false negative
    strict = mine_hard_negatives(encoder, anchors, positives, CORPUS, num_negatives=2, margin=2.0)
    assert [e.label for e in strict] == [1.0, 1.0]
    with pytest.raises(ValueError, match="output_format"):
        mine_hard_negatives(encoder, anchors, positives, CORPUS, output_format="pairs")


def test_rerank_and_search_commands(tmp_path: Path, minilm_path: Path, capsys, monkeypatch) -> None:
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    folder = tmp_path / "ce"
    load_cross_encoder(tiny_bert(tmp_path / "tiny", dropout=0.0), device="cpu").save(folder)

    code, out, err = run_cli(
        ["rerank", str(docs), "-q", "guitar", "-m", str(folder), "-k", "3", "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["query"] == "guitar" and len(result["results"]) == 3
    assert all(r["text"] == CORPUS[r["corpus_id"]] for r in result["results"])

    args = ["search", str(docs), "-q", "Who plays the guitar?", "-m", str(minilm_path), "-k", "2"]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "A man is playing a guitar." in out.splitlines()[1]
    code, out, err = run_cli([*args, "--rerank", str(folder), "--json"], capsys, monkeypatch)
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert len(rows) == 2 and all("retrieval_rank" in r for r in rows)

    code, _, err = run_cli(
        ["rerank", str(docs), "-q", "x", "-m", str(tmp_path / "none")], capsys, monkeypatch
    )
    assert code == 2 and err.startswith("error:") and "none" in err
    code, _, err = run_cli(["rerank", str(docs), "-q", " ", "-m", str(folder)], capsys, monkeypatch)
    assert code == 2 and "query 1 is empty" in err
    code, out, err = run_cli(["info", str(folder)], capsys, monkeypatch)
    assert code == 0 and "cross-encoder" in out and "seeds" in out
