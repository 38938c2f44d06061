"""A reader beside a writer: BM25 catches up with each change at the reader's next search (lucene,
the default: incrementally, so nothing is rebuilt); for the methods that are rebuilt (bm25l, bm25+),
with `background_refresh` the rebuild runs on a thread while searches go on with the previous
index, so a read never waits for a rebuild."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from munjang.search.collection.collection import Collection
from munjang.search.index import bm25


@pytest.mark.parametrize("kind", ["embedded", "postgres"])
def test_a_search_never_waits_for_the_bm25_rebuild(kind, encoder, tmp_path: Path, request, monkeypatch):
    backend = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    where = f"readers_{kind}" if backend else tmp_path / "readers"
    writer = Collection.create(
        where, backend=backend, encoder=encoder, tokenizer="word", bm25={"method": "bm25+"}
    )
    writer.add(["a"], ["apples and pears"])
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True, background_refresh=True)
    assert [h.id for h in reader.search("apples", mode="lexical")] == ["a"]  # first build: in line

    release, started = threading.Event(), threading.Event()
    build = bm25.BM25Index.index_tokens

    def held_build(self, tokens):
        started.set()
        assert release.wait(30), "the test never released the rebuild"
        return build(self, tokens)

    monkeypatch.setattr(bm25.BM25Index, "index_tokens", held_build)
    writer.add(["b"], ["bananas and apples"])
    writer.delete(["a"])
    # The rebuild is held, yet the search answers, from the index as it was: "a" is gone from the
    # store, so it is dropped; "b" is not indexed yet.
    assert reader.search("apples", mode="lexical") == []
    assert started.wait(30)
    release.set()
    reader.lexical._rebuilding.join(30)  # type: ignore[union-attr]
    assert [h.id for h in reader.search("apples", mode="lexical")] == ["b"]
    reader.close()
    writer.close()


@pytest.mark.parametrize("kind", ["embedded", "postgres"])
def test_a_reader_sees_each_commit_at_its_next_search_without_a_rebuild(
    kind, encoder, tmp_path: Path, request, monkeypatch
):
    backend = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    where = f"readers_inc_{kind}" if backend else tmp_path / "readers"
    writer = Collection.create(where, backend=backend, encoder=encoder, tokenizer="word")
    writer.add(["a"], ["apples and pears"])
    reader = Collection.open(where, backend=backend, encoder=encoder, readonly=True, background_refresh=True)
    assert [h.id for h in reader.search("apples", mode="lexical")] == ["a"]

    def no_rebuild(self, tokens):
        raise AssertionError("BM25 was rebuilt")

    monkeypatch.setattr(bm25.BM25Index, "index_tokens", no_rebuild)
    before = reader.store.tokens
    read: list[int] = []
    monkeypatch.setattr(
        reader.store, "tokens", lambda after=0, upto=None: read.append(after) or before(after, upto)
    )
    writer.add(["b"], ["bananas and apples"])
    writer.delete(["a"])
    assert [h.id for h in reader.search("apples", mode="lexical")] == ["b"]
    if kind == "postgres":
        assert read == []  # BM25 runs in SQL: the reader reads no tokens at all
    else:
        assert read and all(after > 0 for after in read)  # only what came after its watermark
    reader.close()
    writer.close()


def test_a_lexical_reader_never_imports_torch(encoder, tmp_path: Path) -> None:
    # A reader that never encodes (BM25 alone) pays neither torch's import nor the model: the index,
    # storage and collection layers keep torch and the retrievers' model code out of their imports.
    import subprocess
    import sys

    Collection.create(tmp_path / "c", encoder=encoder).add(["a", "b"], ["학교에 갔습니다", "사과와 배"])
    probe = (
        "import sys\n"
        "from munjang.search import Collection\n"
        f"c = Collection.open({str(tmp_path / 'c')!r}, readonly=True)\n"
        "hits = c.search('학교', mode='lexical')\n"
        "print([h.id for h in hits], 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["['a']", "False"], out.stderr[-2000:]
