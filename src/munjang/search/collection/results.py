"""What a collection's calls return (search hits, add results), and how passage scores become
document scores.

Every index ranks passages (a short document is one passage). A search by document (the default)
groups them by document:

- "max" (default): a document scores as its best passage (MaxP, Dai & Callan 2019). One strong
  passage is what answers a question; a long document is not favoured for being long.
- "sum": a document scores as the sum of its passages' scores among the candidates (CombSUM over
  passages): documents that match in many places rise, which suits broad topical queries.

Either way the hit shows the document's best passage, with its span, so a page can highlight it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Document

AGGREGATES = ("max", "sum")
UNITS = ("document", "passage")

Ranked = list[tuple[int, float, dict[str, float]]]


@dataclass
class AddResult:
    """What an `add` did: new documents, documents whose text or metadata changed, ids skipped, and
    how many texts had to be encoded (the rest came from the embedding cache)."""

    added: int = 0
    updated: int = 0
    skipped: int = 0
    encoded: int = 0
    failed: list[str] = field(default_factory=list)  # images that could not be read (add_images)


@dataclass(frozen=True)
class SearchHit:
    """One result: the document id, the matched text (the document, or its best passage when it is
    stored as several), metadata, the final score and each stage's score (dense, lexical, fused,
    rerank) where that stage ran, and where the matched text lies in the document: passage number
    `chunk` and character span [`start`, `end`); `partial` when the text is one passage of a longer
    document (`Collection.get` returns the whole)."""

    id: str
    text: str
    metadata: dict[str, Any]
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    chunk: int = 0
    start: int = 0
    end: int = 0
    partial: bool = False
    label: int = field(default=-1, repr=False, compare=False)


def hit(doc: Document, score: float, stages: dict[str, float]) -> SearchHit:
    """A hit for one stored passage."""
    end = doc.end if doc.end is not None else doc.start + len(doc.text)
    partial = doc.end is not None
    return SearchHit(
        doc.id, doc.text, doc.metadata, score, stages, doc.chunk, doc.start, end, partial, doc.label
    )


def by_document(ranked: Ranked, docs: dict[int, Document], aggregate: str = "max") -> Ranked:
    """Passages (best first) grouped into documents, best first: each document keeps its best
    passage's label and stage scores, and scores by `aggregate` over its passages."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; choose one of {', '.join(AGGREGATES)}")
    best: dict[str, tuple[int, float, dict[str, float]]] = {}
    total: dict[str, float] = {}
    for label, score, stages in ranked:
        doc_id = docs[label].id
        if doc_id not in best:
            best[doc_id] = (label, score, stages)
            total[doc_id] = 0.0
        total[doc_id] += score
    if aggregate == "max":
        return list(best.values())
    order = sorted(best, key=lambda d: -total[d])
    return [(best[d][0], total[d], best[d][2]) for d in order]
