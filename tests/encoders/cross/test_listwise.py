"""Listwise cross-encoder training: ListNet, PListMLE and ListMLE equal sentence-transformers' losses
(value and gradients) on a BERT-style cross-encoder and an LLM reranker, lists of different lengths;
the trainer takes ListwiseExample data and a few steps rank the positives higher."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from sentence_transformers import CrossEncoder as STCrossEncoder
from sentence_transformers.cross_encoder import losses as st_losses

from munjang import load_cross_encoder
from munjang.encoders.cross import CrossEncoder
from munjang.encoders.cross.losses import (
    BinaryCrossEntropyLoss,
    ListMLELoss,
    ListNetLoss,
    PListMLELoss,
    listwise_batch,
)
from munjang.training import Example, ListwiseExample, Trainer, TrainingArguments
from tests.helpers.llm import tiny_llm_reranker
from tests.helpers.training import tiny_bert

logging.getLogger("sentence_transformers").setLevel(logging.ERROR)

# Lists of 3, 1 and 4 documents: the padding of the shorter ones must not count.
QUERIES = ["서울은 어디에 있나?", "cat", "기타 치는 사람"]
DOCUMENTS = [
    ["서울은 한국의 수도이다.", "부산은 항구 도시이다.", "A man is playing a guitar."],
    ["dog rain cat"],
    ["한 남자가 기타를 친다.", "아이들이 공원에서 뛰어논다.", "", "기타 기타 기타"],
]
LABELS = [[1.0, 0.0, 0.0], [1.0], [2.0, 0.0, 0.0, 1.0]]


@pytest.fixture(scope="module", params=["bert", "llm"])
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "llm":
        return tiny_llm_reranker(tmp / "reranker", chat=True)
    model = load_cross_encoder(tiny_bert(tmp / "bert", dropout=0.0), head="native", device="cpu")
    model.save(tmp / "cross")
    return tmp / "cross"


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Gradients by the Hugging Face parameter name (munjang and sentence-transformers prefix differently)."""
    out = {}
    for name, p in model.named_parameters():
        if p.grad is not None:
            out[name.split("auto_model.", 1)[-1].split("0.model.", 1)[-1]] = p.grad.detach().clone()
    return out


def _pairs() -> list[ListwiseExample]:
    return [
        ListwiseExample(q, tuple(d), tuple(y)) for q, d, y in zip(QUERIES, DOCUMENTS, LABELS, strict=True)
    ]


@pytest.mark.parametrize(
    "ours_make,theirs_make",
    [
        (lambda m: ListNetLoss(m), lambda m: st_losses.ListNetLoss(m)),
        (lambda m: ListNetLoss(m, mini_batch_size=2), lambda m: st_losses.ListNetLoss(m, mini_batch_size=2)),
        (lambda m: PListMLELoss(m), lambda m: st_losses.PListMLELoss(m)),
        (
            lambda m: PListMLELoss(m, respect_input_order=False),
            lambda m: st_losses.PListMLELoss(m, respect_input_order=False),
        ),
        (lambda m: ListMLELoss(m), lambda m: st_losses.ListMLELoss(m)),
        (
            lambda m: ListNetLoss(m, activation_fn=torch.nn.Sigmoid()),
            lambda m: st_losses.ListNetLoss(m, activation_fn=torch.nn.Sigmoid()),
        ),
    ],
    ids=["listnet", "listnet-mini2", "plistmle", "plistmle-by-label", "listmle", "listnet-sigmoid"],
)
def test_listwise_losses_equal_sentence_transformers(folder: Path, ours_make, theirs_make) -> None:
    ours = load_cross_encoder(folder, device="cpu")
    theirs = STCrossEncoder(str(folder), device="cpu")
    columns, labels = listwise_batch(_pairs())
    assert labels.shape == (3, 4) and int((~labels.isnan()).sum()) == len(columns[0]) == 8

    ours.train()
    our_loss = ours_make(ours)(ours.training_features(columns), labels)
    our_loss.backward()
    theirs.train()
    their_loss = theirs_make(theirs)([QUERIES, DOCUMENTS], [torch.tensor(x) for x in LABELS])
    their_loss.backward()

    assert our_loss.item() > 0.01  # a real loss, not an all-masked zero
    assert abs(our_loss.item() - their_loss.item()) < 1e-5
    g_ours, g_theirs = _grads(ours), _grads(theirs)
    assert g_ours.keys() == g_theirs.keys() and g_ours
    for name, grad in g_ours.items():
        torch.testing.assert_close(grad, g_theirs[name], atol=1e-5, rtol=1e-4, msg=name)


def test_padding_does_not_change_a_lists_loss(folder: Path) -> None:
    """A query's loss alone equals its loss beside a longer list (the padding is masked out)."""
    model = load_cross_encoder(folder, device="cpu")
    short = ListwiseExample("cat", ("dog rain cat", "서울"), (1.0, 0.0))
    long = ListwiseExample("기타", ("a", "b", "c", "d", "e"), (0.0, 1.0, 0.0, 0.0, 2.0))
    for loss in (ListNetLoss(model), PListMLELoss(model), ListMLELoss(model)):
        alone = [
            loss(model.training_features(c), y).item() for c, y in map(listwise_batch, ([short], [long]))
        ]
        columns, labels = listwise_batch([short, long])
        together = loss(model.training_features(columns), labels).item()
        assert abs(together - sum(alone) / 2) < 1e-5, type(loss).__name__


