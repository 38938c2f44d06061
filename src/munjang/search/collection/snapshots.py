"""Taking a collection's snapshot and restoring one, on any backend, without re-encoding.

`export_snapshot` reads the collection's store inside one read transaction (`Store.snapshot`), so
the file holds every passage of the commits made before it began and none of a later one, while
writers go on; it streams `SHARD_ROWS` passages at a time into a `snapshot_format.SnapshotWriter`.
`import_snapshot` checks the whole file first (`SnapshotReader`) and the model's weights, then makes
the target with the snapshot's configuration marked unfinished (`PENDING`), inserts each shard in
one transaction with its vectors into the embedding cache (so no encoder is loaded: the rows carry
the vectors, BM25's tokens and the sparse and multi-vector rows where the collection has them),
writes an image collection's image files (checked against their content-hash names), and clears
the mark at the end. A killed import leaves a target that
refuses to open until the same import is run again, which resumes after its last committed shard.
"""

from __future__ import annotations

import datetime
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ...version import __version__
from ..backends.base import CollectionError, NewRow, Store, StoredRow, sparse_cache_key, token_cache_key
from ..backends.schemes import open_backend
from .image_files import IMAGE_FIELD, ImageFiles, image_name
from .snapshot_format import SnapshotError, SnapshotReader, SnapshotWriter, weights_checksum

# Passages per shard (and per read from the store, and per transaction of an import): about 50 MB
# of rows in memory at a time for 384-d vectors and passages of a few hundred characters.
SHARD_ROWS = 10_000
# The mark a collection being restored carries in its configuration (the snapshot's content checksum).
PENDING = "snapshot_import"
# The extra retrievers whose vectors a snapshot carries beside the dense ones (a bge-m3 collection
# records both, and "m3": the target's backend must hold each).
EXTRAS = ("sparse", "multi_vector")


def _columns(rows: list[StoredRow], vectors: np.ndarray, extras: dict[str, list[Any]]) -> Any:
    """A shard: the rows, their dense vectors, and the extra retrievers' vectors (`extras`: "sparse"
    -> (token ids, weights) per row; "multi_vector" -> a float16 (tokens, dim) matrix per row)."""
    import pyarrow as pa

    def strings(values: list[Any]) -> Any:
        return pa.array(values, pa.string())

    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1), pa.float32())
    columns: dict[str, Any] = {}
    if "sparse" in extras:
        columns["sparse_ids"] = pa.array(
            [np.asarray(i, "<u4") for i, _ in extras["sparse"]], pa.list_(pa.uint32())
        )
        columns["sparse_weights"] = pa.array(
            [np.asarray(w, "<f4") for _, w in extras["sparse"]], pa.list_(pa.float32())
        )
    if "multi_vector" in extras:
        matrices = extras["multi_vector"]
        columns["token_shape"] = pa.array([list(m.shape) for m in matrices], pa.list_(pa.int32(), 2))
        columns["token_vectors"] = pa.array([np.asarray(m, "<f2").tobytes() for m in matrices], pa.binary())
    return pa.table(
        {
            "id": strings([r.row.id for r in rows]),
            "chunk": pa.array([r.row.chunk for r in rows], pa.int32()),
            "start": pa.array([r.row.start for r in rows], pa.int64()),
            "end": pa.array([r.row.end for r in rows], pa.int64()),
            "text": strings([r.row.text for r in rows]),
            "metadata": strings([r.row.metadata for r in rows]),
            "text_hash": strings([r.row.text_hash for r in rows]),
            "doc_hash": strings([r.row.doc_hash for r in rows]),
            "tokens": strings([r.row.tokens for r in rows]),
            "source": strings([r.source for r in rows]),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
            **columns,
        }
    )


def _keys(config: dict[str, Any]) -> dict[str, str]:
    """The store's cache key of each extra retriever the collection has."""
    keys = {"sparse": sparse_cache_key, "multi_vector": token_cache_key}
    return {kind: keys[kind](str(config[kind]["model"])) for kind in EXTRAS if config.get(kind)}


