"""`check_same_length`: the one length check of the data classes and the evaluators."""

from __future__ import annotations

import pytest

from munjang.data.checks import check_same_length


def test_equal_lengths_pass() -> None:
    check_same_length(sentences1=["a", "b"], sentences2=["c", "d"], scores=[1.0, 2.0])
    check_same_length(sources=[], targets=[])


@pytest.mark.parametrize(
    ("sequences", "message"),
    [
        ({"sources": ["a"], "targets": []}, "sources and targets differ in length: 1, 0"),
        (
            {"sentences1": ["a", "b"], "sentences2": ["c", "d"], "scores": [1.0]},
            "sentences1, sentences2 and scores differ in length: 2, 2, 1",
        ),
    ],
)
def test_unequal_lengths_name_each_sequence(sequences: dict[str, list[object]], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_same_length(**sequences)
    assert str(caught.value) == message
