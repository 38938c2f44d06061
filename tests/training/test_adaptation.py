"""Domain adaptation on a tiny random BERT: both objectives learn a repeated corpus (the loss falls),
the saved encoder loads with its pipeline kept, and the corpus is split into sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import munjang
from munjang.training.adaptation import adapt, corpus_sentences
from tests.helpers.training import tiny_bert

CORPUS = [
    "보험금 청구는 사고가 난 날부터 삼 년 안에 해야 한다.",
    "계약자는 보험료를 매달 자동이체로 낼 수 있다.",
    "The policy covers hospital stays of up to thirty days.",
    "해지 환급금은 납입한 보험료보다 적을 수 있다.",
    "Claims must be filed within three years of the accident.",
    "피보험자가 바뀌면 회사에 바로 알려야 한다.",
    "대출 이자는 매월 말일에 계좌에서 빠져나간다.",
    "The premium is paid monthly by direct debit.",
]


@pytest.fixture
def tiny(tmp_path: Path) -> munjang.SentenceEncoder:
    return munjang.load_encoder(tiny_bert(tmp_path / "tiny", dropout=0.0), device="cpu", pooling="mean")


@pytest.mark.parametrize("method", ["mlm", pytest.param("tsdae", marks=pytest.mark.slow)])
def test_loss_falls_and_the_adapted_encoder_loads(
    method: str, tiny: munjang.SentenceEncoder, tmp_path: Path
) -> None:
    torch.set_num_threads(1)
    losses: list[float] = []
    summary = adapt(
        tiny,
        method,
        CORPUS * 4,
        tmp_path / "run",
        steps=60,
        batch_size=8,
        learning_rate=5e-3,
        max_seq_length=24,
        show_progress_bar=False,
        on_step=lambda step, loss: losses.append(loss),
    )
    assert summary["global_step"] == 60 and summary["method"] == method
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.75 * first, (first, last)
    folder = Path(summary["final"])
    adapted = munjang.load_encoder(folder, device="cpu")
    assert [type(m).__name__ for m in adapted] == [type(m).__name__ for m in tiny]
    assert adapted.max_seq_length == tiny.max_seq_length  # training's shorter window is not saved
    assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"]
    vectors = adapted.encode(CORPUS[:2])
    assert torch.allclose(torch.as_tensor(vectors), torch.as_tensor(tiny.encode(CORPUS[:2])), atol=1e-5)


def test_freezing_word_embeddings_keeps_them(tiny: munjang.SentenceEncoder, tmp_path: Path) -> None:
    before = tiny.word_embeddings().weight.detach().clone()
    adapt(
        tiny, "mlm", CORPUS, tmp_path / "run", steps=3, freeze_word_embeddings=True, show_progress_bar=False
    )
    assert torch.equal(tiny.word_embeddings().weight, before)


def test_corpus_sentences_split_trim_and_drop_short_or_repeated() -> None:
    pages = ["보험금은 삼 년 안에 청구한다. 보험료는 매달 낸다.\n\n- 3 -", "보험금은 삼 년 안에 청구한다."]
    assert corpus_sentences(pages) == ["보험금은 삼 년 안에 청구한다.", "보험료는 매달 낸다."]


def test_unknown_method_is_named(tiny: munjang.SentenceEncoder, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="simcse"):
        adapt(tiny, "simcse", CORPUS, tmp_path / "run")


@pytest.mark.slow
def test_an_interrupted_tsdae_run_resumes_to_the_same_weights(tmp_path: Path) -> None:
    """The noise is drawn from the RNG the checkpoints save, so resuming redraws the same deletions."""
    torch.set_num_threads(1)
    model_dir = tiny_bert(tmp_path / "tiny", dropout=0.0)
    options = {
        "steps": 4,
        "batch_size": 4,
        "learning_rate": 1e-3,
        "max_seq_length": 16,
        "show_progress_bar": False,
    }
    straight = munjang.load_encoder(model_dir, device="cpu")
    adapt(straight, "tsdae", CORPUS, tmp_path / "straight", **options)

    def stop_at_two(step: int, loss: float) -> None:
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        adapt(
            munjang.load_encoder(model_dir, device="cpu"),
            "tsdae",
            CORPUS,
            tmp_path / "run",
            on_step=stop_at_two,
            **options,
        )
    resumed = munjang.load_encoder(model_dir, device="cpu")
    summary = adapt(resumed, "tsdae", CORPUS, tmp_path / "run", resume=True, **options)
    assert summary["global_step"] == 4
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), name
