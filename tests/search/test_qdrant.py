"""The Qdrant backend beyond the shared collection tests: crash safety with a killed writer, what
Qdrant itself holds (points, named vectors, payload, watermark), the one-process rule of local mode,
the network path to a server that is not there, and the missing extra. All on qdrant-client's local
mode, the real engine embedded; nothing is mocked."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from munjang.errors import MissingExtraError
from munjang.search.backends.base import CollectionError
from munjang.search.backends.qdrant.index import bm25_weights
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.crash_writer import first_commits, start_writer


def _start_writer(name: str, url: str, round_number: int) -> subprocess.Popen[str]:
    return start_writer(name, str(round_number), str(round_number), env={"MUNJANG_BACKEND": url})


# slow (26 s on two cores): the folder backend's crash test runs in the default suite
@pytest.mark.parametrize(
    "rounds", [pytest.param(2, marks=pytest.mark.slow), pytest.param(8, marks=pytest.mark.slow)]
)
def test_sigkill_at_random_points_loses_nothing_committed(tmp_path: Path, encoder, rounds: int) -> None:
    """A writer killed at random moments: every committed document is in the store and, once a
    writer opens the collection again, in Qdrant (dense and BM25), and the two agree (2 kills in
    the default suite, 8 with -m slow)."""
    url = qdrant_url(tmp_path)
    Collection.create("crash", backend=url, encoder=encoder, tokenizer="word").close()
    rng = random.Random(0)
    committed: dict[str, int] = {}
    for round_number in range(rounds):
        proc = _start_writer("crash", url, round_number)
        if round_number == 0:  # local mode: one process at a time, said in one line
            with pytest.raises(CollectionError, match="open in another process"):
                Collection.open("crash", backend=url, encoder=encoder)
        # Wait for the writer's first commits (events: under load they come later), then kill it at
        # a random moment after them (each commit also pushes to Qdrant: slower than a folder's).
        early = first_commits(proc, documents=2)
        time.sleep(rng.uniform(0.0, 4.0))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out = early + out
        assert proc.returncode == -signal.SIGKILL
        for line in out.splitlines():
            if line.startswith("committed "):
                committed.update(dict.fromkeys(line.split()[1:], round_number))
        with Collection.open("crash", backend=url, encoder=encoder) as col:
            assert col.check() == [], f"round {round_number}"
            present = col.get(list(committed))
            lost = [i for i, d in zip(committed, present, strict=True) if d is None]
            assert not lost, f"round {round_number}: committed documents lost: {lost[:5]}"
            assert np.array_equal(col.dense.index.ids(), col.store.labels_matching("1", []))
            for doc_id in rng.sample(sorted(committed), min(3, len(committed))):
                text = col.get([doc_id])[0].text  # type: ignore[union-attr]
                unique = next(t for t in text.split() if t.startswith("uid"))
                assert col.search(unique, k=1, mode="lexical")[0].id == doc_id
                hits = col.search(text, k=len(col))  # local mode is exact: the text finds itself
                own = next(h.score for h in hits if h.id == doc_id)
                assert own >= hits[0].score - 1e-3, f"{doc_id}: {own} vs best {hits[0].score}"
    assert len(committed) >= 2 * rounds  # each round waited for its first two documents


def test_points_hold_the_passages_vectors_and_payload(tmp_path: Path, encoder) -> None:
    url = qdrant_url(tmp_path)
    with Collection.create("c", backend=url, encoder=encoder) as col:
        col.add(["a", "b"], ["서울 날씨 맑음", "부산 바다 바람"], [{"lang": "ko", "n": 1}, {"n": 2}])
        points = col.dense.points
        records = points.client.retrieve(points.name, ids=[1, 2], with_vectors=True)
        by_id = {r.payload["id"]: r for r in records}
        assert by_id["a"].payload["metadata"] == {"lang": "ko", "n": 1}
        assert by_id["a"].payload["text"] == "서울 날씨 맑음" and by_id["a"].payload["chunk"] == 0
        assert set(by_id["a"].vector) == {"dense", "bm25"}
        stored = col.store.vectors_of(col.config["model"], col.config["dim"], np.array([1]))[0]
        dense = np.asarray(by_id["a"].vector["dense"])
        assert float(dense @ stored / np.linalg.norm(stored)) == pytest.approx(1.0, abs=1e-5)
        assert points.watermark == col.store.watermark()
        assert col.delete(["a"]) == 1
        assert points.client.retrieve(points.name, ids=[1]) == []
        assert points.watermark == col.store.watermark()
    assert Collection.names(url) == ["c"]


def test_bm25_weights_are_lucenes_term_part() -> None:
    indices, weights = bm25_weights(["a", "b", "a"], k1=1.5, b=0.75, avgdl=3.0)
    assert len(indices) == 2
    by_count = sorted(weights)
    assert by_count == pytest.approx([1 / (1 + 1.5), 2 / (2 + 1.5)])


def test_a_server_that_is_not_there_is_a_storage_error(tmp_path: Path, encoder) -> None:
    url = f"qdrant://127.0.0.1:9{tmp_path / 'records'}?timeout=5"  # the real network path: refused
    with pytest.raises(Exception) as raised:
        Collection.create("c", backend=url, encoder=encoder)
    assert Collection.is_storage_error(raised.value), repr(raised.value)
    assert not (tmp_path / "records" / "c").exists()
    assert list((tmp_path / "records").iterdir()) == []


def test_urls_and_names_are_checked(tmp_path: Path, encoder) -> None:
    with pytest.raises(ValueError, match="names no folder"):
        Collection.create("c", backend="qdrant://localhost:6333", encoder=encoder)
    with pytest.raises(ValueError, match="one plain name"):
        Collection.create("a/b", backend=qdrant_url(tmp_path), encoder=encoder)
    with pytest.raises(CollectionError, match="no such collection"):
        Collection.open("none", backend=qdrant_url(tmp_path), encoder=encoder)


def test_without_the_extra_one_line_names_the_fix(tmp_path: Path, encoder, monkeypatch) -> None:
    url = qdrant_url(tmp_path)
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    fix = r"Qdrant collections needs qdrant_client: pip install 'munjang\[qdrant\]'"
    with pytest.raises(MissingExtraError, match=fix):
        Collection.create("c", backend=url, encoder=encoder)
    assert list((tmp_path / "qdrant-collections").iterdir()) == []


def test_bm25_scores_equal_munjangs_after_commits_of_other_lengths(tmp_path: Path, encoder) -> None:
    """Passages pushed commit by commit got weights at the avgdl of their time; once it drifted, the
    weights are written again, so the scores are munjang's in-process BM25 scores."""
    texts = ["서울 날씨", "서울 날씨 맑음 바람 구름 비 눈 안개 서리", "부산 바다 서울", "서울"]
    ids = [f"d{i}" for i in range(len(texts))]
    folder = Collection.create(tmp_path / "folder", encoder=encoder, tokenizer="word")
    qdrant = Collection.create("q", backend=qdrant_url(tmp_path), encoder=encoder, tokenizer="word")
    for col in (folder, qdrant):
        col.add(ids, texts, commit_every=1)
    want = {h.id: h.score for h in folder.search("서울 날씨", k=10, mode="lexical")}
    got = {h.id: h.score for h in qdrant.search("서울 날씨", k=10, mode="lexical")}
    assert got == pytest.approx(want, rel=1e-5)
    state = qdrant.dense.points.state
    assert state["avgdl_low"] == state["avgdl_high"] == pytest.approx(state["length_sum"] / state["texts"])
    folder.close()
    qdrant.close()
