"""Hybrid fusion: RRF and weighted fusion against hand-computed values, tie order, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.search.index.fusion import fuse, normalize_scores, reciprocal_rank_fusion, weighted_fusion

DENSE = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
LEXICAL = [("c", 12.0), ("d", 7.0), ("a", 2.0)]


def test_rrf_equals_the_formula() -> None:
    fused = reciprocal_rank_fusion([DENSE, LEXICAL], k=60)
    want = {"a": 1 / 61 + 1 / 63, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert {h.key: h.score for h in fused} == pytest.approx(want)
    # a and c tie on score and best rank (1); a comes first because the dense list was given first.
    assert [h.key for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].ranks == (1, 3) and fused[0].scores == (0.9, 2.0)
    assert fused[2].ranks == (2, None) and fused[2].scores == (0.8, None)


def test_rrf_weights_and_top_k() -> None:
    fused = reciprocal_rank_fusion([DENSE, LEXICAL], k=0, weights=[0.0, 1.0], top_k=2)
    assert [h.key for h in fused] == ["c", "d"]
    assert fused[0].score == pytest.approx(1.0)


def test_weighted_minmax_fills_missing_with_the_list_floor() -> None:
    fused = weighted_fusion([DENSE, LEXICAL], weights=[0.5, 0.5])
    dense_n = {"a": 1.0, "b": 0.7 / 0.8, "c": 0.0}
    lex_n = {"c": 1.0, "d": 0.5, "a": 0.0}
    want = {key: 0.5 * dense_n.get(key, 0.0) + 0.5 * lex_n.get(key, 0.0) for key in "abcd"}
    assert {h.key: h.score for h in fused} == pytest.approx(want)
    assert [h.key for h in fused] == ["a", "c", "b", "d"]


def test_weighted_zscore_and_none() -> None:
    z = weighted_fusion([DENSE], normalization="zscore")
    values = np.array([0.9, 0.8, 0.1])
    np.testing.assert_allclose([h.score for h in z], (values - values.mean()) / values.std())
    raw = fuse([DENSE, LEXICAL], method="weighted", normalization="none", weights=[1.0, 0.1])
    assert raw[0].key == "c" and raw[0].score == pytest.approx(0.1 + 1.2)


def test_normalize_constant_and_empty_lists() -> None:
    assert normalize_scores([3.0, 3.0]).tolist() == [1.0, 1.0]
    assert normalize_scores([3.0, 3.0], "zscore").tolist() == [0.0, 0.0]
    assert normalize_scores([]).size == 0
    assert reciprocal_rank_fusion([[], []]) == []
    assert [h.key for h in weighted_fusion([[], LEXICAL])] == ["c", "d", "a"]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="2 weights for 1"):
        reciprocal_rank_fusion([DENSE], weights=[1, 1])
    with pytest.raises(ValueError, match="between 0 and"):
        weighted_fusion([DENSE], weights=[-1])
    with pytest.raises(ValueError, match="between 0 and"):  # 1e308 + 1e308 would overflow the fused score
        weighted_fusion([DENSE, DENSE], weights=[1e308, 1e308])
    with pytest.raises(ValueError, match="twice"):
        reciprocal_rank_fusion([[("a", 1.0), ("a", 0.5)]])
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([DENSE], method="max")
    with pytest.raises(ValueError, match="unknown normalization"):
        normalize_scores([1.0], "l2")
    with pytest.raises(ValueError, match="finite"):
        normalize_scores([float("nan")])


def _reference(lists: list, method: str, weights: list[float], normalization: str) -> list[tuple]:
    """The formulas key by key (the module docstring), for random lists with many ties."""
    keys = list(dict.fromkeys(key for ranked in lists for key, _ in ranked))
    rank = [{key: r for r, (key, _) in enumerate(ranked, start=1)} for ranked in lists]
    raw = [dict(ranked) for ranked in lists]
    if method == "rrf":
        score = {
            d: sum(w / (60.0 + rk[d]) for w, rk in zip(weights, rank, strict=True) if d in rk) for d in keys
        }
    else:
        norm = [normalize_scores([s for _, s in ranked], normalization) for ranked in lists]
        floors = [float(n.min()) if n.size else 0.0 for n in norm]
        values = [
            {key: float(v) for (key, _), v in zip(r, n, strict=True)}
            for r, n in zip(lists, norm, strict=True)
        ]
        score = {
            d: sum(w * v.get(d, f) for w, v, f in zip(weights, values, floors, strict=True)) for d in keys
        }

    def best(d: object) -> tuple[int, int]:
        return min((rk[d], i) for i, rk in enumerate(rank) if d in rk)

    order = sorted(keys, key=lambda d: (-score[d], *best(d)))
    return [(d, score[d], tuple(rk.get(d) for rk in rank), tuple(r.get(d) for r in raw)) for d in order]


def test_fusion_equals_the_formulas_key_by_key_with_ties() -> None:
    rng = np.random.default_rng(0)
    for trial in range(300):
        lists = []
        for _ in range(int(rng.integers(1, 4))):
            keys = rng.choice(40, int(rng.integers(0, 30)), replace=False)
            scores = np.sort(
                rng.integers(0, 5, len(keys)).astype(float) if trial % 2 else rng.random(len(keys))
            )
            lists.append(
                [
                    (f"k{k}" if trial % 3 else int(k), float(s))
                    for k, s in zip(keys, scores[::-1], strict=True)
                ]
            )
        weights = [float(w) for w in rng.random(len(lists)) + 0.01]
        for method, normalization in [("rrf", "none"), ("weighted", "minmax"), ("weighted", "zscore")]:
            got = fuse(lists, method=method, weights=weights, normalization=normalization)
            want = _reference(lists, method, weights, normalization)
            assert [(h.key, h.score, h.ranks, h.scores) for h in got] == want
