"""CrossEncoder: predict/rank parity with sentence-transformers, both save layouts, errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import CrossEncoder as STCrossEncoder

from munjang import load_cross_encoder, load_encoder
from munjang.encoders.cross import CrossEncoder
from munjang.errors import InputTooLongError, ModelLoadError
from tests.helpers.training import tiny_bert

PAIRS = [
    ("A man is playing a guitar.", "A person plays an instrument."),
    ("한 남자가 기타를 치고 있다.", "남자가 악기를 연주한다."),
    ("cat", "dog"),
    ("The weather is lovely today, warm and bright with no clouds anywhere.", "It rains."),
    ("서울은 한국의 수도이다.", "부산은 항구 도시이다. 바다가 아름답다."),
    ("", "empty first text"),
]

logging.getLogger("sentence_transformers").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny"), dropout=0.0)


def _st(path: Path, **kwargs) -> STCrossEncoder:
    return STCrossEncoder(str(path), device="cpu", **kwargs)


def test_seeds_head_on_plain_encoder(tiny: Path) -> None:
    model = load_cross_encoder(tiny, device="cpu")
    assert model.head == "seeds" and model.num_labels == 1
    names = [type(m).__name__ for m in model]
    assert names == ["Transformer", "Pooling", "Dropout", "Dense", "Dropout", "Dense"]
    assert isinstance(model[3].activation, torch.nn.GELU)
    assert model[1].modes == ("cls",)
    assert isinstance(model.activation, torch.nn.Sigmoid)
    model.activation = torch.nn.Identity()  # stays an attribute, not a pipeline step
    assert len(model) == 6
    logits = model.predict([("a", "b")])
    with_sigmoid = model.predict([("a", "b")], activation=torch.nn.Sigmoid())
    np.testing.assert_allclose(torch.sigmoid(torch.from_numpy(logits)).numpy(), with_sigmoid, atol=1e-6)


@pytest.mark.parametrize("head,num_labels", [("seeds", 1), ("seeds", 3), ("native", 1), ("native", 3)])
def test_st_loads_what_we_save_with_equal_scores(
    tiny: Path, tmp_path: Path, head: str, num_labels: int
) -> None:
    ours = load_cross_encoder(tiny, head=head, num_labels=num_labels, device="cpu")
    ours.save(tmp_path / "ce")
    theirs = _st(tmp_path / "ce")
    assert theirs.num_labels == num_labels
    np.testing.assert_allclose(ours.predict(PAIRS), theirs.predict(PAIRS), atol=1e-5)
    if num_labels > 1:
        np.testing.assert_allclose(
            ours.predict(PAIRS, apply_softmax=True), theirs.predict(PAIRS, apply_softmax=True), atol=1e-5
        )


def test_we_load_what_st_saves(tiny: Path, tmp_path: Path) -> None:
    torch.manual_seed(3)
    theirs = _st(tiny, num_labels=1)
    theirs.save(str(tmp_path / "st"))
    ours = load_cross_encoder(tmp_path / "st", device="cpu")
    assert ours.head == "native"
    np.testing.assert_allclose(ours.predict(PAIRS), theirs.predict(PAIRS), atol=1e-5)


def test_published_layout_without_modules_json(tiny: Path, tmp_path: Path) -> None:
    """sentence-transformers 4/5 and the hub's rerankers: a plain *ForSequenceClassification folder."""
    theirs = _st(tiny, num_labels=1)
    folder = tmp_path / "old"
    theirs.model.save_pretrained(str(folder))
    theirs.tokenizer.save_pretrained(str(folder))
    config = json.loads((folder / "config.json").read_text())
    config["sbert_ce_default_activation_function"] = "torch.nn.modules.linear.Identity"
    (folder / "config.json").write_text(json.dumps(config))
    ours = load_cross_encoder(folder, device="cpu")
    assert isinstance(ours.activation, torch.nn.Identity)
    raw = theirs.predict(PAIRS, activation_fn=torch.nn.Identity())
    np.testing.assert_allclose(ours.predict(PAIRS), raw, atol=1e-5)


