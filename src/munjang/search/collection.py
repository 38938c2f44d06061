"""A persistent, embedded search collection: documents, ids, metadata and every index in one folder.

    folder/
      collection.db        SQLite (WAL): documents, metadata, lexical tokens, the embedding cache
      dense-L-D.hnsw       the HNSW graph (index="hnsw"), named by the watermark it has applied
      write.lock           one writer at a time; readers never take it

The database is the source of truth and every index is derived from it (see `store.py` and
`live_index.py`). `add` encodes and tokenizes a batch, then commits it in one transaction: a process
killed at any moment leaves the collection at its last commit, and an index saved before that commit
is caught up from the database when the collection opens. Readers in other processes see each
commit at their next search.

Search modes: "dense" (the encoder), "lexical" (BM25 over Kiwi / word tokens), "hybrid" (both, fused
by RRF or weighted scores), each with metadata filters and an optional cross-encoder rerank.

The same collection can live in PostgreSQL with pgvector instead of a folder: pass
`backend="postgresql://..."` and a collection name (`postgres_store.py`, `postgres_dense.py`). The
API, the search modes and the results are the same; only where the data lives changes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from filelock import FileLock, Timeout
from tqdm.auto import tqdm

from .exact import ExactIndex
from .filters import compile_filter
from .hybrid import FUSIONS, fuse
from .live_index import DenseIndex, LexicalIndex
from .store import SCHEMA_VERSION, CollectionError, Document, DocumentStore, NewRow, text_hash

DB_NAME = "collection.db"
LOCK_NAME = "write.lock"
MODES = ("dense", "lexical", "hybrid")
CONFLICTS = ("error", "skip", "upsert")
DOCUMENT_PROMPTS = ("document", "passage", "corpus")
# Hybrid defaults: dense-heavy weighted fusion. Chosen on the dev splits of KorSTS (best dense weight
# 0.8) and STSb (0.9) with bench/search_quality.py; equal weights fall below dense alone on both.
HYBRID_FUSION = "weighted"
HYBRID_WEIGHTS = (0.8, 0.2)


@dataclass(frozen=True)
class SearchHit:
    """One result: the document, its final score, and each stage's score (dense, lexical, fused,
    rerank) where that stage ran."""

    id: str
    text: str
    metadata: dict[str, Any]
    score: float
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class AddResult:
    """What an `add` did: new documents, documents whose text or metadata changed, ids skipped, and
    how many texts had to be encoded (the rest came from the embedding cache)."""

    added: int = 0
    updated: int = 0
    skipped: int = 0
    encoded: int = 0


def model_key(model: str | os.PathLike[str] | None) -> str:
    """How a collection records its model: "default", a folder's absolute path, or the name as given."""
    if model is None or str(model) == "default":
        return "default"
    path = Path(model)
    return str(path.resolve()) if path.exists() else str(model)


def _check_texts(ids: Sequence[str], texts: Sequence[str]) -> None:
    if isinstance(ids, str) or isinstance(texts, str):
        raise TypeError("ids and texts must be sequences of strings, not one string")
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    seen: set[str] = set()
    for i, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"document {i}: the id must be a non-empty string, got {doc_id!r}")
        if doc_id in seen:
            raise ValueError(f"document {i}: id {doc_id!r} appears twice in this batch")
        seen.add(doc_id)
        if not isinstance(text, str):
            raise TypeError(f"document {doc_id!r}: text is {type(text).__name__}, not str")
        if not text.strip():
            raise ValueError(f"document {doc_id!r}: the text is empty")


def _metadata_json(doc_id: str, metadata: Any) -> str:
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise TypeError(f"document {doc_id!r}: metadata must be a dict, got {type(metadata).__name__}")
    try:
        return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"document {doc_id!r}: metadata is not JSON-serialisable ({e})") from None