def _pages(
    store: Any, config: dict[str, Any]
) -> Iterator[tuple[list[StoredRow], np.ndarray, dict[str, list[Any]]]]:
    """The store's passages with their dense and extra vectors, `SHARD_ROWS` at a time (inside its
    snapshot; the extras are read by the store methods a store keeping them provides)."""
    vectors = store.vectors_after(config["model"], int(config["dim"]), 0, SHARD_ROWS)
    keys = _keys(config)
    readers = {
        kind: (store.sparse_after if kind == "sparse" else store.token_vectors_after)(key, 0, SHARD_ROWS)
        for kind, key in keys.items()
    }
    for rows in store.passages_after(0, SHARD_ROWS):
        labels = [r.label for r in rows]
        found, page = next(vectors)
        extras: dict[str, list[Any]] = {}
        for kind, reader in readers.items():
            held, extras[kind] = next(reader)
            if held.tolist() != labels:
                raise CollectionError(f"the passages and their {kind} vectors were read at different states")
        if found.tolist() != labels:
            raise CollectionError("the passages and their vectors were read at different states")
        yield rows, page, extras


def _needs(config: dict[str, Any]) -> set[str]:
    """The retriever kinds a backend must hold for this collection."""
    return {kind for kind in (*EXTRAS, "m3") if config.get(kind)}


def export_snapshot(
    store: Store,
    backend_kind: str,
    location: str,
    path: str | os.PathLike[str],
    progress: bool | None = None,
    images: ImageFiles | None = None,
) -> dict[str, Any]:
    """Write the collection in `store` to the snapshot file `path` (replaced whole at the end), with
    the image files its passages name from `images` (an image collection's folder); returns its
    manifest."""
    writer = SnapshotWriter(path)
    named: set[str] = set()
    try:
        with store.snapshot():  # one state: the commits before it began, none after
            config = store.get_meta()
            watermark, counts = store.watermark(), store.counts()
            total = counts.passages if counts is not None else store.passage_count()
            documents = passages = 0
            with tqdm(total=total, desc="export", unit="passage", disable=progress is False) as bar:
                for rows, vectors, extras in _pages(store, config):
                    writer.add_shard(_columns(rows, vectors, extras))
                    if images is not None:  # the key is written plainly: a cheap test before parsing
                        metas = (r.row.metadata for r in rows if f'"{IMAGE_FIELD}"' in r.row.metadata)
                        named.update(n for n in map(image_name, metas) if n)
                    documents += sum(1 for r in rows if r.row.chunk == 0)
                    passages += len(rows)
                    bar.update(len(rows))
        missing = _add_images(writer, images, named)
        return writer.finish(
            {
                "munjang": __version__,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "source": {"backend": backend_kind, "location": location},
                "collection": {k: v for k, v in config.items() if k != PENDING},
                "weights_sha256": weights_checksum(config["model"]),
                "counts": {"documents": documents, "passages": passages},
                "watermark": {"label": watermark.label, "deletion": watermark.deletion},
                "images_missing": missing,
            }
        )
    except BaseException:
        writer.abort()
        raise


def _add_images(writer: SnapshotWriter, images: ImageFiles | None, named: set[str]) -> list[str]:
    """Add the image files the passages name, in name order; the names missing from the folder
    (a damaged collection: its backup still holds all the rest, and the manifest says what is lost)."""
    missing = []
    for stored in sorted(named):
        file = images.path(stored) if images is not None else None
        if file is None:
            missing.append(stored)
            continue
        writer.add_image(stored, file.read_bytes())
    if missing:
        warnings.warn(
            f"{len(missing)} image files the passages name are missing: {missing[:3]}", stacklevel=3
        )
    return missing


def _rows(table: Any) -> tuple[list[NewRow], np.ndarray, list[tuple[str, str]], dict[str, list[Any]]]:
    columns = table.to_pydict()
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    vectors = np.asarray(flat, dtype=np.float32).reshape(table.num_rows, -1)
    names = ("id", "text", "metadata", "text_hash", "tokens", "chunk", "start", "end", "doc_hash")
    rows = [NewRow(*values) for values in zip(*(columns[n] for n in names), strict=True)]
    sources = [(i, s) for i, s in zip(columns["id"], columns["source"], strict=True) if s is not None]
    extras: dict[str, list[Any]] = {}
    if "sparse_ids" in columns:
        extras["sparse"] = [
            (np.asarray(i, np.uint32), np.asarray(w, np.float32))
            for i, w in zip(columns["sparse_ids"], columns["sparse_weights"], strict=True)
        ]
    if "token_vectors" in columns:
        extras["multi_vector"] = [
            np.frombuffer(b, "<f2").reshape(shape)
            for b, shape in zip(columns["token_vectors"], columns["token_shape"], strict=True)
        ]
    return rows, vectors, sources, extras


