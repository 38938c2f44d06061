"""Crash safety: a writer killed with SIGKILL at random moments, 20 times, never loses a committed
document and never leaves the collection inconsistent; a reader searches while the writer adds."""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.multi_vector import maxsim
from munjang.search.collection.collection import Collection
from tests.helpers.crash_writer import first_commits, start_writer
from tests.helpers.multi_vector import st_multi_vector
from tests.helpers.sparse import munjang_splade


def _start_writer(folder: Path, round_number: int, words: int = 6) -> subprocess.Popen[str]:
    return start_writer(str(folder), str(round_number), str(round_number), str(words))


@pytest.mark.parametrize("rounds", [4, pytest.param(20, marks=pytest.mark.slow)])
def test_sigkill_at_random_points_loses_nothing_committed(tmp_path: Path, encoder, rounds: int) -> None:
    # 4 kills in the default suite (about 6 s each; the suite must stay under 15 minutes), 20 with -m slow.
    folder = tmp_path / "crash"
    Collection.create(folder, encoder=encoder, index="hnsw", tokenizer="word").close()
    rng = random.Random(0)
    committed: dict[str, int] = {}
    searches = 0
    for round_number in range(rounds):
        proc = _start_writer(folder, round_number)
        # Wait for the writer's first commits (events: a slow or busy machine commits later), then
        # kill it at a random moment after them, while a reader in this process searches.
        early = first_commits(proc, documents=6)
        deadline = time.monotonic() + rng.uniform(0.05, 2.5)
        with Collection.open(folder, encoder=encoder, readonly=True) as reader:
            seen = round_searches = 0
            while time.monotonic() < deadline or round_searches < 6:
                hits = reader.search("고양이 시장 guitar", k=5, mode="hybrid")
                assert len(hits) <= 5
                count = len(reader)
                assert count >= seen
                seen = count
                round_searches += 1
        searches += round_searches
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out = early + out
        assert proc.returncode == -signal.SIGKILL
        for line in out.splitlines():
            if line.startswith("committed "):
                for doc_id in line.split()[1:]:
                    committed[doc_id] = round_number
        with Collection.open(folder, encoder=encoder) as col:
            assert col.check() == [], f"round {round_number}"
            present = col.get(list(committed))
            lost = [i for i, d in zip(committed, present, strict=True) if d is None]
            assert not lost, f"round {round_number}: committed documents lost: {lost[:5]}"
            for doc_id in rng.sample(sorted(committed), min(3, len(committed))):
                text = col.get([doc_id])[0].text  # type: ignore[union-attr]
                unique = next(t for t in text.split() if t.startswith("uid"))
                assert col.search(unique, k=1, mode="lexical")[0].id == doc_id
                # The dense index has it too, under its label, as the vector of its own text. (HNSW
                # is approximate, and these word salads are near-duplicates under MiniLM, where most
                # Korean words are [UNK], so a search may miss one: the stored vector is checked.)
                doc = col.get([doc_id])[0]
                assert doc is not None and doc.label in col.dense.index, f"{doc_id} not in dense index"
                stored = col.dense.index.get_vectors([doc.label])[0]
                fresh = encoder.encode([text], convert_to_numpy=True)[0]
                cosine = float(stored @ fresh / (np.linalg.norm(stored) * np.linalg.norm(fresh)))
                assert cosine > 0.999, f"{doc_id}: stored vector is not its text's ({cosine})"
                # Ranking everything is exhaustive, so the document is found, tied with the best.
                hits = col.search(text, k=len(col))
                own = next(h.score for h in hits if h.id == doc_id)
                assert own >= hits[0].score - 1e-3, f"{doc_id}: {own} vs best {hits[0].score}"
    assert len(committed) > 20 and searches > 20


@pytest.mark.parametrize("rounds", [2, pytest.param(6, marks=pytest.mark.slow)])
def test_sigkill_with_documents_stored_as_passages_loses_nothing_committed(
    tmp_path: Path, encoder, rounds: int
) -> None:
    folder = tmp_path / "passages"
    chunking = {"max_tokens": 16, "overlap_tokens": 4}
    Collection.create(folder, encoder=encoder, index="hnsw", tokenizer="word", chunking=chunking).close()
    rng = random.Random(1)
    committed: set[str] = set()
    for round_number in range(rounds):
        proc = _start_writer(folder, round_number, words=30)
        # Wait for the first commit (how long it takes depends on the machine), then kill at random.
        assert proc.stdout is not None
        first = proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out = first + out
        lines = [line.split()[1:] for line in out.splitlines() if line.startswith("committed ")]
        committed |= {doc_id for ids in lines for doc_id in ids}
        with Collection.open(folder, encoder=encoder) as col:
            assert col.check() == [], f"round {round_number}"
            present = col.get(sorted(committed))
            assert all(d is not None for d in present), f"round {round_number}: committed documents lost"
            assert col.store.has_passages() or not committed
            for doc in rng.sample([d for d in present if d is not None], min(3, len(committed))):
                # Every passage of the document is there, and together they cover its text.
                labels = col.store.labels_matching("id = ?", [doc.id])
                parts = sorted(col.store.documents(labels.tolist()).values(), key=lambda p: p.chunk)
                assert [p.chunk for p in parts] == list(range(len(parts))) and len(parts) > 1
                assert parts[0].start == 0 and parts[-1].end == len(doc.text)
                assert all(a.end >= b.start for a, b in itertools.pairwise(parts))
                unique = next(t for t in doc.text.split() if t.startswith("uid"))
                assert col.search(unique, k=1, mode="lexical")[0].id == doc.id
    assert len(committed) > 5


