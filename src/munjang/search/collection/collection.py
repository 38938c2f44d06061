"""A persistent search collection: documents, ids, metadata and every index, in one place.

Where that place is, is the backend's business (`backends/`): a folder with SQLite by default
(`backends/folder/`), a schema in PostgreSQL with pgvector (`backend="postgresql://..."`), or Qdrant
(`backend="qdrant://..."`). The API, the search modes and the results are the same on each.

The store is the source of truth and every index is derived from it; the backend hands out each
retriever (`Backend.retriever`: its own search, or an index in this process following the store,
`followers/`). `add` encodes and tokenizes a batch, then commits it in one transaction: a process
killed at any moment leaves the collection at its last commit, and an index saved before that commit
is caught up from the database when the collection opens. Readers in other processes see each
commit at their next search.

A document longer than the model's window is stored as several passages (`passages.py`); every
index ranks passages, and a search returns documents, each with its best passage (`results.py`).

Search modes: "dense" (the encoder), "lexical" (BM25 over Kiwi / word tokens), "sparse" (a SPLADE
model, for a collection created with `sparse_model`), "multi_vector" (ColBERT MaxSim, with
`multi_vector_model`), "hybrid" (every retriever the collection has, fused by RRF or weighted
scores), "m3" (bge-m3's weighted score, with `m3_model`: `m3_pass.py`), each with metadata filters
and an optional cross-encoder rerank. The extra retrievers' plumbing is in `retrievers.py`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..backends.base import (
    SCHEMA_VERSION,
    Backend,
    CollectionError,
    CollectionNotFoundError,
    Counts,
    Document,
    NewRow,
    ReadOnlyError,
    Store,
    text_hash,
)
from ..backends.filters import compile_filter
from ..backends.schemes import collection_names, drop_collection, is_storage_error, open_backend
from ..index.analysis import AnalysisSettings
from ..index.exact import ExactIndex
from ..index.synonyms import Term
from .aliases import resolve as resolve_alias
from .encoding import Encoding
from .image_files import ImageFiles, document_input, image_documents, input_key
from .inputs import check_texts, metadata_json, model_key, prompt_names, remote_name
from .passages import ChunkingConfig, document_hash, late_key, title_of
from .reanalysis import reanalyse
from .reindex import copy_documents, target_settings
from .results import AddResult, SearchHit
from .retrievers import EXTRAS, RetrieverModels, extras_config, m3_pass, m3_views, open_extras
from .search import MAX_QUERY_CHARS, Searcher
from .sections import Section, outline_of
from .snapshots import PENDING, export_snapshot, import_snapshot

CONFLICTS = ("error", "skip", "upsert")
# The BM25 files are saved once this many passages and deletions are unsaved (during an add, at its
# end, after a delete), and whatever is left when a writer closes: a reader replays at most about
# this many from the store, and a stream of small adds does not write files at every one.
SAVE_EVERY = 2_000
# The configuration `info()` reports as it is stored.
INFO_KEYS = (
    "model", "dim", "metric", "index", "query_prompt_name", "document_prompt_name", "lexical", "hnsw",
)  # fmt: skip


class Collection:
    """Documents with ids and metadata, searchable by meaning, by words, or both. Use
    `Collection.create(folder, model=...)` once, then `Collection.open(folder)`; with
    `backend="postgresql://..."` the first argument is the collection's name in that database.

    It holds its parts: the backend and its store (the source of truth), the indexes derived from
    it, an `Encoding` (models, passages, vectors, tokens) and a `Searcher` (retrieval, fusion,
    rerank); it writes itself, and hands searches to the searcher."""

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
        multi_vector_encoder: Any = None,
        m3_encoder: Any = None,
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
        if self.config.get(PENDING):
            raise CollectionError(
                f"{self.location}: a restore from a snapshot did not finish; run the same import again "
                "to resume it, or drop the collection"
            )
        self.chunking = ChunkingConfig.from_stored(self.config.get("chunking"))
        encoders = {"sparse": sparse_encoder, "multi_vector": multi_vector_encoder, "m3": m3_encoder}
        self.m3 = m3_pass(self.config, encoders, device)  # bge-m3: the three encoders share one pass
        self.encoding = Encoding(
            self.config,
            self.folder,
            self.chunking,
            encoder if encoder is not None else encoders.get("dense"),
            device,
        )
        self._lock_timeout = lock_timeout
        # Every retriever is the backend's to hand out: its own search, or an index in this process
        # following the store (`followers/`); the collection runs them alike.
        self.dense = backend.retriever("dense", store, self.config)
        self.lexical = backend.retriever("lexical", store, self.config, background_refresh)
        self.extras = open_extras(self.config, store, encoders, device, backend)
        self.sparse, self.multi_vector = self.extras.get("sparse"), self.extras.get("multi_vector")
        self.searcher = Searcher(
            store, self.config, self.encoding, self.dense, self.lexical, self.extras, self.m3
        )

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
        tokenizer: str | Mapping[str, Any] = "auto",
        bm25: Mapping[str, Any] | None = None,
        hnsw: Mapping[str, Any] | None = None,
        query_prompt_name: str | None = None,
        document_prompt_name: str | None = None,
        chunking: Mapping[str, Any] | None = None,
        device: str | None = None,
        retrievers: RetrieverModels | Mapping[str, Any] | None = None,
        **models: Any,
    ) -> Collection:
        """A new, empty collection. `model` is a model folder or hub id (None: the embedded default);
        `encoder` may pass that model already loaded; `chunking` sets how long documents become
        passages (see `passages.py`). `retrievers`: the extra retrievers (`RetrieverModels`, or a
        mapping such as {"sparse": "naver/splade-v3"}): SPLADE ("sparse"), ColBERT
        ("multi_vector") or bge-m3 in place of `model` ("m3"); the keywords `sparse_model`,
        `multi_vector_model`, `m3_model` and their `*_encoder` (the model already loaded) say the
        same. The folder (or the PostgreSQL schema, with `backend`) appears complete or not at all."""
        extra_models = RetrieverModels.of(retrievers, **models)
        place = open_backend(folder, backend)
        if index not in ("exact", "hnsw"):
            raise ValueError(f"unknown index {index!r}; choose exact or hnsw")
        if metric not in ExactIndex.METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(ExactIndex.METRICS)}")
        extras, loaded = extras_config(place, device, extra_models)
        if "m3" in loaded:
            if model is not None or encoder is not None:
                raise ValueError("m3_model is the collection's model; give no model or encoder beside it")
            encoder = m3_views(loaded["m3"])["dense"]
        if encoder is None:
            from ...encoders.embedder import load_embedder

            encoder = load_embedder(None if model is None else str(model), device=device)
        elif model is None and remote_name(encoder) is not None:
            model = remote_name(encoder)  # reopening finds the same remote model (its key is never stored)
        from ...encoders.classical.terms import TermEncoder

        if isinstance(encoder, TermEncoder):
            raise ValueError(
                f"{model} gives sparse term vectors, not a dense model's; make it the collection's sparse "
                "retriever (retrievers={'sparse': ...}, --sparse-model)"
            )
        query_prompt_name, document_prompt_name = prompt_names(
            encoder, query_prompt_name, document_prompt_name
        )
        from ..index.bm25 import BM25Index
        from ..index.tokenizers import get_tokenizer, tokenizer_from_config

        # The tokenizer's whole config is kept, so a later default (Kiwi's dictionary) never changes
        # how an existing collection's queries are cut.
        chosen = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer_from_config(tokenizer)
        lexical = {**dict(bm25 or {}), "tokenizer": chosen.get_config_dict()}
        BM25Index(**lexical)
        chunks = ChunkingConfig.from_mapping(chunking).to_dict()
        if "m3" in loaded and chunks["late"]:
            raise ValueError("late chunking needs a mean-pooling model; bge-m3 pools its [CLS] token")
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
            **extras,
        }
        place.create(config)
        return cls.open(
            folder, backend=backend, encoder=encoder, device=device, sparse_encoder=loaded.get("sparse"),
            multi_vector_encoder=loaded.get("multi_vector"), m3_encoder=loaded.get("m3"),
        )  # fmt: skip

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
        multi_vector_encoder: Any = None,
        m3_encoder: Any = None,
    ) -> Collection:
        """Open an existing collection (a folder, or with `backend` a name in that PostgreSQL
        database). The model loads on first need; `readonly` never writes. `background_refresh`
        rebuilds BM25 after a change on a background thread, searching the previous one meanwhile
        (for readers beside a long write, such as the server's). The name may be an alias
        (`aliases.py`), of its folder or database: the collection it points at now is opened."""
        place = open_backend(resolve_alias(folder, backend), backend)
        readonly = readonly or not place.writable()
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
                multi_vector_encoder=multi_vector_encoder,
                m3_encoder=m3_encoder,
            )
        except BaseException:
            store.close()
            raise

    @classmethod
    def import_(
        cls,
        path: str | os.PathLike[str],
        target: str | os.PathLike[str],
        *,
        backend: str | None = None,
        show_progress_bar: bool | None = None,
        **open_options: Any,
    ) -> Collection:
        """Restore the snapshot file `path` (`export`) as the new collection `target` (a folder, or
        with `backend` a name in that database: any backend, whichever the snapshot came from). No
        passage is encoded: the snapshot carries the vectors and BM25's tokens. A damaged, altered
        or newer file, or one made with other weights of the model, is refused before the target is
        made; an import killed half-way leaves a target that refuses to open until the same import
        is run again, which resumes it. Returns the collection opened with `open_options`, its
        indexes built."""
        import_snapshot(path, target, backend, progress=show_progress_bar)
        col = cls.open(target, backend=backend, **open_options)
        try:
            col.build_indexes()
        except BaseException:
            col.close(save=False)
            raise
        return col

    def export(
        self, path: str | os.PathLike[str], *, show_progress_bar: bool | None = None
    ) -> dict[str, Any]:
        """Write a snapshot of the collection to the file `path` (docs/snapshots.md): the passages,
        metadata, BM25 tokens and vectors of every commit made before it began, none of a later one,
        while writers go on; the file appears whole or not at all. Returns its manifest."""
        return export_snapshot(
            self.store, self.backend.kind, self.location, path, show_progress_bar, self.images
        )

    def reindex(
        self,
        target: str | os.PathLike[str],
        model: str | os.PathLike[str] | None = None,
        *,
        backend: str | None = None,
        chunking: Mapping[str, Any] | None = None,
        encoder: Any = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> Collection:
        """A new collection `target` from this one's stored documents, encoded by `model` (and
        passages cut by `chunking`, merged over this one's settings); run again, it resumes.
        Switch an alias to it once it is built (`aliases.py`). See `reindex.py`."""
        settings = target_settings(self, chunking)
        try:
            col = Collection.open(target, backend=backend, encoder=encoder)
        except CollectionError:  # none there yet (a folder's open says so with this error)
            col = Collection.create(target, model, backend=backend, encoder=encoder, **settings)
        try:
            copy_documents(self, col, batch_size=batch_size, show_progress_bar=show_progress_bar)
        except BaseException:
            col.close()
            raise
        return col

    def build_indexes(self) -> None:
        """Bring the dense index and BM25 up to the store now and save what they keep (after a
        restore: the first search then builds nothing)."""
        if self.readonly:
            return
        with self._write_lock():
            self.dense.sync(self.store)
            if self.dense.persistent:
                self.backend.save_dense(self.dense)
            self.lexical.sync(self.store, wait=True)
            self.lexical.save_files(self.store)

    @staticmethod
    def names(where: str | os.PathLike[str]) -> list[str]:
        """The collections in a folder of collection folders, or in the database at a URL."""
        return collection_names(where)

    @staticmethod
    def drop(location: str | os.PathLike[str], *, backend: str | None = None) -> None:
        """Delete a closed collection (a folder, or with `backend` a name in that database) and all
        it holds; refused, nothing removed, while another process writes to it."""
        drop_collection(location, backend)

    @staticmethod
    def is_storage_error(error: BaseException) -> bool:
        """True for an error from a backend's database driver (a server refused or went away)."""
        return is_storage_error(error)

    def close(self, save: bool = True) -> None:
        """Save the dense index if it keeps a file and moved on, and BM25's files (writers only);
        close the store. An HNSW graph (slow to rebuild) is always saved; an exact matrix, written
        whole, by the rule adds follow (`_maybe_save`), so closing after a small write does not
        rewrite it. `save=False` (before a drop) closes the store only, taking no lock: what is
        saved stays as it was, and the next open catches it up from the store. A collection dropped
        since it was opened has nothing to save: its store is just closed."""
        try:
            if save and not self.readonly and self.dense.persistent:
                with self._write_lock():
                    self.dense.sync(self.store)
                    if self.dense.kind == "hnsw":
                        self.backend.save_dense(self.dense)
                    else:
                        self._maybe_save()
                    if self.lexical.ready:  # a writer that built BM25 leaves its files current
                        self.lexical.save_files(self.store)
        except CollectionNotFoundError:
            pass
        finally:
            self.searcher.close()
            self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Hold the collection's writer lock (one writer at a time; readers never wait for it)."""
        if self.readonly:
            if not self.backend.writable():
                raise ReadOnlyError(f"{self.location} is on read-only media: it can be searched, not changed")
            raise ReadOnlyError(f"{self.location} was opened read-only")
        with self.backend.write_lock(self.store, self._lock_timeout):
            yield

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
        outlines = [outline_of(m, len(t)) for m, t in zip(metas, texts, strict=True)]
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
                        outlines[start:end],
                        on_conflict,
                        batch_size,
                        result,
                    )
                    if self.lexical.ready and self.lexical.incremental:
                        # a writer that searches keeps BM25 current as it commits, so its first
                        # search after an add costs nothing more (one that only adds never builds it)
                        self.lexical.sync(self.store)
                    # a long add saves its indexes as it goes, so a reader opened meanwhile replays
                    # little from the store (each save costs what was added since the last)
                    self.lexical.save_files(self.store, least=SAVE_EVERY)
                    self.dense.sync(self.store)
                    self._maybe_save()
                    bar.update(len(ids[start:end]))
            finally:
                bar.close()
            self.dense.sync(self.store)
            self._maybe_save()
            self.lexical.save_files(self.store, least=SAVE_EVERY)
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
        outlines: list[list[Section] | None],
        on_conflict: str,
        batch_size: int,
        result: AddResult,
    ) -> None:
        model = self.config["model"]
        digests = [document_hash(*row) for row in zip(texts, titles, outlines, strict=True)]
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
        plans = (
            self.encoding.plan(
                [texts[i] for i in new_rows], [titles[i] for i in new_rows], [outlines[i] for i in new_rows]
            )
            if new_rows
            else []
        )
        passages = [(i, p, len(plan)) for i, plan in zip(new_rows, plans, strict=True) for p in plan]
        late = self.encoding.planner is not None and self.chunking.late
        inputs = [document_input(p.encoded, metas[i], self.images) for i, p, _ in passages]
        hashes = [
            late_key(digests[i], p) if late and n > 1 else input_key(x, text_hash(p.encoded))
            for (i, p, n), x in zip(passages, inputs, strict=True)
        ]
        cached = self.store.cached_hashes(model, hashes)
        encoded = [p.encoded for _, p, _ in passages]
        with self.m3.shared() if self.m3 is not None else nullcontext():  # bge-m3: one pass for all three
            to_encode, vectors = self.encoding.vectors(
                passages, inputs, hashes, cached, texts, titles, batch_size
            )
            extra = [(r, r.missing(self.store, hashes, encoded)) for r in self.extras.values() if passages]
        # Passages of one window share its text for BM25: each distinct text is tokenized once.
        contexts = list(dict.fromkeys(p.lexical for _, p, _ in passages))
        tokenized = dict(zip(contexts, self.encoding.tokenize(contexts) if contexts else [], strict=True))
        tokens = [tokenized[p.lexical] for _, p, _ in passages]
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
            for retriever, (keys, values) in extra:
                retriever.put(self.store, keys, values)
            if replaced:
                self.store.delete(replaced)
            self.store.insert(rows, model)
            self.store.put_sources(sources)
            self.store.update_metadata(meta_only)
        result.added += len(new_rows) - len(replaced)
        result.updated += len(replaced) + len(meta_only)
        result.encoded += len(to_encode)

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
            self.lexical.save_files(self.store, least=SAVE_EVERY)
        return removed

    def _maybe_save(self) -> None:
        """Save the dense index file when much has changed since the last save; a crash before that
        costs only a catch-up from the database on the next open."""
        if not self.dense.persistent:
            return
        changed = (self.dense.watermark.label - self.dense.saved.label) + (
            self.dense.watermark.deletion - self.dense.saved.deletion
        )
        if changed >= max(10_000, len(self.dense.index) // 10):
            self.backend.save_dense(self.dense)
        elif self.dense.tail_due():
            self.backend.save_dense(self.dense, tail=True)  # what a new reader would read back

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
        """What the collection holds (documents, passages, bytes) and how it is set up."""
        self.dense.sync(self.store)
        with self.store.snapshot():  # both counts from one state, in one read where they are kept
            counts = self.store.counts() or Counts(self.store.count(), self.store.passage_count())
        return {
            "folder": self.location,
            "backend": self.backend.kind,
            "documents": counts.documents,
            "passages": counts.passages,
            "chunking": self.chunking.to_dict(),
            **{k: self.config[k] for k in INFO_KEYS},
            "dense_index_bytes": int(self.dense.index.memory_bytes()),
            **{name: self.config.get(name) for name in (*EXTRAS, "m3")},
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
        for retriever in (self.dense, self.lexical, *(r.engine for r in self.extras.values())):
            problems += retriever.problems(self.store, labels)
        return problems

    # -- searching (the searcher's) -------------------------------------------------------------------
    def search(
        self,
        query: str | Sequence[str],
        k: int = 10,
        *,
        mode: str = "dense",
        filter: Mapping[str, Any] | None = None,
        fusion: str | None = None,
        weights: Sequence[float] | None = None,
        rrf_k: float = 60.0,
        normalization: str | None = None,
        candidates: int = 100,
        rerank: Any = None,
        rerank_k: int | None = None,
        unit: str = "document",
        aggregate: str = "max",
        batch_size: int = 32,
    ) -> Any:
        """The k best documents for a query (a list of hits) or for each of several queries.

        - mode: "dense", "lexical", "sparse" (a collection with a sparse model), "multi_vector" (one
          with a multi-vector model), "hybrid" (the candidates of every retriever the collection
          has, `retrievers(...)`, fused by `fusion`, "weighted" (default) or "rrf", with `weights`
          (one per retriever, in that order; None: equal) and `normalization` for weighted (None:
          "zscore"); see HYBRID_FUSION for how they were chosen), or "m3" (a bge-m3 collection: the
          dense, sparse and multi-vector candidates scored by bge-m3's weighted sum, `weights` its
          three weights, None: the collection's, see `m3_pass.py`).
        - filter: metadata conditions (see `filters.py`), applied before ranking.
        - candidates: how many each retriever hands to fusion and rerank.
        - rerank: a cross-encoder (or its folder / hub id) that re-scores the best `rerank_k`
          (default `candidates`) results by reading query and document together.
        - unit: "document" (each document once, as its best passage, scored by `aggregate`: "max"
          or "sum", see `results.py`) or "passage" (passages ranked on their own).
        """
        return self.searcher.search(
            query, k, mode=mode, filter=filter, fusion=fusion, weights=weights, rrf_k=rrf_k,
            normalization=normalization, candidates=candidates, rerank=rerank, rerank_k=rerank_k,
            unit=unit, aggregate=aggregate, batch_size=batch_size,
        )  # fmt: skip

    def retrievers(self, mode: str) -> list[str]:
        """The retrievers a search `mode` runs (`Searcher.retrievers`)."""
        return self.searcher.retrievers(mode)

    def sample(
        self, limit: int = 2000, filter: Mapping[str, Any] | None = None
    ) -> tuple[list[Document], np.ndarray]:
        """Up to `limit` documents spread evenly over the collection, with their stored vectors
        (`Searcher.sample`)."""
        return self.searcher.sample(limit, filter)

    def matched_terms(self, query: str, hits: Sequence[SearchHit]) -> list[list[str]]:
        """The query's BM25 terms each hit's passage contains (`Searcher.matched_terms`)."""
        return self.searcher.matched_terms(query, hits)

    # -- lexical analysis ----------------------------------------------------------------------------------
    @property
    def analysis(self) -> AnalysisSettings:
        """The lexical analysis settings (`index/analysis.py`): user dictionary, synonyms, compounds,
        typos; as stored now (an edit by another process included)."""
        self.searcher.follow_analysis()
        return AnalysisSettings.from_config(self.config.get("analysis"))

    def analyze(self, text: str, *, query: bool = True) -> list[Term]:
        """(token, part of speech, rule) of each BM25 token `text` makes as a query (or, with
        `query=False`, as a stored passage): how the collection's analysis reads it."""
        self.searcher.follow_analysis()
        return self.encoding.analyzer().explain(text[:MAX_QUERY_CHARS], query)

    def set_analysis(self, settings: AnalysisSettings, *, show_progress_bar: bool | None = None) -> int:
        """Replace the analysis settings; returns how many stored passages were analysed again.

        A change to what decides a passage's tokens (user words, compounds, index-time synonyms)
        analyses every stored passage again for BM25 (no vector is encoded), a batch committed at a
        time beside the stored tokens (a call with the same settings after an interruption resumes
        after them), while searches go on with the old analysis; the switch to the new tokens and
        settings is one transaction, and every reader takes them at its next search. Query-side
        changes apply at once. Every backend (Qdrant: a second BM25 slot, `backends/qdrant/slots.py`)."""
        analyzer = self.encoding.analyzer_for(settings)  # checked before anything is read
        with self._write_lock():
            self.searcher.follow_analysis()
            old = AnalysisSettings.from_config(self.config.get("analysis"))
            analysed, staged = 0, False
            if old.document_part() != settings.document_part() and self.store.count():
                target = settings.to_config()
                if self.store.meta_value("analysis_pending") != target:
                    # what an abandoned run kept goes before the mark: a kill between the two
                    # leaves nothing to resume from
                    self.store.stage_tokens([], restart=True)
                    self.store.set_meta({"analysis_pending": target})
                progress = self.store.count() > 1000 if show_progress_bar is None else show_progress_bar
                analysed = reanalyse(self.store, self.encoding, self.chunking, analyzer, progress)
                staged = True
            generation = self.searcher.generation + 1
            meta = {
                "analysis": settings.to_config(),
                "analysis_generation": generation,
                "analysis_pending": None,
            }
            self.store.put_analysis(meta, staged)
            self.config.update(meta)
            self.searcher.generation = generation
            self.lexical.save_files(self.store)
        return analysed

    # -- encoding (the encoding's) ----------------------------------------------------------------------
    @property
    def encoder(self) -> Any:
        """The collection's model, loaded on first need."""
        return self.encoding.encoder

    @property
    def query_encoder(self) -> Any:
        """What encodes queries (`Encoding.query_encoder`)."""
        return self.encoding.query_encoder

    def use_encoder(self, encoder: Any) -> None:
        """Encode with `encoder`, the collection's model already loaded elsewhere (`Encoding.use_encoder`)."""
        self.encoding.use_encoder(encoder)

    @property
    def images(self) -> ImageFiles | None:
        """The stored image files of an image collection (a folder collection's `images/`)."""
        return self.encoding.images

    @property
    def pace(self) -> Callable[[], int | None] | None:
        """A hook a server sets, called before each batch of a write's work (`Encoding.tokenize`)."""
        return self.encoding.pace

    @pace.setter
    def pace(self, hook: Callable[[], int | None] | None) -> None:
        self.encoding.pace = hook

    def warm_up(self) -> None:
        """Load the lexical analyser now (`Encoding.warm_up`)."""
        self.encoding.warm_up()