class Collection:
    """Documents with ids and metadata, searchable by meaning, by words, or both. Use
    `Collection.create(folder, model=...)` once, then `Collection.open(folder)`; with
    `backend="postgresql://..."` the first argument is the collection's name in that database."""

    def __init__(
        self,
        folder: Path | None,
        store: Any,
        *,
        encoder: Any = None,
        device: str | None = None,
        readonly: bool = False,
        lock_timeout: float = 60.0,
    ) -> None:
        self.folder = folder
        self.store = store
        self.location = str(folder) if folder is not None else str(store.path)
        self.readonly = readonly
        self.config = store.get_meta()
        version = self.config.get("schema_version")
        if version != SCHEMA_VERSION:
            raise CollectionError(
                f"{self.location}: collection format {version!r}, this munjang reads {SCHEMA_VERSION}"
            )
        self._encoder = encoder
        self._device = device
        self._cross_encoders: dict[str, Any] = {}
        self._lock_timeout = lock_timeout
        self.dense: Any
        if folder is None:
            from .postgres_dense import PostgresDense

            self.dense = PostgresDense(store, self.config)
        else:
            self._lock = FileLock(str(folder / LOCK_NAME), timeout=lock_timeout)
            self.dense = DenseIndex(
                self.config["index"],
                self.config["dim"],
                self.config["metric"],
                self.config["model"],
                self.config["hnsw"],
            )
            self.dense.load(folder)
        self.lexical = LexicalIndex(self.config["lexical"])

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
        device: str | None = None,
    ) -> Collection:
        """A new, empty collection. `model` is a model folder or hub id (None: the embedded default);
        `encoder` may pass that model already loaded. The folder (or the PostgreSQL schema, with
        `backend`) appears complete or not at all."""
        target = Path(folder)
        if backend is None and target.exists():
            raise CollectionError(f"{target} already exists; open it with Collection.open")
        if index not in ("exact", "hnsw"):
            raise ValueError(f"unknown index {index!r}; choose exact or hnsw")
        if metric not in ExactIndex.METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(ExactIndex.METRICS)}")
        if encoder is None:
            from ..encoder import load_encoder

            encoder = load_encoder(None if model is None else str(model), device=device)
        prompts = getattr(encoder, "prompts", {}) or {}
        if query_prompt_name is None and "query" in prompts:
            query_prompt_name = "query"
        if document_prompt_name is None:
            document_prompt_name = next((p for p in DOCUMENT_PROMPTS if p in prompts), None)
        for name in (query_prompt_name, document_prompt_name):
            if name is not None and name not in prompts:
                raise ValueError(
                    f"the model has no prompt {name!r} (its prompts: {sorted(prompts) or 'none'})"
                )
        from .lexical import BM25Index
        from .tokenizers import get_tokenizer

        get_tokenizer(tokenizer)
        lexical = {**dict(bm25 or {}), "tokenizer": tokenizer}
        BM25Index(**lexical)
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
        }
        if backend is not None:
            from .postgres_store import PostgresStore

            pg = PostgresStore(_postgres_url(backend), str(folder))
            try:
                pg.create_schema(config)
            finally:
                pg.close()
            return cls.open(folder, backend=backend, encoder=encoder, device=device)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.creating-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            store = DocumentStore(staging / DB_NAME, create=True)
            store.set_meta(config)
            store.close()
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls.open(target, encoder=encoder, device=device)

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
    ) -> Collection:
        """Open an existing collection (a folder, or with `backend` a name in that PostgreSQL
        database). The model loads on first need; `readonly` never writes."""
        if backend is not None:
            from .postgres_store import PostgresStore

            pg = PostgresStore(_postgres_url(backend), str(folder), readonly=readonly)
            try:
                pg.check_schema()
                return cls(
                    None, pg, encoder=encoder, device=device, readonly=readonly, lock_timeout=lock_timeout
                )
            except BaseException:
                pg.close()
                raise
        path = Path(folder)
        if not path.is_dir():
            raise CollectionError(f"{path}: no such collection folder")
        store = DocumentStore(path / DB_NAME, readonly=readonly)
        try:
            return cls(
                path, store, encoder=encoder, device=device, readonly=readonly, lock_timeout=lock_timeout
            )
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Save the HNSW graph if it moved on (writers only) and close the database."""
        if self.folder is not None and not self.readonly and self.dense.kind == "hnsw":
            with self._write_lock():
                self.dense.sync(self.store)
                self.dense.save(self.folder)
        self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Hold the folder's writer lock (one writer at a time; readers never wait for it)."""
        if self.readonly:
            raise CollectionError(f"{self.location} was opened read-only")
        if self.folder is None:
            with self.store.write_lock(self._lock_timeout):
                yield
            return
        try:
            self._lock.acquire()
        except Timeout:
            raise CollectionError(
                f"{self.location}: another process is writing (lock held longer than {self._lock.timeout} s)"
            ) from None
        try:
            yield
        finally:
            self._lock.release()

    # -- models ------------------------------------------------------------------------------------------
    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ..encoder import load_encoder

            model = self.config["model"]
            self._encoder = load_encoder(None if model == "default" else model, device=self._device)
            dim = int(self._encoder.get_embedding_dimension())
            if dim != self.config["dim"]:
                raise CollectionError(
                    f"{model} gives {dim}-d vectors; this collection holds {self.config['dim']}-d"
                )
        return self._encoder

    def _encode(
        self, texts: Sequence[str], prompt_name: str | None, batch_size: int, progress: bool
    ) -> np.ndarray:
        vectors = self.encoder.encode(
            list(texts),
            batch_size=batch_size,
            prompt_name=prompt_name,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.config["dim"])

    def _tokenizer(self) -> Any:
        from .tokenizers import get_tokenizer

        return get_tokenizer(self.config["lexical"]["tokenizer"])

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
        _check_texts(ids, texts)
        metas = list(metadata) if metadata is not None else [None] * len(ids)
        if len(metas) != len(ids):
            raise ValueError(f"{len(metas)} metadata entries for {len(ids)} documents")
        meta_json = [_metadata_json(i, m) for i, m in zip(ids, metas, strict=True)]
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
        on_conflict: str,
        batch_size: int,
        result: AddResult,
    ) -> None:
        model = self.config["model"]
        hashes = [text_hash(t) for t in texts]
        existing = self.store.existing(ids)
        new_rows: list[int] = []
        replaced: list[str] = []
        meta_only: list[tuple[str, str]] = []
        for i, (doc_id, digest) in enumerate(zip(ids, hashes, strict=True)):
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
        cached = self.store.cached_hashes(model, (hashes[i] for i in new_rows))
        to_encode = list(dict.fromkeys(hashes[i] for i in new_rows if hashes[i] not in cached))
        vectors = None
        if to_encode:
            first_text = {hashes[i]: texts[i] for i in reversed(new_rows)}
            vectors = self._encode(
                [first_text[h] for h in to_encode], self.config["document_prompt_name"], batch_size, False
            )
        tokens = self._tokenizer().tokenize_many([texts[i] for i in new_rows]) if new_rows else []
        rows = [
            NewRow(ids[i], texts[i], metas[i], hashes[i], json.dumps(toks, ensure_ascii=False))
            for i, toks in zip(new_rows, tokens, strict=True)
        ]
        with self.store.transaction():
            if vectors is not None:
                self.store.put_embeddings(model, to_encode, vectors)
            if replaced:
                self.store.delete(replaced)
            self.store.insert(rows, model)
            self.store.update_metadata(meta_only)
        result.added += len(rows) - len(replaced)
        result.updated += len(replaced) + len(meta_only)
        result.encoded += len(to_encode)

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
        if self.folder is None or self.dense.kind != "hnsw":
            return
        changed = (self.dense.watermark.label - self.dense.saved.label) + (
            self.dense.watermark.deletion - self.dense.saved.deletion
        )
        if changed >= max(10_000, len(self.dense.index) // 10):
            self.dense.save(self.folder)

    def flush(self) -> None:
        """Save the HNSW graph now (PostgreSQL keeps its own index: nothing to do)."""
        if self.folder is None:
            return
        with self._write_lock():
            self.dense.sync(self.store)
            self.dense.save(self.folder)

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

    def sample(
        self, limit: int = 2000, filter: Mapping[str, Any] | None = None
    ) -> tuple[list[Document], np.ndarray]:
        """Up to `limit` documents spread evenly over the collection (in insertion order), with
        their stored vectors: what a 2-D map of the collection draws."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        labels = self.store.labels_matching(*compile_filter(filter, dialect=self.store.dialect))
        if len(labels) > limit:
            labels = labels[np.linspace(0, len(labels) - 1, limit).round().astype(np.int64)]
        docs = self.store.documents(labels.tolist())
        vectors = self.store.vectors_of(self.config["model"], self.config["dim"], labels)
        return [docs[int(label)] for label in labels], vectors

    def matched_terms(self, query: str, ids: Sequence[str]) -> list[list[str]]:
        """The query's lexical (BM25) terms that each document contains, in query order: why a
        keyword match ranked (shown beside hybrid and lexical results). Documents are read as
        BM25 indexed them (their stored tokens), not tokenized again."""
        terms = list(dict.fromkeys(self._tokenizer()(query)))
        stored = self.store.tokens_by_id(list(ids))
        return [[t for t in terms if t in set(stored.get(i, ()))] for i in ids]

    def info(self) -> dict[str, Any]:
        self.dense.sync(self.store)
        if self.folder is None:
            size = self.store.database_bytes()
        else:
            files = [self.folder / n for n in (DB_NAME, DB_NAME + "-wal")]
            size = sum(f.stat().st_size for f in files if f.exists())
        return {
            "folder": self.location,
            "backend": "embedded" if self.folder is not None else "postgres",
            "documents": len(self),
            **{k: self.config[k] for k in ("model", "dim", "metric", "index", "query_prompt_name")},
            "document_prompt_name": self.config["document_prompt_name"],
            "lexical": self.config["lexical"],
            "hnsw": self.config["hnsw"],
            "dense_index_bytes": int(self.dense.index.memory_bytes()),
            "database_bytes": size,
        }

    def check(self) -> list[str]:
        """Problems found (empty when sound): SQLite integrity, documents without a vector, and
        indexes that disagree with the documents after catching up."""
        problems = self.store.integrity_problems(self.config["model"])
        self.dense.sync(self.store)
        self.lexical.sync(self.store)
        with self.store.snapshot():
            labels = self.store.labels_matching(*compile_filter(None, dialect=self.store.dialect))
        dense_ids = np.sort(self.dense.index.ids())
        if not np.array_equal(dense_ids, labels):
            missing = np.setdiff1d(labels, dense_ids)
            extra = np.setdiff1d(dense_ids, labels)
            problems.append(f"dense index: {len(missing)} documents missing, {len(extra)} deleted ones left")
        if not np.array_equal(self.lexical.labels, labels):
            problems.append("lexical index does not match the documents")
        return problems

    # -- search -------------------------------------------------------------------------------------
    def search(
        self,
        query: str | Sequence[str],
        k: int = 10,
        *,
        mode: str = "dense",
        filter: Mapping[str, Any] | None = None,
        fusion: str = HYBRID_FUSION,
        weights: Sequence[float] | None = None,
        rrf_k: float = 60.0,
        normalization: str = "minmax",
        candidates: int = 100,
        rerank: Any = None,
        rerank_k: int | None = None,
        batch_size: int = 32,
    ) -> Any:
        """The k best documents for a query (a list of hits) or for each of several queries.

        - mode: "dense", "lexical" or "hybrid" (dense and BM25 candidates fused by `fusion`,
          "weighted" (default) or "rrf", with `weights` (dense, lexical; None: HYBRID_WEIGHTS, 0.8 and
          0.2, chosen on dev data) and `normalization` for weighted).
        - filter: metadata conditions (see `filters.py`), applied before ranking.
        - candidates: how many each retriever hands to fusion and rerank.
        - rerank: a cross-encoder (or its folder / hub id) that re-scores the best `rerank_k`
          (default `candidates`) results by reading query and document together.
        """
        single = isinstance(query, str)
        queries = [query] if isinstance(query, str) else list(query)
        for i, q in enumerate(queries):
            if not isinstance(q, str):
                raise TypeError(f"query {i} is {type(q).__name__}, not str")
            if not q.strip():
                raise ValueError(f"query {i} is empty")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        if k < 1 or candidates < 1:
            raise ValueError(f"k and candidates must be at least 1 (got {k}, {candidates})")
        pool = max(k, candidates) if (mode == "hybrid" or rerank is not None) else k
        allowed = where = None
        if filter is not None:
            where = compile_filter(filter, dialect=self.store.dialect)
            if self.folder is not None or mode != "dense":  # PostgreSQL filters dense search in SQL
                allowed = self.store.labels_matching(*where)
        dense: list[list[tuple[int, float]]] = [[] for _ in queries]
        lexical: list[list[tuple[int, float]]] = [[] for _ in queries]
        if mode in ("dense", "hybrid"):
            dense = self._dense_search(queries, pool, allowed, where, batch_size)
        if mode in ("lexical", "hybrid"):
            lexical = self._lexical_search(queries, pool, allowed)
        results: list[list[SearchHit]] = []
        for i, q in enumerate(queries):
            if mode == "hybrid":
                fused = fuse(
                    [dense[i], lexical[i]],
                    method=fusion,
                    weights=HYBRID_WEIGHTS if weights is None else weights,
                    rrf_k=rrf_k,
                    normalization=normalization,
                    top_k=pool,
                )
                ranked = [
                    (cast(int, h.key), h.score, _stage_scores(h.scores[0], h.scores[1], h.score))
                    for h in fused
                ]
            else:
                source = dense[i] if mode == "dense" else lexical[i]
                ranked = [(label, score, {mode: score}) for label, score in source]
            results.append(self._hits(q, ranked, k, rerank, rerank_k or pool, batch_size))
        return results[0] if single else results

    def _dense_search(
        self,
        queries: list[str],
        k: int,
        allowed: np.ndarray | None,
        where: tuple[str, list[Any]] | None,
        batch_size: int,
    ) -> list[list[tuple[int, float]]]:
        self.dense.sync(self.store)
        if (allowed is not None and len(allowed) == 0) or not self.dense.index:  # empty: skip encoding
            return [[] for _ in queries]
        vectors = self._encode(queries, self.config["query_prompt_name"], batch_size, False)
        labels, scores = self.dense.search(self.store, vectors, k, allowed, where)
        return [
            [(int(x), float(s)) for x, s in zip(row_l, row_s, strict=True) if x >= 0]
            for row_l, row_s in zip(labels, scores, strict=True)
        ]

    def _lexical_search(
        self, queries: list[str], k: int, allowed: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        self.lexical.sync(self.store)
        bm25, labels = self.lexical.bm25, self.lexical.labels
        if len(labels) == 0:
            return [[] for _ in queries]
        tokenizer = self._tokenizer()
        rows = None if allowed is None else np.flatnonzero(np.isin(labels, allowed))
        if rows is not None and len(rows) == 0:
            return [[] for _ in queries]
        hits = bm25.search_tokens([tokenizer(q) for q in queries], k, rows=rows)
        return [[(int(labels[h.row]), float(h.score)) for h in row_hits] for row_hits in hits]

    def _hits(
        self,
        query: str,
        ranked: list[tuple[int, float, dict[str, float]]],
        k: int,
        rerank: Any,
        rerank_k: int,
        batch_size: int,
    ) -> list[SearchHit]:
        docs = self.store.documents([label for label, _, _ in ranked])
        # A label the index still had but the database no longer has was deleted meanwhile.
        ranked = [r for r in ranked if r[0] in docs]
        if rerank is not None and ranked:
            cross = self._cross_encoder(rerank)
            head = ranked[:rerank_k]
            texts = [docs[label].text for label, _, _ in head]
            order = cross.rank(query, texts, batch_size=batch_size, show_progress_bar=False)
            ranked = [
                (head[h["corpus_id"]][0], h["score"], {**head[h["corpus_id"]][2], "rerank": h["score"]})
                for h in order
            ]
        return [
            SearchHit(docs[label].id, docs[label].text, docs[label].metadata, score, stages)
            for label, score, stages in ranked[:k]
        ]

    def _cross_encoder(self, rerank: Any) -> Any:
        if not isinstance(rerank, (str, os.PathLike)):
            return rerank
        key = str(rerank)
        if key not in self._cross_encoders:
            from ..cross_encoder import load_cross_encoder

            self._cross_encoders[key] = load_cross_encoder(key, device=self._device)
        return self._cross_encoders[key]


def _postgres_url(backend: str) -> str:
    from .postgres_store import is_postgres_url

    if not is_postgres_url(backend):
        raise ValueError(f"backend must be a postgresql:// URL, got {backend!r}")
    return backend


def _stage_scores(dense: float | None, lexical: float | None, fused: float) -> dict[str, float]:
    stages = {"fused": fused}
    if dense is not None:
        stages["dense"] = dense
    if lexical is not None:
        stages["lexical"] = lexical
    return stages
