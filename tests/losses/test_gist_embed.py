"""GISTEmbedLoss and CachedGISTEmbedLoss against sentence-transformers' (loss within 1e-5, every
gradient within 1e-5, float64), with a guide that reads the model's token ids and one with another
vocabulary (the texts are decoded and tokenized again); the cached loss equals the plain one at the
same batch; the guide is not trained; the loss trains through munjang's Trainer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from sentence_transformers import SentenceTransformer

import munjang
from munjang.losses import (
    LOSSES,
    CachedGISTEmbedLoss,
    GISTEmbedLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)
from munjang.training import Example, Trainer, TrainingArguments
from tests.helpers.loss_parity import (
    ANCHORS,
    NEGATIVES,
    POSITIVES,
    TOLERANCE,
    assert_same_gradients,
    character_tokenizer,
    gradients,
    one_thread,
    st_features,
    st_losses,
    tiny_parity_bert,
)


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The model, a guide with the same tokenizer (other weights), a guide with another vocabulary."""
    root = tmp_path_factory.mktemp("gist")
    characters = character_tokenizer(
        root / "characters", [t.lower() for t in ANCHORS + POSITIVES + NEGATIVES]
    )
    return {
        "model": tiny_parity_bert(root / "model"),
        "same": tiny_parity_bert(root / "same", seed=1),
        "other": tiny_parity_bert(root / "other", seed=2, tokenizer_from=characters),
    }


def _ours(folder: Path) -> munjang.SentenceEncoder:
    return munjang.load_encoder(folder, device="cpu").double().eval()


