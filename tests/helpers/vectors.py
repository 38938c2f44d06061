"""Synthetic vectors and recall for the ANN and quantization tests."""

from __future__ import annotations

import numpy as np


def clustered(n: int, dim: int, seed: int, centres: int = 100, spread: float = 1.0) -> np.ndarray:
    """Unit vectors from a Gaussian mixture around `centres` random unit centres (same centres per dim)."""
    centre = np.random.default_rng(1234).standard_normal((centres, dim)).astype(np.float32)
    centre /= np.linalg.norm(centre, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    x = centre[rng.integers(0, centres, n)] + spread / np.sqrt(dim) * rng.standard_normal((n, dim))
    x = x.astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact(queries: np.ndarray, corpus: np.ndarray, k: int) -> np.ndarray:
    """Brute-force top-k rows by dot product, ties to the lower row."""
    return np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :k]


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of the true top-k found."""
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))
