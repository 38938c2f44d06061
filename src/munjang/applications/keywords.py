"""Keywords of documents by embedding similarity, as KeyBERT ranks them, with Korean candidates.

Each document's candidates (`candidates.extract_candidates`: Kiwi noun phrases for Korean, word
n-grams otherwise) are embedded with the same encoder as the document and ranked by cosine similarity
to it. Three selections, defined as in KeyBERT (Grootendorst, 2020):

- "similarity": the `top_n` candidates closest to the document.
- "mmr", Maximal Marginal Relevance (Carbonell & Goldstein, 1998): start from the closest candidate,
  then repeatedly add the candidate maximising
  `(1 - diversity) * sim(candidate, doc) - diversity * max sim(candidate, chosen)`.
- "maxsum", Max Sum Similarity: among the `nr_candidates` closest candidates, the `top_n` whose
  pairwise similarities sum to the least.

Scores are always the cosine similarity to the document; results come best first. Where KeyBERT
returns nothing because a document has fewer candidates than `top_n` (maxsum), munjang returns all
of them, ranked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .candidates import check_ngram_range, extract_candidates

METHODS = ("similarity", "mmr", "maxsum")


class Keyword(NamedTuple):
    """A keyword or keyphrase and its cosine similarity to the document."""

    phrase: str
    score: float


def mmr(doc: np.ndarray, words: np.ndarray, top_n: int, diversity: float) -> list[int]:
    """Indices chosen by Maximal Marginal Relevance, in the order chosen (rows L2-normalised)."""
    word_doc = words @ doc
    word_word = words @ words.T
    chosen = [int(np.argmax(word_doc))]
    rest = [i for i in range(len(words)) if i != chosen[0]]
    for _ in range(min(top_n - 1, len(words) - 1)):
        redundancy = np.max(word_word[rest][:, chosen], axis=1)
        scores = (1 - diversity) * word_doc[rest] - diversity * redundancy
        best = rest[int(np.argmax(scores))]
        chosen.append(best)
        rest.remove(best)
    return chosen


def max_sum(doc: np.ndarray, words: np.ndarray, top_n: int, nr_candidates: int) -> list[int]:
    """Indices of the `top_n` of the `nr_candidates` closest candidates that are least similar to
    each other (the smallest sum of pairwise similarities; the first such set on a tie)."""
    similarity = words @ doc
    pool = np.argsort(similarity)[-nr_candidates:]
    pairwise = words[pool] @ words[pool].T
    np.fill_diagonal(pairwise, 0.0)
    best: tuple[int, ...] = ()
    lowest = np.inf
    for chunk in _batched(itertools.combinations(range(len(pool)), top_n), 65536):
        combos = np.asarray(chunk)
        sums = pairwise[combos[:, :, None], combos[:, None, :]].sum(axis=(1, 2))
        k = int(np.argmin(sums))
        if sums[k] < lowest:
            lowest, best = float(sums[k]), tuple(combos[k])
    return [int(pool[i]) for i in best]


def _batched(items: Any, size: int) -> Any:
    """Tuples of up to `size` items (itertools.batched, which Python 3.10 and 3.11 lack)."""
    iterator = iter(items)
    while chunk := tuple(itertools.islice(iterator, size)):
        yield chunk


def _check(method: str, top_n: int, diversity: float, nr_candidates: int) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ValueError(f"top_n must be a positive integer, not {top_n!r}")
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be between 0 and 1, not {diversity!r}")
    if method == "maxsum" and nr_candidates < top_n:
        raise ValueError(f"nr_candidates ({nr_candidates}) must be at least top_n ({top_n}) for maxsum")


def _normalized(vectors: np.ndarray) -> np.ndarray:
    x = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def rank_keywords(
    doc_embedding: np.ndarray,
    candidate_embeddings: np.ndarray,
    candidates: Sequence[str],
    top_n: int = 5,
    method: str = "similarity",
    diversity: float = 0.5,
    nr_candidates: int = 20,
) -> list[Keyword]:
    """The selected candidates of one document, best first, from embeddings already computed."""
    _check(method, top_n, diversity, nr_candidates)
    if len(candidates) != len(candidate_embeddings):
        raise ValueError(f"{len(candidates)} candidates but {len(candidate_embeddings)} embeddings")
    if not candidates:
        return []
    doc = _normalized(doc_embedding).reshape(-1)
    words = _normalized(candidate_embeddings)
    similarity = words @ doc
    if method == "mmr":
        chosen = mmr(doc, words, top_n, diversity)
    elif method == "maxsum" and len(candidates) > top_n:
        chosen = max_sum(doc, words, top_n, nr_candidates)
    else:
        chosen = [int(i) for i in np.argsort(-similarity, kind="stable")[:top_n]]
    keywords = [Keyword(candidates[i], float(similarity[i])) for i in chosen]
    return sorted(keywords, key=lambda k: -k.score)


def extract_keywords(
    encoder: Any,
    docs: Sequence[str],
    top_n: int = 5,
    candidates: Sequence[str] | Sequence[Sequence[str]] | None = None,
    keyphrase_ngram_range: tuple[int, int] = (1, 2),
    diversity: float = 0.5,
    method: str = "similarity",
    stop_words: str | Sequence[str] | None = "english",
    nr_candidates: int = 20,
    prompt_name: str | None = None,
    batch_size: int = 32,
) -> list[list[Keyword]]:
    """The `top_n` keywords of each document, best first (see the module docstring for `method`).

    Args:
        encoder: a SentenceEncoder (anything with `encode(texts, ...) -> array`).
        docs: the documents; each gets its own list of keywords.
        candidates: None to extract them (Korean noun phrases, other text word n-grams); a list of
            strings to choose from (kept per document where they occur, as KeyBERT); or one list
            per document, used as given.
        keyphrase_ngram_range: (low, high) words (Korean: noun units) per candidate.
        diversity: MMR's trade-off, 0 (relevance only) to 1 (diversity only).
        stop_words: "english" (sklearn's list, for non-Korean text), a list (both), or None.
        nr_candidates: maxsum's pool of closest candidates.
        prompt_name: the encoder's prompt for documents and candidates alike (e5: "query").
    """
    if isinstance(docs, str):
        raise TypeError("docs must be a list of documents, not a single string; wrap it in a list")
    docs = list(docs)
    _check(method, top_n, diversity, nr_candidates)
    ngram_range = check_ngram_range(keyphrase_ngram_range)
    if not docs:
        return []
    per_doc = _candidates_per_doc(docs, candidates, ngram_range, stop_words)
    vocabulary = list(dict.fromkeys(c for found in per_doc for c in found))
    position = {c: i for i, c in enumerate(vocabulary)}
    ranked = [i for i, found in enumerate(per_doc) if found and docs[i].strip()]
    out: list[list[Keyword]] = [[] for _ in docs]
    if not ranked:
        return out
    doc_vectors = encoder.encode([docs[i] for i in ranked], prompt_name=prompt_name, batch_size=batch_size)
    word_vectors = encoder.encode(vocabulary, prompt_name=prompt_name, batch_size=batch_size)
    for row, i in enumerate(ranked):
        found = per_doc[i]
        vectors = word_vectors[[position[c] for c in found]]
        out[i] = rank_keywords(doc_vectors[row], vectors, found, top_n, method, diversity, nr_candidates)
    return out


def _candidates_per_doc(
    docs: list[str],
    candidates: Sequence[str] | Sequence[Sequence[str]] | None,
    ngram_range: tuple[int, int],
    stop_words: str | Sequence[str] | None,
) -> list[list[str]]:
    if candidates is None:
        return extract_candidates(docs, ngram_range, stop_words)
    if isinstance(candidates, str):
        raise TypeError("candidates must be a list of strings (or one list per document), not a string")
    items = list(candidates)
    if items and all(isinstance(c, str) for c in items):
        return extract_candidates(docs, ngram_range, stop_words, [str(c) for c in items])
    if len(items) != len(docs) or not all(
        not isinstance(c, str) and all(isinstance(w, str) for w in c) for c in items
    ):
        raise ValueError("candidates must be a list of strings, or one list of strings per document")
    return [list(dict.fromkeys(str(w) for w in c)) for c in items]
