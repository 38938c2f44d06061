"""A persistent search collection: documents, ids, metadata and every index, in one place.

Where that place is, is the backend's business (`storage.py`): a folder with SQLite by default
(`folder_backend.py`), or a schema in PostgreSQL with pgvector (`backend="postgresql://..."`,
`postgres_backend.py`). The API, the search modes and the results are the same on each.

The store is the source of truth and every index is derived from it (see `store.py` and
`live_index.py`). `add` encodes and tokenizes a batch, then commits it in one transaction: a process
killed at any moment leaves the collection at its last commit, and an index saved before that commit
is caught up from the database when the collection opens. Readers in other processes see each
commit at their next search.

A document longer than the model's window is stored as several passages (`passages.py`); every
index ranks passages, and a search returns documents, each with its best passage (`results.py`).

Search modes: "dense" (the encoder), "lexical" (BM25 over Kiwi / word tokens), "sparse" (a SPLADE
model, for a collection created with `sparse_model`, see `sparse_retriever.py`), "hybrid" (every
retriever the collection has, fused by RRF or weighted scores), each with metadata filters and an
optional cross-encoder rerank.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..inference.hardware import torch_threads
from .collection_search import CollectionSearch
from .exact import ExactIndex
from .filters import compile_filter
from .image_files import ImageFiles, document_input, image_documents, input_key
from .inputs import check_texts, metadata_json, model_key, prompt_names, remote_name
from .live_index import LexicalIndex, label_problems
from .passages import ChunkingConfig, Passage, PassagePlanner, document_hash, late_key, title_of
from .results import AddResult
from .sparse_retriever import SparseRetriever, sparse_setup
from .storage import Backend, Store, collection_names, is_storage_error, open_backend
from .store import SCHEMA_VERSION, CollectionError, Document, NewRow, text_hash

CONFLICTS = ("error", "skip", "upsert")
# The configuration `info()` reports as it is stored.
INFO_KEYS = (
    "model", "dim", "metric", "index", "query_prompt_name", "document_prompt_name", "lexical", "hnsw",
)  # fmt: skip


class Collection(CollectionSearch):
    """Documents with ids and metadata, searchable by meaning, by words, or both. Use
    `Collection.create(folder, model=...)` once, then `Collection.open(folder)`; with
    `backend="postgresql://..."` the first argument is the collection's name in that database."""

    def __init__(
        self,
        backend: Backend,
        store: Store,
        *,
        encoder: Any = None,
        device: str | None = None,
        readonly: bool = False,
        lock_timeout: float = 60.0,
        background_refresh: bool = False,
        sparse_encoder: Any = None,
    ) -> None:
        self.backend = backend
        self.folder = backend.folder
        self.store = store
        self.location = backend.location
        self.readonly = readonly
        self.config = store.get_meta()
        version = self.config.get("schema_version")
        if version != SCHEMA_VERSION:
            hint = " (open it once without read-only to upgrade it)" if version == 1 and readonly else ""
            raise CollectionError(
                f"{self.location}: collection format {version!r}, this munjang reads {SCHEMA_VERSION}{hint}"
            )
        self.chunking = ChunkingConfig.from_mapping(self.config.get("chunking"))
        self._planner: PassagePlanner | None = None
        self._encoder = encoder
        self.pace: Callable[[], int | None] | None = None
        self._device = device
        self._cross_encoders: dict[str, Any] = {}
        self._lock_timeout = lock_timeout
        self.dense = backend.dense_index(store, self.config)
        self.lexical = LexicalIndex(self.config["lexical"], backend.reader() if background_refresh else None)
        sparse = self.config.get("sparse")
        self.sparse = SparseRetriever(sparse, store, sparse_encoder, device) if sparse else None

    # -- lifecycle -------------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        folder: str | os.PathLike[str],
        model: str | os.PathLike[str] | None = None,
        *,
        backend: str | None = None,
        encoder: Any = None,
        index: str = "exact",
        metric: str = "cosine",
        tokenizer: str = "auto",
        bm25: Mapping[str, Any] | None = None,
        hnsw: Mapping[str, Any] | None = None,
        query_prompt_name: str | None = None,
        document_prompt_name: str | None = None,
        chunking: Mapping[str, Any] | None = None,
        device: str | None = None,
        sparse_model: str | os.PathLike[str] | None = None,
        sparse_encoder: Any = None,
    ) -> Collection:
        """A new, empty collection. `model` is a model folder or hub id (None: the embedded default);
        `encoder` may pass that model already loaded; `chunking` sets how long documents become
        passages (see `passages.py`); `sparse_model` (a SPLADE model folder or hub id, optionally
        already loaded as `sparse_encoder`) adds a sparse retriever (folder collections only). The
        folder (or the PostgreSQL schema, with `backend`) appears complete or not at all."""
        place = open_backend(folder, backend)
        if index not in ("exact", "hnsw"):
            raise ValueError(f"unknown index {index!r}; choose exact or hnsw")
        if metric not in ExactIndex.METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(ExactIndex.METRICS)}")
        if encoder is None:
            from ..embedder import load_embedder

            encoder = load_embedder(None if model is None else str(model), device=device)
        elif model is None and remote_name(encoder) is not None:
            model = remote_name(encoder)  # reopening finds the same remote model (its key is never stored)
        query_prompt_name, document_prompt_name = prompt_names(
            encoder, query_prompt_name, document_prompt_name
        )
        from .lexical import BM25Index
        from .tokenizers import get_tokenizer

        get_tokenizer(tokenizer)
        lexical = {**dict(bm25 or {}), "tokenizer": tokenizer}
        BM25Index(**lexical)
        chunks = ChunkingConfig.from_mapping(chunking).to_dict()
        config = {
            "schema_version": SCHEMA_VERSION,
            "model": model_key(model),
            "dim": int(encoder.get_embedding_dimension()),
            "metric": metric,
            "index": index,
            "hnsw": dict(hnsw or {}),
            "lexical": lexical,
            "query_prompt_name": query_prompt_name,
            "document_prompt_name": document_prompt_name,
            "chunking": chunks,
        }
        if sparse_model is not None or sparse_encoder is not None:
            sparse_encoder, config["sparse"] = sparse_setup(sparse_model, sparse_encoder, place.kind, device)
        place.create(config)
        return cls.open(
            folder, backend=backend, encoder=encoder, device=device, sparse_encoder=sparse_encoder
        )

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike[str],
        *,
        backend: str | None = None,
        encoder: Any = None,
        device: str | None = None,
        readonly: bool = False,
        lock_timeout: float = 60.0,
        background_refresh: bool = False,
        sparse_encoder: Any = None,
    ) -> Collection:
        """Open an existing collection (a folder, or with `backend` a name in that PostgreSQL
        database). The model loads on first need; `readonly` never writes. `background_refresh`
        rebuilds BM25 after a change on a background thread, searching the previous one meanwhile
        (for readers beside a long write, such as the server's)."""
        place = open_backend(folder, backend)
        store = place.open_store(readonly)
        try:
            return cls(
                place,
                store,
                encoder=encoder,
                device=device,
                readonly=readonly,
                lock_timeout=lock_timeout,
                background_refresh=background_refresh,
                sparse_encoder=sparse_encoder,
            )
        except BaseException:
            store.close()
            raise

    @staticmethod
    def names(where: str | os.PathLike[str]) -> list[str]:
        """The collections in a folder of collection folders, or in the database at a URL."""
        return collection_names(where)

    @staticmethod
    def is_storage_error(error: BaseException) -> bool:
        """True for an error from a backend's database driver (a server refused or went away)."""
        return is_storage_error(error)

    def close(self) -> None:
        """Save the dense index if it keeps a file and moved on (writers only); close the store."""
        if not self.readonly and self.dense.persistent:
            with self._write_lock():
                self.dense.sync(self.store)
                self.backend.save_dense(self.dense)
        self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Hold the collection's writer lock (one writer at a time; readers never wait for it)."""
        if self.readonly:
            raise CollectionError(f"{self.location} was opened read-only")
        with self.backend.write_lock(self.store, self._lock_timeout):
            yield

    # -- models ------------------------------------------------------------------------------------------
    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ..embedder import load_embedder

            model = self.config["model"]
            self._encoder = load_embedder(None if model == "default" else model, device=self._device)
            dim = int(self._encoder.get_embedding_dimension())
            if dim != self.config["dim"]:
                raise CollectionError(
                    f"{model} gives {dim}-d vectors; this collection holds {self.config['dim']}-d"
                )
        return self._encoder

    @property
    def images(self) -> ImageFiles | None:
        """The stored image files of an image collection (a folder collection's `images/`)."""
        return ImageFiles.of_collection(self.folder)

    def _encode(
        self, texts: Sequence[str | Path], prompt_name: str | None, batch_size: int, progress: bool
    ) -> np.ndarray:
        vectors = self.encoder.encode(
            list(texts),
            batch_size=batch_size,
            prompt_name=prompt_name,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.config["dim"])

    def _encode_documents(
        self, texts: list[str | Path], prompt_name: str | None, batch_size: int
    ) -> np.ndarray:
        """`_encode` for a write, paced batch by batch when a `pace` hook is set (see `_tokenize`);
        texts are sorted by length first, so batches stay as evenly padded as the encoder's own
        sort would make them."""
        if self.pace is None:
            return self._encode(texts, prompt_name, batch_size, False)
        order = sorted(range(len(texts)), key=lambda i: len(str(texts[i])))
        out = np.zeros((len(texts), self.config["dim"]), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            part = order[start : start + batch_size]
            with torch_threads(self.pace()):
                out[part] = self._encode([texts[i] for i in part], prompt_name, batch_size, False)
        return out

    def _tokenize(self, texts: list[str], batch: int = 64) -> list[list[str]]:
        """Lexical tokens for a write. A `pace` hook, set by a server that also answers searches on
        this collection, is called before each batch of a write's work: it may wait while a search
        is in flight and returns the torch threads the next encoding batch may use (None: all)."""
        if self.pace is None:
            return list(self._tokenizer().tokenize_many(texts))
        tokens: list[list[str]] = []
        for start in range(0, len(texts), batch):
            self.pace()
            tokens += self._tokenizer().tokenize_many(texts[start : start + batch])
        return tokens

    def _tokenizer(self) -> Any:
        from .tokenizers import get_tokenizer

        return get_tokenizer(self.config["lexical"]["tokenizer"])

    def warm_up(self) -> None:
        """Load the lexical analyser now. Kiwi's model takes a second or more to load and holds the
        interpreter lock meanwhile, so a server loads it when it opens a collection rather than
        stalling every thread at the first Korean text of a write."""
        self._tokenizer()("한국어 문장")

    def _plan(self, texts: list[str], titles: list[str | None]) -> list[list[Passage]]:
        """Each document's passages. An encoder that cannot count tokens (no `tokenizer` or
        `max_seq_length`) gets each document whole, as it would encode it."""
        encoder = self.encoder
        if not hasattr(encoder, "tokenizer") or not hasattr(encoder, "max_seq_length"):
            return [[Passage(0, 0, len(t), t, t)] for t in texts]
        if self._planner is None:
            name = self.config["document_prompt_name"]
            prompt = (getattr(encoder, "prompts", {}) or {}).get(name, "") if name else ""
            self._planner = PassagePlanner(encoder, self.chunking, prompt)
        return self._planner.plan(texts, titles)

    # -- writing -------------------------------------------------------------------------------------------
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        *,
        on_conflict: str = "error",
        batch_size: int = 32,
        commit_every: int = 1000,
        show_progress_bar: bool | None = None,
    ) -> AddResult:
        """Add documents. An id already stored is an error (`on_conflict="error"`, checked before
        anything is written), left alone ("skip", which makes re-running an interrupted add resume
        it), or replaced ("upsert": new text is re-indexed, new metadata alone is updated in place).

        Work is committed every `commit_every` documents; when `add` returns, all of it is durable.
        Texts whose (model, text) embedding is cached are not encoded again."""
        if on_conflict not in CONFLICTS:
            raise ValueError(f"unknown on_conflict {on_conflict!r}; choose one of {', '.join(CONFLICTS)}")
        if commit_every < 1:
            raise ValueError(f"commit_every must be at least 1, not {commit_every}")
        ids, texts = list(ids), list(texts)
        check_texts(ids, texts)
        metas = list(metadata) if metadata is not None else [None] * len(ids)
        if len(metas) != len(ids):
            raise ValueError(f"{len(metas)} metadata entries for {len(ids)} documents")
        meta_json = [metadata_json(i, m) for i, m in zip(ids, metas, strict=True)]
        titles = [title_of(m, self.chunking) for m in metas]
        result = AddResult()
        progress = len(ids) > 1000 if show_progress_bar is None else show_progress_bar
        with self._write_lock():
            if on_conflict == "error":
                clash = self.store.existing(ids)
                if clash:
                    shown = ", ".join(repr(i) for i in list(clash)[:5])
                    raise CollectionError(
                        f"{len(clash)} ids already in the collection ({shown}); "
                        "upsert replaces them (--upsert), skip keeps them (--skip-existing)"
                    )
            bar = tqdm(total=len(ids), desc="indexing", unit="doc", disable=not progress)
            try:
                for start in range(0, len(ids), commit_every):
                    end = start + commit_every
                    self._add_batch(
                        ids[start:end],
                        texts[start:end],
                        meta_json[start:end],
                        titles[start:end],
                        on_conflict,
                        batch_size,
                        result,
                    )
                    bar.update(len(ids[start:end]))
            finally:
                bar.close()
            self.dense.sync(self.store)
            self._maybe_save()
        return result

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> AddResult:
        """`add` with on_conflict="upsert"."""
        return self.add(ids, texts, metadata, on_conflict="upsert", **kwargs)

    def _add_batch(
        self,
        ids: list[str],
        texts: list[str],
        metas: list[str],
        titles: list[str | None],
        on_conflict: str,
        batch_size: int,
        result: AddResult,
    ) -> None:
        model = self.config["model"]
        digests = [document_hash(t, title) for t, title in zip(texts, titles, strict=True)]
        existing = self.store.existing(ids)
        new_rows: list[int] = []
        replaced: list[str] = []
        meta_only: list[tuple[str, str]] = []
        for i, (doc_id, digest) in enumerate(zip(ids, digests, strict=True)):
            if doc_id not in existing:
                new_rows.append(i)
            elif on_conflict == "skip":
                result.skipped += 1
            elif on_conflict == "error":
                raise CollectionError(f"id {doc_id!r} is already in the collection")
            elif existing[doc_id][1] == digest:
                meta_only.append((doc_id, metas[i]))
            else:
                replaced.append(doc_id)
                new_rows.append(i)
        plans = self._plan([texts[i] for i in new_rows], [titles[i] for i in new_rows]) if new_rows else []
        passages = [(i, p, len(plan)) for i, plan in zip(new_rows, plans, strict=True) for p in plan]
        late = self._planner is not None and self.chunking.late
        inputs = [document_input(p.encoded, metas[i], self.images) for i, p, _ in passages]
        hashes = [
            late_key(digests[i], p) if late and n > 1 else input_key(x, text_hash(p.encoded))
            for (i, p, n), x in zip(passages, inputs, strict=True)
        ]
        cached = self.store.cached_hashes(model, hashes)
        to_encode, vectors = self._vectors(passages, inputs, hashes, cached, texts, titles, batch_size)
        tokens = self._tokenize([p.encoded for _, p, _ in passages]) if passages else []
        sparse: tuple[list[str], list[Any]] = ([], [])
        if self.sparse is not None and passages:
            sparse = self.sparse.missing(self.store, hashes, [p.encoded for _, p, _ in passages])
        rows = [
            NewRow(
                ids[i],
                p.text,
                metas[i],
                h,
                json.dumps(toks, ensure_ascii=False),
                p.chunk,
                p.start,
                p.end if n > 1 else None,
                digests[i] if n > 1 else None,
            )
            for (i, p, n), h, toks in zip(passages, hashes, tokens, strict=True)
        ]
        sources = [(ids[i], texts[i]) for i, plan in zip(new_rows, plans, strict=True) if len(plan) > 1]
        with self.store.transaction():
            if to_encode:
                self.store.put_embeddings(model, to_encode, vectors)
            if sparse[0] and self.sparse is not None:
                self.store.put_sparse(self.sparse.key, *sparse)  # type: ignore[attr-defined]
            if replaced:
                self.store.delete(replaced)
            self.store.insert(rows, model)
            self.store.put_sources(sources)
            self.store.update_metadata(meta_only)
        result.added += len(new_rows) - len(replaced)
        result.updated += len(replaced) + len(meta_only)
        result.encoded += len(to_encode)

    def _vectors(
        self,
        passages: list[tuple[int, Passage, int]],
        inputs: list[str | Path],
        hashes: list[str],
        cached: set[str],
        texts: list[str],
        titles: list[str | None],
        batch_size: int,
    ) -> tuple[list[str], np.ndarray]:
        """The cache keys and vectors of the passages not in the embedding cache: each encoded on
        its own (its text, or an image document's image), or with late chunking (`late_chunking.py`)
        per document, all its passages at once."""
        prompt_name = self.config["document_prompt_name"]
        plain: dict[str, str | Path] = {}
        late: dict[int, list[tuple[Passage, str]]] = {}
        missing: set[int] = set()
        for (i, p, n), x, h in zip(passages, inputs, hashes, strict=True):
            if self.chunking.late and n > 1 and self._planner is not None:
                late.setdefault(i, []).append((p, h))
                if h not in cached:
                    missing.add(i)
            elif h not in cached:
                plain.setdefault(h, x)
        keys, parts = list(plain), []
        if plain:
            parts.append(self._encode_documents(list(plain.values()), prompt_name, batch_size))
        for i in sorted(missing):
            assert self._planner is not None
            doc = [p for p, _ in late[i]]
            parts.append(self._planner.late_vectors(texts[i], titles[i], doc, prompt_name, batch_size))
            keys += [h for _, h in late[i]]
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.config["dim"]), np.float32)
        return keys, vectors

    def add_images(
        self,
        images: Sequence[str | os.PathLike[str] | bytes],
        ids: Sequence[str] | None = None,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        *,
        captions: Sequence[str | None] | None = None,
        suffixes: Sequence[str | None] | None = None,
        **add_options: Any,
    ) -> AddResult:
        """Add image documents (files, or bytes with their `suffixes`), for a model that encodes
        images (CLIP): each image is stored in the collection's folder and indexed by its vector,
        its caption (default: the file name) by BM25. Ids default to the file names. An image that
        cannot be read is skipped and named in `result.failed`; the others are added (`add_options`
        as for `add`)."""
        if self.images is None:
            raise CollectionError(f"{self.location}: image documents need a folder collection")
        if getattr(self.encoder, "clip", None) is None:
            raise CollectionError(f"{self.config['model']} does not encode images (use a CLIP model)")
        sources = [s if isinstance(s, bytes) else Path(s) for s in images]
        if ids is None and any(isinstance(s, bytes) for s in sources):
            raise ValueError("images given as bytes need ids")
        n = len(sources)
        doc_ids, texts, metas, failed = image_documents(
            self.images, sources,
            list(ids) if ids is not None else [s.name for s in sources if isinstance(s, Path)],
            [dict(m) if m else None for m in metadata] if metadata is not None else [None] * n,
            list(captions) if captions is not None else [None] * n,
            list(suffixes) if suffixes is not None else [None] * n,
        )  # fmt: skip
        result = self.add(doc_ids, texts, metas, **add_options) if doc_ids else AddResult()
        result.failed = failed
        return result

    def delete(self, ids: Sequence[str]) -> int:
        """Delete documents by id; returns how many existed. Unknown ids are ignored."""
        if isinstance(ids, str):
            raise TypeError("delete takes a sequence of ids, not one string")
        with self._write_lock():
            with self.store.transaction():
                removed = self.store.delete(list(ids))
            self.dense.sync(self.store)
            self._maybe_save()
        return removed

    def _maybe_save(self) -> None:
        """Save the HNSW graph when much has changed since the last save (close() always saves);
        a crash before that costs only a catch-up from the database on the next open."""
        if not self.dense.persistent:
            return
        changed = (self.dense.watermark.label - self.dense.saved.label) + (
            self.dense.watermark.deletion - self.dense.saved.deletion
        )
        if changed >= max(10_000, len(self.dense.index) // 10):
            self.backend.save_dense(self.dense)

    def flush(self) -> None:
        """Save the HNSW graph now (an index kept by the database has nothing to save)."""
        if not self.dense.persistent:
            return
        with self._write_lock():
            self.dense.sync(self.store)
            self.backend.save_dense(self.dense)

    # -- reading ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.store.count()

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and bool(self.store.existing([doc_id]))

    def ids(self) -> Iterator[str]:
        """Every id, in insertion order."""
        return self.store.iter_ids()

    def get(self, ids: Sequence[str]) -> list[Document | None]:
        """The stored documents for these ids (None where an id is unknown)."""
        found = self.store.documents_by_id(list(ids))
        return [found.get(i) for i in ids]

    def info(self) -> dict[str, Any]:
        self.dense.sync(self.store)
        return {
            "folder": self.location,
            "backend": self.backend.kind,
            "documents": len(self),
            "passages": self.store.passage_count(),
            "chunking": self.chunking.to_dict(),
            **{k: self.config[k] for k in INFO_KEYS},
            "dense_index_bytes": int(self.dense.index.memory_bytes()),
            "sparse": self.config.get("sparse"),
            "database_bytes": self.backend.size_bytes(self.store),
        }

    def check(self) -> list[str]:
        """Problems found (empty when sound): SQLite integrity, documents without a vector, and
        indexes that disagree with the documents after catching up."""
        problems = self.store.integrity_problems(self.config["model"])
        self.dense.sync(self.store)
        self.lexical.sync(self.store, wait=True)
        with self.store.snapshot():
            labels = self.store.labels_matching(*compile_filter(None, dialect=self.store.dialect))
        problems += label_problems("dense index", self.dense.index.ids(), labels)
        if not np.array_equal(self.lexical.labels, labels):
            problems.append("lexical index does not match the documents")
        if self.sparse is not None:
            problems += self.sparse.problems(self.store, labels)
        return problems