def test_save_load_round_trip_is_exact(tiny: Path, tmp_path: Path) -> None:
    model = load_cross_encoder(tiny, num_labels=2, device="cpu")
    model.save(tmp_path / "a")
    again = load_cross_encoder(tmp_path / "a", device="cpu")
    assert again.head == "seeds" and again.num_labels == 2
    for (name, p), (_, q) in zip(model.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
    settings = json.loads((tmp_path / "a" / "config_sentence_transformers.json").read_text())
    assert settings["model_type"] == "CrossEncoder"
    assert settings["activation_fn"] == "torch.nn.modules.linear.Identity"


def test_e5_parity_and_no_token_type_ids(e5_path: Path, tmp_path: Path) -> None:
    """e5-small uses an XLM-R tokenizer: no segment ids, as for RoBERTa-style models."""
    model = load_cross_encoder(e5_path, device="cpu")
    features = model.tokenize(PAIRS[:2])
    assert "token_type_ids" not in features
    model.save(tmp_path / "e5ce")
    theirs = _st(tmp_path / "e5ce")
    np.testing.assert_allclose(model.predict(PAIRS), theirs.predict(PAIRS), atol=1e-5)


def test_bert_pairs_get_segment_ids(tiny: Path) -> None:
    model = load_cross_encoder(tiny, device="cpu")
    features = model.tokenize([("a b", "c d e")])
    types = features["token_type_ids"][0].tolist()
    assert types == [0, 0, 0, 0, 1, 1, 1, 1]  # [CLS] a b [SEP] | c d e [SEP]


def test_predict_order_independent_of_batching(tiny: Path) -> None:
    model = load_cross_encoder(tiny, num_labels=3, device="cpu")
    one_by_one = np.stack([model.predict(p) for p in PAIRS])
    for batch_size in (1, 2, 32):
        np.testing.assert_allclose(model.predict(PAIRS, batch_size=batch_size), one_by_one, atol=1e-5)
    assert model.predict(PAIRS[0]).shape == (3,)
    assert model.predict(PAIRS, convert_to_tensor=True).shape == (len(PAIRS), 3)
    probabilities = model.predict(PAIRS, apply_softmax=True)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    assert model.predict([]).shape == (0, 3)


def test_rank_matches_sentence_transformers(tiny: Path, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = load_cross_encoder(tiny, device="cpu")
    model.save(tmp_path / "r")
    docs = [b for _, b in PAIRS]
    ours = model.rank("A man plays guitar", docs, top_k=4, return_documents=True)
    theirs = _st(tmp_path / "r").rank("A man plays guitar", docs, top_k=4, return_documents=True)
    assert [h["corpus_id"] for h in ours] == [h["corpus_id"] for h in theirs]
    np.testing.assert_allclose([h["score"] for h in ours], [h["score"] for h in theirs], atol=1e-5)
    assert [h["text"] for h in ours] == [docs[h["corpus_id"]] for h in ours]
    scores = [h["score"] for h in model.rank("q", docs)]
    assert scores == sorted(scores, reverse=True) and len(scores) == len(docs)


def test_bad_input_is_named(tiny: Path) -> None:
    model = load_cross_encoder(tiny, device="cpu")
    with pytest.raises(TypeError, match=r"pairs\[1\] is not a \(text, text\) pair"):
        model.predict([("a", "b"), ("only one",)])
    with pytest.raises(TypeError, match=r"pairs\[0\]\[1\] is int"):
        model.predict([("a", 3)])
    with pytest.raises(TypeError, match="single string"):
        model.predict("just a string")
    model.max_seq_length = 8
    with pytest.raises(InputTooLongError, match=r"pairs\[0\] has \d+ tokens"):
        model.predict([("one two three four", "five six seven eight")], truncate=False)
    assert model.predict([("one two three four", "five six seven eight")]).shape == (1,)
    classes = load_cross_encoder(tiny, num_labels=3, device="cpu")
    with pytest.raises(ValueError, match="rank needs a model with one output score"):
        classes.rank("q", ["d"])


def test_load_errors(tiny: Path, tmp_path: Path) -> None:
    model = load_cross_encoder(tiny, num_labels=3, device="cpu")
    model.save(tmp_path / "three")
    with pytest.raises(ModelLoadError, match="the saved head has 3 labels, not 1"):
        load_cross_encoder(tmp_path / "three", num_labels=1)
    assert load_cross_encoder(tmp_path / "three", num_labels=1, head="seeds").num_labels == 1
    with pytest.raises(ModelLoadError, match="holds a cross-encoder"):
        load_encoder(tmp_path / "three")
    with pytest.raises(ModelLoadError, match="not a model folder"):
        load_cross_encoder(tmp_path)
    with pytest.raises(ValueError, match="head must be one of"):
        load_cross_encoder(tiny, head="mlp")


def test_cross_encoder_from_a_bi_encoder_folder(minilm_path: Path) -> None:
    """A sentence-transformers bi-encoder folder gives its transformer a new head."""
    model = load_cross_encoder(minilm_path, device="cpu")
    assert isinstance(model, CrossEncoder) and model.head == "seeds"
    assert model.transformer.hidden_size == 384
    assert model.predict(PAIRS).shape == (len(PAIRS),)
