"""Parity of munjang's MultiVectorEncoder with sentence-transformers' on tiny random models, both save
directions, for the sentence-transformers >= 6 layout and PyLate's ColBERT layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.multi_vector import load_multi_vector_encoder, maxsim
from munjang.errors import ModelLoadError
from tests.helpers.multi_vector import DOCUMENTS, QUERIES, pylate_colbert, st_multi_vector


@pytest.fixture(scope="module")
def st_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default tiny model (fixed expansion, no attention to it), saved once for the read-only tests."""
    return st_multi_vector(Path(tmp_path_factory.mktemp("mv")) / "st")


def reference(path: Path):
    from sentence_transformers import MultiVectorEncoder

    return MultiVectorEncoder(str(path), device="cpu")


def assert_same_tokens(ours: list[np.ndarray], theirs: list) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        b = b.detach().cpu().numpy()
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-5)


def assert_parity(ours, ref) -> None:
    assert_same_tokens(ours.encode_query(QUERIES), ref.encode_query(QUERIES))
    assert_same_tokens(ours.encode_document(DOCUMENTS), ref.encode_document(DOCUMENTS))
    scores = ours.similarity(ours.encode_query(QUERIES), ours.encode_document(DOCUMENTS))
    ref_scores = ref.similarity(ref.encode_query(QUERIES), ref.encode_document(DOCUMENTS)).numpy()
    np.testing.assert_allclose(scores, ref_scores, atol=1e-4)


def test_we_load_what_sentence_transformers_saves(st_folder: Path) -> None:
    ours = load_multi_vector_encoder(st_folder, device="cpu")
    assert ours.get_embedding_dimension() == 16
    assert_parity(ours, reference(st_folder))


def test_expansion_that_is_attended_and_only_a_floor(tmp_path: Path) -> None:
    folder = st_multi_vector(tmp_path / "st", attend=True, strategy="min")
    assert_parity(load_multi_vector_encoder(folder, device="cpu"), reference(folder))


def test_sentence_transformers_loads_what_we_save(st_folder: Path, tmp_path: Path) -> None:
    ours = load_multi_vector_encoder(st_folder, device="cpu")
    ours.save(tmp_path / "ours")
    assert_parity(ours, reference(tmp_path / "ours"))
    again = load_multi_vector_encoder(tmp_path / "ours", device="cpu")
    for a, b in zip(again.encode_document(DOCUMENTS), ours.encode_document(DOCUMENTS), strict=True):
        np.testing.assert_array_equal(a, b)


def test_pylate_folder_loads_as_sentence_transformers_reads_it(tmp_path: Path) -> None:
    folder = pylate_colbert(tmp_path / "pylate")
    ours = load_multi_vector_encoder(folder, device="cpu")
    assert ours.settings.query_prefix == "[Q] " and ours.settings.expansion.length == 12
    assert_parity(ours, reference(folder))
    # the marker is one token, inserted after [CLS]; queries are exactly query_length long
    batch = ours.tokenize(["hello"], "query")
    assert batch["input_ids"][0, 1] == ours.tokenizer.convert_tokens_to_ids("[Q] ")
    assert batch["input_ids"].shape[1] == 12 and bool(batch["score_mask"].all())
    ours.save(tmp_path / "saved")
    assert_parity(load_multi_vector_encoder(tmp_path / "saved", device="cpu"), reference(tmp_path / "saved"))


def test_folders_of_the_other_kind_name_the_right_loader(st_folder: Path, minilm_path: Path) -> None:
    import munjang

    with pytest.raises(ModelLoadError, match="load_encoder"):
        load_multi_vector_encoder(minilm_path)
    with pytest.raises(ModelLoadError, match="load_multi_vector_encoder"):
        munjang.load_encoder(st_folder)


def test_broken_configs_are_one_clear_error(st_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(st_folder, folder)
    config = folder / "sentence_bert_config.json"
    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "query_expansion": {"strategy": "sometimes", "length": 8}}))
    with pytest.raises(ModelLoadError, match="strategy"):
        load_multi_vector_encoder(folder)
    config.write_text(json.dumps(data))
    modules = json.loads((folder / "modules.json").read_text())
    modules[1]["path"] = "../elsewhere"
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelLoadError, match="leaves the folder"):
        load_multi_vector_encoder(folder)


def test_maxsim_of_encoded_sets_equals_the_model_similarity(st_folder: Path) -> None:
    model = load_multi_vector_encoder(st_folder, device="cpu")
    q, d = model.encode_query(QUERIES), model.encode_document(DOCUMENTS)
    np.testing.assert_allclose(model.similarity(q, d), maxsim(q, d))
    single = model.encode_query("hello")
    assert isinstance(single, np.ndarray) and single.shape == (12, 16)
    np.testing.assert_allclose(np.linalg.norm(single, axis=1), 1.0, atol=1e-5)
