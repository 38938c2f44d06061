"""TSDAE's training data: each sentence paired with a damaged copy of itself (words deleted).

The denoising auto-encoder (Wang et al., 2021) encodes the damaged sentence into one vector and asks a
decoder to write the original back from that vector alone, so the vector has to hold the sentence's
meaning. The noise is word deletion: each word is dropped with probability `ratio` (0.6 in the
paper and in sentence-transformers' `DenoisingAutoEncoderDataset`), and one word is kept when all
would go.

Words are whitespace-separated pieces (a Korean eojeol, an English word with its punctuation), where
sentence-transformers tokenizes with NLTK; deleting whole eojeol is the natural unit for Korean and
needs no extra dependency. The noise is drawn from numpy's global generator, as sentence-transformers
does, which the trainer seeds and saves in its checkpoints: a resumed run draws the same noise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from .example import Example

DELETE_RATIO = 0.6


def delete_words(text: str, ratio: float = DELETE_RATIO, rng: np.random.Generator | None = None) -> str:
    """`text` with each whitespace-separated word deleted with probability `ratio` (at least one kept).

    `rng` is the generator to draw from (numpy's global one when None).
    """
    if not 0 <= ratio < 1:
        raise ValueError(f"deletion ratio must be in [0, 1), not {ratio}")
    words = text.split()
    if not words:
        return text
    draws = rng.random(len(words)) if rng is not None else np.random.rand(len(words))
    keep = draws > ratio
    if not keep.any():
        choice = rng.integers(len(words)) if rng is not None else np.random.choice(len(words))
        keep[int(choice)] = True
    return " ".join(word for word, kept in zip(words, keep, strict=True) if kept)


class DenoisingDataset(Sequence[Example]):
    """Sentences as TSDAE examples `(damaged, original)`, damaged afresh each time one is read.

    A fresh deletion each epoch is what sentence-transformers' dataset does too: the model never sees
    the same damaged copy twice, which on a small domain corpus is most of the augmentation there is.
    """

    def __init__(self, sentences: Sequence[str], ratio: float = DELETE_RATIO) -> None:
        if not 0 <= ratio < 1:
            raise ValueError(f"deletion ratio must be in [0, 1), not {ratio}")
        kept = [s for s in sentences if s.strip()]
        if not kept:
            raise ValueError("no sentences to build the denoising data from (all empty)")
        self.sentences = kept
        self.ratio = ratio

    def __len__(self) -> int:
        return len(self.sentences)

    @overload
    def __getitem__(self, index: int) -> Example: ...

    @overload
    def __getitem__(self, index: slice) -> list[Example]: ...

    def __getitem__(self, index: int | slice) -> Example | list[Example]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        sentence = self.sentences[index]
        return Example(texts=(delete_words(sentence, self.ratio), sentence))

    def __iter__(self) -> Iterator[Example]:
        return (self[i] for i in range(len(self)))
