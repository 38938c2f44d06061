"""2-D maps of embeddings: PCA (numpy, always there) or UMAP (when `umap-learn` is installed:
`pip install munjang[umap]`; its first call in a process compiles numba code, which takes a while).

A map puts similar sentences near each other so a person can see a collection's topics at a
glance; the server's web page draws it and shows each point's text on hover.

In a multilingual model's space every language sits a little apart: each has its own mean vector,
and in a collection of Korean and English sentences the gap between the two means is the largest
direction of variance, so PCA's first axis (and UMAP's neighbourhoods) split the map by language
instead of by meaning. `groups` (the map's language of each text: `script_groups`) removes that:
each group's vectors are moved by the difference between its mean and the overall mean before
projecting, so sentences of the same meaning land together whatever their language
(bench/map_topics.py measures it on the demo collection; figures in docs/benchmarks.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np

from .._util.extras import install_hint
from ..errors import MissingExtraError

METHODS = ("auto", "pca", "umap")


def umap_available() -> bool:
    """Whether umap-learn is installed, without importing it: its import takes seconds (numba), and a
    server asks this on its event loop before it refuses a request."""
    return importlib.util.find_spec("umap") is not None


def script_groups(texts: Sequence[str]) -> list[str]:
    """Each text's writing system for `project_2d`'s `groups`: "hangul" when Hangul letters are at
    least a third of its letters, else "latin" (Latin, and other scripts with it)."""
    groups = []
    for text in texts:
        letters = [c for c in text if c.isalpha()]
        hangul = sum(
            "\uac00" <= c <= "\ud7a3" or "\u1100" <= c <= "\u11ff" or "\u3130" <= c <= "\u318f"
            for c in letters
        )
        groups.append("hangul" if letters and hangul * 3 >= len(letters) else "latin")
    return groups


def centre_groups(vectors: np.ndarray, groups: Sequence[str], min_size: int = 3) -> np.ndarray:
    """`vectors` with each group's mean moved onto the overall mean (groups of fewer than `min_size`
    rows, whose mean says little, stay where they are)."""
    x = np.asarray(vectors, dtype=np.float32)
    if len(groups) != len(x):
        raise ValueError(f"{len(groups)} groups for {len(x)} vectors")
    if len(x) == 0:
        return x.copy()
    labels = np.asarray(groups)
    out = x.copy()
    overall = x.mean(axis=0)
    for label in np.unique(labels):
        rows = labels == label
        if rows.sum() >= min_size and rows.sum() < len(x):
            out[rows] += overall - x[rows].mean(axis=0)
    return out


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """The first two principal components (centred, via SVD), signs fixed so the largest
    loading of each component is positive (the same map on every call)."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    components = vt[:2]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    components = components * signs[:, None]
    coords = x @ components.T
    if coords.shape[1] < 2:  # fewer than two directions of variance
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    return coords.astype(np.float32)


def project_2d(
    vectors: np.ndarray, method: str = "auto", seed: int = 0, groups: Sequence[str] | None = None
) -> tuple[np.ndarray, str]:
    """(n, 2) coordinates and the method used. "auto" is UMAP (cosine) when installed and there
    are enough points for its neighbourhood graph, PCA otherwise. `groups` (one label per row, e.g.
    `script_groups(texts)`) centres each group first (see the module docstring)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array, not {x.ndim}-D")
    if groups is not None:
        x = centre_groups(x, groups)
    if len(x) < 3:
        return np.zeros((len(x), 2), dtype=np.float32) if len(x) < 2 else pca_2d(x), "pca"
    if method == "umap" and not umap_available():
        raise MissingExtraError(f"method 'umap' needs umap-learn: {install_hint('umap')}")
    if method == "umap" or (method == "auto" and umap_available() and len(x) >= 16):
        import umap

        neighbours = max(2, min(15, len(x) - 1))
        reducer = umap.UMAP(
            n_components=2, n_neighbors=neighbours, metric="cosine", random_state=seed, n_jobs=1
        )
        return np.asarray(reducer.fit_transform(x), dtype=np.float32), "umap"
    return pca_2d(x), "pca"


def reduce_dimensions(vectors: np.ndarray, n_components: int = 5, seed: int = 0) -> np.ndarray:
    """UMAP to `n_components` dimensions as BERTopic does before clustering (15 neighbours, cosine,
    min_dist 0 so that dense regions stay dense); seeded and single-threaded, so reproducible."""
    if not umap_available():
        raise MissingExtraError(f"UMAP reduction needs umap-learn: {install_hint('umap')}")
    import umap

    x = np.asarray(vectors, dtype=np.float32)
    neighbours = max(2, min(15, len(x) - 1))
    reducer = umap.UMAP(
        n_components=n_components,
        n_neighbors=neighbours,
        min_dist=0.0,
        metric="cosine",
        random_state=seed,
        n_jobs=1,
    )
    return np.asarray(reducer.fit_transform(x), dtype=np.float32)
