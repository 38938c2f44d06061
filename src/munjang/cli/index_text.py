"""What `munjang index` says: a hit on one line with its scores and what they mean, and what an add
says when it resumes, is refused or is interrupted."""

from __future__ import annotations

from typing import Any


def stopped(count: int, location: str) -> str:
    """What an interrupted add says (Ctrl-C): what is stored, and how to go on."""
    return (
        f"stopped: {count} documents are stored in {location} (every finished batch is kept); "
        "run the same command again to resume"
    )


def resume_or_refuse(col: Any, ids: list[str], texts: list[str], metadata: list[Any]) -> str:
    """ "skip" when every id already stored holds the same text and metadata (a rerun of an
    interrupted add resumes it), else a CollectionError naming the changed ids and the options."""
    from ..search import CollectionError

    changed = [
        doc_id
        for doc_id, found, text, meta in zip(ids, col.get(ids), texts, metadata, strict=True)
        if found is not None and (found.text != text or found.metadata != (meta or {}))
    ]
    if changed:
        shown = ", ".join(repr(i) for i in changed[:5])
        raise CollectionError(
            f"{len(changed)} ids are stored with other text or metadata ({shown}); "
            "--upsert replaces them, --skip-existing keeps them"
        )
    return "skip"


SCORE_LEGEND = {
    "dense": "(score: cosine similarity of meaning, at most 1)",
    "lexical": "(score: BM25 over the query's words; higher is better, no upper bound)",
    "hybrid": "(score: the fused score, higher is better; beside it dense: cosine similarity, lexical: BM25)",
}


SNIPPET_CHARS = 120


def snippet(text: str) -> str:
    """A hit's text on one line: white space folded, cut at SNIPPET_CHARS with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1].rstrip() + "…"


def stage_scores(scores: dict[str, float]) -> str:
    """Each retriever's own score beside a fused one (`  (dense 0.812, lexical 11.94)`)."""
    stages = {name: value for name, value in scores.items() if name != "fused"}
    if len(stages) < 2:
        return ""
    return "  (" + ", ".join(f"{name} {value:.3f}" for name, value in stages.items()) + ")"