def test_listwise_errors_name_the_problem(folder: Path) -> None:
    model = load_cross_encoder(folder, device="cpu")
    with pytest.raises(ValueError, match="2 documents but 1 labels"):
        ListwiseExample("q", ("a", "b"), (1.0,))
    with pytest.raises(ValueError, match="not a finite number"):
        ListwiseExample("q", ("a",), (float("nan"),))
    with pytest.raises(ValueError, match="at least one document"):
        ListwiseExample("q", (), ())
    pair_features = model.training_features([["q", "q"], ["a", "b"]])
    with pytest.raises(ValueError, match="train it on ListwiseExample data"):
        ListNetLoss(model)(pair_features, torch.tensor([1.0, 0.0]))
    _, labels = listwise_batch(_pairs())
    with pytest.raises(ValueError, match="expects 8 .query, document. pairs, got 2"):
        ListNetLoss(model)(pair_features, labels)
    trainer = Trainer(model, ListNetLoss(model), [_pairs()[0], Example(("q", "a"), 1.0)])
    with pytest.raises(ValueError, match="mixes ListwiseExample with Example"):
        trainer._forward_backward(None, None, "train", [_pairs()[0], Example(("q", "a"), 1.0)], 0, True)


SUBJECTS = ["고양이", "강아지", "기타", "자동차", "서울", "바다"]


def _made_up_lists(seed: int) -> list[ListwiseExample]:
    """A query names a subject; the document about it is relevant (label 1), the others are not."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(12):
        subject = SUBJECTS[i % len(SUBJECTS)]
        others = [s for s in SUBJECTS if s != subject]
        picks = torch.randperm(len(others), generator=g)[: 2 + i % 3].tolist()
        docs = [f"{subject} 이야기"] + [f"{others[j]} 이야기" for j in picks]
        order = torch.randperm(len(docs), generator=g).tolist()
        out.append(
            ListwiseExample(
                f"{subject}에 대해", tuple(docs[j] for j in order), tuple(float(j == 0) for j in order)
            )
        )
    return out


def _positive_mrr(model: CrossEncoder, data: list[ListwiseExample]) -> float:
    total = 0.0
    for ex in data:
        ranked = model.rank(ex.query, list(ex.documents))
        rank = next(r for r, hit in enumerate(ranked, 1) if ex.labels[hit["corpus_id"]] == 1.0)
        total += 1.0 / rank
    return total / len(data)


@pytest.mark.parametrize("loss_cls", [ListNetLoss, PListMLELoss])
def test_a_few_listwise_steps_rank_positives_higher(folder: Path, tmp_path: Path, loss_cls) -> None:
    model = load_cross_encoder(folder, device="cpu")
    data = _made_up_lists(seed=0)
    if loss_cls is PListMLELoss:  # it reads the input order as the ideal ranking: positive first
        data = [
            ListwiseExample(
                ex.query,
                *zip(*sorted(zip(ex.documents, ex.labels, strict=True), key=lambda p: -p[1]), strict=True),
            )
            for ex in data
        ]
    columns, labels = listwise_batch(data)
    loss = loss_cls(model)
    # ListNet's least value is the entropy of the labels' softmax (binary labels are no one-hot target)
    targets = labels.masked_fill(labels.isnan(), float("-inf")).softmax(dim=1)
    floor = (
        -(targets * targets.clamp_min(1e-30).log()).sum(dim=1).mean().item()
        if loss_cls is ListNetLoss
        else 0.0
    )
    with torch.no_grad():
        before = loss(model.training_features(columns), labels).item() - floor
    mrr_before = _positive_mrr(model, data)
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"), epochs=10, batch_size=4, learning_rate=1e-2,
        eval_steps=0, logging_steps=5, show_progress_bar=False, save_checkpoints=False, seed=0,
        warmup_ratio=0.0,
    )  # fmt: skip
    Trainer(model, loss, data, None, args).train()
    model.eval()
    with torch.no_grad():
        after = loss(model.training_features(columns), labels).item() - floor
    assert 0 < after < 0.7 * before
    assert _positive_mrr(model, data) > max(mrr_before + 0.15, 0.8)


def test_bce_on_the_log_odds_trains_an_llm_reranker(tmp_path: Path) -> None:
    """Pairwise BCE through the trainer on the causal LM's yes / no log-odds also ranks positives higher."""
    model = load_cross_encoder(tiny_llm_reranker(tmp_path / "r", chat=True), device="cpu")
    data = _made_up_lists(seed=1)
    pairs = [Example((ex.query, d), y) for ex in data for d, y in zip(ex.documents, ex.labels, strict=True)]
    mrr_before = _positive_mrr(model, data)
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"), epochs=20, batch_size=8, learning_rate=3e-3,
        eval_steps=0, logging_steps=5, show_progress_bar=False, save_checkpoints=False, seed=0,
        warmup_ratio=0.0,
    )  # fmt: skip
    Trainer(model, BinaryCrossEntropyLoss(model), pairs, None, args).train()
    model.eval()
    assert _positive_mrr(model, data) > max(mrr_before + 0.15, 0.8)
