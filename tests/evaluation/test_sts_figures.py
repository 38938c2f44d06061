"""The published STS figures, reproduced; and the same score from sentence-transformers in the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

import munjang
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator


def test_minilm_stsb_test_spearman_is_the_published_82_03(data_dir: Path, encoder, minilm_path: Path) -> None:
    evaluator = STSEvaluator.from_data(
        read_sts(data_dir / "stsb" / "sts-test.csv"), similarity_fns=("cosine",)
    )
    ours = evaluator(encoder)["spearman_cosine"] * 100
    assert ours == pytest.approx(82.03, abs=0.05)
    reference = evaluator(SentenceTransformer(str(minilm_path), device="cpu"))["spearman_cosine"] * 100
    assert ours == pytest.approx(reference, abs=1e-3)


@pytest.mark.slow
def test_e5_small_korsts_test_spearman_with_query_prompt(data_dir: Path, e5_path: Path) -> None:
    """Published 77.07 for the original weights; this folder is rebuilt from a 4-bit copy (76.85 measured)."""
    data = read_sts(data_dir / "korsts" / "sts-test.tsv")
    evaluator = STSEvaluator.from_data(data, similarity_fns=("cosine",), prompt_name="query")
    ours = evaluator(munjang.load_encoder(e5_path, device="cpu"))["spearman_cosine"] * 100
    reference = evaluator(SentenceTransformer(str(e5_path), device="cpu"))["spearman_cosine"] * 100
    assert ours == pytest.approx(reference, abs=1e-3)
    assert ours == pytest.approx(77.07, abs=0.5)
