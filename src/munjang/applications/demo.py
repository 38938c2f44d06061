"""`munjang demo`: the main job of `make run`, on the embedded default model.

Encodes a mixed Korean/English set and prints its similarity matrix, answers a few semantic
searches over a small bundled corpus, and scores the model on STSb test when the data is there.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .._util.bundled import demo_corpus, demo_documents
from ..encoders.dense.encoder import SentenceEncoder
from ..encoders.embedder import Embedder
from ..search import semantic_search

DEMO_SENTENCES = [
    "A man is eating food.",
    "한 남자가 음식을 먹고 있다.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "한 남자가 말을 타고 있다.",
    "Two men pushed carts through the woods.",
    "A monkey is playing drums.",
]
DEMO_QUERIES = [
    "Will it rain in Seoul?",
    "Someone is having lunch.",
    "반려동물이 쉬고 있다.",
]


def find_shared_data() -> Path | None:
    """`$MUNJANG_DATA`, or `../shared/data` from the working directory, if it exists."""
    candidates = [os.environ.get("MUNJANG_DATA"), Path.cwd().parent / "shared" / "data"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def run_demo(encoder: SentenceEncoder, name: str, echo: Callable[[str], None] = print) -> dict[str, float]:
    """Run the demo and return its figures (the STSb Spearman when measured)."""
    info = encoder.describe()
    echo(
        f"model: {name} ({info['architecture']}, {info['layers']} layers, "
        f"{info['embedding_dimension']}-dim, pooling={info['pooling']}, "
        f"max_seq_length={info['max_seq_length']})"
    )

    echo("\n1. Similarity matrix (cosine) of a mixed Korean/English set")
    vectors = encoder.encode(DEMO_SENTENCES)
    matrix = np.asarray(encoder.similarity(vectors, vectors))
    for i, text in enumerate(DEMO_SENTENCES):
        echo(f"  [{i}] {text}")
    echo("       " + "".join(f"{j:>6}" for j in range(len(DEMO_SENTENCES))))
    for i, row in enumerate(matrix):
        echo(f"  [{i}]  " + "".join(f"{v:6.2f}" for v in row))

    corpus = demo_corpus()
    echo(f"\n2. Semantic search over the bundled corpus ({len(corpus)} sentences)")
    corpus_vectors = encoder.encode(corpus)
    hits = semantic_search(encoder.encode(DEMO_QUERIES), corpus_vectors, top_k=3)
    for query, found in zip(DEMO_QUERIES, hits, strict=True):
        echo(f"  query: {query}")
        for hit in found:
            echo(f"    {hit.score:.3f}  {corpus[hit.corpus_id]}")

    figures: dict[str, float] = {}
    echo("\n3. STS benchmark (STSb test, cosine Spearman x 100)")
    data_dir = find_shared_data()
    test_file = data_dir / "stsb" / "sts-test.csv" if data_dir else None
    if test_file is None or not test_file.exists():
        echo("  note: ../shared/data/stsb/sts-test.csv not found (set MUNJANG_DATA); STSb score skipped.")
        return figures
    from ..data import read_sts
    from ..evaluation import STSEvaluator

    start = time.perf_counter()
    metrics = STSEvaluator.from_data(read_sts(test_file), similarity_fns=("cosine",))(encoder)
    seconds = time.perf_counter() - start
    figures["stsb_test_spearman_cosine"] = metrics["spearman_cosine"] * 100
    echo(
        f"  {test_file}: Spearman {metrics['spearman_cosine'] * 100:.2f}, "
        f"Pearson {metrics['pearson_cosine'] * 100:.2f} ({seconds:.1f} s)"
    )
    return figures


def demo_collection(
    folder: str | os.PathLike[str],
    encoder: Embedder | None = None,
    model: str | None = None,
) -> Path:
    """The demo collection in `folder`, built there on first use (hybrid search: dense vectors
    and Korean-aware BM25) with `model` (a name, folder or hub id; None: the embedded default),
    which `encoder` may pass already loaded. A folder left broken by an interrupted build, or built
    with another model, is built again."""
    from ..search import Collection, CollectionError
    from ..search.collection.inputs import model_key

    target = Path(folder)
    docs = demo_documents()
    if target.exists():
        try:
            with Collection.open(target, encoder=encoder) as existing:
                same_model = existing.config["model"] == model_key(model)
                if same_model and len(existing) == len(docs) and not existing.check():
                    return target
        except (CollectionError, OSError, ValueError):
            pass
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with Collection.create(target, model, encoder=encoder) as collection:
        collection.add(
            [d["id"] for d in docs],
            [d["text"] for d in docs],
            [d["metadata"] for d in docs],
            on_conflict="skip",
        )
    return target
