"""Parity with sentence-transformers (the reference implementation, a test-only dependency).

For all-MiniLM-L6-v2 and multilingual-e5-small, on 1,000+ Korean and English sentences, munjang's
embeddings equal sentence-transformers' within 1e-5 in fp32 for mean, cls and max pooling.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

try:  # sentence-transformers >= 6 moved the module; older releases only have the first path
    from sentence_transformers.sentence_transformer.modules import Pooling as STPooling
except ImportError:  # pragma: no cover
    from sentence_transformers.models import Pooling as STPooling

import munjang

TOLERANCE = 1e-5


def _sentences(data_dir: Path, per_language: int = 520) -> list[str]:
    """Unique sentences from KorSTS test (Korean) and STSb test (English), in file order."""
    out: list[str] = []
    for path, first_col in (
        (data_dir / "korsts" / "sts-test.tsv", 5),
        (data_dir / "stsb" / "sts-test.csv", 5),
    ):
        seen: dict[str, None] = {}
        with open(path, encoding="utf-8") as f:
            for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                for text in row[first_col : first_col + 2]:
                    if text != "sentence1" and text != "sentence2":
                        seen.setdefault(text, None)
                if len(seen) >= per_language:
                    break
        out.extend(list(seen)[:per_language])
    return out


@pytest.fixture(scope="module")
def sentences(data_dir: Path) -> list[str]:
    texts = _sentences(data_dir)
    assert len(texts) >= 1000
    assert sum(any("\uac00" <= ch <= "\ud7a3" for ch in t) for t in texts) >= 500  # Hangul
    return texts


def _reference(path: Path, modes: tuple[str, ...] | None) -> SentenceTransformer:
    st = SentenceTransformer(str(path), device="cpu")
    if modes is None:
        return st
    transformer = st[0]
    dim = transformer.get_embedding_dimension()
    return SentenceTransformer(modules=[transformer, STPooling(dim, pooling_mode=modes)], device="cpu")


@pytest.mark.parametrize("model", ["minilm", "e5"])
def test_as_shipped_matches(model: str, sentences: list[str], minilm_path: Path, e5_path: Path) -> None:
    path = minilm_path if model == "minilm" else e5_path
    ours = munjang.load_encoder(path, device="cpu").encode(sentences, batch_size=64)
    ref = _reference(path, None).encode(sentences, batch_size=64, convert_to_numpy=True)
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= TOLERANCE


# The pooling modes on MiniLM by default; on e5 (XLM-R, 17 s) under -m slow: e5 as shipped runs by default.
@pytest.mark.parametrize("model", ["minilm", pytest.param("e5", marks=pytest.mark.slow)])
def test_cls_max_mean_pooling_match(
    model: str, sentences: list[str], minilm_path: Path, e5_path: Path
) -> None:
    """One pass with cls+max+mean concatenated, compared slice by slice (no normalize in between)."""
    path = minilm_path if model == "minilm" else e5_path
    modes = ("cls", "max", "mean")
    ours_encoder = munjang.load_encoder(path, device="cpu", pooling=modes)
    ours_encoder = munjang.SentenceEncoder(list(ours_encoder)[:2], device="cpu")  # drop Normalize
    ours = ours_encoder.encode(sentences, batch_size=64)
    ref = _reference(path, modes).encode(sentences, batch_size=64, convert_to_numpy=True)
    dim = ours.shape[1] // 3
    for i, mode in enumerate(modes):
        diff = np.abs(ours[:, i * dim : (i + 1) * dim] - ref[:, i * dim : (i + 1) * dim]).max()
        assert diff <= TOLERANCE, f"{model} {mode}: max abs difference {diff}"


def test_e5_prompts_match(sentences: list[str], e5_path: Path) -> None:
    ours = munjang.load_encoder(e5_path, device="cpu").encode(sentences[:200], prompt_name="query")
    ref = SentenceTransformer(str(e5_path), device="cpu").encode(sentences[:200], prompt_name="query")
    assert np.abs(ours - ref).max() <= TOLERANCE
    plain = munjang.load_encoder(e5_path, device="cpu").encode(sentences[:5])
    assert np.abs(ours[:5] - plain).max() > 1e-3  # the prompt really changed the input


def test_sentence_transformers_loads_what_we_save(tmp_path: Path, minilm_path: Path) -> None:
    texts = ["문장 임베딩을 비교한다.", "Sentence embeddings are compared.", ""]
    encoder = munjang.load_encoder(minilm_path, device="cpu", pooling="cls+mean")
    encoder.prompts = {"query": "query: "}
    encoder.save(tmp_path / "saved")
    st = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    ours = encoder.encode(texts, prompt_name="query")
    ref = st.encode(texts, prompt_name="query")
    assert ref.shape == (3, 768)
    assert np.abs(ours - ref).max() <= TOLERANCE


def test_we_load_what_sentence_transformers_saves(tmp_path: Path, minilm_path: Path) -> None:
    """sentence-transformers >= 5 writes a newer layout (pooling_mode key, new type names)."""
    st = SentenceTransformer(str(minilm_path), device="cpu")
    st.save(str(tmp_path / "st"))
    texts = ["새로운 형식도 읽는다.", "The newer layout loads too."]
    ours = munjang.load_encoder(tmp_path / "st", device="cpu")
    assert ours.max_seq_length == st.max_seq_length
    assert np.abs(ours.encode(texts) - st.encode(texts)).max() <= TOLERANCE
