"""A fitted classical model's folder: loads again through load_embedder with the same vectors, is
refused when a file changed (checksums) or holds another format, and never replaces other data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import munjang
from munjang.encoders.classical import fit_classical
from munjang.errors import InputTooLongError, ModelLoadError

TEXTS = [
    "고양이가 쥐를 쫓았다",
    "쥐가 고양이를 쫓았다",
    "오늘 날씨가 맑다",
    "날씨 좋은 날 고양이와 산책했다",
    "BERT 모델은 문장을 벡터로 바꾼다",
] * 2


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("classical")
    out = {}
    for kind in ("onehot", "bow", "tfidf"):
        fit_classical(kind, TEXTS).save(root / kind)
        out[kind] = root / kind
    pytest.importorskip("gensim")
    for kind in ("cbow", "skipgram"):
        fit_classical(kind, TEXTS, min_count=1, epochs=2, vector_size=16).save(root / kind)
        out[kind] = root / kind
    return out


@pytest.mark.parametrize("kind", ["onehot", "bow", "tfidf"])
def test_term_models_load_again_with_the_same_vectors(folders, kind) -> None:
    fitted = fit_classical(kind, TEXTS)
    loaded = munjang.load_embedder(str(folders[kind]))
    assert loaded.describe()["classical"] == kind
    assert (loaded.encode(TEXTS) != fitted.encode(TEXTS)).nnz == 0
    query = loaded.encode_query("고양이")
    assert query.shape == (1, loaded.get_embedding_dimension())
    assert np.sqrt(query.multiply(query).sum()) == pytest.approx(1.0)  # search sides are unit length


@pytest.mark.parametrize("kind", ["cbow", "skipgram"])
def test_word2vec_models_load_again_with_the_same_vectors(folders, kind) -> None:
    loaded = munjang.load_embedder(str(folders[kind]))
    again = munjang.load_embedder(str(folders[kind]))
    vectors = loaded.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 16) and loaded.describe()["options"]["architecture"] == kind
    np.testing.assert_array_equal(vectors, again.encode(TEXTS))
    scores = loaded.similarity(vectors, vectors)
    np.testing.assert_allclose(np.diag(scores), 1.0, atol=1e-5)


def test_a_changed_file_is_refused(folders, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "tfidf"
    shutil.copytree(folders["tfidf"], copy)
    vocabulary = copy / "vocabulary.json"
    terms = json.loads(vocabulary.read_text(encoding="utf-8"))
    vocabulary.write_text(json.dumps(terms[::-1], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ModelLoadError, match="checksum mismatch"):
        munjang.load_embedder(str(copy))
    (copy / "idf.npy").unlink()
    shutil.copy(folders["tfidf"] / "vocabulary.json", vocabulary)
    with pytest.raises(ModelLoadError, match="idf.npy .*missing"):
        munjang.load_embedder(str(copy))


def test_another_format_version_is_refused(folders, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "bow"
    shutil.copytree(folders["bow"], copy)
    header = json.loads((copy / "classical.json").read_text(encoding="utf-8"))
    (copy / "classical.json").write_text(json.dumps({**header, "format_version": 99}), encoding="utf-8")
    with pytest.raises(ModelLoadError, match="version 99"):
        munjang.load_embedder(str(copy))


def test_the_dense_loader_names_the_right_one(folders) -> None:
    with pytest.raises(ModelLoadError, match="load_embedder"):
        munjang.load_encoder(str(folders["tfidf"]))


def test_saving_never_replaces_other_data(tmp_path: Path) -> None:
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(ValueError, match="not a classical model folder"):
        fit_classical("bow", TEXTS).save(other)
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"


def test_long_texts_are_cut_or_refused() -> None:
    model = fit_classical("bow", TEXTS)
    long = "고양이 " * 10_000
    assert model.encode(long, truncate=True).sum() == pytest.approx(len(model.analyzer(long[:20_000])))
    with pytest.raises(InputTooLongError, match="limit of 20000"):
        model.encode(long, truncate=False)


def test_fitting_without_gensim_names_the_extra(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "gensim", None)
    monkeypatch.setitem(sys.modules, "gensim.models", None)
    with pytest.raises(ImportError, match=r"pip install 'munjang\[word2vec\]'"):
        fit_classical("cbow", TEXTS, min_count=1)
