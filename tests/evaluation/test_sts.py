"""STSEvaluator: same numbers as scipy on real STSb pairs, all metric keys, exact answers on a toy encoder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

import munjang
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator
from tests.helpers.paths import REPO

N_PAIRS = 50
KEYS = {f"{m}_{fn}" for m in ("pearson", "spearman") for fn in ("cosine", "dot", "euclidean", "manhattan")}


def stsb_test_file() -> Path:
    """sts-test.csv in $MUNJANG_DATA, else $MUNJANG_SHARED/data, else ../shared/data next to the repo."""
    if "MUNJANG_DATA" in os.environ:
        root = Path(os.environ["MUNJANG_DATA"])
    elif "MUNJANG_SHARED" in os.environ:
        root = Path(os.environ["MUNJANG_SHARED"]) / "data"
    else:
        root = REPO.parent / "shared" / "data"
    path = root / "stsb" / "sts-test.csv"
    if not path.is_file():
        pytest.fail(f"{path} is missing: set MUNJANG_DATA to the folder holding stsb/")
    return path


@pytest.fixture(scope="module")
def minilm() -> munjang.SentenceEncoder:
    return munjang.load_encoder(device="cpu")


class CountingEncoder:
    """Looks up fixed vectors; records what it was asked to encode."""

    def __init__(self, vectors: dict[str, list[float]], similarity_fn_name: str = "cosine") -> None:
        self.vectors = vectors
        self.similarity_fn_name = similarity_fn_name
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append((list(sentences), kwargs))
        return np.array([self.vectors[s] for s in sentences], dtype=np.float32)


def expected_similarities(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return {
        "cosine": (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)),
        "dot": (a * b).sum(1),
        "euclidean": -np.sqrt(((a - b) ** 2).sum(1)),
        "manhattan": -np.abs(a - b).sum(1),
    }


def test_parity_with_scipy_on_stsb(minilm: munjang.SentenceEncoder) -> None:
    data = read_sts(stsb_test_file())
    s1, s2, gold = data.sentences1[:N_PAIRS], data.sentences2[:N_PAIRS], data.scores[:N_PAIRS]
    evaluator = STSEvaluator(s1, s2, gold, name="stsb-test")
    results = evaluator(minilm)

    assert set(results) == KEYS
    assert all(type(v) is float for v in results.values())
    assert evaluator.primary_metric == "spearman_cosine"
    a = minilm.encode(s1, batch_size=16)
    b = minilm.encode(s2, batch_size=16)
    for fn, predicted in expected_similarities(a, b).items():
        assert results[f"pearson_{fn}"] == pytest.approx(pearsonr(predicted, gold)[0], abs=1e-5)
        assert results[f"spearman_{fn}"] == pytest.approx(spearmanr(predicted, gold)[0], abs=1e-5)
    # A working sentence encoder ranks STS pairs well above chance.
    assert results["spearman_cosine"] > 0.6


def test_from_data_main_similarity_and_config(minilm: munjang.SentenceEncoder) -> None:
    data = read_sts(stsb_test_file())
    data.sentences1, data.sentences2, data.scores = (
        data.sentences1[:20],
        data.sentences2[:20],
        data.scores[:20],
    )
    evaluator = STSEvaluator.from_data(data, similarity_fns=["cosine", "dot"], main_similarity="dot")
    assert evaluator.primary_metric == "spearman_dot"
    assert len(evaluator) == 20
    results = evaluator(minilm)
    assert set(results) == {"pearson_cosine", "spearman_cosine", "pearson_dot", "spearman_dot"}
    assert evaluator.primary_metric == "spearman_dot"
    assert evaluator.get_config_dict() == {"similarity_fns": ["cosine", "dot"], "main_similarity": "dot"}


def test_perfect_order_gives_spearman_one() -> None:
    # Each pair's cosine similarity rises with the gold score; the vectors are not collinear.
    angles = [0.1, 0.5, 0.9, 1.3]
    vectors = {"anchor": [1.0, 0.0]}
    for i, angle in enumerate(angles):
        vectors[f"s{i}"] = [float(np.cos(angle)), float(np.sin(angle))]
    s1 = ["anchor"] * 4
    s2 = [f"s{i}" for i in range(4)]
    gold = [5.0, 3.5, 2.0, 0.5]
    encoder = CountingEncoder(vectors)
    results = STSEvaluator(s1, s2, gold, similarity_fns=["cosine", "euclidean"])(encoder)
    assert results["spearman_cosine"] == 1.0
    assert results["spearman_euclidean"] == 1.0
    assert 0.9 < results["pearson_cosine"] <= 1.0
    reversed_results = STSEvaluator(s1, s2, gold[::-1], similarity_fns=["cosine"])(encoder)
    assert reversed_results["spearman_cosine"] == -1.0


def test_each_distinct_sentence_is_encoded_once() -> None:
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    encoder = CountingEncoder(vectors, similarity_fn_name="manhattan")
    evaluator = STSEvaluator(
        ["a", "b", "a"], ["b", "c", "c"], [1.0, 2.0, 3.0], batch_size=7, prompt_name="query"
    )
    results = evaluator(encoder)
    assert len(encoder.calls) == 1
    sentences, options = encoder.calls[0]
    assert sentences == ["a", "b", "c"]
    assert options == {"batch_size": 7, "show_progress_bar": None, "prompt_name": "query"}
    assert evaluator.primary_metric == "spearman_manhattan"
    assert set(results) == KEYS


def test_encoder_similarity_outside_the_list_is_still_computed() -> None:
    encoder = CountingEncoder({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [2.0, 1.0]}, similarity_fn_name="dot")
    evaluator = STSEvaluator(["a", "b"], ["c", "c"], [1.0, 2.0], similarity_fns=["cosine"])
    results = evaluator(encoder)
    assert evaluator.primary_metric == "spearman_dot"
    assert evaluator.primary_metric in results


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sentences2": ["x"]}, "differ in length"),
        ({"scores": [1.0, 1.0]}, "all gold scores are equal"),
        ({"scores": [1.0, float("nan")]}, "finite"),
        ({"similarity_fns": ["jaccard"]}, "unknown similarity function"),
        ({"similarity_fns": ["cosine"], "main_similarity": "dot"}, "not among similarity_fns"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"sentences1": ["a", "b"], "sentences2": ["c", "d"], "scores": [1.0, 2.0]}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        STSEvaluator(**arguments)


def test_too_few_pairs() -> None:
    with pytest.raises(ValueError, match="at least 2 pairs"):
        STSEvaluator(["a"], ["b"], [1.0])
