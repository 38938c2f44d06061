"""Hard-negative mining with a bi-encoder: for each (anchor, positive), the corpus texts the encoder
ranks highest that are not a positive of that anchor.

Hard negatives (close in embedding space, yet wrong) teach a cross-encoder or an MNRL bi-encoder
far more than random ones. Two guards against false negatives (unlabelled relevant texts):
`range_min` skips the very top of the ranking, and `margin` skips candidates that score within
`margin` of the positive itself (a candidate is kept when score ≤ positive_score − margin).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch

from ..data.example import Example
from ..search.index.exact import semantic_search
from ..similarity import pairwise_similarity

OUTPUT_FORMATS = ("labeled-pair", "triplet")


def mine_hard_negatives(
    encoder: Any,
    anchors: Sequence[str],
    positives: Sequence[str],
    corpus: Sequence[str] | None = None,
    *,
    num_negatives: int = 3,
    range_min: int = 0,
    range_max: int = 50,
    margin: float | None = None,
    output_format: str = "labeled-pair",
    anchor_prompt_name: str | None = None,
    corpus_prompt_name: str | None = None,
    batch_size: int = 64,
    show_progress_bar: bool | None = None,
) -> list[Example]:
    """Training examples with mined negatives.

    `corpus` defaults to the distinct positives. `labeled-pair` gives (anchor, positive) with label 1.0
    and (anchor, negative) with label 0.0 (for a cross-encoder with BinaryCrossEntropyLoss);
    `triplet` gives (anchor, positive, negative) (for TripletLoss or MultipleNegativesRankingLoss).
    An anchor gets fewer than `num_negatives` when the top `range_max` has too few usable texts.
    """
    if len(anchors) != len(positives):
        raise ValueError(f"{len(anchors)} anchors but {len(positives)} positives")
    if not anchors:
        raise ValueError("no (anchor, positive) pairs to mine negatives for")
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}")
    if num_negatives < 1 or range_min < 0 or range_max <= range_min:
        raise ValueError("need num_negatives >= 1 and 0 <= range_min < range_max")
    docs = list(dict.fromkeys(positives)) if corpus is None else list(corpus)
    if not docs:
        raise ValueError("the corpus is empty")
    positives_of: dict[str, set[str]] = defaultdict(set)
    for anchor, positive in zip(anchors, positives, strict=True):
        positives_of[anchor].add(positive)

    options = {"batch_size": batch_size, "show_progress_bar": show_progress_bar, "convert_to_tensor": True}
    anchor_vectors = encoder.encode(list(anchors), prompt_name=anchor_prompt_name, **options)
    doc_vectors = encoder.encode(docs, prompt_name=corpus_prompt_name, **options)
    positive_vectors = encoder.encode(list(positives), prompt_name=corpus_prompt_name, **options)
    fn = getattr(encoder, "similarity_fn_name", "cosine")
    positive_scores = torch.as_tensor(pairwise_similarity(anchor_vectors, positive_vectors, fn)).tolist()
    ranked = semantic_search(anchor_vectors, doc_vectors, top_k=min(range_max, len(docs)), score_function=fn)

    examples: list[Example] = []
    for anchor, positive, pos_score, hits in zip(anchors, positives, positive_scores, ranked, strict=True):
        chosen: list[str] = []
        for hit in hits[range_min:]:
            text = docs[hit.corpus_id]
            if text in positives_of[anchor] or text == anchor:
                continue
            if margin is not None and hit.score > pos_score - margin:
                continue
            chosen.append(text)
            if len(chosen) == num_negatives:
                break
        if output_format == "triplet":
            examples.extend(Example((anchor, positive, neg)) for neg in chosen)
        else:
            examples.append(Example((anchor, positive), 1.0))
            examples.extend(Example((anchor, neg), 0.0) for neg in chosen)
    return examples