@pytest.mark.slow
def test_sigkill_with_a_sparse_retriever_loses_nothing_committed(tmp_path: Path, encoder) -> None:
    """The same kills, on a collection with a sparse (SPLADE) retriever: its vectors commit with
    their passages, and its index, replayed from the store, matches the documents every time."""
    folder = tmp_path / "sparse"
    splade = munjang_splade(tmp_path / "splade", inference_free=True)
    Collection.create(folder, encoder=encoder, tokenizer="word", sparse_model=splade).close()
    rng = random.Random(2)
    committed: set[str] = set()
    searches = 0
    for round_number in range(6):
        proc = _start_writer(folder, round_number)
        # Wait for the first commit (how long it takes depends on the machine), then kill at random.
        assert proc.stdout is not None
        first = proc.stdout.readline()
        deadline = time.monotonic() + rng.uniform(0.0, 2.5)
        with Collection.open(folder, encoder=encoder, readonly=True) as reader:
            while True:  # at least one search a round, however slow the machine
                hits = reader.search("고양이 시장 guitar", k=5, mode="hybrid")  # dense + BM25 + sparse
                assert len(hits) <= 5
                searches += 1
                if time.monotonic() >= deadline:
                    break
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out = first + out
        assert proc.returncode == -signal.SIGKILL
        committed |= {
            i for line in out.splitlines() if line.startswith("committed ") for i in line.split()[1:]
        }
        with Collection.open(folder, encoder=encoder) as col:
            assert col.check() == [], f"round {round_number}"  # the sparse index included
            present = col.get(sorted(committed))
            assert all(d is not None for d in present), f"round {round_number}: committed documents lost"
            model = col.sparse.encoder
            for doc in rng.sample([d for d in present if d is not None], min(3, len(committed))):
                stored = col.sparse.engine.index.vector(doc.label)
                fresh = model.encode_document(doc.text).coalesce()
                want = dict(zip(fresh.indices()[0].tolist(), fresh.values().tolist(), strict=True))
                assert stored == pytest.approx(want, abs=1e-5), (
                    f"{doc.id}: stored sparse vector is not its text's"
                )
                own = {h.id: h.score for h in col.search(doc.text, k=len(col), mode="sparse")}
                assert doc.id in own
    assert len(committed) > 6 and searches >= 6


@pytest.mark.slow
def test_sigkill_with_a_multi_vector_retriever_loses_nothing_committed(tmp_path: Path, encoder) -> None:
    """The same kills, on a collection with a multi-vector (ColBERT) retriever: its token vectors
    commit with their passages, and its index, replayed from the store, matches the documents and
    ranks as brute-force MaxSim over the model's own vectors does."""
    folder = tmp_path / "multi"
    colbert = st_multi_vector(tmp_path / "colbert")
    Collection.create(folder, encoder=encoder, tokenizer="word", multi_vector_model=colbert).close()
    rng = random.Random(3)
    committed: set[str] = set()
    for round_number in range(6):
        proc = _start_writer(folder, round_number)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        deadline = time.monotonic() + rng.uniform(0.0, 2.5)
        with Collection.open(folder, encoder=encoder, readonly=True) as reader:
            while True:  # at least one search a round, however slow the machine
                hits = reader.search("고양이 시장 guitar", k=5, mode="hybrid")  # dense + BM25 + multi-vector
                assert len(hits) <= 5
                if time.monotonic() >= deadline:
                    break
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out = first + out
        assert proc.returncode == -signal.SIGKILL
        committed |= {
            i for line in out.splitlines() if line.startswith("committed ") for i in line.split()[1:]
        }
        with Collection.open(folder, encoder=encoder) as col:
            assert col.check() == [], f"round {round_number}"  # the multi-vector index included
            present = col.get(sorted(committed))
            assert all(d is not None for d in present), f"round {round_number}: committed documents lost"
            model = col.multi_vector.encoder
            docs = [d for d in col.get(list(col.ids())) if d is not None]
            stored = [
                m.astype(np.float16).astype(np.float32) for m in model.encode_document([d.text for d in docs])
            ]
            query = "고양이 시장 guitar"
            scores = maxsim(model.encode_query([query]), stored)[0]
            want = [docs[j].id for j in np.argsort(-scores, kind="stable")[:5]]
            got = [h.id for h in col.search(query, k=5, mode="multi_vector")]
            assert got == want, f"round {round_number}: multi_vector search is not brute-force MaxSim"
    assert len(committed) > 6
