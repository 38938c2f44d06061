"""Domain adaptation without labels: TSDAE or continued masked-language-model pretraining of an
encoder on a corpus of the target domain's text, before (or instead of) fine-tuning with labels.

`adapt(model, "tsdae" | "mlm", sentences, output_dir)` runs the usual `Trainer` (progress bar,
checkpoints, Ctrl-C and `resume=True`) with `DenoisingAutoEncoderLoss` over a `DenoisingDataset`, or
with `MaskedLanguageModelingLoss` over the sentences, and writes the adapted encoder to
`output_dir/final/` in the sentence-transformers layout, its pooling, normalisation and prompts kept.
`corpus_sentences` turns documents into the sentences both methods train on.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from ..data.denoising import DELETE_RATIO, DenoisingDataset
from ..data.example import Example
from ..encoders.dense.encoder import SentenceEncoder
from ..losses.base import SentenceLoss
from ..losses.denoising_auto_encoder import DenoisingAutoEncoderLoss
from ..losses.masked_language_modeling import MaskedLanguageModelingLoss
from ..search.collection.chunking import split_sentences
from .args import TrainingArguments
from .trainer import Trainer

METHODS = ("tsdae", "mlm")
# The learning rates of the reference recipes: TSDAE's paper and sentence-transformers' example use
# 3e-5; continued MLM of a small BERT-style model commonly uses 5e-5.
DEFAULT_LEARNING_RATES = {"tsdae": 3e-5, "mlm": 5e-5}
MIN_SENTENCE_CHARS = 10


def corpus_sentences(texts: Sequence[str], min_chars: int = MIN_SENTENCE_CHARS) -> list[str]:
    """The sentences of `texts` (Korean split by Kiwi, others at sentence ends), whitespace-trimmed,
    without those shorter than `min_chars` characters (page numbers, OCR debris) or seen before."""
    seen: set[str] = set()
    sentences: list[str] = []
    for text in texts:
        for start, end in split_sentences(text):
            sentence = " ".join(text[start:end].split())
            if len(sentence) >= min_chars and sentence not in seen:
                seen.add(sentence)
                sentences.append(sentence)
    return sentences


def adaptation_loss(model: SentenceEncoder, method: str, mask_probability: float = 0.15) -> SentenceLoss:
    """The objective of `method` over `model`."""
    if method == "tsdae":
        return DenoisingAutoEncoderLoss(model)
    if method == "mlm":
        return MaskedLanguageModelingLoss(model, mask_probability=mask_probability)
    raise ValueError(f"unknown adaptation method {method!r}; choose from {', '.join(METHODS)}")


def adaptation_data(
    method: str, sentences: Sequence[str], delete_ratio: float = DELETE_RATIO
) -> Sequence[Example]:
    """What `method` trains on: (damaged, original) pairs for TSDAE, the sentences alone for MLM."""
    kept = [s for s in sentences if s.strip()]
    if not kept:
        raise ValueError("the adaptation corpus has no sentences")
    if method == "tsdae":
        return DenoisingDataset(kept, ratio=delete_ratio)
    if method == "mlm":
        return [Example(texts=(s,)) for s in kept]
    raise ValueError(f"unknown adaptation method {method!r}; choose from {', '.join(METHODS)}")


def adapt(
    model: SentenceEncoder,
    method: str,
    sentences: Sequence[str],
    output_dir: str | os.PathLike[str],
    *,
    steps: int = 0,
    epochs: int = 1,
    batch_size: int = 8,
    learning_rate: float | None = None,
    max_seq_length: int | None = None,
    freeze_word_embeddings: bool = False,
    save_steps: int = 0,
    seed: int = 42,
    resume: bool = False,
    show_progress_bar: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Adapt `model` in place to the domain of `sentences`; returns the trainer's summary plus
    `final` (the adapted encoder's folder) and `head_weights` (LM-head tensors read from the checkpoint).

    `steps` sets the run's length (0: `epochs` full passes; the corpus is repeated as needed);
    `max_seq_length` truncates training inputs (shorter is much cheaper; the saved encoder keeps its
    own limit); `freeze_word_embeddings` keeps the token
    embedding matrix (and the LM head's projection tied to it) fixed, which on a large multilingual
    vocabulary saves most of the optimizer's memory and time.
    """
    if method not in METHODS:
        raise ValueError(f"unknown adaptation method {method!r}; choose from {', '.join(METHODS)}")
    output = Path(output_dir)
    torch.manual_seed(seed)  # the new decoder / LM-head weights: the same run gives the same model
    loss = adaptation_loss(model, method)
    data = adaptation_data(method, sentences)
    if steps:  # enough passes over the corpus to reach `steps`
        epochs = max(epochs, math.ceil(steps * batch_size / len(data)))
    args = TrainingArguments(
        output_dir=str(output),
        epochs=epochs,
        max_steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate or DEFAULT_LEARNING_RATES[method],
        save_steps=save_steps,
        seed=seed,
        freeze_word_embeddings=freeze_word_embeddings,
        show_progress_bar=show_progress_bar,
    )
    kept_length = model.max_seq_length
    if max_seq_length is not None:
        model.max_seq_length = min(max_seq_length, kept_length)
    description = {"train": f"{len(data):,} sentences of the domain corpus, {method}"}
    # Passed as a named data set, the trainer keeps the Sequence as it is (a bare one it copies into a
    # list), so TSDAE's damage is drawn when a batch is read: fresh each epoch, from the seeded and
    # checkpointed RNG.
    trainer = Trainer(
        model, {"train": loss}, {"train": data}, args=args, data_description=description, on_step=on_step
    )
    try:
        summary = trainer.train(resume_from_checkpoint=resume or None)
    finally:
        model.max_seq_length = kept_length
    if max_seq_length is not None:
        model.save(output / "final")  # again, with the encoder's own length limit in its config
    summary["final"] = str(output / "final")
    summary["method"] = method
    summary["sentences"] = len(data)
    summary["head_weights"] = list(getattr(loss, "head_weights", []))
    return summary
