"""Cross-encoder training: loss parity with sentence-transformers, the shared trainer, the evaluators."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sentence_transformers import CrossEncoder as STCrossEncoder
from sentence_transformers.cross_encoder import losses as st_losses
from sklearn.metrics import average_precision_score, f1_score

from munjang import load_cross_encoder
from munjang.encoders.cross.evaluation import (
    CrossEncoderClassificationEvaluator,
    CrossEncoderCorrelationEvaluator,
    CrossEncoderRerankingEvaluator,
)
from munjang.encoders.cross.losses import BinaryCrossEntropyLoss, CrossEntropyLoss, MSELoss
from munjang.training import Example, Trainer, TrainingArguments
from tests.helpers.training import pair_examples, templated_pairs, tiny_bert


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny"), dropout=0.0)


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    "ours_cls,theirs_cls,num_labels,labels",
    [
        (BinaryCrossEntropyLoss, st_losses.BinaryCrossEntropyLoss, 1, [1.0, 0.0, 0.4, 1.0, 0.0, 0.8]),
        (CrossEntropyLoss, st_losses.CrossEntropyLoss, 3, [0, 2, 1, 1, 0, 2]),
        (MSELoss, st_losses.MSELoss, 1, [1.0, 0.0, 0.4, 1.0, 0.0, 0.8]),
    ],
)
def test_loss_and_gradients_equal_sentence_transformers(
    tiny: Path, tmp_path: Path, ours_cls, theirs_cls, num_labels: int, labels: list
) -> None:
    ours = load_cross_encoder(tiny, head="native", num_labels=num_labels, device="cpu")
    ours.save(tmp_path / "m")
    theirs = STCrossEncoder(str(tmp_path / "m"), device="cpu")
    firsts = ["사과 바나나", "cat dog rain", "서울 부산", "sun", "car road car", "apple"]
    seconds = ["바나나", "dog", "부산 서울 고양이", "rain sun", "apple", "강아지 cat"]
    target = torch.tensor(labels)

    ours.train()
    our_loss = ours_cls(ours)(ours.training_features([firsts, seconds]), target)
    our_loss.backward()
    theirs.train()
    their_loss = theirs_cls(theirs)([firsts, seconds], target)
    their_loss.backward()

    assert abs(our_loss.item() - their_loss.item()) < 1e-5
    g_ours, g_theirs = _grads(ours), _grads(theirs)
    ours_by_hf = {n.split("auto_model.", 1)[1]: g for n, g in g_ours.items()}
    theirs_by_hf = {n.split("model.", 1)[1]: g for n, g in g_theirs.items()}
    assert ours_by_hf.keys() == theirs_by_hf.keys()
    for name, grad in ours_by_hf.items():
        torch.testing.assert_close(grad, theirs_by_hf[name], atol=1e-5, rtol=1e-4, msg=name)


def test_loss_errors_name_the_problem(tiny: Path) -> None:
    one = load_cross_encoder(tiny, device="cpu")
    three = load_cross_encoder(tiny, num_labels=3, device="cpu")
    with pytest.raises(ValueError, match="needs a model with one output score"):
        BinaryCrossEntropyLoss(three)
    with pytest.raises(ValueError, match="at least 2 labels"):
        CrossEntropyLoss(one)
    features = one.training_features([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\]"):
        BinaryCrossEntropyLoss(one)(features, torch.tensor([0.0, 2.0]))
    with pytest.raises(ValueError, match=r"class indices in \[0, 2\]"):
        CrossEntropyLoss(three)(three.training_features([["a"], ["b"]]), torch.tensor([3]))
    with pytest.raises(ValueError, match="2 text columns"):
        one.training_features([["a"], ["b"], ["c"]])
    with pytest.raises(ValueError, match="no prompt named .query."):
        one.training_features([["a"], ["b"]], prompt_name="query")


@pytest.mark.slow  # 13 s of training
def test_trainer_learns_sts_regression_and_saves_a_cross_encoder(minilm_path: Path, tmp_path: Path) -> None:
    train = [Example(pair, shared / 2) for pair, shared in templated_pairs(160, seed=1)]
    dev = templated_pairs(60, seed=2)
    evaluator = CrossEncoderCorrelationEvaluator(
        [p[0] for p, _ in dev], [p[1] for p, _ in dev], [s / 2 for _, s in dev], batch_size=32
    )
    model = load_cross_encoder(minilm_path, device="cpu")
    before = evaluator(model)["spearman"]
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"), epochs=4, batch_size=16, learning_rate=1e-4,
        eval_steps=0, logging_steps=5, show_progress_bar=False, seed=1,
    )  # fmt: skip
    summary = Trainer(model, BinaryCrossEntropyLoss(model), train, evaluator, args).train()
    after = summary["final_metrics"]["spearman"]
    assert after > 0.8 and after > before + 0.3
    saved = load_cross_encoder(tmp_path / "run" / "best", device="cpu")
    assert abs(evaluator(saved)["spearman"] - summary["best_metric"]) < 1e-6
    card = (tmp_path / "run" / "final" / "README.md").read_text()
    assert "Cross-encoder trained with munjang" in card and "BinaryCrossEntropyLoss" in card
    assert "load_cross_encoder" in card


@pytest.mark.slow  # 12 s of training
def test_trainer_learns_classes(minilm_path: Path, tmp_path: Path) -> None:
    data = [Example(pair, shared) for pair, shared in templated_pairs(160, seed=3)]
    dev = templated_pairs(80, seed=4)
    model = load_cross_encoder(minilm_path, num_labels=3, device="cpu")
    evaluator = CrossEncoderClassificationEvaluator([p for p, _ in dev], [s for _, s in dev])
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"), epochs=5, batch_size=16, learning_rate=2e-4,
        eval_steps=0, show_progress_bar=False, seed=0, freeze_word_embeddings=True,
    )  # fmt: skip
    summary = Trainer(model, CrossEntropyLoss(model), data, evaluator, args).train()
    assert summary["final_metrics"]["accuracy"] > 0.8
    assert not model.word_embeddings().weight.requires_grad


def test_correlation_evaluator_equals_scipy(tiny: Path) -> None:
    model = load_cross_encoder(tiny, device="cpu")
    examples = pair_examples(30, seed=4)
    gold = [float(e.label) for e in examples]
    evaluator = CrossEncoderCorrelationEvaluator(
        [e.texts[0] for e in examples], [e.texts[1] for e in examples], gold
    )
    metrics = evaluator(model)
    predicted = model.predict([e.texts for e in examples])
    assert metrics["spearman"] == pytest.approx(spearmanr(predicted, gold)[0], abs=1e-12)
    assert evaluator.primary_metric == "spearman"
    with pytest.raises(ValueError, match="differ in length"):
        CrossEncoderCorrelationEvaluator(["a"], ["b", "c"], [1.0])


class _FixedScores:
    """A stand-in model with known scores, to check the metrics against scikit-learn."""

    def __init__(self, scores: np.ndarray) -> None:
        self.values = scores
        self.num_labels = 1 if scores.ndim == 1 else scores.shape[1]

    def predict(self, pairs, **options):
        return self.values[: len(pairs)]


def test_classification_metrics_equal_sklearn() -> None:
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 200)
    scores = np.clip(labels * 0.3 + rng.random(200) * 0.7, 0, 1).round(2)  # ties on purpose
    pairs = [("a", "b")] * 200
    binary = CrossEncoderClassificationEvaluator(pairs, labels.tolist())(_FixedScores(scores))
    assert binary["average_precision"] == pytest.approx(average_precision_score(labels, scores), abs=1e-12)
    assert binary["f1"] == pytest.approx(f1_score(labels, scores >= 0.5), abs=1e-12)
    classes = rng.integers(0, 3, 200)
    logits = rng.normal(size=(200, 3))
    multi = CrossEncoderClassificationEvaluator(pairs, classes.tolist())(_FixedScores(logits))
    assert multi["f1_macro"] == pytest.approx(f1_score(classes, logits.argmax(1), average="macro"), abs=1e-12)
    assert multi["accuracy"] == pytest.approx((classes == logits.argmax(1)).mean())


def test_reranking_evaluator_on_known_scores() -> None:
    samples = [
        {"query": "q1", "positive": ["d2"], "documents": ["d0", "d1", "d2"]},
        {"query": "q2", "positive": ["e0", "e1"], "documents": ["e0", "e1", "e2"]},
    ]
    # q1: d2 scored highest -> rank 1; q2: e2 first, then e1, e0.
    scores = np.array([0.1, 0.2, 0.9, 0.3, 0.5, 0.8])
    metrics = CrossEncoderRerankingEvaluator(samples, at_k=10)(_FixedScores(scores))
    assert metrics["mrr@10"] == pytest.approx((1.0 + 0.5) / 2)
    ideal = 1 + 1 / np.log2(3)
    assert metrics["ndcg@10"] == pytest.approx((1.0 + (1 / np.log2(3) + 1 / np.log2(4)) / ideal) / 2)
    assert metrics["base_mrr@10"] == pytest.approx((1 / 3 + 1.0) / 2)
    assert metrics["base_ndcg@10"] == pytest.approx(((1 / np.log2(4)) + 1.0) / 2)
    with pytest.raises(ValueError, match="no positive document"):
        CrossEncoderRerankingEvaluator([{"query": "q", "positive": [], "documents": ["d"]}])


def test_training_log_is_jsonl(tiny: Path, tmp_path: Path) -> None:
    model = load_cross_encoder(tiny, device="cpu")
    args = TrainingArguments(
        output_dir=str(tmp_path / "r"), epochs=1, batch_size=8, logging_steps=1, show_progress_bar=False
    )
    Trainer(model, MSELoss(model), pair_examples(16), args=args).train()
    lines = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2] and all(x["type"] == "train" for x in lines)
