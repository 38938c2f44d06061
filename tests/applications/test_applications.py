"""Applications: paraphrase mining (parity with sentence-transformers and a brute-force N x N reference,
bounded memory), community detection (parity), k-means/HDBSCAN, near-duplicates on real sentences."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import connected_components
from sentence_transformers import util

from munjang.applications import (
    community_detection,
    deduplicate,
    group_by_label,
    hdbscan_clusters,
    kmeans_clusters,
    near_duplicates,
    paraphrase_mining,
    paraphrase_mining_embeddings,
)
from munjang.data import read_sts

# The package exports a function of the same name, so the module is fetched by its full name.
mining_module = importlib.import_module("munjang.applications.paraphrase_mining")


def random_embeddings(n: int = 600, d: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def clustered_embeddings(
    n_clusters: int = 6, per_cluster: int = 80, d: int = 32, spread: float = 0.35, seed: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Points around random centres, shuffled; returns (embeddings, true cluster of each row)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = np.repeat(np.arange(n_clusters), per_cluster)
    points = centres[labels] + spread / np.sqrt(d) * rng.normal(size=(len(labels), d))
    order = rng.permutation(len(labels))
    return points[order].astype(np.float32), labels[order]


def brute_force_pairs(
    embeddings: np.ndarray, top_k: int, max_pairs: int | None
) -> list[tuple[float, int, int]]:
    """The full N x N cosine matrix in float64: each row's top_k others (ties: lower index), pairs
    deduplicated, best max_pairs by (score desc, i, j)."""
    x = embeddings.astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    scores = x @ x.T
    np.fill_diagonal(scores, -np.inf)
    pairs: dict[tuple[int, int], float] = {}
    for i, row in enumerate(scores):
        for j in np.argsort(-row, kind="stable")[: min(top_k, len(x) - 1)]:
            pairs[(min(i, int(j)), max(i, int(j)))] = float(row[j])
    ranked = sorted(((s, i, j) for (i, j), s in pairs.items()), key=lambda p: (-p[0], p[1], p[2]))
    return ranked if max_pairs is None else ranked[:max_pairs]


def assert_same_pairs(got: list[tuple[float, int, int]], want: list) -> None:
    """The same pair set with scores within 1e-6, and `got` ordered by its own scores, then (i, j).

    Pairs whose scores differ by less than float32 rounding may be ordered differently by a reference
    computed in another precision or order, so the order is checked on `got` itself.
    """
    got_ids = [(i, j) for _, i, j in got]
    want_ids = [(int(i), int(j)) for _, i, j in want]
    assert sorted(got_ids) == sorted(want_ids) and len(got_ids) == len(set(got_ids))
    want_scores = dict(zip(want_ids, (float(s) for s, _, _ in want), strict=True))
    np.testing.assert_allclose([s for s, _, _ in got], [want_scores[p] for p in got_ids], atol=1e-6)
    assert got == sorted(got, key=lambda p: (-p[0], p[1], p[2]))
    assert all(i < j for _, i, j in got)


# -- paraphrase mining ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["random", "clustered"])
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"top_k": 5, "max_pairs": 400},
        {"top_k": 12, "max_pairs": 1500, "query_chunk_size": 128, "corpus_chunk_size": 250},
    ],
)
def test_mining_matches_sentence_transformers(kind: str, params: dict) -> None:
    embeddings = random_embeddings() if kind == "random" else clustered_embeddings()[0]
    ours = paraphrase_mining_embeddings(embeddings, **params)
    ref = util.paraphrase_mining_embeddings(torch.from_numpy(embeddings), **params)
    assert len(ours) == len(ref) > 0
    assert_same_pairs(ours, ref)


@pytest.mark.parametrize(("query_chunk", "corpus_chunk"), [(5000, 100_000), (64, 100), (1, 599)])
@pytest.mark.parametrize(("top_k", "max_pairs"), [(10, None), (3, 200), (100, 5000)])
def test_mining_matches_brute_force(
    query_chunk: int, corpus_chunk: int, top_k: int, max_pairs: int | None
) -> None:
    embeddings = random_embeddings(n=400, seed=3)
    got = paraphrase_mining_embeddings(
        embeddings,
        top_k=top_k,
        max_pairs=max_pairs,
        query_chunk_size=query_chunk,
        corpus_chunk_size=corpus_chunk,
    )
    assert_same_pairs(got, brute_force_pairs(embeddings, top_k, max_pairs))


def test_mining_all_pairs_when_top_k_covers_everything() -> None:
    embeddings = random_embeddings(n=120, seed=4)
    got = paraphrase_mining_embeddings(embeddings, top_k=1000, max_pairs=None, corpus_chunk_size=50)
    x = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    i, j = np.triu_indices(len(x), k=1)
    assert len(got) == len(i) == 120 * 119 // 2
    assert_same_pairs(got, [(s, a, b) for s, a, b in zip((x @ x.T)[i, j], i, j, strict=True)])


def test_mining_memory_is_bounded_by_chunks_and_max_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """No block larger than query_chunk x corpus_chunk is ever scored, the running pair list never
    exceeds max_pairs, and the result is the same as with one big block."""
    embeddings = random_embeddings(n=500, seed=5)
    block_shapes: list[tuple[int, ...]] = []
    list_lengths: list[int] = []
    similarity, best_pairs = mining_module.similarity, mining_module._best_pairs

    def recording_similarity(a: torch.Tensor, b: torch.Tensor, fn: str) -> torch.Tensor:
        block = similarity(a, b, fn)
        block_shapes.append(tuple(block.shape))
        return block

    def recording_best_pairs(*args: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = best_pairs(*args)  # type: ignore[arg-type]
        list_lengths.append(len(out[0]))
        return out

    monkeypatch.setattr(mining_module, "similarity", recording_similarity)
    monkeypatch.setattr(mining_module, "_best_pairs", recording_best_pairs)
    small = paraphrase_mining_embeddings(
        embeddings, top_k=20, max_pairs=300, query_chunk_size=60, corpus_chunk_size=70
    )
    assert max(r for r, _ in block_shapes) == 60 and max(c for _, c in block_shapes) == 70
    assert len(block_shapes) == 9 * 8 and max(list_lengths) == 300 and len(list_lengths) == 9
    block_shapes.clear()
    large = paraphrase_mining_embeddings(embeddings, top_k=20, max_pairs=300)
    assert block_shapes == [(500, 500)]
    assert [p[1:] for p in small] == [p[1:] for p in large]
    np.testing.assert_allclose([p[0] for p in small], [p[0] for p in large], atol=1e-6)


def test_mining_threshold_and_max_pairs_semantics() -> None:
    embeddings, _ = clustered_embeddings(seed=6)
    everything = paraphrase_mining_embeddings(embeddings, top_k=15, max_pairs=None)
    above = paraphrase_mining_embeddings(embeddings, top_k=15, max_pairs=None, threshold=0.9)
    assert above == [p for p in everything if p[0] >= 0.9]
    assert 0 < len(above) < len(everything)
    assert paraphrase_mining_embeddings(embeddings, top_k=15, max_pairs=250) == everything[:250]
    assert paraphrase_mining_embeddings(embeddings, top_k=15, threshold=1.5) == []


def test_mining_ties_are_deterministic() -> None:
    """One-hot rows score exactly 1 or 0: ties everywhere, broken by the lower index at every cut,
    whatever the chunking."""
    embeddings = np.eye(4, dtype=np.float32)[[0, 1, 0, 2, 0, 1, 0, 3, 0, 0]]
    want = brute_force_pairs(embeddings, top_k=2, max_pairs=7)
    assert want[:3] == [(1.0, 0, 2), (1.0, 0, 4), (1.0, 0, 6)]
    for query_chunk, corpus_chunk in [(100, 100), (3, 4), (1, 1), (7, 2)]:
        got = paraphrase_mining_embeddings(
            embeddings, top_k=2, max_pairs=7, query_chunk_size=query_chunk, corpus_chunk_size=corpus_chunk
        )
        assert got == want


@pytest.mark.parametrize("score_function", ["dot", "euclidean", "manhattan"])
def test_mining_other_score_functions(score_function: str) -> None:
    # float64 rows: this checks which pairs mining keeps and how it orders them. Euclidean blocks use the
    # matrix-product form, whose float32 rounding depends on the CPU's matmul kernel (1e-4 on a CI machine);
    # its precision is checked against scipy in tests/test_similarity.py.
    embeddings = random_embeddings(n=150, d=8, seed=7).astype(np.float64)
    got = paraphrase_mining_embeddings(
        embeddings, top_k=4, max_pairs=100, score_function=score_function, corpus_chunk_size=40
    )
    a, b = embeddings[:, None, :].astype(np.float64), embeddings[None, :, :].astype(np.float64)
    full = {
        "dot": embeddings.astype(np.float64) @ embeddings.T.astype(np.float64),
        "euclidean": -np.sqrt(((a - b) ** 2).sum(-1)),
        "manhattan": -np.abs(a - b).sum(-1),
    }[score_function]
    np.fill_diagonal(full, -np.inf)
    pairs = {}
    for i, row in enumerate(full):
        for j in np.argsort(-row, kind="stable")[:4]:
            pairs[(min(i, int(j)), max(i, int(j)))] = row[j]
    want = sorted(((s, i, j) for (i, j), s in pairs.items()), key=lambda p: (-p[0], p[1], p[2]))[:100]
    assert [p[1:] for p in got] == [p[1:] for p in want]
    np.testing.assert_allclose([p[0] for p in got], [p[0] for p in want], atol=1e-4, rtol=1e-5)


def test_progress_bars(capsys: pytest.CaptureFixture[str]) -> None:
    embeddings = random_embeddings(n=60)
    paraphrase_mining_embeddings(embeddings, top_k=3, query_chunk_size=20)
    assert "Mining paraphrases" not in capsys.readouterr().err
    paraphrase_mining_embeddings(embeddings, top_k=3, query_chunk_size=20, show_progress_bar=True)
    assert "3/3" in capsys.readouterr().err
    community_detection(embeddings, min_community_size=2, batch_size=30, show_progress_bar=True)
    assert "Finding communities" in capsys.readouterr().err


def test_mining_edges_and_errors() -> None:
    one = np.ones((1, 4), dtype=np.float32)
    assert paraphrase_mining_embeddings(one) == []
    assert paraphrase_mining_embeddings(np.zeros((0, 4), dtype=np.float32)) == []
    two = paraphrase_mining_embeddings(np.array([[1.0, 0.0], [1.0, 1.0]], dtype=np.float64))
    assert len(two) == 1 and two[0][1:] == (0, 1) and two[0][0] == pytest.approx(2**-0.5)
    half = paraphrase_mining_embeddings(torch.from_numpy(random_embeddings(50)).half(), top_k=3)
    assert len(half) > 0 and all(isinstance(s, float) for s, _, _ in half)
    with pytest.raises(ValueError, match="2-D"):
        paraphrase_mining_embeddings(np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match="row 1"):
        paraphrase_mining_embeddings(np.array([[1.0, 0.0], [np.nan, 1.0]], dtype=np.float32))
    for bad in ({"top_k": 0}, {"max_pairs": 0}, {"query_chunk_size": -1}, {"corpus_chunk_size": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            paraphrase_mining_embeddings(random_embeddings(10), **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score_function"):
        paraphrase_mining_embeddings(random_embeddings(10), score_function="jaccard")
    with pytest.raises(ValueError, match="threshold"):
        paraphrase_mining_embeddings(random_embeddings(10), threshold=float("nan"))


# -- community detection and clustering ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "min_size", "batch_size"), [(0.75, 10, 1024), (0.6, 5, 37), (0.8, 3, 100), (0.99, 10, 64)]
)
def test_community_detection_matches_sentence_transformers(
    threshold: float, min_size: int, batch_size: int
) -> None:
    embeddings, _ = clustered_embeddings(n_clusters=8, per_cluster=40, spread=0.7, seed=8)
    ours = community_detection(
        embeddings, threshold=threshold, min_community_size=min_size, batch_size=batch_size
    )
    ref = util.community_detection(
        torch.from_numpy(embeddings), threshold=threshold, min_community_size=min_size, batch_size=batch_size
    )
    assert ours == ref
    if threshold < 0.99:
        assert len(ours) > 0


def test_community_detection_recovers_clusters_and_edges() -> None:
    embeddings, labels = clustered_embeddings(n_clusters=5, per_cluster=30, spread=0.2, seed=9)
    communities = community_detection(embeddings, threshold=0.8, min_community_size=10)
    assert sorted(sorted(c) for c in communities) == sorted(group_by_label(labels)) and len(communities) == 5
    assert all(labels[c[0]] == labels[c[-1]] for c in communities)
    assert community_detection(random_embeddings(50), threshold=0.9, min_community_size=5) == []
    assert community_detection(embeddings[:5], min_community_size=10) == []
    assert community_detection(np.zeros((0, 4), dtype=np.float32)) == []
    with pytest.raises(ValueError, match="min_community_size"):
        community_detection(embeddings, min_community_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        community_detection(embeddings, batch_size=0)


def test_kmeans_and_hdbscan_separate_obvious_clusters() -> None:
    # Four tight clusters in one cone (centres at cosine ~0.6 to each other), and four points at a right
    # angle to all of them: far from every cluster and from each other.
    rng = np.random.default_rng(10)
    eye = np.eye(16)
    centres = eye[0] + 0.8 * eye[1:5]
    labels = np.repeat(np.arange(4), 30)
    embeddings = (centres[labels] + 0.03 * rng.normal(size=(120, 16))).astype(np.float32)
    noise = (eye[10:14] + 0.01 * rng.normal(size=(4, 16))).astype(np.float32)
    truth = sorted(group_by_label(labels))
    kmeans = kmeans_clusters(embeddings, n_clusters=4, seed=0)
    assert kmeans.shape == (120,) and sorted(group_by_label(kmeans)) == truth
    np.testing.assert_array_equal(kmeans, kmeans_clusters(torch.from_numpy(embeddings), 4, seed=0))
    # Scaling rows changes nothing after normalization: clusters are by direction (cosine).
    scaled = embeddings * rng.uniform(0.1, 10, size=(120, 1)).astype(np.float32)
    assert sorted(group_by_label(kmeans_clusters(scaled, 4))) == truth
    hdbscan = hdbscan_clusters(np.concatenate([scaled, noise]), min_cluster_size=5)
    assert sorted(group_by_label(hdbscan[:120])) == truth
    assert hdbscan[120:].tolist() == [-1] * 4
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans_clusters(embeddings[:3], n_clusters=4)
    with pytest.raises(ValueError, match="min_cluster_size"):
        hdbscan_clusters(embeddings, min_cluster_size=1)


def test_group_by_label() -> None:
    assert group_by_label([2, -1, 0, 2, 0, -1]) == [[2, 4], [0, 3]]
    assert group_by_label(np.array([2, -1, 0, 2]), noise_label=None) == [[1], [2], [0, 3]]
    assert group_by_label([]) == []
    with pytest.raises(ValueError, match="integers"):
        group_by_label([0.5, 1.0])
    with pytest.raises(ValueError, match="1-D"):
        group_by_label([[0, 1]])


# -- near-duplicates ------------------------------------------------------------------------------------


def test_near_duplicates_match_connected_components_of_the_full_graph() -> None:
    embeddings, _ = clustered_embeddings(n_clusters=10, per_cluster=20, spread=0.3, seed=12)
    x = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    full = (x @ x.T) >= 0.94
    _, component = connected_components(full, directed=False)
    want = sorted(g for g in group_by_label(component) if len(g) > 1)
    got = near_duplicates(embeddings, threshold=0.94, top_k=200, query_chunk_size=64)
    assert got == want and len(got) > 10 and max(len(g) for g in got) > 2


def test_near_duplicates_chains_and_exact_rows() -> None:
    # 0-1 and 1-2 are above 0.95, 0-2 is not: one group through row 1. Rows 3, 5 and 6 are equal:
    # grouped even when the threshold is above any cosine.
    angle = np.deg2rad([0.0, 15.0, 30.0])
    rows = np.stack([np.cos(angle), np.sin(angle), np.zeros(3)], axis=1)
    other = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    embeddings = np.concatenate([rows, other]).astype(np.float32)
    assert float(rows[0] @ rows[2]) < 0.95 < float(rows[0] @ rows[1])
    assert near_duplicates(embeddings, threshold=0.95) == [[0, 1, 2], [3, 5, 6]]
    assert near_duplicates(embeddings, threshold=1.5) == [[3, 5, 6]]
    assert near_duplicates(embeddings, threshold=0.95, top_k=1) == [[0, 1, 2], [3, 5, 6]]
    assert near_duplicates(embeddings[:1]) == []


@pytest.fixture(scope="module")
def english_sentences(data_dir: Path) -> list[str]:
    """38 distinct real STSb sentences; rows 11 and 14 are the one near-duplicate pair among them."""
    sentences = list(dict.fromkeys(read_sts(data_dir / "stsb" / "sts-dev.csv", "stsb").sentences1[:40]))
    assert sentences[11] == "A man is playing a guitar." and sentences[14] == "The man is playing the guitar."
    return sentences


def test_near_duplicates_and_deduplicate_on_real_sentences(encoder, english_sentences: list[str]) -> None:
    base = english_sentences
    n = len(base)
    # Copies at n..n+5: final period dropped (0-2), upper case (3; the model is uncased), the same text (4).
    variants = [base[0].rstrip("."), base[1].rstrip("."), base[2].rstrip("."), base[3].upper(), base[4]]
    texts = base + variants
    groups = near_duplicates(encoder.encode(texts), threshold=0.95)
    assert groups == [[0, n], [1, n + 1], [2, n + 2], [3, n + 3], [4, n + 4], [11, 14]]
    kept = deduplicate(texts, encoder, threshold=0.95)
    assert kept == [i for i in range(n) if i != 14]
    # Above 0.999 only the equal text and the upper-case copy (the same tokens) are duplicates.
    assert deduplicate(texts, encoder, threshold=0.999) == list(range(n + 3))
    assert deduplicate(["같은 문장", "같은 문장"], encoder) == [0]
    with pytest.raises(TypeError, match="list of strings"):
        deduplicate("one text", encoder)


def test_paraphrase_mining_with_the_model(encoder, english_sentences: list[str]) -> None:
    sentences = english_sentences
    pairs = paraphrase_mining(encoder, sentences, top_k=5, max_pairs=50)
    assert pairs[0][1:] == (11, 14) and pairs[0][0] > 0.95 and len(pairs) == 50
    direct = paraphrase_mining_embeddings(encoder.encode(sentences), top_k=5, max_pairs=50)
    assert [p[1:] for p in pairs] == [p[1:] for p in direct]
    np.testing.assert_allclose([p[0] for p in pairs], [p[0] for p in direct], atol=1e-5)
    assert paraphrase_mining(encoder, sentences[:1]) == []
    with pytest.raises(TypeError, match="list of strings"):
        paraphrase_mining(encoder, "not a list")
