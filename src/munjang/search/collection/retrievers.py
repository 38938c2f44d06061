"""A collection's extra retrievers beside dense and BM25: sparse (SPLADE, `sparse_retriever.py`) and
multi-vector (ColBERT, `multi_vector_retriever.py`), and bge-m3 giving both plus the dense vectors
from one pass (`m3_pass.py`).

Each is recorded in the collection's configuration under its search mode's name ("sparse",
"multi_vector") and is its model's side of the retriever, the same for each, so `Collection`
handles them alike: at add time `missing` computes the vectors the store's cache lacks, `put` writes
them in the passage's transaction; at search time `encode_queries` is the query side, and `engine`,
the backend's retriever of that kind (`Backend.retriever`), ranks; `stored` and `problems` ask it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..backends.base import Backend

if TYPE_CHECKING:
    from .m3_pass import OnePass
    from .multi_vector_retriever import MultiVectorRetriever
    from .sparse_retriever import SparseRetriever

    ExtraRetriever = SparseRetriever | MultiVectorRetriever

# The retrievers' modules are imported when a collection has them: they bring torch and the model
# code, which a collection of dense and BM25 alone (and a reader that never encodes) does without.

# The extra retrievers in the order hybrid search (and its `weights`) takes them, after dense, lexical.
EXTRAS = ("sparse", "multi_vector")


# Extra retrievers' models by kind: the search mode they serve ("sparse", "multi_vector"), or "m3"
# (bge-m3 in place of the dense model, with both extra retrievers from one pass).
KINDS = ("sparse", "multi_vector", "m3")


@dataclass(frozen=True)
class Model:
    """An extra retriever's model: the folder or hub id the collection reloads it by, and
    optionally the model already loaded (`encoder`)."""

    name: str | os.PathLike[str] | None = None
    encoder: Any = None


@dataclass(frozen=True)
class RetrieverModels:
    """The extra retrievers a new collection holds beside dense and BM25, one `Model` (or None) per
    kind: `sparse` (SPLADE; folder, PostgreSQL and Qdrant collections), `multi_vector` (ColBERT;
    folder and Qdrant) or `m3` (bge-m3 in place of the collection's model: dense, sparse and
    ColBERT vectors from one pass, see `m3_pass.py`; folder and Qdrant). A new kind is a field here,
    not a pair of parameters of `Collection.create`."""

    sparse: Model | None = None
    multi_vector: Model | None = None
    m3: Model | None = None

    @classmethod
    def of(cls, spec: RetrieverModels | Mapping[str, Any] | None = None, **keywords: Any) -> RetrieverModels:
        """The spec from `Collection.create`'s `retrievers` (this class, or a mapping of kind to a
        model name, a `Model`, or None) and its older keywords (`sparse_model`, `sparse_encoder`,
        `multi_vector_model`, `multi_vector_encoder`, `m3_model`, `m3_encoder`), which it replaces;
        a kind given both ways is refused."""
        given: dict[str, Any] = {}
        if isinstance(spec, RetrieverModels):
            given = {kind: getattr(spec, kind) for kind in KINDS}
        elif spec is not None:
            unknown = set(spec) - set(KINDS)
            if unknown:
                raise ValueError(f"unknown retriever {sorted(unknown)[0]!r}; choose from {', '.join(KINDS)}")
            given = {k: v if v is None or isinstance(v, Model) else Model(v) for k, v in spec.items()}
        parts: dict[str, dict[str, Any]] = {}
        for key, value in keywords.items():
            kind, _, part = key.rpartition("_")
            if kind not in KINDS or part not in ("model", "encoder"):
                raise TypeError(f"Collection.create() got an unexpected keyword argument {key!r}")
            if value is not None:
                parts.setdefault(kind, {})[part] = value
        for kind, named in parts.items():
            if given.get(kind) is not None:
                raise ValueError(f"the {kind} retriever is given twice (in retrievers and as {kind}_*)")
            given[kind] = Model(named.get("model"), named.get("encoder"))
        return cls(**given)

    def named(self, kind: str) -> tuple[str | os.PathLike[str] | None, Any]:
        """(model name, loaded encoder) of `kind`, (None, None) when the collection has none."""
        model = getattr(self, kind)
        return (None, None) if model is None else (model.name, model.encoder)


def extras_config(
    backend: Backend, device: str | None, models: RetrieverModels
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a new collection records for its extra retrievers, and the encoders already loaded (by
    name: "sparse", "multi_vector", and for bge-m3 "m3", the one pass that also encodes dense)."""
    config: dict[str, Any] = {}
    encoders: dict[str, Any] = {}
    sparse_model, sparse_encoder = models.named("sparse")
    multi_vector_model, multi_vector_encoder = models.named("multi_vector")
    m3_model, m3_encoder = models.named("m3")
    if m3_model is not None or m3_encoder is not None:
        if m3_model is None:
            raise ValueError("m3_encoder needs m3_model: the folder or hub id the collection reloads it by")
        if "m3" not in backend.retrievers:
            raise ValueError(
                f"a bge-m3 collection needs a folder or Qdrant collection; {backend.kind} has none"
            )
        if any(
            x is not None for x in (sparse_model, sparse_encoder, multi_vector_model, multi_vector_encoder)
        ):
            raise ValueError("m3_model brings its own sparse and multi-vector retrievers; give no other")
        from .m3_pass import m3_setup

        encoders["m3"], config = m3_setup(m3_model, m3_encoder, device)
        return config, encoders
    if sparse_model is not None or sparse_encoder is not None:
        from .sparse_retriever import sparse_setup

        encoders["sparse"], config["sparse"] = sparse_setup(sparse_model, sparse_encoder, backend, device)
    if multi_vector_model is not None or multi_vector_encoder is not None:
        from .multi_vector_retriever import multi_vector_setup

        encoders["multi_vector"], config["multi_vector"] = multi_vector_setup(
            multi_vector_model, multi_vector_encoder, backend, device
        )
    return config, encoders


def m3_pass(config: dict[str, Any], encoders: dict[str, Any], device: str | None) -> OnePass | None:
    """The one-pass bge-m3 encoder of a collection created with `m3_model` (None for others); it
    fills in `encoders` with its dense, sparse and multi-vector views where none was given."""
    if "m3" not in config:
        return None
    from .m3_pass import OnePass

    given = encoders.get("m3")
    one_pass = given if isinstance(given, OnePass) else OnePass(str(config["m3"]["model"]), device, given)
    for name, view in m3_views(one_pass).items():
        if encoders.get(name) is None:
            encoders[name] = view
    return one_pass


def open_extras(
    config: dict[str, Any], store: Any, encoders: dict[str, Any], device: str | None, backend: Backend
) -> dict[str, ExtraRetriever]:
    """The collection's extra retrievers, by mode name, in hybrid's order (EXTRAS), each searched by
    the index its backend hands out for that kind."""
    out: dict[str, ExtraRetriever] = {}
    if config.get("sparse"):
        from .sparse_retriever import SparseRetriever

        out["sparse"] = SparseRetriever(config, store, encoders.get("sparse"), device, backend)
    if config.get("multi_vector"):
        from .multi_vector_retriever import MultiVectorRetriever

        out["multi_vector"] = MultiVectorRetriever(
            config, store, encoders.get("multi_vector"), device, backend
        )
    return out


def m3_views(one_pass: OnePass) -> dict[str, Any]:
    """bge-m3's dense, sparse and multi-vector views of one pass (`m3_pass.m3_views`)."""
    from .m3_pass import m3_views as views

    return views(one_pass)
