"""Between two whole saves of the dense index, the writer saves what was added since as a tail file;
a new reader maps it instead of reading those vectors back from the store, answers as the writer
does, and falls back to the store when the tail is damaged or gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.collection.collection import Collection
from munjang.search.followers import dense as live_index

DOCS = {
    "ko-1": "서울은 대한민국의 수도이다.",
    "ko-2": "고양이가 소파 위에서 잠을 잔다.",
    "en-1": "A man is playing the guitar on stage.",
    "en-2": "The stock market fell sharply today.",
    "en-3": "A cat sleeps on the sofa.",
    "en-4": "Rain is expected in Seoul tomorrow.",
}
LATE = {"late": "A late guitar solo.", "later": "The market rallied after the fall.", "last": "고양이 시장"}


def _answers(col: Collection) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, round(h.score, 5)) for h in col.search(query, k=4)]
        for query in ("guitar solo", "stock market", "고양이", "seoul rain")
    ]


def _reads_from_store(col: Collection) -> list[int]:
    """Record the label each read of vectors from the store starts after."""
    calls: list[int] = []
    read = col.store.vectors_after

    def spy(model: str, dim: int, after: int, *args: Any, **kwargs: Any) -> Any:
        calls.append(after)
        return read(model, dim, after, *args, **kwargs)

    col.store.vectors_after = spy  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("kind", ["hnsw", "exact"])
def test_a_new_reader_maps_the_tail_and_answers_as_the_writer(
    tmp_path: Path, encoder, monkeypatch, kind: str
) -> None:
    monkeypatch.setattr(live_index, "TAIL_EVERY", 2)
    folder = tmp_path / "c"
    writer = Collection.create(folder, encoder=encoder, index=kind)
    writer.add(list(DOCS), list(DOCS.values()))
    writer.flush()  # the whole index: dense-6-0
    assert not list(folder.glob("dense-*.tail-*"))
    writer.add(["late"], [LATE["late"]])  # one added: no tail yet
    assert not list(folder.glob("dense-*.tail-*"))
    writer.add(["later"], [LATE["later"]])
    assert [p.name for p in folder.glob("dense-*.tail-*")] == [f"dense-6-0.{kind}.tail-8"]
    writer.delete(["en-1"])
    writer.add(["last"], [LATE["last"]])  # one past the tail: read from the store
    want = _answers(writer)

    reader = Collection.open(folder, encoder=encoder, readonly=True)
    calls = _reads_from_store(reader)
    assert _answers(reader) == want
    assert calls and min(calls) == 8  # the passages after the tail only, not all after the save
    assert "en-1" not in {h.id for h in reader.search("guitar", k=8)} and reader.check() == []
    reader.close()

    writer.add(["more-1", "more-2"], ["another guitar", "another market"])  # a newer tail
    assert [p.name for p in folder.glob("dense-*.tail-*")] == [f"dense-6-0.{kind}.tail-11"]
    tail = folder / f"dense-6-0.{kind}.tail-11"
    tail.write_bytes(b"garbage" + tail.read_bytes()[7:])
    want = _answers(writer)
    reader = Collection.open(folder, encoder=encoder, readonly=True)
    calls = _reads_from_store(reader)
    assert _answers(reader) == want and min(calls) == 6  # a damaged tail: back to the store
    reader.close()

    writer.close()
    # The damaged tail was set aside by the reader that found it, and stays to be looked at.
    tails = [p.name for p in folder.glob("dense-*.tail-*")]
    assert [name.split(".bad-")[0] for name in tails] == [f"dense-6-0.{kind}.tail-11"]
    assert all(".bad-" in name for name in tails)
    reader = Collection.open(folder, encoder=encoder, readonly=True)
    assert _answers(reader) == want and reader.check() == []
    reader.close()


def test_the_tail_holds_the_vectors_the_writer_searches(tmp_path: Path, encoder, monkeypatch) -> None:
    monkeypatch.setattr(live_index, "TAIL_EVERY", 1)
    folder = tmp_path / "h"
    with Collection.create(folder, encoder=encoder, index="hnsw") as writer:
        writer.add(list(DOCS), list(DOCS.values()))
        writer.flush()
        writer.add(list(LATE), list(LATE.values()))
        reader = Collection.open(folder, encoder=encoder, readonly=True)
        reader.search("x", k=1)
        tail = reader.dense.index.tail
        assert len(tail) == 3 and not tail._base.flags.writeable  # mapped from the file
        fresh = encoder.encode(list(LATE.values()), convert_to_numpy=True)
        fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
        np.testing.assert_allclose(tail.vectors(), fresh, atol=1e-6)
        reader.close()
