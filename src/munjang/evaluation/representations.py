"""One table of sentence representations side by side (`munjang eval compare`, docs/seeds.md): each
one's STS Spearman, retrieval R@1 and nDCG@10 per set, encode speed, peak memory, and worked
examples that show where each fails (a paraphrase with no shared words, a reordered sentence with
the opposite meaning, a particle change).

A representation is an encoder (one-hot, bag of words, TF-IDF, word2vec, Sentence-BERT: any model
`load_embedder` loads, ranked and correlated by cosine through the usual evaluators) or BM25 (no
vectors: it scores a query against an indexed corpus; a pair (a, b) of sentences scores the mean of
BM25(a -> b) and BM25(b -> a) over an index of all the sentences being compared, so its statistics
come from the sentences themselves).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy.stats import spearmanr

from ..data.beir import RetrievalData
from ..data.sts import STSData
from ..search.index.bm25 import BM25Index
from ..similarity import pairwise_similarity
from .base import encode_texts
from .retrieval import InformationRetrievalEvaluator, evaluate_rankings
from .sts import STSEvaluator

# The ranking depth the retrieval columns need (R@1, nDCG@10).
DEPTH = 10


@dataclass(frozen=True)
class Example:
    """A worked example: the sentence closer in meaning to `anchor` should score above the farther one."""

    name: str
    anchor: str
    closer: str
    farther: str


EXAMPLES = (
    Example(
        "paraphrase, no shared words",
        "그 영화는 정말 재미있었다",
        "이 작품은 아주 흥미로웠다",
        "그 영화는 정말 지루했다",
    ),
    Example(
        "reordered, opposite meaning",
        "고양이가 쥐를 쫓았다",
        "쥐가 고양이에게 쫓겼다",
        "쥐가 고양이를 쫓았다",
    ),
    Example("particle change", "철수가 영희를 때렸다", "영희가 철수에게 맞았다", "철수를 영희가 때렸다"),
)


class Representation(Protocol):
    """What the table asks of a representation."""

    name: str

    def sts(self, data: STSData) -> float:
        """Spearman correlation of the representation's pair scores with the gold scores."""
        ...

    def pair_scores(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """The similarity of each pair (left[i], right[i])."""
        ...

    def rankings(self, data: RetrievalData) -> dict[str, list[str]]:
        """Query id -> the top DEPTH document ids."""
        ...

    def process(self, texts: Sequence[str]) -> None:
        """The work one text costs (encoding, or a lexical index's analysis), for the speed column."""
        ...


class EncoderRepresentation:
    """An encoder, compared by cosine: STS through `STSEvaluator`, retrieval through
    `InformationRetrievalEvaluator` (with the model's query / document prompts)."""

    def __init__(self, name: str, encoder: Any, batch_size: int = 32) -> None:
        self.name, self.encoder, self.batch_size = name, encoder, batch_size

    def sts(self, data: STSData) -> float:
        evaluator = STSEvaluator.from_data(data, batch_size=self.batch_size, similarity_fns=("cosine",))
        return float(evaluator(self.encoder)["spearman_cosine"])

    def pair_scores(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        vectors = encode_texts(self.encoder, [*left, *right], batch_size=self.batch_size)
        return np.asarray(
            pairwise_similarity(vectors[: len(left)], vectors[len(left) :], "cosine"), np.float64
        )

    def rankings(self, data: RetrievalData) -> dict[str, list[str]]:
        evaluator = InformationRetrievalEvaluator.from_data(
            data,
            k_values=(1, DEPTH),
            mrr_at_k=(DEPTH,),
            ndcg_at_k=(DEPTH,),
            map_at_k=(DEPTH,),
            batch_size=self.batch_size,
        )
        return evaluator.rank(self.encoder, "cosine")

    def process(self, texts: Sequence[str]) -> None:
        self.encoder.encode(list(texts), batch_size=self.batch_size)


class BM25Representation:
    """BM25 (Lucene's formula, k1 = 1.5, b = 0.75) over the search tokenizer (Kiwi morphemes for Korean)."""

    name = "bm25"

    def __init__(self, tokenizer: str = "auto") -> None:
        self.tokenizer = tokenizer

    def sts(self, data: STSData) -> float:
        scores = self.pair_scores(data.sentences1, data.sentences2)
        return float(spearmanr(scores, data.scores)[0])

    def pair_scores(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys([*left, *right]))
        index = BM25Index(self.tokenizer)
        tokens = index.tokenizer.tokenize_many(unique)
        index.index_tokens(tokens)
        row = {text: i for i, text in enumerate(unique)}
        scores = {text: index.get_scores_tokens(tokens[row[text]]) for text in unique}
        return np.array(
            [(scores[a][row[b]] + scores[b][row[a]]) / 2 for a, b in zip(left, right, strict=True)],
            dtype=np.float64,
        )

    def rankings(self, data: RetrievalData) -> dict[str, list[str]]:
        corpus = data.corpus_texts()
        ids = sorted(corpus)
        index = BM25Index(self.tokenizer)
        index.index([corpus[d] for d in ids])
        qids = list(data.queries)
        hits = index.search([data.queries[q] for q in qids], k=DEPTH)
        return {q: [ids[h.row] for h in found] for q, found in zip(qids, hits, strict=True)}

    def process(self, texts: Sequence[str]) -> None:
        BM25Index(self.tokenizer).index(list(texts))


class PeakMemory:
    """The largest rise of this process's resident memory over its size at the start, sampled
    every `interval` seconds on a thread (it sees torch's and numpy's memory alike)."""

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self.process = psutil.Process()
        self.interval = interval
        self.start = self.peak = self.process.memory_info().rss
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self.done.wait(self.interval):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakMemory:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)

    @property
    def rise_mib(self) -> float:
        return (self.peak - self.start) / 2**20


@dataclass
class Row:
    """One representation's measurements."""

    name: str
    sts_spearman: float | None
    retrieval: dict[str, dict[str, float]]
    sentences_per_s: float | None
    peak_mib: float
    examples: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sts_spearman": self.sts_spearman,
            "retrieval": self.retrieval,
            "sentences_per_s": self.sentences_per_s,
            "peak_mib": self.peak_mib,
            "examples": self.examples,
        }


