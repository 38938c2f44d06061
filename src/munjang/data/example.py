"""Training examples: the texts of one training item (a pair, a triplet, ...) and its label."""

from __future__ import annotations

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
