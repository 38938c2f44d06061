"""Two munjang processes on one PostgreSQL collection: nothing per passage lives in either (dense,
BM25, SPLADE and filters run in SQL), so both answer every query the same as the writer does, and a
write through the writer is found by both at their next search: lexical, dense, sparse and hybrid,
filtered too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.documents import BY_KIND
from tests.helpers.sparse import munjang_splade

# A reader process: opens the collection read-only, then answers one JSON request per line.
READER = """
import json, sys
from munjang.search.collection.collection import Collection
from tests.helpers.sparse import munjang_splade

collection = Collection.open(sys.argv[1], backend=sys.argv[2], readonly=True)
kinds = [collection.lexical, collection.dense, collection.sparse.engine]
print(json.dumps([type(x).__name__ for x in kinds]), flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    hits = collection.search(ask["query"], 5, mode=ask["mode"], filter=ask.get("filter"))
    print(json.dumps([[h.id, round(h.score, 5)] for h in hits]), flush=True)
"""

DOCS = BY_KIND
# Words of the tiny SPLADE model's vocabulary: its random weights leave no passage without one of them.
MANY = "the cat sat on the mat in the rain sun car road dog"
QUERIES = [
    ("과일", "lexical", None),
    ("주식 시장", "dense", None),
    ("고양이 낮잠", "hybrid", None),
    ("과일", "hybrid", {"kind": "fruit"}),
    ("시장", "lexical", {"kind": "news"}),
    (MANY, "sparse", None),
    (MANY, "sparse", {"kind": "fruit"}),
]


class Reader:
    """A munjang process holding the collection open, asked over its stdin."""

    def __init__(self, name: str, url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", READER, name, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.kinds = json.loads(self._line())

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the reader process died"
        return line

    def search(self, query: str, mode: str, filter: dict[str, Any] | None = None) -> list[list[Any]]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"query": query, "mode": mode, "filter": filter}) + "\n")
        self.process.stdin.flush()
        found: list[list[Any]] = json.loads(self._line())
        return found

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


def _own(collection: Collection, query: str, mode: str, filter: dict[str, Any] | None) -> list[list[Any]]:
    return [[h.id, round(h.score, 5)] for h in collection.search(query, 5, mode=mode, filter=filter)]


@pytest.fixture
def writer(postgres_url: str, encoder, tmp_path: Path):
    name = "two_processes"
    splade = munjang_splade(tmp_path / "splade", inference_free=True)
    collection = Collection.create(
        name, backend=postgres_url, encoder=encoder, index="hnsw", sparse_model=splade
    )
    ids = list(DOCS)
    collection.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
    yield collection
    collection.store.drop()  # type: ignore[attr-defined]
    collection.close()


@pytest.mark.slow  # 16 s: two processes of their own
def test_two_processes_answer_alike_and_see_each_write_at_their_next_search(writer, postgres_url) -> None:
    readers = [Reader("two_processes", postgres_url) for _ in range(2)]
    try:
        # Nothing per passage in either process: both retrievers are the database's.
        assert all(r.kinds == ["PostgresLexical", "PostgresDense", "PostgresSparse"] for r in readers)
        for query, mode, spec in QUERIES:
            want = _own(writer, query, mode, spec)
            assert want, (query, mode)
            for reader in readers:
                got = reader.search(query, mode, spec)
                assert [h[0] for h in got] == [h[0] for h in want]
                assert [h[1] for h in got] == pytest.approx([h[1] for h in want], abs=1e-4)

        writer.add(["grape"], ["포도는 보라색 과일이다"], [{"kind": "fruit"}])
        want = _own(writer, MANY, "sparse", {"kind": "fruit"})
        assert "grape" in [h[0] for h in want]
        for reader in readers:
            assert reader.search(MANY, "sparse", {"kind": "fruit"}) == want
            assert "grape" in [h[0] for h in reader.search("포도", "lexical")]
            assert "grape" in [h[0] for h in reader.search("보라색 포도 과일", "dense")]
            assert "grape" in [h[0] for h in reader.search("포도", "hybrid", {"kind": "fruit"})]
            assert "grape" not in [h[0] for h in reader.search("포도", "lexical", {"kind": "news"})]

        writer.delete(["apple"])
        for reader in readers:
            for mode in ("lexical", "dense", "sparse", "hybrid"):
                assert "apple" not in [h[0] for h in reader.search("사과 과일", mode)]
        assert writer.check() == []
    finally:
        for reader in readers:
            reader.close()
