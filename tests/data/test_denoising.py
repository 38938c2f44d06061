"""TSDAE's damaged copies: about 60% of the words deleted, never all, fresh on each read."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.data.denoising import DenoisingDataset, delete_words

SENTENCE = " ".join(f"단어{i}" for i in range(1000))


def test_deletes_the_ratio_of_words_in_order() -> None:
    kept = delete_words(SENTENCE, 0.6, np.random.default_rng(0)).split()
    assert abs(len(kept) / 1000 - 0.4) < 0.05
    positions = [int(w.removeprefix("단어")) for w in kept]
    assert positions == sorted(positions)


def test_keeps_one_word_and_leaves_empty_text() -> None:
    rng = np.random.default_rng(1)
    assert len(delete_words("하나 둘 셋", 0.999999, rng).split()) == 1
    assert delete_words("   ", 0.6, rng) == "   "
    with pytest.raises(ValueError, match="ratio"):
        delete_words("a b", 1.0)


def test_dataset_pairs_damaged_with_original_afresh() -> None:
    data = DenoisingDataset(["", SENTENCE, "짧은 문장 하나"])
    assert len(data) == 2
    np.random.seed(0)
    first, second = data[0], data[0]
    assert first.texts[1] == SENTENCE and first.label is None
    assert first.texts[0] != second.texts[0]
    assert len(data[0:2]) == 2
    with pytest.raises(ValueError, match="no sentences"):
        DenoisingDataset(["", " "])
