"""Trainer: exact resume after Ctrl-C, accumulation, multi-task plan, outputs, bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import munjang
from munjang.losses import CosineSimilarityLoss, MultipleNegativesRankingLoss
from munjang.training import Example, Trainer, TrainingArguments
from tests.helpers.training import pair_examples, tiny_bert, weights


def _args(tmp: Path, **kw) -> TrainingArguments:
    base = {"output_dir": str(tmp), "epochs": 2, "batch_size": 4, "learning_rate": 1e-3,
            "show_progress_bar": False, "logging_steps": 1, "seed": 7}  # fmt: skip
    base.update(kw)
    return TrainingArguments(**base)


def test_interrupted_and_resumed_equals_uninterrupted(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", dropout=0.1)  # dropout on: RNG streams must resume too
    data = pair_examples(30)

    straight = munjang.load_encoder(folder, device="cpu")
    Trainer(straight, CosineSimilarityLoss(straight), data, args=_args(tmp_path / "a")).train()

    def stop_at_11(step: int, loss: float) -> None:  # epoch 0 has 8 steps: 11 is mid-epoch 1
        if step == 11:
            raise KeyboardInterrupt

    first = munjang.load_encoder(folder, device="cpu")
    with pytest.raises(KeyboardInterrupt):
        trainer = Trainer(
            first, CosineSimilarityLoss(first), data, args=_args(tmp_path / "b"), on_step=stop_at_11
        )
        trainer.train()
    assert (tmp_path / "b" / "checkpoints" / "checkpoint-11").is_dir()
    resumed = munjang.load_encoder(folder, device="cpu")
    summary = Trainer(resumed, CosineSimilarityLoss(resumed), data, args=_args(tmp_path / "b")).train(
        resume_from_checkpoint=True
    )
    assert summary["global_step"] == 16
    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=0, atol=1e-6, msg=name)
    changed = munjang.load_encoder(folder, device="cpu").state_dict()
    assert any(not torch.equal(changed[k], a[k]) for k in a)  # training really moved the weights


def test_accumulation_matches_a_larger_batch(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", dropout=0.0)
    data = pair_examples(32)
    big = munjang.load_encoder(folder, device="cpu")
    Trainer(big, CosineSimilarityLoss(big), data, args=_args(tmp_path / "a", epochs=1, batch_size=8)).train()
    small = munjang.load_encoder(folder, device="cpu")
    args = _args(tmp_path / "b", epochs=1, batch_size=4, gradient_accumulation_steps=2)
    trainer = Trainer(small, CosineSimilarityLoss(small), data, args=args)
    assert trainer.total_steps() == 4
    trainer.train()
    for name, value in weights(big).items():
        torch.testing.assert_close(small.state_dict()[name], value, rtol=0, atol=1e-5, msg=name)


def test_multi_task_round_robin_plan_sees_every_example_once(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny")
    enc = munjang.load_encoder(folder, device="cpu")
    sts = pair_examples(10)
    triplets = [Example(("a b", "a c", "x y")) for _ in range(22)]
    trainer = Trainer(
        enc,
        {"sts": CosineSimilarityLoss(enc), "nli": MultipleNegativesRankingLoss(enc)},
        {"sts": sts, "nli": triplets},
        args=_args(tmp_path / "o", epochs=1, batch_size=4),
    )
    plan = trainer.epoch_plan(0)
    assert [t for t, _ in plan[:6]] == ["nli", "sts", "nli", "sts", "nli", "sts"]
    assert [t for t, _ in plan[6:]] == ["nli", "nli", "nli"]
    for task, size in (("sts", 10), ("nli", 22)):
        seen = sorted(i for t, batch in plan if t == task for i in batch)
        assert seen == list(range(size))
    assert trainer.epoch_plan(1) != plan and trainer.epoch_plan(0) == plan  # reshuffled per epoch, seeded
    summary = trainer.train()
    assert summary["global_step"] == 9
    # Each task's own loss is logged beside the mixed running loss: one step per record here.
    log = [json.loads(line) for line in (tmp_path / "o" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in log if r["type"] == "train"]
    assert [[k for k in r if k.startswith("loss_")] for r in train] == [[f"loss_{t}"] for t, _ in plan]
    for record, (task, _) in zip(train, plan, strict=True):
        assert record[f"loss_{task}"] == pytest.approx(record["loss"])


def test_outputs_log_best_model_and_card(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny")
    enc = munjang.load_encoder(folder, device="cpu")
    data = pair_examples(24)
    calls: list[int] = []

    class Spearmanish:
        primary_metric = "score"

        def __call__(self, encoder: munjang.SentenceEncoder) -> dict[str, float]:
            calls.append(1)
            return {"score": [0.5, 0.9, 0.7][len(calls) - 1]}

    args = _args(tmp_path / "o", epochs=3, batch_size=8, save_total_limit=1, logging_steps=2)
    summary = Trainer(enc, CosineSimilarityLoss(enc), data, Spearmanish(), args).train()
    assert summary["best_metric"] == 0.9 and summary["best_step"] == 6
    log = [json.loads(line) for line in (tmp_path / "o" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if r["type"] == "eval"] == [3, 6, 9]
    assert all("loss" in r and "learning_rate" in r for r in log if r["type"] == "train")
    assert [p.name for p in (tmp_path / "o" / "checkpoints").iterdir()] == ["checkpoint-9"]
    card = (tmp_path / "o" / "best" / "README.md").read_text()
    assert "CosineSimilarityLoss" in card and "| score | 0.9000 |" in card
    reloaded = munjang.load_encoder(tmp_path / "o" / "final", device="cpu")
    torch.testing.assert_close(reloaded.encode(["사과 apple"]), enc.encode(["사과 apple"]))


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        TrainingArguments(batch_size=0)
    with pytest.raises(ValueError, match="unknown training argument.*lr"):
        TrainingArguments.from_dict({"lr": 1e-5})
    enc = munjang.load_encoder(tiny_bert(tmp_path / "tiny"), device="cpu")
    with pytest.raises(ValueError, match="same names"):
        Trainer(enc, {"a": CosineSimilarityLoss(enc)}, {"b": pair_examples(4)})
    with pytest.raises(ValueError, match="'train' is empty"):
        Trainer(enc, CosineSimilarityLoss(enc), [])
    with pytest.raises(FileNotFoundError, match="no checkpoint to resume from"):
        Trainer(enc, CosineSimilarityLoss(enc), pair_examples(4), args=_args(tmp_path / "x")).train(True)


def test_bf16_mixed_precision_trains_on_cpu(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", dropout=0.0)
    enc = munjang.load_encoder(folder, device="cpu")
    losses: list[float] = []
    args = _args(tmp_path / "o", epochs=1, batch_size=8, mixed_precision="bf16")
    Trainer(
        enc, CosineSimilarityLoss(enc), pair_examples(32), args=args, on_step=lambda s, v: losses.append(v)
    ).train()
    assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
    assert next(enc.parameters()).dtype == torch.float32  # autocast: weights stay fp32
    from munjang.training.trainer import resolve_mixed_precision

    assert resolve_mixed_precision("no", torch.device("cpu")) == "no"
    assert resolve_mixed_precision("auto", torch.device("cpu")) in ("no", "bf16")
