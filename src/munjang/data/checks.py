"""Argument checks shared by the data classes and the evaluators built on them."""

from __future__ import annotations

from collections.abc import Sized


def check_same_length(**sequences: Sized) -> None:
    """Raise ValueError naming `sequences` (in the order given) and their lengths when they differ.

    ``check_same_length(sentences1=a, sentences2=b, scores=s)`` raises
    "sentences1, sentences2 and scores differ in length: 3, 3, 2".
    """
    lengths = [len(s) for s in sequences.values()]
    if len(set(lengths)) > 1:
        *rest, last = sequences
        raise ValueError(
            f"{', '.join(rest)} and {last} differ in length: {', '.join(str(n) for n in lengths)}"
        )
