"""bge-m3 in a collection: dense, sparse and ColBERT vectors from one forward pass per batch.

A collection created with `m3_model=` (a bge-m3 folder or hub id) records the model three times,
as its dense model, its sparse retriever and its multi-vector retriever, and "m3" with bge-m3's
score weights. Its three encoders are views of one `OnePass`: while a write (or an "m3" search)
holds `OnePass.shared()`, the first view asked to encode some texts runs `M3Encoder.encode` once
for all three outputs and keeps them, and the other two views read what was kept. So adding a
batch of passages costs one transformer pass, not three, and each output is stored in its own
cache (embeddings, sparse_vectors, token_vectors) in the passage's transaction.

The "m3" search mode scores the union of the three retrievers' candidates with bge-m3's combined
score, `(w_dense·dense + w_sparse·sparse + w_colbert·colbert) / Σw` (`encoders.m3.encoder.combined_scores`,
weights 0.4 / 0.2 / 0.4 by default), from the stored vectors: dense and sparse exactly as the model
gives them, ColBERT from the float16 token matrices the collection keeps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...encoders.m3.encoder import DEFAULT_WEIGHTS, M3Encoder, M3Output
from ...encoders.m3.views import M3MultiVectorView, M3SparseView
from .inputs import model_key


class OnePass:
    """An M3Encoder (loaded on first need) whose outputs are kept per text while `shared()` is held,
    so the dense, sparse and multi-vector views encode each text once between them."""

    def __init__(self, model: str, device: str | None = None, encoder: M3Encoder | None = None) -> None:
        self.name = model
        self._model = encoder
        self._device = device
        self._local = threading.local()  # what `shared()` keeps, per thread (a server searches on several)
        self.passes = 0  # calls to M3Encoder.encode: what the one-pass test counts

    @property
    def model(self) -> M3Encoder:
        if self._model is None:
            from ...encoders.m3.encoder import load_m3_encoder

            self._model = load_m3_encoder(self.name, device=self._device)
        return self._model

    # What M3SparseView and M3MultiVectorView read from the model they wrap.
    @property
    def transformer(self) -> Any:
        return self.model.transformer

    @property
    def encoder(self) -> Any:
        return self.model.encoder

    @property
    def colbert_dimension(self) -> int:
        return self.model.colbert_dimension

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Keep every output computed inside this block, for the other views to read."""
        outer = self._kept() is not None
        if not outer:
            self._local.kept = {}
        try:
            yield
        finally:
            if not outer:
                self._local.kept = None

    def _kept(self) -> dict[str, tuple[np.ndarray, dict[int, float], np.ndarray]] | None:
        return getattr(self._local, "kept", None)

    def encode(
        self,
        texts: Sequence[str],
        *,
        dense: bool = True,
        sparse: bool = True,
        colbert: bool = True,
        batch_size: int = 32,
    ) -> M3Output:
        """`M3Encoder.encode`; inside `shared()`, all three outputs for texts not kept yet, then the
        asked-for ones read from what is kept."""
        texts = list(texts)
        kept_now = self._kept()
        if kept_now is None:
            self.passes += 1
            return self.model.encode(
                texts, dense=dense, sparse=sparse, colbert=colbert, batch_size=batch_size
            )
        todo = list(dict.fromkeys(t for t in texts if t not in kept_now))
        if todo:
            self.passes += 1
            out = self.model.encode(todo, batch_size=batch_size)
            assert out.dense is not None and out.sparse is not None and out.colbert is not None
            for i, text in enumerate(todo):
                kept_now[text] = (out.dense[i], out.sparse[i], out.colbert[i])
        kept = [kept_now[t] for t in texts]
        width = self.model.get_embedding_dimension()
        return M3Output(
            (np.stack([k[0] for k in kept]) if kept else np.zeros((0, width), np.float32)) if dense else None,
            [k[1] for k in kept] if sparse else None,
            [k[2] for k in kept] if colbert else None,
        )


class M3DenseView:
    """bge-m3's dense vectors as a collection's encoder (what it calls on a SentenceEncoder)."""

    def __init__(self, one_pass: OnePass) -> None:
        self.one_pass = one_pass
        self.prompts: dict[str, str] = {}  # bge-m3 encodes queries and documents alike

    @property
    def tokenizer(self) -> Any:
        return self.one_pass.encoder.tokenizer

    @property
    def max_seq_length(self) -> int:
        return int(self.one_pass.transformer.max_seq_length)

    def get_embedding_dimension(self) -> int:
        return int(self.one_pass.model.get_embedding_dimension())

    def encode(self, sentences: Sequence[str], batch_size: int = 32, **_: Any) -> np.ndarray:
        for i, text in enumerate(sentences):
            if not isinstance(text, str):
                raise TypeError(f"a bge-m3 collection encodes texts; input {i} is {type(text).__name__}")
        out = self.one_pass.encode(list(sentences), sparse=False, colbert=False, batch_size=batch_size)
        assert out.dense is not None
        return out.dense


def m3_setup(
    m3_model: str | os.PathLike[str], encoder: Any, device: str | None
) -> tuple[OnePass, dict[str, Any]]:
    """The model's one-pass wrapper (loaded unless given) and what a new collection records: its
    dense model and dimension, "sparse" and "multi_vector" entries naming the same model, and "m3"."""
    from ...encoders.m3.encoder import load_m3_encoder

    model = encoder if encoder is not None else load_m3_encoder(str(m3_model), device=device)
    key = model_key(m3_model)
    one_pass = OnePass(key, device, model)
    config = {
        "model": key,
        "dim": int(model.get_embedding_dimension()),
        "sparse": {"model": key, "dim": M3SparseView(model).get_embedding_dimension()},
        "multi_vector": {"model": key, "dim": model.colbert_dimension, "similarity": "meanmaxsim"},
        "m3": {"model": key, "weights": list(DEFAULT_WEIGHTS)},
    }
    return one_pass, config


def m3_views(one_pass: OnePass) -> dict[str, Any]:
    """The collection's three encoders over one pass: dense, sparse, multi_vector."""
    return {
        "dense": M3DenseView(one_pass),
        "sparse": M3SparseView(one_pass),  # type: ignore[arg-type]
        "multi_vector": M3MultiVectorView(one_pass),  # type: ignore[arg-type]
    }


def m3_scores(
    query: M3Output,
    dense: np.ndarray,
    sparse: Sequence[dict[int, float]],
    colbert: Sequence[np.ndarray | None],
    weights: Sequence[float],
) -> dict[str, np.ndarray]:
    """bge-m3's three scores and their weighted mean for one query (an M3Output of one row) against
    candidates' stored vectors: dense (n, dim), sparse weights, ColBERT token matrices."""
    from ...encoders.m3.encoder import colbert_scores, lexical_scores

    if len(weights) != 3 or not np.all(np.isfinite(weights)) or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError(
            f"m3 weights are three non-negative numbers (dense, sparse, colbert), not {list(weights)}"
        )
    assert query.dense is not None and query.sparse is not None and query.colbert is not None
    empty = np.zeros((0, query.colbert[0].shape[1]), np.float32)
    parts = {
        "dense": (query.dense @ dense.T)[0] if len(dense) else np.zeros(0, np.float32),
        "sparse": lexical_scores(query.sparse, sparse)[0],
        "multi_vector": colbert_scores(query.colbert, [empty if c is None else c for c in colbert])[0],
    }
    w_dense, w_sparse, w_colbert = weights
    parts["m3"] = (
        w_dense * parts["dense"] + w_sparse * parts["sparse"] + w_colbert * parts["multi_vector"]
    ) / sum(weights)
    return parts
