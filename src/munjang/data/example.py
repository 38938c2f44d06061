"""Training examples: the texts of one training item (a pair, a triplet, ...) and its label."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """One training item.

    `texts` holds the columns a loss reads, in order: (a, b) for pair losses, (anchor, positive,
    negative) for triplets, (source, target) for distillation. `label` is a float score (STS), a class
    index (NLI: 0 entailment, 1 neutral, 2 contradiction), or None for losses that need none. For
    distillation the label is the teacher's embedding, filled in by the distillation data builder.
    """

    texts: tuple[str, ...]
    label: float | int | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not self.texts:
            raise ValueError("an Example needs at least one text")
        for i, text in enumerate(self.texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")


@dataclass(frozen=True)
class ListwiseExample:
    """One query with several documents and a relevance label for each (listwise cross-encoder losses).

    The documents of a batch's examples may differ in number: the trainer scores every (query,
    document) pair and pads the lists, and the listwise losses mask the padding out. Binary and graded
    labels both work; `PListMLELoss` (by default) reads the documents' order as the ideal ranking.
    """

    query: str
    documents: tuple[str, ...]
    labels: tuple[float, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise TypeError(f"query is {type(self.query).__name__}, not str")
        if not self.documents:
            raise ValueError("a ListwiseExample needs at least one document")
        if len(self.labels) != len(self.documents):
            raise ValueError(f"{len(self.documents)} documents but {len(self.labels)} labels")
        for i, text in enumerate(self.documents):
            if not isinstance(text, str):
                raise TypeError(f"documents[{i}] is {type(text).__name__}, not str")
        for i, label in enumerate(self.labels):
            if not isinstance(label, (int, float)) or not math.isfinite(label):
                raise ValueError(f"labels[{i}] is {label!r}, not a finite number")