def import_snapshot(
    path: str | os.PathLike[str],
    target: str | os.PathLike[str],
    backend: str | None = None,
    *,
    progress: bool | None = None,
    lock_timeout: float = 60.0,
) -> dict[str, Any]:
    """Restore the snapshot at `path` as the new collection `target` (a folder, or with `backend` a
    name in that database); returns the manifest. Everything is checked before the target is made;
    an unfinished import of the same snapshot into `target` resumes."""
    with SnapshotReader(path) as reader:
        manifest = reader.manifest
        config = dict(manifest["collection"])
        here = weights_checksum(config["model"])
        if manifest.get("weights_sha256") and here and here != manifest["weights_sha256"]:
            raise SnapshotError(
                f"{path}: made with other weights of {config['model']!r} than this machine holds "
                "(its vectors would not match the queries' encoding)"
            )
        place = open_backend(target, backend)
        missing = _needs(config) - set(place.retrievers)
        if missing:
            raise SnapshotError(
                f"{path}: the collection has {' and '.join(sorted(missing))} vectors, which a "
                f"{place.kind} collection cannot hold"
            )
        images = ImageFiles.of_collection(place.folder)
        if manifest.get("images") and images is None:
            raise SnapshotError(
                f"{path}: the collection has image files, which a {place.kind} collection cannot hold"
            )
        mark = manifest["content_sha256"]
        try:
            store = place.open_store(False)
        except CollectionError:
            place.create({**config, PENDING: mark})
            store = place.open_store(False)
        try:
            if store.get_meta().get(PENDING) != mark:
                raise CollectionError(f"{place.location} exists: restore into a new name, or drop it first")
            with place.write_lock(store, lock_timeout):
                _fill(store, reader, manifest, config, progress)
                if images is not None:
                    for stored, data in reader.images():
                        images.put_stored(stored, data)
                store.set_meta({PENDING: None})
        finally:
            store.close()
    return manifest


def _fill(
    store: Any,
    reader: SnapshotReader,
    manifest: dict[str, Any],
    config: dict[str, Any],
    progress: bool | None,
) -> None:
    """Insert the shards not yet committed (resuming after the last one a killed import committed)."""
    shards = manifest["shards"]
    done, start = store.passage_count(), 0
    while start < len(shards) and done >= shards[start]["rows"]:
        done -= shards[start]["rows"]
        start += 1
    if done:
        raise CollectionError("the target holds rows that are not a prefix of the snapshot: drop it first")
    total = manifest["counts"]["passages"]
    already = sum(s["rows"] for s in shards[:start])
    with tqdm(total=total, initial=already, desc="import", unit="passage", disable=progress is False) as bar:
        model, keys = config["model"], _keys(config)
        for table in reader.shards(start):
            rows, vectors, sources, extras = _rows(table)
            hashes = [r.text_hash for r in rows]
            if set(extras) != set(keys):
                raise SnapshotError(
                    f"{reader.path}: a shard lacks the {', '.join(keys)} vectors its manifest names"
                )
            with store.transaction():
                store.put_embeddings(model, hashes, vectors)
                if "sparse" in keys:  # before the rows: a database indexes them from the cache on insert
                    store.put_sparse(keys["sparse"], hashes, extras["sparse"])
                if "multi_vector" in keys:
                    store.put_token_vectors(keys["multi_vector"], hashes, extras["multi_vector"])
                store.insert(rows, model)
                store.put_sources(sources)
            bar.update(len(rows))
    counts = manifest["counts"]
    if (store.count(), store.passage_count()) != (counts["documents"], counts["passages"]):
        raise CollectionError(
            f"restored {store.count()} documents in {store.passage_count()} passages; "
            f"the snapshot holds {counts['documents']} in {counts['passages']}"
        )