def measure(
    representation: Representation,
    sts: STSData | None,
    retrieval: Mapping[str, RetrievalData],
    examples: Sequence[Example] = EXAMPLES,
) -> Row:
    """Every column of one representation's row. The peak memory is over the whole row, after one
    short warm-up call (which loads what a model loads on first use: Kiwi's dictionary)."""
    representation.process(["준비 warm-up"])
    with PeakMemory() as memory:
        spearman = None if sts is None else representation.sts(sts)
        found: dict[str, dict[str, float]] = {}
        for name, data in retrieval.items():
            metrics = evaluate_rankings(
                representation.rankings(data),
                data.qrels,
                k_values=(1,),
                mrr_at_k=(DEPTH,),
                ndcg_at_k=(DEPTH,),
                map_at_k=(DEPTH,),
            )
            found[name] = {"recall@1": metrics["recall@1"], "ndcg@10": metrics["ndcg@10"]}
        speed = None
        if sts is not None:
            texts = list(dict.fromkeys([*sts.sentences1, *sts.sentences2]))
            start = time.perf_counter()
            representation.process(texts)
            speed = len(texts) / (time.perf_counter() - start)
        shown = {}
        for example in examples:
            closer, farther = representation.pair_scores(
                [example.anchor, example.anchor], [example.closer, example.farther]
            )
            shown[example.name] = {"closer": float(closer), "farther": float(farther)}
    return Row(representation.name, spearman, found, speed, memory.rise_mib, shown)


def _verdict(scores: Mapping[str, float]) -> str:
    """right (the closer sentence scores higher), wrong, or tie (the representation cannot tell)."""
    if abs(scores["closer"] - scores["farther"]) < 1e-6:
        return "tie"
    return "right" if scores["closer"] > scores["farther"] else "wrong"


def table(rows: Sequence[Row], sets: Sequence[str]) -> list[str]:
    """The rows as aligned text: STS Spearman, R@1 / nDCG@10 per set (x 100), speed, memory, and
    for each example whether the closer sentence scored above the farther one."""
    width = max(len("representation"), *(len(r.name) for r in rows))
    head = f"{'representation':<{width}} {'STS ρ':>6}" + "".join(f" {s[:12] + ' R@1/nDCG':>21}" for s in sets)
    lines = [head + f" {'sent/s':>8} {'peak MiB':>8}  examples (closer > farther)"]
    for r in rows:
        cells = f"{r.name:<{width}} " + (
            f"{r.sts_spearman * 100:6.2f}" if r.sts_spearman is not None else f"{'-':>6}"
        )
        for s in sets:
            m = r.retrieval.get(s)
            cells += f" {m['recall@1'] * 100:10.2f}/{m['ndcg@10'] * 100:<10.2f}" if m else f" {'-':>21}"
        speed = f"{r.sentences_per_s:8.0f}" if r.sentences_per_s is not None else f"{'-':>8}"
        marks = " ".join(_verdict(e) for e in r.examples.values())
        lines.append(f"{cells} {speed} {r.peak_mib:8.0f}  {marks}")
    return lines


def example_lines(rows: Sequence[Row], examples: Sequence[Example] = EXAMPLES) -> list[str]:
    """Each worked example's sentences and every representation's two scores."""
    lines = []
    width = max(len(r.name) for r in rows)
    for example in examples:
        lines.append(f"{example.name}: {example.anchor}")
        lines.append(f"  closer:  {example.closer}")
        lines.append(f"  farther: {example.farther}")
        for r in rows:
            e = r.examples[example.name]
            lines.append(
                f"  {r.name:<{width}} closer {e['closer']:7.3f}  farther {e['farther']:7.3f}  {_verdict(e)}"
            )
    return lines
