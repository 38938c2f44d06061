"""Incremental BM25 against bm25s: texts added in several batches and some removed give the scores
and order bm25s gives when it indexes the live texts alone; a collection that catches up commit by
commit (adds, deletes, upserts, filters) answers as one rebuilt from its store."""

from __future__ import annotations

import random

import numpy as np
import pytest

from munjang.search import BM25Index, Collection
from munjang.search.index.incremental_bm25 import IncrementalBM25

WORDS = [f"w{i}" for i in range(60)] + ["고양이", "시장", "주식", "강아지", "소파", "잔다", "급락"]


def corpus(rng: random.Random, n: int) -> list[list[str]]:
    return [
        [rng.choice(WORDS[: rng.randint(5, len(WORDS))]) for _ in range(rng.randint(0, 30))] for _ in range(n)
    ]


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_adds_and_removals_score_as_bm25s_on_the_live_texts(method: str) -> None:
    rng = random.Random(method)
    texts = corpus(rng, 400)
    index = IncrementalBM25(k1=1.3, b=0.7, method=method)
    for start in range(0, 400, 37):  # batches of uneven size: segments are merged along the way
        index.add(texts[start : start + 37])
    dead = sorted(rng.sample(range(400), 60))
    index.kill(np.asarray(dead[:30]))
    index.kill(np.asarray(dead[20:]))  # overlapping: a dead text is ignored
    live = [i for i in range(400) if i not in set(dead)]
    assert len(index) == len(live)
    reference = BM25Index("word", k1=1.3, b=0.7, method=method)
    reference.index_tokens([texts[i] for i in live])
    allowed = np.asarray(rng.sample(range(400), 150))
    allowed_rows = np.asarray([r for r, i in enumerate(live) if i in set(allowed.tolist())])
    for _ in range(25):
        query = [rng.choice(WORDS) for _ in range(rng.randint(1, 6))] + ["absent"]
        ours = index.search(query, 10)
        theirs = reference.search_tokens([query], 10)[0]
        assert [live.index(t) for t, _ in ours] == [h.row for h in theirs]
        np.testing.assert_allclose([s for _, s in ours], [h.score for h in theirs], rtol=2e-5)
        ours = index.search(query, 10, allowed)
        theirs = reference.search_tokens([query], 10, rows=allowed_rows)[0]
        assert [live.index(t) for t, _ in ours] == [h.row for h in theirs]
    assert len(index.segments) <= 2 + int(np.log2(400))


def test_bm25l_and_bm25_plus_are_refused() -> None:
    for method in ("bm25l", "bm25+"):
        with pytest.raises(ValueError, match="incremental BM25 supports"):
            IncrementalBM25(method=method)


def test_a_collection_caught_up_commit_by_commit_answers_as_a_rebuild(tmp_path, encoder) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) for _ in range(120)]
    folder = tmp_path / "c"
    Collection.create(folder, encoder=encoder, tokenizer="word", chunking={"max_tokens": 24}).close()
    with (
        Collection.open(folder, encoder=encoder) as writer,
        Collection.open(folder, encoder=encoder, readonly=True) as reader,
    ):
        queries = [[rng.choice(WORDS) for _ in range(3)] for _ in range(12)]
        for step in range(4):
            ids = [f"d{step}-{i}" for i in range(30)]
            metadata = [{"step": step, "even": i % 2 == 0} for i in range(30)]
            writer.add(ids, sentences[30 * step : 30 * step + 30], metadata, commit_every=7)
            if step:
                writer.delete([f"d{step - 1}-{i}" for i in range(0, 30, 3)])
                writer.add(
                    [f"d0-{i}" for i in range(5)],
                    [f"갱신된 문서 {i} 고양이 시장" for i in range(5)],
                    on_conflict="upsert",
                )
            for collection in (writer, reader):
                for query in queries:
                    for spec in (None, {"even": True}):
                        text = " ".join(query)
                        got = collection.search(text, 8, mode="lexical", unit="passage", filter=spec)
                        rebuilt = rebuilt_lexical(collection, text, spec)
                        assert [(h.id, h.chunk) for h in got] == rebuilt[0]
                        np.testing.assert_allclose([h.score for h in got], rebuilt[1], rtol=2e-5)
        assert writer.check() == [] and reader.check() == []


def rebuilt_lexical(
    collection: Collection, text: str, spec: dict | None
) -> tuple[list[tuple[str, int]], list[float]]:  # type: ignore[type-arg]
    """The same search on a LexicalIndex rebuilt from the store on bm25s."""
    lexical = collection.lexical
    lexical.incremental, saved = (
        False,
        (lexical.bm25, lexical.watermark, lexical.starts, lexical._labels, lexical._passage_alive),
    )
    try:
        lexical.bm25, lexical.watermark = None, None
        hits = collection.search(text, 8, mode="lexical", unit="passage", filter=spec)
        return [(h.id, h.chunk) for h in hits], [h.score for h in hits]
    finally:
        lexical.incremental = True
        lexical.bm25, lexical.watermark, lexical.starts, lexical._labels, lexical._passage_alive = saved