def _ref(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu").double().eval()


def _run(loss: torch.nn.Module, model: munjang.SentenceEncoder, columns: list[list[str]]) -> float:
    value = loss([model.tokenize(c) for c in columns], None)
    value.backward()
    return float(value.item())


# name: guide, columns, options
CASES: dict[str, tuple[str, list[list[str]], dict[str, Any]]] = {
    "pairs": ("same", [ANCHORS, POSITIVES], {}),
    "hard negatives": ("same", [ANCHORS, POSITIVES, NEGATIVES], {}),
    "relative margin": (
        "same",
        [ANCHORS, POSITIVES, NEGATIVES],
        {"margin_strategy": "relative", "margin": 0.05},
    ),
    "absolute margin, positives only": (
        "same",
        [ANCHORS, POSITIVES],
        {"margin": 0.02, "contrast_anchors": False, "temperature": 0.05},
    ),
    "another vocabulary": ("other", [ANCHORS, POSITIVES, NEGATIVES], {"contrast_positives": False}),
}


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_parity_with_sentence_transformers(folders: dict[str, Path], case: str, cached: bool) -> None:
    guide, columns, options = CASES[case]
    ours, ref = _ours(folders["model"]), _ref(folders["model"])
    ours_guide, ref_guide = _ours(folders[guide]), _ref(folders[guide])
    if cached:
        ours_loss: torch.nn.Module = CachedGISTEmbedLoss(ours, ours_guide, mini_batch_size=4, **options)
        ref_loss = st_losses.CachedGISTEmbedLoss(ref, ref_guide, mini_batch_size=4, **options)
    else:
        ours_loss = GISTEmbedLoss(ours, ours_guide, **options)
        ref_loss = st_losses.GISTEmbedLoss(ref, ref_guide, **options)
    assert ours_loss.must_retokenize == ref_loss.must_retokenize == (guide == "other")
    ref_value = ref_loss([st_features(ref, c) for c in columns], None)
    ref_value.backward()
    got = _run(ours_loss, ours, columns)
    assert got == pytest.approx(ref_value.item(), abs=TOLERANCE)
    assert_same_gradients(gradients(ours[0].auto_model), gradients(ref[0].auto_model))
    assert all(p.grad is None for p in ours_guide.parameters())  # the guide is never trained


def test_the_guide_masks_false_negatives(folders: dict[str, Path]) -> None:
    """With a guide that finds everything closer than the positive, only the positive is left: the
    loss is 0; with a margin that masks nothing it is MNRL at scale 1/τ with the extra columns."""
    model = _ours(folders["model"])
    features = [model.tokenize(c) for c in (ANCHORS, POSITIVES)]
    with torch.no_grad():
        everything = GISTEmbedLoss(model, model, margin=10.0)(features, None)  # threshold below any cosine
        nothing = GISTEmbedLoss(model, _ours(folders["same"]), margin=-10.0, contrast_anchors=False,
                                contrast_positives=False)(features, None)  # fmt: skip
        mnrl = MultipleNegativesRankingLoss(model, scale=100.0)(features, None)
    assert everything.item() == pytest.approx(0.0, abs=1e-12)
    assert nothing.item() == pytest.approx(mnrl.item(), abs=TOLERANCE)


@pytest.mark.parametrize("mini_batch_size", [1, 4])
def test_cached_equals_plain_at_the_same_batch(folders: dict[str, Path], mini_batch_size: int) -> None:
    columns = [ANCHORS, POSITIVES, NEGATIVES]
    plain, cached = _ours(folders["model"]), _ours(folders["model"])
    guide = _ours(folders["other"])
    expected = _run(GISTEmbedLoss(plain, guide, margin=0.01), plain, columns)
    got = _run(
        CachedGISTEmbedLoss(cached, guide, margin=0.01, mini_batch_size=mini_batch_size), cached, columns
    )
    assert got == pytest.approx(expected, abs=TOLERANCE)
    assert_same_gradients(gradients(cached), gradients(plain))


def test_trains_through_the_trainer_with_a_guide_named_by_folder(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    model = munjang.load_encoder(folders["model"], device="cpu")
    loss = CachedGISTEmbedLoss(model, str(folders["same"]), mini_batch_size=3, temperature=0.05)
    assert loss.get_config_dict()["guide"] == str(folders["same"])
    data = [Example((ANCHORS[i % 6] + f" {i}", POSITIVES[i % 6] + f" {i}")) for i in range(32)]
    batch = [model.tokenize(c) for c in (ANCHORS, POSITIVES)]
    with torch.no_grad():
        before = loss(batch, None).item()
    guide_before = {k: v.clone() for k, v in loss.guide.state_dict().items()}
    args = TrainingArguments(output_dir=str(tmp_path), epochs=1, batch_size=8, learning_rate=1e-3, seed=3,
                             show_progress_bar=False, save_checkpoints=False)  # fmt: skip
    trainer = Trainer(model, loss, data, args=args)
    assert all(not name.startswith("guide") for name, _ in loss.named_parameters())
    trainer.train()
    with torch.no_grad():
        after = loss(batch, None).item()
    assert after < before - 0.05
    for name, value in loss.guide.state_dict().items():
        assert torch.equal(value, guide_before[name]), name


def test_registered_and_checked(folders: dict[str, Path]) -> None:
    assert LOSSES["gist"] is GISTEmbedLoss and LOSSES["cached_gist"] is CachedGISTEmbedLoss
    model = _ours(folders["model"])
    with pytest.raises(ValueError, match="margin_strategy"):
        GISTEmbedLoss(model, model, margin_strategy="percent")
    with pytest.raises(ValueError, match="temperature"):
        GISTEmbedLoss(model, model, temperature=0.0)
    with pytest.raises(ValueError, match="mini_batch_size"):
        CachedGISTEmbedLoss(model, model, mini_batch_size=0)
    with pytest.raises(ValueError, match="columns"):
        GISTEmbedLoss(model, model)([model.tokenize(ANCHORS)], None)
    for loss in (GISTEmbedLoss(model, model), CachedGISTEmbedLoss(model, model)):
        with pytest.raises(ValueError, match="its own way"):
            MatryoshkaLoss(model, loss, [16, 8])


def test_a_training_config_names_the_cached_losses(folders: dict[str, Path], tmp_path: Path) -> None:
    from munjang.training.config import ConfigError, build, load_config
    from tests.training.test_config import write_config, write_nli

    write_nli(tmp_path / "data" / "nli.tsv", 8)
    task = {"name": "nli", "data": {"path": "data/nli.tsv", "format": "nli-triplets"}}
    config = {"model": str(folders["model"]), "device": "cpu", "output_dir": "out",
              "training": {"epochs": 1, "batch_size": 8, "show_progress_bar": False}}  # fmt: skip
    losses = {
        "cached_mnrl": {"name": "cached_mnrl", "mini_batch_size": 2, "scale": 10},
        "cached_gist": {"name": "cached_gist", "guide": str(folders["same"]), "mini_batch_size": 4},
        "gist": {"name": "gist", "guide": str(folders["same"]), "margin_strategy": "relative"},
    }
    for name, loss in losses.items():
        trainer, _ = build(load_config(write_config(tmp_path, {**config, "tasks": [{**task, "loss": loss}]})))
        built = trainer.losses["nli"]
        assert built is not None and type(built) is LOSSES[name]
        assert {k: v for k, v in built.get_config_dict().items() if k in loss} == {
            k: v for k, v in loss.items() if k != "name"
        }
    with pytest.raises(ConfigError, match="guide: missing"):
        load_config(write_config(tmp_path, {**config, "tasks": [{**task, "loss": {"name": "gist"}}]}))
